#include "common/crash_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/labels.h"

namespace servelab {
namespace {

// Set once before threads start; read-only afterwards.
std::string armed_name;
int64_t armed_pass = 0;
std::atomic<bool> armed{false};
std::atomic<int64_t> passes{0};

bool Known(const std::string& name) {
  for (const std::string& point : AllCrashPoints()) {
    if (point == name) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& AllCrashPoints() {
  static const std::vector<std::string>* points = [] {
    auto* all = new std::vector<std::string>{"ledger.commit.before", "ledger.commit.after"};
    // Every stage: after its RUNNING state is stored, and after its body
    // returned but before its result is stored.
    // (Not freeze: the spec is frozen inside the Submit call, before the
    // experiment exists, not by the stage runner.)
    for (int n = v1::StageName_MIN; n <= v1::StageName_MAX; ++n) {
      if (!v1::StageName_IsValid(n) || n == v1::STAGE_UNSPECIFIED || n == v1::STAGE_FREEZE) {
        continue;
      }
      const std::string stage = StageLabel(static_cast<v1::StageName>(n));
      all->push_back(absl::StrCat("stage.", stage, ".begin"));
      all->push_back(absl::StrCat("stage.", stage, ".end"));
    }
    for (const char* point :
         {"instance.launch.after_spawn", "instance.launch.after_record", "records.batch.after"}) {
      all->push_back(point);
    }
    return all;
  }();
  return *points;
}

absl::Status ArmCrashPointFromEnvironment() {
  const char* value = std::getenv("SERVELAB_CRASH_AT");
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  std::string text = value;
  int64_t pass = 1;
  if (size_t at = text.find('@'); at != std::string::npos) {
    if (!absl::SimpleAtoi(text.substr(at + 1), &pass) || pass < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("SERVELAB_CRASH_AT: \"", text, "\": the pass after @ must be >= 1"));
    }
    text.resize(at);
  }
  if (!Known(text)) {
    return absl::InvalidArgumentError(absl::StrCat("SERVELAB_CRASH_AT: no crash point \"", text,
                                                   "\" (servelabd --list-crash-points)"));
  }
  armed_name = text;
  armed_pass = pass;
  armed.store(true);
  return absl::OkStatus();
}

void CrashPoint(const std::string& name) {
  if (!armed.load(std::memory_order_relaxed)) return;
  if (!Known(name)) {
    std::fprintf(stderr, "servelabd: crash point \"%s\" is not in AllCrashPoints()\n",
                 name.c_str());
    std::abort();
  }
  if (name != armed_name) return;
  if (passes.fetch_add(1) + 1 != armed_pass) return;
  std::fprintf(stderr, "servelabd: crash point %s pass %lld: SIGKILL\n", name.c_str(),
               static_cast<long long>(armed_pass));
  kill(getpid(), SIGKILL);
}

}  // namespace servelab
