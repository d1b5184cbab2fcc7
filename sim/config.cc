#include "sim/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace servelab::sim {

absl::StatusOr<Role> ParseRole(const std::string& name) {
  if (name == "unified") return Role::kUnified;
  if (name == "prefill") return Role::kPrefill;
  if (name == "decode") return Role::kDecode;
  if (name == "router") return Role::kRouter;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role '", name, "' (want prefill, decode, router or unified)"));
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kUnified:
      return "unified";
    case Role::kPrefill:
      return "prefill";
    case Role::kDecode:
      return "decode";
    case Role::kRouter:
      return "router";
  }
  return "?";
}

namespace {

// One table of settable fields serves both the YAML file and the admin JSON,
// so the two cannot drift apart.
using Setter = std::function<void(double)>;
struct Field {
  bool integer;
  Setter set;
};

std::map<std::string, Field> FaultFields(FaultConfig& f) {
  auto i64 = [](int64_t& x) {
    return Field{true, [&x](double v) { x = static_cast<int64_t>(v); }};
  };
  auto i32 = [](int& x) { return Field{true, [&x](double v) { x = static_cast<int>(v); }}; };
  auto dbl = [](double& x) { return Field{false, [&x](double v) { x = v; }}; };
  return {
      {"exit_after_requests", i64(f.exit_after_requests)},
      {"exit_code", i32(f.exit_code)},
      {"hang_next", i64(f.hang_next)},
      {"hang_fraction", dbl(f.hang_fraction)},
      {"error_next", i64(f.error_next)},
      {"error_fraction", dbl(f.error_fraction)},
      {"error_status", i32(f.error_status)},
      {"drop_next", i64(f.drop_next)},
      {"drop_fraction", dbl(f.drop_fraction)},
      {"drop_after_tokens", i64(f.drop_after_tokens)},
      {"slow_start_seconds", dbl(f.slow_start_seconds)},
      {"refuse_connections_seconds", dbl(f.refuse_connections_seconds)},
  };
}

std::map<std::string, Field> ModelFields(SimConfig& c) {
  auto i64 = [](int64_t& x) {
    return Field{true, [&x](double v) { x = static_cast<int64_t>(v); }};
  };
  auto dbl = [](double& x) { return Field{false, [&x](double v) { x = v; }}; };
  return {
      {"load_time_seconds", dbl(c.load_time_seconds)},
      {"cold_start_requests", i64(c.cold_start_requests)},
      {"cold_start_penalty_seconds", dbl(c.cold_start_penalty_seconds)},
      {"max_num_seqs", i64(c.max_num_seqs)},
      {"max_num_batched_tokens", i64(c.max_num_batched_tokens)},
      {"max_model_len", i64(c.max_model_len)},
      {"block_size", i64(c.block_size)},
      {"num_gpu_blocks", i64(c.num_gpu_blocks)},
      {"prefill_overhead_seconds", dbl(c.prefill_overhead_seconds)},
      {"prefill_chunk_overhead_seconds", dbl(c.prefill_chunk_overhead_seconds)},
      {"prefill_seconds_per_token", dbl(c.prefill_seconds_per_token)},
      {"prefill_batch_slowdown", dbl(c.prefill_batch_slowdown)},
      {"decode_base_seconds", dbl(c.decode_base_seconds)},
      {"decode_seconds_per_seq", dbl(c.decode_seconds_per_seq)},
      {"kv_transfer_overhead_seconds", dbl(c.kv_transfer_overhead_seconds)},
      {"kv_transfer_seconds_per_token", dbl(c.kv_transfer_seconds_per_token)},
      {"jitter", dbl(c.jitter)},
      {"eos_probability", dbl(c.eos_probability)},
      {"max_body_bytes", i64(c.max_body_bytes)},
      {"debug_request_history", i64(c.debug_request_history)},
  };
}

absl::Status SetYamlNumber(const YAML::Node& node, const Field& field, const std::string& path) {
  if (!node.IsScalar())
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a number"));
  try {
    if (field.integer) {
      field.set(static_cast<double>(node.as<int64_t>()));
    } else {
      field.set(node.as<double>());
    }
  } catch (const YAML::Exception&) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected ",
                                                   field.integer ? "an integer" : "a number",
                                                   ", got '", node.Scalar(), "'"));
  }
  return absl::OkStatus();
}

absl::Status ParseYamlFaults(const YAML::Node& node, const std::string& where, FaultConfig& f) {
  if (!node.IsMap())
    return absl::InvalidArgumentError(absl::StrCat(where, ": faults: expected a mapping"));
  std::map<std::string, Field> fields = FaultFields(f);
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    auto it = fields.find(key);
    std::string path = absl::StrCat(where, ": faults.", key);
    if (it == fields.end()) return absl::InvalidArgumentError(absl::StrCat(path, ": unknown key"));
    absl::Status s = SetYamlNumber(kv.second, it->second, path);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

bool InUnit(double x) { return x >= 0 && x <= 1; }

}  // namespace

absl::StatusOr<SimConfig> ParseSimConfig(const std::string& text, const std::string& where) {
  SimConfig config;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
  }
  if (root.IsNull()) return config;
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(where, ": expected a mapping"));
  std::map<std::string, Field> fields = ModelFields(config);
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (key == "faults") {
        absl::Status s = ParseYamlFaults(kv.second, where, config.faults);
        if (!s.ok()) return s;
      } else if (key == "model") {
        config.model = kv.second.as<std::string>();
      } else if (key == "kv_lease_seconds") {
        config.kv_lease_seconds = kv.second.as<double>();
      } else if (key == "enable_prefix_caching") {
        config.enable_prefix_caching = kv.second.as<bool>();
      } else if (auto it = fields.find(key); it != fields.end()) {
        absl::Status s = SetYamlNumber(kv.second, it->second, absl::StrCat(where, ": ", key));
        if (!s.ok()) return s;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", key, ": unknown key"));
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
  }
  absl::Status s = ValidateSimConfig(config);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
  return config;
}

absl::StatusOr<SimConfig> LoadSimConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read config file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSimConfig(ss.str(), path);
}

absl::Status ValidateSimConfig(const SimConfig& c) {
  if (c.model.empty()) return absl::InvalidArgumentError("model must not be empty");
  if (c.max_num_seqs < 1) return absl::InvalidArgumentError("max_num_seqs must be >= 1");
  if (c.max_num_batched_tokens < 1)
    return absl::InvalidArgumentError("max_num_batched_tokens must be >= 1");
  if (c.max_model_len < 2) return absl::InvalidArgumentError("max_model_len must be >= 2");
  if (c.block_size < 1) return absl::InvalidArgumentError("block_size must be >= 1");
  if (c.num_gpu_blocks < 1) return absl::InvalidArgumentError("num_gpu_blocks must be >= 1");
  for (double d : {c.load_time_seconds, c.cold_start_penalty_seconds, c.prefill_overhead_seconds,
                   c.prefill_chunk_overhead_seconds, c.prefill_seconds_per_token,
                   c.prefill_batch_slowdown, c.decode_base_seconds, c.decode_seconds_per_seq,
                   c.kv_transfer_overhead_seconds, c.kv_transfer_seconds_per_token}) {
    if (d < 0) return absl::InvalidArgumentError("durations and costs must be >= 0");
  }
  if (c.kv_lease_seconds.has_value() && *c.kv_lease_seconds < 0) {
    return absl::InvalidArgumentError("kv_lease_seconds must be >= 0");
  }
  if (!InUnit(c.jitter) || !InUnit(c.eos_probability)) {
    return absl::InvalidArgumentError("jitter and eos_probability must be in [0, 1]");
  }
  const FaultConfig& f = c.faults;
  if (!InUnit(f.hang_fraction) || !InUnit(f.error_fraction) || !InUnit(f.drop_fraction)) {
    return absl::InvalidArgumentError("fault fractions must be in [0, 1]");
  }
  if (f.error_status < 400 || f.error_status > 599) {
    return absl::InvalidArgumentError("faults.error_status must be a 4xx or 5xx code");
  }
  if (f.exit_after_requests < 0 || f.hang_next < 0 || f.error_next < 0 || f.drop_next < 0 ||
      f.drop_after_tokens < 0 || f.slow_start_seconds < 0 || f.refuse_connections_seconds < 0) {
    return absl::InvalidArgumentError("fault counts and durations must be >= 0");
  }
  return absl::OkStatus();
}

absl::Status MergeFaults(const JsonValue& body, FaultConfig& faults) {
  if (!body.is_object()) return absl::InvalidArgumentError("faults body must be a JSON object");
  FaultConfig merged = faults;
  if (const JsonValue* clear = body.Find("clear"); clear != nullptr) {
    if (!clear->is_bool()) return absl::InvalidArgumentError("clear: expected a boolean");
    if (clear->bool_value()) merged = FaultConfig();
  }
  std::map<std::string, Field> fields = FaultFields(merged);
  for (const auto& [key, value] : body.members()) {
    if (key == "clear") continue;
    auto it = fields.find(key);
    if (it == fields.end()) return absl::InvalidArgumentError(absl::StrCat(key, ": unknown fault"));
    if (!value.is_number() || (it->second.integer && !value.is_integer())) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": expected ", it->second.integer ? "an integer" : "a number"));
    }
    it->second.set(value.number());
  }
  SimConfig probe;
  probe.faults = merged;
  absl::Status s = ValidateSimConfig(probe);
  if (!s.ok()) return s;
  faults = merged;
  return absl::OkStatus();
}

std::string FaultsToJson(const FaultConfig& f) {
  return absl::StrCat(
      "{\"exit_after_requests\":", f.exit_after_requests, ",\"exit_code\":", f.exit_code,
      ",\"hang_next\":", f.hang_next, ",\"hang_fraction\":", f.hang_fraction,
      ",\"error_next\":", f.error_next, ",\"error_fraction\":", f.error_fraction,
      ",\"error_status\":", f.error_status, ",\"drop_next\":", f.drop_next,
      ",\"drop_fraction\":", f.drop_fraction, ",\"drop_after_tokens\":", f.drop_after_tokens,
      ",\"slow_start_seconds\":", f.slow_start_seconds,
      ",\"refuse_connections_seconds\":", f.refuse_connections_seconds, "}");
}

}  // namespace servelab::sim
