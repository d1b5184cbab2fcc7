#include "client/output.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "client/exit_codes.h"

namespace servelab::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::Experiment DeltaExperiment() {
  v1::Experiment e;
  e.set_id("exp-2");
  e.set_base_id("exp-1");
  e.mutable_spec()->set_scenario("16k-nocache");
  e.set_state(v1::EXPERIMENT_STATE_QUEUED);
  e.mutable_progress()->set_formal_requests_planned(640);
  v1::FieldChange* change = e.add_changes();
  change->set_path("workload.concurrency");
  change->set_old_value("64");
  change->set_new_value("96");
  change->set_scope(v1::SCOPE_LOAD);
  v1::PlannedStage* stage = e.mutable_plan()->add_stages();
  stage->set_stage(v1::STAGE_FORMAL_LOAD);
  stage->set_action(v1::STAGE_ACTION_RUN);
  stage->set_reason("load changed");
  e.mutable_submitted_at()->set_seconds(1000);
  return e;
}

TEST(FormatExperimentTest, PutsFactsFirst) {
  std::string text = FormatExperiment(DeltaExperiment(), absl::FromUnixSeconds(1012));
  EXPECT_THAT(text, HasSubstr("state:            queued"));
  EXPECT_THAT(text, HasSubstr("none yet (queued for 12.00s)"));
  EXPECT_THAT(text, HasSubstr("0 sent / 640 planned"));
  EXPECT_THAT(text, HasSubstr("blocker:          none"));
  EXPECT_THAT(text, HasSubstr("workload.concurrency: 64 → 96  [LOAD]"));
  EXPECT_THAT(text, HasSubstr("formal_load"));
  EXPECT_THAT(text, HasSubstr("load changed"));
  EXPECT_LT(text.find("state:"), text.find("plan"));
  EXPECT_LT(text.find("blocker:"), text.find("changes:"));
}

TEST(FormatExperimentTest, RunningStageShowsHowLong) {
  v1::Experiment e = DeltaExperiment();
  e.set_state(v1::EXPERIMENT_STATE_RUNNING);
  v1::Stage* stage = e.add_stages();
  stage->set_name(v1::STAGE_WARMUP);
  stage->set_status(v1::STAGE_STATUS_RUNNING);
  stage->mutable_started_at()->set_seconds(1000);
  EXPECT_THAT(FormatExperiment(e, absl::FromUnixSeconds(1065)), HasSubstr("warmup (for 1m5s)"));
}

TEST(FormatLiveProgressTest, StageCountsElapsedAndEta) {
  v1::Experiment e = DeltaExperiment();
  e.set_state(v1::EXPERIMENT_STATE_RUNNING);
  v1::Stage* stage = e.add_stages();
  stage->set_name(v1::STAGE_FORMAL_LOAD);
  stage->set_status(v1::STAGE_STATUS_RUNNING);
  stage->mutable_started_at()->set_seconds(1010);
  // Before the first request there is nothing to extrapolate from.
  EXPECT_THAT(FormatLiveProgress(e, absl::FromUnixSeconds(1012)), HasSubstr("eta -"));
  v1::Progress& p = *e.mutable_progress();
  p.set_formal_requests_sent(200);
  p.set_formal_requests_completed(150);
  p.set_formal_requests_failed(10);
  p.mutable_first_formal_request_at()->set_seconds(1010);
  // 160 of 640 ended in 16 s: 480 left take 48 s more.
  const std::string line = FormatLiveProgress(e, absl::FromUnixSeconds(1026));
  EXPECT_THAT(line, HasSubstr("exp-2 running formal_load"));
  EXPECT_THAT(line, HasSubstr("200/640 sent, 150 completed, 10 failed"));
  EXPECT_THAT(line, HasSubstr("elapsed 26.00s"));
  EXPECT_THAT(line, HasSubstr("eta 48.00s"));
  EXPECT_EQ(line.find('\n'), std::string::npos) << "redrawn in place: one line";
  e.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
  EXPECT_THAT(FormatLiveProgress(e, absl::FromUnixSeconds(1030)), HasSubstr("eta 0s"));
}

TEST(FormatDecisionTest, RepeatsShowTheSpreadAndRuns) {
  v1::Experiment e = DeltaExperiment();
  e.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
  e.mutable_result()->mutable_whole()->set_output_tokens_per_second_per_device(149.1);
  v1::Decision& d = *e.mutable_result()->mutable_decision();
  d.set_verdict(v1::VERDICT_INCONCLUSIVE);
  d.set_delta_fraction(0.0081);
  d.set_delta_spread(0.006);
  d.set_repeats(3);
  d.set_baseline_repeats(3);
  d.set_baseline_experiment_id("exp-1");
  EXPECT_THAT(FormatExperiment(e, absl::FromUnixSeconds(1030)),
              HasSubstr("decision: inconclusive (+0.81% \u00b1 0.60% vs exp-1, 3 vs 3 runs)"));
}

TEST(FormatExperimentTest, FailedShowsClassAndResume) {
  v1::Experiment e = DeltaExperiment();
  e.set_state(v1::EXPERIMENT_STATE_FAILED);
  e.set_failure_class(v1::WARM_RESUMABLE);
  e.set_resume_action("continue at formal_load; no relaunch");
  std::string text = FormatExperiment(e, absl::FromUnixSeconds(1000));
  EXPECT_THAT(text, HasSubstr("WARM_RESUMABLE"));
  EXPECT_THAT(text, HasSubstr("continue at formal_load"));
}

TEST(ToJsonTest, SnakeCaseEnumNamesAndEmptyFields) {
  v1::Experiment e;
  e.set_id("exp-1");
  e.set_state(v1::EXPERIMENT_STATE_QUEUED);
  std::string json = ToJson(e, /*pretty=*/false);
  EXPECT_THAT(json, HasSubstr("\"base_id\":\"\""));
  EXPECT_THAT(json, HasSubstr("\"changes\":[]"));
  EXPECT_THAT(json, HasSubstr("\"EXPERIMENT_STATE_QUEUED\""));
  EXPECT_THAT(json, Not(HasSubstr("\n")));
  v1::Experiment parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok());
  EXPECT_EQ(parsed.id(), "exp-1");
}

TEST(FormatExperimentListTest, OneLinePerExperiment) {
  v1::ListExperimentsResponse list;
  *list.add_experiments() = DeltaExperiment();
  std::string text = FormatExperimentList(list);
  EXPECT_THAT(text, HasSubstr("exp-2"));
  EXPECT_THAT(text, HasSubstr("exp-1"));
  EXPECT_THAT(text, HasSubstr("1970-01-01T00:16:40Z"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

TEST(FormatSummaryTest, NotServingPointsToTheNextStep) {
  v1::Summary summary;
  summary.set_serving(false);
  summary.mutable_next_step()->set_action(v1::NextStep::FIX_DAEMON);
  summary.mutable_next_step()->set_reason(
      "servelabd accepts no new work since the ledger write of exp-1's "
      "state failed 3 times: database is locked");
  const std::string text = FormatSummary(summary);
  EXPECT_THAT(text, HasSubstr("NOT serving (see next step)"));
  EXPECT_THAT(text, HasSubstr("database is locked"));
  summary.set_serving(true);
  EXPECT_THAT(FormatSummary(summary), Not(HasSubstr("NOT serving")));
}

TEST(FormatExperimentTest, DecisionShowsTheVerdictWord) {
  v1::Experiment e = DeltaExperiment();
  e.mutable_result()->mutable_whole()->set_output_tokens_per_second_per_device(91);
  v1::Decision& d = *e.mutable_result()->mutable_decision();
  d.set_verdict(v1::VERDICT_DISCARD);
  d.set_delta_fraction(-0.3856);
  d.set_baseline_experiment_id("exp-1");
  EXPECT_THAT(FormatExperiment(e, absl::FromUnixSeconds(1012)),
              HasSubstr("decision: discard (-38.56% vs exp-1)"));
  d.set_verdict(v1::VERDICT_UNSPECIFIED);  // A result stored before the enum.
  EXPECT_THAT(FormatExperiment(e, absl::FromUnixSeconds(1012)), Not(HasSubstr("decision:")));
}

// A result, and a succeeded formal load stage to hold its counters.
v1::Stage* AddFinishedFormalLoad(v1::Experiment& e) {
  e.mutable_result()->mutable_whole()->set_output_tokens_per_second_per_device(91);
  v1::Stage* formal = e.add_stages();
  formal->set_name(v1::STAGE_FORMAL_LOAD);
  formal->set_status(v1::STAGE_STATUS_SUCCEEDED);
  return formal;
}

// The hit ratio comes from prefill's counters; the client's figure is shown
// beside it only when it is not decode's count.
TEST(FormatExperimentTest, PrefixCacheHitRatioIsPrefillsAndTheClientsOnlyWhenMeaningful) {
  v1::Experiment e = DeltaExperiment();
  v1::Stage* formal = AddFinishedFormalLoad(e);
  (*formal->mutable_counters())["achieved_hit_ratio"] = 0.9;
  e.mutable_result()->set_cached_tokens_reported(true);
  e.mutable_result()->set_prefix_cache_hit_ratio(0.8987);
  EXPECT_THAT(
      FormatExperiment(e, absl::FromUnixSeconds(1012)),
      HasSubstr("prefix cache: 0.9000 hit ratio (prefill's counters), 0.8987 (client usage)"));
  e.mutable_result()->set_cached_tokens_from_decode(true);
  e.mutable_result()->set_prefix_cache_hit_ratio(0.9995);
  std::string text = FormatExperiment(e, absl::FromUnixSeconds(1012));
  EXPECT_THAT(text, HasSubstr("prefix cache: 0.9000 hit ratio (prefill's counters)\n"));
  EXPECT_THAT(text, Not(HasSubstr("0.9995")));
}

// The formal load's read lag is shown when the daemon recorded it (an older
// daemon's experiment has none).
TEST(FormatExperimentTest, ClientReadLagIsShownWhenTheFormalLoadRecordedIt) {
  v1::Experiment e = DeltaExperiment();
  v1::Stage* formal = AddFinishedFormalLoad(e);
  EXPECT_THAT(FormatExperiment(e, absl::FromUnixSeconds(1012)), Not(HasSubstr("client read lag")));
  (*formal->mutable_counters())["client_read_lag_p99_seconds"] = 0.0052;
  EXPECT_THAT(FormatExperiment(e, absl::FromUnixSeconds(1012)),
              HasSubstr("  client read lag: p99 5.200 ms (first tokens waited in servelabd's "
                        "sockets; not in TTFT)\n"));
}

TEST(FormatComparisonTest, ShowsEachDifferingFieldAndTheResults) {
  v1::Experiment a;
  a.set_id("exp-1");
  a.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
  a.mutable_spec()->mutable_workload()->set_concurrency(16);
  a.mutable_spec()->mutable_workload()->set_num_requests(96);
  a.mutable_result()->mutable_whole()->set_output_tokens_per_second_per_device(147.9064);
  v1::Experiment b = a;
  b.set_id("exp-2");
  b.mutable_spec()->mutable_workload()->set_concurrency(8);
  b.mutable_result()->mutable_whole()->set_output_tokens_per_second_per_device(149.107);
  v1::Decision& d = *b.mutable_result()->mutable_decision();
  d.set_verdict(v1::VERDICT_KEEP);
  d.set_delta_fraction(0.0081);
  d.set_baseline_experiment_id("exp-1");
  const std::string text = FormatComparison({a, b});
  EXPECT_THAT(text, HasSubstr("frozen-spec differences (against exp-1)"));
  EXPECT_THAT(text, ::testing::ContainsRegex("workload.concurrency +16 +8"));
  EXPECT_THAT(text, Not(HasSubstr("workload.num_requests")));
  EXPECT_THAT(text, ::testing::ContainsRegex("output tok/s per device +147.9 / 0 +149.1 / 0"));
  EXPECT_THAT(text, HasSubstr("keep (+0.81% vs exp-1)"));
  b.mutable_spec()->mutable_workload()->set_concurrency(16);
  EXPECT_THAT(FormatComparison({a, b}), HasSubstr("none: the frozen specs are equal"));
}

TEST(FormatSummaryTest, NextStepIsWordedAsACommand) {
  v1::NextStep next;
  EXPECT_EQ(FormatNextStep(next), "-");
  next.set_action(v1::NextStep::WAIT_SENT);
  next.set_experiment_id("exp-3");
  next.set_reason("it runs next");
  EXPECT_EQ(FormatNextStep(next), "it runs next: servelab wait exp-3 --until sent");
  next.set_action(v1::NextStep::SUBMIT_DELTA);
  EXPECT_THAT(FormatNextStep(next), HasSubstr("servelab submit --base exp-3 --set PATH=VALUE"));
  next.set_action(v1::NextStep::FIX_DAEMON);
  next.set_reason("disk full");
  EXPECT_EQ(FormatNextStep(next), "disk full");
}

TEST(ExitCodesTest, DistinctPerCode) {
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::OK), 0);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::INVALID_ARGUMENT), 3);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::NOT_FOUND), 4);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::FAILED_PRECONDITION), 5);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::UNAVAILABLE), 6);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::DEADLINE_EXCEEDED), 7);
  EXPECT_EQ(ExitCodeFor(grpc::StatusCode::INTERNAL), 1);
  EXPECT_STREQ(StatusCodeName(grpc::StatusCode::INVALID_ARGUMENT), "INVALID_ARGUMENT");
}

}  // namespace
}  // namespace servelab::client
