#include "daemon/core/baseline_index.h"

#include "analysis/decision.h"
#include "common/status_macros.h"
#include "daemon/core/store_pages.h"

namespace servelab::core {
namespace {

const v1::WindowResult& DecisionWindow(const v1::Result& r, const v1::DecisionRule& rule) {
  return rule.window() == v1::WINDOW_STEADY ? r.steady() : r.whole();
}

// Whether `peer` beats `best` under `rule`. A peer without a value for the
// metric never does.
bool Beats(const v1::Experiment& peer, const std::optional<v1::Experiment>& best,
           const v1::DecisionRule& rule) {
  if (!peer.has_result()) return false;
  if (!analysis::MetricValue(DecisionWindow(peer.result(), rule), rule.metric()).ok()) return false;
  if (!best.has_value()) return true;
  return analysis::Better(peer.result(), best->result(), rule).value_or(false);
}

}  // namespace

BaselineIndex::BaselineIndex(Ledger& ledger) : ledger_(ledger) {
  subscription_ = ledger_.Subscribe("", [this](const v1::Experiment& e) { OnCommit(e); });
}

BaselineIndex::~BaselineIndex() { ledger_.Unsubscribe(subscription_); }

BaselineIndex::Key BaselineIndex::KeyOf(const std::string& scenario, const v1::DecisionRule& rule) {
  return Key{.scenario = scenario,
             .window = rule.window() == v1::WINDOW_STEADY ? v1::WINDOW_STEADY : v1::WINDOW_WHOLE,
             .metric = rule.metric()};
}

absl::StatusOr<std::optional<v1::Experiment>> BaselineIndex::Scan(const Key& key,
                                                                  const v1::DecisionRule& rule,
                                                                  const std::string& exclude_id) {
  std::optional<v1::Experiment> best;
  SERVELAB_RETURN_IF_ERROR(ForEachExperiment(
      ledger_.store(), {.scenario = key.scenario, .state = v1::EXPERIMENT_STATE_SUCCEEDED},
      [&](const v1::Experiment& peer) {
        if (peer.id() != exclude_id && Beats(peer, best, rule)) best = peer;
        return true;
      }));
  return best;
}

absl::StatusOr<std::optional<v1::Experiment>> BaselineIndex::Best(const std::string& scenario,
                                                                  const v1::DecisionRule& rule,
                                                                  const std::string& exclude_id) {
  const Key key = KeyOf(scenario, rule);
  // Held while a key is first read, so that a success committed meanwhile
  // waits in OnCommit and is then compared with the finished scan.
  absl::MutexLock lock(&mu_);
  auto it = best_.find(key);
  if (it == best_.end()) {
    SERVELAB_ASSIGN_OR_RETURN(std::optional<v1::Experiment> best, Scan(key, rule, ""));
    it = best_.emplace(key, Entry{.rule = rule, .best = std::move(best)}).first;
  }
  // Only an experiment decided again after it succeeded is its own best; the
  // runner-up is then read from the store.
  if (it->second.best.has_value() && it->second.best->id() == exclude_id) {
    return Scan(key, rule, exclude_id);
  }
  return it->second.best;
}

void BaselineIndex::OnCommit(const v1::Experiment& e) {
  if (e.state() != v1::EXPERIMENT_STATE_SUCCEEDED) return;
  absl::MutexLock lock(&mu_);
  for (auto& [key, entry] : best_) {
    if (key.scenario != e.spec().scenario()) continue;
    if (Beats(e, entry.best, entry.rule)) entry.best = e;
  }
}

}  // namespace servelab::core
