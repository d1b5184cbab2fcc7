// ForEachExperiment: every experiment a filter matches, read from the Store a
// page at a time, so that walking the whole history holds one page in memory,
// never the history itself (docs/design.md §12: the daemon's memory does not
// grow with the experiments it has stored).
#ifndef SERVELAB_DAEMON_CORE_STORE_PAGES_H_
#define SERVELAB_DAEMON_CORE_STORE_PAGES_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/core/store.h"

namespace servelab::core {

// Experiments per page: large enough that the per-query cost is amortized,
// small enough that a page of whole experiments stays near a megabyte.
inline constexpr int kExperimentPage = 64;

// Calls `visit` for each experiment `filter` matches, in its order, until
// `visit` returns false. filter.after_id and filter.limit are the walk's own.
absl::Status ForEachExperiment(Store& store, ExperimentFilter filter,
                               absl::FunctionRef<bool(const v1::Experiment&)> visit);

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_STORE_PAGES_H_
