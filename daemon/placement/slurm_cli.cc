#include "daemon/placement/slurm_cli.h"

#include <algorithm>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace servelab::placement {

std::vector<std::string> SallocArgv(const std::string& salloc, const SlurmOptions& options) {
  std::vector<std::string> argv = {salloc, "--no-shell",
                                   absl::StrCat("--job-name=", options.job_name),
                                   absl::StrCat("--nodes=", options.nodes)};
  if (options.exclusive_allocation) argv.push_back("--exclusive");
  if (!options.gres.empty()) argv.push_back(absl::StrCat("--gres=", options.gres));
  if (!options.partition.empty()) argv.push_back(absl::StrCat("--partition=", options.partition));
  if (!options.account.empty()) argv.push_back(absl::StrCat("--account=", options.account));
  if (!options.time_limit.empty()) argv.push_back(absl::StrCat("--time=", options.time_limit));
  // salloc waits for resources forever by default; --immediate makes it give
  // up (and withdraw the request) itself, instead of us killing it and
  // leaving a pending job behind.
  int64_t seconds = std::max<int64_t>(1, absl::ToInt64Seconds(options.allocation_timeout));
  argv.push_back(absl::StrCat("--immediate=", seconds));
  argv.insert(argv.end(), options.salloc_args.begin(), options.salloc_args.end());
  return argv;
}

std::vector<std::string> SrunArgv(const std::string& srun, const SlurmOptions& options,
                                  const std::string& job_id, const std::string& step_name,
                                  const PlacementRequest& request) {
  std::vector<std::string> argv = {srun, absl::StrCat("--jobid=", job_id), "--nodes=1",
                                   "--ntasks=1", absl::StrCat("--job-name=", step_name),
                                   absl::StrCat("--output=", request.log_path),
                                   "--open-mode=append", "--input=none",
                                   // Its "tasks started" line tells Spawn
                                   // the step really runs (slurm_placement.cc).
                                   "--verbose",
                                   // srun's own environment is the instance's
                                   // (set when it is started), so no value
                                   // passes through --export's comma syntax.
                                   "--export=ALL"};
  if (!request.node.empty()) argv.push_back(absl::StrCat("--nodelist=", request.node));
  if (options.sharing == StepSharing::kOverlap) {
    argv.push_back("--overlap");
  } else {
    argv.push_back("--exact");
    argv.push_back(absl::StrCat("--cpus-per-task=", options.cpus_per_step));
    argv.push_back(request.devices > 0
                       ? absl::StrCat("--gres=", options.device_gres, ":", request.devices)
                       : std::string("--gres=none"));
  }
  argv.insert(argv.end(), options.srun_args.begin(), options.srun_args.end());
  argv.insert(argv.end(), request.argv.begin(), request.argv.end());
  return argv;
}

std::string UniqueStepName(absl::string_view label) {
  std::string clean;
  for (char c : label) clean.push_back(absl::ascii_isalnum(c) || c == '-' || c == '_' ? c : '_');
  if (clean.empty()) clean = "instance";
  std::random_device random;
  uint64_t token = (static_cast<uint64_t>(random()) << 32) ^ random();
  return absl::StrFormat("servelab-%s-%016x", clean, token);
}

absl::StatusOr<std::string> ParseGrantedJobId(absl::string_view salloc_output) {
  constexpr absl::string_view kGranted = "Granted job allocation ";
  for (absl::string_view line : absl::StrSplit(salloc_output, '\n')) {
    size_t at = line.find(kGranted);
    if (at == absl::string_view::npos) continue;
    absl::string_view id = absl::StripAsciiWhitespace(line.substr(at + kGranted.size()));
    if (IsJobId(id)) return std::string(id);
  }
  return absl::NotFoundError(absl::StrCat(
      "no \"", kGranted, "<id>\" in salloc's output: ", absl::StripAsciiWhitespace(salloc_output)));
}

std::vector<StepRow> ParseStepRows(absl::string_view squeue_output) {
  std::vector<StepRow> rows;
  for (absl::string_view line : absl::StrSplit(squeue_output, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> fields = absl::StrSplit(absl::StripAsciiWhitespace(line), '|');
    if (fields.size() != 3 || !IsStepId(fields[0])) continue;
    rows.push_back({fields[0], fields[1], fields[2]});
  }
  return rows;
}

std::optional<StepRow> FindStepByName(const std::vector<StepRow>& rows, absl::string_view name) {
  for (const StepRow& row : rows) {
    if (row.name == name) return row;
  }
  return std::nullopt;
}

std::map<std::string, std::string> ParseScontrolRecord(absl::string_view line) {
  std::map<std::string, std::string> fields;
  std::string* last = nullptr;
  for (absl::string_view word : absl::StrSplit(line, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    size_t equals = word.find('=');
    if (equals == absl::string_view::npos || equals == 0) {
      if (last != nullptr) absl::StrAppend(last, " ", word);
      continue;
    }
    last = &fields[std::string(word.substr(0, equals))];
    *last = std::string(word.substr(equals + 1));
  }
  return fields;
}

bool SaysNotFound(absl::string_view scontrol_output) {
  return absl::StrContains(scontrol_output, "not found") ||
         absl::StrContains(scontrol_output, "Invalid job id");
}

bool IsJobId(absl::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return true;
}

bool IsStepId(absl::string_view id) {
  size_t dot = id.find('.');
  return dot != absl::string_view::npos && IsJobId(id.substr(0, dot)) &&
         IsJobId(id.substr(dot + 1));
}

}  // namespace servelab::placement
