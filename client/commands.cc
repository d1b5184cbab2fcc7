#include "client/commands.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cli_io.h"
#include "client/exit_codes.h"
#include "client/output.h"
#include "common/pem_file.h"
#include "common/regular_file.h"
#include "common/utf8.h"
#include "servelab/v1/service.grpc.pb.h"

namespace servelab::client {
namespace {

namespace fs = std::filesystem;

constexpr char kAddressHelp[] =
    "Address: --addr, else $SERVELAB_ADDR, else unix:$SERVELAB_STATE_DIR/servelab.sock when\n"
    "SERVELAB_STATE_DIR is set, else unix:./.state/servelab.sock. Forms: unix:PATH,\n"
    "tcp:HOST:PORT (servelabd writes its bound address to STATE_DIR/servelabd.addr).\n"
    "TLS: --tls-ca FILE, else $SERVELAB_TLS_CA, names the CA of servelabd's --tls-cert.\n";

// One progress line redrawn in place on a terminal; a change of stage or
// state keeps the previous line, so the history stays on screen. Inactive
// (does nothing) without a stream.
class LiveLine {
 public:
  explicit LiveLine(std::ostream* out) : out_(out) {}
  bool active() const { return out_ != nullptr; }
  void Show(const v1::Experiment& e) {
    if (out_ == nullptr) return;
    const std::string key = absl::StrCat(e.state(), "/", CurrentStageName(e));
    if (shown_ && key != key_) *out_ << "\n";
    *out_ << "\r\033[K" << FormatLiveProgress(e, absl::Now());
    out_->flush();
    shown_ = true;
    key_ = key;
  }
  void End() {
    if (out_ != nullptr && shown_) *out_ << "\n";
    shown_ = false;
  }

 private:
  static int CurrentStageName(const v1::Experiment& e) {
    for (const v1::Stage& stage : e.stages()) {
      if (stage.status() == v1::STAGE_STATUS_RUNNING) return stage.name();
    }
    return v1::STAGE_UNSPECIFIED;
  }
  std::ostream* out_;
  bool shown_ = false;
  std::string key_;
};

struct DeltaArgs {
  std::vector<std::string> set;
  std::vector<std::string> unset;
};

struct SubmitArgs {
  std::string file;
  std::string base;
  DeltaArgs delta;
};

class Cli {
 public:
  Cli(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}

  std::string address;
  std::string output = "text";
  // PEM of the CA that signed servelabd's --tls-cert; empty: plain text.
  std::string tls_ca_pem;

  int Submit(const SubmitArgs& args, bool validate_only) {
    v1::SubmitExperimentRequest request;
    if (!args.file.empty() && !args.base.empty()) return Usage("give either -f FILE or --base ID");
    if (!args.file.empty()) {
      if (int code = ReadSpec(args.file, &request); code != kExitOk) return code;
      if (int code = CheckUtf8(args.file, request.spec_text()); code != kExitOk) return code;
    } else if (!args.base.empty()) {
      request.set_base_id(args.base);
      request.set_base_dir(Cwd());
    } else {
      return Usage("give -f FILE (a YAML or JSON spec) or --base ID (with --set/--unset)");
    }
    for (const std::string& s : args.delta.set) request.add_set(s);
    for (const std::string& u : args.delta.unset) request.add_unset(u);
    request.set_validate_only(validate_only);

    v1::SubmitExperimentResponse response;
    auto context = UnaryContext();
    grpc::Status status = Stub().SubmitExperiment(context.get(), request, &response);
    if (!status.ok()) return Fail(status);
    if (Json()) {
      out_ << ToJson(response.experiment(), /*pretty=*/true) << "\n";
    } else {
      out_ << (validate_only ? "plan only: nothing stored\n"
                             : absl::StrCat("submitted ", response.experiment().id(), "\n"))
           << FormatExperiment(response.experiment(), absl::Now());
    }
    return kExitOk;
  }

  int Status(const std::string& id) {
    v1::GetExperimentRequest request;
    request.set_id(id);
    v1::Experiment experiment;
    auto context = UnaryContext();
    grpc::Status status = Stub().GetExperiment(context.get(), request, &experiment);
    if (!status.ok()) return Fail(status);
    PrintExperiment(experiment);
    return kExitOk;
  }

  int Compare(const std::vector<std::string>& ids) {
    if (ids.size() < 2) return Usage("compare needs at least two experiment ids");
    std::vector<v1::Experiment> experiments;
    v1::ListExperimentsResponse as_list;  // -o json: the experiments, in order.
    for (const std::string& id : ids) {
      v1::GetExperimentRequest request;
      request.set_id(id);
      auto context = UnaryContext();
      grpc::Status status =
          Stub().GetExperiment(context.get(), request, &experiments.emplace_back());
      if (!status.ok()) return Fail(status);
      *as_list.add_experiments() = experiments.back();
    }
    out_ << (Json() ? ToJson(as_list, /*pretty=*/true) + "\n" : FormatComparison(experiments));
    return kExitOk;
  }

  int List(const std::string& scenario, const std::string& state) {
    v1::ListExperimentsRequest request;
    request.set_scenario(scenario);
    if (!state.empty()) {
      v1::ExperimentState parsed;
      std::string name = absl::AsciiStrToUpper(state);
      if (!absl::StartsWith(name, "EXPERIMENT_STATE_")) name = "EXPERIMENT_STATE_" + name;
      if (!v1::ExperimentState_Parse(name, &parsed) || parsed == v1::EXPERIMENT_STATE_UNSPECIFIED) {
        return Usage(absl::StrCat("unknown --state \"", state,
                                  "\": one of queued, running, succeeded, failed, cancelled"));
      }
      request.set_state(parsed);
    }
    // Every page, into one reply: the output does not change with the page size.
    v1::ListExperimentsResponse response;
    do {
      v1::ListExperimentsResponse page;
      auto context = UnaryContext();
      grpc::Status status = Stub().ListExperiments(context.get(), request, &page);
      if (!status.ok()) return Fail(status);
      for (v1::Experiment& e : *page.mutable_experiments())
        *response.add_experiments() = std::move(e);
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    out_ << (Json() ? ToJson(response, /*pretty=*/true) + "\n" : FormatExperimentList(response));
    return kExitOk;
  }

  int Watch(const std::string& id) {
    grpc::ClientContext context;
    v1::WatchExperimentRequest request;
    request.set_id(id);
    std::unique_ptr<grpc::ClientReader<v1::Experiment>> reader =
        Stub().WatchExperiment(&context, request);
    v1::Experiment experiment;
    LiveLine live(OutIsTerminal() && !Json() ? &out_ : nullptr);
    while (reader->Read(&experiment)) {
      if (live.active()) {
        live.Show(experiment);
      } else {
        out_ << (Json() ? ToJson(experiment, /*pretty=*/false) + "\n"
                        : FormatWatchLine(experiment, absl::Now()));
      }
      out_.flush();
    }
    live.End();
    grpc::Status status = reader->Finish();
    if (!status.ok()) return Fail(status);
    return kExitOk;
  }

  int Wait(const std::string& id, const std::string& until, const std::string& timeout_text) {
    absl::Duration timeout = absl::InfiniteDuration();
    if (!timeout_text.empty() &&
        (!absl::ParseDuration(timeout_text, &timeout) || timeout <= absl::ZeroDuration())) {
      return Usage(absl::StrCat("bad --timeout \"", timeout_text,
                                "\": expected a positive duration like 90s, 30m, 1h30m"));
    }
    const bool until_done = until == "done";
    auto reached = [&](const v1::Experiment& e) {
      return until_done ? IsFinal(e.state())
                        : e.progress().formal_requests_sent() > 0 || IsFinal(e.state());
    };

    grpc::ClientContext context;
    if (timeout != absl::InfiniteDuration()) {
      context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    }
    v1::WatchExperimentRequest request;
    request.set_id(id);
    std::unique_ptr<grpc::ClientReader<v1::Experiment>> reader =
        Stub().WatchExperiment(&context, request);
    v1::Experiment last;
    bool got_one = false;
    bool done = false;
    // Progress goes to stderr, so stdout keeps only the one result line.
    LiveLine live(ErrIsTerminal() ? &err_ : nullptr);
    while (reader->Read(&last)) {
      got_one = true;
      live.Show(last);
      if (reached(last)) {
        done = true;
        context.TryCancel();
        break;
      }
    }
    live.End();
    grpc::Status status = reader->Finish();
    if (!done) {
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        std::string where = got_one ? absl::StrCat(" (state ", StateLabel(last.state()), ", ",
                                                   last.progress().formal_requests_sent(), "/",
                                                   last.progress().formal_requests_planned(),
                                                   " formal requests sent)")
                                    : "";
        err_ << "error: DEADLINE_EXCEEDED: " << id << " did not reach \"" << until << "\" within "
             << absl::FormatDuration(timeout) << where << "\n";
        return kExitDeadlineExceeded;
      }
      if (!status.ok()) return Fail(status);
      err_ << "error: UNKNOWN: the watch of " << id << " ended before it reached \"" << until
           << "\"\n";
      return kExitOther;
    }
    out_ << (Json() ? ToJson(last, /*pretty=*/true) + "\n"
                    : absl::StrCat(id, " ", until, ": ", StateLabel(last.state()), ", ",
                                   last.progress().formal_requests_sent(), "/",
                                   last.progress().formal_requests_planned(),
                                   " formal requests sent\n"));
    bool succeeded = last.state() == v1::EXPERIMENT_STATE_SUCCEEDED;
    bool sent = last.progress().formal_requests_sent() > 0;
    if ((until_done && !succeeded) || (!until_done && !sent)) {
      err_ << "error: NOT_REACHED: " << id << " ended " << StateLabel(last.state())
           << (last.failure_class() != v1::FAILURE_CLASS_UNSPECIFIED
                   ? absl::StrCat(" (", v1::FailureClass_Name(last.failure_class()), ")")
                   : "")
           << (until_done ? "" : " without sending a formal request") << "\n";
      return kExitNotReached;
    }
    return kExitOk;
  }

  int Resume(const std::string& id, const DeltaArgs& delta) {
    v1::ResumeExperimentRequest request;
    request.set_id(id);
    for (const std::string& s : delta.set) request.add_set(s);
    for (const std::string& u : delta.unset) request.add_unset(u);
    request.set_base_dir(Cwd());
    v1::Experiment experiment;
    auto context = UnaryContext();
    grpc::Status status = Stub().ResumeExperiment(context.get(), request, &experiment);
    if (!status.ok()) return Fail(status);
    if (!Json()) out_ << "resumed " << experiment.id() << "\n";
    PrintExperiment(experiment);
    return kExitOk;
  }

  int Cancel(const std::string& id) {
    v1::CancelExperimentRequest request;
    request.set_id(id);
    v1::Experiment experiment;
    auto context = UnaryContext();
    grpc::Status status = Stub().CancelExperiment(context.get(), request, &experiment);
    if (!status.ok()) return Fail(status);
    if (!Json()) out_ << "cancelled " << experiment.id() << "\n";
    PrintExperiment(experiment);
    return kExitOk;
  }

  int Summary() {
    v1::Summary summary;
    auto context = UnaryContext();
    grpc::Status status = Stub().GetSummary(context.get(), v1::GetSummaryRequest(), &summary);
    if (!status.ok()) return Fail(status);
    out_ << (Json() ? ToJson(summary, /*pretty=*/true) + "\n" : FormatSummary(summary));
    return kExitOk;
  }

  int Usage(const std::string& message) {
    err_ << "error: usage: " << message << "\n";
    return kExitUsage;
  }

  CliIo Io() { return CliIo{Stub(), out_, err_, Json(), address}; }

 private:
  bool Json() const { return output == "json"; }
  // Live progress only for a person at a terminal; scripts and pipes keep
  // the line-oriented output.
  bool OutIsTerminal() const { return &out_ == &std::cout && isatty(STDOUT_FILENO) == 1; }
  bool ErrIsTerminal() const { return &err_ == &std::cerr && isatty(STDERR_FILENO) == 1; }

  v1::ServeLab::Stub& Stub() {
    if (stub_ == nullptr) {
      std::shared_ptr<grpc::ChannelCredentials> credentials =
          tls_ca_pem.empty() ? grpc::InsecureChannelCredentials()
                             : grpc::SslCredentials({.pem_root_certs = tls_ca_pem});
      stub_ = v1::ServeLab::NewStub(grpc::CreateChannel(GrpcTarget(address), credentials));
    }
    return *stub_;
  }

  static std::string Cwd() { return CurrentDir(); }

  int CheckUtf8(absl::string_view what, absl::string_view text) {
    const size_t bad = FirstInvalidUtf8(text);
    if (bad == text.size()) return kExitOk;
    return Usage(absl::StrCat(what, ": not UTF-8 text (byte ", bad, ")"));
  }

  // "-" reads stdin (relative paths then resolve against the cwd).
  int ReadSpec(const std::string& file, v1::SubmitExperimentRequest* request) {
    if (file == "-") {
      std::string text(static_cast<size_t>(kMaxSpecFileBytes) + 1, '\0');
      std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<size_t>(std::cin.gcount()));
      if (static_cast<int64_t>(text.size()) > kMaxSpecFileBytes) {
        return Usage(
            absl::StrCat("spec on stdin is over the limit of ", kMaxSpecFileBytes, " bytes"));
      }
      request->set_spec_text(std::move(text));
      request->set_base_dir(Cwd());
      request->set_spec_name("<stdin>");
      return kExitOk;
    }
    absl::StatusOr<std::string> text = ReadRegularFile(file, kMaxSpecFileBytes);
    if (!text.ok()) {
      return Usage(absl::StrCat("cannot read spec file: ", text.status().message()));
    }
    std::error_code error;
    fs::path absolute = fs::absolute(file, error).lexically_normal();
    request->set_base_dir(absolute.parent_path().string());
    request->set_spec_name(file);
    request->set_spec_text(*std::move(text));
    return kExitOk;
  }

  void PrintExperiment(const v1::Experiment& experiment) {
    out_ << (Json() ? ToJson(experiment, /*pretty=*/true) + "\n"
                    : FormatExperiment(experiment, absl::Now()));
  }

  int Fail(const grpc::Status& status) { return FailRpc(Io(), status); }

  std::ostream& out_;
  std::ostream& err_;
  std::unique_ptr<v1::ServeLab::Stub> stub_;
};

void AddDeltaOptions(CLI::App* command, DeltaArgs* delta) {
  command
      ->add_option("--set", delta->set,
                   "PATH=VALUE, repeatable, applied in order (workload.concurrency=96, "
                   "limits.formal_deadline=30m, labels.owner=me, "
                   "deployment.decode.extra_args+=--x)")
      ->allow_extra_args(false);
  command->add_option("--unset", delta->unset, "PATH to reset to its default, repeatable")
      ->allow_extra_args(false);
}

void AddSubmitOptions(CLI::App* command, SubmitArgs* args) {
  command->add_option("-f,--file", args->file,
                      "Spec file, YAML or JSON with the proto field names (- for stdin); "
                      "relative paths in it resolve against its directory");
  command->add_option("--base", args->base,
                      "Experiment id whose frozen spec the delta applies to "
                      "(relative paths resolve against the current directory)");
  AddDeltaOptions(command, &args->delta);
}

}  // namespace

std::unique_ptr<grpc::ClientContext> UnaryContext() {
  // Unary calls are short; a wedged daemon should not hang a script forever.
  constexpr absl::Duration kUnaryDeadline = absl::Seconds(30);
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + kUnaryDeadline));
  return context;
}

int FailRpc(const CliIo& io, const grpc::Status& status) {
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      !absl::StartsWith(message, "servelabd")) {
    message = absl::StrCat("cannot reach servelabd at ", io.address,
                           " (is it running? start it with `servelabd --state-dir DIR`; "
                           "see --help for how the address is chosen): ",
                           message);
  }
  io.err << "error: " << StatusCodeName(status.error_code()) << ": " << message << "\n";
  return ExitCodeFor(status.error_code());
}

int FailUsage(const CliIo& io, const std::string& message) {
  io.err << "error: usage: " << message << "\n";
  return kExitUsage;
}

std::string CurrentDir() {
  std::error_code error;
  fs::path cwd = fs::current_path(error);
  return error ? "" : cwd.string();
}

std::string DefaultAddress() {
  if (const char* addr = std::getenv("SERVELAB_ADDR"); addr != nullptr && *addr != '\0') {
    return addr;
  }
  if (const char* dir = std::getenv("SERVELAB_STATE_DIR"); dir != nullptr && *dir != '\0') {
    return absl::StrCat("unix:", dir, "/servelab.sock");
  }
  return "unix:./.state/servelab.sock";
}

std::string GrpcTarget(const std::string& address) {
  if (absl::StartsWith(address, "tcp:")) return address.substr(4);
  return address;
}

// What the subcommands parse into; outlives the parse and the run.
struct CommandArgs {
  SubmitArgs submit_args;
  SubmitArgs plan_args;
  std::string id;
  std::string scenario;
  std::string state;
  std::string until;
  std::string timeout;
  DeltaArgs resume_delta;
  std::vector<std::string> ids;
  std::string side = "all";
  ImportArgs import;
  std::string html;
};

// submit, plan, status, list: commands that create or read experiments.
void AddExperimentCommands(CLI::App& app, Cli& cli, CommandArgs& args, std::function<int()>& run) {
  CLI::App* submit = app.add_subcommand(
      "submit",
      "Freeze a spec (-f FILE) or a delta on an experiment (--base ID --set ...) and "
      "queue it");
  AddSubmitOptions(submit, &args.submit_args);
  submit->callback(
      [&] { run = [&] { return cli.Submit(args.submit_args, /*validate_only=*/false); }; });

  CLI::App* plan = app.add_subcommand(
      "plan",
      "Like submit, but only freeze and plan: show the frozen spec, changes and plan; "
      "store nothing");
  AddSubmitOptions(plan, &args.plan_args);
  plan->callback([&] { run = [&] { return cli.Submit(args.plan_args, /*validate_only=*/true); }; });

  CLI::App* status = app.add_subcommand(
      "status", "State, current stage, formal requests sent/planned, blocker, changes, plan");
  status->add_option("id", args.id, "Experiment id")->required();
  status->callback([&] { run = [&] { return cli.Status(args.id); }; });

  CLI::App* list = app.add_subcommand("list", "One line per experiment, oldest first");
  list->add_option("--scenario", args.scenario, "Only this scenario");
  list->add_option("--state", args.state,
                   "Only this state: queued, running, succeeded, failed, "
                   "cancelled");
  list->callback([&] { run = [&] { return cli.List(args.scenario, args.state); }; });

  CLI::App* compare = app.add_subcommand(
      "compare",
      "Side by side: state, the frozen-spec fields that differ from the first experiment's, "
      "and the results of both windows with each decision");
  compare->add_option("ids", args.ids, "Two or more experiment ids; the first is the reference")
      ->required();
  compare->callback([&] { run = [&] { return cli.Compare(args.ids); }; });

  CLI::App* watch = app.add_subcommand(
      "watch",
      "Print every change of state, stage or progress until the experiment is final "
      "(-o json: one JSON object per line)");
  watch->add_option("id", args.id, "Experiment id")->required();
  watch->callback([&] { run = [&] { return cli.Watch(args.id); }; });
}

// watch, wait, resume, cancel, summary: commands that follow or steer them.
void AddFollowCommands(CLI::App& app, Cli& cli, CommandArgs& args, std::function<int()>& run) {
  CLI::App* wait = app.add_subcommand(
      "wait",
      "Block until the experiment's formal load was sent (sent: a formal request went "
      "out, or it is final) or it is final (done); no polling. Exit 0 when reached, 7 on "
      "--timeout, 8 when it ended without reaching it (done: not SUCCEEDED)");
  wait->add_option("id", args.id, "Experiment id")->required();
  wait->add_option("--until", args.until, "sent or done")
      ->required()
      ->check(CLI::IsMember({"sent", "done"}));
  wait->add_option("--timeout", args.timeout,
                   "Give up after this long, e.g. 90s, 30m (default: never)");
  wait->callback([&] { run = [&] { return cli.Wait(args.id, args.until, args.timeout); }; });

  CLI::App* resume = app.add_subcommand(
      "resume",
      "Resume a failed experiment as its failure class says; a delta may change only "
      "fields of scope NOTHING or ANALYSIS (e.g. limits.formal_deadline)");
  resume->add_option("id", args.id, "Experiment id")->required();
  AddDeltaOptions(resume, &args.resume_delta);
  resume->callback([&] { run = [&] { return cli.Resume(args.id, args.resume_delta); }; });

  CLI::App* cancel = app.add_subcommand("cancel", "Cancel a queued or running experiment");
  cancel->add_option("id", args.id, "Experiment id")->required();
  cancel->callback([&] { run = [&] { return cli.Cancel(args.id); }; });

  CLI::App* summary = app.add_subcommand(
      "summary",
      "The handoff: daemon state, lane, queue, hot deployment, best per scenario, "
      "recent failures, next step");
  summary->callback([&] { run = [&] { return cli.Summary(); }; });

  CLI::App* release = app.add_subcommand(
      "release",
      "Stop the hot deployment (or one side) through the lane, never during a load, and "
      "free its devices; the next experiment launches what it needs");
  release->add_option("--side", args.side, "prefill, decode, router or all (default)")
      ->check(CLI::IsMember({"prefill", "decode", "router", "all"}));
  release->callback([&] { run = [&] { return ReleaseCommand(cli.Io(), args.side); }; });
}

// import, report: raw records in from another tool, out as a report.
void AddRecordCommands(CLI::App& app, Cli& cli, CommandArgs& args, std::function<int()>& run) {
  CLI::App* import = app.add_subcommand(
      "import",
      "Store a run measured by another load generator (vllm: `vllm bench serve "
      "--save-result --save-detailed` JSON; aisbench: <dataset>_details.jsonl with its "
      "db_data/) as an experiment marked external, and analyze it like any other");
  import->add_option("--tool", args.import.tool, "vllm or aisbench")->required();
  import->add_option("file", args.import.file, "The tool's result file")->required();
  import->add_option("--spec", args.import.spec_file,
                     "Spec describing the measured deployment (scenario, devices, analysis)");
  import->add_option("--base", args.import.base, "Or an experiment whose spec describes it");
  import->add_option("--set", args.import.set, "PATH=VALUE applied to that spec, repeatable")
      ->allow_extra_args(false);
  import->callback([&] { run = [&] { return ImportCommand(cli.Io(), args.import);
};
}  // namespace servelab::client
);

CLI::App* report = app.add_subcommand(
    "report",
    "Write one self-contained HTML file: stage timeline, latency CDFs and in-flight "
    "requests against the baseline, throughput per device, decision, launch commands");
report->add_option("id", args.id, "Experiment id")->required();
report->add_option("--html", args.html, "Output file")->required();
report->callback([&] { run = [&] { return ReportCommand(cli.Io(), args.id, args.html); }; });
}

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Cli cli(out, err);
  CLI::App app{
      "servelab: the CLI of servelabd, which runs LLM-serving performance experiments.\n"
      "Submit a spec (or a delta on an earlier experiment), then follow it with status,\n"
      "watch or wait. The daemon validates specs and names the field at fault."};
  app.footer(absl::StrCat("\n", kAddressHelp, "\n", kExitCodeTable,
                          "\nErrors go to stderr as `error: <GRPC_CODE>: <message>`."));
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--addr", cli.address, "Daemon address (see below)");
  std::string tls_ca;
  app.add_option("--tls-ca", tls_ca, "PEM CA certificate: talk TLS to a servelabd with --tls-cert");
  app.add_option("-o,--output", cli.output, "Output format: text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));

  std::function<int()> run;
  CommandArgs args;
  AddExperimentCommands(app, cli, args, run);
  AddFollowCommands(app, cli, args, run);
  AddRecordCommands(app, cli, args, run);

  for (CLI::App* command : app.get_subcommands({})) {
    command->footer(absl::StrCat("\n", kExitCodeTable));
  }

  // Every string the CLI sends is a proto3 string, which must be UTF-8.
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg(argv[i]);
    if (FirstInvalidUtf8(arg) != arg.size()) {
      err << "error: usage: argument " << i << " is not UTF-8 text (byte " << FirstInvalidUtf8(arg)
          << ")\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err) == 0 ? kExitOk : kExitUsage;  // --help
    // The same `error: CODE: message` form as every other error.
    err << "error: usage: " << e.what() << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  if (cli.address.empty()) cli.address = DefaultAddress();
  if (const char* env = std::getenv("SERVELAB_TLS_CA"); tls_ca.empty() && env != nullptr) {
    tls_ca = env;
  }
  if (!tls_ca.empty()) {
    absl::StatusOr<std::string> pem = ReadPemFile(tls_ca);
    if (!pem.ok()) {
      err << "error: usage: --tls-ca " << pem.status().message() << "\n";
      return kExitUsage;
    }
    cli.tls_ca_pem = *std::move(pem);
  }
  return run ? run() : kExitUsage;
}

}  // namespace servelab::client
