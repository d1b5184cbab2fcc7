// Human-readable text of a Result: both windows side by side, each labeled
// with its bounds, then schedule lag, exactness and phase timings. Used by
// servelab-load and the CLI so the two print the same facts the same way.
#ifndef SERVELAB_ANALYSIS_REPORT_H_
#define SERVELAB_ANALYSIS_REPORT_H_

#include <string>

#include "servelab/v1/result.pb.h"

namespace servelab::analysis {

std::string FormatResult(const v1::Result& result);

}  // namespace servelab::analysis

#endif  // SERVELAB_ANALYSIS_REPORT_H_
