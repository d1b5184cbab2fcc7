#include "daemon/engines/spec_template.h"

#include <charconv>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "daemon/core/spec/field_path.h"
#include "daemon/engines/render_common.h"
#include "google/protobuf/reflection.h"

namespace servelab::engines {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Shortest text that reads back as the same double (StrCat keeps only 6
// significant digits, which would change a rate of 0.1234567).
std::string DoubleText(double v) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
  return std::string(buffer, result.ptr);
}

std::string DurationText(const Message& duration) {
  const Reflection& r = *duration.GetReflection();
  const auto* d = duration.GetDescriptor();
  absl::Duration value = absl::Seconds(r.GetInt64(duration, d->FindFieldByName("seconds"))) +
                         absl::Nanoseconds(r.GetInt32(duration, d->FindFieldByName("nanos")));
  return absl::FormatDuration(value);
}

// One value of `field` in `message`; index -1 for a singular field.
absl::StatusOr<std::string> ValueText(const Message& message, const FieldDescriptor& field,
                                      int index, absl::string_view path) {
  const Reflection& r = *message.GetReflection();
  const bool rep = index >= 0;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r.GetRepeatedInt32(message, &field, index)
                              : r.GetInt32(message, &field));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r.GetRepeatedInt64(message, &field, index)
                              : r.GetInt64(message, &field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r.GetRepeatedUInt32(message, &field, index)
                              : r.GetUInt32(message, &field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r.GetRepeatedUInt64(message, &field, index)
                              : r.GetUInt64(message, &field));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return DoubleText(rep ? r.GetRepeatedDouble(message, &field, index)
                            : r.GetDouble(message, &field));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return DoubleText(rep ? r.GetRepeatedFloat(message, &field, index)
                            : r.GetFloat(message, &field));
    case FieldDescriptor::CPPTYPE_BOOL:
      return std::string(
          (rep ? r.GetRepeatedBool(message, &field, index) : r.GetBool(message, &field)) ? "true"
                                                                                         : "false");
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r.GetRepeatedString(message, &field, index) : r.GetString(message, &field);
    case FieldDescriptor::CPPTYPE_ENUM:
      return (rep ? r.GetRepeatedEnum(message, &field, index) : r.GetEnum(message, &field))->name();
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Message& value =
          rep ? r.GetRepeatedMessage(message, &field, index) : r.GetMessage(message, &field);
      if (core::spec::IsValueMessage(*value.GetDescriptor())) return DurationText(value);
      return absl::InvalidArgumentError(
          absl::StrCat("{", path, "} is a message, not a value; name one of its fields"));
    }
  }
  return absl::InternalError("unhandled field type");
}

}  // namespace

absl::StatusOr<std::string> SpecFieldText(const v1::ExperimentSpec& spec, absl::string_view path) {
  absl::StatusOr<core::spec::FieldPath> resolved =
      core::spec::ResolvePath(*v1::ExperimentSpec::descriptor(), path);
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("placeholder {", path, "}: ", resolved.status().message()));
  }
  const Message* message = &spec;
  const std::vector<core::spec::PathStep>& steps = resolved->steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    const core::spec::PathStep& step = steps[i];
    const FieldDescriptor& field = *step.field;
    const Reflection& r = *message->GetReflection();
    const bool last = i + 1 == steps.size();
    if (field.is_map()) {
      if (!step.has_key) {
        return absl::InvalidArgumentError(
            absl::StrCat("{", path, "} is a map; name a key, e.g. {", path, ".KEY}"));
      }
      // Map values in the spec are strings (labels, env).
      for (int e = 0; e < r.FieldSize(*message, &field); ++e) {
        const Message& entry = r.GetRepeatedMessage(*message, &field, e);
        const auto* d = entry.GetDescriptor();
        if (entry.GetReflection()->GetString(entry, d->map_key()) == step.map_key) {
          return ValueText(entry, *d->map_value(), -1, path);
        }
      }
      return absl::InvalidArgumentError(
          absl::StrCat("placeholder {", path, "}: no key \"", step.map_key, "\" in the spec"));
    }
    if (field.is_repeated()) {
      int size = r.FieldSize(*message, &field);
      if (step.index < 0) {
        if (!last || field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          return absl::InvalidArgumentError(
              absl::StrCat("{", path, "} is a list of messages; index one element"));
        }
        std::vector<std::string> values;
        for (int e = 0; e < size; ++e) {
          absl::StatusOr<std::string> v = ValueText(*message, field, e, path);
          if (!v.ok()) return v.status();
          values.push_back(*std::move(v));
        }
        return absl::StrJoin(values, ",");
      }
      if (step.index >= size) {
        return absl::InvalidArgumentError(absl::StrCat("placeholder {", path, "}: index ",
                                                       step.index, " but the list has ", size,
                                                       " element(s)"));
      }
      if (last) return ValueText(*message, field, step.index, path);
      message = &r.GetRepeatedMessage(*message, &field, step.index);
      continue;
    }
    if (last) return ValueText(*message, field, -1, path);
    message = &r.GetMessage(*message, &field);
  }
  return absl::InternalError(absl::StrCat("placeholder {", path, "} resolved to nothing"));
}

std::map<std::string, std::string> TemplateVariables(const v1::ExperimentSpec& spec, v1::Side side,
                                                     int port, const core::Endpoints& endpoints,
                                                     const std::string& log_dir) {
  std::map<std::string, std::string> vars = {
      {"port", absl::StrCat(port)}, {"side", SideLabel(side)}, {"log_dir", log_dir}};
  auto known = [&](const char* name, int endpoint_port, int spec_port, const std::string& host,
                   v1::Side of) {
    int p = of == side ? port : (endpoint_port != 0 ? endpoint_port : spec_port);
    if (p == 0) return;
    vars[absl::StrCat(name, "_port")] = absl::StrCat(p);
    vars[absl::StrCat(name, "_url")] = HostUrl(host, p);
  };
  known("prefill", endpoints.prefill_port, spec.deployment().prefill().port(),
        endpoints.prefill_host, v1::SIDE_PREFILL);
  known("decode", endpoints.decode_port, spec.deployment().decode().port(), endpoints.decode_host,
        v1::SIDE_DECODE);
  known("router", endpoints.router_port, spec.deployment().router().port(), "127.0.0.1",
        v1::SIDE_ROUTER);
  return vars;
}

absl::StatusOr<std::string> ExpandTemplate(absl::string_view text, const v1::ExperimentSpec& spec,
                                           const std::map<std::string, std::string>& variables,
                                           absl::string_view where) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unmatched '}' in \"", text, "\" (write }} for a literal brace)"));
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    size_t close = text.find('}', i + 1);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unterminated placeholder in \"", text, "\""));
    }
    std::string name(text.substr(i + 1, close - i - 1));
    i = close + 1;
    if (auto it = variables.find(name); it != variables.end()) {
      out += it->second;
      continue;
    }
    bool is_variable = false;
    for (const char* v : kTemplateVariableNames) is_variable = is_variable || name == v;
    if (is_variable) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": placeholder {", name, "} is not known when rendering this side"));
    }
    absl::StatusOr<std::string> value = SpecFieldText(spec, name);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", value.status().message(),
                       " (variables: ", absl::StrJoin(kTemplateVariableNames, ", "), ")"));
    }
    out += *value;
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ExpandArgv(
    const google::protobuf::RepeatedPtrField<std::string>& argv_template,
    const v1::ExperimentSpec& spec, const std::map<std::string, std::string>& variables,
    absl::string_view where) {
  if (argv_template.empty()) return absl::InvalidArgumentError(absl::StrCat(where, " is empty"));
  std::vector<std::string> argv;
  for (int i = 0; i < argv_template.size(); ++i) {
    absl::StatusOr<std::string> arg =
        ExpandTemplate(argv_template[i], spec, variables, absl::StrCat(where, "[", i, "]"));
    if (!arg.ok()) return arg.status();
    argv.push_back(*std::move(arg));
  }
  if (argv[0].empty() || argv[0][0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "[0] must be an absolute path (no shell, no PATH lookup), got \"", argv[0], "\""));
  }
  return argv;
}

}  // namespace servelab::engines
