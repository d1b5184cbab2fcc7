// Holds the extra ports a real engine would listen on (see PortBinding in
// engine_shim.h): each is bound and listened on, without FD_CLOEXEC, so the
// sockets survive execv into servelab-sim and stay bound until the process
// exits — and a second shim on an overlapping range fails as the engine
// would, with "address in use".
//
//   absl::Status s = BindAndListen(plan.bindings);  // fds deliberately leak into exec
#ifndef SERVELAB_TESTS_ENGINE_SHIM_BOUND_PORTS_H_
#define SERVELAB_TESTS_ENGINE_SHIM_BOUND_PORTS_H_

#include <vector>

#include "absl/status/status.h"
#include "tests/engine_shim/engine_shim.h"

namespace servelab::engine_shim {

// Binds every binding; on the first failure closes what it opened and returns
// UNAVAILABLE naming the port, its purpose and strerror ("Address already in
// use"). The sockets stay open on success, for the life of the process.
absl::Status BindAndListen(const std::vector<PortBinding>& bindings);

}  // namespace servelab::engine_shim

#endif  // SERVELAB_TESTS_ENGINE_SHIM_BOUND_PORTS_H_
