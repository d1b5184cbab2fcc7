#include "daemon/service/state_dir_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::service {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

TEST(StateDirLockTest, WritesPidAndRefusesASecondHolder) {
  testing::TempDir dir;
  std::string path = dir.File("servelabd.lock");
  auto first = StateDirLock::Acquire(path);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(testing::ReadFile(path), absl::StrCat(getpid(), "\n"));
  // flock conflicts between open file descriptions, even in one process.
  EXPECT_THAT(StateDirLock::Acquire(path), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                    HasSubstr(absl::StrCat("pid ", getpid()))));
  first->reset();
  EXPECT_THAT(StateDirLock::Acquire(path), IsOk());
}

TEST(StateDirLockTest, UnwritableDirectoryIsAnError) {
  EXPECT_THAT(StateDirLock::Acquire("/nonexistent-dir/servelabd.lock"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("/nonexistent-dir")));
}

}  // namespace
}  // namespace servelab::service
