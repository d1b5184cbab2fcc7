#include "daemon/service/logging.h"

#include <mutex>

#include "spdlog/sinks/stdout_color_sinks.h"

namespace servelab::service {

std::shared_ptr<spdlog::logger> Logger(const std::string& name) {
  // spdlog's registry throws when two threads register the same name.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = spdlog::get(name)) return existing;
  return spdlog::stderr_color_mt(name);
}

}  // namespace servelab::service
