#include "daemon/placement/local_placement.h"

#include "absl/strings/str_cat.h"
#include "daemon/placement/process_launcher.h"

namespace servelab::placement {
namespace {

absl::Status CheckKind(const PlacedProcess& process) {
  if (process.kind == kLocalKind) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("a \"", process.kind, "\" process given to the local placement"));
}

}  // namespace

absl::StatusOr<PlacedProcess> LocalPlacement::Spawn(const PlacementRequest& request) {
  if (!request.node.empty() && request.node != "localhost") {
    return absl::InvalidArgumentError(
        absl::StrCat("the local placement runs on localhost only, not on node ", request.node));
  }
  absl::StatusOr<placement::StartedProcess> started =
      placement::StartProcess(request.argv, request.env, request.log_path);
  if (!started.ok()) return started.status();
  PlacedProcess placed;
  placed.kind = kLocalKind;
  placed.pid = started->pid;
  placed.start_ticks = started->start_ticks;
  placed.node = "localhost";
  return placed;
}

absl::StatusOr<bool> LocalPlacement::Alive(const PlacedProcess& process) {
  if (absl::Status kind = CheckKind(process); !kind.ok()) return kind;
  return placement::Alive(process.pid, process.start_ticks);
}

absl::Status LocalPlacement::Stop(const PlacedProcess& process, absl::Duration grace) {
  if (absl::Status kind = CheckKind(process); !kind.ok()) return kind;
  return placement::Stop(process.pid, process.start_ticks, grace);
}

absl::StatusOr<std::string> LocalPlacement::Address(const PlacedProcess& process) {
  if (absl::Status kind = CheckKind(process); !kind.ok()) return kind;
  return std::string("127.0.0.1");
}

}  // namespace servelab::placement
