#include "tests/workflow/daemon_fixture.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "tests/daemon/http_get.h"
#include "tests/testing/sanitizer.h"

namespace servelab {

using testing::BinPath;
using testing::RunResult;

void DaemonFixture::SetUp() { state_dir_ = dir_.File("state"); }

void DaemonFixture::TearDown() {
  if (daemon_ != nullptr) StopDaemon();
  for (int pid : pids_) kill(pid, SIGKILL);
}

void DaemonFixture::StartDaemon(const std::vector<std::string>& flags,
                                const std::vector<std::string>& env) {
  ASSERT_TRUE(StartDaemonThatMayDie(flags, env)) << "servelabd exited before serving";
}

bool DaemonFixture::StartDaemonThatMayDie(const std::vector<std::string>& flags,
                                          const std::vector<std::string>& env) {
  unlink((state_dir_ + "/servelabd.addr").c_str());
  std::vector<std::string> argv = {BinPath("servelabd"), "--state-dir", state_dir_};
  if (std::find(flags.begin(), flags.end(), "--metrics-listen") == flags.end()) {
    argv.insert(argv.end(), {"--metrics-listen", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), flags.begin(), flags.end());
  daemon_ = std::make_unique<testing::Process>(
      argv, dir_.File(absl::StrCat("servelabd", ++starts_)), env);
  const std::string addr_file = state_dir_ + "/servelabd.addr";
  EXPECT_TRUE(testing::WaitFor(
      [&] { return testing::FileExists(addr_file) || !daemon_->Running(); }, absl::Seconds(30)))
      << testing::ReadFile(dir_.File(absl::StrCat("servelabd", starts_, ".err")));
  if (!testing::FileExists(addr_file)) return false;
  addr_ =
      std::string(absl::StripAsciiWhitespace(testing::ReadFile(state_dir_ + "/servelabd.addr")));
  std::string metrics = std::string(
      absl::StripAsciiWhitespace(testing::ReadFile(state_dir_ + "/servelabd.metrics.addr")));
  EXPECT_TRUE(absl::SimpleAtoi(metrics.substr(metrics.rfind(':') + 1), &metrics_port_)) << metrics;
  return true;
}

void DaemonFixture::StopDaemon() {
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(absl::Seconds(30)), 0);
  daemon_.reset();
}

void DaemonFixture::KillDaemon() {
  daemon_->Signal(SIGKILL);
  daemon_->Wait();
  daemon_.reset();
}

RunResult DaemonFixture::Cli(std::vector<std::string> args) {
  args.insert(args.begin(), {BinPath("servelab"), "--addr", addr_});
  return testing::Run(args, {}, absl::Seconds(120) * testing::kSanitizerTimeFactor);
}

v1::Experiment DaemonFixture::Parse(const RunResult& r) {
  v1::Experiment e;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &e, options).ok())
      << r.out << r.err;
  Remember(e);
  return e;
}

std::string DaemonFixture::Submit(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"-o", "json", "submit"};
  all.insert(all.end(), args.begin(), args.end());
  RunResult r = Cli(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Parse(r).id();
}

v1::Experiment DaemonFixture::Status(const std::string& id) {
  return Parse(Cli({"-o", "json", "status", id}));
}

v1::Experiment DaemonFixture::WaitFinal(const std::string& id) {
  RunResult r = Cli({"wait", id, "--until", "done", "--timeout",
                     absl::StrCat(100 * testing::kSanitizerTimeFactor, "s")});
  EXPECT_NE(r.exit_code, 7) << "timed out: " << r.err;
  return Status(id);
}

bool DaemonFixture::WaitForFormalRecords() {
  return testing::WaitFor(
      [&] {
        RunResult n = testing::Run({"/usr/bin/sqlite3", state_dir_ + "/servelab.db",
                                    "SELECT count(*) FROM requests WHERE phase = 4"});
        return n.exit_code == 0 && n.out != "0\n" && !n.out.empty();
      },
      absl::Seconds(60));
}

void DaemonFixture::Remember(const v1::Experiment& e) {
  // "pid", and "rank<r>_pid" for each extra DP rank.
  for (const v1::Stage& s : e.stages()) {
    for (const auto& [key, value] : s.counters()) {
      if (absl::EndsWith(key, "pid")) pids_.insert(static_cast<int>(value));
    }
  }
}

const v1::Stage& DaemonFixture::StageOf(const v1::Experiment& e, v1::StageName name) {
  for (const v1::Stage& s : e.stages()) {
    if (s.name() == name) return s;
  }
  return v1::Stage::default_instance();
}

int DaemonFixture::Counter(const v1::Experiment& e, v1::StageName name, const std::string& key) {
  const auto& counters = StageOf(e, name).counters();
  return counters.count(key) > 0 ? static_cast<int>(counters.at(key)) : -1;
}

bool DaemonFixture::Alive(int pid) { return pid > 0 && kill(pid, 0) == 0; }

std::string DaemonFixture::HttpBody(int port, const std::string& path) {
  std::string response = testing::HttpGet("127.0.0.1", port, path);
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

double DaemonFixture::MetricSum(int port, const std::string& name) {
  double sum = 0;
  std::istringstream lines(HttpBody(port, "/metrics"));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line[name.size()];
    if (next != ' ' && next != '{') continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) sum += v;
  }
  return sum;
}

}  // namespace servelab
