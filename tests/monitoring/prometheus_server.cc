#include "tests/monitoring/prometheus_server.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/json_quote.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/daemon/http_get.h"
#include "tests/testing/ports.h"

namespace servelab::testing {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// Every target on 127.0.0.1, grouped by job; scraped every second so a test
// sees a change within a couple of seconds.
std::string ConfigYaml(const std::vector<ScrapeTarget>& targets) {
  std::string yaml =
      "global:\n"
      "  scrape_interval: 1s\n"
      "  scrape_timeout: 1s\n"
      "  evaluation_interval: 1s\n"
      "scrape_configs:\n";
  std::vector<std::string> jobs;
  for (const ScrapeTarget& t : targets) {
    if (std::find(jobs.begin(), jobs.end(), t.job) == jobs.end()) jobs.push_back(t.job);
  }
  for (const std::string& job : jobs) {
    absl::StrAppend(&yaml, "  - job_name: ", JsonQuote(job), "\n");
    const ScrapeTarget& first =
        *std::find_if(targets.begin(), targets.end(), [&](const auto& t) { return t.job == job; });
    if (!first.ca_file.empty()) {
      absl::StrAppend(&yaml, "    scheme: https\n    tls_config:\n      ca_file: ",
                      JsonQuote(first.ca_file), "\n");
    }
    absl::StrAppend(&yaml, "    static_configs:\n");
    for (const ScrapeTarget& t : targets) {
      if (t.job != job) continue;
      absl::StrAppend(&yaml, "      - targets: [\"127.0.0.1:", t.port, "\"]\n");
      if (t.labels.empty()) continue;
      absl::StrAppend(&yaml, "        labels:\n");
      for (const auto& [name, value] : t.labels) {
        absl::StrAppend(&yaml, "          ", name, ": ", JsonQuote(value), "\n");
      }
    }
  }
  return yaml;
}

std::string UrlEncode(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

std::string Body(const std::string& response) {
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// A sample's value as Prometheus writes it: a string, "NaN" and "+Inf" included.
double SampleValue(const Value& pair) {
  if (pair.list_value().values_size() != 2) return NAN;
  return std::strtod(pair.list_value().values(1).string_value().c_str(), nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(
    const std::vector<ScrapeTarget>& targets, const std::string& dir, absl::Duration timeout) {
  if (access(kPrometheus, X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(kPrometheus,
                     " not found: install Debian's prometheus package (deploy/setup.sh does: "
                     "apt-get install --no-install-recommends prometheus)"));
  }
  std::filesystem::create_directories(dir + "/data");
  WriteFile(dir + "/prometheus.yml", ConfigYaml(targets));
  std::string log;
  // The port is free when picked but not held; another process can take it
  // before Prometheus binds, so a lost race is retried on a fresh port.
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const int port = ClosedLoopbackPort();
    const std::string log_prefix = absl::StrCat(dir, "/prometheus", attempt);
    auto process = std::make_unique<Process>(
        std::vector<std::string>{
            kPrometheus,
            absl::StrCat("--config.file=", dir, "/prometheus.yml"),
            absl::StrCat("--storage.tsdb.path=", dir, "/data"),
            absl::StrCat("--web.listen-address=127.0.0.1:", port),
            "--storage.tsdb.retention.time=1d",
        },
        log_prefix);
    const bool ready = WaitFor(
        [&] {
          if (!process->Running()) return true;
          const std::string response = HttpGet("127.0.0.1", port, "/-/ready");
          return absl::StrContains(response.substr(0, response.find("\r\n")), " 200 ");
        },
        timeout);
    log = ReadFile(log_prefix + ".err");
    if (ready && process->Running()) {
      return std::unique_ptr<PrometheusServer>(
          new PrometheusServer(std::move(process), port, log_prefix));
    }
    if (!absl::StrContains(log, "address already in use")) break;
  }
  return absl::UnavailableError(absl::StrCat("prometheus did not get ready:\n", log));
}

PrometheusServer::~PrometheusServer() {
  process_->Signal(SIGTERM);
  // Process's destructor SIGKILLs the group if it is still running.
  process_->Wait(absl::Seconds(20));
}

std::string PrometheusServer::Log() const { return ReadFile(log_prefix_ + ".err"); }

absl::StatusOr<google::protobuf::Struct> PrometheusServer::Api(const std::string& path,
                                                               const std::string& what) const {
  const std::string response = HttpGet("127.0.0.1", port_, path);
  if (response.empty()) return absl::UnavailableError("prometheus: no answer to " + what);
  Struct answer;
  if (!google::protobuf::util::JsonStringToMessage(Body(response), &answer).ok()) {
    return absl::InternalError(absl::StrCat("prometheus: not JSON: ", response));
  }
  const auto& fields = answer.fields();
  if (fields.count("status") == 0 || fields.at("status").string_value() != "success") {
    const std::string error = fields.count("error") ? fields.at("error").string_value() : response;
    return absl::InvalidArgumentError(absl::StrCat("prometheus: ", what, ": ", error));
  }
  if (fields.count("data") == 0) return absl::InternalError("prometheus: no data: " + response);
  return fields.at("data").struct_value();
}

absl::StatusOr<std::string> PrometheusServer::MetricType(const std::string& metric) const {
  absl::StatusOr<Struct> data =
      Api(absl::StrCat("/api/v1/metadata?metric=", UrlEncode(metric)), metric);
  if (!data.ok()) return data.status();
  auto entries = data->fields().find(metric);
  if (entries == data->fields().end() || entries->second.list_value().values_size() == 0) {
    return absl::NotFoundError(absl::StrCat("prometheus has no metadata for ", metric));
  }
  const auto& first = entries->second.list_value().values(0).struct_value().fields();
  return first.count("type") ? first.at("type").string_value() : "";
}

absl::StatusOr<std::vector<PromSample>> PrometheusServer::Query(const std::string& promql,
                                                                absl::Time at) const {
  std::string path = absl::StrCat("/api/v1/query?query=", UrlEncode(promql));
  if (at != absl::InfinitePast()) {
    absl::StrAppendFormat(&path, "&time=%.3f", absl::ToDoubleSeconds(at - absl::UnixEpoch()));
  }
  absl::StatusOr<Struct> answer = Api(path, promql);
  if (!answer.ok()) return answer.status();
  const auto& data = answer->fields();
  const std::string type = data.at("resultType").string_value();
  std::vector<PromSample> samples;
  if (type == "scalar") {
    samples.push_back({.value = SampleValue(data.at("result"))});
    return samples;
  }
  if (type != "vector") {
    return absl::InvalidArgumentError(absl::StrCat("prometheus: ", promql, " gave a ", type));
  }
  for (const Value& element : data.at("result").list_value().values()) {
    const auto& e = element.struct_value().fields();
    PromSample sample{.value = SampleValue(e.at("value"))};
    for (const auto& [name, value] : e.at("metric").struct_value().fields()) {
      sample.labels[name] = value.string_value();
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

absl::StatusOr<std::vector<PromSample>> PrometheusServer::QueryUntil(
    const std::string& promql, const std::function<bool(const std::vector<PromSample>&)>& done,
    absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<std::vector<PromSample>> last = Query(promql);
    if ((last.ok() && done(*last)) || absl::Now() >= deadline) return last;
    // A few times per scrape interval is often enough.
    absl::SleepFor(absl::Milliseconds(200));
  }
}

double OnlyValue(const std::vector<PromSample>& samples) {
  return samples.size() == 1 ? samples.front().value : NAN;
}

}  // namespace servelab::testing
