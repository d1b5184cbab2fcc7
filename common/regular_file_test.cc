#include "common/regular_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

TEST(ReadRegularFileTest, ReadsARegularFileAndASymlinkToOne) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("a.json"), "{}\n");
  ASSERT_EQ(symlink(dir.File("a.json").c_str(), dir.File("link.json").c_str()), 0);
  EXPECT_EQ(*ReadRegularFile(dir.File("a.json"), 16), "{}\n");
  EXPECT_EQ(*ReadRegularFile(dir.File("link.json"), 16), "{}\n");
}

TEST(ReadRegularFileTest, RefusesWhatIsNotARegularFileWithoutBlockingOrReadingForever) {
  testing::TempDir dir;
  ASSERT_EQ(mkfifo(dir.File("fifo").c_str(), 0600), 0);
  ASSERT_EQ(symlink("/dev/zero", dir.File("zero").c_str()), 0);
  EXPECT_THAT(ReadRegularFile(dir.File("fifo"), 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a FIFO")));
  EXPECT_THAT(ReadRegularFile(dir.File("zero"), 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a character device")));
  EXPECT_THAT(ReadRegularFile(dir.path(), 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a directory")));
  EXPECT_THAT(ReadRegularFile(dir.File("missing"), 16),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("does not exist")));
}

TEST(ReadRegularFileTest, RefusesAFileOverTheLimitNamingBoth) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("big"), std::string(17, 'x'));
  EXPECT_THAT(
      ReadRegularFile(dir.File("big"), 16),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is 17 bytes, over the limit of 16")));
  absl::StatusOr<RegularFile> open = RegularFile::Open(dir.File("big"), 17);
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_EQ(open->size(), 17);
}

}  // namespace
}  // namespace servelab
