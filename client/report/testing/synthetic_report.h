// A made-up but consistent experiment for the report's tests: every stage
// with times (two unattributed gaps), a reused prefill and router and a
// launched decode with its command, two formal runs of records, a result
// with both windows, and a baseline with an inconclusive decision.
//
//   ReportInput input = SyntheticReport({.requests_per_run = 50});
//   std::string html = RenderHtmlReport(input);
#ifndef SERVELAB_CLIENT_REPORT_TESTING_SYNTHETIC_REPORT_H_
#define SERVELAB_CLIENT_REPORT_TESTING_SYNTHETIC_REPORT_H_

#include "client/report/html_report.h"

namespace servelab::client::report::testing {

struct SyntheticOptions {
  int requests_per_run = 200;
  bool with_baseline = true;
};

ReportInput SyntheticReport(const SyntheticOptions& options = {});

// One completed formal record: sent at `sent_s`, first token after `ttft_s`,
// `tokens` (>= 1) tokens `itl_s` apart (load times in seconds).
v1::RequestRecord SyntheticRecord(int index, double sent_s, double ttft_s, int tokens,
                                  double itl_s);

}  // namespace servelab::client::report::testing

#endif  // SERVELAB_CLIENT_REPORT_TESTING_SYNTHETIC_REPORT_H_
