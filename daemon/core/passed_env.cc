#include "daemon/core/passed_env.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/labels.h"

namespace servelab::core {

absl::Status MissingPassedEnv(const LaunchCommand& command) {
  for (size_t i = 0; i < command.pass_env.size(); ++i) {
    if (std::getenv(command.pass_env[i].c_str()) == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "deployment.", SideLabel(command.side), ".pass_env[", i, "]: ", command.pass_env[i],
          " is not set in servelabd's environment; start servelabd with it (e.g. an "
          "EnvironmentFile= line in its systemd unit)"));
    }
  }
  return absl::OkStatus();
}

absl::Status AddPassedEnv(const LaunchCommand& command, std::map<std::string, std::string>& env) {
  if (absl::Status missing = MissingPassedEnv(command); !missing.ok()) return missing;
  for (const std::string& name : command.pass_env) env[name] = std::getenv(name.c_str());
  return absl::OkStatus();
}

}  // namespace servelab::core
