// ServeLabService over an in-process channel, with a real ControlPlane over a
// real SqliteStore in a temp dir: what the wire carries for each RPC.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>

#include "common/labels.h"
#include "daemon/core/clock.h"
#include "daemon/core/control_plane.h"
#include "daemon/service/metrics.h"
#include "daemon/service/serve_lab_service.h"
#include "daemon/service/status_mapping.h"
#include "storage/sqlite_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace servelab::service {
namespace {

using ::servelab::testing::IsOk;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string ExamplesDir() { return testing::SourcePath("deploy/examples"); }

// The value of `name{labels}` in a scrape, or -1 when absent.
double MetricValue(const std::vector<prometheus::MetricFamily>& families, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  for (const auto& family : families) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      if (have != labels) continue;
      return family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
    }
  }
  return -1;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = storage::SqliteStore::Open(dir_.File("servelab.db"));
    ASSERT_THAT(store, IsOk());
    store_ = std::move(*store);
    control_plane_ = std::make_unique<core::ControlPlane>(*store_, clock_);
    metrics_ = std::make_unique<Metrics>(*control_plane_);
    service_ = std::make_unique<ServeLabService>(*control_plane_, *metrics_);
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::ServeLab::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }

  void TearDown() override {
    service_->EndWatches();
    server_->Shutdown();
    server_->Wait();
  }

  grpc::Status Submit(const v1::SubmitExperimentRequest& request, v1::Experiment* experiment) {
    grpc::ClientContext context;
    v1::SubmitExperimentResponse response;
    grpc::Status status = stub_->SubmitExperiment(&context, request, &response);
    *experiment = response.experiment();
    return status;
  }

  v1::SubmitExperimentRequest ExampleRequest(const std::string& name = "16k-nocache.yaml") {
    v1::SubmitExperimentRequest request;
    request.set_spec_text(testing::ReadFile(ExamplesDir() + "/" + name));
    request.set_spec_name(name);
    request.set_base_dir(ExamplesDir());
    return request;
  }

  v1::Experiment SubmitExample() {
    v1::Experiment experiment;
    grpc::Status status = Submit(ExampleRequest(), &experiment);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return experiment;
  }

  grpc::Status Get(const std::string& id, v1::Experiment* experiment) {
    grpc::ClientContext context;
    v1::GetExperimentRequest request;
    request.set_id(id);
    return stub_->GetExperiment(&context, request, experiment);
  }

  grpc::Status Cancel(const std::string& id, v1::Experiment* experiment) {
    grpc::ClientContext context;
    v1::CancelExperimentRequest request;
    request.set_id(id);
    return stub_->CancelExperiment(&context, request, experiment);
  }

  std::vector<v1::Experiment> List(const v1::ListExperimentsRequest& request = {}) {
    grpc::ClientContext context;
    v1::ListExperimentsResponse response;
    grpc::Status status = stub_->ListExperiments(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.experiments().begin(), response.experiments().end()};
  }

  testing::TempDir dir_;
  core::RealClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<core::ControlPlane> control_plane_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<ServeLabService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ServeLab::Stub> stub_;
};

TEST_F(ServiceTest, SubmitGetList) {
  v1::Experiment submitted = SubmitExample();
  EXPECT_THAT(submitted.id(), Not(IsEmpty()));
  EXPECT_EQ(submitted.state(), v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_THAT(submitted.spec_sha256(), Not(IsEmpty()));
  EXPECT_EQ(submitted.spec().scenario(), "16k-nocache");

  v1::Experiment got;
  ASSERT_TRUE(Get(submitted.id(), &got).ok());
  EXPECT_EQ(got.id(), submitted.id());
  EXPECT_EQ(got.spec_sha256(), submitted.spec_sha256());

  std::vector<v1::Experiment> all = List();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id(), submitted.id());
}

TEST_F(ServiceTest, ListFiltersByScenarioAndState) {
  v1::Experiment a = SubmitExample();
  v1::Experiment b;
  ASSERT_TRUE(Submit(ExampleRequest("128k-cache90.yaml"), &b).ok());
  v1::Experiment cancelled;
  ASSERT_TRUE(Cancel(a.id(), &cancelled).ok());

  v1::ListExperimentsRequest by_scenario;
  by_scenario.set_scenario("128k-cache90");
  std::vector<v1::Experiment> found = List(by_scenario);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].id(), b.id());

  v1::ListExperimentsRequest by_state;
  by_state.set_state(v1::EXPERIMENT_STATE_CANCELLED);
  found = List(by_state);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].id(), a.id());
}

TEST_F(ServiceTest, DeltaRecordsParentAndChanges) {
  v1::Experiment base = SubmitExample();
  v1::SubmitExperimentRequest request;
  request.set_base_id(base.id());
  request.add_set("workload.concurrency=96");
  request.set_base_dir(ExamplesDir());
  v1::Experiment delta;
  grpc::Status status = Submit(request, &delta);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(delta.base_id(), base.id());
  ASSERT_EQ(delta.changes_size(), 1);
  EXPECT_EQ(delta.changes(0).path(), "workload.concurrency");
  EXPECT_EQ(delta.changes(0).old_value(), "128");
  EXPECT_EQ(delta.changes(0).new_value(), "96");
  EXPECT_EQ(delta.spec().workload().concurrency(), 96);
}

TEST_F(ServiceTest, ValidateOnlyStoresNothing) {
  v1::SubmitExperimentRequest request = ExampleRequest();
  request.set_validate_only(true);
  v1::Experiment planned;
  ASSERT_TRUE(Submit(request, &planned).ok());
  EXPECT_THAT(planned.id(), IsEmpty());
  EXPECT_THAT(planned.plan().stages(), Not(IsEmpty()));
  EXPECT_THAT(List(), IsEmpty());
}

TEST_F(ServiceTest, ErrorsKeepTheirCodeAndFieldPath) {
  v1::SubmitExperimentRequest unknown_field = ExampleRequest();
  std::string text = unknown_field.spec_text();
  text.replace(text.find("concurrency: 128"), 16, "concurency: 128");
  unknown_field.set_spec_text(text);
  v1::Experiment ignored;
  grpc::Status status = Submit(unknown_field, &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("workload.concurency"));

  v1::SubmitExperimentRequest unknown_base;
  unknown_base.set_base_id("exp-404");
  status = Submit(unknown_base, &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("exp-404"));

  status = Get("exp-404", &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  status = Get("", &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("id"));

  v1::Experiment experiment = SubmitExample();
  ASSERT_TRUE(Cancel(experiment.id(), &ignored).ok());
  status = Cancel(experiment.id(), &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  EXPECT_THAT(List(), ::testing::SizeIs(1));
}

TEST_F(ServiceTest, WatchSendsCurrentThenChangesUntilFinal) {
  v1::Experiment experiment = SubmitExample();
  grpc::ClientContext context;
  v1::WatchExperimentRequest request;
  request.set_id(experiment.id());
  auto reader = stub_->WatchExperiment(&context, request);
  v1::Experiment update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.id(), experiment.id());
  EXPECT_EQ(update.state(), v1::EXPERIMENT_STATE_QUEUED);

  v1::Experiment cancelled;
  ASSERT_TRUE(Cancel(experiment.id(), &cancelled).ok());
  while (reader->Read(&update)) {
    if (IsFinal(update.state())) break;
  }
  EXPECT_EQ(update.state(), v1::EXPERIMENT_STATE_CANCELLED);
  EXPECT_FALSE(reader->Read(&update));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(ServiceTest, WatchOfAFinalExperimentSendsOneMessage) {
  v1::Experiment experiment = SubmitExample();
  v1::Experiment cancelled;
  ASSERT_TRUE(Cancel(experiment.id(), &cancelled).ok());
  grpc::ClientContext context;
  v1::WatchExperimentRequest request;
  request.set_id(experiment.id());
  auto reader = stub_->WatchExperiment(&context, request);
  v1::Experiment update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.state(), v1::EXPERIMENT_STATE_CANCELLED);
  EXPECT_FALSE(reader->Read(&update));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(ServiceTest, WatchOfAnUnknownIdIsNotFound) {
  grpc::ClientContext context;
  v1::WatchExperimentRequest request;
  request.set_id("exp-404");
  auto reader = stub_->WatchExperiment(&context, request);
  v1::Experiment update;
  EXPECT_FALSE(reader->Read(&update));
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, WatchEndsWhenTheClientCancels) {
  v1::Experiment experiment = SubmitExample();
  grpc::ClientContext context;
  v1::WatchExperimentRequest request;
  request.set_id(experiment.id());
  auto reader = stub_->WatchExperiment(&context, request);
  v1::Experiment update;
  ASSERT_TRUE(reader->Read(&update));
  context.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return MetricValue(metrics_->Collect(), "servelab_rpcs_total",
                           {{"method", "WatchExperiment"}, {"code", "CANCELLED"}}) == 1;
      },
      absl::Seconds(10)));
  // The experiment goes on; a later change must not reach the dead stream.
  v1::Experiment cancelled;
  EXPECT_TRUE(Cancel(experiment.id(), &cancelled).ok());
}

TEST_F(ServiceTest, EndWatchesEndsOpenStreamsWithUnavailable) {
  v1::Experiment experiment = SubmitExample();
  grpc::ClientContext context;
  v1::WatchExperimentRequest request;
  request.set_id(experiment.id());
  auto reader = stub_->WatchExperiment(&context, request);
  v1::Experiment update;
  ASSERT_TRUE(reader->Read(&update));
  service_->EndWatches();
  EXPECT_FALSE(reader->Read(&update));
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shutting down"));
}

TEST_F(ServiceTest, ManyWatchersAllSeeTheFinalState) {
  v1::Experiment experiment = SubmitExample();
  constexpr int kWatchers = 8;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::Experiment>>> readers;
  v1::WatchExperimentRequest request;
  request.set_id(experiment.id());
  for (int i = 0; i < kWatchers; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stub_->WatchExperiment(contexts.back().get(), request));
    v1::Experiment first;
    ASSERT_TRUE(readers.back()->Read(&first));
  }
  v1::Experiment cancelled;
  ASSERT_TRUE(Cancel(experiment.id(), &cancelled).ok());
  for (auto& reader : readers) {
    v1::Experiment update;
    while (reader->Read(&update)) {
    }
    EXPECT_EQ(update.state(), v1::EXPERIMENT_STATE_CANCELLED);
    EXPECT_TRUE(reader->Finish().ok());
  }
}

TEST_F(ServiceTest, SummaryReportsServing) {
  SubmitExample();
  service_->SetServing(true);
  grpc::ClientContext context;
  v1::Summary summary;
  ASSERT_TRUE(stub_->GetSummary(&context, v1::GetSummaryRequest(), &summary).ok());
  EXPECT_TRUE(summary.serving());
  const auto& by_state = summary.experiments_by_state();
  EXPECT_EQ(
      by_state.contains("queued") ? by_state.at("queued") : by_state.at("EXPERIMENT_STATE_QUEUED"),
      1);
}

TEST_F(ServiceTest, MetricsCountRpcsAndExperimentsByState) {
  SubmitExample();
  v1::Experiment ignored;
  Get("exp-404", &ignored);
  std::vector<prometheus::MetricFamily> families = metrics_->Collect();
  EXPECT_EQ(MetricValue(families, "servelab_rpcs_total",
                        {{"method", "SubmitExperiment"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(MetricValue(families, "servelab_rpcs_total",
                        {{"method", "GetExperiment"}, {"code", "NOT_FOUND"}}),
            1);
  EXPECT_EQ(MetricValue(families, "servelab_experiments", {{"state", "queued"}}), 1);
  EXPECT_EQ(MetricValue(families, "servelab_experiments", {{"state", "succeeded"}}), 0);
}

// An executor that lost a ledger write for good, as the stage runner
// reports it once it latched the error.
class LatchedExecutor : public core::ExperimentExecutor {
 public:
  void Enqueue(const std::string&) override {}
  absl::Status CancelRunning(const std::string&) override { return absl::OkStatus(); }
  absl::Status LatchedError() override {
    return absl::UnavailableError(
        "the ledger write of exp-1's stage \"cache_seed succeeded\" failed 3 times: "
        "database is locked");
  }
  std::pair<std::string, v1::StageName> LaneOwner() override { return {"", {}}; }
};

TEST_F(ServiceTest, ALatchedLedgerErrorRefusesWorkAndSummarySaysWhy) {
  LatchedExecutor executor;
  control_plane_->SetExecutor(&executor);
  service_->SetServing(true);
  v1::Experiment ignored;
  grpc::Status status = Submit(ExampleRequest(), &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(),
              AllOf(HasSubstr("accepts no new work"), HasSubstr("database is locked")));
  EXPECT_THAT(List(), IsEmpty());

  grpc::ClientContext context;
  v1::Summary summary;
  ASSERT_TRUE(stub_->GetSummary(&context, v1::GetSummaryRequest(), &summary).ok());
  EXPECT_FALSE(summary.serving());
  EXPECT_THAT(summary.next_step().reason(),
              AllOf(HasSubstr("cache_seed succeeded"), HasSubstr("restart servelabd")));
  control_plane_->SetExecutor(nullptr);
}

TEST_F(ServiceTest, SummaryWhileRecoveringSaysSo) {
  grpc::ClientContext context;
  v1::Summary summary;
  ASSERT_TRUE(stub_->GetSummary(&context, v1::GetSummaryRequest(), &summary).ok());
  EXPECT_FALSE(summary.serving());
  EXPECT_EQ(summary.next_step().action(), v1::NextStep::RETRY);
  EXPECT_THAT(summary.next_step().reason(), HasSubstr("recovering"));
}

TEST(StatusMappingTest, EveryCodeRoundTrips) {
  for (int code = 0; code <= 16; ++code) {
    absl::Status status(static_cast<absl::StatusCode>(code), code == 0 ? "" : "field.path: bad");
    grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(FromGrpcStatus(wire), status);
  }
  EXPECT_EQ(
      ToGrpcStatus(absl::InvalidArgumentError("workload.concurrency: must be > 0")).error_message(),
      "workload.concurrency: must be > 0");
}

}  // namespace
}  // namespace servelab::service
