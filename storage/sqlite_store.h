// SqliteStore: the daemon's core::Store on one SQLite file (WAL,
// synchronous=FULL, foreign keys on). The schema and its migrations are in
// storage/migrations.cc.
//
//   SERVELAB_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store,
//                             SqliteStore::Open(state_dir + "/servelab.db"));
//   SERVELAB_ASSIGN_OR_RETURN(std::string id, store->CreateExperiment(experiment, event));
//
// Beyond core::Store's contract:
// - The store does not hash: a spec is stored under the caller's
//   experiment.spec_sha256 (required, INVALID_ARGUMENT when empty), first
//   write wins. A new spec_sha256 on update adds a row; the old one stays.
// - CreateExperiment: NOT_FOUND when base_id names no stored experiment.
// - UpdateExperiment writes the caller's message as a whole (id, base_id and
//   submitted_at are expected unchanged) and the event, atomically.
// - AppendRequests: NOT_FOUND for a record of an unknown experiment,
//   ALREADY_EXISTS when (experiment, phase, attempt, index) is already stored;
//   either way nothing of the batch is written.
// - ListRequests: PHASE_UNSPECIFIED means every phase.
// - RemoveInstance of an absent side is OK.
// - Times are kept at nanosecond precision (Event.at included).
// - RESOURCE_EXHAUSTED when the disk is full.
//
// Thread-safe: one mutex serializes every call on the single connection.
// Calls are short (one transaction each), and SQLite would serialize writers
// anyway. One daemon owns the file; other processes may read it.
#ifndef SERVELAB_STORAGE_SQLITE_STORE_H_
#define SERVELAB_STORAGE_SQLITE_STORE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/store.h"

namespace servelab::storage {

class SqliteDb;

class SqliteStore : public core::Store {
 public:
  struct Options {
    // How long a call waits for another connection's write lock before it
    // fails with UNAVAILABLE.
    absl::Duration busy_timeout = absl::Milliseconds(5000);
  };

  // Opens or creates the database file at `path` and migrates it to this
  // build's schema. FAILED_PRECONDITION when the file was written by a newer
  // schema version.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           const Options& options);
  ~SqliteStore() override;

  absl::StatusOr<std::string> CreateExperimentWithRecords(
      const v1::Experiment& experiment, const core::Event& event,
      const std::vector<v1::RequestRecord>& records) override;
  absl::StatusOr<std::string> CreateExperiment(const v1::Experiment& experiment,
                                               const core::Event& event) override;
  absl::Status UpdateExperiment(const v1::Experiment& experiment,
                                const core::Event& event) override;
  absl::StatusOr<v1::Experiment> GetExperiment(std::string_view id) override;
  absl::StatusOr<std::vector<v1::Experiment>> ListExperiments(
      const core::ExperimentFilter& filter) override;
  absl::StatusOr<std::vector<core::ExperimentCount>> CountExperiments() override;
  absl::StatusOr<std::map<v1::StageName, absl::Duration>> MeanRecentStageDurations(
      int runs) override;
  absl::StatusOr<std::string> LatestRunOf(v1::StageName stage, v1::StageStatus status) override;
  absl::StatusOr<std::vector<core::Event>> ListEvents(std::string_view experiment_id) override;

  absl::Status AppendRequests(const std::vector<v1::RequestRecord>& records,
                              core::Durability durability) override;
  absl::StatusOr<std::vector<v1::RequestRecord>> ListRequests(std::string_view experiment_id,
                                                              v1::Phase phase,
                                                              int attempt) override;

  absl::Status PutInstance(const v1::ServingInstance& instance) override;
  absl::Status RemoveInstance(v1::Side side) override;
  absl::StatusOr<std::vector<v1::ServingInstance>> ListInstances() override;

  // Test-only: called inside Create/UpdateExperiment's transaction after the
  // experiment rows are written and before the event row, with the point's
  // name ("create", "update"); a non-OK return aborts the transaction.
  using Failpoint = std::function<absl::Status(std::string_view point)>;
  void SetFailpointForTesting(Failpoint failpoint);

 private:
  SqliteStore(std::unique_ptr<SqliteDb> db, std::unique_ptr<SqliteDb> reader);

  // Writes the spec (if new), the experiment row with `seq`, its stages and
  // result. `insert` chooses INSERT over UPDATE of the experiment row.
  // CreateExperiment's writes, inside the caller's transaction.
  absl::StatusOr<std::string> CreateLocked(const v1::Experiment& experiment,
                                           const core::Event& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteExperimentLocked(const v1::Experiment& experiment, int64_t seq, bool insert)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AppendEventLocked(std::string_view experiment_id, const core::Event& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RunFailpointLocked(std::string_view point) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> ExperimentExistsLocked(std::string_view id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_GUARDED_BY(mu_);
  Failpoint failpoint_ ABSL_GUARDED_BY(mu_);
  // A second, read-only connection for GetExperiment and ListExperiments:
  // under WAL it reads the last commit while db_ writes, so a status call
  // never waits behind a batch of request records and its fsync.
  absl::Mutex read_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::unique_ptr<SqliteDb> reader_ ABSL_GUARDED_BY(read_mu_);
};

}  // namespace servelab::storage

#endif  // SERVELAB_STORAGE_SQLITE_STORE_H_
