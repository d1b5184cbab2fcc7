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
  const char* path = api == v1::API_CHAT_COMPLETIONS ? "/v1/chat/completions"
                     : api == v1::API_GENERATE       ? "/generate"
                                                     : "/v1/completions";
  return absl::StrCat(endpoint.base_path, path);
}

std::string JsonQuote(absl::string_view s) { return servelab::JsonQuote(s); }

namespace {

void AppendTokenIds(const std::vector<int32_t>& ids, std::string& body) {
  body.push_back('[');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) body.push_back(',');
    absl::StrAppend(&body, ids[i]);
  }
  body.push_back(']');
}

// SGLang's /generate (see request.h). ignore_eos fixes the length at
// max_new_tokens (schedule_batch.py check_finished).
std::string RenderGenerateBody(const Prompt& prompt, absl::string_view load_tag,
                               absl::string_view request_id) {
  std::string body;
  body.reserve(prompt.token_ids.size() * 7 + prompt.text.size() + 256);
  if (prompt.token_ids.empty()) {
    absl::StrAppend(&body, "{\"text\":", JsonQuote(prompt.text));
  } else {
    body += "{\"input_ids\":";
    AppendTokenIds(prompt.token_ids, body);
  }
  absl::StrAppend(&body, ",\"sampling_params\":{\"max_new_tokens\":", prompt.output_tokens,
                  ",\"ignore_eos\":true},\"stream\":true");
  if (!load_tag.empty()) {
    absl::StrAppend(&body, ",\"rid\":", JsonQuote(absl::StrCat(load_tag, "#", request_id)));
  }
  body.push_back('}');
  return body;
}

}  // namespace

std::string RenderBody(v1::Api api, absl::string_view model, const Prompt& prompt,
                       absl::string_view load_tag, absl::string_view request_id) {
  if (api == v1::API_GENERATE) return RenderGenerateBody(prompt, load_tag, request_id);
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
    body += ",\"prompt\":";
    AppendTokenIds(prompt.token_ids, body);
  }
  if (!load_tag.empty()) absl::StrAppend(&body, ",\"user\":", JsonQuote(load_tag));
  // No min_tokens: ignore_eos already fixes the length, and a P/D proxy that
  // cuts the prefill leg to max_tokens 1 without touching min_tokens gets a
  // 400 from vLLM (vllm-ascend's load_balance_proxy_server_example.py at
  // 93dbfa65; vLLM SamplingParams._verify_args). docs/design.md §10.
  absl::StrAppend(&body, ",\"max_tokens\":", prompt.output_tokens,
                  ",\"ignore_eos\":true,\"stream\":true,"
                  "\"stream_options\":{\"include_usage\":true}}");
  return body;
}

std::string RenderHttpRequest(const Endpoint& endpoint, v1::Api api, absl::string_view model,
                              const Prompt& prompt, absl::string_view load_tag,
                              absl::string_view request_id) {
  std::string body = RenderBody(api, model, prompt, load_tag, request_id);
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
