#include "client/import/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/import/npy_test_util.h"
#include "tests/testing/status_matchers.h"

namespace servelab::client::import {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::ElementsAre;
using testing::EncodeNpyFloat64;
using ::testing::HasSubstr;
using testing::NpyHeaderBlob;

TEST(NpyTest, DecodesFloat64Vector) {
  absl::StatusOr<std::vector<double>> values =
      DecodeNpyFloat64(EncodeNpyFloat64({81234.5, 81234.75, 81234.77}));
  ASSERT_THAT(values, IsOk());
  EXPECT_THAT(*values, ElementsAre(81234.5, 81234.75, 81234.77));
}

TEST(NpyTest, DecodesEmptyArrayAndVersion2Header) {
  EXPECT_THAT(*DecodeNpyFloat64(EncodeNpyFloat64({})), ElementsAre());
  EXPECT_THAT(*DecodeNpyFloat64(EncodeNpyFloat64({1.5}, /*major=*/2)), ElementsAre(1.5));
}

TEST(NpyTest, RejectsOtherDtypesShapesAndShortData) {
  EXPECT_THAT(DecodeNpyFloat64("not npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no \\x93NUMPY magic")));
  EXPECT_THAT(DecodeNpyFloat64(
                  NpyHeaderBlob("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", 8)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype is '<i8'")));
  EXPECT_THAT(DecodeNpyFloat64(
                  NpyHeaderBlob("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 32)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not one-dimensional")));
  std::string blob = EncodeNpyFloat64({1.0, 2.0});
  blob.pop_back();
  EXPECT_THAT(DecodeNpyFloat64(blob),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("array of 2 float64 values has 15 data bytes")));
}

}  // namespace
}  // namespace servelab::client::import
