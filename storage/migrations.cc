#include "storage/migrations.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace servelab::storage {
namespace {

// Conventions: enums are stored as their proto numbers; every time column
// (at, *_at, load_start) is unix nanoseconds, NULL when the proto field is
// unset. Where a row has a `*` BLOB column, that serialized message is the
// truth and the other columns are copies kept for queries and for people
// reading the file with the sqlite3 shell; this keeps proto fields added
// later round-tripping without a migration. `requests` has no such blob:
// it is the hot path and every RequestRecord field has a column. Its current
// columns and row codec are defined once, in request_rows.cc (shared with
// servelab-load's record files); request_rows_test checks that these steps
// produce exactly those columns.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE sequences (
  name TEXT PRIMARY KEY,
  -- The last value handed out; rows are only ever incremented, so an id is
  -- never reused.
  value INTEGER NOT NULL
);
INSERT INTO sequences (name, value) VALUES ('experiment', 0);

-- Frozen specs, content-addressed by the SHA-256 the freezer computed.
-- Never updated: INSERT OR IGNORE.
CREATE TABLE specs (
  sha256 TEXT PRIMARY KEY,
  canonical_json TEXT NOT NULL,
  spec BLOB NOT NULL  -- serialized ExperimentSpec
);

CREATE TABLE experiments (
  id TEXT PRIMARY KEY,  -- "exp-<seq>"
  seq INTEGER NOT NULL UNIQUE,
  parent_id TEXT REFERENCES experiments (id),
  scenario TEXT NOT NULL,
  state INTEGER NOT NULL,
  spec_sha256 TEXT NOT NULL REFERENCES specs (sha256),
  submitted_at INTEGER,
  updated_at INTEGER,
  failure_class INTEGER NOT NULL,
  -- serialized Experiment without spec, stages and result, which live in
  -- specs, stages and results.
  experiment BLOB NOT NULL
);
CREATE INDEX experiments_by_scenario ON experiments (scenario, seq);
CREATE INDEX experiments_by_state ON experiments (state, seq);
CREATE INDEX experiments_by_parent ON experiments (parent_id);

-- One row per Experiment.stages entry; an update writes only the rows that
-- changed (sqlite_store.cc, WriteStages).
CREATE TABLE stages (
  experiment_id TEXT NOT NULL REFERENCES experiments (id),
  position INTEGER NOT NULL,  -- index in Experiment.stages
  name INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  action INTEGER NOT NULL,
  status INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  stage BLOB NOT NULL,  -- serialized Stage (counters, reason, error)
  PRIMARY KEY (experiment_id, position)
);

-- Append-only log of every transition, written in the transaction of the
-- change it records.
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  experiment_id TEXT NOT NULL REFERENCES experiments (id),
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX events_by_experiment ON events (experiment_id, seq);

CREATE TABLE results (
  experiment_id TEXT PRIMARY KEY REFERENCES experiments (id),
  result BLOB NOT NULL,  -- serialized Result
  computed_at INTEGER
);

-- Raw per-request records; times are load-relative steady-clock ns.
CREATE TABLE requests (
  experiment_id TEXT NOT NULL REFERENCES experiments (id),
  phase INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  planned_send_ns INTEGER NOT NULL,
  sent_ns INTEGER NOT NULL,
  first_token_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  chunk_ns BLOB NOT NULL,  -- little-endian int64 per chunk
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  error TEXT NOT NULL,
  requested_prompt_tokens INTEGER NOT NULL,
  requested_completion_tokens INTEGER NOT NULL,
  load_start INTEGER,
  queued_ns INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, phase, attempt, idx)
);

-- Serving processes the daemon owns, one per side, for re-adoption after a
-- daemon restart.
CREATE TABLE instances (
  side INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  process_start_ticks INTEGER NOT NULL,
  port INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  experiment_id TEXT NOT NULL,
  launched_at INTEGER,
  warm_since INTEGER,
  log_path TEXT NOT NULL,
  instance BLOB NOT NULL  -- serialized ServingInstance
);
)sql";

// One name per concept (docs/design.md §14): "the experiment a delta
// applies to" is its base everywhere, and a request's position in its load
// is its request_index, as in RequestRecord.
constexpr std::string_view kV2 = R"sql(
ALTER TABLE experiments RENAME COLUMN parent_id TO base_id;
DROP INDEX experiments_by_parent;
CREATE INDEX experiments_by_base ON experiments (base_id);
ALTER TABLE requests RENAME COLUMN idx TO request_index;
)sql";

// workload.repeats: a formal load may run several times in one attempt, so
// the run (`repeat`, 1 for every row stored before) joins the primary key.
// SQLite cannot change a primary key in place: the table is rebuilt.
constexpr std::string_view kV3 = R"sql(
CREATE TABLE requests_v3 (
  experiment_id TEXT NOT NULL REFERENCES experiments (id),
  phase INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  request_index INTEGER NOT NULL,
  planned_send_ns INTEGER NOT NULL,
  sent_ns INTEGER NOT NULL,
  first_token_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  chunk_ns BLOB NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  error TEXT NOT NULL,
  requested_prompt_tokens INTEGER NOT NULL,
  requested_completion_tokens INTEGER NOT NULL,
  load_start INTEGER,
  queued_ns INTEGER NOT NULL,
  repeat INTEGER NOT NULL,
  PRIMARY KEY (experiment_id, phase, attempt, repeat, request_index)
);
INSERT INTO requests_v3 SELECT *, 1 FROM requests;
DROP TABLE requests;
ALTER TABLE requests_v3 RENAME TO requests;
)sql";

// A call's cost must not grow with the history (issue 9): the planner's
// recent stage durations read the newest successful runs of one stage
// through an index instead of scanning every stage row.
constexpr std::string_view kV4 = R"sql(
CREATE INDEX stages_by_outcome ON stages (name, action, status, ended_at);
-- The summary's counts per (state, failure class) and the newest of each,
-- from the index alone, without reading any experiment row.
CREATE INDEX experiments_by_outcome ON experiments (state, failure_class, seq, id);
)sql";

// The summary's counts per (state, failure class) kept as they change, so
// reading them is a lookup per group, not a walk of every experiment (the
// GROUP BY over experiments_by_outcome took 2 ms at 10,000 rows; issue 9,
// P8). Triggers keep the table in the transaction of each write, so no code
// path can forget it; a group that empties keeps its row with count 0.
constexpr std::string_view kV5 = R"sql(
CREATE TABLE experiment_counts (
  state INTEGER NOT NULL,
  failure_class INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (state, failure_class)
) WITHOUT ROWID;
INSERT INTO experiment_counts (state, failure_class, count)
  SELECT state, failure_class, COUNT(*) FROM experiments WHERE true
  GROUP BY state, failure_class;
CREATE TRIGGER experiments_count_insert AFTER INSERT ON experiments BEGIN
  INSERT INTO experiment_counts (state, failure_class, count)
    VALUES (NEW.state, NEW.failure_class, 1)
    ON CONFLICT (state, failure_class) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER experiments_count_delete AFTER DELETE ON experiments BEGIN
  UPDATE experiment_counts SET count = count - 1
    WHERE state = OLD.state AND failure_class = OLD.failure_class;
END;
CREATE TRIGGER experiments_count_update AFTER UPDATE OF state, failure_class ON experiments
  WHEN OLD.state != NEW.state OR OLD.failure_class != NEW.failure_class BEGIN
  UPDATE experiment_counts SET count = count - 1
    WHERE state = OLD.state AND failure_class = OLD.failure_class;
  INSERT INTO experiment_counts (state, failure_class, count)
    VALUES (NEW.state, NEW.failure_class, 1)
    ON CONFLICT (state, failure_class) DO UPDATE SET count = count + 1;
END;
)sql";

// stages_by_outcome holds only stages that ended: both of its queries ask
// for `ended_at IS NOT NULL`. Of a submit's 13 stages only freeze has ended,
// so it writes one entry; with every stage in it, each of the 13 rows dirtied
// a leaf page of its own once the history had grown, 12 more pages in the
// submit's synced commit (issue 9, P8; docs/design.md §12).
constexpr std::string_view kV6 = R"sql(
DROP INDEX stages_by_outcome;
CREATE INDEX stages_by_outcome ON stages (name, action, status, ended_at)
  WHERE ended_at IS NOT NULL;
)sql";

constexpr std::array<std::string_view, 6> kMigrations = {kV1, kV2, kV3, kV4, kV5, kV6};

}  // namespace

absl::Span<const std::string_view> SchemaMigrations() { return kMigrations; }

int LatestSchemaVersion() { return static_cast<int>(kMigrations.size()); }

absl::Status Migrate(SqliteDb& db, absl::Span<const std::string_view> steps) {
  const int64_t latest = static_cast<int64_t>(steps.size());
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db, TxnMode::kImmediate));
    // Read under the write lock: another process migrating the same file
    // concurrently cannot make us apply a step twice.
    SERVELAB_ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
    if (version > latest) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database ", db.path(), " has schema version ", version, " but this build knows only ",
          latest, "; it was written by a newer servelabd — run that, or use another state dir"));
    }
    if (version < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("database ", db.path(), " has invalid schema version ", version));
    }
    if (version == latest) return txn.Commit();
    absl::Status step = db.Exec(steps[version]);
    if (!step.ok()) {
      return absl::Status(step.code(), absl::StrCat("migrating ", db.path(), " to version ",
                                                    version + 1, ": ", step.message()));
    }
    // PRAGMA takes no bound parameters; the value is our own integer.
    SERVELAB_RETURN_IF_ERROR(db.Exec(absl::StrCat("PRAGMA user_version = ", version + 1)));
    SERVELAB_RETURN_IF_ERROR(txn.Commit());
  }
}

}  // namespace servelab::storage
