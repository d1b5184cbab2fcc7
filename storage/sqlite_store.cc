#include "storage/sqlite_store.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/json_util.h"
#include "storage/migrations.h"
#include "storage/request_rows.h"
#include "storage/sqlite_db.h"

namespace servelab::storage {
namespace {

using google::protobuf::Timestamp;

// An ordered write commits without an fsync; the next synced one (or a
// checkpoint) takes it to the disk, in order (core/store.h).
CommitSync ToCommitSync(core::Durability durability) {
  return durability == core::Durability::kOrdered ? CommitSync::kNormal : CommitSync::kFull;
}

// NULL keeps "unset" distinct from the epoch, so messages round-trip exactly.
void BindTime(Statement& stmt, int index, bool has, const Timestamp& ts) {
  if (has) {
    stmt.BindInt(index, ToUnixNanos(ts));
  } else {
    stmt.BindNull(index);
  }
}

void BindOptionalText(Statement& stmt, int index, std::string_view text) {
  if (text.empty()) {
    stmt.BindNull(index);
  } else {
    stmt.BindText(index, text);
  }
}

template <typename Message>
absl::Status ParseBlob(std::string_view blob, Message& message, std::string_view what) {
  if (!message.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
    return absl::InternalError(absl::StrCat("corrupt ", ToAbsl(what), " row in the database"));
  }
  return absl::OkStatus();
}

// Stores the experiment's spec under its hash. Specs are immutable, so an
// existing row is never touched (and the JSON is only rendered for a spec
// the store has not seen).
absl::Status PutSpec(SqliteDb& db, const v1::Experiment& experiment) {
  SERVELAB_ASSIGN_OR_RETURN(Statement exists, db.Prepare("SELECT 1 FROM specs WHERE sha256 = ?1"));
  exists.BindText(1, experiment.spec_sha256());
  SERVELAB_ASSIGN_OR_RETURN(bool known, exists.Step());
  if (known) return absl::OkStatus();
  std::string json;
  google::protobuf::util::JsonPrintOptions json_options;
  json_options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(experiment.spec(), &json, json_options).ok()) {
    return absl::InternalError(
        absl::StrCat("cannot render the spec of ", ToAbsl(experiment.id()), " as JSON"));
  }
  SERVELAB_ASSIGN_OR_RETURN(Statement put,
                            db.Prepare("INSERT OR IGNORE INTO specs (sha256, canonical_json, spec) "
                                       "VALUES (?1, ?2, ?3)"));
  put.BindText(1, experiment.spec_sha256());
  put.BindText(2, json);
  put.BindBlob(3, experiment.spec().SerializeAsString());
  return put.Run();
}

// The experiments row: the experiment without the parts that have tables
// of their own (spec, stages, result).
absl::Status WriteExperimentRow(SqliteDb& db, const v1::Experiment& experiment, int64_t seq,
                                bool insert) {
  v1::Experiment row = experiment;
  row.clear_spec();
  row.clear_stages();
  row.clear_result();
  SERVELAB_ASSIGN_OR_RETURN(
      Statement write,
      db.Prepare(insert ? "INSERT INTO experiments (id, seq, base_id, scenario, state, "
                          "spec_sha256, submitted_at, updated_at, failure_class, experiment) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
                        // ?2 (seq) is bound but unused: an experiment keeps its place.
                        : "UPDATE experiments SET base_id = ?3, scenario = ?4, state = ?5, "
                          "spec_sha256 = ?6, submitted_at = ?7, updated_at = ?8, "
                          "failure_class = ?9, experiment = ?10 WHERE id = ?1"));
  write.BindText(1, experiment.id());
  write.BindInt(2, seq);
  BindOptionalText(write, 3, experiment.base_id());
  write.BindText(4, experiment.spec().scenario());
  write.BindInt(5, experiment.state());
  write.BindText(6, experiment.spec_sha256());
  BindTime(write, 7, experiment.has_submitted_at(), experiment.submitted_at());
  BindTime(write, 8, experiment.has_updated_at(), experiment.updated_at());
  write.BindInt(9, experiment.failure_class());
  write.BindBlob(10, row.SerializeAsString());
  return write.Run();
}

// The bytes a row compares by. Deterministic, so that an unchanged stage
// (whose counters map may iterate in another order) serializes the same.
std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream out(&bytes);
  google::protobuf::io::CodedOutputStream coded(&out);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

// Writes the stage rows of `experiment`, touching only those that changed: a
// stage transition rewrites one or two of the 13 rows, not all of them, and
// an ended stage keeps its stages_by_outcome entry where it is. Each row
// rewritten whole dirtied its own index leaf page once the history had grown
// (issue 9, P1; docs/design.md §12). Rows past the last stage go.
absl::Status WriteStages(SqliteDb& db, const v1::Experiment& experiment) {
  SERVELAB_ASSIGN_OR_RETURN(
      Statement stage_row,
      db.Prepare("INSERT INTO stages (experiment_id, position, name, attempt, action, status, "
                 "started_at, ended_at, stage) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
                 "ON CONFLICT (experiment_id, position) DO UPDATE SET name = excluded.name, "
                 "attempt = excluded.attempt, action = excluded.action, "
                 "status = excluded.status, started_at = excluded.started_at, "
                 "ended_at = excluded.ended_at, stage = excluded.stage "
                 // Every column is a field of the blob: an equal blob is an equal row.
                 "WHERE stage IS NOT excluded.stage"));
  for (int i = 0; i < experiment.stages_size(); ++i) {
    const v1::Stage& stage = experiment.stages(i);
    stage_row.Reset();
    stage_row.BindText(1, experiment.id());
    stage_row.BindInt(2, i);
    stage_row.BindInt(3, stage.name());
    stage_row.BindInt(4, stage.attempt());
    stage_row.BindInt(5, stage.action());
    stage_row.BindInt(6, stage.status());
    BindTime(stage_row, 7, stage.has_started_at(), stage.started_at());
    BindTime(stage_row, 8, stage.has_ended_at(), stage.ended_at());
    stage_row.BindBlob(9, DeterministicBytes(stage));
    SERVELAB_RETURN_IF_ERROR(stage_row.Run());
  }
  SERVELAB_ASSIGN_OR_RETURN(
      Statement trailing,
      db.Prepare("DELETE FROM stages WHERE experiment_id = ?1 AND position >= ?2"));
  trailing.BindText(1, experiment.id());
  trailing.BindInt(2, experiment.stages_size());
  return trailing.Run();
}

// Writes the result row of `experiment`, or deletes it when it has none; an
// unchanged result is not rewritten.
absl::Status WriteResult(SqliteDb& db, const v1::Experiment& experiment) {
  if (!experiment.has_result()) {
    SERVELAB_ASSIGN_OR_RETURN(Statement clear,
                              db.Prepare("DELETE FROM results WHERE experiment_id = ?1"));
    clear.BindText(1, experiment.id());
    return clear.Run();
  }
  SERVELAB_ASSIGN_OR_RETURN(
      Statement result,
      db.Prepare("INSERT INTO results (experiment_id, result, computed_at) VALUES (?1, ?2, ?3) "
                 "ON CONFLICT (experiment_id) DO UPDATE SET result = excluded.result, "
                 "computed_at = excluded.computed_at "
                 "WHERE result IS NOT excluded.result OR computed_at IS NOT excluded.computed_at"));
  result.BindText(1, experiment.id());
  result.BindBlob(2, DeterministicBytes(experiment.result()));
  BindTime(result, 3, experiment.result().has_computed_at(), experiment.result().computed_at());
  return result.Run();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  return Open(path, Options());
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               const Options& options) {
  SqliteDb::Options db_options;
  db_options.busy_timeout = options.busy_timeout;
  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, db_options));
  SERVELAB_RETURN_IF_ERROR(Migrate(*db));
  db_options.read_only = true;
  SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> reader, SqliteDb::Open(path, db_options));
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(db), std::move(reader)));
}

SqliteStore::SqliteStore(std::unique_ptr<SqliteDb> db, std::unique_ptr<SqliteDb> reader)
    : db_(std::move(db)), reader_(std::move(reader)) {}

SqliteStore::~SqliteStore() = default;

void SqliteStore::SetFailpointForTesting(Failpoint failpoint) {
  absl::MutexLock lock(&mu_);
  failpoint_ = std::move(failpoint);
}

absl::Status SqliteStore::RunFailpointLocked(std::string_view point) {
  return failpoint_ ? failpoint_(point) : absl::OkStatus();
}

absl::StatusOr<bool> SqliteStore::ExperimentExistsLocked(std::string_view id) {
  SERVELAB_ASSIGN_OR_RETURN(Statement stmt,
                            db_->Prepare("SELECT 1 FROM experiments WHERE id = ?1"));
  stmt.BindText(1, id);
  return stmt.Step();
}

absl::Status SqliteStore::WriteExperimentLocked(const v1::Experiment& experiment, int64_t seq,
                                                bool insert) {
  SERVELAB_RETURN_IF_ERROR(PutSpec(*db_, experiment));
  SERVELAB_RETURN_IF_ERROR(WriteExperimentRow(*db_, experiment, seq, insert));
  SERVELAB_RETURN_IF_ERROR(WriteStages(*db_, experiment));
  return WriteResult(*db_, experiment);
}

absl::Status SqliteStore::AppendEventLocked(std::string_view experiment_id,
                                            const core::Event& event) {
  SERVELAB_ASSIGN_OR_RETURN(
      Statement insert,
      db_->Prepare("INSERT INTO events (experiment_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)"));
  insert.BindText(1, experiment_id);
  insert.BindInt(2, absl::ToUnixNanos(event.at));
  insert.BindText(3, event.kind);
  insert.BindText(4, event.detail);
  return insert.Run();
}

absl::StatusOr<std::string> SqliteStore::CreateExperiment(const v1::Experiment& experiment,
                                                          const core::Event& event) {
  return CreateExperimentWithRecords(experiment, event, {});
}

absl::StatusOr<std::string> SqliteStore::CreateExperimentWithRecords(
    const v1::Experiment& experiment, const core::Event& event,
    const std::vector<v1::RequestRecord>& records) {
  if (experiment.spec_sha256().empty()) {
    return absl::InvalidArgumentError("experiment has no spec_sha256: freeze the spec first");
  }
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kImmediate));
  SERVELAB_ASSIGN_OR_RETURN(std::string id, CreateLocked(experiment, event));
  if (!records.empty()) {
    SERVELAB_ASSIGN_OR_RETURN(Statement insert, db_->Prepare(InsertRequestSql()));
    for (const v1::RequestRecord& record : records) {
      v1::RequestRecord own = record;
      own.set_experiment_id(id);
      insert.Reset();
      BindRequestRow(own, insert);
      absl::Status status = insert.Run();
      if (absl::IsAlreadyExists(status)) {
        return absl::AlreadyExistsError(absl::StrCat(
            "records[", &record - records.data(), "]: (", v1::Phase_Name(record.phase()),
            ", attempt ", record.attempt(), ", repeat ", record.repeat(), ", index ",
            record.request_index(), ") appears twice; nothing was stored"));
      }
      SERVELAB_RETURN_IF_ERROR(status);
    }
  }
  SERVELAB_RETURN_IF_ERROR(txn.Commit());
  return id;
}

absl::StatusOr<std::string> SqliteStore::CreateLocked(const v1::Experiment& experiment,
                                                      const core::Event& event) {
  if (!experiment.base_id().empty()) {
    SERVELAB_ASSIGN_OR_RETURN(bool base_exists, ExperimentExistsLocked(experiment.base_id()));
    if (!base_exists) {
      return absl::NotFoundError(
          absl::StrCat("base experiment ", experiment.base_id(), " not found"));
    }
  }
  int64_t seq = 0;
  {
    SERVELAB_ASSIGN_OR_RETURN(
        Statement next,
        db_->Prepare("UPDATE sequences SET value = value + 1 WHERE name = 'experiment' "
                     "RETURNING value"));
    SERVELAB_ASSIGN_OR_RETURN(bool row, next.Step());
    if (!row) return absl::InternalError("the experiment id sequence row is missing");
    seq = next.ColumnInt(0);
  }
  v1::Experiment stored = experiment;
  stored.set_id(absl::StrCat("exp-", seq));
  SERVELAB_RETURN_IF_ERROR(WriteExperimentLocked(stored, seq, /*insert=*/true));
  SERVELAB_RETURN_IF_ERROR(RunFailpointLocked("create"));
  SERVELAB_RETURN_IF_ERROR(AppendEventLocked(stored.id(), event));
  return stored.id();
}

absl::Status SqliteStore::UpdateExperiment(const v1::Experiment& experiment,
                                           const core::Event& event) {
  if (experiment.spec_sha256().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("experiment ", experiment.id(), " has no spec_sha256"));
  }
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kImmediate,
                                                                ToCommitSync(event.durability)));
  int64_t seq = 0;
  {
    SERVELAB_ASSIGN_OR_RETURN(Statement find,
                              db_->Prepare("SELECT seq FROM experiments WHERE id = ?1"));
    find.BindText(1, experiment.id());
    SERVELAB_ASSIGN_OR_RETURN(bool found, find.Step());
    if (!found)
      return absl::NotFoundError(absl::StrCat("experiment ", experiment.id(), " not found"));
    seq = find.ColumnInt(0);
  }
  SERVELAB_RETURN_IF_ERROR(WriteExperimentLocked(experiment, seq, /*insert=*/false));
  SERVELAB_RETURN_IF_ERROR(RunFailpointLocked("update"));
  SERVELAB_RETURN_IF_ERROR(AppendEventLocked(experiment.id(), event));
  return txn.Commit();
}

namespace {

// Reassembles an experiment from its row blob and the specs, stages and
// results tables, inside the caller's read transaction on `db`.
absl::StatusOr<v1::Experiment> Assemble(SqliteDb& db, std::string_view id, std::string_view blob,
                                        std::string_view spec_sha256) {
  v1::Experiment experiment;
  SERVELAB_RETURN_IF_ERROR(ParseBlob(blob, experiment, absl::StrCat("experiment ", ToAbsl(id))));
  {
    SERVELAB_ASSIGN_OR_RETURN(Statement spec,
                              db.Prepare("SELECT spec FROM specs WHERE sha256 = ?1"));
    spec.BindText(1, spec_sha256);
    SERVELAB_ASSIGN_OR_RETURN(bool found, spec.Step());
    // The foreign key makes a missing spec row impossible short of corruption.
    if (!found)
      return absl::InternalError(
          absl::StrCat("spec ", ToAbsl(spec_sha256), " of ", ToAbsl(id), " missing"));
    SERVELAB_RETURN_IF_ERROR(ParseBlob(spec.ColumnBlob(0), *experiment.mutable_spec(),
                                       absl::StrCat("spec ", ToAbsl(spec_sha256))));
  }
  {
    SERVELAB_ASSIGN_OR_RETURN(
        Statement stages,
        db.Prepare("SELECT stage FROM stages WHERE experiment_id = ?1 ORDER BY position"));
    stages.BindText(1, id);
    while (true) {
      SERVELAB_ASSIGN_OR_RETURN(bool row, stages.Step());
      if (!row) break;
      SERVELAB_RETURN_IF_ERROR(ParseBlob(stages.ColumnBlob(0), *experiment.add_stages(),
                                         absl::StrCat("stage of ", ToAbsl(id))));
    }
  }
  {
    SERVELAB_ASSIGN_OR_RETURN(Statement result,
                              db.Prepare("SELECT result FROM results WHERE experiment_id = ?1"));
    result.BindText(1, id);
    SERVELAB_ASSIGN_OR_RETURN(bool found, result.Step());
    if (found) {
      SERVELAB_RETURN_IF_ERROR(ParseBlob(result.ColumnBlob(0), *experiment.mutable_result(),
                                         absl::StrCat("result of ", ToAbsl(id))));
    }
  }
  return experiment;
}

}  // namespace

absl::StatusOr<v1::Experiment> SqliteStore::GetExperiment(std::string_view id) {
  absl::MutexLock lock(&read_mu_);
  // One read snapshot across the row and its specs/stages/results.
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*reader_, TxnMode::kDeferred));
  SERVELAB_ASSIGN_OR_RETURN(
      Statement find,
      reader_->Prepare("SELECT experiment, spec_sha256 FROM experiments WHERE id = ?1"));
  find.BindText(1, id);
  SERVELAB_ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("experiment ", ToAbsl(id), " not found"));
  return Assemble(*reader_, id, find.ColumnBlob(0), find.ColumnText(1));
}

absl::StatusOr<std::vector<v1::Experiment>> SqliteStore::ListExperiments(
    const core::ExperimentFilter& filter) {
  absl::MutexLock lock(&read_mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*reader_, TxnMode::kDeferred));
  // Only the conditions the filter sets, so that SQLite can pick the index
  // for them (an `(?1 = '' OR scenario = ?1)` form defeats every index and
  // scans the whole table). At most 8 texts, each prepared once and cached.
  std::vector<std::string> where;
  if (!filter.scenario.empty()) where.push_back("scenario = ?1");
  if (filter.state != v1::EXPERIMENT_STATE_UNSPECIFIED) where.push_back("state = ?2");
  if (!filter.after_id.empty()) {
    where.push_back(absl::StrCat("seq ", filter.newest_first ? "<" : ">",
                                 " (SELECT seq FROM experiments WHERE id = ?3)"));
  }
  SERVELAB_ASSIGN_OR_RETURN(
      Statement list,
      reader_->Prepare(
          absl::StrCat("SELECT id, experiment, spec_sha256 FROM experiments",
                       where.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(where, " AND ")),
                       " ORDER BY seq", filter.newest_first ? " DESC" : "", " LIMIT ?4")));
  if (!filter.scenario.empty()) list.BindText(1, filter.scenario);
  if (filter.state != v1::EXPERIMENT_STATE_UNSPECIFIED) list.BindInt(2, filter.state);
  if (!filter.after_id.empty()) list.BindText(3, filter.after_id);
  list.BindInt(4, filter.limit > 0 ? filter.limit : -1);
  std::vector<v1::Experiment> experiments;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, list.Step());
    if (!row) break;
    SERVELAB_ASSIGN_OR_RETURN(
        v1::Experiment experiment,
        Assemble(*reader_, list.ColumnText(0), list.ColumnBlob(1), list.ColumnText(2)));
    experiments.push_back(std::move(experiment));
  }
  return experiments;
}

absl::StatusOr<std::vector<core::ExperimentCount>> SqliteStore::CountExperiments() {
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kDeferred));
  // The counts are kept by triggers (migration 5); the newest of each group
  // is one descent of experiments_by_outcome. No call walks the history.
  SERVELAB_ASSIGN_OR_RETURN(
      Statement count,
      db_->Prepare("SELECT c.state, c.failure_class, c.count, (SELECT e.id FROM experiments e "
                   "WHERE e.state = c.state AND e.failure_class = c.failure_class "
                   "ORDER BY e.seq DESC LIMIT 1) FROM experiment_counts c WHERE c.count > 0 "
                   "ORDER BY c.state, c.failure_class"));
  std::vector<core::ExperimentCount> counts;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, count.Step());
    if (!row) break;
    counts.push_back({.state = static_cast<v1::ExperimentState>(count.ColumnInt(0)),
                      .failure_class = static_cast<v1::FailureClass>(count.ColumnInt(1)),
                      .count = count.ColumnInt(2),
                      .latest_id = std::string(count.ColumnText(3))});
  }
  return counts;
}

absl::StatusOr<std::map<v1::StageName, absl::Duration>> SqliteStore::MeanRecentStageDurations(
    int runs) {
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kDeferred));
  // One indexed range per stage name (stages_by_outcome): the newest `runs`
  // rows, whatever the length of the history.
  SERVELAB_ASSIGN_OR_RETURN(
      Statement recent,
      db_->Prepare("SELECT SUM(ended_at - started_at), COUNT(*) FROM ("
                   "SELECT started_at, ended_at FROM stages WHERE name = ?1 AND action = ?2 AND "
                   "status = ?3 AND ended_at IS NOT NULL AND started_at IS NOT NULL "
                   "ORDER BY ended_at DESC LIMIT ?4)"));
  std::map<v1::StageName, absl::Duration> mean;
  for (int name = v1::StageName_MIN; name <= v1::StageName_MAX; ++name) {
    if (!v1::StageName_IsValid(name) || name == v1::STAGE_UNSPECIFIED) continue;
    recent.Reset();
    recent.BindInt(1, name);
    recent.BindInt(2, v1::STAGE_ACTION_RUN);
    recent.BindInt(3, v1::STAGE_STATUS_SUCCEEDED);
    recent.BindInt(4, runs);
    SERVELAB_ASSIGN_OR_RETURN(bool row, recent.Step());
    if (!row || recent.ColumnInt(1) == 0) continue;
    mean[static_cast<v1::StageName>(name)] =
        absl::Nanoseconds(recent.ColumnInt(0)) / recent.ColumnInt(1);
  }
  return mean;
}

absl::StatusOr<std::string> SqliteStore::LatestRunOf(v1::StageName stage, v1::StageStatus status) {
  absl::MutexLock lock(&read_mu_);
  // The newest end of stages_by_outcome's (name, action, status) range.
  SERVELAB_ASSIGN_OR_RETURN(
      Statement latest,
      reader_->Prepare("SELECT experiment_id FROM stages WHERE name = ?1 AND action = ?2 AND "
                       "status = ?3 AND ended_at IS NOT NULL ORDER BY ended_at DESC LIMIT 1"));
  latest.BindInt(1, stage);
  latest.BindInt(2, v1::STAGE_ACTION_RUN);
  latest.BindInt(3, status);
  SERVELAB_ASSIGN_OR_RETURN(bool found, latest.Step());
  return found ? std::string(latest.ColumnText(0)) : std::string();
}

absl::StatusOr<std::vector<core::Event>> SqliteStore::ListEvents(std::string_view experiment_id) {
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kDeferred));
  SERVELAB_ASSIGN_OR_RETURN(bool exists, ExperimentExistsLocked(experiment_id));
  if (!exists)
    return absl::NotFoundError(absl::StrCat("experiment ", ToAbsl(experiment_id), " not found"));
  SERVELAB_ASSIGN_OR_RETURN(Statement list, db_->Prepare("SELECT seq, at, kind, detail FROM events "
                                                         "WHERE experiment_id = ?1 ORDER BY seq"));
  list.BindText(1, experiment_id);
  std::vector<core::Event> events;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, list.Step());
    if (!row) break;
    core::Event& event = events.emplace_back();
    event.seq = list.ColumnInt(0);
    event.experiment_id = std::string(experiment_id);
    event.at = absl::FromUnixNanos(list.ColumnInt(1));
    event.kind = std::string(list.ColumnText(2));
    event.detail = std::string(list.ColumnText(3));
  }
  return events;
}

absl::Status SqliteStore::AppendRequests(const std::vector<v1::RequestRecord>& records,
                                         core::Durability durability) {
  if (records.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  // One transaction per batch: at most one fsync for the batch, and a crash
  // loses at most the batch in flight.
  SERVELAB_ASSIGN_OR_RETURN(
      Transaction txn, Transaction::Begin(*db_, TxnMode::kImmediate, ToCommitSync(durability)));
  SERVELAB_ASSIGN_OR_RETURN(Statement insert, db_->Prepare(InsertRequestSql()));
  const std::string* checked_id = nullptr;
  for (const v1::RequestRecord& r : records) {
    // Batches are almost always of one experiment: check once per run of ids,
    // so a bad id reads NOT_FOUND rather than a foreign key failure.
    if (checked_id == nullptr || *checked_id != r.experiment_id()) {
      SERVELAB_ASSIGN_OR_RETURN(bool exists, ExperimentExistsLocked(r.experiment_id()));
      if (!exists) {
        return absl::NotFoundError(
            absl::StrCat("request record of unknown experiment '", r.experiment_id(), "'"));
      }
      checked_id = &r.experiment_id();
    }
    insert.Reset();
    BindRequestRow(r, insert);
    absl::Status status = insert.Run();
    if (absl::IsAlreadyExists(status)) {
      return absl::AlreadyExistsError(
          absl::StrCat("request record (", r.experiment_id(), ", ", v1::Phase_Name(r.phase()),
                       ", attempt ", r.attempt(), ", index ", r.request_index(),
                       ") is already stored; nothing of the batch was written"));
    }
    SERVELAB_RETURN_IF_ERROR(status);
  }
  return txn.Commit();
}

absl::StatusOr<std::vector<v1::RequestRecord>> SqliteStore::ListRequests(
    std::string_view experiment_id, v1::Phase phase, int attempt) {
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(*db_, TxnMode::kDeferred));
  SERVELAB_ASSIGN_OR_RETURN(bool exists, ExperimentExistsLocked(experiment_id));
  if (!exists)
    return absl::NotFoundError(absl::StrCat("experiment ", ToAbsl(experiment_id), " not found"));
  static const auto* const kList = new std::string(
      absl::StrCat("SELECT ", RequestColumnList(),
                   " FROM requests WHERE experiment_id = ?1 AND (?2 = 0 OR phase = ?2) "
                   "AND (?3 = 0 OR attempt = ?3) ORDER BY attempt, repeat, request_index, phase"));
  SERVELAB_ASSIGN_OR_RETURN(Statement list, db_->Prepare(*kList));
  list.BindText(1, experiment_id);
  list.BindInt(2, phase);
  list.BindInt(3, attempt);
  std::vector<v1::RequestRecord> records;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, list.Step());
    if (!row) break;
    SERVELAB_RETURN_IF_ERROR(ReadRequestRow(list, records.emplace_back()));
  }
  return records;
}

absl::Status SqliteStore::PutInstance(const v1::ServingInstance& instance) {
  if (instance.side() == v1::SIDE_UNSPECIFIED) {
    return absl::InvalidArgumentError("serving instance has no side");
  }
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(
      Statement put,
      db_->Prepare("INSERT OR REPLACE INTO instances (side, pid, process_start_ticks, port, "
                   "fingerprint, experiment_id, launched_at, warm_since, log_path, instance) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
  put.BindInt(1, instance.side());
  put.BindInt(2, instance.pid());
  put.BindInt(3, instance.process_start_ticks());
  put.BindInt(4, instance.port());
  put.BindText(5, instance.fingerprint());
  put.BindText(6, instance.experiment_id());
  BindTime(put, 7, instance.has_launched_at(), instance.launched_at());
  BindTime(put, 8, instance.has_warm_since(), instance.warm_since());
  put.BindText(9, instance.log_path());
  put.BindBlob(10, instance.SerializeAsString());
  return put.Run();
}

absl::Status SqliteStore::RemoveInstance(v1::Side side) {
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Statement remove,
                            db_->Prepare("DELETE FROM instances WHERE side = ?1"));
  remove.BindInt(1, side);
  return remove.Run();
}

absl::StatusOr<std::vector<v1::ServingInstance>> SqliteStore::ListInstances() {
  absl::MutexLock lock(&mu_);
  SERVELAB_ASSIGN_OR_RETURN(Statement list,
                            db_->Prepare("SELECT instance FROM instances ORDER BY side"));
  std::vector<v1::ServingInstance> instances;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(bool row, list.Step());
    if (!row) break;
    SERVELAB_RETURN_IF_ERROR(
        ParseBlob(list.ColumnBlob(0), instances.emplace_back(), "serving instance"));
  }
  return instances;
}

}  // namespace servelab::storage
