// BaselineIndex: the succeeded experiment a new result is decided against
// when its spec names no baseline — the scenario's best under the same
// decision rule (docs/design.md §11).
//
//   BaselineIndex baselines(ledger);
//   SERVELAB_ASSIGN_OR_RETURN(std::optional<v1::Experiment> best,
//                             baselines.Best("chat-8k", rule, e.id()));
//
// Keyed by (scenario, window, metric). The first lookup of a key reads the
// scenario's history once, a page at a time; from then on every success the
// ledger commits updates the keys of its scenario. A succeeded experiment's
// result never changes again, so only a new success can move a best, and a
// decision costs the same on a history of 10 or of 10,000 experiments.
// Thread-safe.
#ifndef SERVELAB_DAEMON_CORE_BASELINE_INDEX_H_
#define SERVELAB_DAEMON_CORE_BASELINE_INDEX_H_

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/ledger.h"
#include "servelab/v1/experiment.pb.h"

namespace servelab::core {

class BaselineIndex {
 public:
  explicit BaselineIndex(Ledger& ledger);
  ~BaselineIndex();
  BaselineIndex(const BaselineIndex&) = delete;
  BaselineIndex& operator=(const BaselineIndex&) = delete;

  // The best succeeded experiment of `scenario` under `rule`, other than
  // `exclude_id`; nullopt when there is none with a value for the metric.
  absl::StatusOr<std::optional<v1::Experiment>> Best(const std::string& scenario,
                                                     const v1::DecisionRule& rule,
                                                     const std::string& exclude_id);

 private:
  struct Key {
    std::string scenario;
    int window;
    std::string metric;
    auto operator<=>(const Key&) const = default;
  };
  static Key KeyOf(const std::string& scenario, const v1::DecisionRule& rule);
  // Reads the scenario's succeeded experiments, skipping `exclude_id`.
  absl::StatusOr<std::optional<v1::Experiment>> Scan(const Key& key, const v1::DecisionRule& rule,
                                                     const std::string& exclude_id);
  void OnCommit(const v1::Experiment& e);

  Ledger& ledger_;
  int subscription_ = 0;
  absl::Mutex mu_;
  // Per key: the rule it was built with and the best so far (nullopt: none).
  struct Entry {
    v1::DecisionRule rule;
    std::optional<v1::Experiment> best;
  };
  std::map<Key, Entry> best_ ABSL_GUARDED_BY(mu_);
};

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_BASELINE_INDEX_H_
