// The sim's named spdlog logger ("sim"), created on first use.
#ifndef SERVELAB_SIM_LOG_H_
#define SERVELAB_SIM_LOG_H_

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace servelab::sim {

inline spdlog::logger& SimLog() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    std::shared_ptr<spdlog::logger> l = spdlog::get("sim");
    return l ? l : spdlog::stderr_color_mt("sim");
  }();
  return *logger;
}

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_LOG_H_
