// Engine for ENGINE_SIM: prefill, decode and router instances are
// `servelab-sim` processes (sim/main.cc), which speak vLLM's HTTP API and
// metric names.
//
// The sim takes its capacity parameters only from a YAML --config file, so
// Render puts a small per-instance config into LaunchCommand::files (written
// by Launch, named in argv). A prefill instance with max_num_seqs 64 renders
//
//   /opt/servelab/bin/servelab-sim --role prefill --host 127.0.0.1 --port 40123
//   --time-scale 0.01 --model m --config LOG_DIR/prefill.sim.yaml EXTRA_ARGS...
//
// and the router `--role router ... --prefill-url http://127.0.0.1:P
// --decode-url http://127.0.0.1:D --model DECODE_MODEL`. Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_SIM_ENGINE_H_
#define SERVELAB_DAEMON_ENGINES_SIM_ENGINE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

struct SimEngineOptions {
  // Absolute path of the servelab-sim binary.
  std::string binary;
  // --time-scale: multiplies every modelled duration (tests use ~0.01).
  double time_scale = 1.0;
};

// The servelab-sim next to the running executable (/proc/self/exe), which is
// where the build and the install put it.
std::string DefaultSimBinary();

class SimEngine : public ProcessEngine {
 public:
  // INVALID_ARGUMENT for a relative binary path or a negative time scale.
  // The binary's existence is checked by Render, i.e. in preflight.
  static absl::StatusOr<std::unique_ptr<SimEngine>> Create(SimEngineOptions options);

  // FAILED_PRECONDITION when the binary is not executable or (router) an
  // upstream port is unknown.
  absl::StatusOr<core::LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                             const core::Endpoints& endpoints,
                                             const std::string& log_dir) override;

 private:
  explicit SimEngine(SimEngineOptions options);

  const SimEngineOptions options_;
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_SIM_ENGINE_H_
