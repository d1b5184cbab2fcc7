#include "sim/cost_model.h"

#include <algorithm>

namespace servelab::sim {

double CostModel::PrefillSeconds(int64_t uncached_tokens, int64_t other_prefills) const {
  // Even a fully cached prompt computes its last token, so at least one chunk runs.
  int64_t tokens = std::max<int64_t>(uncached_tokens, 1);
  int64_t chunks = (tokens + config_.max_num_batched_tokens - 1) / config_.max_num_batched_tokens;
  double per_token = config_.prefill_seconds_per_token *
                     (1.0 + config_.prefill_batch_slowdown * std::max<int64_t>(other_prefills, 0));
  return config_.prefill_overhead_seconds + chunks * config_.prefill_chunk_overhead_seconds +
         tokens * per_token;
}

double CostModel::DecodeStepSeconds(int64_t running) const {
  return config_.decode_base_seconds +
         config_.decode_seconds_per_seq * std::max<int64_t>(running, 1);
}

double CostModel::KvTransferSeconds(int64_t tokens) const {
  return config_.kv_transfer_overhead_seconds +
         config_.kv_transfer_seconds_per_token * std::max<int64_t>(tokens, 0);
}

}  // namespace servelab::sim
