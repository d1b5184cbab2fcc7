#include "daemon/core/spec/field_path.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string Join(absl::string_view prefix, absl::string_view name) {
  return prefix.empty() ? std::string(name) : absl::StrCat(prefix, ".", name);
}

}  // namespace

bool IsValueMessage(const Descriptor& descriptor) {
  return descriptor.full_name() == "google.protobuf.Duration";
}

std::string FieldNames(const Descriptor& descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor.field_count(); ++i) names.push_back(descriptor.field(i)->name());
  return absl::StrJoin(names, ", ");
}

std::string UnknownFieldMessage(const Descriptor& parent, absl::string_view prefix,
                                absl::string_view name) {
  const FieldDescriptor* best = nullptr;
  size_t best_distance = 0;
  for (int i = 0; i < parent.field_count(); ++i) {
    size_t d = EditDistance(name, parent.field(i)->name());
    if (best == nullptr || d < best_distance) {
      best = parent.field(i);
      best_distance = d;
    }
  }
  std::string message = absl::StrCat("unknown field \"", Join(prefix, name), "\"");
  // Only suggest a name that is plausibly a typo of what was written.
  if (best != nullptr && best_distance <= std::max<size_t>(2, name.size() / 3)) {
    return absl::StrCat(message, " (did you mean \"", Join(prefix, best->name()), "\"?)");
  }
  return absl::StrCat(message, " (valid fields", prefix.empty() ? "" : " of ", prefix, ": ",
                      FieldNames(parent), ")");
}

absl::StatusOr<FieldPath> ResolvePath(const Descriptor& root, absl::string_view path) {
  FieldPath result;
  result.text = std::string(path);
  if (path.empty()) return absl::InvalidArgumentError("empty field path");
  const Descriptor* current = &root;
  std::string walked;
  absl::string_view rest = path;
  while (!rest.empty()) {
    if (current == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", path, "\": \"", walked, "\" has no fields below it"));
    }
    size_t dot = rest.find('.');
    absl::string_view segment = rest.substr(0, dot);
    rest = dot == absl::string_view::npos ? absl::string_view() : rest.substr(dot + 1);

    PathStep step;
    absl::string_view name = segment;
    size_t bracket = segment.find('[');
    if (bracket != absl::string_view::npos) {
      name = segment.substr(0, bracket);
      absl::string_view index_text = segment.substr(bracket + 1);
      if (index_text.empty() || index_text.back() != ']' ||
          !absl::SimpleAtoi(index_text.substr(0, index_text.size() - 1), &step.index) ||
          step.index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", path, "\": bad index in \"", segment, "\" (expected name[N])"));
      }
    }
    step.field = current->FindFieldByName(std::string(name));
    if (step.field == nullptr) {
      return absl::InvalidArgumentError(UnknownFieldMessage(*current, walked, name));
    }
    walked = Join(walked, name);
    if (step.index >= 0 && (!step.field->is_repeated() || step.field->is_map())) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", walked, "\" is not a list; it takes no [index]"));
    }
    if (step.field->is_map()) {
      // Map values are strings here: the remainder of the path is the key.
      if (!rest.empty()) {
        step.map_key = std::string(rest);
        step.has_key = true;
        rest = absl::string_view();
      }
      result.steps.push_back(std::move(step));
      break;
    }
    const bool descends = step.field->type() == FieldDescriptor::TYPE_MESSAGE &&
                          (!step.field->is_repeated() || step.index >= 0);
    current = descends && !IsValueMessage(*step.field->message_type()) ? step.field->message_type()
                                                                       : nullptr;
    result.steps.push_back(std::move(step));
  }
  return result;
}

}  // namespace servelab::core::spec
