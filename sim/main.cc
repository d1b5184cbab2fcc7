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

#include "sim/compat.h"
#include "sim/config.h"
#include "sim/engine.h"
#include "sim/log.h"
#include "sim/router.h"
#include "sim/server.h"

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

}  // namespace

int main(int argc, char** argv) {
  using namespace servelab::sim;
  CLI::App app{"servelab-sim: a simulated vLLM-compatible prefill/decode/router instance"};
  std::string role_name = "unified", host = "127.0.0.1", port_file, config_path, model,
              log_level = "info", compat_name = "sim";
  std::vector<std::string> prefill_urls, decode_urls;
  CompatOptions compat;
  int port = 8000, threads = 2;
  double time_scale = 1.0;
  uint64_t seed = 0;
  app.add_option("--role", role_name, "prefill, decode, router or unified")->capture_default_str();
  app.add_option("--host", host, "address to bind (loopback by default)")->capture_default_str();
  app.add_option("--port", port, "port to listen on; 0 picks a free one")->capture_default_str();
  app.add_option("--port-file", port_file, "write the bound port to this file once listening");
  app.add_option("--config", config_path, "YAML file with model and fault parameters");
  app.add_option("--time-scale", time_scale, "multiplies every modelled duration")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "seed for jitter, EOS and fault fractions")->capture_default_str();
  app.add_option("--threads", threads, "I/O threads, each with its own io_context")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--prefill-url", prefill_urls,
                 "router: prefill instance, http://127.0.0.1:PORT (repeatable)");
  app.add_option("--decode-url", decode_urls,
                 "router: decode instance, http://127.0.0.1:PORT (repeatable)");
  app.add_option("--compat", compat_name,
                 "engine whose behaviour to reproduce: sim, vllm, vllm-ascend, sglang")
      ->capture_default_str();
  app.add_flag("--enable-prompt-tokens-details", compat.enable_prompt_tokens_details,
               "vllm: report usage.prompt_tokens_details.cached_tokens");
  app.add_flag("--enable-cache-report", compat.enable_cache_report,
               "sglang: report usage.prompt_tokens_details.cached_tokens");
  app.add_flag("--enable-metrics", compat.enable_metrics, "sglang: serve /metrics");
  app.add_option("--model", model, "served model name (overrides the config file)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  spdlog::logger& log = SimLog();
  log.set_level(spdlog::level::from_str(log_level));

  absl::StatusOr<Role> role = ParseRole(role_name);
  if (!role.ok()) {
    log.error("{}", std::string(role.status().message()));
    return 2;
  }
  absl::StatusOr<Compat> parsed_compat = ParseCompat(compat_name);
  if (!parsed_compat.ok()) {
    log.error("{}", std::string(parsed_compat.status().message()));
    return 2;
  }
  compat.compat = *parsed_compat;
  compat.dev_mode = DevModeFromEnvironment();
  SimConfig config;
  if (!config_path.empty()) {
    absl::StatusOr<SimConfig> loaded = LoadSimConfig(config_path);
    if (!loaded.ok()) {
      log.error("{}", std::string(loaded.status().message()));
      return 2;
    }
    config = *std::move(loaded);
  }
  if (!model.empty()) config.model = model;

  std::unique_ptr<Router> router;
  if (*role == Role::kRouter) {
    if (prefill_urls.empty() || decode_urls.empty()) {
      log.error("--role router needs --prefill-url and --decode-url");
      return 2;
    }
    absl::StatusOr<std::unique_ptr<Router>> r =
        Router::Create(prefill_urls, decode_urls, compat.compat);
    if (!r.ok()) {
      log.error("{}", std::string(r.status().message()));
      return 2;
    }
    router = *std::move(r);
  }

  Engine engine(config, *role, seed, time_scale, compat);
  if (*role != Role::kRouter) {
    engine.EnterLoading(config.load_time_seconds + config.faults.slow_start_seconds);
  }

  // Block the shutdown signals before any thread starts so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Create(ServerOptions{host, port, threads}, engine, router.get());
  if (!server.ok()) {
    log.error("{}", std::string(server.status().message()));
    return 1;
  }
  (*server)->Start();
  if (config.faults.refuse_connections_seconds > 0) {
    (*server)->RefuseConnections(engine.Scaled(config.faults.refuse_connections_seconds));
  }
  if (!port_file.empty() && !WritePortFile(port_file, (*server)->port())) {
    log.error("cannot write --port-file {}", port_file);
    return 1;
  }
  log.info("servelab-sim role={} compat={} model={} listening on {}:{} time_scale={} seed={}",
           RoleName(*role), CompatName(compat.compat), config.model, host, (*server)->port(),
           time_scale, seed);

  int received = 0;
  sigwait(&signals, &received);
  log.info("signal {}: shutting down", received);
  (*server)->Shutdown();
  return 0;
}
