// The sim's HTTP/1.1 server: a few threads, each running its own io_context;
// the acceptor hands connections round-robin to them and each connection is
// one coroutine (keep-alive, requests served in order). Endpoints are listed
// in sim/README.md.
//
//   auto server = Server::Create(options, instance, router.get());  // binds
//   (*server)->Start();  ... (*server)->Shutdown();
//
// Errors: Create fails with a clear message when the address is in use or
// not bindable. Thread-safety: Create/Start/Shutdown from one thread; the
// InstanceModel and Router it borrows must outlive it.
#ifndef SERVELAB_SIM_SERVER_H_
#define SERVELAB_SIM_SERVER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/asio.h"
#include "sim/http_conn.h"
#include "sim/instance_model.h"
#include "sim/router.h"

namespace servelab::sim {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port; see Server::port()
  int threads = 2;
};

class Server {
 public:
  // `router` is null for the prefill, decode and unified roles.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options,
                                                        InstanceModel& instance, Router* router);
  ~Server();

  int port() const { return port_; }
  void Start();
  // Stops accepting, stops every io_context and joins the threads. In-flight
  // streams are cut (the process is about to exit).
  void Shutdown();
  // Closes the listening socket for `duration`, then listens again on the
  // same port (the refuse_connections fault). Existing connections stay.
  void RefuseConnections(std::chrono::nanoseconds duration);

 private:
  Server(const ServerOptions& options, InstanceModel& instance, Router* router);
  absl::Status Listen();
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(tcp::socket socket);
  asio::awaitable<bool> Dispatch(ClientConn& conn, IncomingRequest& request);
  asio::awaitable<bool> HandleGeneration(ClientConn& conn, IncomingRequest& request, ApiKind kind);
  // The vLLM proxies' (toy / vllm-ascend) route table for the router role.
  asio::awaitable<bool> DispatchVllmProxy(ClientConn& conn, IncomingRequest& request);
  asio::awaitable<bool> NotFound(ClientConn& conn, const IncomingRequest& request);
  // Dispatch's answers, once the route and method are known to be served.
  asio::awaitable<bool> MethodNotAllowed(ClientConn& conn, bool keep_alive);
  asio::awaitable<bool> ServeHealth(ClientConn& conn, bool keep_alive);
  asio::awaitable<bool> ServeModels(ClientConn& conn, bool keep_alive);
  asio::awaitable<bool> ServeResetPrefixCache(ClientConn& conn, bool keep_alive);
  asio::awaitable<bool> ServeFlushCache(ClientConn& conn, bool keep_alive);
  // Checks the method itself: GET and POST answer differently.
  asio::awaitable<bool> ServeFaults(ClientConn& conn, const IncomingRequest& request);

  // Constant after construction.
  const ServerOptions options_;
  InstanceModel& instance_;
  Router* const router_;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;

  // Acceptor state: touched only on contexts_[0]'s thread after Start.
  tcp::acceptor acceptor_;
  asio::steady_timer reopen_timer_;
  int port_ = 0;

  std::atomic<size_t> next_context_{0};
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_SERVER_H_
