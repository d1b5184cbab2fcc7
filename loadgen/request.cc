#include "loadgen/request.h"

#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/json_quote.h"

namespace servelab::loadgen {

absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view url) {
  if (absl::StartsWith(url, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported URL ", url, ": https is not supported"));
  }
  if (!absl::StartsWith(url, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("URL must start with http://, got \"", url, "\""));
  }
  absl::string_view rest = url.substr(7);
  Endpoint ep;
  size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  if (slash != absl::string_view::npos) {
    ep.base_path = std::string(rest.substr(slash));
    while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  }
  size_t colon = authority.rfind(':');
  if (colon == absl::string_view::npos) {
    ep.host = std::string(authority);
    ep.port = "80";
  } else {
    ep.host = std::string(authority.substr(0, colon));
    ep.port = std::string(authority.substr(colon + 1));
    int port = 0;
    if (!absl::SimpleAtoi(ep.port, &port) || port <= 0 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("bad port in URL ", url));
    }
  }
  if (ep.host.empty()) return absl::InvalidArgumentError(absl::StrCat("no host in URL ", url));
  return ep;
}

std::string RequestPath(const Endpoint& endpoint, v1::Api api) {
  return absl::StrCat(endpoint.base_path,
                      api == v1::API_CHAT_COMPLETIONS ? "/v1/chat/completions" : "/v1/completions");
}

std::string JsonQuote(absl::string_view s) { return servelab::JsonQuote(s); }

std::string RenderBody(v1::Api api, absl::string_view model, const Prompt& prompt,
                       absl::string_view load_tag) {
  std::string body;
  body.reserve(prompt.token_ids.size() * 7 + prompt.text.size() + 256);
  absl::StrAppend(&body, "{\"model\":", JsonQuote(model));
  if (api == v1::API_CHAT_COMPLETIONS) {
    std::string content = prompt.text;
    for (size_t i = 0; i < prompt.token_ids.size(); ++i) {
      absl::StrAppend(&content, i == 0 ? "t" : " t", prompt.token_ids[i]);
    }
    absl::StrAppend(&body, ",\"messages\":[{\"role\":\"user\",\"content\":", JsonQuote(content),
                    "}]");
  } else if (prompt.token_ids.empty()) {
    absl::StrAppend(&body, ",\"prompt\":", JsonQuote(prompt.text));
  } else {
    body += ",\"prompt\":[";
    for (size_t i = 0; i < prompt.token_ids.size(); ++i) {
      if (i > 0) body.push_back(',');
      absl::StrAppend(&body, prompt.token_ids[i]);
    }
    body.push_back(']');
  }
  if (!load_tag.empty()) absl::StrAppend(&body, ",\"user\":", JsonQuote(load_tag));
  absl::StrAppend(&body, ",\"max_tokens\":", prompt.output_tokens,
                  ",\"min_tokens\":", prompt.output_tokens,
                  ",\"ignore_eos\":true,\"stream\":true,"
                  "\"stream_options\":{\"include_usage\":true}}");
  return body;
}

std::string RenderHttpRequest(const Endpoint& endpoint, v1::Api api, absl::string_view model,
                              const Prompt& prompt, absl::string_view load_tag,
                              absl::string_view request_id) {
  std::string body = RenderBody(api, model, prompt, load_tag);
  std::string head =
      absl::StrCat("POST ", RequestPath(endpoint, api), " HTTP/1.1\r\nHost: ", endpoint.authority(),
                   "\r\nContent-Type: application/json\r\n"
                   "Accept: text/event-stream\r\nConnection: keep-alive\r\n");
  if (!load_tag.empty()) absl::StrAppend(&head, "x-servelab-load: ", load_tag, "\r\n");
  if (!request_id.empty()) absl::StrAppend(&head, "x-request-id: ", request_id, "\r\n");
  absl::StrAppend(&head, "Content-Length: ", body.size(), "\r\n\r\n");
  head += body;
  return head;
}

}  // namespace servelab::loadgen
