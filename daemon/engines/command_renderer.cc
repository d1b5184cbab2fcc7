#include "daemon/engines/command_renderer.h"

#include "absl/strings/str_cat.h"
#include "daemon/engines/render_common.h"
#include "daemon/engines/spec_template.h"

namespace servelab::engines {

absl::StatusOr<core::LaunchCommand> RenderCommand(const v1::ExperimentSpec& spec, v1::Side side,
                                                  const core::Endpoints& endpoints,
                                                  const std::string& log_dir) {
  absl::StatusOr<core::LaunchCommand> started = NewLaunchCommand(spec, side, endpoints, log_dir);
  if (!started.ok()) return started.status();
  core::LaunchCommand command = *std::move(started);
  const std::map<std::string, std::string> vars =
      TemplateVariables(spec, side, command.port, endpoints, log_dir);

  const google::protobuf::RepeatedPtrField<std::string>* argv_template;
  const google::protobuf::RepeatedPtrField<std::string>* extra_args;
  const google::protobuf::Map<std::string, std::string>* env;
  std::string field;
  if (side == v1::SIDE_ROUTER) {
    const v1::RouterSpec& router = spec.deployment().router();
    argv_template = &router.command_argv();
    extra_args = &router.extra_args();
    env = &router.env();
    field = "deployment.router";
  } else {
    absl::StatusOr<const v1::InstanceSpec*> instance = InstanceSpecFor(spec, side);
    if (!instance.ok()) return instance.status();
    argv_template = &(*instance)->command_argv();
    extra_args = &(*instance)->extra_args();
    env = &(*instance)->env();
    field = InstanceFieldPath(side);
    if (!(*instance)->devices().empty()) {
      command.env["CUDA_VISIBLE_DEVICES"] = JoinDevices(**instance);
    }
  }

  absl::StatusOr<std::vector<std::string>> argv =
      ExpandArgv(*argv_template, spec, vars, field + ".command_argv");
  if (!argv.ok()) return argv.status();
  command.argv = *std::move(argv);
  for (int i = 0; i < extra_args->size(); ++i) {
    absl::StatusOr<std::string> arg =
        ExpandTemplate((*extra_args)[i], spec, vars, absl::StrCat(field, ".extra_args[", i, "]"));
    if (!arg.ok()) return arg.status();
    command.argv.push_back(*std::move(arg));
  }
  for (const auto& [name, value] : *env) {
    absl::StatusOr<std::string> expanded =
        ExpandTemplate(value, spec, vars, absl::StrCat(field, ".env.", name));
    if (!expanded.ok()) return expanded.status();
    command.env[name] = *std::move(expanded);
  }
  return command;
}

}  // namespace servelab::engines
