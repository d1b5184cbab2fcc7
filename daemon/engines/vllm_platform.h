// The parts of a `vllm serve` command that depend on the accelerator
// platform: which variable names the devices, how KV caches move between
// prefill and decode, the platform's environment and --additional-config,
// and which P/D proxy fronts the deployment. Used by vllm_renderer.cc only.
//
// CUDA (ENGINE_VLLM) — NixlConnector. vLLM's NIXL side channel listens on
// VLLM_NIXL_SIDE_CHANNEL_PORT + the DP rank (and its TP rank where the
// release spreads ranks that way:
// vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py), so each
// side gets its own range of DP x TP ports: prefill from the base, decode
// right after; on one host the two never overlap.
//
// Ascend (ENGINE_VLLM_ASCEND) — MooncakeConnectorV1 (or the layerwise one)
// from vllm_ascend.distributed, with kv_port, engine_id and both sides'
// {dp_size, tp_size} in kv_connector_extra_config (vllm-ascend
// docs/source/tutorials/multi_node_pd_disaggregation_mooncake.md); HCCL and
// socket interfaces from deployment.ascend; the expert layout becomes
// expert_map_path in --additional-config.
#ifndef SERVELAB_DAEMON_ENGINES_VLLM_PLATFORM_H_
#define SERVELAB_DAEMON_ENGINES_VLLM_PLATFORM_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/core/instance_driver.h"
#include "daemon/engines/vllm_renderer.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::engines {

// "CUDA_VISIBLE_DEVICES" or "ASCEND_RT_VISIBLE_DEVICES".
const char* DeviceVariable(VllmPlatform platform);
// "vllm serve" or "vllm-ascend serve": the flag table to check against.
const char* ServeTool(VllmPlatform platform);

// --kv-transfer-config for `side`, for the process of DP rank `external_rank`
// when each rank is its own process (0 otherwise). INVALID_ARGUMENT naming
// deployment.kv_transfer.backend for a connector the platform lacks.
absl::StatusOr<std::string> KvTransferConfig(const v1::ExperimentSpec& spec, v1::Side side,
                                             VllmPlatform platform, int external_rank);

// Environment the platform needs for `side` (before the spec's own env);
// `endpoints` gives the side's own address, which NIXL advertises.
std::map<std::string, std::string> PlatformEnv(const v1::ExperimentSpec& spec, v1::Side side,
                                               const core::Endpoints& endpoints,
                                               VllmPlatform platform);

// --additional-config for `side`, empty for none. INVALID_ARGUMENT naming the
// field when additional_config is not a JSON object, or (CUDA) when an
// expert layout is given: stock vLLM has no flag for one.
absl::StatusOr<std::string> AdditionalConfig(const v1::ExperimentSpec& spec, v1::Side side,
                                             VllmPlatform platform);

// The proxy's argv (program, script, flags) for upstreams at these ports;
// its flag-table tool name in `tool`.
absl::StatusOr<std::vector<std::string>> ProxyArgv(const v1::ExperimentSpec& spec,
                                                   const core::Endpoints& endpoints, int port,
                                                   const VllmOptions& options,
                                                   VllmPlatform platform, std::string* tool);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_VLLM_PLATFORM_H_
