#include "daemon/core/control_plane.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/core/testing/fake_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"

namespace servelab::core {
namespace {

using servelab::testing::IsOk;
using servelab::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class FixedClock : public Clock {
 public:
  absl::Time Now() override { return now_ += absl::Milliseconds(1); }
  void SleepFor(absl::Duration duration) override { now_ += duration; }

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

class ControlPlaneTest : public ::testing::Test {
 protected:
  v1::SubmitExperimentRequest FromExample(const std::string& name) {
    v1::SubmitExperimentRequest request;
    request.set_spec_text(
        servelab::testing::ReadFile(servelab::testing::SourcePath("deploy/examples/" + name)));
    request.set_spec_name(name);
    request.set_base_dir(servelab::testing::SourcePath("deploy/examples"));
    return request;
  }

  v1::Experiment SubmitBase() {
    absl::StatusOr<v1::Experiment> e = plane_.Submit(FromExample("16k-nocache.yaml"));
    EXPECT_THAT(e, IsOk());
    return *e;
  }

  v1::SubmitExperimentRequest Delta(const std::string& base, std::vector<std::string> sets) {
    v1::SubmitExperimentRequest request;
    request.set_base_id(base);
    request.set_base_dir(servelab::testing::SourcePath("deploy/examples"));
    for (const std::string& s : sets) request.add_set(s);
    return request;
  }

  testing::FakeStore store_;
  FixedClock clock_;
  ControlPlane plane_{store_, clock_};
};

TEST_F(ControlPlaneTest, SubmitFreezesAndQueues) {
  v1::Experiment e = SubmitBase();
  EXPECT_EQ(e.id(), "exp-1");
  EXPECT_EQ(e.state(), v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_THAT(e.spec_sha256(), SizeIs(64));
  EXPECT_EQ(e.spec().workload().concurrency(), 128);
  EXPECT_THAT(e.spec().deployment().decode().expert_layout().path(),
              HasSubstr("/deploy/examples/layouts/decode-layout-a.json"));
  EXPECT_THAT(e.spec().deployment().decode().expert_layout().sha256(), SizeIs(64));
  EXPECT_EQ(e.progress().formal_requests_planned(), 640);
  ASSERT_EQ(e.stages_size(), 13);
  EXPECT_EQ(e.stages(0).name(), v1::STAGE_FREEZE);
  EXPECT_EQ(e.stages(0).status(), v1::STAGE_STATUS_SUCCEEDED);
  EXPECT_TRUE(e.stages(0).has_started_at() && e.stages(0).has_ended_at());
  EXPECT_EQ(e.stages(9).name(), v1::STAGE_FORMAL_LOAD);
  EXPECT_EQ(e.stages(9).status(), v1::STAGE_STATUS_PENDING);
  EXPECT_THAT(e.blocker(), HasSubstr("no stage runner"));

  absl::StatusOr<v1::Experiment> stored = plane_.Get("exp-1");
  ASSERT_THAT(stored, IsOk());
  EXPECT_EQ(stored->spec_sha256(), e.spec_sha256());
  absl::StatusOr<std::vector<Event>> events = store_.ListEvents("exp-1");
  ASSERT_THAT(events, IsOk());
  ASSERT_THAT(*events, SizeIs(1));
  EXPECT_EQ((*events)[0].kind, "submitted");
}

TEST_F(ControlPlaneTest, DeltaRecordsParentAndChanges) {
  v1::Experiment base = SubmitBase();
  absl::StatusOr<v1::Experiment> e = plane_.Submit(Delta(base.id(), {"workload.concurrency=96"}));
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->base_id(), base.id());
  ASSERT_THAT(e->changes(), SizeIs(1));
  EXPECT_EQ(e->changes(0).path(), "workload.concurrency");
  EXPECT_EQ(e->changes(0).old_value(), "128");
  EXPECT_EQ(e->changes(0).new_value(), "96");
  EXPECT_EQ(e->changes(0).scope(), v1::SCOPE_LOAD);
  EXPECT_NE(e->spec_sha256(), base.spec_sha256());
  // The base's frozen spec is untouched.
  EXPECT_EQ(plane_.Get(base.id())->spec().workload().concurrency(), 128);
}

TEST_F(ControlPlaneTest, SameSpecSameHash) {
  v1::Experiment a = SubmitBase();
  v1::Experiment b = SubmitBase();
  EXPECT_EQ(a.spec_sha256(), b.spec_sha256());
  absl::StatusOr<v1::Experiment> c = plane_.Submit(Delta(a.id(), {}));
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->spec_sha256(), a.spec_sha256());
  EXPECT_THAT(c->changes(), SizeIs(0));
}

TEST_F(ControlPlaneTest, ValidateOnlyStoresNothing) {
  v1::SubmitExperimentRequest request = FromExample("128k-cache90.yaml");
  request.set_validate_only(true);
  absl::StatusOr<v1::Experiment> e = plane_.Submit(request);
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->id(), "");
  EXPECT_EQ(e->plan().stages_size(), 13);
  EXPECT_EQ(e->plan().stages(8).action(), v1::STAGE_ACTION_RUN);  // cache_seed
  EXPECT_EQ(store_.writes(), 0);
  EXPECT_THAT(plane_.List({})->experiments(), SizeIs(0));
}

struct BadSubmit {
  std::string name;
  std::vector<std::string> sets;
  absl::StatusCode code;
  std::string message;
};

class BadSubmitTest : public ControlPlaneTest, public ::testing::WithParamInterface<BadSubmit> {};

TEST_P(BadSubmitTest, IsRefusedAndNothingIsStored) {
  v1::Experiment base = SubmitBase();
  const int writes = store_.writes();
  absl::StatusOr<v1::Experiment> e = plane_.Submit(Delta(base.id(), GetParam().sets));
  EXPECT_THAT(e, StatusIs(GetParam().code, HasSubstr(GetParam().message)));
  EXPECT_EQ(store_.writes(), writes);
  EXPECT_THAT(plane_.List({})->experiments(), SizeIs(1));
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, BadSubmitTest,
    ::testing::Values(BadSubmit{"UnknownField",
                                {"workload.concurency=96"},
                                absl::StatusCode::kInvalidArgument,
                                "did you mean \"workload.concurrency\""},
                      BadSubmit{"WrongType",
                                {"workload.concurrency=many"},
                                absl::StatusCode::kInvalidArgument,
                                "workload.concurrency: expected an integer"},
                      BadSubmit{"ZeroRequests",
                                {"workload.num_requests=0"},
                                absl::StatusCode::kInvalidArgument,
                                "workload.num_requests: must be > 0"},
                      BadSubmit{"ZeroConcurrency",
                                {"workload.concurrency=0"},
                                absl::StatusCode::kInvalidArgument,
                                "workload.concurrency: must be > 0"},
                      BadSubmit{"NegativeRate",
                                {"workload.request_rate=-1"},
                                absl::StatusCode::kInvalidArgument,
                                "workload.request_rate: must be >= 0"},
                      BadSubmit{"MissingFile",
                                {"deployment.decode.expert_layout=layouts/none.json"},
                                absl::StatusCode::kNotFound,
                                "deployment.decode.expert_layout.path"}),
    [](const auto& info) { return info.param.name; });

TEST_F(ControlPlaneTest, UnknownBaseIsNotFound) {
  EXPECT_THAT(plane_.Submit(Delta("exp-42", {"workload.concurrency=96"})),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("base_id: experiment \"exp-42\"")));
  EXPECT_EQ(store_.writes(), 0);
}

TEST_F(ControlPlaneTest, MalformedSpecTextStoresNothing) {
  v1::SubmitExperimentRequest request;
  request.set_spec_text("scenario: [unclosed\n");
  request.set_spec_name("broken.yaml");
  EXPECT_THAT(plane_.Submit(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("broken.yaml:")));
  EXPECT_THAT(plane_.Submit(v1::SubmitExperimentRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("source")));
  EXPECT_EQ(store_.writes(), 0);
}

TEST_F(ControlPlaneTest, StoreFailureIsReturned) {
  store_.FailNextWrite(absl::UnavailableError("database is busy"));
  EXPECT_THAT(plane_.Submit(FromExample("16k-nocache.yaml")),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("busy")));
  EXPECT_THAT(plane_.List({})->experiments(), SizeIs(0));
}

TEST_F(ControlPlaneTest, CancelQueuedThenRefuseTwice) {
  v1::Experiment e = SubmitBase();
  std::vector<v1::ExperimentState> seen;
  int subscription =
      plane_.Subscribe(e.id(), [&](const v1::Experiment& x) { seen.push_back(x.state()); });
  absl::StatusOr<v1::Experiment> cancelled = plane_.Cancel(e.id());
  ASSERT_THAT(cancelled, IsOk());
  EXPECT_EQ(cancelled->state(), v1::EXPERIMENT_STATE_CANCELLED);
  EXPECT_EQ(plane_.Get(e.id())->state(), v1::EXPERIMENT_STATE_CANCELLED);
  EXPECT_THAT(seen, ElementsAre(v1::EXPERIMENT_STATE_CANCELLED));
  EXPECT_THAT(plane_.Cancel(e.id()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already cancelled")));
  EXPECT_THAT(plane_.Cancel("exp-9"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("exp-9")));
  plane_.Unsubscribe(subscription);
  EXPECT_THAT(*store_.ListEvents(e.id()), SizeIs(2));
}

TEST_F(ControlPlaneTest, ResumeAcceptsOnlyNothingOrAnalysisFieldsOnAFailedExperiment) {
  v1::Experiment e = SubmitBase();
  v1::ResumeExperimentRequest request;
  request.set_id(e.id());
  EXPECT_THAT(plane_.Resume(request),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("queued")));

  v1::Experiment failed = e;
  failed.set_state(v1::EXPERIMENT_STATE_FAILED);
  failed.set_failure_class(v1::WARM_RESUMABLE);
  ASSERT_THAT(store_.UpdateExperiment(failed, Event{.kind = "state"}), IsOk());

  request.add_set("workload.concurrency=96");
  EXPECT_THAT(plane_.Resume(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("workload.concurrency"), HasSubstr("LOAD"))));
  EXPECT_EQ(plane_.Get(e.id())->state(), v1::EXPERIMENT_STATE_FAILED);

  request.clear_set();
  request.add_set("limits.formal_deadline=45m");
  absl::StatusOr<v1::Experiment> resumed = plane_.Resume(request);
  ASSERT_THAT(resumed, IsOk());
  EXPECT_EQ(resumed->state(), v1::EXPERIMENT_STATE_QUEUED);
  EXPECT_EQ(resumed->spec().limits().formal_deadline().seconds(), 45 * 60);
  EXPECT_NE(resumed->spec_sha256(), e.spec_sha256());
  EXPECT_EQ(plane_.Get(e.id())->spec().limits().formal_deadline().seconds(), 45 * 60);
}

TEST_F(ControlPlaneTest, AnalysisOnlyDeltaOnASucceededExperimentReusesItsRecords) {
  v1::Experiment base = SubmitBase();
  base.set_state(v1::EXPERIMENT_STATE_SUCCEEDED);
  ASSERT_THAT(store_.UpdateExperiment(base, Event{.kind = "state"}), IsOk());
  absl::StatusOr<v1::Experiment> e = plane_.Submit(Delta(base.id(), {"analysis.slo.ttft=5s"}));
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->plan().raw_records_from(), base.id());
  EXPECT_EQ(e->progress().formal_requests_planned(), 0);
}

TEST_F(ControlPlaneTest, PlanReusesMatchingInstances) {
  v1::Experiment base = SubmitBase();
  for (auto [side, fingerprint] :
       {std::pair{v1::SIDE_PREFILL, base.plan().fingerprints().prefill()},
        std::pair{v1::SIDE_DECODE, base.plan().fingerprints().decode()},
        std::pair{v1::SIDE_ROUTER, base.plan().fingerprints().router()}}) {
    v1::ServingInstance instance;
    instance.set_side(side);
    instance.set_fingerprint(fingerprint);
    instance.set_experiment_id(base.id());
    instance.mutable_warm_since()->set_seconds(1);
    ASSERT_THAT(store_.PutInstance(instance), IsOk());
  }
  absl::StatusOr<v1::Experiment> e = plane_.Submit(Delta(base.id(), {"workload.concurrency=96"}));
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->plan().planned_against(), base.id());
  EXPECT_EQ(e->plan().stages(3).action(), v1::STAGE_ACTION_REUSE);  // launch_decode
  EXPECT_EQ(e->plan().stages(5).action(), v1::STAGE_ACTION_REUSE);  // warmup
  EXPECT_FALSE(e->plan().adds_launch());

  absl::StatusOr<v1::Summary> summary = plane_.Summary();
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->hot_deployment().experiment_id(), base.id());
}

TEST_F(ControlPlaneTest, ListIsPagedByTheLastIdOfThePreviousPage) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(SubmitBase().id());
  v1::ListExperimentsRequest request;
  request.set_page_size(2);
  std::vector<std::string> seen;
  int pages = 0;
  do {
    absl::StatusOr<v1::ListExperimentsResponse> page = plane_.List(request);
    ASSERT_THAT(page, IsOk());
    EXPECT_LE(page->experiments_size(), 2);
    for (const v1::Experiment& e : page->experiments()) seen.push_back(e.id());
    request.set_page_token(page->next_page_token());
    ++pages;
  } while (!request.page_token().empty());
  EXPECT_EQ(seen, ids);
  EXPECT_EQ(pages, 3);
  // The default page holds all five, and says nothing follows.
  absl::StatusOr<v1::ListExperimentsResponse> all = plane_.List({});
  ASSERT_THAT(all, IsOk());
  EXPECT_THAT(all->experiments(), SizeIs(5));
  EXPECT_EQ(all->next_page_token(), "");
}

TEST_F(ControlPlaneTest, ListRefusesANegativePageSizeAndAForeignToken) {
  SubmitBase();
  const int writes = store_.writes();
  v1::ListExperimentsRequest negative;
  negative.set_page_size(-1);
  EXPECT_THAT(plane_.List(negative),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_size:")));
  v1::ListExperimentsRequest foreign;
  foreign.set_page_token("exp-77");
  EXPECT_THAT(plane_.List(foreign),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("page_token: \"exp-77\"")));
  EXPECT_EQ(store_.writes(), writes);
}

TEST_F(ControlPlaneTest, SummaryListsQueueAndCounts) {
  absl::StatusOr<v1::Summary> empty = plane_.Summary();
  ASSERT_THAT(empty, IsOk());
  EXPECT_EQ(empty->next_step().action(), v1::NextStep::SUBMIT_BASE);
  SubmitBase();
  SubmitBase();
  ASSERT_THAT(plane_.Cancel("exp-2"), IsOk());
  absl::StatusOr<v1::Summary> summary = plane_.Summary();
  ASSERT_THAT(summary, IsOk());
  EXPECT_THAT(summary->queue(), ElementsAre("exp-1"));
  EXPECT_EQ(summary->experiments_by_state().at("queued"), 1);
  EXPECT_EQ(summary->experiments_by_state().at("cancelled"), 1);
  EXPECT_EQ(summary->experiments_by_state().at("succeeded"), 0);
  EXPECT_EQ(summary->next_step().experiment_id(), "exp-1");
}

// The best per scenario is read once, then follows successes through the
// ledger; failures are counted per class with the newest named.
TEST_F(ControlPlaneTest, SummaryBestFollowsLaterSuccessesAndCountsFailures) {
  for (int i = 0; i < 4; ++i) SubmitBase();
  auto finish = [&](const std::string& id, v1::ExperimentState state, double value) {
    ASSERT_THAT(
        plane_.ledger().Update(
            id,
            [&](v1::Experiment& e) -> absl::StatusOr<EventText> {
              e.set_state(state);
              if (state == v1::EXPERIMENT_STATE_FAILED) {
                e.set_failure_class(v1::LOAD_INTERRUPTED);
              } else {
                e.mutable_result()->mutable_whole()->set_output_tokens_per_second_per_device(value);
              }
              return EventText{"state", "done"};
            }),
        IsOk());
  };
  finish("exp-1", v1::EXPERIMENT_STATE_SUCCEEDED, 10);
  absl::StatusOr<v1::Summary> first = plane_.Summary();
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(first->best(), SizeIs(1));
  EXPECT_EQ(first->best(0).experiment_id(), "exp-1");

  finish("exp-2", v1::EXPERIMENT_STATE_SUCCEEDED, 20);
  finish("exp-3", v1::EXPERIMENT_STATE_SUCCEEDED, 15);
  finish("exp-4", v1::EXPERIMENT_STATE_FAILED, 0);
  absl::StatusOr<v1::Summary> later = plane_.Summary();
  ASSERT_THAT(later, IsOk());
  ASSERT_THAT(later->best(), SizeIs(1));
  EXPECT_EQ(later->best(0).experiment_id(), "exp-2");
  EXPECT_DOUBLE_EQ(later->best(0).value(), 20);
  ASSERT_THAT(later->recent_failures(), SizeIs(1));
  EXPECT_EQ(later->recent_failures(0).count(), 1);
  EXPECT_EQ(later->recent_failures(0).latest_experiment_id(), "exp-4");
  EXPECT_EQ(later->next_step().experiment_id(), "exp-4");
}

}  // namespace
}  // namespace servelab::core

namespace servelab::core {
namespace {

class ImportTest : public ControlPlaneTest {
 protected:
  // Three well-formed records of a run another tool measured.
  v1::ImportExperimentRequest Request() {
    v1::ImportExperimentRequest request;
    v1::SubmitExperimentRequest source = FromExample("16k-nocache.yaml");
    request.set_spec_text(source.spec_text());
    request.set_spec_name(source.spec_name());
    request.set_base_dir(source.base_dir());
    request.mutable_external()->set_tool("vllm-bench-serve");
    request.mutable_external()->set_tool_version("0.16.0");
    for (int i = 0; i < 3; ++i) {
      v1::RequestRecord& r = *request.add_records();
      r.set_request_index(i);
      r.set_sent_ns(i * 1'000'000);
      r.set_first_token_ns(r.sent_ns() + 50'000'000);
      r.add_chunk_ns(r.first_token_ns());
      r.add_chunk_ns(r.first_token_ns() + 20'000'000);
      r.set_end_ns(r.first_token_ns() + 20'000'000);
      r.set_prompt_tokens(100);
      r.set_completion_tokens(2);
      r.set_http_status(200);
    }
    return request;
  }

  size_t Stored() {
    absl::StatusOr<std::vector<v1::Experiment>> all = store_.ListExperiments({});
    return all.ok() ? all->size() : 999;
  }
};

TEST_F(ImportTest, StoresTheExperimentAndItsRecordsTogether) {
  absl::StatusOr<v1::Experiment> e = plane_.Import(Request());
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->external().tool(), "vllm-bench-serve");
  EXPECT_EQ(e->state(), v1::EXPERIMENT_STATE_QUEUED);
  for (const v1::PlannedStage& stage : e->plan().stages()) {
    const bool analysis = stage.stage() == v1::STAGE_ANALYZE || stage.stage() == v1::STAGE_DECIDE ||
                          stage.stage() == v1::STAGE_FREEZE;
    EXPECT_EQ(stage.action(), analysis ? v1::STAGE_ACTION_RUN : v1::STAGE_ACTION_SKIP)
        << v1::StageName_Name(stage.stage());
  }
  absl::StatusOr<std::vector<v1::RequestRecord>> records =
      store_.ListRequests(e->id(), v1::PHASE_FORMAL, 1);
  ASSERT_THAT(records, IsOk());
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].experiment_id(), e->id());
  EXPECT_EQ((*records)[0].repeat(), 1);
  v1::ListRequestRecordsRequest list;
  list.set_id(e->id());
  absl::StatusOr<std::vector<v1::RequestRecord>> listed = plane_.ListRecords(list);
  ASSERT_THAT(listed, IsOk());
  EXPECT_EQ(listed->size(), 3u);
}

TEST_F(ImportTest, EachBadRecordIsRefusedByItsFieldAndNothingIsStored) {
  const std::vector<std::pair<std::function<void(v1::ImportExperimentRequest&)>, std::string>>
      cases = {
          {[](auto& r) { r.clear_records(); }, "records: an import needs at least one"},
          {[](auto& r) { r.mutable_external()->clear_tool(); }, "external.tool"},
          {[](auto& r) { r.mutable_external()->set_tool("a\nb"); }, "control characters"},
          {[](auto& r) { r.mutable_records(1)->set_end_ns(0); }, "records[1].end_ns"},
          {[](auto& r) { r.mutable_records(1)->set_sent_ns(-5); }, "records[1].sent_ns"},
          {[](auto& r) { r.mutable_records(2)->set_request_index(0); }, "records[2].request_index"},
          {[](auto& r) { r.mutable_records(0)->set_phase(v1::PHASE_WARMUP); }, "records[0].phase"},
          {[](auto& r) { r.mutable_records(0)->set_attempt(2); }, "records[0].attempt"},
          {[](auto& r) { r.mutable_records(0)->set_chunk_ns(1, 1); }, "records[0].chunk_ns[1]"},
          {[](auto& r) { r.mutable_records(2)->set_completion_tokens(-1); },
           "records[2].completion_tokens"},
          {[](auto& r) { r.add_set("workload.repeats=21"); }, "workload.repeats"},
          {[](auto& r) { r.set_base_id("exp-404"); }, "exp-404"},
      };
  for (const auto& [mutate, expected] : cases) {
    v1::ImportExperimentRequest request = Request();
    mutate(request);
    absl::StatusOr<v1::Experiment> e = plane_.Import(request);
    ASSERT_FALSE(e.ok()) << expected;
    EXPECT_THAT(std::string(e.status().message()), HasSubstr(expected));
    EXPECT_TRUE(absl::IsInvalidArgument(e.status()) || absl::IsNotFound(e.status())) << e.status();
  }
  EXPECT_EQ(Stored(), 0u);
  absl::StatusOr<std::vector<v1::RequestRecord>> any =
      store_.ListRequests("exp-1", v1::PHASE_UNSPECIFIED, 0);
  EXPECT_TRUE(!any.ok() || any->empty());
}

TEST_F(ImportTest, RecordsOfAnUnknownExperimentAreNotFound) {
  v1::ListRequestRecordsRequest list;
  list.set_id("exp-9");
  EXPECT_THAT(plane_.ListRecords(list).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("exp-9")));
}

}  // namespace
}  // namespace servelab::core
