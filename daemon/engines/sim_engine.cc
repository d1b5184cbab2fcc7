#include "daemon/engines/sim_engine.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "daemon/engines/render_common.h"

namespace servelab::engines {
namespace {

// The sim's YAML keys for the InstanceSpec fields it models; the rest of
// its parameters keep their defaults.
std::string SimConfigYaml(const v1::InstanceSpec& instance, v1::Side side) {
  std::string yaml = absl::StrCat("# Rendered by servelab from ", InstanceFieldPath(side),
                                  " of the frozen spec.\n");
  if (instance.max_num_seqs() > 0)
    absl::StrAppend(&yaml, "max_num_seqs: ", instance.max_num_seqs(), "\n");
  if (instance.max_num_batched_tokens() > 0) {
    absl::StrAppend(&yaml, "max_num_batched_tokens: ", instance.max_num_batched_tokens(), "\n");
  }
  if (instance.max_model_len() > 0) {
    absl::StrAppend(&yaml, "max_model_len: ", instance.max_model_len(), "\n");
  }
  return yaml;
}

}  // namespace

std::string DefaultSimBinary() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "servelab-sim";  // Relative: Create reports it.
  return (self.parent_path() / "servelab-sim").string();
}

absl::StatusOr<std::unique_ptr<SimEngine>> SimEngine::Create(SimEngineOptions options) {
  if (options.binary.empty() || options.binary[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--sim-binary must be an absolute path, got \"", options.binary, "\""));
  }
  if (!(options.time_scale >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sim-time-scale must be >= 0, got ", options.time_scale));
  }
  return std::unique_ptr<SimEngine>(new SimEngine(std::move(options)));
}

SimEngine::SimEngine(SimEngineOptions options)
    : ProcessEngine(VllmProtocol()), options_(std::move(options)) {}

absl::StatusOr<core::LaunchCommand> SimEngine::Render(const v1::ExperimentSpec& spec, v1::Side side,
                                                      const core::Endpoints& endpoints,
                                                      const std::string& log_dir) {
  // Checked here so that preflight, not the launch stage, finds a missing binary.
  if (access(options_.binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("servelab-sim binary ", options_.binary, " is not executable"));
  }
  absl::StatusOr<core::LaunchCommand> started = NewLaunchCommand(spec, side, endpoints, log_dir);
  if (!started.ok()) return started.status();
  core::LaunchCommand command = *std::move(started);
  command.argv = {options_.binary,
                  "--role",
                  SideLabel(side),
                  "--host",
                  ListenHost(spec),
                  "--port",
                  absl::StrCat(command.port),
                  "--time-scale",
                  absl::StrCat(options_.time_scale)};

  if (side == v1::SIDE_ROUTER) {
    absl::StatusOr<int> prefill = UpstreamPort(spec, v1::SIDE_PREFILL, endpoints);
    if (!prefill.ok()) return prefill.status();
    absl::StatusOr<int> decode = UpstreamPort(spec, v1::SIDE_DECODE, endpoints);
    if (!decode.ok()) return decode.status();
    const v1::RouterSpec& router = spec.deployment().router();
    command.argv.insert(command.argv.end(),
                        {"--prefill-url", HostUrl(endpoints.prefill_host, *prefill), "--decode-url",
                         HostUrl(endpoints.decode_host, *decode)});
    // The sim router checks a request's model against its own name, so it
    // serves the model of the side that answers (decode).
    const std::string& model = spec.deployment().decode().model().empty()
                                   ? spec.deployment().prefill().model()
                                   : spec.deployment().decode().model();
    if (!model.empty()) command.argv.insert(command.argv.end(), {"--model", model});
    command.served_model = model;
    command.argv.insert(command.argv.end(), router.extra_args().begin(), router.extra_args().end());
    command.env.insert(router.env().begin(), router.env().end());
    return command;
  }

  absl::StatusOr<const v1::InstanceSpec*> instance = InstanceSpecFor(spec, side);
  if (!instance.ok()) return instance.status();
  const v1::InstanceSpec& is = **instance;
  if (!is.model().empty()) command.argv.insert(command.argv.end(), {"--model", is.model()});
  command.served_model = is.model();
  if (is.max_num_seqs() > 0 || is.max_num_batched_tokens() > 0 || is.max_model_len() > 0) {
    std::string config_path = absl::StrCat(log_dir, "/", SideLabel(side), ".sim.yaml");
    command.argv.insert(command.argv.end(), {"--config", config_path});
    command.files[config_path] = SimConfigYaml(is, side);
  }
  command.argv.insert(command.argv.end(), is.extra_args().begin(), is.extra_args().end());
  command.env.insert(is.env().begin(), is.env().end());
  return command;
}

}  // namespace servelab::engines
