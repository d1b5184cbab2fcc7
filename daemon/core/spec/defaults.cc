#include "daemon/core/spec/defaults.h"

#include <algorithm>

#include "google/protobuf/duration.pb.h"

namespace servelab::core::spec {
namespace {

void SetIfZero(v1::InstanceSpec& side) {
  if (side.data_parallel() == 0) side.set_data_parallel(1);
  if (side.tensor_parallel() == 0) side.set_tensor_parallel(1);
  if (side.context_parallel() == 0) side.set_context_parallel(1);
  if (side.expert_parallel() == 0) side.set_expert_parallel(1);
  if (side.max_num_batched_tokens() == 0) side.set_max_num_batched_tokens(8192);
  if (side.max_num_seqs() == 0) side.set_max_num_seqs(256);
  if (side.max_model_len() == 0) side.set_max_model_len(32768);
}

void DefaultDuration(google::protobuf::Duration* d, int64_t seconds) {
  if (d->seconds() == 0 && d->nanos() == 0) d->set_seconds(seconds);
}

}  // namespace

void ApplyDefaults(v1::ExperimentSpec& spec) {
  v1::DeploymentSpec& deployment = *spec.mutable_deployment();
  if (deployment.engine() == v1::ENGINE_UNSPECIFIED) deployment.set_engine(v1::ENGINE_SIM);
  SetIfZero(*deployment.mutable_prefill());
  SetIfZero(*deployment.mutable_decode());
  // Two warmup rounds after a launch: what the first cold requests cost is
  // paid before the formal load.
  v1::WarmupSpec& warmup = *deployment.mutable_warmup();
  if (warmup.rounds() == 0) warmup.set_rounds(2);
  if (warmup.requests() == 0) warmup.set_requests(8);
  if (warmup.input_tokens() == 0) warmup.set_input_tokens(256);
  if (warmup.output_tokens() == 0) warmup.set_output_tokens(16);

  v1::WorkloadSpec& workload = *spec.mutable_workload();
  v1::DatasetSpec& dataset = *workload.mutable_dataset();
  if (dataset.prefix_cache_ratio() > 0 && dataset.prefix_groups() == 0)
    dataset.set_prefix_groups(1);
  if (workload.arrival() == v1::ARRIVAL_UNSPECIFIED) workload.set_arrival(v1::ARRIVAL_POISSON);
  if (workload.burstiness() == 0) workload.set_burstiness(1.0);
  if (workload.cache_prep() == v1::CACHE_PREP_UNSPECIFIED)
    workload.set_cache_prep(v1::CACHE_PREP_AUTO);
  // Through sgl-router only /generate carries token ids (see v1::Api).
  if (workload.api() == v1::API_UNSPECIFIED) {
    workload.set_api(deployment.engine() == v1::ENGINE_SGLANG ? v1::API_GENERATE
                                                              : v1::API_COMPLETIONS);
  }

  v1::AnalysisSpec& analysis = *spec.mutable_analysis();
  if (analysis.percentiles_size() == 0) {
    for (double p : {50.0, 90.0, 99.0}) analysis.add_percentiles(p);
  }
  if (analysis.steady_min_inflight_fraction() == 0) analysis.set_steady_min_inflight_fraction(0.95);
  v1::DecisionRule& decision = *analysis.mutable_decision();
  if (decision.metric().empty()) decision.set_metric("output_tokens_per_second_per_device");
  if (decision.window() == v1::WINDOW_UNSPECIFIED) decision.set_window(v1::WINDOW_WHOLE);
  if (decision.min_improvement() == 0) decision.set_min_improvement(0.01);

  v1::LimitsSpec& limits = *spec.mutable_limits();
  DefaultDuration(limits.mutable_formal_deadline(), 30 * 60);
  DefaultDuration(limits.mutable_launch_timeout(), 10 * 60);
  DefaultDuration(limits.mutable_warmup_timeout(), 5 * 60);
  DefaultDuration(limits.mutable_drain_timeout(), 2 * 60);
  DefaultDuration(limits.mutable_request_timeout(), 10 * 60);

  // Prefill's KV lease for an aborted request must end before the cache
  // reset stops waiting for it: 60 s, or half the reset's wait if shorter.
  if (deployment.engine() == v1::ENGINE_VLLM || deployment.engine() == v1::ENGINE_VLLM_ASCEND) {
    const int64_t half_reset_wait = std::max<int64_t>(1, limits.warmup_timeout().seconds() / 2);
    DefaultDuration(deployment.mutable_kv_transfer()->mutable_abort_request_timeout(),
                    std::min<int64_t>(60, half_reset_wait));
  }
}

}  // namespace servelab::core::spec
