#include "daemon/core/spec/validate.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "daemon/core/spec/environment.h"
#include "google/protobuf/duration.pb.h"

namespace servelab::core::spec {
namespace {

class Problems {
 public:
  template <typename... Args>
  void Add(const std::string& path, const Args&... reason) {
    list_.push_back(absl::StrCat(path, ": ", reason...));
  }
  absl::Status ToStatus() const {
    if (list_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(list_, "; "));
  }

 private:
  std::vector<std::string> list_;
};

template <typename T>
void Positive(Problems& p, const std::string& path, T value) {
  if (value <= 0) p.Add(path, "must be > 0, got ", value);
}

template <typename T>
void NonNegative(Problems& p, const std::string& path, T value) {
  if (value < 0) p.Add(path, "must be >= 0, got ", value);
}

void CheckSide(Problems& p, const std::string& path, const v1::InstanceSpec& side,
               v1::Engine engine) {
  if (side.devices_size() == 0) p.Add(path + ".devices", "at least one device is required");
  std::set<int> seen;
  for (int d : side.devices()) {
    if (d < 0) p.Add(path + ".devices", "device ids are >= 0, got ", d);
    if (!seen.insert(d).second) p.Add(path + ".devices", "device ", d, " is listed twice");
  }
  Positive(p, path + ".data_parallel", side.data_parallel());
  Positive(p, path + ".tensor_parallel", side.tensor_parallel());
  Positive(p, path + ".context_parallel", side.context_parallel());
  Positive(p, path + ".expert_parallel", side.expert_parallel());
  Positive(p, path + ".max_num_batched_tokens", side.max_num_batched_tokens());
  Positive(p, path + ".max_num_seqs", side.max_num_seqs());
  Positive(p, path + ".max_model_len", side.max_model_len());
  if (side.port() < 0 || side.port() > 65535)
    p.Add(path + ".port", "must be 0..65535, got ", side.port());
  if (engine == v1::ENGINE_COMMAND && side.command_argv_size() == 0) {
    p.Add(path + ".command_argv", "required with engine command");
  }
  if (engine != v1::ENGINE_SIM && side.model().empty()) {
    p.Add(path + ".model", "required with a real serving engine");
  }
  if (side.gpu_memory_utilization() < 0 || side.gpu_memory_utilization() > 1) {
    p.Add(path + ".gpu_memory_utilization", "is a fraction in (0, 1], got ",
          side.gpu_memory_utilization());
  }
  if (side.external_data_parallel() && engine != v1::ENGINE_VLLM &&
      engine != v1::ENGINE_VLLM_ASCEND) {
    p.Add(path + ".external_data_parallel",
          "one process per DP rank is rendered for engines "
          "vllm and vllm_ascend only");
  }
  if (side.external_data_parallel() && side.data_parallel() > 1 &&
      side.devices_size() % side.data_parallel() != 0) {
    p.Add(path + ".devices", side.devices_size(), " devices do not split into ",
          side.data_parallel(), " external data-parallel ranks");
  }
}

void CheckPort(Problems& p, const std::string& path, int port) {
  if (port < 0 || port > 65535) p.Add(path, "must be 0..65535, got ", port);
}

void CheckDuration(Problems& p, const std::string& path, const google::protobuf::Duration& d) {
  if (d.seconds() < 0 || d.nanos() < 0) p.Add(path, "must not be negative");
}

// Paths the daemon executes (or passes) as is: no shell, no PATH lookup.
void CheckProgramPaths(Problems& p, const v1::ProgramsSpec& programs) {
  const std::pair<const char*, const std::string*> program_paths[] = {
      {"deployment.programs.vllm_binary", &programs.vllm_binary()},
      {"deployment.programs.python_binary", &programs.python_binary()},
      {"deployment.programs.proxy_script", &programs.proxy_script()}};
  for (const auto& [path, value] : program_paths) {
    if (!value->empty() && (*value)[0] != '/') {
      p.Add(path, "must be an absolute path, got \"", *value, "\"");
    }
  }
}

// Slurm names and values reach srun/salloc as one argv element each, so
// anything outside these characters is a typo, not a feature.
bool SlurmWord(const std::string& value, absl::string_view extra) {
  for (char c : value) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' &&
        extra.find(c) == extra.npos) {
      return false;
    }
  }
  return true;
}

void CheckEnvironments(Problems& p, const v1::DeploymentSpec& deployment) {
  const std::vector<EnvProblem> problems[] = {
      EnvProblems("deployment.prefill", deployment.prefill().env(),
                  deployment.prefill().pass_env()),
      EnvProblems("deployment.decode", deployment.decode().env(), deployment.decode().pass_env()),
      EnvProblems("deployment.router", deployment.router().env(), deployment.router().pass_env())};
  for (const std::vector<EnvProblem>& holder : problems) {
    for (const EnvProblem& problem : holder) p.Add(problem.path, problem.reason);
  }
}

void CheckPlacement(Problems& p, const v1::DeploymentSpec& deployment) {
  const std::pair<const char*, const std::string*> nodes[] = {
      {"deployment.prefill.node", &deployment.prefill().node()},
      {"deployment.decode.node", &deployment.decode().node()},
      {"deployment.router.node", &deployment.router().node()}};
  const v1::PlacementSpec& placement = deployment.placement();
  if (placement.kind() != v1::PLACEMENT_KIND_SLURM) {
    for (const auto& [path, node] : nodes) {
      if (!node->empty()) p.Add(path, "names a Slurm node, but deployment.placement.kind is local");
    }
    if (placement.has_slurm()) {
      p.Add("deployment.placement.slurm", "is set, but deployment.placement.kind is local");
    }
    return;
  }
  for (const auto& [path, node] : nodes) {
    if (!SlurmWord(*node, "")) p.Add(path, "\"", *node, "\" is not a Slurm node name");
  }
  const v1::SlurmPlacementSpec& slurm = placement.slurm();
  if (!slurm.job_id().empty() && !absl::c_all_of(slurm.job_id(), absl::ascii_isdigit)) {
    p.Add("deployment.placement.slurm.job_id", "\"", slurm.job_id(), "\" is not a Slurm job id");
  }
  if (slurm.nodes() < 0 || slurm.nodes() > 4096) {
    p.Add("deployment.placement.slurm.nodes", "must be 0..4096, got ", slurm.nodes());
  }
  const std::pair<const char*, const std::string*> words[] = {
      {"deployment.placement.slurm.partition", &slurm.partition()},
      {"deployment.placement.slurm.account", &slurm.account()},
      {"deployment.placement.slurm.device_gres", &slurm.device_gres()}};
  for (const auto& [path, value] : words) {
    if (!SlurmWord(*value, "")) p.Add(path, "\"", *value, "\" has characters Slurm names do not");
  }
  if (!SlurmWord(slurm.gres(), ":,")) {
    p.Add("deployment.placement.slurm.gres", "\"", slurm.gres(), "\" is not a GRES list (gpu:8)");
  }
  if (!SlurmWord(slurm.time_limit(), ":")) {
    p.Add("deployment.placement.slurm.time_limit", "\"", slurm.time_limit(),
          "\" is not a Slurm time (7-00:00:00)");
  }
  if (!SlurmWord(slurm.listen_host(), ":")) {
    p.Add("deployment.placement.slurm.listen_host", "\"", slurm.listen_host(),
          "\" is not an address");
  }
}

void CheckDeployment(Problems& p, const v1::DeploymentSpec& deployment) {
  CheckPlacement(p, deployment);
  CheckSide(p, "deployment.prefill", deployment.prefill(), deployment.engine());
  CheckSide(p, "deployment.decode", deployment.decode(), deployment.engine());
  CheckEnvironments(p, deployment);
  // Device ids are per machine: sides on two different Slurm nodes may
  // both use device 0.
  const bool same_machine = deployment.placement().kind() != v1::PLACEMENT_KIND_SLURM ||
                            deployment.prefill().node().empty() ||
                            deployment.prefill().node() == deployment.decode().node();
  for (int d : deployment.decode().devices()) {
    for (int q : deployment.prefill().devices()) {
      if (d == q && same_machine) {
        p.Add("deployment.decode.devices", "device ", d, " is also a prefill device");
      }
    }
  }
  const int router_port = deployment.router().port();
  if (router_port < 0 || router_port > 65535) {
    p.Add("deployment.router.port", "must be 0..65535, got ", router_port);
  }
  if (deployment.engine() == v1::ENGINE_COMMAND && deployment.router().command_argv_size() == 0) {
    p.Add("deployment.router.command_argv", "required with engine command");
  }
  const v1::KvTransferSpec& kv = deployment.kv_transfer();
  CheckPort(p, "deployment.kv_transfer.side_channel_base_port", kv.side_channel_base_port());
  CheckPort(p, "deployment.kv_transfer.kv_port", kv.kv_port());
  CheckPort(p, "deployment.kv_transfer.bootstrap_port", kv.bootstrap_port());
  NonNegative(p, "deployment.ascend.hccl_buffsize", deployment.ascend().hccl_buffsize());
  CheckProgramPaths(p, deployment.programs());
  const v1::WarmupSpec& warmup = deployment.warmup();
  NonNegative(p, "deployment.warmup.rounds", warmup.rounds());
  Positive(p, "deployment.warmup.requests", warmup.requests());
  Positive(p, "deployment.warmup.input_tokens", warmup.input_tokens());
  Positive(p, "deployment.warmup.output_tokens", warmup.output_tokens());
}

// Every request must fit the context of both sides, or the load would fail
// after the expensive stages. (A dataset file's lengths are not known here.)
void CheckRequestsFitContext(Problems& p, const v1::ExperimentSpec& spec) {
  const v1::DeploymentSpec& deployment = spec.deployment();
  const v1::DatasetSpec& dataset = spec.workload().dataset();
  if (!dataset.file().path().empty()) return;
  const int64_t longest = int64_t{dataset.input_tokens()} + dataset.input_tokens_range() +
                          dataset.output_tokens() + dataset.output_tokens_range();
  for (const auto& [path, side] : {std::pair{"deployment.prefill", &deployment.prefill()},
                                   std::pair{"deployment.decode", &deployment.decode()}}) {
    if (side->max_model_len() > 0 && longest > side->max_model_len()) {
      p.Add("workload.dataset.input_tokens", "a request of up to ", longest, " tokens exceeds ",
            path, ".max_model_len (", side->max_model_len(), ")");
    }
  }
}

// The load generator holds every prompt's token ids (4 bytes each) and the
// store one record per request: past these a load cannot fit the machine,
// and num_requests x input_tokens could overflow a 32-bit count.
void CheckLoadSize(Problems& p, const v1::WorkloadSpec& workload) {
  constexpr int64_t kMaxRequests = 10'000'000;
  constexpr int64_t kMaxPromptTokens = 2'000'000'000;
  const int64_t requests = workload.num_requests();
  if (requests > kMaxRequests) {
    p.Add("workload.num_requests", "must be <= ", kMaxRequests, ", got ", requests);
    return;
  }
  const int64_t longest =
      int64_t{workload.dataset().input_tokens()} + workload.dataset().input_tokens_range();
  if (requests > 0 && longest > 0 && requests * longest > kMaxPromptTokens) {
    p.Add("workload.num_requests", requests, " requests of up to ", longest, " prompt tokens are ",
          requests * longest, " tokens, over the limit of ", kMaxPromptTokens,
          " the load generator holds");
  }
}

void CheckWorkload(Problems& p, const v1::WorkloadSpec& workload) {
  const v1::DatasetSpec& dataset = workload.dataset();
  if (dataset.file().path().empty()) {
    Positive(p, "workload.dataset.input_tokens", dataset.input_tokens());
    Positive(p, "workload.dataset.output_tokens", dataset.output_tokens());
  }
  NonNegative(p, "workload.dataset.input_tokens_range", dataset.input_tokens_range());
  NonNegative(p, "workload.dataset.output_tokens_range", dataset.output_tokens_range());
  if (dataset.input_tokens_range() >= dataset.input_tokens() && dataset.input_tokens_range() > 0) {
    p.Add("workload.dataset.input_tokens_range", "must be < input_tokens");
  }
  if (dataset.output_tokens_range() >= dataset.output_tokens() &&
      dataset.output_tokens_range() > 0) {
    p.Add("workload.dataset.output_tokens_range", "must be < output_tokens");
  }
  if (dataset.prefix_cache_ratio() < 0 || dataset.prefix_cache_ratio() >= 1) {
    p.Add("workload.dataset.prefix_cache_ratio", "must be in [0, 1), got ",
          dataset.prefix_cache_ratio());
  }
  NonNegative(p, "workload.dataset.prefix_groups", dataset.prefix_groups());
  Positive(p, "workload.num_requests", workload.num_requests());
  CheckLoadSize(p, workload);
  Positive(p, "workload.concurrency", workload.concurrency());
  NonNegative(p, "workload.request_rate", workload.request_rate());
  Positive(p, "workload.burstiness", workload.burstiness());
  // Each run is a whole formal load: more than this is a sweep, not noise.
  constexpr int kMaxRepeats = 20;
  if (workload.repeats() < 0 || workload.repeats() > kMaxRepeats) {
    p.Add("workload.repeats", "must be in [0, ", kMaxRepeats, "] (0 means 1), got ",
          workload.repeats());
  }
  if (workload.num_requests() > 0 && dataset.prefix_groups() > workload.num_requests()) {
    p.Add("workload.dataset.prefix_groups", "must be <= num_requests (", workload.num_requests(),
          ")");
  }
}

void CheckAnalysis(Problems& p, const v1::AnalysisSpec& analysis) {
  NonNegative(p, "analysis.device_count", analysis.device_count());
  for (int i = 0; i < analysis.percentiles_size(); ++i) {
    double q = analysis.percentiles(i);
    if (q <= 0 || q >= 100)
      p.Add(absl::StrCat("analysis.percentiles[", i, "]"), "must be in (0, 100), got ", q);
  }
  double steady = analysis.steady_min_inflight_fraction();
  if (steady <= 0 || steady > 1) {
    p.Add("analysis.steady_min_inflight_fraction", "must be in (0, 1], got ", steady);
  }
  CheckDuration(p, "analysis.slo.ttft", analysis.slo().ttft());
  CheckDuration(p, "analysis.slo.tpot", analysis.slo().tpot());
  CheckDuration(p, "analysis.slo.e2e", analysis.slo().e2e());
  if (analysis.decision().min_improvement() < 0) {
    p.Add("analysis.decision.min_improvement", "must be >= 0");
  }
}

// Prefill holds an aborted request's KV blocks for abort_request_timeout;
// the cache reset waits until no block is in use, within warmup_timeout.
void CheckKvLeaseFitsTheReset(Problems& p, const v1::ExperimentSpec& spec) {
  const google::protobuf::Duration& lease = spec.deployment().kv_transfer().abort_request_timeout();
  CheckDuration(p, "deployment.kv_transfer.abort_request_timeout", lease);
  const google::protobuf::Duration& reset = spec.limits().warmup_timeout();
  const bool set = lease.seconds() > 0 || lease.nanos() > 0;
  if (set && std::make_pair(lease.seconds(), lease.nanos()) >=
                 std::make_pair(reset.seconds(), reset.nanos())) {
    p.Add("deployment.kv_transfer.abort_request_timeout", "must be below limits.warmup_timeout (",
          reset.seconds(), " s), got ", lease.seconds(),
          " s: the cache reset waits out the KV "
          "blocks prefill keeps for an aborted request");
  }
}

// The API must be one the engine's front serves, with prompts it takes.
void CheckApiFitsTheEngine(Problems& p, const v1::ExperimentSpec& spec) {
  const v1::Engine engine = spec.deployment().engine();
  const v1::Api api = spec.workload().api();
  if (api == v1::API_GENERATE && engine != v1::ENGINE_SGLANG && engine != v1::ENGINE_COMMAND) {
    p.Add("workload.api", "generate is SGLang's native /generate, which engine ",
          absl::AsciiStrToLower(absl::StripPrefix(v1::Engine_Name(engine), "ENGINE_")),
          " does not serve; use completions");
  }
  // sgl-router's CompletionRequest.prompt is a string or a list of strings
  // (sgl-router src/protocols/common.rs StringOrArray): a synthetic
  // dataset's token-id prompts would be refused before reaching SGLang.
  const bool sgl_router =
      engine == v1::ENGINE_SGLANG && spec.deployment().router().command_argv_size() == 0;
  if (sgl_router && api == v1::API_COMPLETIONS && spec.workload().dataset().file().path().empty()) {
    p.Add("workload.api",
          "completions sends token-id prompts, which sglang_router's "
          "/v1/completions refuses (it takes text only); use generate (/generate with input_ids)");
  }
}

void CheckLimits(Problems& p, const v1::LimitsSpec& limits) {
  CheckDuration(p, "limits.formal_deadline", limits.formal_deadline());
  CheckDuration(p, "limits.launch_timeout", limits.launch_timeout());
  CheckDuration(p, "limits.warmup_timeout", limits.warmup_timeout());
  CheckDuration(p, "limits.drain_timeout", limits.drain_timeout());
  CheckDuration(p, "limits.request_timeout", limits.request_timeout());
}

}  // namespace

// Problems are listed in spec order: deployment, workload, analysis, limits.
absl::Status ValidateSpec(const v1::ExperimentSpec& spec) {
  Problems p;
  if (spec.scenario().empty()) p.Add("scenario", "required (it groups comparable experiments)");
  CheckDeployment(p, spec.deployment());
  CheckWorkload(p, spec.workload());
  CheckRequestsFitContext(p, spec);
  CheckAnalysis(p, spec.analysis());
  CheckLimits(p, spec.limits());
  CheckKvLeaseFitsTheReset(p, spec);
  CheckApiFitsTheEngine(p, spec);
  return p.ToStatus();
}

}  // namespace servelab::core::spec
