#include "daemon/core/spec/scope.h"

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/core/spec/canonical.h"
#include "daemon/core/spec/field_path.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool IsStructMessage(const FieldDescriptor& field) {
  return field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field.is_repeated() &&
         !IsValueMessage(*field.message_type());
}

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : absl::StrCat(prefix, ".", name);
}

std::string MapValue(const Message& message, const FieldDescriptor& field, const std::string& key,
                     bool* found) {
  const Reflection& r = *message.GetReflection();
  const FieldDescriptor* key_field = field.message_type()->FindFieldByName("key");
  const FieldDescriptor* value_field = field.message_type()->FindFieldByName("value");
  std::string value;
  *found = false;
  for (int i = 0; i < r.FieldSize(message, &field); ++i) {
    const Message& entry = r.GetRepeatedMessage(message, &field, i);
    if (entry.GetReflection()->GetString(entry, key_field) == key) {
      *found = true;
      value = CanonicalFieldJson(entry, *value_field);
      if (value.empty()) value = "\"\"";
    }
  }
  return value;
}

std::set<std::string> MapKeys(const Message& message, const FieldDescriptor& field) {
  const Reflection& r = *message.GetReflection();
  const FieldDescriptor* key_field = field.message_type()->FindFieldByName("key");
  std::set<std::string> keys;
  for (int i = 0; i < r.FieldSize(message, &field); ++i) {
    const Message& entry = r.GetRepeatedMessage(message, &field, i);
    keys.insert(entry.GetReflection()->GetString(entry, key_field));
  }
  return keys;
}

void Diff(const Message& before, const Message& after, const std::string& prefix, v1::Scope holder,
          std::vector<v1::FieldChange>& out) {
  const auto* descriptor = before.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor& field = *descriptor->field(i);
    const v1::Scope scope = EffectiveScope(field, holder);
    const std::string path = Join(prefix, field.name());
    if (IsStructMessage(field)) {
      Diff(before.GetReflection()->GetMessage(before, &field),
           after.GetReflection()->GetMessage(after, &field), path, scope, out);
      continue;
    }
    if (field.is_map()) {
      std::set<std::string> keys = MapKeys(before, field);
      keys.merge(MapKeys(after, field));
      for (const std::string& key : keys) {
        bool in_before, in_after;
        std::string old_value = MapValue(before, field, key, &in_before);
        std::string new_value = MapValue(after, field, key, &in_after);
        if (in_before != in_after || old_value != new_value) {
          v1::FieldChange& change = out.emplace_back();
          change.set_path(absl::StrCat(path, ".", key));
          change.set_old_value(old_value);
          change.set_new_value(new_value);
          change.set_scope(scope);
        }
      }
      continue;
    }
    std::string old_value = CanonicalFieldJson(before, field);
    std::string new_value = CanonicalFieldJson(after, field);
    if (old_value != new_value) {
      v1::FieldChange& change = out.emplace_back();
      change.set_path(path);
      change.set_old_value(old_value);
      change.set_new_value(new_value);
      change.set_scope(scope);
    }
  }
}

// Clears every leaf outside `scopes`; returns true when nothing is left set.
bool Project(Message& message, v1::Scope holder, const std::set<v1::Scope>& scopes) {
  const Reflection& r = *message.GetReflection();
  const auto* descriptor = message.GetDescriptor();
  bool empty = true;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor& field = *descriptor->field(i);
    const v1::Scope scope = EffectiveScope(field, holder);
    if (IsStructMessage(field)) {
      if (!r.HasField(message, &field)) continue;
      // An emptied sub-message is cleared, so "absent" and "present but
      // empty" fingerprint alike.
      if (Project(*r.MutableMessage(&message, &field), scope, scopes)) {
        r.ClearField(&message, &field);
      } else {
        empty = false;
      }
      continue;
    }
    if (scopes.count(scope) == 0) {
      r.ClearField(&message, &field);
    } else if (field.is_repeated() ? r.FieldSize(message, &field) > 0
                                   : r.HasField(message, &field)) {
      empty = false;
    }
  }
  return empty;
}

}  // namespace

v1::Scope DeclaredScope(const FieldDescriptor& field) {
  return field.options().GetExtension(v1::scope);
}

v1::Scope EffectiveScope(const FieldDescriptor& field, v1::Scope holder) {
  v1::Scope declared = DeclaredScope(field);
  return declared == v1::SCOPE_OF_HOLDER ? holder : declared;
}

std::vector<v1::FieldChange> DiffSpecs(const Message& before, const Message& after) {
  std::vector<v1::FieldChange> changes;
  Diff(before, after, "", v1::SCOPE_UNSPECIFIED, changes);
  return changes;
}

std::string ScopeFingerprint(const Message& spec, const std::set<v1::Scope>& scopes) {
  std::unique_ptr<Message> copy(spec.New());
  copy->CopyFrom(spec);
  Project(*copy, v1::SCOPE_UNSPECIFIED, scopes);
  return Sha256Hex(CanonicalJson(*copy));
}

v1::Fingerprints ComputeFingerprints(const v1::ExperimentSpec& spec) {
  v1::Fingerprints f;
  f.set_prefill(ScopeFingerprint(spec, {v1::SCOPE_PREFILL, v1::SCOPE_DEPLOYMENT}));
  f.set_decode(ScopeFingerprint(spec, {v1::SCOPE_DECODE, v1::SCOPE_DEPLOYMENT}));
  f.set_router(ScopeFingerprint(spec, {v1::SCOPE_ROUTER, v1::SCOPE_DEPLOYMENT}));
  f.set_warmup(ScopeFingerprint(spec, {v1::SCOPE_WARMUP}));
  f.set_cache(ScopeFingerprint(spec, {v1::SCOPE_CACHE}));
  return f;
}

std::string ScopeName(v1::Scope scope) {
  std::string name = v1::Scope_Name(scope);
  return absl::StartsWith(name, "SCOPE_") ? name.substr(6) : name;
}

}  // namespace servelab::core::spec
