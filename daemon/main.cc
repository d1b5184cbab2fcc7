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

struct Flags {
  servelab::service::DaemonOptions daemon;
  std::string log_level = "info";
  bool list_crash_points = false;
};

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--state-dir", flags.daemon.state_dir,
                 "State directory (created 0700 if missing); one daemon per directory; required");
  app.add_option("--listen", flags.daemon.listen,
                 "gRPC address: unix:PATH or tcp:HOST:PORT (port 0 picks one; the bound address "
                 "is written to STATE_DIR/servelabd.addr). Default: unix:STATE_DIR/servelab.sock");
  app.add_option("--metrics-listen", flags.daemon.metrics_listen,
                 "Serve Prometheus /metrics on HOST:PORT (default: off); plain HTTP on "
                 "loopback, HTTPS with --tls-cert/--tls-key on any other host");
  app.add_flag("--allow-remote", flags.daemon.allow_remote,
               "Allow non-loopback TCP hosts in --listen and --metrics-listen");
  app.add_option("--tls-cert", flags.daemon.tls_cert,
                 "PEM certificate (chain): serve gRPC over TLS on a tcp: --listen and /metrics "
                 "over HTTPS on a non-loopback --metrics-listen; required, with --tls-key, for a "
                 "non-loopback host");
  app.add_option("--tls-key", flags.daemon.tls_key, "PEM private key of --tls-cert");
  app.add_option("--sim-binary", flags.daemon.sim_binary,
                 "servelab-sim binary for engine: sim (default: the one beside servelabd)");
  app.add_option("--sim-time-scale", flags.daemon.sim_time_scale,
                 "Multiplies every duration the simulated engine models (e.g. 0.01: 100x faster)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--vllm-binary", flags.daemon.vllm_binary,
                 "vllm executable for engines vllm and vllm_ascend (default /usr/local/bin/vllm; "
                 "a spec's deployment.programs.vllm_binary wins)");
  app.add_option("--python-binary", flags.daemon.python_binary,
                 "python3 for SGLang, sglang_router and the vLLM proxy scripts (default "
                 "/usr/bin/python3; deployment.programs.python_binary wins)");
  app.add_option("--proxy-script", flags.daemon.proxy_script,
                 "vLLM's tests/v1/kv_connector/nixl_integration/toy_proxy_server.py, the P/D "
                 "proxy of engine vllm (deployment.programs.proxy_script wins)");
  app.add_option("--ascend-proxy-script", flags.daemon.ascend_proxy_script,
                 "vllm-ascend's examples/disaggregated_prefill_v1/"
                 "load_balance_proxy_server_example.py, the proxy of engine vllm_ascend");
  app.add_option("--slurm-conf", flags.daemon.slurm_conf,
                 "slurm.conf for specs with deployment.placement.kind: slurm (default: "
                 "$SLURM_CONF, else Slurm's own default)");
  app.add_flag("--paused", flags.daemon.paused,
               "Accept and plan experiments but run none (the accelerator lane stays idle)");
  app.add_option("--load-realtime-priority", flags.daemon.load_realtime_priority,
                 "Run every load's sending thread SCHED_FIFO at this priority (1-99), so that no "
                 "other thread on its core delays an arrival; needs root, CAP_SYS_NICE or "
                 "LimitRTPRIO=. 0: ordinary scheduling")
      ->capture_default_str();
  app.add_flag("--list-crash-points", flags.list_crash_points,
               "Print the test-only crash points (SERVELAB_CRASH_AT=NAME[@N]) and exit");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
}

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

  Flags flags;
  CLI::App app{
      "servelabd: the servelab daemon. Owns one state directory (SQLite store, lock, socket)\n"
      "and serves the ServeLab gRPC API; `servelab` is its CLI. SIGTERM/SIGINT: graceful stop."};
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  const servelab::service::DaemonOptions& options = flags.daemon;
  if (flags.list_crash_points) {
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

  spdlog::set_level(spdlog::level::from_str(flags.log_level));
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
