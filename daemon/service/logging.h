// Named spdlog loggers for the daemon's components ("daemon", "service",
// "metrics"), all writing to stderr and following spdlog's global level.
//
//   Logger("service")->info("watch {} ended", id);
#ifndef SERVELAB_DAEMON_SERVICE_LOGGING_H_
#define SERVELAB_DAEMON_SERVICE_LOGGING_H_

#include <memory>
#include <string>

#include "spdlog/spdlog.h"

namespace servelab::service {

// Returns the logger `name`, creating and registering it on first use.
// Thread-safe.
std::shared_ptr<spdlog::logger> Logger(const std::string& name);

}  // namespace servelab::service

#endif  // SERVELAB_DAEMON_SERVICE_LOGGING_H_
