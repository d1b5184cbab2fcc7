#include "daemon/engines/prometheus_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/engines/process_engine.h"
#include "tests/testing/status_matchers.h"

namespace servelab::engines {
namespace {

using ::servelab::testing::IsOk;
using ::servelab::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kVllmText[] =
    R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m",engine="0"} 3
vllm:num_requests_running{model_name="m",engine="1"} 2
vllm:num_requests_waiting{model_name="m",engine="0"} 1
# TYPE vllm:request_success counter
vllm:request_success_total{model_name="m",engine="0",finished_reason="length"} 10
vllm:request_success_total{model_name="m",engine="0",finished_reason="stop"} 5
vllm:prompt_tokens_total{model_name="m",engine="0"} 1.5e4
vllm:generation_tokens_total{model_name="m",engine="0"} 2048 1700000000000
vllm:prefix_cache_queries_total{model_name="m",engine="0"} 1000
vllm:prefix_cache_hits_total{model_name="m",engine="0"} 900
vllm:e2e_request_latency_seconds_bucket{model_name="m",le="+Inf"} 15
odd{path="a\"b\\c\nd", x = "y" ,} NaN
no_labels -Inf
)";

TEST(PrometheusTextTest, ParsesSamplesAndLabels) {
  absl::StatusOr<MetricSamples> samples = ParsePrometheusText(kVllmText);
  ASSERT_THAT(samples, IsOk());
  ASSERT_EQ(samples->size(), 12u);
  EXPECT_EQ((*samples)[0].name, "vllm:num_requests_running");
  EXPECT_EQ((*samples)[0].labels.at("engine"), "0");
  EXPECT_EQ((*samples)[0].value, 3);
  EXPECT_EQ((*samples)[9].labels.at("le"), "+Inf");
  const MetricSample& odd = (*samples)[10];
  EXPECT_EQ(odd.labels.at("path"), "a\"b\\c\nd");
  EXPECT_EQ(odd.labels.at("x"), "y");
  EXPECT_TRUE(std::isnan(odd.value));
  EXPECT_TRUE(std::isinf((*samples)[11].value));
}

TEST(PrometheusTextTest, SumsOverLabelSets) {
  absl::StatusOr<MetricSamples> samples = ParsePrometheusText(kVllmText);
  ASSERT_THAT(samples, IsOk());
  EXPECT_EQ(SumMetric(*samples, "vllm:num_requests_running"), 5);
  EXPECT_EQ(SumMetric(*samples, "vllm:request_success_total"), 15);
  EXPECT_EQ(SumMetric(*samples, "absent"), 0);
  EXPECT_TRUE(HasMetric(*samples, "vllm:num_requests_waiting"));
  EXPECT_FALSE(HasMetric(*samples, "absent"));
}

TEST(PrometheusTextTest, FillsInstanceCountersFromVllmNames) {
  absl::StatusOr<MetricSamples> samples = ParsePrometheusText(kVllmText);
  ASSERT_THAT(samples, IsOk());
  core::InstanceCounters c = CountersFromSamples(*samples, VllmProtocol().counters);
  EXPECT_EQ(c.requests_running, 5);
  EXPECT_EQ(c.requests_waiting, 1);
  EXPECT_EQ(c.request_success, 15);
  EXPECT_EQ(c.prompt_tokens, 15000);
  EXPECT_EQ(c.generation_tokens, 2048);
  EXPECT_EQ(c.prefix_cache_queries, 1000);
  EXPECT_EQ(c.prefix_cache_hits, 900);
}

// Each SGLang release has one spelling of prefill's P/D queue gauges; a
// request held in any of them keeps the drain and the cache reset waiting.
TEST(PrometheusTextTest, SglangQueueGaugesCountInEveryReleasesSpelling) {
  for (const char* older_or_newer : {
           "sglang:num_prefill_infight_queue_reqs",   // older releases' typo
           "sglang:num_prefill_bootstrap_queue_reqs"  // newer releases
       }) {
    absl::StatusOr<MetricSamples> samples =
        ParsePrometheusText(absl::StrCat(older_or_newer, "{engine_type=\"unified\"} 2\n",
                                         "sglang:num_decode_transfer_queue_reqs 1\n"));
    ASSERT_THAT(samples, IsOk());
    core::InstanceCounters c = CountersFromSamples(*samples, SglangProtocol().counters);
    EXPECT_EQ(c.requests_in_transfer, 3) << older_or_newer;
    EXPECT_TRUE(c.HoldsRequests()) << older_or_newer;
  }
}

TEST(PrometheusTextTest, MalformedLinesNameTheLine) {
  EXPECT_THAT(ParsePrometheusText("ok 1\nbad{x=\"1\" 2\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2")));
  EXPECT_THAT(ParsePrometheusText("name notanumber\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad value")));
  EXPECT_THAT(ParsePrometheusText("{a=\"b\"} 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no metric name")));
  EXPECT_THAT(ParsePrometheusText(""), IsOk());
}

}  // namespace
}  // namespace servelab::engines
