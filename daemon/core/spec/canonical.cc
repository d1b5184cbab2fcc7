#include "daemon/core/spec/canonical.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/json_quote.h"
#include "common/regular_file.h"
#include "google/protobuf/duration.pb.h"

namespace servelab::core::spec {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendString(std::string& out, absl::string_view s) { out += JsonQuote(s); }

void AppendDouble(std::string& out, double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

void AppendMessage(std::string& out, const Message& message);

void AppendValue(std::string& out, const Message& message, const FieldDescriptor& field,
                 int index) {
  const Reflection& r = *message.GetReflection();
  const bool rep = index >= 0;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(
          &out, rep ? r.GetRepeatedInt32(message, &field, index) : r.GetInt32(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(
          &out, rep ? r.GetRepeatedInt64(message, &field, index) : r.GetInt64(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(
          &out, rep ? r.GetRepeatedUInt32(message, &field, index) : r.GetUInt32(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(
          &out, rep ? r.GetRepeatedUInt64(message, &field, index) : r.GetUInt64(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      AppendDouble(
          out, rep ? r.GetRepeatedDouble(message, &field, index) : r.GetDouble(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      AppendDouble(out,
                   rep ? r.GetRepeatedFloat(message, &field, index) : r.GetFloat(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out += (rep ? r.GetRepeatedBool(message, &field, index) : r.GetBool(message, &field))
                 ? "true"
                 : "false";
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      AppendString(
          out, rep ? r.GetRepeatedString(message, &field, index) : r.GetString(message, &field));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      AppendString(
          out,
          (rep ? r.GetRepeatedEnum(message, &field, index) : r.GetEnum(message, &field))->name());
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Message& child =
          rep ? r.GetRepeatedMessage(message, &field, index) : r.GetMessage(message, &field);
      if (child.GetDescriptor()->full_name() == "google.protobuf.Duration") {
        const auto& d = static_cast<const google::protobuf::Duration&>(child);
        std::string text = absl::StrCat(d.seconds());
        if (d.nanos() != 0) {
          char buf[16];
          snprintf(buf, sizeof(buf), ".%09d", std::abs(d.nanos()));
          std::string frac(buf);
          while (frac.back() == '0') frac.pop_back();
          if (d.seconds() == 0 && d.nanos() < 0) text = "-0";
          text += frac;
        }
        AppendString(out, text + "s");
      } else {
        AppendMessage(out, child);
      }
      break;
    }
  }
}

// Map entries sorted by key, so insertion order never changes the hash.
void AppendMap(std::string& out, const Message& message, const FieldDescriptor& field) {
  const Reflection& r = *message.GetReflection();
  const FieldDescriptor* key = field.message_type()->FindFieldByName("key");
  const FieldDescriptor* value = field.message_type()->FindFieldByName("value");
  std::vector<const Message*> entries;
  for (int i = 0; i < r.FieldSize(message, &field); ++i) {
    entries.push_back(&r.GetRepeatedMessage(message, &field, i));
  }
  auto key_of = [&](const Message* m) {
    std::string k;
    AppendValue(k, *m, *key, -1);
    return k;
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const Message* a, const Message* b) { return key_of(a) < key_of(b); });
  out += '{';
  for (size_t i = 0; i < entries.size(); ++i) {
    // A later duplicate key overrides an earlier one (proto map semantics).
    if (i + 1 < entries.size() && key_of(entries[i]) == key_of(entries[i + 1])) continue;
    if (out.back() != '{') out += ',';
    std::string k = key_of(entries[i]);
    if (key->cpp_type() != FieldDescriptor::CPPTYPE_STRING) k = absl::StrCat("\"", k, "\"");
    out += k;
    out += ':';
    AppendValue(out, *entries[i], *value, -1);
  }
  out += '}';
}

void AppendField(std::string& out, const Message& message, const FieldDescriptor& field) {
  const Reflection& r = *message.GetReflection();
  if (field.is_map()) {
    AppendMap(out, message, field);
  } else if (field.is_repeated()) {
    out += '[';
    for (int i = 0; i < r.FieldSize(message, &field); ++i) {
      if (i > 0) out += ',';
      AppendValue(out, message, field, i);
    }
    out += ']';
  } else {
    AppendValue(out, message, field, -1);
  }
}

void AppendMessage(std::string& out, const Message& message) {
  // ListFields returns set fields in field-number order, skipping proto3
  // fields at their default value.
  std::vector<const FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  out += '{';
  bool first = true;
  for (const FieldDescriptor* field : fields) {
    if (!first) out += ',';
    first = false;
    AppendString(out, field->name());
    out += ':';
    AppendField(out, message, *field);
  }
  out += '}';
}

}  // namespace

std::string CanonicalJson(const Message& message) {
  std::string out;
  AppendMessage(out, message);
  return out;
}

std::string CanonicalFieldJson(const Message& message, const FieldDescriptor& field) {
  const Reflection& r = *message.GetReflection();
  if (field.is_repeated() ? r.FieldSize(message, &field) == 0 : !r.HasField(message, &field)) {
    return "";
  }
  std::string out;
  AppendField(out, message, field);
  return out;
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

absl::StatusOr<std::string> Sha256File(const std::string& path) {
  // A FIFO or a symlink to /dev/zero would hang the freeze (and the RPC
  // that runs it) forever; only a regular file of a stated size is hashed.
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, kMaxReferencedFileBytes);
  if (!file.ok()) return file.status();
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buffer(1 << 16);
  int64_t total = 0;
  while (true) {
    const ssize_t n = read(file->fd(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::DataLossError(absl::StrCat("error reading \"", path, "\""));
    if (n == 0) break;
    total += n;
    if (total > kMaxReferencedFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat("\"", path, "\" grew past the limit of ",
                                                     kMaxReferencedFileBytes, " bytes"));
    }
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

}  // namespace servelab::core::spec
