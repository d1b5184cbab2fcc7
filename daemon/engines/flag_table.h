// Flag tables: the command-line flags each real engine tool accepts at one
// upstream version, transcribed from its argument parser (the data lives in
// flag_tables/, one file per tool, each citing the upstream file and tag).
// Preflight parses a rendered argv against the table of the tool and version
// the experiment targets, so a flag the engine would reject ("unrecognized
// arguments: --verbose") fails before anything is launched; the engine shim
// in tests/engine_shim/ uses the same tables to behave like the real engine.
//
//   absl::StatusOr<const FlagTable*> table = FindFlagTable("vllm serve", "");
//   absl::StatusOr<ParsedArgs> args = ParseFlags(**table, {"/models/x", "--port", "8100"});
//   // args->positionals == {"/models/x"}, args->flags["--port"] == {"8100"}
//
// ParseFlags follows Python argparse: `--flag value` and `--flag=value`; a
// value may not start with '-' unless it is a negative number; nargs="+"
// lists take values up to the next option; a unique prefix of a long flag
// is that flag (argparse's allow_abbrev); `--` ends the options. Tables whose
// tool uses vLLM's FlexibleArgumentParser also accept underscores in flag
// names (`--max_num_seqs`). Results are keyed by the canonical flag name (an
// alias such as `-tp` or a prefix is reported as `--tensor-parallel-size`).
//
// Errors: INVALID_ARGUMENT naming the flag and "TOOL VERSION" (unknown flag,
// missing value, bad integer/float/JSON, value not in choices, wrong number
// of positionals); NOT_FOUND from FindFlagTable naming the known versions.
// All functions are pure and thread-safe; tables are immutable and live for
// the whole process.
#ifndef SERVELAB_DAEMON_ENGINES_FLAG_TABLE_H_
#define SERVELAB_DAEMON_ENGINES_FLAG_TABLE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace servelab::engines {

enum class FlagValue {
  kNone,          // store_true / store_const: `--x`, no value.
  kInt,           // type=int.
  kFloat,         // type=float.
  kString,        // type=str (or a parser the table does not check further).
  kJson,          // a JSON value (json.loads / a pydantic dataclass from JSON).
  kChoice,        // one of `choices`.
  kList,          // nargs="+" (or "*"): one or more values; `choices` checked per value if set.
  kBoolOptional,  // argparse.BooleanOptionalAction: `--x` and `--no-x`, no value.
};

struct FlagSpec {
  std::string_view name;  // Canonical long name, "--max-num-seqs".
  FlagValue value;
  std::vector<std::string_view> choices;
  // Other option strings of the same argparse action ("-tp", "--prefiller-host").
  std::vector<std::string_view> aliases = {};
  // vLLM's human_readable_int: "16k" = 16000, "1K" = 1024 (kInt only).
  bool human_readable_int = false;
};

struct FlagTable {
  // "vllm serve", "vllm-ascend serve", "vllm toy_proxy", "vllm-ascend lb_proxy",
  // "sglang launch_server", "sglang router".
  std::string_view tool;
  std::string_view version;  // "0.11.1"
  std::string_view source;   // Upstream file(s) and tag/commit it was transcribed from.
  std::vector<FlagSpec> flags;
  int positionals = 0;  // e.g. 1 for `vllm serve MODEL`.
  // vLLM's FlexibleArgumentParser: `--max_num_seqs` is `--max-num-seqs`.
  bool underscores_as_dashes = false;
};

// The table of `tool` at `version`; an empty version means the newest table
// of that tool. NOT_FOUND naming the tool and the versions that exist.
absl::StatusOr<const FlagTable*> FindFlagTable(std::string_view tool, std::string_view version);

// All versions known for a tool, oldest first (empty for an unknown tool).
std::vector<std::string_view> KnownVersions(std::string_view tool);

// Every tool that has at least one table.
std::vector<std::string_view> KnownTools();

struct ParsedArgs {
  std::vector<std::string> positionals;
  // "--port" -> {"8100"}; repeated/list flags accumulate; kNone and
  // kBoolOptional flags -> {} (a `--no-x` form is keyed "--no-x").
  std::map<std::string, std::vector<std::string>> flags;

  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  // The last value given for `flag` (argparse's "last one wins"), or "".
  std::string Last(const std::string& flag) const;
};

// Parses `args` (everything after the program and subcommand/module, e.g.
// after "vllm", "serve") against `table`, as argparse would; see the file
// comment for the rules and errors.
absl::StatusOr<ParsedArgs> ParseFlags(const FlagTable& table, const std::vector<std::string>& args);

// True if `text` is one JSON value (RFC 8259, plus Python json's NaN/Infinity).
bool IsValidJson(std::string_view text);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_FLAG_TABLE_H_
