#include "daemon/core/spec/proto_yaml.h"

#include <cmath>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "daemon/core/spec/field_path.h"
#include "google/protobuf/duration.pb.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr absl::string_view kFileRef = "servelab.v1.FileRef";

// "CachePrep" -> "CACHE_PREP_": the prefix every value of that enum carries.
std::string EnumPrefix(const EnumDescriptor& e) {
  std::string prefix;
  for (char c : e.name()) {
    if (absl::ascii_isupper(c) && !prefix.empty()) prefix += '_';
    prefix += absl::ascii_toupper(c);
  }
  return prefix + "_";
}

std::string ShortEnumName(const EnumValueDescriptor& v) {
  std::string prefix = EnumPrefix(*v.type());
  std::string name = v.name();
  if (absl::StartsWith(name, prefix)) name = name.substr(prefix.size());
  return absl::AsciiStrToLower(name);
}

// Value 0 (UNSPECIFIED) is "not set", never a choice.
std::string EnumChoices(const EnumDescriptor& e) {
  std::vector<std::string> names;
  for (int i = 0; i < e.value_count(); ++i) {
    if (e.value(i)->number() != 0) names.push_back(ShortEnumName(*e.value(i)));
  }
  return absl::StrJoin(names, ", ");
}

const EnumValueDescriptor* FindEnumValue(const EnumDescriptor& e, absl::string_view text) {
  std::string upper = absl::AsciiStrToUpper(text);
  for (const std::string& candidate : {upper, EnumPrefix(e) + upper}) {
    const EnumValueDescriptor* v = e.FindValueByName(candidate);
    if (v != nullptr && v->number() != 0) return v;
  }
  return nullptr;
}

absl::Status TypeError(const FieldDescriptor& field, const std::string& path,
                       absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", ExpectedType(field), ", got ", got));
}

std::string Quoted(absl::string_view text) { return absl::StrCat("\"", text, "\""); }

bool ParseBool(absl::string_view text, bool* out) {
  std::string lower = absl::AsciiStrToLower(text);
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") {
    *out = true;
    return true;
  }
  if (lower == "false" || lower == "no" || lower == "off" || lower == "0") {
    *out = false;
    return true;
  }
  return false;
}

absl::Status AssignDuration(Message& duration, absl::string_view text, const FieldDescriptor& field,
                            const std::string& path) {
  absl::Duration d;
  if (!absl::ParseDuration(absl::StripAsciiWhitespace(text), &d) || d == absl::InfiniteDuration() ||
      d == -absl::InfiniteDuration()) {
    return TypeError(field, path, Quoted(text));
  }
  auto& out = static_cast<google::protobuf::Duration&>(duration);
  int64_t seconds = absl::IDivDuration(d, absl::Seconds(1), &d);
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
  return absl::OkStatus();
}

// Message-valued text: a Duration, or a FileRef given as its path.
absl::Status AssignMessageText(Message& target, const FieldDescriptor& field,
                               absl::string_view text, const std::string& path) {
  const Descriptor& type = *field.message_type();
  if (type.full_name() == "google.protobuf.Duration") {
    return AssignDuration(target, text, field, path);
  }
  if (type.full_name() == kFileRef) {
    target.Clear();
    const FieldDescriptor* path_field = type.FindFieldByName("path");
    target.GetReflection()->SetString(&target, path_field, std::string(text));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": is a group of fields (", FieldNames(type), "); set one of them"));
}

// The Assign* functions below store one scalar text into `field` of
// `message` for AssignText: into the singular field, as a new last element
// (index kAppend) or into list element `index` (already range-checked).

absl::Status AssignInteger(Message& message, const FieldDescriptor& field, int index,
                           absl::string_view text, const std::string& path) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated(), append = index == kAppend;
  int64_t v;
  if (!absl::SimpleAtoi(text, &v)) return TypeError(field, path, Quoted(text));
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", v, " is out of range"));
    }
    auto v32 = static_cast<int32_t>(v);
    if (!repeated)
      r.SetInt32(&message, &field, v32);
    else if (append)
      r.AddInt32(&message, &field, v32);
    else
      r.SetRepeatedInt32(&message, &field, index, v32);
  } else {
    if (!repeated)
      r.SetInt64(&message, &field, v);
    else if (append)
      r.AddInt64(&message, &field, v);
    else
      r.SetRepeatedInt64(&message, &field, index, v);
  }
  return absl::OkStatus();
}

absl::Status AssignDouble(Message& message, const FieldDescriptor& field, int index,
                          absl::string_view text, const std::string& path) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated(), append = index == kAppend;
  double v;
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) {
    return TypeError(field, path, Quoted(text));
  }
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    return absl::InternalError(absl::StrCat(path, ": float fields are not used in specs"));
  }
  if (!repeated)
    r.SetDouble(&message, &field, v);
  else if (append)
    r.AddDouble(&message, &field, v);
  else
    r.SetRepeatedDouble(&message, &field, index, v);
  return absl::OkStatus();
}

absl::Status AssignBool(Message& message, const FieldDescriptor& field, int index,
                        absl::string_view text, const std::string& path) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated(), append = index == kAppend;
  bool v;
  if (!ParseBool(text, &v)) return TypeError(field, path, Quoted(text));
  if (!repeated)
    r.SetBool(&message, &field, v);
  else if (append)
    r.AddBool(&message, &field, v);
  else
    r.SetRepeatedBool(&message, &field, index, v);
  return absl::OkStatus();
}

absl::Status AssignString(Message& message, const FieldDescriptor& field, int index,
                          absl::string_view text) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated(), append = index == kAppend;
  std::string v(text);
  if (!repeated)
    r.SetString(&message, &field, v);
  else if (append)
    r.AddString(&message, &field, v);
  else
    r.SetRepeatedString(&message, &field, index, v);
  return absl::OkStatus();
}

absl::Status AssignEnum(Message& message, const FieldDescriptor& field, int index,
                        absl::string_view text, const std::string& path) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated(), append = index == kAppend;
  const EnumValueDescriptor* v = FindEnumValue(*field.enum_type(), text);
  if (v == nullptr) return TypeError(field, path, Quoted(text));
  if (!repeated)
    r.SetEnum(&message, &field, v);
  else if (append)
    r.AddEnum(&message, &field, v);
  else
    r.SetRepeatedEnum(&message, &field, index, v);
  return absl::OkStatus();
}

// A Duration or FileRef from its text; an element appended for it is taken
// off again when the text is bad, so a failed `+=` leaves the list as it was.
absl::Status AssignMessage(Message& message, const FieldDescriptor& field, int index,
                           absl::string_view text, const std::string& path) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated(), append = index == kAppend;
  Message* target = !repeated ? r.MutableMessage(&message, &field)
                    : append  ? r.AddMessage(&message, &field)
                              : r.MutableRepeatedMessage(&message, &field, index);
  absl::Status status = AssignMessageText(*target, field, text, path);
  if (!status.ok() && append) r.RemoveLast(&message, &field);
  return status;
}

}  // namespace

std::string ExpectedType(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return "an integer";
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return "a number";
    case FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case FieldDescriptor::CPPTYPE_STRING:
      return "a string";
    case FieldDescriptor::CPPTYPE_ENUM:
      return absl::StrCat("one of: ", EnumChoices(*field.enum_type()));
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (field.message_type()->full_name() == "google.protobuf.Duration") {
        return "a duration (e.g. 90s, 30m, 1h30m)";
      }
      if (field.message_type()->full_name() == kFileRef) return "a file path";
      return absl::StrCat("a mapping of ", FieldNames(*field.message_type()));
  }
  return "a value";
}

absl::Status AssignText(Message& message, const FieldDescriptor& field, int index,
                        absl::string_view text, const std::string& path) {
  const Reflection& r = *message.GetReflection();
  const bool repeated = field.is_repeated();
  if (repeated && index == kSingular) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a list; write [a, b], ", path, "[N]=x or ", path, "+=x"));
  }
  if (repeated && index >= 0 && index >= r.FieldSize(message, &field)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": index ", index, " out of range (the list has ",
                     r.FieldSize(message, &field), " elements); append with +="));
  }
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
      return AssignInteger(message, field, index, text, path);
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::InternalError(absl::StrCat(path, ": unsigned fields are not used in specs"));
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return AssignDouble(message, field, index, text, path);
    case FieldDescriptor::CPPTYPE_BOOL:
      return AssignBool(message, field, index, text, path);
    case FieldDescriptor::CPPTYPE_STRING:
      return AssignString(message, field, index, text);
    case FieldDescriptor::CPPTYPE_ENUM:
      return AssignEnum(message, field, index, text, path);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return AssignMessage(message, field, index, text, path);
  }
  return absl::InternalError(absl::StrCat(path, ": unhandled field type"));
}

// YAML parsers keep one of two equal keys silently; which one a user meant
// is not knowable, so a key given twice is refused.
absl::Status CheckOnce(std::set<std::string>& seen, const YAML::Node& key,
                       const std::string& path) {
  if (seen.insert(key.Scalar()).second) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": given twice (again at line ", key.Mark().line + 1, ")"));
}

absl::Status AssignMapping(Message& message, const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(path.empty() ? "spec" : path,
                                                   ": expected a mapping of ",
                                                   FieldNames(*message.GetDescriptor())));
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    std::string name = entry.first.Scalar();
    const FieldDescriptor* field = message.GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return absl::InvalidArgumentError(UnknownFieldMessage(*message.GetDescriptor(), path, name));
    }
    std::string child = path.empty() ? name : absl::StrCat(path, ".", name);
    SERVELAB_RETURN_IF_ERROR(CheckOnce(seen, entry.first, child));
    SERVELAB_RETURN_IF_ERROR(AssignNode(message, *field, entry.second, child));
  }
  return absl::OkStatus();
}

absl::Status AssignNode(Message& message, const FieldDescriptor& field, const YAML::Node& node,
                        const std::string& path) {
  const Reflection& r = *message.GetReflection();
  if (!node.IsDefined() || node.IsNull()) {
    r.ClearField(&message, &field);
    return absl::OkStatus();
  }
  if (field.is_map()) {
    if (!node.IsMap()) return TypeError(field, path, "a non-mapping value");
    r.ClearField(&message, &field);
    const Descriptor& entry = *field.message_type();
    std::set<std::string> seen;
    for (const auto& kv : node) {
      SERVELAB_RETURN_IF_ERROR(
          CheckOnce(seen, kv.first, absl::StrCat(path, ".", kv.first.Scalar())));
      if (!kv.second.IsScalar()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".", kv.first.Scalar(), ": expected a string value"));
      }
      Message* item = r.AddMessage(&message, &field);
      item->GetReflection()->SetString(item, entry.FindFieldByName("key"), kv.first.Scalar());
      item->GetReflection()->SetString(item, entry.FindFieldByName("value"), kv.second.Scalar());
    }
    return absl::OkStatus();
  }
  if (field.is_repeated()) {
    if (!node.IsSequence()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": expected a list of ", ExpectedType(field)));
    }
    r.ClearField(&message, &field);
    for (size_t i = 0; i < node.size(); ++i) {
      std::string element = absl::StrCat(path, "[", i, "]");
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && node[i].IsMap()) {
        SERVELAB_RETURN_IF_ERROR(AssignMapping(*r.AddMessage(&message, &field), node[i], element));
      } else if (node[i].IsScalar()) {
        SERVELAB_RETURN_IF_ERROR(AssignText(message, field, kAppend, node[i].Scalar(), element));
      } else {
        return TypeError(field, element, "a nested structure");
      }
    }
    return absl::OkStatus();
  }
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && node.IsMap()) {
    Message* child = r.MutableMessage(&message, &field);
    child->Clear();
    return AssignMapping(*child, node, path);
  }
  if (!node.IsScalar()) {
    return TypeError(field, path, node.IsMap() ? "a mapping" : "a list");
  }
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
      !IsValueMessage(*field.message_type()) && field.message_type()->full_name() != kFileRef) {
    return TypeError(field, path, Quoted(node.Scalar()));
  }
  return AssignText(message, field, kSingular, node.Scalar(), path);
}

}  // namespace servelab::core::spec
