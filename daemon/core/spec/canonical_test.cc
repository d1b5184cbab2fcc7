#include "daemon/core/spec/canonical.h"

#include <gtest/gtest.h>

#include "servelab/v1/spec.pb.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::core::spec {
namespace {

using servelab::testing::IsOk;

TEST(CanonicalTest, KnownSha256) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  servelab::testing::TempDir dir;
  servelab::testing::WriteFile(dir.File("f"), "abc");
  absl::StatusOr<std::string> sha = Sha256File(dir.File("f"));
  ASSERT_THAT(sha, IsOk());
  EXPECT_EQ(*sha, Sha256Hex("abc"));
  EXPECT_EQ(Sha256File(dir.File("missing")).status().code(), absl::StatusCode::kNotFound);
}

TEST(CanonicalTest, FieldNumberOrderDefaultsOmittedMapsSorted) {
  v1::ExperimentSpec spec;
  spec.mutable_workload()->set_concurrency(96);
  spec.mutable_workload()->set_request_rate(0.1);
  spec.set_scenario("s");
  (*spec.mutable_labels())["b"] = "2";
  (*spec.mutable_labels())["a"] = "1";
  spec.mutable_limits()->mutable_formal_deadline()->set_seconds(90);
  spec.mutable_analysis()->mutable_slo()->mutable_tpot()->set_nanos(50000000);
  spec.mutable_deployment()->mutable_decode()->set_max_num_seqs(0);
  EXPECT_EQ(CanonicalJson(spec),
            R"({"scenario":"s","deployment":{"decode":{}},"workload":{"concurrency":96,)"
            R"("request_rate":0.1},"analysis":{"slo":{"tpot":"0.05s"}},)"
            R"("limits":{"formal_deadline":"90s"},"labels":{"a":"1","b":"2"}})");
}

TEST(CanonicalTest, InsertionOrderDoesNotChangeTheHash) {
  v1::ExperimentSpec a;
  (*a.mutable_labels())["x"] = "1";
  (*a.mutable_labels())["y"] = "2";
  a.mutable_workload()->set_concurrency(1);
  a.set_scenario("s");
  v1::ExperimentSpec b;
  b.set_scenario("s");
  b.mutable_workload()->set_concurrency(1);
  (*b.mutable_labels())["y"] = "2";
  (*b.mutable_labels())["x"] = "1";
  EXPECT_EQ(Sha256Hex(CanonicalJson(a)), Sha256Hex(CanonicalJson(b)));
  b.mutable_workload()->set_concurrency(2);
  EXPECT_NE(Sha256Hex(CanonicalJson(a)), Sha256Hex(CanonicalJson(b)));
}

TEST(CanonicalTest, StringsAreEscaped) {
  v1::ExperimentSpec spec;
  spec.set_scenario("a\"b\\c\n");
  EXPECT_EQ(CanonicalJson(spec), R"({"scenario":"a\"b\\c\n"})");
}

}  // namespace
}  // namespace servelab::core::spec
