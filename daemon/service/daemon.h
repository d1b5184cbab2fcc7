// Daemon: servelabd as an object — owns the state directory, the storage,
// the control plane, the gRPC server and the metrics endpoint, and starts and
// stops them in order. main() only parses flags and waits for a signal, so
// tests can run a whole daemon in-process.
//
//   SERVELAB_ASSIGN_OR_RETURN(auto daemon, Daemon::Create(options));
//   SERVELAB_RETURN_IF_ERROR(daemon->Start());
//   ... wait for SIGTERM ...
//   daemon->Shutdown(absl::Seconds(5));
//
// Files in the state directory (created 0700 when missing):
//   servelabd.lock   flock held while running, holder's pid inside
//   servelab.db      SQLite store
//   servelab.sock    default gRPC socket, mode 0600
//   servelabd.addr   the address actually bound ("unix:/…", "tcp:127.0.0.1:PORT")
//   servelabd.metrics.addr   "HOST:PORT" of /metrics, when enabled
//
// Errors from Create/Start: INVALID_ARGUMENT / PERMISSION_DENIED for a bad or
// non-loopback address (a non-loopback one also needs TLS), or a missing or
// non-PEM TLS file; FAILED_PRECONDITION when another daemon owns the
// directory (naming its pid), UNAVAILABLE when an address cannot be bound,
// and whatever opening the store returns.
//
// Create, Start and Shutdown are called from one thread; the running daemon
// serves from gRPC's threads.
#ifndef SERVELAB_DAEMON_SERVICE_DAEMON_H_
#define SERVELAB_DAEMON_SERVICE_DAEMON_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/clock.h"
#include "daemon/core/control_plane.h"
#include "daemon/core/instance_driver.h"
#include "daemon/core/load_driver.h"
#include "daemon/core/stage_runner.h"
#include "daemon/core/store.h"
#include "daemon/placement/placement_set.h"
#include "daemon/service/listen_address.h"

namespace grpc {
class Channel;
class HealthCheckServiceInterface;
class Server;
class ServerCredentials;
}  // namespace grpc

namespace servelab::service {

class Metrics;
class PeerCheckedListener;
class ServeLabService;
class StateDirLock;

struct DaemonOptions {
  std::string state_dir;
  // "unix:PATH" or "tcp:HOST:PORT"; empty: unix:STATE_DIR/servelab.sock.
  std::string listen;
  // "HOST:PORT"; empty: no /metrics.
  std::string metrics_listen;
  // Allow non-loopback TCP hosts for both addresses.
  bool allow_remote = false;
  // PEM files: serve gRPC over TLS (tcp: addresses only). A non-loopback
  // --listen requires them: plain text is never served to the network.
  std::string tls_cert;
  std::string tls_key;
  // The simulated engine: its binary (empty: servelab-sim beside servelabd)
  // and the factor applied to every modelled duration.
  std::string sim_binary;
  double sim_time_scale = 1.0;
  // Real engines' programs; a spec's deployment.programs overrides each.
  // Empty keeps the engines' defaults (/usr/local/bin/vllm, /usr/bin/python3).
  std::string vllm_binary;
  std::string python_binary;
  // vLLM's toy_proxy_server.py and vllm-ascend's
  // load_balance_proxy_server_example.py (neither is installed as a program).
  std::string proxy_script;
  std::string ascend_proxy_script;
  // The slurm.conf every Slurm command of a `placement: slurm` spec uses;
  // empty: SLURM_CONF from servelabd's environment, else Slurm's default.
  std::string slurm_conf;
  // Accept, freeze, plan and store experiments, but run none: the lane stays
  // idle until a daemon is started without it.
  bool paused = false;
  // Every load's sending thread runs SCHED_FIFO at this priority (0:
  // ordinary scheduling); refused at start when not permitted.
  int load_realtime_priority = 0;
};

class Daemon {
 public:
  // Validates the options, creates the state directory, takes its lock,
  // opens the store and builds the control plane. Serves nothing yet.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(const DaemonOptions& options);
  // Shuts down (without grace) if still running.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves /metrics, then gRPC (health NOT_SERVING until recovery is done,
  // then SERVING), then writes servelabd.addr. Health turns NOT_SERVING for
  // good when the stage runner latches a ledger write error.
  absl::Status Start();
  // Stops accepting calls, ends open watches, gives running calls `grace`,
  // then closes the control plane and the store. Idempotent.
  void Shutdown(absl::Duration grace);

  // After Start: the bound address in --listen form.
  const std::string& address() const { return bound_address_; }
  // After Start: the /metrics port, 0 when disabled.
  int metrics_port() const;
  const std::string& state_dir() const { return state_dir_; }
  // A channel to the running server that bypasses the network (tests).
  std::shared_ptr<grpc::Channel> InProcessChannel();

 private:
  Daemon(DaemonOptions options, std::string state_dir, ListenAddress listen,
         std::optional<ListenAddress> metrics_listen);
  // TLS from --tls-cert/--tls-key, else plain text (loopback only).
  std::shared_ptr<grpc::ServerCredentials> ServerCredentials() const;
  // The stage runner lost a ledger write: NOT_SERVING from now on.
  void OnLatchedError(const absl::Status& error);

  // Constant after Create.
  const DaemonOptions options_;
  const std::string state_dir_;  // Absolute.
  const ListenAddress listen_;
  // --metrics-listen parsed at Create; none: no /metrics endpoint.
  const std::optional<ListenAddress> metrics_listen_;
  // PEM contents of --tls-cert / --tls-key, read at Create; empty: plain text.
  std::string tls_cert_pem_;
  std::string tls_key_pem_;
  std::string bound_address_;

  // Owned, in start order; Shutdown releases them in reverse.
  std::unique_ptr<StateDirLock> lock_;
  core::RealClock clock_;
  std::unique_ptr<core::Store> store_;
  std::unique_ptr<core::ControlPlane> control_plane_;
  std::unique_ptr<Metrics> metrics_;
  // Before instances_, which uses it: destroyed after it.
  std::unique_ptr<placement::PlacementSet> placements_;
  std::unique_ptr<core::InstanceDriver> instances_;
  std::unique_ptr<core::LoadDriver> load_driver_;
  std::unique_ptr<core::StageRunner> runner_;
  std::unique_ptr<ServeLabService> service_;
  std::unique_ptr<grpc::Server> server_;
  // The unix socket's acceptor (unix addresses only): gRPC gets only
  // connections from the daemon's own user.
  std::unique_ptr<PeerCheckedListener> unix_listener_;

  // Set while the server runs; the runner's threads report through it.
  absl::Mutex health_mu_;
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(health_mu_) = nullptr;
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_DAEMON_H_
