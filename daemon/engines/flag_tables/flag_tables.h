// The transcribed tables, one function per tool and version (each defined in
// its own data file beside this header). Internal to servelab_flag_table:
// callers use FindFlagTable in daemon/engines/flag_table.h.
#ifndef SERVELAB_DAEMON_ENGINES_FLAG_TABLES_FLAG_TABLES_H_
#define SERVELAB_DAEMON_ENGINES_FLAG_TABLES_FLAG_TABLES_H_

#include "daemon/engines/flag_table.h"

namespace servelab::engines::flag_tables {

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
