// servelabd: flags, logging, Create, Start, wait for SIGTERM/SIGINT, Shutdown.
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/crash_points.h"
#include "daemon/service/daemon.h"
#include "daemon/service/logging.h"
#include "spdlog/spdlog.h"

namespace {

constexpr absl::Duration kShutdownGrace = absl::Seconds(5);

}  // namespace

int main(int argc, char** argv) {
  // Blocked before any thread exists, so that every thread inherits the mask
  // and only sigwait below sees these signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  servelab::service::DaemonOptions options;
  std::string log_level = "info";
  CLI::App app{
      "servelabd: the servelab daemon. Owns one state directory (SQLite store, lock, socket)\n"
      "and serves the ServeLab gRPC API; `servelab` is its CLI. SIGTERM/SIGINT: graceful stop."};
  app.add_option("--state-dir", options.state_dir,
                 "State directory (created 0700 if missing); one daemon per directory; required");
  app.add_option("--listen", options.listen,
                 "gRPC address: unix:PATH or tcp:HOST:PORT (port 0 picks one; the bound address "
                 "is written to STATE_DIR/servelabd.addr). Default: unix:STATE_DIR/servelab.sock");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "Serve Prometheus /metrics on HOST:PORT (default: off)");
  app.add_flag("--allow-remote", options.allow_remote,
               "Allow non-loopback TCP hosts in --listen and --metrics-listen");
  app.add_option("--sim-binary", options.sim_binary,
                 "servelab-sim binary for engine: sim (default: the one beside servelabd)");
  app.add_option("--sim-time-scale", options.sim_time_scale,
                 "Multiplies every duration the simulated engine models (e.g. 0.01: 100x faster)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--vllm-binary", options.vllm_binary,
                 "vllm executable for engines vllm and vllm_ascend (default /usr/local/bin/vllm; "
                 "a spec's deployment.programs.vllm_binary wins)");
  app.add_option("--python-binary", options.python_binary,
                 "python3 for SGLang, sglang_router and the vLLM proxy scripts (default "
                 "/usr/bin/python3; deployment.programs.python_binary wins)");
  app.add_option("--proxy-script", options.proxy_script,
                 "vLLM's tests/v1/kv_connector/nixl_integration/toy_proxy_server.py, the P/D "
                 "proxy of engine vllm (deployment.programs.proxy_script wins)");
  app.add_option("--ascend-proxy-script", options.ascend_proxy_script,
                 "vllm-ascend's examples/disaggregated_prefill_v1/"
                 "load_balance_proxy_server_example.py, the proxy of engine vllm_ascend");
  app.add_option("--slurm-conf", options.slurm_conf,
                 "slurm.conf for specs with deployment.placement.kind: slurm (default: "
                 "$SLURM_CONF, else Slurm's own default)");
  app.add_flag("--paused", options.paused,
               "Accept and plan experiments but run none (the accelerator lane stays idle)");
  bool list_crash_points = false;
  app.add_flag("--list-crash-points", list_crash_points,
               "Print the test-only crash points (SERVELAB_CRASH_AT=NAME[@N]) and exit");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  CLI11_PARSE(app, argc, argv);
  if (list_crash_points) {
    for (const std::string& point : servelab::AllCrashPoints()) std::printf("%s\n", point.c_str());
    return 0;
  }
  if (options.state_dir.empty()) {
    std::fprintf(stderr, "--state-dir is required\nRun with --help for more information.\n");
    return 106;  // CLI11's exit code for a missing required option.
  }
  if (absl::Status armed = servelab::ArmCrashPointFromEnvironment(); !armed.ok()) {
    std::fprintf(stderr, "servelabd: %s\n", std::string(armed.message()).c_str());
    return 2;
  }

  spdlog::set_level(spdlog::level::from_str(log_level));
  auto log = servelab::service::Logger("daemon");

  auto daemon = servelab::service::Daemon::Create(options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "servelabd: %s\n", std::string(daemon.status().message()).c_str());
    return 1;
  }
  if (absl::Status started = (*daemon)->Start(); !started.ok()) {
    std::fprintf(stderr, "servelabd: %s\n", std::string(started.message()).c_str());
    (*daemon)->Shutdown(absl::ZeroDuration());
    return 1;
  }

  int signo = 0;
  sigwait(&signals, &signo);
  log->info("received {}", signo == SIGTERM ? "SIGTERM" : "SIGINT");
  (*daemon)->Shutdown(kShutdownGrace);
  log->info("stopped");
  return 0;
}
