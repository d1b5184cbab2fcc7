// ControlPlane's use cases around raw records: importing another tool's
// measurements as an experiment, and reading stored records back
// (docs/design.md §11 "Imported runs", §12 "Report").
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/core/control_plane.h"
#include "daemon/core/experiment_draft.h"
#include "daemon/core/planner.h"
#include "daemon/core/spec/freeze.h"
#include "daemon/core/spec/scope.h"

namespace servelab::core {
namespace {

// More records than any real benchmark run; keeps one request bounded.
constexpr int kMaxImportedRecords = 1'000'000;

absl::Status RecordError(int i, const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("records[", i, "].", field, ": ", what));
}

// One record's times must describe a request that could have happened.
absl::Status CheckTimes(const v1::RequestRecord& r, int i) {
  if (r.sent_ns() < 0) return RecordError(i, "sent_ns", "must not be negative");
  if (r.end_ns() < r.sent_ns()) return RecordError(i, "end_ns", "is before sent_ns");
  if (!r.error().empty()) return absl::OkStatus();
  if (r.first_token_ns() < r.sent_ns()) {
    return RecordError(i, "first_token_ns", "is before sent_ns (a successful request needs one)");
  }
  if (r.end_ns() < r.first_token_ns()) return RecordError(i, "end_ns", "is before first_token_ns");
  int64_t previous = r.first_token_ns();
  for (int c = 0; c < r.chunk_ns_size(); ++c) {
    if (r.chunk_ns(c) < previous || r.chunk_ns(c) > r.end_ns()) {
      return RecordError(i, absl::StrCat("chunk_ns[", c, "]"),
                         "must be non-decreasing and within first_token_ns..end_ns");
    }
    previous = r.chunk_ns(c);
  }
  return absl::OkStatus();
}

// Normalizes what the request may leave unset and refuses the rest.
absl::Status CheckRecord(v1::RequestRecord& r, int i, std::set<std::pair<int, int>>& seen) {
  if (r.phase() != v1::PHASE_UNSPECIFIED && r.phase() != v1::PHASE_FORMAL) {
    return RecordError(i, "phase", "an imported run is a formal load: PHASE_FORMAL or unset");
  }
  if (r.attempt() != 0 && r.attempt() != 1) return RecordError(i, "attempt", "must be 1 or unset");
  if (r.repeat() < 0) return RecordError(i, "repeat", "must not be negative");
  if (r.request_index() < 0) return RecordError(i, "request_index", "must not be negative");
  if (r.prompt_tokens() < 0) return RecordError(i, "prompt_tokens", "must not be negative");
  if (r.completion_tokens() < 0) return RecordError(i, "completion_tokens", "must not be negative");
  r.set_phase(v1::PHASE_FORMAL);
  r.set_attempt(1);
  r.set_repeat(std::max(1, r.repeat()));
  if (!seen.emplace(r.repeat(), r.request_index()).second) {
    return RecordError(i, "request_index",
                       absl::StrCat(r.request_index(), " appears twice in repeat ", r.repeat()));
  }
  return CheckTimes(r, i);
}

absl::Status CheckSource(const v1::ExternalSource& source) {
  if (source.tool().empty()) {
    return absl::InvalidArgumentError("external.tool: must name the tool that measured the run");
  }
  for (const std::string* text : {&source.tool(), &source.tool_version(), &source.file_name()}) {
    if (text->size() > 256) {
      return absl::InvalidArgumentError(
          "external: tool, tool_version and file_name are at most "
          "256 characters");
    }
    for (char c : *text) {
      if (absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
        return absl::InvalidArgumentError(
            "external: tool, tool_version and file_name must not contain control characters");
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::RequestRecord>> CheckedRecords(
    const v1::ImportExperimentRequest& request) {
  SERVELAB_RETURN_IF_ERROR(CheckSource(request.external()));
  if (request.records().empty()) {
    return absl::InvalidArgumentError("records: an import needs at least one request record");
  }
  if (request.records_size() > kMaxImportedRecords) {
    return absl::InvalidArgumentError(
        absl::StrCat("records: at most ", kMaxImportedRecords, " per import"));
  }
  std::vector<v1::RequestRecord> records(request.records().begin(), request.records().end());
  std::set<std::pair<int, int>> seen;
  for (int i = 0; i < static_cast<int>(records.size()); ++i) {
    SERVELAB_RETURN_IF_ERROR(CheckRecord(records[i], i, seen));
  }
  return records;
}

// The spec half of an import, as the submit it resembles names it.
v1::SubmitExperimentRequest SpecSource(const v1::ImportExperimentRequest& request) {
  v1::SubmitExperimentRequest source;
  if (request.has_spec_text()) source.set_spec_text(request.spec_text());
  if (request.has_base_id()) source.set_base_id(request.base_id());
  *source.mutable_set() = request.set();
  *source.mutable_unset() = request.unset();
  source.set_base_dir(request.base_dir());
  source.set_spec_name(request.spec_name());
  return source;
}

}  // namespace

absl::StatusOr<v1::Experiment> ControlPlane::Import(const v1::ImportExperimentRequest& request) {
  const absl::Time received = clock_.Now();
  SERVELAB_RETURN_IF_ERROR(CheckAcceptingWork());
  SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::RequestRecord> records, CheckedRecords(request));
  const v1::SubmitExperimentRequest source = SpecSource(request);
  v1::ExperimentSpec spec;
  std::optional<v1::Experiment> base;
  SERVELAB_RETURN_IF_ERROR(ReadSource(source, spec, base));
  SERVELAB_RETURN_IF_ERROR(ApplyDelta(spec, source.unset(), source.set()));
  SERVELAB_ASSIGN_OR_RETURN(spec::FrozenSpec frozen, spec::Freeze(spec, source.base_dir()));

  v1::Experiment experiment;
  if (base.has_value()) {
    experiment.set_base_id(base->id());
    for (const v1::FieldChange& change : spec::DiffSpecs(base->spec(), frozen.spec)) {
      *experiment.add_changes() = change;
    }
  }
  *experiment.mutable_external() = request.external();
  *experiment.mutable_plan() =
      MakePlan({.spec = frozen.spec, .imported = ImportedSource{request.external().tool()}});
  *experiment.mutable_spec() = frozen.spec;
  experiment.set_spec_sha256(frozen.sha256);
  experiment.set_state(v1::EXPERIMENT_STATE_QUEUED);
  experiment.set_blocker(QueuedBlocker());
  const absl::Time frozen_at = clock_.Now();
  *experiment.mutable_submitted_at() = ToTimestamp(received);
  *experiment.mutable_updated_at() = ToTimestamp(frozen_at);
  AddStageRows(experiment, received, frozen_at);
  const std::string tool = request.external().tool();
  EventText event{.kind = "imported",
                  .detail = absl::StrCat(records.size(), " records measured by ", tool,
                                         request.external().tool_version().empty() ? "" : " ",
                                         request.external().tool_version(), "; frozen spec ",
                                         ShortHash(frozen.sha256))};
  SERVELAB_ASSIGN_OR_RETURN(v1::Experiment created,
                            ledger_.Create(std::move(experiment), event, records));
  if (executor_ != nullptr) executor_->Enqueue(created.id());
  return created;
}

absl::StatusOr<std::vector<v1::RequestRecord>> ControlPlane::ListRecords(
    const v1::ListRequestRecordsRequest& request) {
  SERVELAB_ASSIGN_OR_RETURN(v1::Experiment experiment, Get(request.id()));
  if (request.attempt() < 0) {
    return absl::InvalidArgumentError("attempt: must be 0 (every attempt) or a positive attempt");
  }
  v1::Phase phase = request.phase();
  if (phase == v1::PHASE_UNSPECIFIED) {
    phase = experiment.result().analyzed_phase() != v1::PHASE_UNSPECIFIED
                ? experiment.result().analyzed_phase()
                : v1::PHASE_FORMAL;
  }
  const std::string& source = experiment.plan().raw_records_from().empty()
                                  ? experiment.id()
                                  : experiment.plan().raw_records_from();
  return store_.ListRequests(source, phase, request.attempt());
}

absl::StatusOr<v1::ReleaseDeploymentResponse> ControlPlane::Release(v1::Side side) {
  if (executor_ == nullptr) {
    return absl::FailedPreconditionError("this daemon has no stage runner: nothing runs");
  }
  return executor_->Release(side);
}

}  // namespace servelab::core
