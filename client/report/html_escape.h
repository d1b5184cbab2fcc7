// HTML text and attribute escaping for the report: every string taken from
// an experiment (ids, commands, errors, labels) passes through HtmlEscape
// before it reaches the document.
//
//   absl::StrCat("<pre>", HtmlEscape(command.text()), "</pre>")
//
// Pure function; thread-compatible.
#ifndef SERVELAB_CLIENT_REPORT_HTML_ESCAPE_H_
#define SERVELAB_CLIENT_REPORT_HTML_ESCAPE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace servelab::client::report {

// Replaces & < > " ' with character references; safe in text and in
// double- or single-quoted attribute values.
std::string HtmlEscape(absl::string_view text);

}  // namespace servelab::client::report

#endif  // SERVELAB_CLIENT_REPORT_HTML_ESCAPE_H_
