#include "sampling/sampling_params.h"


#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace tally {
namespace {

constexpr int32_t kVocab = 100;

// Expects InvalidArgument whose message names `field`, and Status::field() to give that
// field as a value (what the server turns into `param`).
void expect_rejects(const SamplingParams& p, const std::string& field, int32_t n_vocab = kVocab) {
  const Status s = p.validate(n_vocab);
  ASSERT_FALSE(s.ok()) << "expected an error about " << field;
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  // The field is the parameter's name without an index; n_vocab is the model's, no field.
  const std::string param = field == "n_vocab" ? "" : field.substr(0, field.find('['));
  EXPECT_EQ(s.field(), param);
}

TEST(SamplingParams, DefaultsAndEdgesAreValid) {
  SamplingParams p;
  EXPECT_TRUE(p.validate(kVocab).ok());
  p.temperature = 0.0f;
  p.top_k = -1;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.penalty_last_n = -1;
  p.logit_bias = {{0, -INFINITY}, {kVocab - 1, 3.5f}};
  p.logprobs = true;
  p.top_logprobs = kVocab;
  EXPECT_TRUE(p.validate(kVocab).ok()) << p.validate(kVocab).message();
}

TEST(SamplingParams, ErrorsNameTheField) {
  SamplingParams p;
  p.temperature = -0.1f;
  expect_rejects(p, "temperature");
  p = {};
  p.temperature = NAN;
  expect_rejects(p, "temperature");
  p = {};
  p.top_p = 1.5f;
  expect_rejects(p, "top_p");
  p = {};
  p.min_p = -0.1f;
  expect_rejects(p, "min_p");
  p = {};
  p.repetition_penalty = 0.0f;
  expect_rejects(p, "repetition_penalty");
  p = {};
  p.penalty_last_n = -2;
  expect_rejects(p, "penalty_last_n");
  p = {};
  p.presence_penalty = INFINITY;
  expect_rejects(p, "presence_penalty");
  p = {};
  p.frequency_penalty = NAN;
  expect_rejects(p, "frequency_penalty");
  p = {};
  p.logprobs = true;
  p.top_logprobs = kVocab + 1;
  expect_rejects(p, "top_logprobs");
  p = {};
  p.top_logprobs = 3;  // without logprobs
  expect_rejects(p, "top_logprobs");
  expect_rejects(SamplingParams{}, "n_vocab", 0);
}

TEST(SamplingParams, LogitBiasIsChecked) {
  SamplingParams p;
  p.logit_bias = {{5, 1.0f}, {kVocab, 1.0f}};
  expect_rejects(p, "logit_bias[1]");
  p.logit_bias = {{-1, 1.0f}};
  expect_rejects(p, "logit_bias[0]");
  p.logit_bias = {{3, INFINITY}};
  expect_rejects(p, "logit_bias[0]");
  p.logit_bias = {{3, NAN}};
  expect_rejects(p, "logit_bias[0]");
  // Banning every token (duplicates counted once) leaves nothing to sample.
  p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {0, -INFINITY}};
  expect_rejects(p, "logit_bias", 2);
  p.logit_bias = {{0, -INFINITY}, {0, -INFINITY}};
  EXPECT_TRUE(p.validate(2).ok());
}

}  // namespace
}  // namespace tally
