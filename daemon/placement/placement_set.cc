#include "daemon/placement/placement_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "daemon/placement/process_launcher.h"

namespace servelab::placement {
namespace {

std::string KindName(v1::PlacementKind kind) {
  return kind == v1::PLACEMENT_KIND_SLURM ? kSlurmKind : kLocalKind;
}

}  // namespace

std::string AllocationKey(const v1::SlurmPlacementSpec& spec) {
  return absl::StrJoin(
      {spec.partition(), spec.account(), absl::StrCat(std::max(1, spec.nodes())), spec.gres(),
       spec.time_limit(), std::string(spec.exclusive_steps() ? "exclusive" : "overlap"),
       spec.device_gres()},
      "|");
}

SlurmOptions SlurmOptionsFor(const v1::SlurmPlacementSpec& spec,
                             const PlacementSetOptions& options) {
  SlurmOptions slurm;
  slurm.job_id = spec.job_id();
  slurm.partition = spec.partition();
  slurm.account = spec.account();
  slurm.nodes = std::max(1, spec.nodes());
  slurm.gres = spec.gres();
  slurm.time_limit = spec.time_limit();
  slurm.sharing = spec.exclusive_steps() ? StepSharing::kExclusive : StepSharing::kOverlap;
  if (!spec.device_gres().empty()) slurm.device_gres = spec.device_gres();
  slurm.allocation_timeout = options.allocation_timeout;
  slurm.step_start_timeout = options.step_start_timeout;
  slurm.env = options.slurm_env;
  return slurm;
}

v1::PlacedProcess ToProto(const PlacedProcess& placed) {
  v1::PlacedProcess out;
  out.set_kind(placed.kind == kSlurmKind ? v1::PLACEMENT_KIND_SLURM : v1::PLACEMENT_KIND_LOCAL);
  out.set_job_id(placed.job_id);
  out.set_step_id(placed.step_id);
  out.set_step_name(placed.step_name);
  out.set_node(placed.node);
  return out;
}

PlacedProcess FromProto(const v1::PlacedProcess& placed, int pid, int64_t start_ticks) {
  PlacedProcess out;
  out.kind = KindName(placed.kind());
  out.pid = pid;
  out.start_ticks = start_ticks;
  out.job_id = placed.job_id();
  out.step_id = placed.step_id();
  out.step_name = placed.step_name();
  out.node = placed.node();
  return out;
}

absl::StatusOr<Placement*> PlacementSet::ForSpec(const v1::PlacementSpec& spec) {
  if (spec.kind() != v1::PLACEMENT_KIND_SLURM) return &local_;
  const v1::SlurmPlacementSpec& slurm = spec.slurm();
  absl::MutexLock lock(&mu_);
  if (!slurm.job_id().empty()) {
    auto it = allocations_.find(slurm.job_id());
    if (it != allocations_.end() && it->second.options_from_spec) return it->second.slurm.get();
    bool own = it != allocations_.end() && !it->second.key.empty();
    return Adopt(slurm.job_id(), own, own ? it->second.key : "", &slurm);
  }
  const std::string key = AllocationKey(slurm);
  for (auto& [job, allocation] : allocations_) {
    if (allocation.key != key) continue;
    if (allocation.options_from_spec) return allocation.slurm.get();
    return Adopt(job, /*own_job=*/true, key, &slurm);
  }
  return Adopt("", /*own_job=*/true, key, &slurm);
}

absl::StatusOr<Placement*> PlacementSet::ForProcess(const v1::PlacedProcess& placed) {
  if (placed.kind() != v1::PLACEMENT_KIND_SLURM) return &local_;
  if (placed.job_id().empty()) {
    return absl::InvalidArgumentError("a stored Slurm process without a job id");
  }
  absl::MutexLock lock(&mu_);
  if (auto it = allocations_.find(placed.job_id()); it != allocations_.end()) {
    return it->second.slurm.get();
  }
  return Adopt(placed.job_id(), placed.own_job(), placed.own_job() ? placed.allocation() : "",
               nullptr);
}

std::vector<int> PlacementSet::StopUnrecorded(const std::vector<int>& recorded,
                                              absl::Duration grace) {
  std::vector<int> stopped;
  if (options_.owner.empty()) return stopped;
  for (const StartedProcess& p : FindSessionLeadersWithEnv(kOwnerVariable, options_.owner)) {
    if (std::find(recorded.begin(), recorded.end(), p.pid) != recorded.end()) continue;
    if (Stop(p.pid, p.start_ticks, grace).ok()) stopped.push_back(p.pid);
  }
  return stopped;
}

void PlacementSet::Annotate(v1::PlacedProcess& placed) {
  if (placed.kind() != v1::PLACEMENT_KIND_SLURM) return;
  absl::MutexLock lock(&mu_);
  auto it = allocations_.find(placed.job_id());
  if (it == allocations_.end() || it->second.key.empty()) return;
  placed.set_own_job(true);
  placed.set_allocation(it->second.key);
}

absl::StatusOr<std::vector<std::string>> PlacementSet::ReleaseUnused(
    const std::vector<v1::PlacedProcess>& kept) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> ended;
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    bool used = false;
    for (const v1::PlacedProcess& p : kept) used = used || p.job_id() == it->first;
    if (used || it->second.key.empty()) {
      ++it;
      continue;
    }
    SERVELAB_RETURN_IF_ERROR(it->second.slurm->Release());
    ended.push_back(it->first);
    it = allocations_.erase(it);
  }
  return ended;
}

absl::StatusOr<SlurmPlacement*> PlacementSet::Adopt(const std::string& job_id, bool own_job,
                                                    const std::string& key,
                                                    const v1::SlurmPlacementSpec* spec) {
  SlurmOptions options = SlurmOptionsFor(spec ? *spec : v1::SlurmPlacementSpec(), options_);
  options.job_id = job_id;
  options.own_job = own_job;
  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<SlurmPlacement> slurm,
                            SlurmPlacement::Create(std::move(options)));
  SlurmPlacement* raw = slurm.get();
  Allocation& slot = allocations_[raw->job_id()];
  if (slot.slurm != nullptr) retired_.push_back(std::move(slot.slurm));
  slot = Allocation{std::move(slurm), own_job ? key : "", spec != nullptr};
  return raw;
}

}  // namespace servelab::placement
