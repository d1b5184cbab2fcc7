// gtest matchers for absl::Status and absl::StatusOr.
//
//   EXPECT_THAT(store.Put(x), IsOk());
//   EXPECT_THAT(Parse("x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
#ifndef SERVELAB_TESTS_TESTING_STATUS_MATCHERS_H_
#define SERVELAB_TESTS_TESTING_STATUS_MATCHERS_H_

#include <gmock/gmock.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace servelab::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  if (!status.ok()) *result_listener << status.ToString();
  return status.ok();
}

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << status.ToString();
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_STATUS_MATCHERS_H_
