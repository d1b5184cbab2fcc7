// servelab-sim: a simulated vLLM-compatible serving instance (prefill,
// decode, unified) or P/D router. Flags, then Create → Start → wait for
// SIGTERM/SIGINT → Shutdown.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "sim/compat.h"
#include "sim/config.h"
#include "sim/instance_model.h"
#include "sim/log.h"
#include "sim/router.h"
#include "sim/server.h"

namespace servelab::sim {
namespace {

bool WritePortFile(const std::string& path, int port) {
  // Written to a temporary name and renamed, so a reader never sees a partial file.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    if (!out.good()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// The command line as given.
struct SimFlags {
  std::string role_name = "unified", host = "127.0.0.1", port_file, config_path, model,
              log_level = "info", compat_name = "sim";
  std::vector<std::string> prefill_urls, decode_urls;
  CompatOptions compat;
  int port = 8000, threads = 2;
  double time_scale = 1.0;
  uint64_t seed = 0;
};

void AddFlags(CLI::App& app, SimFlags& flags) {
  app.add_option("--role", flags.role_name, "prefill, decode, router or unified")
      ->capture_default_str();
  app.add_option("--host", flags.host, "address to bind (loopback by default)")
      ->capture_default_str();
  app.add_option("--port", flags.port, "port to listen on; 0 picks a free one")
      ->capture_default_str();
  app.add_option("--port-file", flags.port_file,
                 "write the bound port to this file once listening");
  app.add_option("--config", flags.config_path, "YAML file with model and fault parameters");
  app.add_option("--time-scale", flags.time_scale, "multiplies every modelled duration")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", flags.seed, "seed for jitter, EOS and fault fractions")
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "I/O threads, each with its own io_context")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--prefill-url", flags.prefill_urls,
                 "router: prefill instance, http://127.0.0.1:PORT (repeatable)");
  app.add_option("--decode-url", flags.decode_urls,
                 "router: decode instance, http://127.0.0.1:PORT (repeatable)");
  app.add_option("--compat", flags.compat_name,
                 "engine whose behaviour to reproduce: sim, vllm, vllm-ascend, sglang")
      ->capture_default_str();
  app.add_flag("--enable-prompt-tokens-details", flags.compat.enable_prompt_tokens_details,
               "vllm: report usage.prompt_tokens_details.cached_tokens");
  app.add_flag("--enable-cache-report", flags.compat.enable_cache_report,
               "sglang: report usage.prompt_tokens_details.cached_tokens");
  app.add_flag("--enable-metrics", flags.compat.enable_metrics, "sglang: serve /metrics");
  app.add_option("--model", flags.model, "served model name (overrides the config file)");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
}

// What the flags name, checked: everything main needs to build the instance.
struct SimSetup {
  Role role = Role::kUnified;
  CompatOptions compat;
  SimConfig config;
  std::unique_ptr<Router> router;  // null unless the role is router
};

absl::StatusOr<SimSetup> ResolveFlags(const SimFlags& flags) {
  SimSetup setup;
  absl::StatusOr<Role> role = ParseRole(flags.role_name);
  if (!role.ok()) return role.status();
  setup.role = *role;
  absl::StatusOr<Compat> parsed_compat = ParseCompat(flags.compat_name);
  if (!parsed_compat.ok()) return parsed_compat.status();
  setup.compat = flags.compat;
  setup.compat.compat = *parsed_compat;
  setup.compat.dev_mode = DevModeFromEnvironment();
  if (!flags.config_path.empty()) {
    absl::StatusOr<SimConfig> loaded = LoadSimConfig(flags.config_path);
    if (!loaded.ok()) return loaded.status();
    setup.config = *std::move(loaded);
  }
  if (!flags.model.empty()) setup.config.model = flags.model;
  if (setup.role == Role::kRouter) {
    if (flags.prefill_urls.empty() || flags.decode_urls.empty()) {
      return absl::InvalidArgumentError("--role router needs --prefill-url and --decode-url");
    }
    absl::StatusOr<std::unique_ptr<Router>> router =
        Router::Create(flags.prefill_urls, flags.decode_urls, setup.compat.compat);
    if (!router.ok()) return router.status();
    setup.router = *std::move(router);
  }
  return setup;
}

// Blocks the shutdown signals before any thread starts so only sigwait sees
// them; returns them for sigwait.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

}  // namespace
}  // namespace servelab::sim

int main(int argc, char** argv) {
  using namespace servelab::sim;
  // Debian's Abseil is built without NDEBUG, so every Mutex lock also keeps
  // a lock graph for deadlock detection, and the sim takes the instance's
  // lock twice per streamed token (docs/design.md §10, "The sim's locks").
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"servelab-sim: a simulated vLLM-compatible prefill/decode/router instance"};
  SimFlags flags;
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);

  spdlog::logger& log = SimLog();
  log.set_level(spdlog::level::from_str(flags.log_level));
  absl::StatusOr<SimSetup> setup = ResolveFlags(flags);
  if (!setup.ok()) {
    log.error("{}", std::string(setup.status().message()));
    return 2;
  }
  const Role role = setup->role;
  const SimConfig& config = setup->config;
  InstanceModel instance(config, role, flags.seed, flags.time_scale, setup->compat);
  if (role != Role::kRouter) {
    instance.EnterLoading(config.load_time_seconds + config.faults.slow_start_seconds);
  }

  sigset_t signals = BlockShutdownSignals();
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(
      ServerOptions{flags.host, flags.port, flags.threads}, instance, setup->router.get());
  if (!server.ok()) {
    log.error("{}", std::string(server.status().message()));
    return 1;
  }
  (*server)->Start();
  if (config.faults.refuse_connections_seconds > 0) {
    (*server)->RefuseConnections(instance.Scaled(config.faults.refuse_connections_seconds));
  }
  if (!flags.port_file.empty() && !WritePortFile(flags.port_file, (*server)->port())) {
    log.error("cannot write --port-file {}", flags.port_file);
    return 1;
  }
  log.info("servelab-sim role={} compat={} model={} listening on {}:{} time_scale={} seed={}",
           RoleName(role), CompatName(setup->compat.compat), config.model, flags.host,
           (*server)->port(), flags.time_scale, flags.seed);

  int received = 0;
  sigwait(&signals, &received);
  log.info("signal {}: shutting down", received);
  (*server)->Shutdown();
  return 0;
}
