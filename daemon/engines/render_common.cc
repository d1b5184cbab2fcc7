#include "daemon/engines/render_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/labels.h"
#include "common/status_macros.h"

namespace servelab::engines {

std::string LoopbackUrl(int port) { return HostUrl("127.0.0.1", port); }

std::string HostUrl(const std::string& host, int port) {
  return absl::StrCat("http://", host, ":", port);
}

std::string ListenHost(const v1::ExperimentSpec& spec) {
  const v1::PlacementSpec& placement = spec.deployment().placement();
  if (placement.kind() != v1::PLACEMENT_KIND_SLURM) return "127.0.0.1";
  return placement.slurm().listen_host().empty() ? "0.0.0.0" : placement.slurm().listen_host();
}

std::string UpstreamHost(v1::Side upstream, const core::Endpoints& endpoints) {
  return upstream == v1::SIDE_PREFILL ? endpoints.prefill_host : endpoints.decode_host;
}

absl::StatusOr<int> PickFreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int error = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot pick a free port: ", std::strerror(error)));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<const v1::InstanceSpec*> InstanceSpecFor(const v1::ExperimentSpec& spec,
                                                        v1::Side side) {
  if (side == v1::SIDE_PREFILL) return &spec.deployment().prefill();
  if (side == v1::SIDE_DECODE) return &spec.deployment().decode();
  return absl::InvalidArgumentError(absl::StrCat("no instance spec for side ", SideLabel(side)));
}

std::string InstanceFieldPath(v1::Side side) {
  return absl::StrCat("deployment.", SideLabel(side));
}

namespace {

// The port the caller fixed for `side` (0: none) and the spec's (0: none).
struct GivenPorts {
  int fixed = 0;
  int from_spec = 0;
};

absl::StatusOr<GivenPorts> PortsGiven(const v1::ExperimentSpec& spec, v1::Side side,
                                      const core::Endpoints& endpoints) {
  switch (side) {
    case v1::SIDE_PREFILL:
      return GivenPorts{endpoints.prefill_port, spec.deployment().prefill().port()};
    case v1::SIDE_DECODE:
      return GivenPorts{endpoints.decode_port, spec.deployment().decode().port()};
    case v1::SIDE_ROUTER:
      return GivenPorts{endpoints.router_port, spec.deployment().router().port()};
    default:
      return absl::InvalidArgumentError("cannot render side SIDE_UNSPECIFIED");
  }
}

}  // namespace

absl::StatusOr<int> PortBeside(const v1::ExperimentSpec& spec, v1::Side side,
                               const core::Endpoints& endpoints, int port, int offset) {
  SERVELAB_ASSIGN_OR_RETURN(GivenPorts given, PortsGiven(spec, side, endpoints));
  if (given.fixed != 0 || given.from_spec != 0) return port + offset;
  return PickFreeLoopbackPort();
}

absl::StatusOr<int> ChoosePort(const v1::ExperimentSpec& spec, v1::Side side,
                               const core::Endpoints& endpoints) {
  SERVELAB_ASSIGN_OR_RETURN(GivenPorts given, PortsGiven(spec, side, endpoints));
  const int fixed = given.fixed, from_spec = given.from_spec;
  if (fixed != 0) return fixed;
  if (from_spec < 0 || from_spec > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(side == v1::SIDE_ROUTER ? "deployment.router" : InstanceFieldPath(side),
                     ".port: ", from_spec, " is not a port"));
  }
  if (from_spec != 0) return from_spec;
  return PickFreeLoopbackPort();
}

absl::StatusOr<int> UpstreamPort(const v1::ExperimentSpec& spec, v1::Side upstream,
                                 const core::Endpoints& endpoints) {
  int port = upstream == v1::SIDE_PREFILL ? endpoints.prefill_port : endpoints.decode_port;
  if (port == 0) {
    port = upstream == v1::SIDE_PREFILL ? spec.deployment().prefill().port()
                                        : spec.deployment().decode().port();
  }
  if (port == 0) {
    return absl::FailedPreconditionError(absl::StrCat("the router needs the ", SideLabel(upstream),
                                                      " port: render ", SideLabel(upstream),
                                                      " first and pass its port in Endpoints"));
  }
  return port;
}

std::string LogPathFor(const std::string& log_dir, v1::Side side) {
  return absl::StrCat(log_dir, "/", SideLabel(side), ".log");
}

absl::StatusOr<core::LaunchCommand> NewLaunchCommand(const v1::ExperimentSpec& spec, v1::Side side,
                                                     const core::Endpoints& endpoints,
                                                     const std::string& log_dir) {
  absl::StatusOr<int> port = ChoosePort(spec, side, endpoints);
  if (!port.ok()) return port.status();
  core::LaunchCommand command;
  command.side = side;
  command.port = *port;
  command.log_path = LogPathFor(log_dir, side);
  command.placement = spec.deployment().placement();
  if (command.placement.kind() == v1::PLACEMENT_KIND_SLURM) {
    command.node = side == v1::SIDE_ROUTER ? spec.deployment().router().node()
                                           : (*InstanceSpecFor(spec, side))->node();
  }
  if (side != v1::SIDE_ROUTER) command.devices = (*InstanceSpecFor(spec, side))->devices_size();
  return command;
}

std::string JoinDevices(const v1::InstanceSpec& instance) {
  return absl::StrJoin(instance.devices(), ",");
}

}  // namespace servelab::engines
