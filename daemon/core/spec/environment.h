// What a spec may put in a child's environment (docs/design.md §13).
//
// A side's `env` is stored in the frozen spec and shown by `status` and
// `plan`, so a literal value under a secret-looking name (HF_TOKEN,
// WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, ...) is refused; such a variable is
// named in `pass_env` instead and taken from servelabd's own environment at
// launch, never stored.
//
//   for (const EnvProblem& e : EnvProblems("deployment.prefill", side.env(), side.pass_env()))
//     ...  // e.path "deployment.prefill.env.HF_TOKEN", e.reason "..."
//
// Pure functions, thread-safe.
#ifndef SERVELAB_DAEMON_CORE_SPEC_ENVIRONMENT_H_
#define SERVELAB_DAEMON_CORE_SPEC_ENVIRONMENT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/map.h"
#include "google/protobuf/repeated_ptr_field.h"

namespace servelab::core::spec {

// True when `name` has TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL(S) or
// APIKEY as one of its `_`-separated words, or API_KEY, ACCESS_KEY or
// PRIVATE_KEY as two (any case). Whole words, so MAX_TOKENS is not one.
bool LooksLikeSecret(absl::string_view name);

// A POSIX shell-style variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsVariableName(absl::string_view name);

struct EnvProblem {
  std::string path;  // e.g. "deployment.prefill.pass_env[1]"
  std::string reason;
};

// Problems with one holder's env and pass_env, `holder` being its field path
// ("deployment.router"), in field order.
std::vector<EnvProblem> EnvProblems(
    const std::string& holder, const google::protobuf::Map<std::string, std::string>& env,
    const google::protobuf::RepeatedPtrField<std::string>& pass_env);

}  // namespace servelab::core::spec

#endif  // SERVELAB_DAEMON_CORE_SPEC_ENVIRONMENT_H_
