#include "daemon/core/spec/spec_delta.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/core/spec/field_path.h"
#include "daemon/core/spec/proto_yaml.h"
#include "yaml-cpp/yaml.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// The message holding the last step, created along the way.
Message& HolderOf(Message& root, const FieldPath& path) {
  Message* current = &root;
  for (size_t i = 0; i + 1 < path.steps.size(); ++i) {
    const PathStep& step = path.steps[i];
    const auto& r = *current->GetReflection();
    current = step.index >= 0 ? r.MutableRepeatedMessage(current, step.field, step.index)
                              : r.MutableMessage(current, step.field);
  }
  return *current;
}

// Intermediate list elements must already exist: a path never creates them.
absl::Status CheckIndexes(const Message& root, const FieldPath& path) {
  const Message* current = &root;
  for (size_t i = 0; i + 1 < path.steps.size(); ++i) {
    const PathStep& step = path.steps[i];
    const auto& r = *current->GetReflection();
    if (step.index >= 0) {
      if (step.index >= r.FieldSize(*current, step.field)) {
        return absl::InvalidArgumentError(absl::StrCat(path.text, ": index ", step.index, " of ",
                                                       step.field->name(), " out of range"));
      }
      current = &r.GetRepeatedMessage(*current, step.field, step.index);
    } else {
      current = &r.GetMessage(*current, step.field);
    }
  }
  return absl::OkStatus();
}

// Removes key `key` of map field `field` in `holder`.
void EraseMapKey(Message& holder, const FieldDescriptor& field, const std::string& key) {
  const auto& r = *holder.GetReflection();
  const FieldDescriptor* key_field = field.message_type()->FindFieldByName("key");
  for (int i = r.FieldSize(holder, &field) - 1; i >= 0; --i) {
    const Message& entry = r.GetRepeatedMessage(holder, &field, i);
    if (entry.GetReflection()->GetString(entry, key_field) == key) {
      r.SwapElements(&holder, &field, i, r.FieldSize(holder, &field) - 1);
      r.RemoveLast(&holder, &field);
    }
  }
}

absl::Status SetMapKey(Message& holder, const FieldDescriptor& field, const std::string& key,
                       absl::string_view value) {
  EraseMapKey(holder, field, key);
  const auto& r = *holder.GetReflection();
  Message* entry = r.AddMessage(&holder, &field);
  entry->GetReflection()->SetString(entry, field.message_type()->FindFieldByName("key"), key);
  entry->GetReflection()->SetString(entry, field.message_type()->FindFieldByName("value"),
                                    std::string(value));
  return absl::OkStatus();
}

// Lists, maps and whole messages given on the command line are YAML flow text.
absl::StatusOr<YAML::Node> ParseFlow(absl::string_view text, const std::string& path) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read \"", text, "\": ", e.msg));
  }
}

absl::Status Apply(Message& spec, const FieldPath& path, bool append, absl::string_view value) {
  SERVELAB_RETURN_IF_ERROR(CheckIndexes(spec, path));
  Message& holder = HolderOf(spec, path);
  const PathStep& last = path.steps.back();
  const FieldDescriptor& field = *last.field;
  if (field.is_map()) {
    if (append) return absl::InvalidArgumentError(absl::StrCat(path.text, ": += needs a list"));
    if (last.has_key) return SetMapKey(holder, field, last.map_key, value);
    SERVELAB_ASSIGN_OR_RETURN(YAML::Node node, ParseFlow(value, path.text));
    return AssignNode(holder, field, node, path.text);
  }
  if (append) {
    if (!field.is_repeated()) {
      return absl::InvalidArgumentError(absl::StrCat(path.text, ": += needs a list"));
    }
    return AssignText(holder, field, kAppend, value, path.text);
  }
  if (field.is_repeated() && last.index >= 0) {
    return AssignText(holder, field, last.index, value, path.text);
  }
  const bool structured =
      field.is_repeated() || (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
                              absl::StartsWith(absl::StripLeadingAsciiWhitespace(value), "{"));
  if (structured) {
    SERVELAB_ASSIGN_OR_RETURN(YAML::Node node, ParseFlow(value, path.text));
    return AssignNode(holder, field, node, path.text);
  }
  return AssignText(holder, field, kSingular, value, path.text);
}

}  // namespace

absl::Status ApplySet(Message& spec, absl::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", assignment, "\": expected PATH=VALUE or PATH+=VALUE"));
  }
  bool append = assignment[eq - 1] == '+';
  absl::string_view path_text = assignment.substr(0, append ? eq - 1 : eq);
  absl::string_view value = assignment.substr(eq + 1);
  SERVELAB_ASSIGN_OR_RETURN(
      FieldPath path, ResolvePath(*spec.GetDescriptor(), absl::StripAsciiWhitespace(path_text)));
  // Work on a copy so a failed assignment leaves the spec as it was.
  std::unique_ptr<Message> copy(spec.New());
  copy->CopyFrom(spec);
  SERVELAB_RETURN_IF_ERROR(Apply(*copy, path, append, value));
  spec.CopyFrom(*copy);
  return absl::OkStatus();
}

absl::Status ApplyUnset(Message& spec, absl::string_view path_text) {
  SERVELAB_ASSIGN_OR_RETURN(
      FieldPath path, ResolvePath(*spec.GetDescriptor(), absl::StripAsciiWhitespace(path_text)));
  SERVELAB_RETURN_IF_ERROR(CheckIndexes(spec, path));
  Message& holder = HolderOf(spec, path);
  const PathStep& last = path.steps.back();
  const auto& r = *holder.GetReflection();
  if (last.has_key) {
    EraseMapKey(holder, *last.field, last.map_key);
  } else if (last.index >= 0) {
    if (last.index >= r.FieldSize(holder, last.field)) {
      return absl::InvalidArgumentError(absl::StrCat(path.text, ": index out of range"));
    }
    // Remove one element, keeping the order of the others.
    for (int i = last.index; i + 1 < r.FieldSize(holder, last.field); ++i) {
      r.SwapElements(&holder, last.field, i, i + 1);
    }
    r.RemoveLast(&holder, last.field);
  } else {
    r.ClearField(&holder, last.field);
  }
  return absl::OkStatus();
}

}  // namespace servelab::core::spec
