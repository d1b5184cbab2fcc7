#include "daemon/placement/slurm_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace servelab::placement {
namespace {

using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(SallocArgvTest, AsksForAnExclusiveAllocationThatGivesUpInTime) {
  SlurmOptions options;
  options.nodes = 2;
  options.gres = "gpu:16";
  options.partition = "debug";
  options.time_limit = "1-00:00:00";
  options.allocation_timeout = absl::Minutes(2);
  options.account = "llm";
  options.salloc_args = {"--qos=high"};
  EXPECT_THAT(SallocArgv("/usr/bin/salloc", options),
              ElementsAre("/usr/bin/salloc", "--no-shell", "--job-name=servelab", "--nodes=2",
                          "--exclusive", "--gres=gpu:16", "--partition=debug", "--account=llm",
                          "--time=1-00:00:00", "--immediate=120", "--qos=high"));
}

TEST(SallocArgvTest, LeavesOutWhatIsNotSet) {
  SlurmOptions options;
  options.exclusive_allocation = false;
  EXPECT_THAT(SallocArgv("/s", options), ElementsAre("/s", "--no-shell", "--job-name=servelab",
                                                     "--nodes=1", "--immediate=300"));
}

PlacementRequest SimRequest() {
  PlacementRequest request;
  request.argv = {"/opt/bin/servelab-sim", "--port", "8100"};
  request.log_path = "/state/logs/prefill.log";
  request.node = "node7";
  request.devices = 8;
  return request;
}

TEST(SrunArgvTest, OverlappingStepSharesTheAllocationAndSendsNoGres) {
  SlurmOptions options;
  options.srun_args = {"--mpi=none"};
  EXPECT_THAT(SrunArgv("/usr/bin/srun", options, "42", "servelab-prefill-ab", SimRequest()),
              ElementsAre("/usr/bin/srun", "--jobid=42", "--nodes=1", "--ntasks=1",
                          "--job-name=servelab-prefill-ab", "--output=/state/logs/prefill.log",
                          "--open-mode=append", "--input=none", "--verbose", "--export=ALL",
                          "--nodelist=node7", "--overlap", "--mpi=none", "/opt/bin/servelab-sim",
                          "--port", "8100"));
}

TEST(SrunArgvTest, ExclusiveStepAsksForItsOwnCpusAndDevices) {
  SlurmOptions options;
  options.sharing = StepSharing::kExclusive;
  options.cpus_per_step = 4;
  PlacementRequest request = SimRequest();
  request.node.clear();
  std::vector<std::string> argv = SrunArgv("/srun", options, "42", "n", request);
  EXPECT_THAT(argv, ::testing::Contains("--exact"));
  EXPECT_THAT(argv, ::testing::Contains("--cpus-per-task=4"));
  EXPECT_THAT(argv, ::testing::Contains("--gres=gpu:8"));
  EXPECT_THAT(argv, ::testing::Not(::testing::Contains(HasSubstr("--nodelist"))));
  request.devices = 0;
  EXPECT_THAT(SrunArgv("/srun", options, "42", "n", request), ::testing::Contains("--gres=none"));
}

TEST(UniqueStepNameTest, IsCleanAndDiffersEachTime) {
  std::string a = UniqueStepName("pre fill/0");
  EXPECT_THAT(a, MatchesRegex("servelab-pre_fill_0-[0-9a-f]{16}"));
  EXPECT_NE(a, UniqueStepName("pre fill/0"));
  EXPECT_THAT(UniqueStepName(""), MatchesRegex("servelab-instance-[0-9a-f]{16}"));
}

TEST(ParseGrantedJobIdTest, ReadsTheGrantedLine) {
  EXPECT_EQ(*ParseGrantedJobId("salloc: Pending job allocation 2\n"
                               "salloc: job 2 queued and waiting for resources\n"
                               "salloc: Granted job allocation 2\n"),
            "2");
  EXPECT_THAT(ParseGrantedJobId("salloc: error: Job submit/allocate failed: Requested node "
                                "configuration is not available\n"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("not available")));
}

TEST(ParseStepRowsTest, ReadsSqueueStepsAndSkipsOtherLines) {
  std::vector<StepRow> rows = ParseStepRows(
      "5.0|servelab-prefill-1|localhost\n5.1|sl-b|node[1-2]\n"
      "5.extern|extern|localhost\nnot a row\n\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].step_id, "5.1");
  EXPECT_EQ(rows[1].nodes, "node[1-2]");
  std::optional<StepRow> found = FindStepByName(rows, "servelab-prefill-1");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step_id, "5.0");
  EXPECT_FALSE(FindStepByName(rows, "servelab-prefill").has_value());
}

TEST(ParseScontrolRecordTest, ReadsAStepAndANodeWithSpacesInValues) {
  std::map<std::string, std::string> step = ParseScontrolRecord(
      "StepId=3.0 UserId=0 StartTime=2026-12-03T15:50:45 TimeLimit=UNLIMITED State=RUNNING "
      "Partition=debug NodeList=localhost Nodes=1 CPUs=1 Tasks=1 Name=sl-a Network=(null) "
      "TRES=cpu=1,mem=0,node=1 SrunHost:Pid=vm:7140 TresPerNode=gres:gpu:8\n");
  EXPECT_EQ(step["State"], "RUNNING");
  EXPECT_EQ(step["Name"], "sl-a");
  EXPECT_EQ(step["TRES"], "cpu=1,mem=0,node=1");
  EXPECT_EQ(step["SrunHost:Pid"], "vm:7140");
  std::map<std::string, std::string> node = ParseScontrolRecord(
      "NodeName=localhost Arch=x86_64 NodeAddr=127.0.0.1 NodeHostName=localhost "
      "OS=Linux 6.18.44-fc-v1147 #1 SMP PREEMPT_DYNAMIC @0 RealMemory=1000");
  EXPECT_EQ(node["NodeAddr"], "127.0.0.1");
  EXPECT_EQ(node["OS"], "Linux 6.18.44-fc-v1147 #1 SMP PREEMPT_DYNAMIC @0");
  EXPECT_EQ(node["RealMemory"], "1000");
}

TEST(SaysNotFoundTest, TellsAGoneStepFromAnUnreachableController) {
  EXPECT_TRUE(SaysNotFound("Job step 1.4 not found"));
  EXPECT_TRUE(SaysNotFound("slurm_load_jobs error: Invalid job id specified"));
  EXPECT_FALSE(
      SaysNotFound("slurm_load_jobs error: Unable to contact slurm controller (connect failure)"));
}

TEST(IdTest, JobAndStepIds) {
  EXPECT_TRUE(IsJobId("42"));
  EXPECT_FALSE(IsJobId("42.1"));
  EXPECT_FALSE(IsJobId(""));
  EXPECT_TRUE(IsStepId("42.1"));
  EXPECT_FALSE(IsStepId("42.extern"));
  EXPECT_FALSE(IsStepId("42"));
  EXPECT_FALSE(IsStepId(".1"));
}

}  // namespace
}  // namespace servelab::placement
