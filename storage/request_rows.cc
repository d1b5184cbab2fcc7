#include "storage/request_rows.h"

#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "storage/sqlite_db.h"

namespace servelab::storage {
namespace {

using R = v1::RequestRecord;

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// A column together with its encoding, so the name, the order, the bind and
// the read of a field are one line each and cannot drift apart.
struct ColumnCodec {
  RequestColumn column;
  void (*bind)(const R& record, Statement& insert, int param);
  absl::Status (*read)(const Statement& row, int column, R& record);
};

template <auto kGet, auto kSet>
constexpr ColumnCodec IntColumn(std::string_view name) {
  return {{name, "INTEGER", true},
          [](const R& r, Statement& s, int param) { s.BindInt(param, (r.*kGet)()); },
          [](const Statement& s, int column, R& r) {
            using Value = decltype((r.*kGet)());
            (r.*kSet)(static_cast<Value>(s.ColumnInt(column)));
            return absl::OkStatus();
          }};
}

constexpr ColumnCodec kCodecs[] = {
    {{"experiment_id", "TEXT", true},
     [](const R& r, Statement& s, int param) { s.BindText(param, r.experiment_id()); },
     [](const Statement& s, int column, R& r) {
       r.set_experiment_id(std::string(s.ColumnText(column)));
       return absl::OkStatus();
     }},
    IntColumn<&R::phase, &R::set_phase>("phase"),
    IntColumn<&R::attempt, &R::set_attempt>("attempt"),
    IntColumn<&R::request_index, &R::set_request_index>("request_index"),
    IntColumn<&R::planned_send_ns, &R::set_planned_send_ns>("planned_send_ns"),
    IntColumn<&R::sent_ns, &R::set_sent_ns>("sent_ns"),
    IntColumn<&R::first_token_ns, &R::set_first_token_ns>("first_token_ns"),
    IntColumn<&R::end_ns, &R::set_end_ns>("end_ns"),
    {{"chunk_ns", "BLOB", true},
     [](const R& r, Statement& s, int param) { s.BindBlob(param, EncodeChunkNs(r.chunk_ns())); },
     [](const Statement& s, int column, R& r) {
       return DecodeChunkNs(s.ColumnBlob(column), *r.mutable_chunk_ns());
     }},
    IntColumn<&R::prompt_tokens, &R::set_prompt_tokens>("prompt_tokens"),
    IntColumn<&R::completion_tokens, &R::set_completion_tokens>("completion_tokens"),
    IntColumn<&R::cached_tokens, &R::set_cached_tokens>("cached_tokens"),
    IntColumn<&R::http_status, &R::set_http_status>("http_status"),
    {{"error", "TEXT", true},
     [](const R& r, Statement& s, int param) { s.BindText(param, r.error()); },
     [](const Statement& s, int column, R& r) {
       r.set_error(std::string(s.ColumnText(column)));
       return absl::OkStatus();
     }},
    IntColumn<&R::requested_prompt_tokens, &R::set_requested_prompt_tokens>(
        "requested_prompt_tokens"),
    IntColumn<&R::requested_completion_tokens, &R::set_requested_completion_tokens>(
        "requested_completion_tokens"),
    // NULL keeps "unset" distinct from the epoch.
    {{"load_start", "INTEGER", false},
     [](const R& r, Statement& s, int param) {
       if (r.has_load_start()) {
         s.BindInt(param, ToUnixNanos(r.load_start()));
       } else {
         s.BindNull(param);
       }
     },
     [](const Statement& s, int column, R& r) {
       if (!s.IsNull(column)) *r.mutable_load_start() = FromUnixNanos(s.ColumnInt(column));
       return absl::OkStatus();
     }},
    IntColumn<&R::queued_ns, &R::set_queued_ns>("queued_ns"),
    IntColumn<&R::repeat, &R::set_repeat>("repeat"),
};

constexpr std::string_view kPrimaryKey = "experiment_id, phase, attempt, repeat, request_index";

}  // namespace

absl::Span<const RequestColumn> RequestColumns() {
  static const auto* const columns = [] {
    auto* out = new std::vector<RequestColumn>();
    for (const ColumnCodec& codec : kCodecs) out->push_back(codec.column);
    return out;
  }();
  return *columns;
}

const std::string& RequestColumnList() {
  static const auto* const list = new std::string(absl::StrJoin(
      RequestColumns(), ", ",
      [](std::string* out, const RequestColumn& c) { absl::StrAppend(out, ToAbsl(c.name)); }));
  return *list;
}

const std::string& InsertRequestSql() {
  static const auto* const sql = [] {
    std::vector<std::string> params;
    for (size_t i = 1; i <= std::size(kCodecs); ++i) params.push_back(absl::StrCat("?", i));
    return new std::string(absl::StrCat("INSERT INTO requests (", RequestColumnList(), ") VALUES (",
                                        absl::StrJoin(params, ", "), ")"));
  }();
  return *sql;
}

const std::string& CreateRequestsTableSql() {
  static const auto* const sql = [] {
    std::string out = "CREATE TABLE requests (\n";
    for (const RequestColumn& c : RequestColumns()) {
      absl::StrAppend(&out, "  ", ToAbsl(c.name), " ", ToAbsl(c.type),
                      c.not_null ? " NOT NULL" : "", ",\n");
    }
    absl::StrAppend(&out, "  PRIMARY KEY (", ToAbsl(kPrimaryKey), ")\n)");
    return new std::string(std::move(out));
  }();
  return *sql;
}

void BindRequestRow(const v1::RequestRecord& record, Statement& insert) {
  for (size_t i = 0; i < std::size(kCodecs); ++i) {
    kCodecs[i].bind(record, insert, static_cast<int>(i) + 1);
  }
}

absl::Status ReadRequestRow(const Statement& row, v1::RequestRecord& record) {
  record.Clear();
  for (size_t i = 0; i < std::size(kCodecs); ++i) {
    absl::Status status = kCodecs[i].read(row, static_cast<int>(i), record);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::string EncodeChunkNs(const google::protobuf::RepeatedField<int64_t>& values) {
  std::string out(static_cast<size_t>(values.size()) * 8, '\0');
  char* p = out.data();
  for (int64_t value : values) {
    auto u = static_cast<uint64_t>(value);
    for (int b = 0; b < 8; ++b) *p++ = static_cast<char>(u >> (8 * b));
  }
  return out;
}

absl::Status DecodeChunkNs(std::string_view bytes, google::protobuf::RepeatedField<int64_t>& out) {
  if (bytes.size() % 8 != 0) {
    return absl::InternalError(absl::StrCat("corrupt chunk_ns blob of ", bytes.size(), " bytes"));
  }
  out.Clear();
  out.Reserve(static_cast<int>(bytes.size() / 8));
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t u = 0;
    for (int b = 0; b < 8; ++b) u |= uint64_t{static_cast<unsigned char>(bytes[i + b])} << (8 * b);
    out.Add(static_cast<int64_t>(u));
  }
  return absl::OkStatus();
}

int64_t ToUnixNanos(const google::protobuf::Timestamp& ts) {
  return absl::ToUnixNanos(absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos()));
}

google::protobuf::Timestamp FromUnixNanos(int64_t ns) {
  int64_t seconds = ns / kNanosPerSecond;
  int64_t nanos = ns % kNanosPerSecond;
  if (nanos < 0) {  // Timestamp wants nanos in [0, 1e9).
    nanos += kNanosPerSecond;
    seconds -= 1;
  }
  google::protobuf::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(static_cast<int32_t>(nanos));
  return ts;
}

}  // namespace servelab::storage
