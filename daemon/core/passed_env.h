// The variables a launch takes from servelabd's own environment by name
// (LaunchCommand::pass_env, the spec's pass_env): secrets such as HF_TOKEN,
// whose values never enter the spec, the store, a log or `plan`'s text
// (docs/design.md §13).
//
//   SERVELAB_RETURN_IF_ERROR(MissingPassedEnv(command));  // preflight
//   SERVELAB_RETURN_IF_ERROR(AddPassedEnv(command, request.env));  // at spawn
//
// Both read the process environment (getenv); thread-safe as long as nothing
// in the daemon calls setenv, which nothing does.
#ifndef SERVELAB_DAEMON_CORE_PASSED_ENV_H_
#define SERVELAB_DAEMON_CORE_PASSED_ENV_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "daemon/core/instance_driver.h"

namespace servelab::core {

// FAILED_PRECONDITION naming deployment.<side>.pass_env[i] when servelabd's
// environment lacks a name the command passes; OK otherwise.
absl::Status MissingPassedEnv(const LaunchCommand& command);

// Sets each passed name in `env` to servelabd's value; fails as
// MissingPassedEnv, leaving `env` unchanged.
absl::Status AddPassedEnv(const LaunchCommand& command, std::map<std::string, std::string>& env);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_PASSED_ENV_H_
