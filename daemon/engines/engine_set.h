// EngineSet: one core::InstanceDriver over every engine kind. Render dispatches on
// the spec's deployment.engine and stamps the kind into the command; Launch
// records it in the instance, and every later call on that instance goes to
// the engine that launched it — also after a daemon restart, since the kind
// is persisted with the instance. Engines are made on first use.
// Thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_ENGINE_SET_H_
#define SERVELAB_DAEMON_ENGINES_ENGINE_SET_H_

#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/instance_driver.h"
#include "daemon/engines/engine_factory.h"

namespace servelab::engines {

class EngineSet : public core::InstanceDriver {
 public:
  explicit EngineSet(EngineOptions options) : options_(std::move(options)) {}

  absl::StatusOr<core::LaunchCommand> Render(const v1::ExperimentSpec& spec, v1::Side side,
                                             const core::Endpoints& endpoints,
                                             const std::string& log_dir) override;
  absl::StatusOr<v1::ServingInstance> Launch(const core::LaunchCommand& command) override;
  absl::Status WaitReady(const v1::ServingInstance& instance, absl::Time deadline) override;
  absl::StatusOr<bool> Alive(const v1::ServingInstance& instance) override;
  absl::Status Stop(const v1::ServingInstance& instance, absl::Duration grace) override;
  absl::StatusOr<core::InstanceCounters> Scrape(const v1::ServingInstance& instance) override;
  absl::Status ResetPrefixCache(const v1::ServingInstance& instance) override;
  bool ResetNeedsConfirmation(const v1::ServingInstance& instance) override;
  absl::Status SendCacheCheckRequest(const v1::ServingInstance& instance,
                                     const std::string& prompt) override;
  std::string BaseUrl(const v1::ServingInstance& instance) override;
  absl::StatusOr<std::vector<std::string>> ReleaseUnusedPlacements(
      const std::vector<v1::ServingInstance>& kept) override;
  std::vector<int> StopUnrecorded(const std::vector<v1::ServingInstance>& recorded,
                                  absl::Duration grace) override;

 private:
  // Instances from before the kind was recorded count as sim.
  absl::StatusOr<core::InstanceDriver*> For(v1::Engine kind);

  const EngineOptions options_;
  absl::Mutex mu_;
  std::map<v1::Engine, std::unique_ptr<core::InstanceDriver>> engines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_ENGINE_SET_H_
