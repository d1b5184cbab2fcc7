#include "daemon/core/store_pages.h"

#include <vector>

#include "common/status_macros.h"

namespace servelab::core {

absl::Status ForEachExperiment(Store& store, ExperimentFilter filter,
                               absl::FunctionRef<bool(const v1::Experiment&)> visit) {
  filter.after_id.clear();
  filter.limit = kExperimentPage;
  while (true) {
    SERVELAB_ASSIGN_OR_RETURN(std::vector<v1::Experiment> page, store.ListExperiments(filter));
    for (const v1::Experiment& e : page) {
      if (!visit(e)) return absl::OkStatus();
    }
    if (static_cast<int>(page.size()) < filter.limit) return absl::OkStatus();
    filter.after_id = page.back().id();
  }
}

}  // namespace servelab::core
