// A real single-node Slurm cluster for tests (issue 12): munged, slurmctld
// and slurmd of the Debian packages, started by tests/slurm/slurm_cluster.sh
// in a temp directory on loopback ports, stopped (with every job, step and
// daemon) by Stop or the destructor. See that script for what it configures.
//
//   absl::StatusOr<std::unique_ptr<SlurmCluster>> cluster = SlurmCluster::Start();
//   if (absl::IsFailedPrecondition(cluster.status())) GTEST_SKIP() << cluster.status();
//   ASSERT_THAT(cluster, IsOk());
//   RunResult r = (*cluster)->Client({"squeue", "-h"});
//   SlurmOptions options{.env = (*cluster)->Env()};
//
// Not thread-safe; one cluster per test process is the intended use.
#ifndef SERVELAB_TESTS_SLURM_SLURM_FIXTURE_H_
#define SERVELAB_TESTS_SLURM_SLURM_FIXTURE_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::testing {

class SlurmCluster {
 public:
  // Starts a cluster in a fresh temp dir, on loopback ports the kernel just
  // handed out. FAILED_PRECONDITION with the reason when this machine cannot
  // run one (not root, slurm-wlm or munge not installed): tests skip.
  // INTERNAL with the daemons' log tails when it should have started.
  static absl::StatusOr<std::unique_ptr<SlurmCluster>> Start();

  ~SlurmCluster();  // Stop().
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Cancels every job, stops the daemons, kills anything still tied to the
  // cluster. Idempotent.
  absl::Status Stop();

  // slurmctld down (clients then cannot reach the controller) and up again;
  // the new one recovers jobs and steps from the state directory.
  absl::Status StopController();
  absl::Status StartController();

  const std::string& dir() const { return dir_.path(); }
  const std::string& conf() const { return conf_; }
  // What a Slurm client needs: {"SLURM_CONF": conf()}.
  std::map<std::string, std::string> Env() const { return {{"SLURM_CONF", conf_}}; }

  // Runs a Slurm client (argv[0] a name such as "squeue", or a path) with
  // SLURM_CONF set.
  RunResult Client(std::vector<std::string> argv) const;

  // Processes of this cluster still running: those whose command line names
  // the directory (munged, slurmctld, slurmd) or whose environment points
  // SLURM_CONF at it (slurmstepd, tasks, srun); never this test process.
  std::vector<pid_t> Processes() const;

  // The last lines of slurmctld's and slurmd's logs, for a failure message.
  std::string LogTails() const;

 private:
  SlurmCluster() = default;
  absl::Status RunScript(const std::string& command) const;

  TempDir dir_;
  std::string conf_;
  bool running_ = false;
};

// For a test's SetUp: the started cluster; nullptr after GTEST_SKIP (this
// machine cannot run one, the reason printed) or after a test failure.
std::unique_ptr<SlurmCluster> StartClusterOrSkip();

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_SLURM_SLURM_FIXTURE_H_
