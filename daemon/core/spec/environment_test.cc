#include "daemon/core/spec/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "servelab/v1/spec.pb.h"

namespace servelab::core::spec {
namespace {

using ::testing::HasSubstr;

TEST(LooksLikeSecretTest, WholeWordsOnly) {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY",
                           "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "DB_PASSWORD", "hf_token",
                           "GOOGLE_APPLICATION_CREDENTIALS", "SSH_PRIVATE_KEY", "TOKEN"}) {
    EXPECT_TRUE(LooksLikeSecret(name)) << name;
  }
  for (const char* name : {"MAX_TOKENS", "VLLM_MAX_NUM_BATCHED_TOKENS", "TOKENIZERS_PARALLELISM",
                           "HCCL_BUFFSIZE", "CUDA_VISIBLE_DEVICES", "KEYBOARD", "PATH", ""}) {
    EXPECT_FALSE(LooksLikeSecret(name)) << name;
  }
}

TEST(IsVariableNameTest, PosixNames) {
  EXPECT_TRUE(IsVariableName("HF_TOKEN"));
  EXPECT_TRUE(IsVariableName("_x1"));
  EXPECT_FALSE(IsVariableName(""));
  EXPECT_FALSE(IsVariableName("1X"));
  EXPECT_FALSE(IsVariableName("A=B"));
  EXPECT_FALSE(IsVariableName("A B"));
}

TEST(EnvProblemsTest, ASecretsValueIsRefusedAndPassedByNameInstead) {
  v1::InstanceSpec side;
  (*side.mutable_env())["HF_TOKEN"] = "hf_abc";
  (*side.mutable_env())["VLLM_LOGGING_LEVEL"] = "DEBUG";
  std::vector<EnvProblem> problems = EnvProblems("deployment.prefill", side.env(), side.pass_env());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].path, "deployment.prefill.env.HF_TOKEN");
  EXPECT_THAT(problems[0].reason, HasSubstr("deployment.prefill.pass_env"));
  // The value itself is never echoed: the error text is logged and shown.
  EXPECT_THAT(problems[0].reason, ::testing::Not(HasSubstr("hf_abc")));

  side.mutable_env()->erase("HF_TOKEN");
  side.add_pass_env("HF_TOKEN");
  EXPECT_TRUE(EnvProblems("deployment.prefill", side.env(), side.pass_env()).empty());
}

TEST(EnvProblemsTest, PassEnvNamesAreVariablesListedOnceAndNotAlsoGivenAValue) {
  v1::RouterSpec router;
  (*router.mutable_env())["A"] = "1";
  (*router.mutable_env())["BAD NAME"] = "1";
  for (const char* name : {"HF_TOKEN", "A", "HF_TOKEN", "X=Y"}) router.add_pass_env(name);
  std::vector<EnvProblem> problems =
      EnvProblems("deployment.router", router.env(), router.pass_env());
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].path, "deployment.router.env.BAD NAME");
  EXPECT_EQ(problems[1].path, "deployment.router.pass_env[1]");
  EXPECT_THAT(problems[1].reason, HasSubstr("also given a value"));
  EXPECT_EQ(problems[2].path, "deployment.router.pass_env[2]");
  EXPECT_THAT(problems[2].reason, HasSubstr("listed twice"));
  EXPECT_EQ(problems[3].path, "deployment.router.pass_env[3]");
  EXPECT_THAT(problems[3].reason, HasSubstr("not a variable name"));
}

}  // namespace
}  // namespace servelab::core::spec
