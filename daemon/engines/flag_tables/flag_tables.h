// The transcribed tables, one function per tool and version (each defined in
// its own data file beside this header). Internal to servelab_flag_table:
// callers use FindFlagTable in daemon/engines/flag_table.h.
#ifndef SERVELAB_DAEMON_ENGINES_FLAG_TABLES_FLAG_TABLES_H_
#define SERVELAB_DAEMON_ENGINES_FLAG_TABLES_FLAG_TABLES_H_

#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "daemon/engines/flag_table.h"

namespace servelab::engines::flag_tables {

// One flag of a transcribed table, as namespace-scope constant data: the
// fields of FlagSpec in FlagSpec's order, so a row reads like one, e.g.
//   {"--tp-size", kInt, {}, {"--tensor-parallel-size"}}.
// The lists are initializer_lists, whose arrays live as long as the row, so
// the data needs no heap and no destructor; a table's function turns its
// rows into FlagSpecs once (ToFlagSpecs). Rows must therefore be objects of
// static storage duration, never temporaries.
struct FlagRow {
  std::string_view name;
  FlagValue value;
  std::initializer_list<std::string_view> choices = {};
  std::initializer_list<std::string_view> aliases = {};
  bool human_readable_int = false;
};

inline std::vector<FlagSpec> ToFlagSpecs(std::span<const FlagRow> rows) {
  std::vector<FlagSpec> flags;
  flags.reserve(rows.size());
  for (const FlagRow& row : rows) {
    flags.push_back(FlagSpec{row.name, row.value, std::vector<std::string_view>(row.choices),
                             std::vector<std::string_view>(row.aliases), row.human_readable_int});
  }
  return flags;
}

const FlagTable& VllmServe0111();
const FlagTable& VllmAscendServe0110rc0();
const FlagTable& VllmToyProxy0111();
const FlagTable& VllmAscendLbProxy0110rc0();
const FlagTable& SglangLaunchServer055();
const FlagTable& SglangRouter021();

// vLLM's `serve` flags at 0.11.1, shared with vllm-ascend (whose CLI is vLLM's).
std::vector<FlagSpec> VllmServeFlags0111();

}  // namespace servelab::engines::flag_tables

#endif  // SERVELAB_DAEMON_ENGINES_FLAG_TABLES_FLAG_TABLES_H_
