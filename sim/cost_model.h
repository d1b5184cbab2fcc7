// The sim's latency model: pure functions of the config and the instance's
// load, in modelled seconds (before --time-scale). Stateless; thread-safe.
//
//   CostModel m(config);
//   double ttft = m.PrefillSeconds(/*uncached_tokens=*/4096, /*other_prefills=*/1);
#ifndef SERVELAB_SIM_COST_MODEL_H_
#define SERVELAB_SIM_COST_MODEL_H_

#include <cstdint>

#include "sim/config.h"

namespace servelab::sim {

class CostModel {
 public:
  explicit CostModel(const SimConfig& config) : config_(config) {}

  // Prefill of `uncached_tokens` while `other_prefills` other requests are also
  // in prefill. The prompt is processed in chunks of max_num_batched_tokens, each
  // with a scheduling overhead; sharing the batch with other prefills slows the
  // per-token rate linearly (prefill_batch_slowdown per other request).
  double PrefillSeconds(int64_t uncached_tokens, int64_t other_prefills) const;
  // One decode step (the inter-token time) with `running` sequences in the batch.
  double DecodeStepSeconds(int64_t running) const;
  // Receiving the KV of `tokens` prompt tokens from the prefill instance.
  double KvTransferSeconds(int64_t tokens) const;

 private:
  const SimConfig& config_;
};

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_COST_MODEL_H_
