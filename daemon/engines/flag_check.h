// The last step of every real-engine Render: the argv it produced is parsed
// against the flag table of the engine release the spec names
// (deployment.engine_version, flag_table.h), so a flag that release does not
// have — a renderer's mistake or a typo in extra_args — fails preflight
// instead of the launch.
//
//   SERVELAB_RETURN_IF_ERROR(CheckRenderedFlags("vllm serve", spec, argv, 2));
//
// Thread-safe (the tables are constant).
#ifndef SERVELAB_DAEMON_ENGINES_FLAG_CHECK_H_
#define SERVELAB_DAEMON_ENGINES_FLAG_CHECK_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "servelab/v1/spec.pb.h"

namespace servelab::engines {

// Parses argv[skip..] with the table of `tool` at the spec's engine_version.
// A server tool (`... serve`, `... launch_server`) at an unknown version is
// INVALID_ARGUMENT naming deployment.engine_version and the known versions; a
// proxy or router, versioned apart from the engine, falls back to its newest
// table. A flag the table rejects is INVALID_ARGUMENT naming the flag, the
// tool and version, and the spec fields that could have put it there.
absl::Status CheckRenderedFlags(std::string_view tool, const v1::ExperimentSpec& spec,
                                const std::vector<std::string>& argv, size_t skip);

}  // namespace servelab::engines

#endif  // SERVELAB_DAEMON_ENGINES_FLAG_CHECK_H_
