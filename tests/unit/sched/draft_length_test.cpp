// The adaptive draft length (draft_length.h): the step-cost table's estimates and the rule's
// choice under cost curves where drafting pays, never pays, and stops paying as the batch grows.
#include "sched/draft_length.h"

#include <gtest/gtest.h>

#include <vector>

namespace tally {
namespace {

// T(n) = fixed + per_position * n for every n in 1..max_n.
StepCostTable linear_costs(int32_t max_n, double fixed, double per_position) {
  StepCostTable t(max_n);
  for (int32_t n = 1; n <= max_n; ++n) t.record(n, fixed + per_position * n);
  return t;
}

std::vector<int32_t> choose(const StepCostTable& cost, int32_t n0,
                            const std::vector<DraftCandidate>& c) {
  std::vector<int32_t> k(c.size(), -1);
  DraftChoiceScratch scratch;
  choose_draft_lengths(cost, n0, c, k, scratch);
  return k;
}

TEST(StepCostTable, InterpolatesBetweenMeasuredSizesAndExtendsTheirLinePastThem) {
  StepCostTable t(64);
  t.record(2, 1.0);
  t.record(6, 2.0);
  t.record(0, 9.0);    // outside the table: ignored
  t.record(65, 9.0);
  t.record(4, -1.0);   // not a time: ignored
  std::vector<double> est(8);
  t.estimate(1, est);  // n = 1..8
  EXPECT_DOUBLE_EQ(est[0], 1.0);  // below the smallest: the nearest
  EXPECT_DOUBLE_EQ(est[1], 1.0);
  EXPECT_DOUBLE_EQ(est[2], 1.25);
  EXPECT_DOUBLE_EQ(est[3], 1.5);
  EXPECT_DOUBLE_EQ(est[4], 1.75);
  EXPECT_DOUBLE_EQ(est[5], 2.0);
  EXPECT_DOUBLE_EQ(est[6], 2.25);  // past the largest: the line through 2 and 6
  EXPECT_DOUBLE_EQ(est[7], 2.5);
  EXPECT_FALSE(t.measured(4));
  EXPECT_EQ(t.smallest_measured(), 2);
  EXPECT_EQ(t.largest_measured(), 6);
  // A line that would fall is held level.
  StepCostTable falling(8);
  falling.record(1, 2.0);
  falling.record(3, 1.0);
  falling.estimate(1, est);
  EXPECT_DOUBLE_EQ(est[4], 1.0);
}

double estimate_at(const StepCostTable& t, int32_t n) {
  double v = 0.0;
  t.estimate(n, std::span<double>(&v, 1));
  return v;
}

// T(n) at batch 1 as the rule sees it: nothing drafted unless T(2) / T(1) is below what a
// draft of one token with acceptance 0.6 earns (1.6 / 1.1).
std::vector<int32_t> one_token_draft(const StepCostTable& t) {
  return choose(t, 1, {{0.6f, 1}});
}

// The speed of a shared machine moves; a size the rule drafts is measured only when it
// drafts. A slower machine (every step 2x), seen in the undrafted steps, scales the drafted
// sizes not measured since: their ratio to the undrafted size, which decides a draft, holds.
TEST(StepCostTable, ASlowerMachineScalesTheSizesNotMeasuredSince) {
  StepCostTable t(8);
  for (int i = 0; i < 40; ++i) t.record(1, 1.0);
  for (int i = 0; i < 6; ++i) t.record(2, 1.6, /*drafted=*/true);  // a draft costs 0.6 step
  EXPECT_NEAR(estimate_at(t, 2) / estimate_at(t, 1), 1.6, 1e-9);
  EXPECT_EQ(one_token_draft(t), (std::vector<int32_t>{0}));
  for (int i = 0; i < 200; ++i) t.record(1, 2.0);  // the machine slows; nothing drafts
  EXPECT_NEAR(estimate_at(t, 1), 2.0, 0.01);
  EXPECT_GT(estimate_at(t, 2), 2.0 * 1.45);  // the ratio drifts a little (the shapes move too)
  EXPECT_EQ(one_token_draft(t), (std::vector<int32_t>{0}));
  // Drafted steps alone leave the speed where it is: T(1) is not measured while every step
  // drafts, and its last estimate is what the drafts are compared with.
  const double t1 = estimate_at(t, 1);
  for (int i = 0; i < 50; ++i) t.record(2, 8.0, /*drafted=*/true);
  EXPECT_DOUBLE_EQ(estimate_at(t, 1), t1);
  EXPECT_GT(estimate_at(t, 2), 6.0);  // from 3.1, towards its own steps (the mean of its steps)
}

// One lucky fast step (or one stall) moves a size's estimate by at most 2x, and a settled
// size's by a small share of that: the rule is not talked into drafting by one step.
TEST(StepCostTable, OneLuckyFastStepDoesNotMakeASizeCheap) {
  StepCostTable t(8);
  for (int i = 0; i < 40; ++i) t.record(1, 1.0);
  for (int i = 0; i < 8; ++i) t.record(2, 2.4, true);  // stories260K-like: T(2) = 2.4 T(1)
  ASSERT_EQ(choose(t, 1, {{0.95f, 1}}), (std::vector<int32_t>{0}));
  t.record(2, 0.6, true);  // a step 4x faster than the size's own cost
  EXPECT_GT(estimate_at(t, 2) / estimate_at(t, 1), 2.1);
  EXPECT_EQ(choose(t, 1, {{0.95f, 1}}), (std::vector<int32_t>{0}));
  for (int i = 0; i < 3; ++i) t.record(1, 0.25);  // nor a few lucky undrafted ones
  EXPECT_GT(estimate_at(t, 2) / estimate_at(t, 1), 2.1);
  for (int i = 0; i < 3; ++i) t.record(1, 10.0);  // nor a few stalls
  EXPECT_GT(estimate_at(t, 2) / estimate_at(t, 1), 2.1);
  EXPECT_EQ(choose(t, 1, {{0.95f, 1}}), (std::vector<int32_t>{0}));
}

TEST(DraftLength, NothingMeasuredMeansNoDraft) {
  StepCostTable empty(16);
  EXPECT_EQ(choose(empty, 1, {{0.99f, 4}}), (std::vector<int32_t>{0}));
}

// Past the largest measured size a step is priced on the line through the smallest and the
// largest; with one size measured only the next size is tried. Held at the largest's price
// (as before), sizes past it looked free: sixteen sequences' guesses at concurrency 16 made a
// step of 80 positions on costs that grow in proportion (stories260K), five undrafted steps'
// time for ~15 expected tokens, and at batch 1 a first draft of every guessed position.
TEST(DraftLength, PricesSizesPastTheLargestMeasuredOnTheMeasuredLine) {
  StepCostTable prop(128);
  for (int32_t n = 1; n <= 16; ++n) prop.record(n, 1e-3 * n);
  const std::vector<int32_t> k = choose(prop, 16, std::vector<DraftCandidate>(16, {0.5f, 4}));
  int32_t drafted = 0;
  for (int32_t v : k) drafted += v;
  EXPECT_EQ(drafted, 0);
  // Batch 1, only T(1) known: one draft measures T(2).
  StepCostTable cheap(8);
  cheap.record(1, 1e-3);
  EXPECT_EQ(choose(cheap, 1, {{0.9f, 4}}), (std::vector<int32_t>{1}));
  StepCostTable dear = cheap;
  // A second position nearly free: the line prices 3..5 as nearly free too, all drafted.
  cheap.record(2, 1.05e-3, /*drafted=*/true);
  EXPECT_EQ(choose(cheap, 1, {{0.9f, 4}}), (std::vector<int32_t>{4}));
  // A second position costing a whole step (stories260K): 3..5 cost as much again each, so
  // even a 0.9 guess is not drafted.
  dear.record(2, 2e-3, /*drafted=*/true);
  EXPECT_EQ(choose(dear, 1, {{0.9f, 4}}), (std::vector<int32_t>{0}));
}

TEST(DraftLength, FreePositionsDraftAllGuessesThatCanBeAccepted) {
  const StepCostTable flat = linear_costs(64, 1.0, 0.0);
  EXPECT_EQ(choose(flat, 2, {{0.9f, 4}, {0.5f, 3}, {0.0f, 4}}),
            (std::vector<int32_t>{4, 3, 0}));  // a sure miss is never worth a position
}

TEST(DraftLength, PositionsCostingInProportionNeverDraft) {
  // stories260K-like: a position costs what a step costs, so a draft pays only if it is
  // certain, and even then the margin against noise keeps it off.
  const StepCostTable prop = linear_costs(64, 0.0, 1.0);
  EXPECT_EQ(choose(prop, 1, {{0.95f, 5}}), (std::vector<int32_t>{0}));
  EXPECT_EQ(choose(prop, 8, std::vector<DraftCandidate>(8, {0.9f, 5})),
            std::vector<int32_t>(8, 0));
}

TEST(DraftLength, ExpectedTokensPerSecondSetsTheLength) {
  // T(n) = 10 + n: at batch 1, draft j (gain a^j) is worth its position while
  // (1 + sum of gains) / T(1 + m) grows: with a = 0.5 that is j = 1, 2 (1.75/13 > 1.875/14).
  const StepCostTable cost = linear_costs(64, 10.0, 1.0);
  EXPECT_EQ(choose(cost, 1, {{0.5f, 8}}), (std::vector<int32_t>{2}));
  EXPECT_EQ(choose(cost, 1, {{0.9f, 8}}), (std::vector<int32_t>{8}));
  // The better sequence gets positions first (its 4th draft, 0.8^4 = 0.41, before the other's
  // first, 0.3).
  EXPECT_EQ(choose(cost, 2, {{0.3f, 4}, {0.8f, 4}}), (std::vector<int32_t>{1, 4}));
}

TEST(DraftLength, StopsDraftingWhenTheBatchIsComputeBound) {
  // Memory-bound up to 16 positions (flat), compute-bound past it (each position costs its
  // share): a small batch drafts, a batch already past the knee does not.
  StepCostTable cost(256);
  for (int32_t n = 1; n <= 256; ++n) cost.record(n, n <= 16 ? 16.0 : static_cast<double>(n));
  const std::vector<int32_t> small = choose(cost, 2, std::vector<DraftCandidate>(2, {0.7f, 5}));
  EXPECT_GT(small[0] + small[1], 0);
  EXPECT_EQ(choose(cost, 32, std::vector<DraftCandidate>(32, {0.7f, 5})),
            std::vector<int32_t>(32, 0));
}

// A draft model's drafts cost its passes on top of the target's positions: with target
// positions free, a model draft as dear per pass as a target step never pays while an n-gram
// guess of the same acceptance drafts in full; with cheap passes both draft.
TEST(DraftLength, PricesTheDraftModelsPasses) {
  const StepCostTable target = linear_costs(64, 1e-3, 0.0);
  const std::vector<DraftCandidate> c = {{0.8f, 4, false}, {0.8f, 4, true}};
  std::vector<int32_t> k(c.size(), -1);
  DraftChoiceScratch scratch;
  StepCostTable dear(8);
  for (int32_t r = 1; r <= 8; ++r) dear.record(r, 1e-3);
  choose_draft_lengths(target, 2, c, k, scratch, &dear);
  EXPECT_EQ(k, (std::vector<int32_t>{4, 0}));
  // Unpriced (no pass table), the model's positions look as free as the n-gram's.
  choose_draft_lengths(target, 2, c, k, scratch);
  EXPECT_EQ(k, (std::vector<int32_t>{4, 4}));
  StepCostTable cheap(8);
  for (int32_t r = 1; r <= 8; ++r) cheap.record(r, 1e-5);
  choose_draft_lengths(target, 2, c, k, scratch, &cheap);
  EXPECT_EQ(k, (std::vector<int32_t>{4, 4}));
  // A pass is priced by its rows: two model rows share each pass, so where one row's passes
  // do not pay, two rows' may (D(1) = D(2): the pass is mostly the weights' read).
  StepCostTable shared(8);
  for (int32_t r = 1; r <= 8; ++r) shared.record(r, 4e-4);
  const std::vector<DraftCandidate> one = {{0.6f, 2, true}, {0.0f, 0, false}};
  const std::vector<DraftCandidate> two = {{0.6f, 2, true}, {0.6f, 2, true}};
  choose_draft_lengths(target, 2, one, k, scratch, &shared);
  EXPECT_EQ(k, (std::vector<int32_t>{0, 0}));
  choose_draft_lengths(target, 2, two, k, scratch, &shared);
  EXPECT_EQ(k, (std::vector<int32_t>{1, 1}));
}

TEST(AcceptanceEstimate, FollowsTheRecentHitRate) {
  AcceptanceEstimate a;
  EXPECT_FLOAT_EQ(a.alpha, AcceptanceEstimate::kPrior);
  for (int i = 0; i < 60; ++i) a.observe(true);
  EXPECT_GT(a.alpha, 0.99f);
  for (int i = 0; i < 60; ++i) a.observe(false);
  EXPECT_LT(a.alpha, 0.01f);
}

}  // namespace
}  // namespace tally
