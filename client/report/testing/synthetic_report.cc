#include "client/report/testing/synthetic_report.h"

#include <cmath>
#include <string>

namespace servelab::client::report::testing {
namespace {

constexpr int64_t kStart = 1'700'000'000;  // Unix seconds of the first stage.

int64_t Ns(double seconds) { return std::llround(seconds * 1e9); }

void SetTime(double offset_s, google::protobuf::Timestamp* ts) {
  int64_t ns = Ns(offset_s);
  ts->set_seconds(kStart + ns / 1'000'000'000);
  ts->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
}

void AddStage(v1::Experiment* e, v1::StageName name, v1::StageAction action, v1::StageStatus status,
              double from_s, double to_s) {
  v1::Stage* s = e->add_stages();
  s->set_name(name);
  s->set_action(action);
  s->set_status(status);
  s->set_attempt(1);
  SetTime(from_s, s->mutable_started_at());
  SetTime(to_s, s->mutable_ended_at());
}

// Formal load from 20 s to 80 s; gaps 0.5-1 s and 17-20 s belong to no stage.
void AddStages(v1::Experiment* e) {
  AddStage(e, v1::STAGE_FREEZE, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 0, 0.5);
  AddStage(e, v1::STAGE_PREFLIGHT, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 1, 2);
  AddStage(e, v1::STAGE_LAUNCH_PREFILL, v1::STAGE_ACTION_REUSE, v1::STAGE_STATUS_REUSED, 2, 2);
  AddStage(e, v1::STAGE_LAUNCH_DECODE, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 2, 12);
  v1::RenderedCommand* command = e->mutable_stages(3)->add_commands();
  command->set_side(v1::SIDE_DECODE);
  command->set_text("servelab-sim\n--port\n8101\n--max-num-seqs\n256\nenv CUDA_VISIBLE_DEVICES=8");
  AddStage(e, v1::STAGE_LAUNCH_ROUTER, v1::STAGE_ACTION_REUSE, v1::STAGE_STATUS_REUSED, 12, 12);
  AddStage(e, v1::STAGE_WARMUP, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 12, 16);
  AddStage(e, v1::STAGE_ROUTE_VERIFY, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 16, 17);
  AddStage(e, v1::STAGE_CACHE_RESET, v1::STAGE_ACTION_SKIP, v1::STAGE_STATUS_SKIPPED, 17, 17);
  AddStage(e, v1::STAGE_FORMAL_LOAD, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 20, 80);
  AddStage(e, v1::STAGE_DRAIN_CONFIRM, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 80, 81);
  AddStage(e, v1::STAGE_ANALYZE, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 81, 81.2);
  AddStage(e, v1::STAGE_DECIDE, v1::STAGE_ACTION_RUN, v1::STAGE_STATUS_SUCCEEDED, 81.2, 81.3);
}

// Two runs of `n` requests, 4 in flight, run 2 starting 30 s after run 1.
std::vector<v1::RequestRecord> Records(int n, double slowdown) {
  std::vector<v1::RequestRecord> records;
  for (int repeat = 1; repeat <= 2; ++repeat) {
    for (int i = 0; i < n; ++i) {
      double ttft = (0.040 + 0.004 * (i % 10)) * slowdown;
      double itl = (0.020 + 0.001 * (i % 5)) * slowdown;
      v1::RequestRecord r = SyntheticRecord(i, 0.1 * i, ttft, 16, itl);
      r.set_repeat(repeat);
      SetTime(20.5 + 30 * (repeat - 1), r.mutable_load_start());
      records.push_back(r);
    }
  }
  return records;
}

void SetWindows(const std::vector<v1::RequestRecord>& records, double per_device,
                v1::Result* result) {
  double end = records.back().end_ns() / 1e9;
  v1::WindowResult* whole = result->mutable_whole();
  whole->set_name("whole");
  whole->set_end_seconds(end);
  whole->set_duration_seconds(end);
  whole->set_output_tokens_per_second_per_device(per_device);
  whole->set_output_tokens_per_second(per_device * 2);
  whole->set_requests_completed(static_cast<int64_t>(records.size() / 2));
  whole->set_request_throughput(static_cast<double>(records.size() / 2) / end);
  v1::WindowResult* steady = result->mutable_steady();
  steady->set_name("steady");
  steady->set_start_seconds(0.5);
  steady->set_end_seconds(end - 0.5);
  steady->set_duration_seconds(end - 1);
  steady->set_output_tokens_per_second_per_device(per_device * 1.01);
  result->set_device_count(2);
  result->set_analyzed_phase(v1::PHASE_FORMAL);
  for (int repeat = 1; repeat <= 2; ++repeat) {
    v1::RepeatResult* run = result->add_repeats();
    run->set_repeat(repeat);
    run->set_value(per_device * (repeat == 1 ? 1.0 : 1.004));
    run->set_requests_completed(static_cast<int64_t>(records.size() / 2));
  }
}

}  // namespace

v1::RequestRecord SyntheticRecord(int index, double sent_s, double ttft_s, int tokens,
                                  double itl_s) {
  v1::RequestRecord r;
  r.set_experiment_id("exp-7");
  r.set_phase(v1::PHASE_FORMAL);
  r.set_attempt(1);
  r.set_request_index(index);
  r.set_sent_ns(Ns(sent_s));
  r.set_first_token_ns(Ns(sent_s + ttft_s));
  for (int t = 0; t < tokens; ++t) r.add_chunk_ns(Ns(sent_s + ttft_s + t * itl_s));
  r.set_end_ns(r.chunk_ns(tokens - 1));
  r.set_completion_tokens(tokens);
  r.set_http_status(200);
  return r;
}

ReportInput SyntheticReport(const SyntheticOptions& options) {
  ReportInput input;
  v1::Experiment& e = input.experiment;
  e.set_id("exp-7");
  e.set_base_id("exp-6");
  e.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
  e.mutable_spec()->set_scenario("16k-nocache");
  e.mutable_spec()->mutable_analysis()->mutable_decision()->set_metric(
      "output_tokens_per_second_per_device");
  e.mutable_spec()->mutable_analysis()->mutable_decision()->set_window(v1::WINDOW_WHOLE);
  e.mutable_spec()->mutable_analysis()->mutable_decision()->set_min_improvement(0.01);
  e.set_spec_sha256("3f2a9c01d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f");
  e.mutable_plan()->set_planned_against("exp-6");
  SetTime(-5, e.mutable_submitted_at());
  v1::FieldChange* change = e.add_changes();
  change->set_path("deployment.decode.max_num_seqs");
  change->set_old_value("128");
  change->set_new_value("256");
  AddStages(&e);
  input.records = Records(options.requests_per_run, 1.0);
  if (!input.records.empty()) SetWindows(input.records, 149.1070, e.mutable_result());
  input.generated_at = absl::FromUnixSeconds(kStart + 100);
  if (!options.with_baseline) return input;
  v1::Decision* d = e.mutable_result()->mutable_decision();
  d->set_baseline_experiment_id("exp-6");
  d->set_metric("output_tokens_per_second_per_device");
  d->set_value(149.1070);
  d->set_baseline_value(147.9064);
  d->set_delta_fraction((149.1070 - 147.9064) / 147.9064);
  d->set_verdict(v1::VERDICT_INCONCLUSIVE);
  d->set_repeats(2);
  d->set_baseline_repeats(2);
  d->set_delta_spread(0.0061);
  input.baseline.emplace();
  input.baseline->set_id("exp-6");
  input.baseline->set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
  input.baseline_records = Records(options.requests_per_run, 1.1);
  if (!input.baseline_records.empty()) {
    SetWindows(input.baseline_records, 147.9064, input.baseline->mutable_result());
  }
  return input;
}

}  // namespace servelab::client::report::testing
