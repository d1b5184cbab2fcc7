#include "sim/request.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/tokens.h"

namespace servelab::sim {
namespace {

absl::Status AppendContentTokens(const JsonValue& content, std::vector<int64_t>& tokens) {
  if (content.is_string()) {
    for (int64_t t : TokenizeText(content.string_value())) tokens.push_back(t);
    return absl::OkStatus();
  }
  if (content.is_array()) {
    for (const JsonValue& part : content.items()) {
      const JsonValue* text = part.Find("text");
      if (text == nullptr || !text->is_string()) {
        return absl::InvalidArgumentError("messages: only text content parts are supported");
      }
      for (int64_t t : TokenizeText(text->string_value())) tokens.push_back(t);
    }
    return absl::OkStatus();
  }
  if (content.is_null()) return absl::OkStatus();
  return absl::InvalidArgumentError("messages: content must be a string or a list of parts");
}

absl::Status ParsePrompt(const JsonValue& body, ApiKind kind, std::vector<int64_t>& tokens) {
  if (kind == ApiKind::kChat) {
    const JsonValue* messages = body.Find("messages");
    if (messages == nullptr) return absl::InvalidArgumentError("'messages' is required");
    if (!messages->is_array() || messages->items().empty()) {
      return absl::InvalidArgumentError("'messages' must be a non-empty list");
    }
    for (const JsonValue& m : messages->items()) {
      const JsonValue* content = m.Find("content");
      if (!m.is_object() || m.Find("role") == nullptr) {
        return absl::InvalidArgumentError("each message needs a 'role'");
      }
      if (content != nullptr) {
        absl::Status s = AppendContentTokens(*content, tokens);
        if (!s.ok()) return s;
      }
    }
  } else {
    const JsonValue* prompt = body.Find("prompt");
    if (prompt == nullptr || prompt->is_null())
      return absl::InvalidArgumentError("'prompt' is required");
    if (prompt->is_string()) {
      tokens = TokenizeText(prompt->string_value());
    } else if (prompt->is_array()) {
      for (const JsonValue& t : prompt->items()) {
        if (!t.is_integer() || t.int_value() < 0) {
          return absl::InvalidArgumentError(
              "'prompt' must be a string or a list of non-negative token ids (batched prompts "
              "are not supported)");
        }
        tokens.push_back(t.int_value());
      }
    } else {
      return absl::InvalidArgumentError("'prompt' must be a string or a list of token ids");
    }
  }
  if (tokens.empty()) return absl::InvalidArgumentError("the prompt must not be empty");
  return absl::OkStatus();
}

absl::StatusOr<bool> OptionalBool(const JsonValue& obj, absl::string_view key, bool fallback) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_bool())
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a boolean"));
  return v->bool_value();
}

absl::StatusOr<int64_t> OptionalInt(const JsonValue& obj, absl::string_view key, int64_t fallback) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_integer())
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be an integer"));
  return v->int_value();
}

// kv_transfer_params (vLLM's P/D handle, and the sim's own fields) and
// SGLang's bootstrap room.
absl::Status ParsePdFields(const JsonValue& body, GenerationRequest& r) {
  if (const JsonValue* kv = body.Find("kv_transfer_params"); kv != nullptr && kv->is_object()) {
    absl::StatusOr<bool> b = OptionalBool(*kv, "do_remote_prefill", false);
    if (!b.ok()) return b.status();
    r.kv_transferred = *b;
    b = OptionalBool(*kv, "do_remote_decode", false);
    if (!b.ok()) return b.status();
    r.remote_decode = *b;
    absl::StatusOr<int64_t> cached = OptionalInt(*kv, "remote_cached_tokens", -1);
    if (!cached.ok()) return cached.status();
    r.remote_cached_tokens = *cached;
    b = OptionalBool(*kv, "servelab_report_cached_tokens", false);
    if (!b.ok()) return b.status();
    r.always_report_cached_tokens = *b;
  }
  // SGLang's prefill side knows a P/D request by its bootstrap room
  // (python/sglang/srt/disaggregation/prefill.py); sgl-router sets it.
  if (const JsonValue* room = body.Find("bootstrap_room"); room != nullptr && !room->is_null()) {
    r.remote_decode = true;
  }
  return absl::OkStatus();
}

// GenerateReqInput (python/sglang/srt/managers/io_struct.py): "input_ids", a
// list of token ids, or "text"; one request, not a batch.
absl::Status ParseGenerateInput(const JsonValue& body, std::vector<int64_t>& tokens) {
  const JsonValue* ids = body.Find("input_ids");
  const JsonValue* text = body.Find("text");
  if (ids != nullptr && !ids->is_null()) {
    if (!ids->is_array()) return absl::InvalidArgumentError("'input_ids' must be a list of ints");
    for (const JsonValue& t : ids->items()) {
      if (!t.is_integer() || t.int_value() < 0) {
        return absl::InvalidArgumentError(
            "'input_ids' must be a list of non-negative token ids (batches are not supported)");
      }
      tokens.push_back(t.int_value());
    }
  } else if (text != nullptr && text->is_string()) {
    tokens = TokenizeText(text->string_value());
  } else {
    return absl::InvalidArgumentError("Either text or input_ids should be provided.");
  }
  if (tokens.empty()) return absl::InvalidArgumentError("the input must not be empty");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GenerationRequest> ParseGenerationRequest(const JsonValue& body, ApiKind kind,
                                                         const SimConfig& config) {
  if (!body.is_object())
    return absl::InvalidArgumentError("the request body must be a JSON object");
  GenerationRequest r;
  r.kind = kind;
  if (const JsonValue* model = body.Find("model"); model != nullptr && !model->is_null()) {
    if (!model->is_string()) return absl::InvalidArgumentError("'model' must be a string");
    if (model->string_value() != config.model) {
      return absl::NotFoundError(
          absl::StrCat("The model `", model->string_value(), "` does not exist."));
    }
  }
  absl::Status s = ParsePrompt(body, kind, r.prompt_tokens);
  if (!s.ok()) return s;
  const int64_t prompt_len = static_cast<int64_t>(r.prompt_tokens.size());
  if (prompt_len > config.max_model_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("This model's maximum context length is ", config.max_model_len,
                     " tokens. However, your prompt has ", prompt_len, " tokens."));
  }
  // Completions default to 16 tokens like OpenAI; chat to the rest of the context.
  int64_t default_max = kind == ApiKind::kChat ? config.max_model_len - prompt_len : 16;
  absl::StatusOr<int64_t> max_tokens = OptionalInt(body, "max_tokens", default_max);
  if (kind == ApiKind::kChat && body.Find("max_completion_tokens") != nullptr) {
    max_tokens = OptionalInt(body, "max_completion_tokens", default_max);
  }
  if (!max_tokens.ok()) return max_tokens.status();
  if (*max_tokens <= 0) return absl::InvalidArgumentError("'max_tokens' must be at least 1");
  if (prompt_len + *max_tokens > config.max_model_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("This model's maximum context length is ", config.max_model_len,
                     " tokens. However, you requested ", prompt_len + *max_tokens, " tokens (",
                     prompt_len, " in the messages, ", *max_tokens, " in the completion)."));
  }
  r.max_tokens = *max_tokens;
  absl::StatusOr<int64_t> min_tokens = OptionalInt(body, "min_tokens", 0);
  if (!min_tokens.ok()) return min_tokens.status();
  if (*min_tokens < 0 || *min_tokens > r.max_tokens) {
    return absl::InvalidArgumentError("'min_tokens' must be between 0 and max_tokens");
  }
  r.min_tokens = *min_tokens;
  absl::StatusOr<int64_t> n = OptionalInt(body, "n", 1);
  if (!n.ok()) return n.status();
  if (*n != 1) return absl::InvalidArgumentError("only n = 1 is supported");
  absl::StatusOr<bool> b = OptionalBool(body, "ignore_eos", false);
  if (!b.ok()) return b.status();
  r.ignore_eos = *b;
  b = OptionalBool(body, "stream", false);
  if (!b.ok()) return b.status();
  r.stream = *b;
  if (const JsonValue* so = body.Find("stream_options"); so != nullptr && !so->is_null()) {
    if (!so->is_object()) return absl::InvalidArgumentError("'stream_options' must be an object");
    b = OptionalBool(*so, "include_usage", false);
    if (!b.ok()) return b.status();
    r.include_usage = *b;
  }
  if (const JsonValue* user = body.Find("user"); user != nullptr && user->is_string()) {
    r.user = user->string_value();
  }
  s = ParsePdFields(body, r);
  if (!s.ok()) return s;
  return r;
}

absl::StatusOr<GenerationRequest> ParseGenerateRequest(const JsonValue& body,
                                                       const SimConfig& config) {
  if (!body.is_object())
    return absl::InvalidArgumentError("the request body must be a JSON object");
  GenerationRequest r;
  r.kind = ApiKind::kGenerate;
  r.stream_native = true;
  absl::Status s = ParseGenerateInput(body, r.prompt_tokens);
  if (!s.ok()) return s;
  const int64_t prompt_len = static_cast<int64_t>(r.prompt_tokens.size());
  // python/sglang/srt/sampling/sampling_params.py: max_new_tokens 128,
  // min_new_tokens 0, ignore_eos False by default.
  int64_t max_new = 128, min_new = 0;
  const JsonValue* sampling = body.Find("sampling_params");
  if (sampling != nullptr && !sampling->is_null()) {
    if (!sampling->is_object()) {
      return absl::InvalidArgumentError("'sampling_params' must be an object");
    }
    absl::StatusOr<int64_t> v = OptionalInt(*sampling, "max_new_tokens", max_new);
    if (!v.ok()) return v.status();
    max_new = *v;
    v = OptionalInt(*sampling, "min_new_tokens", min_new);
    if (!v.ok()) return v.status();
    min_new = *v;
    absl::StatusOr<bool> ignore_eos = OptionalBool(*sampling, "ignore_eos", false);
    if (!ignore_eos.ok()) return ignore_eos.status();
    r.ignore_eos = *ignore_eos;
  }
  if (max_new < 0 || min_new < 0 || min_new > max_new) {
    return absl::InvalidArgumentError(
        "max_new_tokens must be >= 0 and min_new_tokens in [0, max_new_tokens]");
  }
  if (prompt_len + max_new > config.max_model_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Requested token count exceeds the model's maximum context length of ",
        config.max_model_len, " tokens. You requested a total of ", prompt_len + max_new,
        " tokens: ", prompt_len, " tokens from the input messages and ", max_new,
        " tokens for the completion."));
  }
  r.max_tokens = std::max<int64_t>(max_new, 1);
  r.min_tokens = min_new;
  absl::StatusOr<bool> b = OptionalBool(body, "stream", false);
  if (!b.ok()) return b.status();
  r.stream = *b;
  // The request id the client chose; the load generator puts its load tag
  // before a '#' (sgl-router forwards no other field that could carry it).
  if (const JsonValue* rid = body.Find("rid"); rid != nullptr && rid->is_string()) {
    r.rid = rid->string_value();
    r.user = r.rid.substr(0, r.rid.find('#'));
  }
  s = ParsePdFields(body, r);
  if (!s.ok()) return s;
  return r;
}

int HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

std::string ErrorBody(int http_status, absl::string_view message) {
  const char* type = "InternalServerError";
  if (http_status == 400)
    type = "BadRequestError";
  else if (http_status == 404)
    type = "NotFoundError";
  else if (http_status == 405)
    type = "MethodNotAllowed";
  else if (http_status == 413)
    type = "RequestTooLarge";
  else if (http_status == 503)
    type = "ServiceUnavailableError";
  return absl::StrCat("{\"error\":{\"message\":", JsonQuote(message), ",\"type\":\"", type,
                      "\",\"param\":null,\"code\":", http_status, "}}");
}

}  // namespace servelab::sim
