// ServeLabService: the gRPC face of the daemon, a thin adapter over
// core::ControlPlane. Each unary handler checks the request's shape, makes one
// control-plane call, fills the reply and finishes, mapping the Status in
// status_mapping (and nowhere else). WatchExperiment is one reactor class fed
// by ControlPlane::Subscribe: it sends the current experiment, then every
// committed change, and ends with OK after the experiment reaches a final
// state, or when the client cancels, or with UNAVAILABLE on daemon shutdown.
//
//   ServeLabService service(control_plane, metrics);
//   builder.RegisterService(&service);
//   ...
//   service.EndWatches();          // before server->Shutdown(deadline)
//
// Handlers never wait on anything but the control plane's own (short) store
// calls. Thread-safe; `control_plane` and `metrics` must outlive it, and it
// must outlive the grpc::Server it is registered with.
#ifndef SERVELAB_DAEMON_SERVICE_SERVE_LAB_SERVICE_H_
#define SERVELAB_DAEMON_SERVICE_SERVE_LAB_SERVICE_H_

#include <atomic>
#include <set>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/control_plane.h"
#include "daemon/service/metrics.h"
#include "servelab/v1/service.grpc.pb.h"

namespace servelab::service {

class ServeLabService final : public v1::ServeLab::CallbackService {
 public:
  ServeLabService(core::ControlPlane& control_plane, Metrics& metrics);
  ~ServeLabService() override;

  // Reported as Summary.serving (with the control plane's own verdict):
  // recovery is done and work is accepted.
  void SetServing(bool serving) { serving_ = serving; }

  // Ends every open watch with UNAVAILABLE and refuses new ones, so that a
  // server shutdown does not wait for streams that would never end.
  void EndWatches();

  grpc::ServerUnaryReactor* SubmitExperiment(grpc::CallbackServerContext* context,
                                             const v1::SubmitExperimentRequest* request,
                                             v1::SubmitExperimentResponse* reply) override;
  grpc::ServerUnaryReactor* GetExperiment(grpc::CallbackServerContext* context,
                                          const v1::GetExperimentRequest* request,
                                          v1::Experiment* reply) override;
  grpc::ServerUnaryReactor* ListExperiments(grpc::CallbackServerContext* context,
                                            const v1::ListExperimentsRequest* request,
                                            v1::ListExperimentsResponse* reply) override;
  grpc::ServerWriteReactor<v1::Experiment>* WatchExperiment(
      grpc::CallbackServerContext* context, const v1::WatchExperimentRequest* request) override;
  grpc::ServerUnaryReactor* ResumeExperiment(grpc::CallbackServerContext* context,
                                             const v1::ResumeExperimentRequest* request,
                                             v1::Experiment* reply) override;
  grpc::ServerUnaryReactor* CancelExperiment(grpc::CallbackServerContext* context,
                                             const v1::CancelExperimentRequest* request,
                                             v1::Experiment* reply) override;
  grpc::ServerUnaryReactor* GetSummary(grpc::CallbackServerContext* context,
                                       const v1::GetSummaryRequest* request,
                                       v1::Summary* reply) override;
  grpc::ServerWriteReactor<v1::RequestRecord>* ListRequestRecords(
      grpc::CallbackServerContext* context, const v1::ListRequestRecordsRequest* request) override;
  grpc::ServerUnaryReactor* ImportExperiment(grpc::CallbackServerContext* context,
                                             const v1::ImportExperimentRequest* request,
                                             v1::Experiment* reply) override;
  grpc::ServerUnaryReactor* ReleaseDeployment(grpc::CallbackServerContext* context,
                                              const v1::ReleaseDeploymentRequest* request,
                                              v1::ReleaseDeploymentResponse* reply) override;

 private:
  class WatchReactor;
  class RecordsReactor;

  // Records the RPC, maps `status` and finishes the call.
  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context, std::string_view method,
                                   const absl::Status& status);
  // At most this many WatchExperiment streams are open at once; past it a
  // new one is refused with RESOURCE_EXHAUSTED. Each open watch holds a few
  // experiment snapshots at most (docs/design.md §10), so this bounds the
  // memory watches can take, however slowly their clients read.
  static constexpr size_t kMaxWatches = 1000;
  // UNAVAILABLE when shutting down, RESOURCE_EXHAUSTED past kMaxWatches.
  absl::Status AddWatch(WatchReactor* watch);
  void RemoveWatch(WatchReactor* watch);

  core::ControlPlane& control_plane_;
  Metrics& metrics_;
  std::atomic<bool> serving_{false};

  absl::Mutex mu_;
  bool ending_watches_ ABSL_GUARDED_BY(mu_) = false;
  std::set<WatchReactor*> watches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_SERVE_LAB_SERVICE_H_
