// LocalPlacement: instances as processes of this machine, through the
// engines' process launcher (own session, log file, pid + start time as the
// identity; see daemon/placement/process_launcher.h). It is what the daemon
// does today, behind the Placement interface.
//
//   LocalPlacement local;
//   absl::StatusOr<PlacedProcess> p = local.Spawn(request);  // p->kind == "local"
//
// `node` must be empty or "localhost"; `devices` is ignored (the engine's env
// selects devices). Thread-safe (stateless).
#ifndef SERVELAB_DAEMON_PLACEMENT_LOCAL_PLACEMENT_H_
#define SERVELAB_DAEMON_PLACEMENT_LOCAL_PLACEMENT_H_

#include <string>

#include "daemon/placement/placement.h"

namespace servelab::placement {

class LocalPlacement : public Placement {
 public:
  std::string Kind() const override { return kLocalKind; }
  absl::StatusOr<PlacedProcess> Spawn(const PlacementRequest& request) override;
  absl::StatusOr<bool> Alive(const PlacedProcess& process) override;
  absl::Status Stop(const PlacedProcess& process, absl::Duration grace) override;
  // Always "127.0.0.1": instances listen on loopback.
  absl::StatusOr<std::string> Address(const PlacedProcess& process) override;
};

}  // namespace servelab::placement

#endif  // SERVELAB_DAEMON_PLACEMENT_LOCAL_PLACEMENT_H_
