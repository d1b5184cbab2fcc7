// The text form of a rendered launch command: what `servelab plan` shows
// and the engines' golden tests compare.
//
// argv one per line, then "env K=V" lines, "port P", "log PATH", then
// "file PATH" followed by its content, then per extra rank "rank R" and the
// same lines for it; ends with a newline. Pure, thread-safe.
#ifndef SERVELAB_DAEMON_CORE_LAUNCH_COMMAND_TEXT_H_
#define SERVELAB_DAEMON_CORE_LAUNCH_COMMAND_TEXT_H_

#include <string>

#include "daemon/core/instance_driver.h"

namespace servelab::core {

std::string CommandToText(const LaunchCommand& command);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_LAUNCH_COMMAND_TEXT_H_
