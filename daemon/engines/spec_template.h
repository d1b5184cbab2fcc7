// Expands `{placeholders}` in an argv or env template (ENGINE_COMMAND, and a
// router's command_argv) from the frozen spec and the render's variables.
//
//   {deployment.decode.model}     any scalar field of the ExperimentSpec by
//                                 its dotted path (field_path.h syntax)
//   {deployment.prefill.devices}  a repeated scalar: elements joined by ','
//   {deployment.decode.extra_args[1]}, {labels.owner}  one element / map key
//   {port} {prefill_url} ...      render variables (see TemplateVariables)
//   {{ and }}                     a literal brace
//
// Values are substituted as text into one argv element; nothing is ever
// interpreted by a shell. An unknown placeholder, a path that is not a
// scalar, or a variable not known at this render (e.g. {decode_url} while
// rendering prefill) is INVALID_ARGUMENT naming the placeholder and `where`.
// Pure functions, thread-safe.
#ifndef SERVELAB_DAEMON_ENGINES_SPEC_TEMPLATE_H_
#define SERVELAB_DAEMON_ENGINES_SPEC_TEMPLATE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/core/instance_driver.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::engines {

// Names of the render variables; a template may use any of them, but only
// those given a value for this render resolve.
inline constexpr const char* kTemplateVariableNames[] = {
    "port",        "side",        "log_dir",    "prefill_port", "decode_port",
    "router_port", "prefill_url", "decode_url", "router_url"};

// Variable values for rendering `side` on `port`: side, port, log_dir, and
// the URL/port of every side whose port is known from `endpoints` or the spec.
std::map<std::string, std::string> TemplateVariables(const v1::ExperimentSpec& spec, v1::Side side,
                                                     int port, const core::Endpoints& endpoints,
                                                     const std::string& log_dir);

// `where` names the template in errors, e.g. "deployment.prefill.command_argv[2]".
absl::StatusOr<std::string> ExpandTemplate(absl::string_view text, const v1::ExperimentSpec& spec,
                                           const std::map<std::string, std::string>& variables,
                                           absl::string_view where);

// Expands every element of an argv template. `where` is its field path
// ("deployment.router.command_argv"); INVALID_ARGUMENT when it is empty or
// argv[0] does not expand to an absolute path.
absl::StatusOr<std::vector<std::string>> ExpandArgv(
    const google::protobuf::RepeatedPtrField<std::string>& argv_template,
    const v1::ExperimentSpec& spec, const std::map<std::string, std::string>& variables,
    absl::string_view where);

// The value of one spec field path as template text (see above).
absl::StatusOr<std::string> SpecFieldText(const v1::ExperimentSpec& spec, absl::string_view path);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_SPEC_TEMPLATE_H_
