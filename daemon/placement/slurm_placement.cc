#include "daemon/placement/slurm_placement.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "daemon/placement/process_launcher.h"

namespace servelab::placement {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(200);
// How long a step may take to go after SIGKILL or a full scancel, and how
// long Release waits for the job to leave the running states.
constexpr absl::Duration kKillWait = absl::Seconds(15);
constexpr absl::Duration kReleaseWait = absl::Seconds(60);
// srun exits once its step ended; this long we wait before stopping it.
constexpr absl::Duration kSrunExitWait = absl::Seconds(5);
constexpr int kLogTailLines = 20;

// States after which a job holds no resources (squeue %T, long names).
constexpr absl::string_view kEndedJobStates[] = {"BOOT_FAIL",     "CANCELLED", "COMPLETED",
                                                 "DEADLINE",      "FAILED",    "NODE_FAIL",
                                                 "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"};

std::string Trimmed(const std::string& text) {
  return std::string(absl::StripAsciiWhitespace(text));
}

// A failed Slurm command: UNAVAILABLE when the controller could not be
// reached (the answer is unknown, so callers must not act on it),
// FAILED_PRECONDITION otherwise, quoting what Slurm said.
absl::Status CommandError(absl::string_view what, const CommandResult& result) {
  std::string said = Trimmed(absl::StrCat(result.err, " ", result.out));
  std::string message = absl::StrCat(what, " (exit ", result.exit_code, "): ", said);
  if (absl::StrContains(said, "Unable to contact slurm controller") ||
      absl::StrContains(said, "Socket timed out") ||
      absl::StrContains(said, "Zero Bytes were transmitted")) {
    return absl::UnavailableError(message);
  }
  return absl::FailedPreconditionError(message);
}

absl::Status CheckProcess(const PlacedProcess& process) {
  if (process.kind != kSlurmKind) {
    return absl::InvalidArgumentError(
        absl::StrCat("a \"", process.kind, "\" process given to the slurm placement"));
  }
  if (!IsStepId(process.step_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad Slurm step id \"", process.step_id, "\" (want JOB.STEP)"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequest(const PlacementRequest& request) {
  if (request.argv.empty()) return absl::InvalidArgumentError("empty argv");
  if (request.argv[0].empty() || request.argv[0][0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("argv[0] must be an absolute path, got \"", request.argv[0], "\""));
  }
  if (request.log_path.empty()) return absl::InvalidArgumentError("empty log path");
  if (request.devices < 0) return absl::InvalidArgumentError("negative device count");
  return absl::OkStatus();
}

// srun is our child until a daemon restart; once its step has ended it
// exits, and is reaped here (Alive reaps a zombie child) or stopped.
// srun --verbose's "launch/slurm: _task_start: Node N, K tasks started"
// (Slurm 22.05 src/plugins/launch/slurm/launch_slurm.c), after `offset`.
bool TasksStarted(const std::string& srun_log, uintmax_t offset) {
  std::ifstream in(srun_log, std::ios::binary);
  if (!in) return false;
  in.seekg(static_cast<std::streamoff>(offset));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return absl::StrContains(text, "tasks started");
}

void ReapSrun(const PlacedProcess& process) {
  if (process.pid <= 0) return;
  absl::Time deadline = absl::Now() + kSrunExitWait;
  while (placement::Alive(process.pid, process.start_ticks)) {
    if (absl::Now() >= deadline) {
      placement::Stop(process.pid, process.start_ticks, absl::Seconds(1)).IgnoreError();
      return;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace

SlurmPlacement::SlurmPlacement(SlurmOptions options, Tools tools)
    : options_(std::move(options)), tools_(std::move(tools)) {}

absl::StatusOr<std::unique_ptr<SlurmPlacement>> SlurmPlacement::Create(SlurmOptions options) {
  if (!options.job_id.empty() && !IsJobId(options.job_id)) {
    return absl::InvalidArgumentError(absl::StrCat("bad Slurm job id \"", options.job_id, "\""));
  }
  std::string search_path;
  if (auto it = options.env.find("PATH"); it != options.env.end()) {
    search_path = it->second;
  } else if (const char* path = std::getenv("PATH")) {
    search_path = path;
  }
  Tools tools;
  std::pair<const char*, std::string*> wanted[] = {{"salloc", &tools.salloc},
                                                   {"srun", &tools.srun},
                                                   {"squeue", &tools.squeue},
                                                   {"scontrol", &tools.scontrol},
                                                   {"scancel", &tools.scancel}};
  for (auto& [name, field] : wanted) {
    SERVELAB_ASSIGN_OR_RETURN(*field, FindInPath(name, search_path));
  }
  std::unique_ptr<SlurmPlacement> placement(
      new SlurmPlacement(std::move(options), std::move(tools)));
  if (placement->options_.job_id.empty()) {
    SERVELAB_RETURN_IF_ERROR(placement->Allocate());
  } else {
    placement->job_id_ = placement->options_.job_id;
    placement->owns_job_ = placement->options_.own_job;
    SERVELAB_RETURN_IF_ERROR(placement->CheckJobRunning());
  }
  return placement;
}

absl::StatusOr<CommandResult> SlurmPlacement::Slurm(const std::vector<std::string>& argv) const {
  return RunCommand(argv, options_.env, options_.command_timeout);
}

absl::Status SlurmPlacement::Allocate() {
  std::vector<std::string> argv = SallocArgv(tools_.salloc, options_);
  SERVELAB_ASSIGN_OR_RETURN(
      CommandResult result,
      RunCommand(argv, options_.env, options_.allocation_timeout + options_.command_timeout));
  if (result.exit_code != 0) {
    return CommandError(absl::StrCat("salloc did not grant an allocation (",
                                     absl::StrJoin(argv.begin() + 1, argv.end(), " "), ")"),
                        result);
  }
  absl::StatusOr<std::string> job = ParseGrantedJobId(result.err + result.out);
  if (!job.ok()) return absl::FailedPreconditionError(job.status().message());
  job_id_ = *job;
  owns_job_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::string> SlurmPlacement::JobState() const {
  SERVELAB_ASSIGN_OR_RETURN(
      CommandResult result,
      Slurm({tools_.squeue, absl::StrCat("--jobs=", job_id_), "-h", "-o", "%T"}));
  if (result.exit_code != 0) {
    if (SaysNotFound(result.err + result.out)) return std::string();
    return CommandError(absl::StrCat("squeue for job ", job_id_), result);
  }
  return Trimmed(result.out);
}

absl::Status SlurmPlacement::CheckJobRunning() const {
  SERVELAB_ASSIGN_OR_RETURN(std::string state, JobState());
  if (state == "RUNNING") return absl::OkStatus();
  if (state.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("Slurm job ", job_id_, " does not exist"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("Slurm job ", job_id_, " is ", state, ", not RUNNING"));
}

absl::StatusOr<std::vector<std::string>> SlurmPlacement::Nodes() {
  SERVELAB_ASSIGN_OR_RETURN(
      CommandResult list,
      Slurm({tools_.squeue, absl::StrCat("--jobs=", job_id_), "-h", "-o", "%N"}));
  if (list.exit_code != 0) return CommandError(absl::StrCat("squeue for job ", job_id_), list);
  SERVELAB_ASSIGN_OR_RETURN(CommandResult names,
                            Slurm({tools_.scontrol, "show", "hostnames", Trimmed(list.out)}));
  if (names.exit_code != 0) return CommandError("scontrol show hostnames", names);
  return std::vector<std::string>(absl::StrSplit(names.out, '\n', absl::SkipWhitespace()));
}

absl::StatusOr<PlacedProcess> SlurmPlacement::Spawn(const PlacementRequest& request) {
  SERVELAB_RETURN_IF_ERROR(CheckRequest(request));
  {
    absl::MutexLock lock(&mu_);
    if (released_) {
      return absl::FailedPreconditionError(
          absl::StrCat("Slurm allocation ", job_id_, " was released"));
    }
  }
  std::string step_name = UniqueStepName(request.name);
  std::map<std::string, std::string> env = options_.env;
  for (const auto& [name, value] : request.env) env[name] = value;
  std::string srun_log = request.log_path + ".srun";
  // The log is appended to: only what this srun writes counts.
  std::error_code ec;
  const uintmax_t log_offset =
      std::filesystem::exists(srun_log, ec) ? std::filesystem::file_size(srun_log, ec) : 0;
  SERVELAB_ASSIGN_OR_RETURN(
      placement::StartedProcess srun,
      placement::StartProcess(SrunArgv(tools_.srun, options_, job_id_, step_name, request), env,
                              srun_log));
  absl::StatusOr<StepRow> step =
      WaitForStep(step_name, srun.pid, srun.start_ticks, srun_log, ec ? 0 : log_offset);
  if (!step.ok()) {
    // A pending step request dies with its srun; nothing is left in Slurm.
    placement::Stop(srun.pid, srun.start_ticks, absl::Seconds(2)).IgnoreError();
    return step.status();
  }
  PlacedProcess placed;
  placed.kind = kSlurmKind;
  placed.pid = srun.pid;
  placed.start_ticks = srun.start_ticks;
  placed.job_id = job_id_;
  placed.step_id = step->step_id;
  placed.step_name = step_name;
  placed.node = step->nodes;
  return placed;
}

absl::StatusOr<StepRow> SlurmPlacement::WaitForStep(const std::string& step_name, int srun_pid,
                                                    int64_t srun_start_ticks,
                                                    const std::string& srun_log,
                                                    uintmax_t log_offset) {
  absl::Time deadline = absl::Now() + options_.step_start_timeout;
  std::string last_error;
  while (true) {
    absl::StatusOr<CommandResult> result =
        Slurm({tools_.squeue, "--steps", absl::StrCat("--jobs=", job_id_), "-h", "-o", "%i|%j|%N"});
    if (result.ok() && result->exit_code == 0) {
      std::optional<StepRow> row = FindStepByName(ParseStepRows(result->out), step_name);
      // The controller lists a step before srun has asked the node to start
      // it; a step whose srun dies in between never starts and never ends.
      // srun --verbose says when the node started the task.
      if (row.has_value() && TasksStarted(srun_log, log_offset)) return *row;
    } else {
      last_error =
          result.ok() ? CommandError("squeue", *result).ToString() : result.status().ToString();
    }
    if (!placement::Alive(srun_pid, srun_start_ticks)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "srun exited before step ", step_name, " of job ", job_id_, " was seen running; ",
          srun_log, ":\n", placement::LogTail(srun_log, kLogTailLines)));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "step ", step_name, " of job ", job_id_, " not running after ",
          absl::FormatDuration(options_.step_start_timeout), " (resources of the allocation busy?)",
          last_error.empty() ? "" : "; last error: ", last_error, "; ", srun_log, ":\n",
          placement::LogTail(srun_log, kLogTailLines)));
    }
    absl::SleepFor(kPollInterval);
  }
}

absl::StatusOr<bool> SlurmPlacement::StepRunning(const PlacedProcess& process) const {
  SERVELAB_ASSIGN_OR_RETURN(CommandResult result,
                            Slurm({tools_.scontrol, "-o", "show", "step", process.step_id}));
  std::string said = result.err + result.out;
  if (SaysNotFound(said)) return false;
  if (result.exit_code != 0) {
    return CommandError(absl::StrCat("scontrol show step ", process.step_id), result);
  }
  std::map<std::string, std::string> fields = ParseScontrolRecord(result.out);
  // The name guards against a step id that now means another step (a job id
  // reused after the controller lost its state).
  return fields["State"] == "RUNNING" && fields["Name"] == process.step_name;
}

absl::StatusOr<bool> SlurmPlacement::Alive(const PlacedProcess& process) {
  SERVELAB_RETURN_IF_ERROR(CheckProcess(process));
  // Reaps our srun if it has exited; its exit alone proves nothing.
  if (process.pid > 0) placement::Alive(process.pid, process.start_ticks);
  return StepRunning(process);
}

absl::StatusOr<bool> SlurmPlacement::WaitStepEnded(const PlacedProcess& process,
                                                   absl::Duration timeout) const {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool running, StepRunning(process));
    if (!running) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(kPollInterval);
  }
}

absl::Status SlurmPlacement::Stop(const PlacedProcess& process, absl::Duration grace) {
  SERVELAB_RETURN_IF_ERROR(CheckProcess(process));
  // SIGTERM lets the engine shut down cleanly; SIGKILL to the tasks if it
  // does not; a full scancel (Slurm's own SIGTERM/KillWait/SIGKILL) if the
  // step is still there, e.g. stuck in its epilogue.
  const std::vector<std::vector<std::string>> escalation = {
      {"--signal=TERM", process.step_id}, {"--signal=KILL", process.step_id}, {process.step_id}};
  for (size_t i = 0; i < escalation.size(); ++i) {
    SERVELAB_ASSIGN_OR_RETURN(bool running, StepRunning(process));
    if (!running) break;
    std::vector<std::string> argv = {tools_.scancel};
    argv.insert(argv.end(), escalation[i].begin(), escalation[i].end());
    SERVELAB_ASSIGN_OR_RETURN(CommandResult result, Slurm(argv));
    std::string said = result.err + result.out;
    if (result.exit_code != 0 && !SaysNotFound(said) && !absl::StrContains(said, "completing")) {
      return CommandError(absl::StrJoin(argv, " "), result);
    }
    SERVELAB_ASSIGN_OR_RETURN(bool ended, WaitStepEnded(process, i == 0 ? grace : kKillWait));
    if (ended) break;
    if (i + 1 == escalation.size()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "Slurm step ", process.step_id, " still running after scancel ", process.step_id));
    }
  }
  ReapSrun(process);
  return absl::OkStatus();
}

absl::StatusOr<std::string> SlurmPlacement::NodeAddress(const std::string& node) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = node_addresses_.find(node); it != node_addresses_.end()) return it->second;
  }
  SERVELAB_ASSIGN_OR_RETURN(CommandResult result,
                            Slurm({tools_.scontrol, "-o", "show", "node", node}));
  if (result.exit_code != 0) return CommandError(absl::StrCat("scontrol show node ", node), result);
  std::map<std::string, std::string> fields = ParseScontrolRecord(result.out);
  std::string address = fields["NodeAddr"].empty() ? node : fields["NodeAddr"];
  absl::MutexLock lock(&mu_);
  node_addresses_[node] = address;
  return address;
}

absl::StatusOr<std::string> SlurmPlacement::Address(const PlacedProcess& process) {
  SERVELAB_RETURN_IF_ERROR(CheckProcess(process));
  if (process.node.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("step ", process.step_id, " has no node"));
  }
  return NodeAddress(process.node);
}

absl::Status SlurmPlacement::Release() {
  {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }
  if (!owns_job_) return absl::OkStatus();
  SERVELAB_ASSIGN_OR_RETURN(CommandResult result, Slurm({tools_.scancel, job_id_}));
  if (result.exit_code != 0 && !SaysNotFound(result.err + result.out)) {
    return CommandError(absl::StrCat("scancel ", job_id_), result);
  }
  absl::Time deadline = absl::Now() + kReleaseWait;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(std::string state, JobState());
    bool ended = state.empty();
    for (absl::string_view done : kEndedJobStates) ended |= state == done;
    if (ended) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("Slurm job ", job_id_, " still ", state, " ",
                                                      absl::FormatDuration(kReleaseWait),
                                                      " after scancel"));
    }
    absl::SleepFor(kPollInterval);
  }
}

}  // namespace servelab::placement
