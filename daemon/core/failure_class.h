// Which failure class a failed stage implies, and what resume then does
// (docs/design.md §7). One function each, so the runner, recovery after a daemon
// restart and status output all say the same thing.
#ifndef SERVELAB_DAEMON_CORE_FAILURE_CLASS_H_
#define SERVELAB_DAEMON_CORE_FAILURE_CLASS_H_

#include <string>

#include "servelab/v1/experiment.pb.h"

namespace servelab::core {

// `warm`: the warmup of this deployment had completed when `failed` failed.
v1::FailureClass ClassifyFailure(v1::StageName failed, bool warm);

// What `servelab resume` will do, in words.
std::string ResumeAction(v1::FailureClass failure_class, v1::StageName failed);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_FAILURE_CLASS_H_
