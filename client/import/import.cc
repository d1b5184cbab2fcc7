#include "client/import/import.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/import/aisbench_details.h"
#include "client/import/vllm_result.h"

namespace servelab::client::import {

absl::StatusOr<Tool> ParseToolName(std::string_view name) {
  if (name == "vllm" || name == kVllmToolName) return Tool::kVllmBenchServe;
  if (name == kAisbenchToolName) return Tool::kAisbench;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tool \"", absl::string_view(name.data(), name.size()),
                   "\"; expected vllm, vllm-bench-serve or aisbench"));
}

absl::StatusOr<ImportedRun> ParseResultFile(Tool tool, std::string_view text,
                                            std::string_view file_name) {
  switch (tool) {
    case Tool::kVllmBenchServe:
      return ParseVllmResult(text, file_name);
    case Tool::kAisbench:
      // No side files from text alone: lines that refer to one fail and say which.
      return ParseAisbenchDetails(text, file_name, AisbenchStores());
  }
  return absl::InvalidArgumentError("unknown tool");
}

}  // namespace servelab::client::import
