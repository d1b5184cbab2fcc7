// Helpers every engine's Render shares: side names, which port a side
// listens on, where its log goes, and a stable text form of a rendered
// command (what preflight shows and the golden tests compare).
//
// Port rule (the same for every engine): the port in `Endpoints` for the
// side if the caller already fixed it, else the spec's port, else a free
// loopback port chosen now. Pure functions except PickFreeLoopbackPort;
// all thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_RENDER_COMMON_H_
#define SERVELAB_DAEMON_ENGINES_RENDER_COMMON_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/labels.h"
#include "daemon/core/instance_driver.h"
#include "daemon/core/launch_command_text.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::engines {

// Binds 127.0.0.1:0, reads the port the kernel chose, closes the socket.
absl::StatusOr<int> PickFreeLoopbackPort();

// "http://127.0.0.1:PORT".
std::string LoopbackUrl(int port);
// "http://HOST:PORT".
std::string HostUrl(const std::string& host, int port);

// The address instances listen on: 127.0.0.1 on this machine; under Slurm
// placement deployment.placement.slurm.listen_host, by default 0.0.0.0 so
// that the daemon and the router reach them from another node.
std::string ListenHost(const v1::ExperimentSpec& spec);

// Where the router reaches an upstream side (endpoints' host for it).
std::string UpstreamHost(v1::Side upstream, const core::Endpoints& endpoints);

// deployment.prefill / deployment.decode; INVALID_ARGUMENT for other sides.
absl::StatusOr<const v1::InstanceSpec*> InstanceSpecFor(const v1::ExperimentSpec& spec,
                                                        v1::Side side);
// "deployment.prefill", for error messages naming a field.
std::string InstanceFieldPath(v1::Side side);

// The port `side` listens on, by the rule above.
absl::StatusOr<int> ChoosePort(const v1::ExperimentSpec& spec, v1::Side side,
                               const core::Endpoints& endpoints);
// Another port a process of `side` listens on beside `port` (the one
// ChoosePort gave): `offset` after it when that port is fixed (by the caller
// or the spec), so a user can open exactly that range; otherwise a free one,
// since "port + offset" of a picked port may be anyone's ephemeral port.
absl::StatusOr<int> PortBeside(const v1::ExperimentSpec& spec, v1::Side side,
                               const core::Endpoints& endpoints, int port, int offset);
// The port of an upstream (prefill or decode) that a router connects to:
// from `endpoints`, else the spec. FAILED_PRECONDITION when neither knows it
// (render and launch that side first).
absl::StatusOr<int> UpstreamPort(const v1::ExperimentSpec& spec, v1::Side upstream,
                                 const core::Endpoints& endpoints);

// log_dir/prefill.log and so on.
std::string LogPathFor(const std::string& log_dir, v1::Side side);

// The command every renderer starts from: side, its chosen port and log path
// set, its placement, node and device count from the spec, argv and env empty.
absl::StatusOr<core::LaunchCommand> NewLaunchCommand(const v1::ExperimentSpec& spec, v1::Side side,
                                                     const core::Endpoints& endpoints,
                                                     const std::string& log_dir);

// "0,1,2,3" for CUDA_VISIBLE_DEVICES; empty for no devices.
std::string JoinDevices(const v1::InstanceSpec& instance);

// The text form of a command (daemon/core/launch_command_text.h).
using core::CommandToText;

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_RENDER_COMMON_H_
