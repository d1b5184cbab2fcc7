// `servelab import` and `servelab report`: the commands that move raw
// records in and out of the daemon (docs/design.md §11 "Imported runs", §12 "Report").
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cli_io.h"
#include "client/exit_codes.h"
#include "client/import/import_file.h"
#include "client/output.h"
#include "client/report/html_report.h"
#include "common/atomic_file.h"
#include "common/regular_file.h"

namespace servelab::client {
namespace {

namespace fs = std::filesystem;

grpc::Status ReadRecords(const CliIo& io, const std::string& id,
                         std::vector<v1::RequestRecord>& records) {
  grpc::ClientContext context;
  v1::ListRequestRecordsRequest request;
  request.set_id(id);
  std::unique_ptr<grpc::ClientReader<v1::RequestRecord>> reader =
      io.stub.ListRequestRecords(&context, request);
  v1::RequestRecord record;
  while (reader->Read(&record)) records.push_back(record);
  return reader->Finish();
}

grpc::Status GetExperiment(const CliIo& io, const std::string& id, v1::Experiment& experiment) {
  v1::GetExperimentRequest request;
  request.set_id(id);
  auto context = UnaryContext();
  return io.stub.GetExperiment(context.get(), request, &experiment);
}

// Only the last attempt is what the result describes.
void KeepLastAttempt(std::vector<v1::RequestRecord>& records) {
  int last = 0;
  for (const v1::RequestRecord& r : records) last = std::max(last, r.attempt());
  std::erase_if(records, [&](const v1::RequestRecord& r) { return r.attempt() != last; });
}

}  // namespace

int ImportCommand(const CliIo& io, const ImportArgs& args) {
  absl::StatusOr<import::Tool> tool = import::ParseToolName(args.tool);
  if (!tool.ok()) return FailUsage(io, std::string(tool.status().message()));
  if (args.spec_file.empty() == args.base.empty()) {
    return FailUsage(io,
                     "give either --spec FILE or --base ID: it describes the deployment "
                     "the run was measured on (scenario, devices, analysis)");
  }
  absl::StatusOr<import::ImportedRun> run = import::ImportResultFile(*tool, args.file);
  if (!run.ok()) {
    io.err << "error: INVALID_ARGUMENT: " << run.status().message() << "\n";
    return kExitInvalidArgument;
  }
  v1::ImportExperimentRequest request;
  if (!args.spec_file.empty()) {
    absl::StatusOr<std::string> text = ReadRegularFile(args.spec_file, kMaxSpecFileBytes);
    if (!text.ok()) {
      return FailUsage(io, absl::StrCat("cannot read spec file: ", text.status().message()));
    }
    std::error_code error;
    request.set_spec_text(*std::move(text));
    request.set_spec_name(args.spec_file);
    request.set_base_dir(fs::absolute(args.spec_file, error).parent_path().string());
  } else {
    request.set_base_id(args.base);
    request.set_base_dir(CurrentDir());
  }
  for (const std::string& s : args.set) request.add_set(s);
  *request.mutable_external() = run->source;
  for (v1::RequestRecord& r : run->records) *request.add_records() = std::move(r);
  v1::Experiment experiment;
  auto context = UnaryContext();
  grpc::Status status = io.stub.ImportExperiment(context.get(), request, &experiment);
  if (!status.ok()) return FailRpc(io, status);
  if (io.json) {
    io.out << ToJson(experiment, /*pretty=*/true) << "\n";
  } else {
    io.out << "imported " << experiment.id() << " (" << request.records_size() << " records from "
           << run->source.tool() << ")\n"
           << FormatExperiment(experiment, absl::Now());
  }
  return kExitOk;
}

int ReportCommand(const CliIo& io, const std::string& id, const std::string& html_file) {
  if (html_file.empty()) return FailUsage(io, "give --html FILE: where to write the report");
  report::ReportInput input;
  if (grpc::Status s = GetExperiment(io, id, input.experiment); !s.ok()) return FailRpc(io, s);
  if (grpc::Status s = ReadRecords(io, id, input.records); !s.ok()) return FailRpc(io, s);
  KeepLastAttempt(input.records);
  const std::string& baseline = input.experiment.result().decision().baseline_experiment_id();
  if (!baseline.empty()) {
    v1::Experiment b;
    if (grpc::Status s = GetExperiment(io, baseline, b); !s.ok()) return FailRpc(io, s);
    if (grpc::Status s = ReadRecords(io, baseline, input.baseline_records); !s.ok()) {
      return FailRpc(io, s);
    }
    KeepLastAttempt(input.baseline_records);
    input.baseline = std::move(b);
  }
  input.generated_at = absl::Now();
  if (absl::Status written = WriteFileAtomically(html_file, report::RenderHtmlReport(input));
      !written.ok()) {
    return FailUsage(io, std::string(written.message()));
  }
  io.out << "wrote " << html_file << " (" << id << ", " << input.records.size() << " records"
         << (baseline.empty() ? "" : absl::StrCat(", baseline ", baseline)) << ")\n";
  return kExitOk;
}

}  // namespace servelab::client
