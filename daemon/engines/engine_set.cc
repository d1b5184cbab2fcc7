#include "daemon/engines/engine_set.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/engines/process_engine.h"

namespace servelab::engines {

absl::StatusOr<core::InstanceDriver*> EngineSet::For(v1::Engine kind) {
  if (kind == v1::ENGINE_UNSPECIFIED) kind = v1::ENGINE_SIM;
  absl::MutexLock lock(&mu_);
  std::unique_ptr<core::InstanceDriver>& engine = engines_[kind];
  if (engine == nullptr) {
    absl::StatusOr<std::unique_ptr<core::InstanceDriver>> made = MakeEngine(kind, options_);
    if (!made.ok()) {
      engines_.erase(kind);
      return made.status();
    }
    engine = *std::move(made);
  }
  return engine.get();
}

absl::StatusOr<core::LaunchCommand> EngineSet::Render(const v1::ExperimentSpec& spec, v1::Side side,
                                                      const core::Endpoints& endpoints,
                                                      const std::string& log_dir) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(spec.deployment().engine()));
  SERVELAB_ASSIGN_OR_RETURN(core::LaunchCommand command,
                            engine->Render(spec, side, endpoints, log_dir));
  command.engine = spec.deployment().engine();
  const auto& pass_env = side == v1::SIDE_ROUTER    ? spec.deployment().router().pass_env()
                         : side == v1::SIDE_PREFILL ? spec.deployment().prefill().pass_env()
                                                    : spec.deployment().decode().pass_env();
  command.pass_env.assign(pass_env.begin(), pass_env.end());
  return command;
}

absl::StatusOr<v1::ServingInstance> EngineSet::Launch(const core::LaunchCommand& command) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(command.engine));
  SERVELAB_ASSIGN_OR_RETURN(v1::ServingInstance instance, engine->Launch(command));
  instance.set_engine(command.engine);
  return instance;
}

absl::Status EngineSet::WaitReady(const v1::ServingInstance& instance, absl::Time deadline) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(instance.engine()));
  return engine->WaitReady(instance, deadline);
}

absl::StatusOr<bool> EngineSet::Alive(const v1::ServingInstance& instance) {
  absl::StatusOr<core::InstanceDriver*> engine = For(instance.engine());
  if (!engine.ok()) return false;  // No engine can reach it any more.
  return (*engine)->Alive(instance);
}

absl::Status EngineSet::Stop(const v1::ServingInstance& instance, absl::Duration grace) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(instance.engine()));
  return engine->Stop(instance, grace);
}

absl::StatusOr<core::InstanceCounters> EngineSet::Scrape(const v1::ServingInstance& instance) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(instance.engine()));
  return engine->Scrape(instance);
}

absl::Status EngineSet::ResetPrefixCache(const v1::ServingInstance& instance) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(instance.engine()));
  return engine->ResetPrefixCache(instance);
}

bool EngineSet::ResetNeedsConfirmation(const v1::ServingInstance& instance) {
  absl::StatusOr<core::InstanceDriver*> engine = For(instance.engine());
  return !engine.ok() || (*engine)->ResetNeedsConfirmation(instance);
}

absl::Status EngineSet::SendCacheCheckRequest(const v1::ServingInstance& instance,
                                              const std::string& prompt) {
  SERVELAB_ASSIGN_OR_RETURN(core::InstanceDriver * engine, For(instance.engine()));
  return engine->SendCacheCheckRequest(instance, prompt);
}

absl::StatusOr<std::vector<std::string>> EngineSet::ReleaseUnusedPlacements(
    const std::vector<v1::ServingInstance>& kept) {
  if (options_.placements == nullptr) return std::vector<std::string>();
  return ReleaseUnusedAllocations(*options_.placements, kept);
}

std::vector<int> EngineSet::StopUnrecorded(const std::vector<v1::ServingInstance>& recorded,
                                           absl::Duration grace) {
  if (options_.placements == nullptr) return {};
  return StopUnrecordedInstances(*options_.placements, recorded, grace);
}

std::string EngineSet::BaseUrl(const v1::ServingInstance& instance) {
  absl::StatusOr<core::InstanceDriver*> engine = For(instance.engine());
  return engine.ok() ? (*engine)->BaseUrl(instance)
                     : absl::StrCat("http://127.0.0.1:", instance.port());
}

}  // namespace servelab::engines
