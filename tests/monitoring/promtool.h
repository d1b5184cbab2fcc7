// Runs Prometheus's own linter, `promtool check metrics`, on a /metrics
// exposition, so the tests judge the exporters with the tool Prometheus
// users run, not with a parser of ours.
//
//   PromtoolResult r = CheckMetrics(HttpBody(port, "/metrics"));
//   EXPECT_EQ(r.exit_code, 0) << r.output;
//
// promtool comes from Debian's `prometheus` package (deploy/setup.sh
// installs it); a missing binary is a test failure, never a skip.
#ifndef SERVELAB_TESTS_MONITORING_PROMTOOL_H_
#define SERVELAB_TESTS_MONITORING_PROMTOOL_H_

#include <string>
#include <vector>

namespace servelab::testing {

inline constexpr char kPromtool[] = "/usr/bin/promtool";

struct PromtoolResult {
  // promtool's codes: 0 clean, 1 the text does not parse, 3 lint problems.
  int exit_code = -1;
  // stdout and stderr together: one problem per line.
  std::string output;
  std::vector<std::string> problems;
};

// Feeds `exposition` to `promtool check metrics` on its stdin.
PromtoolResult CheckMetrics(const std::string& exposition);

// The problems left once the ones upstream engines force on us are removed:
// vLLM and SGLang name their metrics "vllm:..." / "sglang:...", which the
// linter flags ("metric names should not contain ':'"). The sim must keep
// those names so that dashboards built for the engines read it unchanged.
std::vector<std::string> ProblemsBesidesEngineColons(const PromtoolResult& result);

// Fails the current test, saying how to get promtool, when it is missing.
// Returns whether it is there.
bool RequirePromtool();

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_MONITORING_PROMTOOL_H_
