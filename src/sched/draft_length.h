// How many draft tokens each sequence verifies this step (docs/speculative.md, "The adaptive
// rule"). A draft position costs step time whether or not it is accepted; an accepted one is
// a token the sequence did not have to wait a step for. The rule weighs the two with:
//   - AcceptanceEstimate: per sequence, an EWMA of the chance that the next draft token equals
//     the target's (one trial per compared position, drafted or only guessed),
//   - StepCostTable: the measured step time T(n) of a step computing n positions, kept online
//     by the engine from its own steps (no probe: an unmeasured n is estimated from the
//     measured ones, past the largest on the line through the smallest and the largest; with
//     one size measured, only the next size is tried, at its price, so the first step that
//     drafts measures it),
// and chooses, over the whole step, the draft positions that maximise useful positions per
// second: (n0 + expected accepted tokens) / T(n0 + drafted).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tally {

// Which rule sets a sequence's draft length: kAdaptive (above), kFixed (always the most
// allowed: the benchmark of the machinery), kRandomForTest (uniform in [0, most], seeded: the
// output must not depend on it).
enum class DraftLengthRule : uint8_t { kAdaptive, kFixed, kRandomForTest };

// An EWMA of one sequence's per-position acceptance, following the last ~1 / kWeight compared
// positions. Before its first trial a sequence has no estimate of its own: it starts from the
// pooled one (below), so a new request drafts only where recent requests' guesses were right.
struct AcceptanceEstimate {
  static constexpr float kPrior = 0.5f;
  static constexpr float kWeight = 0.15f;
  float alpha = kPrior;
  int32_t trials = 0;
  void observe(bool accepted) { observe(accepted, alpha); }
  // The first trial starts from `prior` (the pooled estimate) instead of kPrior.
  void observe(bool accepted, float prior) {
    if (trials++ == 0) alpha = prior;
    alpha += kWeight * ((accepted ? 1.0f : 0.0f) - alpha);
  }
  // What the rule uses: its own estimate once it has one, else the pooled one.
  float estimate(float pooled) const { return trials > 0 ? alpha : pooled; }
};

// The acceptance of every sequence's trials of one source together, a slower EWMA: the
// estimate a sequence starts from. Without it each new request started at kPrior, enough for
// the rule to draft its first guesses in full, and on text the model does not copy each
// request paid a rejected draft (and, in a batch, a step of unmeasured size) before it learnt.
struct PooledAcceptance {
  static constexpr float kWeight = 0.05f;
  float alpha = AcceptanceEstimate::kPrior;
  void observe(bool accepted) { alpha += kWeight * ((accepted ? 1.0f : 0.0f) - alpha); }
};

// Step time by position count, 1..max_positions, as T(n) = speed x shape(n): how fast the
// machine is now (how much other work stretches steps) times the step's own cost at that
// size. On a shared machine the speed moves from one step to the next while the shape does
// not, and a size the rule drafts is measured only when it drafts: kept as plain seconds, its
// entry held the speed of the last time it drafted, so when the machine slowed the undrafted
// size (measured every step) rose and the drafted ones did not, and drafts looked cheaper
// than they were. So an undrafted step (the baseline the rule compares with) moves the shared
// speed, which scales every size; a drafted step moves only its own size's shape (while
// nothing but drafted steps run, the sizes are plain times again).
//
// Both are means of log times (a geometric mean: a stall of 10x does not swamp them), a step
// moving them by at most kMaxStepLog: one lucky fast step, or one stall, cannot make a size
// look cheap, or dear. The rule compares T(n0 + m) with T(n0), so the speed cancels there:
// what decides a draft is the ratio of the shapes.
class StepCostTable {
 public:
  explicit StepCostTable(int32_t max_positions);
  // A step of `positions` positions took `seconds` (ignored outside 1..max_positions);
  // `drafted`: some of its positions were drafts (it does not move the speed).
  void record(int32_t positions, double seconds, bool drafted = false);
  bool measured(int32_t positions) const;
  // The smallest and the largest size measured so far (0: none).
  int32_t smallest_measured() const { return smallest_measured_; }
  int32_t largest_measured() const { return largest_measured_; }
  // out[i] = estimated T(n0 + i): speed x shape where measured, else the straight line between
  // the nearest measured sizes around it; below the smallest measured, the smallest's value;
  // past the largest, the line through the smallest and the largest (never falling; the
  // largest's value while it is the only one). All 0 while nothing is measured.
  void estimate(int32_t n0, std::span<double> out) const;
  int32_t max_positions() const { return static_cast<int32_t>(log_shape_.size()) - 1; }

 private:
  // A size's first steps are averaged (weight 1 / count), then it follows its last ~1 /
  // kShapeWeight steps; the speed follows the last ~1 / kSpeedWeight undrafted steps.
  static constexpr double kShapeWeight = 0.02;
  static constexpr double kSpeedWeight = 0.25;
  // A size measured only this often says more about itself than about the machine: its
  // steps do not move the speed yet.
  static constexpr int32_t kSettledCount = 4;
  // The most one step moves a log estimate by (as a ratio, 2x).
  static constexpr double kMaxStepLog = 0.6931471805599453;
  double shape_seconds(int32_t positions) const;
  std::vector<double> log_shape_;  // [n] log seconds at speed 1
  std::vector<int32_t> count_;     // [n] steps recorded; 0 = never measured
  double log_speed_ = 0.0;
  int32_t smallest_measured_ = 0;
  int32_t largest_measured_ = 0;
};

// One sequence that could draft: its acceptance estimate and the most tokens it may draft
// (the guess it has, bounded by max_tokens, the context and num_speculative_tokens), and
// whether the draft model proposes them (each of its drafts then costs a draft-model pass).
struct DraftCandidate {
  float alpha = 0.0f;
  int32_t max_k = 0;
  bool model = false;
};

// A drafted step must beat the undrafted one by this fraction of its rate: a margin against
// timing noise, so drafting is never chosen for a gain the measurements cannot show.
inline constexpr double kDraftMinGain = 0.1;

// The adaptive rule. Draft token j (1-based) of a sequence with acceptance a is used with
// probability a^j (its predecessors were accepted); taking the best m of all candidates'
// positions by that gain, the rule picks the m maximising (n0 + gain sum) / (T(n0 + m) +
// P(m)), where n0 is the step's positions without drafts and P(m) the draft model's passes
// those m positions need (draft_pass_cost; 0 without model candidates), and gives each
// candidate its share of those m. k[i] = 0 for every candidate while the table has no
// measurement. While only one size is measured, the sizes past it have no price but that
// size's: the rule then tries only the next size (its step measures it, and from two sizes
// on the table extends their line), so learning what a bigger step costs risks one position,
// not a batch's worth of drafts. Returns the m chosen.
//
// The draft model proposes a sequence's k tokens in k passes after the step's first (which
// every step runs: the draft's KV of the step's own tokens); pass j is one ragged forward over
// the model candidates with k >= j, so the m positions cost sum over j of D(rows in pass j),
// D = the measured cost of a draft pass by its rows (a StepCostTable of its own).
struct DraftChoiceScratch {
  std::vector<std::pair<double, int32_t>> gains;  // (a^j, candidate)
  std::vector<double> times;                       // T(n0 + m), m = 0..gains
  std::vector<double> pass_times;                  // D(r), r = 1..model candidates
  std::vector<int32_t> rows_in_pass;               // [j]: model candidates drafting >= j + 1
  std::vector<int32_t> taken;                      // [candidate]: positions taken so far
};
int32_t choose_draft_lengths(const StepCostTable& cost, int32_t n0,
                             std::span<const DraftCandidate> candidates, std::span<int32_t> k,
                             DraftChoiceScratch& scratch,
                             const StepCostTable* draft_pass_cost = nullptr);

}  // namespace tally
