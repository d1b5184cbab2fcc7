// Crash points: named places in servelabd where a test can make the daemon
// die as from kill -9, to prove that a crash anywhere loses nothing and
// repeats nothing (issue 10 R1, docs/design.md §8).
//
//   CrashPoint("ledger.commit.after");   // in the code, after a durable write
//
//   SERVELAB_CRASH_AT=ledger.commit.after@3 servelabd ...   # dies at the 3rd pass
//   servelabd --list-crash-points                          # every name, one per line
//
// Off unless SERVELAB_CRASH_AT names a point: then each pass costs one
// relaxed atomic load. Every name a CrashPoint call uses must be in
// AllCrashPoints(), which is what the crash test enumerates, so a point
// added to the code without its name fails in the tests (CrashPoint aborts
// on an unknown name when armed). Thread-safe.
#ifndef SERVELAB_COMMON_CRASH_POINTS_H_
#define SERVELAB_COMMON_CRASH_POINTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace servelab {

// Every point, in the order a base experiment passes them.
const std::vector<std::string>& AllCrashPoints();

// Reads SERVELAB_CRASH_AT ("NAME" or "NAME@N", N >= 1). INVALID_ARGUMENT
// for a malformed value or a name not in AllCrashPoints(). Call once, at
// start-up, before any thread runs.
absl::Status ArmCrashPointFromEnvironment();

// SIGKILL to this process on the armed pass of `name`.
void CrashPoint(const std::string& name);

}  // namespace servelab

#endif  // SERVELAB_COMMON_CRASH_POINTS_H_
