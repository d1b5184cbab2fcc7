#include "daemon/service/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_posix.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/atomic_file.h"
#include "common/pem_file.h"
#include "common/status_macros.h"
#include "daemon/engines/engine_set.h"
#include "daemon/load/loadgen_driver.h"
#include "daemon/service/logging.h"
#include "daemon/service/metrics.h"
#include "daemon/service/peer_checked_listener.h"
#include "daemon/service/serve_lab_service.h"
#include "daemon/service/state_dir_lock.h"
#include "storage/sqlite_store.h"

namespace servelab::service {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxRequestBytes = 64 << 20;

absl::Status MakeStateDir(const std::string& dir) {
  std::error_code error;
  if (fs::exists(dir, error)) {
    if (!fs::is_directory(dir, error)) {
      return absl::FailedPreconditionError(absl::StrCat("state dir ", dir, " is not a directory"));
    }
    return absl::OkStatus();
  }
  fs::create_directories(dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create state dir ", dir, ": ", error.message()));
  }
  // Only the owner may reach the socket and the database.
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, error);
  return absl::OkStatus();
}

// Written to a temporary name and renamed, so a reader never sees half a line.
// The lock makes this ours; a socket file left by a crashed daemon would
// make bind fail.
absl::Status RemoveStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a socket; refusing to replace it"));
  }
  if (unlink(path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot remove stale socket ", path, ": ", strerror(errno)));
  }
  Logger("daemon")->info("removed stale socket {}", path);
  return absl::OkStatus();
}

// The PEM behind a TLS flag; errors name the flag.
absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadPemFile(path);
  if (!pem.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, " ", pem.status().message()));
  return pem;
}

// Whether /metrics is served over HTTPS: exactly when its host is not
// loopback, so a local Prometheus scrapes plain HTTP as usual and nothing
// goes to the network in plain text.
bool MetricsNeedTls(const std::optional<ListenAddress>& metrics) {
  return metrics.has_value() && !IsLoopbackHost(metrics->host);
}

// The load driver. A real-time priority that is out of range or not
// permitted is refused when the daemon starts, not at its first load.
absl::StatusOr<std::unique_ptr<load::LoadgenDriver>> MakeLoadDriver(int realtime_priority) {
  absl::StatusOr<std::unique_ptr<load::LoadgenDriver>> driver =
      load::LoadgenDriver::Create(realtime_priority);
  if (!driver.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--load-realtime-priority: ", driver.status().message()));
  }
  return driver;
}

// TLS on a TCP --listen or a non-loopback /metrics, both files or neither,
// and never plain text off the host (docs/design.md §13).
absl::Status CheckTransportSecurity(const DaemonOptions& options, const ListenAddress& listen,
                                    const std::optional<ListenAddress>& metrics) {
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  if (tls && (options.tls_cert.empty() || options.tls_key.empty())) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (tls && listen.kind != ListenAddress::Kind::kTcp && !MetricsNeedTls(metrics)) {
    return absl::InvalidArgumentError(
        "--tls-cert applies to a tcp: --listen or a non-loopback --metrics-listen; the unix "
        "socket is owner-only instead");
  }
  if (!tls && listen.kind == ListenAddress::Kind::kTcp && !IsLoopbackHost(listen.host)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "--listen ", listen.ToString(),
        " is not loopback: it needs --tls-cert and --tls-key (plain text is never served "
        "to the network)"));
  }
  if (!tls && MetricsNeedTls(metrics)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "--metrics-listen ", metrics->host_port(),
        " is not loopback: it needs --tls-cert and --tls-key (/metrics is then served over "
        "HTTPS; plain text is never served to the network)"));
  }
  return absl::OkStatus();
}

void InitGrpcOnce() {
  static bool done = [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    return true;
  }();
  (void)done;
}

}  // namespace

Daemon::Daemon(DaemonOptions options, std::string state_dir, ListenAddress listen,
               std::optional<ListenAddress> metrics_listen)
    : options_(std::move(options)),
      state_dir_(std::move(state_dir)),
      listen_(std::move(listen)),
      metrics_listen_(std::move(metrics_listen)) {}

Daemon::~Daemon() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(const DaemonOptions& options) {
  if (options.state_dir.empty()) return absl::InvalidArgumentError("--state-dir is required");
  std::error_code error;
  std::string state_dir = fs::absolute(options.state_dir, error).lexically_normal().string();
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad state dir ", options.state_dir, ": ", error.message()));
  }
  if (state_dir.size() > 1 && state_dir.back() == '/') state_dir.pop_back();
  std::string listen_text =
      options.listen.empty() ? absl::StrCat("unix:", state_dir, "/servelab.sock") : options.listen;
  SERVELAB_ASSIGN_OR_RETURN(ListenAddress listen,
                            ParseListenAddress(listen_text, options.allow_remote));
  std::optional<ListenAddress> metrics;
  if (!options.metrics_listen.empty()) {
    SERVELAB_ASSIGN_OR_RETURN(metrics, ParseHostPort(options.metrics_listen, options.allow_remote));
  }
  if (listen.kind == ListenAddress::Kind::kUnix) {
    listen.path = fs::absolute(listen.path).lexically_normal().string();
  }
  SERVELAB_RETURN_IF_ERROR(CheckTransportSecurity(options, listen, metrics));
  std::string tls_cert_pem, tls_key_pem;
  if (!options.tls_cert.empty()) {
    SERVELAB_ASSIGN_OR_RETURN(tls_cert_pem, ReadPem("--tls-cert", options.tls_cert));
    SERVELAB_ASSIGN_OR_RETURN(tls_key_pem, ReadPem("--tls-key", options.tls_key));
  }

  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<load::LoadgenDriver> load_driver,
                            MakeLoadDriver(options.load_realtime_priority));
  SERVELAB_RETURN_IF_ERROR(MakeStateDir(state_dir));
  auto daemon = std::unique_ptr<Daemon>(
      new Daemon(options, state_dir, std::move(listen), std::move(metrics)));
  daemon->tls_cert_pem_ = std::move(tls_cert_pem);
  daemon->tls_key_pem_ = std::move(tls_key_pem);
  SERVELAB_ASSIGN_OR_RETURN(daemon->lock_,
                            StateDirLock::Acquire(absl::StrCat(state_dir, "/servelabd.lock")));
  std::string db_path = absl::StrCat(state_dir, "/servelab.db");
  SERVELAB_ASSIGN_OR_RETURN(daemon->store_, storage::SqliteStore::Open(db_path));
  daemon->control_plane_ = std::make_unique<core::ControlPlane>(*daemon->store_, daemon->clock_);
  daemon->metrics_ = std::make_unique<Metrics>(*daemon->control_plane_);
  engines::EngineOptions engine_options;
  if (!options.sim_binary.empty()) engine_options.sim.binary = options.sim_binary;
  engine_options.sim.time_scale = options.sim_time_scale;
  if (!options.vllm_binary.empty()) engine_options.vllm.vllm_binary = options.vllm_binary;
  if (!options.python_binary.empty()) {
    engine_options.vllm.python_binary = options.python_binary;
    engine_options.sglang.python_binary = options.python_binary;
  }
  engine_options.vllm.proxy_script = options.proxy_script;
  engine_options.vllm.ascend_proxy_script = options.ascend_proxy_script;
  placement::PlacementSetOptions placement_options;
  placement_options.owner = state_dir;
  const char* inherited_conf = std::getenv("SLURM_CONF");
  std::string slurm_conf = !options.slurm_conf.empty() ? options.slurm_conf
                           : inherited_conf != nullptr ? inherited_conf
                                                       : "";
  if (!slurm_conf.empty()) placement_options.slurm_env["SLURM_CONF"] = slurm_conf;
  daemon->placements_ = std::make_unique<placement::PlacementSet>(placement_options);
  engine_options.placements = daemon->placements_.get();
  daemon->instances_ = std::make_unique<engines::EngineSet>(engine_options);
  daemon->load_driver_ = std::move(load_driver);
  const std::string log_dir = absl::StrCat(state_dir, "/logs");
  SERVELAB_RETURN_IF_ERROR(MakeStateDir(log_dir));
  daemon->runner_ = std::make_unique<core::StageRunner>(
      daemon->control_plane_->ledger(), *daemon->instances_, *daemon->load_driver_,
      *daemon->metrics_,
      core::StageRunner::Options{
          .log_dir = log_dir,
          .on_latched_error = [d = daemon.get()](const absl::Status& e) { d->OnLatchedError(e); }});
  daemon->control_plane_->SetExecutor(daemon->runner_.get());
  daemon->control_plane_->SetPaused(options.paused);
  daemon->service_ = std::make_unique<ServeLabService>(*daemon->control_plane_, *daemon->metrics_);
  Logger("daemon")->info("state dir {} (store {}), lock held by pid {}", state_dir, db_path,
                         getpid());
  return daemon;
}

absl::Status Daemon::Start() {
  if (metrics_listen_.has_value()) {
    ListenAddress metrics_address = *metrics_listen_;
    const bool https = MetricsNeedTls(metrics_address);
    SERVELAB_RETURN_IF_ERROR(https ? metrics_->ListenTls(metrics_address.host, metrics_address.port,
                                                         tls_cert_pem_, tls_key_pem_)
                                   : metrics_->Listen(metrics_address.host_port()));
    metrics_address.port = metrics_->port();
    SERVELAB_RETURN_IF_ERROR(WriteFileAtomically(
        absl::StrCat(state_dir_, "/servelabd.metrics.addr"), metrics_address.host_port() + "\n"));
    Logger("daemon")->info("serving /metrics on {}://{}/metrics", https ? "https" : "http",
                           metrics_address.host_port());
  }

  InitGrpcOnce();
  if (listen_.kind == ListenAddress::Kind::kUnix) {
    SERVELAB_RETURN_IF_ERROR(RemoveStaleSocket(listen_.path));
  }
  grpc::ServerBuilder builder;
  int selected_port = 0;
  // A unix socket is accepted by PeerCheckedListener, which hands gRPC only
  // the connections of the daemon's own user; TCP is gRPC's own port.
  const bool unix_socket = listen_.kind == ListenAddress::Kind::kUnix;
  if (!unix_socket) {
    builder.AddListeningPort(listen_.grpc_uri(), ServerCredentials(), &selected_port);
  }
  builder.RegisterService(service_.get());
  // An import carries a whole benchmark run's records (2,000 requests of
  // 1,000 streamed chunks are ~16 MiB); gRPC's default limit is 4 MiB.
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would
  // then share it silently, and clients would reach either one.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || (!unix_socket && selected_port == 0)) {
    server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen_.ToString(),
                     " (address in use, or not bindable; see the log above)"));
  }
  ListenAddress bound = listen_;
  if (unix_socket) {
    // The daemon's user, and root, who can reach the daemon's memory anyway
    // (the systemd unit's health check runs as root).
    SERVELAB_ASSIGN_OR_RETURN(
        unix_listener_,
        PeerCheckedListener::Create(listen_.path, {geteuid(), 0}, [server = server_.get()](int fd) {
          grpc::AddInsecureChannelFromFd(server, fd);
        }));
  } else {
    bound.port = selected_port;
  }
  bound_address_ = bound.ToString();

  {
    absl::MutexLock lock(&health_mu_);
    health_ = server_->GetHealthCheckService();
    health_->SetServingStatus(false);
  }
  // Re-adopt live instances and re-classify what a previous daemon left
  // running before anyone is told we serve.
  SERVELAB_RETURN_IF_ERROR(runner_->Recover());
  if (!options_.paused) runner_->Start();
  {
    // Under the lock: a latch from now on finds health_ set, one before it
    // is seen here.
    absl::MutexLock lock(&health_mu_);
    health_->SetServingStatus(runner_->LatchedError().ok());
  }
  service_->SetServing(true);

  SERVELAB_RETURN_IF_ERROR(
      WriteFileAtomically(absl::StrCat(state_dir_, "/servelabd.addr"), bound_address_ + "\n"));
  Logger("daemon")->info("serving gRPC on {}", bound_address_);
  return absl::OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> Daemon::ServerCredentials() const {
  if (tls_cert_pem_.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({tls_key_pem_, tls_cert_pem_});
  return grpc::SslServerCredentials(ssl);
}

void Daemon::Shutdown(absl::Duration grace) {
  if (server_ != nullptr) {
    Logger("daemon")->info("shutting down (grace {})", absl::FormatDuration(grace));
    {
      absl::MutexLock lock(&health_mu_);
      if (health_ != nullptr) health_->SetServingStatus(false);
      health_ = nullptr;
    }
    service_->SetServing(false);
    service_->EndWatches();
    unix_listener_.reset();  // no new connection reaches a stopping server
    server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
    server_->Wait();
    server_.reset();
    unlink(absl::StrCat(state_dir_, "/servelabd.addr").c_str());
    if (listen_.kind == ListenAddress::Kind::kUnix) unlink(listen_.path.c_str());
  }
  // The stage runner stops (serving instances keep running: the hot
  // deployment survives a restart), then the metrics that read the control
  // plane, then the control plane, then storage.
  if (runner_ != nullptr) {
    runner_->Shutdown();
    runner_.reset();
  }
  metrics_.reset();
  if (lock_ != nullptr) unlink(absl::StrCat(state_dir_, "/servelabd.metrics.addr").c_str());
  service_.reset();
  control_plane_.reset();
  if (store_ != nullptr) {
    store_.reset();
    Logger("daemon")->info("storage closed");
  }
  lock_.reset();
}

void Daemon::OnLatchedError(const absl::Status& error) {
  Logger("daemon")->error("{}: health NOT_SERVING, no new work accepted until restarted",
                          error.ToString());
  absl::MutexLock lock(&health_mu_);
  if (health_ != nullptr) health_->SetServingStatus(false);
}

int Daemon::metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }

std::shared_ptr<grpc::Channel> Daemon::InProcessChannel() {
  return server_->InProcessChannel(grpc::ChannelArguments());
}

}  // namespace servelab::service
