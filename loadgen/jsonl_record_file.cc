// JSONL record files (format in record_file.h).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "loadgen/record_file.h"

namespace servelab::loadgen {
namespace {

using google::protobuf::util::JsonParseOptions;
using google::protobuf::util::JsonPrintOptions;
using google::protobuf::util::JsonStringToMessage;
using google::protobuf::util::MessageToJsonString;

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

class JsonlSink : public RecordSink {
 public:
  JsonlSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~JsonlSink() override { ::close(fd_); }

  absl::Status WriteAll(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("cannot write", path_);
      done += static_cast<size_t>(n);
    }
    if (::fdatasync(fd_) != 0) return Errno("cannot sync", path_);
    return absl::OkStatus();
  }

  absl::Status Write(const std::vector<v1::RequestRecord>& records) override {
    JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    std::string out;
    for (const auto& r : records) {
      std::string line;
      auto s = MessageToJsonString(r, &line, options);
      if (!s.ok()) return absl::InternalError(s.ToString());
      out += line;
      out.push_back('\n');
    }
    return WriteAll(out);
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RecordSink>> OpenJsonlRecordFile(const std::string& path,
                                                                const v1::ExperimentSpec& spec) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", path);
  auto sink = std::make_unique<JsonlSink>(fd, path);
  JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string spec_json;
  auto s = MessageToJsonString(spec, &spec_json, options);
  if (!s.ok()) return absl::InternalError(s.ToString());
  absl::Status written = sink->WriteAll(absl::StrCat("{\"spec\":", spec_json, "}\n"));
  if (!written.ok()) return written;
  return sink;
}

absl::StatusOr<RecordFile> ReadJsonlRecordFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  RecordFile file;
  std::string line;
  JsonParseOptions options;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    absl::string_view trimmed = absl::StripAsciiWhitespace(line);
    if (trimmed.empty()) continue;
    if (line_no == 1 && absl::StartsWith(trimmed, "{\"spec\":")) {
      absl::string_view spec_json = trimmed.substr(8, trimmed.size() - 9);
      auto s = JsonStringToMessage(std::string(spec_json), &file.spec, options);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":1: bad spec: ", s.ToString()));
      }
      continue;
    }
    v1::RequestRecord r;
    auto s = JsonStringToMessage(std::string(trimmed), &r, options);
    if (!s.ok()) {
      // A crash can leave a torn last line; everything before it is intact.
      if (in.peek() == EOF) break;
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": ", s.ToString()));
    }
    file.records.push_back(std::move(r));
  }
  return file;
}

}  // namespace servelab::loadgen
