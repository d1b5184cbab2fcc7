#include "daemon/core/launch_command_text.h"

#include "absl/strings/str_cat.h"

namespace servelab::core {

std::string CommandToText(const core::LaunchCommand& command) {
  std::string text;
  for (const std::string& arg : command.argv) absl::StrAppend(&text, arg, "\n");
  for (const auto& [name, value] : command.env)
    absl::StrAppend(&text, "env ", name, "=", value, "\n");
  // Only the name: the value is the daemon's, read at spawn (a secret).
  for (const std::string& name : command.pass_env) {
    absl::StrAppend(&text, "env ", name, " from servelabd's environment\n");
  }
  absl::StrAppend(&text, "port ", command.port, "\nlog ", command.log_path, "\n");
  for (const auto& [path, content] : command.files) {
    absl::StrAppend(&text, "file ", path, "\n", content);
    if (!content.empty() && content.back() != '\n') text.push_back('\n');
  }
  for (const core::RankCommand& rank : command.extra_ranks) {
    absl::StrAppend(&text, "rank ", rank.dp_rank, "\n");
    for (const std::string& arg : rank.argv) absl::StrAppend(&text, arg, "\n");
    for (const auto& [name, value] : rank.env)
      absl::StrAppend(&text, "env ", name, "=", value, "\n");
    absl::StrAppend(&text, "port ", rank.port, "\nlog ", rank.log_path, "\n");
  }
  return text;
}

}  // namespace servelab::core
