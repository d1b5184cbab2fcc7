#include "daemon/engines/flag_check.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/engines/flag_table.h"

namespace servelab::engines {

absl::Status CheckRenderedFlags(std::string_view tool, const v1::ExperimentSpec& spec,
                                const std::vector<std::string>& argv, size_t skip) {
  const std::string& version = spec.deployment().engine_version();
  // Debian's abseil has its own string_view: work on std::string.
  const std::string name(tool);
  const bool server = absl::EndsWith(name, " serve") || absl::EndsWith(name, " launch_server");
  absl::StatusOr<const FlagTable*> table = FindFlagTable(tool, version);
  if (!table.ok() && !server) table = FindFlagTable(tool, "");
  if (!table.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deployment.engine_version: no flag table for ", name, " \"", version, "\" (known: ",
        absl::StrJoin(KnownVersions(tool), ", ",
                      [](std::string* out, std::string_view v) { out->append(v); }),
        ")"));
  }
  std::vector<std::string> args(argv.begin() + std::min(skip, argv.size()), argv.end());
  absl::StatusOr<ParsedArgs> parsed = ParseFlags(**table, args);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(parsed.status().message(),
                     " (rendered from the spec: check deployment.*.extra_args, "
                     "deployment.router.extra_args and deployment.engine_version)"));
  }
  return absl::OkStatus();
}

}  // namespace servelab::engines
