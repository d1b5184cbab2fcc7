// Store: the persistence contract of the daemon, in domain types. The SQLite
// implementation lives in storage/; nothing outside storage/ writes SQL.
//
// Every write that changes an experiment also appends its event row in the
// same transaction: the event log and the state never disagree. A frozen spec
// is stored content-addressed by its SHA-256 and never modified.
//
// Errors: NOT_FOUND for an unknown id; UNAVAILABLE when the database is busy
// past its timeout; INTERNAL for anything else the database reports.
// Implementations are thread-safe.
#ifndef SERVELAB_DAEMON_CORE_STORE_H_
#define SERVELAB_DAEMON_CORE_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "servelab/v1/experiment.pb.h"
#include "servelab/v1/result.pb.h"

namespace servelab::core {

// How far a write has reached when the call returns (docs/design.md §5,
// "Durability"). Every write survives a crash of the daemon at once; the
// tiers differ only on a power loss or a kernel crash.
enum class Durability {
  // On the disk (fsync). For every write that tells the outside world a
  // fact (a submit's id, a final state) or comes before an act that cannot
  // be taken back (the formal load's first request).
  kSynced,
  // In the write-ahead log, in commit order, and on the disk with the next
  // synced write. A power loss may take it, and with it every ordered write
  // since the last synced one: the store then holds an earlier state, as
  // after a daemon crash at that point, and recovery classifies it (§8).
  kOrdered,
};

// One row of the append-only event log.
struct Event {
  int64_t seq = 0;  // Assigned by the store, increasing.
  std::string experiment_id;
  absl::Time at;
  // "submitted", "state", "stage", "progress", "spec", "cancelled", ...
  std::string kind;
  // Human-readable fact, e.g. "queued -> cancelled" (labels as common/labels.h).
  std::string detail;
  // Of the write the event belongs to; not stored.
  Durability durability = Durability::kSynced;
};

struct ExperimentFilter {
  std::string scenario;                                          // Empty: any.
  v1::ExperimentState state = v1::EXPERIMENT_STATE_UNSPECIFIED;  // Unspecified: any.
  // A page: only experiments stored after this one (empty: from the first),
  // and at most `limit` of them (0: no limit). An unknown id matches none.
  std::string after_id;
  int limit = 0;
  // Newest first instead of oldest first (after_id then means older than).
  bool newest_first = false;
};

struct ExperimentCount {
  v1::ExperimentState state = v1::EXPERIMENT_STATE_UNSPECIFIED;
  v1::FailureClass failure_class = v1::FAILURE_CLASS_UNSPECIFIED;
  int64_t count = 0;
  std::string latest_id;
};

class Store {
 public:
  virtual ~Store() = default;

  // Assigns the next id ("exp-1", "exp-2", ...), stores the experiment with
  // its frozen spec, stages and plan, and `event` (its experiment_id filled
  // in), atomically, and synced whatever `event.durability` says: the id is
  // a fact the caller hands out. Returns the id.
  virtual absl::StatusOr<std::string> CreateExperiment(const v1::Experiment& experiment,
                                                       const Event& event) = 0;

  // Replaces everything mutable of experiment.id() (state, stages, progress,
  // failure class, blocker, result, resume action, and the spec when a
  // resume delta froze a new one) and appends `event`, atomically.
  virtual absl::Status UpdateExperiment(const v1::Experiment& experiment, const Event& event) = 0;

  virtual absl::StatusOr<v1::Experiment> GetExperiment(std::string_view id) = 0;
  // Oldest first.
  virtual absl::StatusOr<std::vector<v1::Experiment>> ListExperiments(
      const ExperimentFilter& filter) = 0;
  // How many experiments are in each (state, failure class), and the newest
  // of each: counted by the database, not listed, so that the summary's cost
  // does not grow with the history.
  virtual absl::StatusOr<std::vector<ExperimentCount>> CountExperiments() = 0;
  // Per stage name, the mean duration of its `runs` most recent successful
  // RUN stages (by end time); a stage that never ran successfully is absent.
  virtual absl::StatusOr<std::map<v1::StageName, absl::Duration>> MeanRecentStageDurations(
      int runs) = 0;
  // The experiment whose RUN of `stage` most recently ended with `status`
  // (by the stage's end time, so the last on the lane), "" if none; one
  // descent of an index however long the history.
  virtual absl::StatusOr<std::string> LatestRunOf(v1::StageName stage, v1::StageStatus status) = 0;
  // In order of seq.
  virtual absl::StatusOr<std::vector<Event>> ListEvents(std::string_view experiment_id) = 0;

  // CreateExperiment and the experiment's raw records in one transaction
  // (each record's experiment_id is set to the new id): an imported run is
  // stored whole or not at all.
  virtual absl::StatusOr<std::string> CreateExperimentWithRecords(
      const v1::Experiment& experiment, const Event& event,
      const std::vector<v1::RequestRecord>& records) = 0;

  // Raw per-request records, appended in batches while a load runs.
  virtual absl::Status AppendRequests(const std::vector<v1::RequestRecord>& records,
                                      Durability durability) = 0;
  // attempt 0: every attempt. Ordered by attempt, then index.
  virtual absl::StatusOr<std::vector<v1::RequestRecord>> ListRequests(
      std::string_view experiment_id, v1::Phase phase, int attempt) = 0;

  // Serving instances the daemon owns, one per side.
  virtual absl::Status PutInstance(const v1::ServingInstance& instance) = 0;
  virtual absl::Status RemoveInstance(v1::Side side) = 0;
  virtual absl::StatusOr<std::vector<v1::ServingInstance>> ListInstances() = 0;
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_STORE_H_
