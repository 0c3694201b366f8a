// A stand-in for the runner and the model, for scheduler tests. Like the real runner it keeps
// no per-sequence state: each step it takes every row's tokens and block table from the
// output, applies the copies, stores in a fake KV pool the token each slot holds, and before
// "sampling" reads every position of a row back through the row's block table and checks that
// it is that sequence's history as the scheduler holds it. Its model is a hash of (request,
// sample, history), so a request's output is fixed by its own tokens alone: toy_reference()
// computes it without any scheduler. The stop rules are the caller's (the engine's, in tally):
// toy_finish() plays them for these tests, the same for both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sched/scheduler.h"

namespace tally_test {

using tally::BlockId;
using tally::RequestId;
using tally::SeqId;
using tally::TokenId;

inline TokenId toy_model(RequestId request, int32_t sample, std::span<const TokenId> history,
                         int32_t vocab) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(request) * 0x100000001b3ull;
  h ^= static_cast<uint64_t>(sample) + 0x51ed27ull;
  for (TokenId t : history) h = (h ^ static_cast<uint64_t>(t)) * 0x100000001b3ull;
  h ^= h >> 29;
  return static_cast<TokenId>(h % static_cast<uint64_t>(vocab));
}

// A request with the stop tokens its toy engine ends samples on.
struct ToyRequest : tally::RequestSpec {
  std::vector<TokenId> stop_token_ids;
};

// The toy engine's stop rules: a stop token, max_tokens, a full context.
inline tally::FinishReason toy_finish(const ToyRequest& spec, TokenId token, int32_t n_output,
                                      int32_t n_known, int32_t max_model_len) {
  for (TokenId s : spec.stop_token_ids) {
    if (s == token) return tally::FinishReason::kStop;
  }
  if (n_output >= spec.max_tokens || n_known >= max_model_len) return tally::FinishReason::kLength;
  return tally::FinishReason::kNone;
}

// Finish reasons for `n` sampled tokens that end nothing.
inline std::vector<tally::FinishReason> going(size_t n) {
  return std::vector<tally::FinishReason>(n, tally::FinishReason::kNone);
}

// Each sample's output when the request runs on its own.
inline std::vector<std::vector<TokenId>> toy_reference(const ToyRequest& spec,
                                                       int32_t max_model_len, int32_t vocab) {
  std::vector<std::vector<TokenId>> outs(spec.n);
  for (int32_t i = 0; i < spec.n; ++i) {
    std::vector<TokenId> hist = spec.prompt;
    for (;;) {
      const TokenId t = toy_model(spec.id, i, hist, vocab);
      outs[i].push_back(t);
      hist.push_back(t);
      const auto n_out = static_cast<int32_t>(outs[i].size());
      const auto n_known = static_cast<int32_t>(hist.size());
      if (toy_finish(spec, t, n_out, n_known, max_model_len) != tally::FinishReason::kNone) break;
    }
  }
  return outs;
}

class ToyRunner {
 public:
  // window > 0: the KV behind each row's window is gone (kNoBlock); those positions are read
  // from the scheduler's history instead.
  ToyRunner(int32_t n_blocks, int32_t block_size, int32_t vocab, int32_t window = 0)
      : block_size_(block_size), vocab_(vocab), window_(window), kv_(size_t(n_blocks) * block_size, -1) {}

  // Sequences that were computed and not yet reported in freed_seq_ids: 0 once every request
  // is gone, or a sequence was never reported freed (bookkeeping for that check only).
  size_t n_unfreed_seqs() const { return unfreed_.size(); }

  // Runs one step; returns one token per sample slot. Fails the test on any broken contract.
  std::vector<TokenId> step(const tally::SchedulerOutput& out, const tally::Scheduler& sched) {
    for (SeqId id : out.freed_seq_ids) unfreed_.erase(id);
    for (const tally::BlockCopy& c : out.block_copies) {
      for (int32_t i = 0; i < block_size_; ++i) {
        kv_[size_t(c.dst) * block_size_ + i] = kv_[size_t(c.src) * block_size_ + i];
      }
    }
    // All rows write, then all read: a row clobbering another's slots shows up.
    for (const tally::ScheduledSeq& row : out.scheduled) {
      unfreed_.insert(row.seq_id);
      EXPECT_EQ(row.n_draft, 0) << "the toy runner does not verify drafts";
      const auto tokens = out.tokens(row);
      const auto table = out.block_table(row);
      EXPECT_EQ(static_cast<int32_t>(tokens.size()), row.n_tokens);
      for (int32_t p = row.start; p < row.start + row.n_tokens; ++p) {
        TokenId* at = slot(table, p);
        if (!at) {
          ADD_FAILURE() << "sequence " << row.seq_id << " has no block for position " << p;
          return {};
        }
        *at = tokens[p - row.start];
      }
    }
    std::vector<std::vector<TokenId>> read(out.scheduled.size());
    for (size_t r = 0; r < out.scheduled.size(); ++r) {
      const tally::ScheduledSeq& row = out.scheduled[r];
      const tally::Request* req = sched.find_request(row.request_id);
      const tally::Sequence* seq = req ? find_seq(*req, row.seq_id) : nullptr;
      if (!seq) {
        ADD_FAILURE() << "row " << r << " is sequence " << row.seq_id << " the scheduler lacks";
        return {};
      }
      EXPECT_LE(row.start + row.n_tokens, req->known_tokens(*seq));
      const int32_t first_kept = window_ > 0 ? std::max(0, row.start - window_ + 1) : 0;
      for (int32_t p = 0; p < first_kept; ++p) read[r].push_back(req->token_at(*seq, p));
      for (int32_t p = first_kept; p < row.start + row.n_tokens; ++p) {
        const TokenId* at = slot(out.block_table(row), p);
        const TokenId want = req->token_at(*seq, p);
        if (!at || *at != want) {
          ADD_FAILURE() << "sequence " << row.seq_id << " position " << p << " reads "
                        << (at ? *at : -2) << ", history has " << want;
          return {};
        }
        read[r].push_back(*at);
      }
    }
    std::vector<TokenId> sampled;
    for (const tally::SampleSlot& slot : out.samples) {
      const auto& hist = read.at(slot.row);
      const tally::Request* req = sched.find_request(slot.request_id);
      EXPECT_EQ(static_cast<int32_t>(hist.size()),
                req->known_tokens(req->samples[slot.seq_index]))
          << "sampled before the end of the known tokens";
      sampled.push_back(toy_model(slot.request_id, slot.seq_index, hist, vocab_));
    }
    return sampled;
  }

 private:
  static const tally::Sequence* find_seq(const tally::Request& r, SeqId id) {
    if (r.carrier.id == id) return &r.carrier;
    for (const auto& s : r.samples) {
      if (s.id == id) return &s;
    }
    return nullptr;
  }
  TokenId* slot(std::span<const BlockId> table, int32_t pos) {
    const size_t block = size_t(pos) / block_size_;
    if (block >= table.size() || table[block] == tally::kNoBlock) return nullptr;
    return &kv_[size_t(table[block]) * block_size_ + pos % block_size_];
  }

  int32_t block_size_;
  int32_t vocab_;
  int32_t window_;
  std::set<SeqId> unfreed_;
  std::vector<TokenId> kv_;  // [n_blocks][block_size] token whose KV each slot holds
};

// Drives a scheduler with a ToyRunner, checking after every step the token budget, the
// sequence cap, the KV invariants and that each sequence's KV counter matches its progress;
// gathers each sample's output and end from the events.
class ToyDriver {
 public:
  ToyDriver(tally::Scheduler& sched, int32_t vocab)
      : sched_(sched),
        runner_(sched.kv().n_blocks(), sched.kv().block_size(), vocab, sched.kv().sliding_window()) {}

  tally::Status add(const ToyRequest& spec) {
    tally::Status s = sched_.add_request(spec);
    if (s.ok()) {
      ids_.push_back(spec.id);
      specs_[spec.id] = spec;
      outputs[spec.id].assign(spec.n, {});
      finish[spec.id].assign(spec.n, tally::FinishReason::kNone);
    }
    return s;
  }

  // One schedule/run/update round; `out` stays readable until the next step.
  void step() {
    std::vector<RequestId> running_before;
    for (RequestId id : ids_) {
      const tally::Request* r = sched_.find_request(id);
      if (r && r->status == tally::RequestStatus::kRunning) running_before.push_back(id);
    }
    sched_.schedule(out);
    if (!out.preempted_request_ids.empty()) {  // nobody is admitted behind a preemption
      for (const auto& row : out.scheduled) {
        EXPECT_NE(std::count(running_before.begin(), running_before.end(), row.request_id), 0)
            << "request " << row.request_id << " admitted in a step with a preemption";
      }
    }
    const auto& cfg = sched_.config();
    EXPECT_LE(out.n_tokens, cfg.max_batched_tokens);
    EXPECT_LE(static_cast<int32_t>(out.scheduled.size()), cfg.max_seqs);
    int32_t sum = 0;
    for (const auto& row : out.scheduled) {
      EXPECT_GT(row.n_tokens, 0);
      sum += row.n_tokens;
    }
    EXPECT_EQ(sum, out.n_tokens);
    const std::vector<TokenId> sampled = runner_.step(out, sched_);
    ASSERT_EQ(sampled.size(), out.samples.size());
    sched_.update(out, sampled, finishes(sampled), events);
    for (const auto& e : events) {
      if (e.token != tally::kNoToken) outputs[e.request_id][e.seq_index].push_back(e.token);
      if (e.finish != tally::FinishReason::kNone) finish[e.request_id][e.seq_index] = e.finish;
      if (e.request_done) finished_order.push_back(e.request_id);
    }
    const tally::Status inv = sched_.kv().check_invariants();
    ASSERT_TRUE(inv.ok()) << "step " << out.step << ": " << inv.to_string();
    for (RequestId id : ids_) {
      const tally::Request* r = sched_.find_request(id);
      if (!r) continue;
      for (const auto& s : r->samples) {
        if (sched_.kv().contains(s.id)) {
          ASSERT_EQ(sched_.kv().num_tokens(s.id), s.num_computed);
        }
      }
    }
    ++steps;
  }

  // Steps until no request is left; false when max_steps ran out first.
  bool run(int64_t max_steps) {
    while (sched_.has_unfinished() && steps < max_steps) {
      step();
      if (::testing::Test::HasFatalFailure()) return false;
    }
    return !sched_.has_unfinished();
  }

  const ToyRunner& runner() const { return runner_; }

  // Samples (request, index) that the toy engine ends with kStop at their next token, as a
  // stop string would.
  std::vector<std::pair<RequestId, int32_t>> stop_next;

  tally::SchedulerOutput out;
  std::vector<tally::SchedulerEvent> events;
  std::unordered_map<RequestId, std::vector<std::vector<TokenId>>> outputs;
  std::unordered_map<RequestId, std::vector<tally::FinishReason>> finish;
  std::vector<RequestId> finished_order;
  int64_t steps = 0;

 private:
  std::vector<tally::FinishReason> finishes(const std::vector<TokenId>& sampled) {
    std::vector<tally::FinishReason> why(sampled.size(), tally::FinishReason::kNone);
    for (size_t k = 0; k < sampled.size(); ++k) {
      const tally::SampleSlot& slot = out.samples[k];
      const tally::Request* r = sched_.find_request(slot.request_id);
      if (!r || r->abort_pending) continue;
      const tally::Sequence& seq = r->samples[slot.seq_index];
      const auto n_output = static_cast<int32_t>(seq.output.size()) + 1;
      why[k] = toy_finish(specs_.at(slot.request_id), sampled[k], n_output,
                          r->known_tokens(seq) + 1, sched_.config().max_model_len);
      const std::pair<RequestId, int32_t> key{slot.request_id, slot.seq_index};
      auto forced = std::find(stop_next.begin(), stop_next.end(), key);
      if (forced != stop_next.end()) {
        stop_next.erase(forced);
        why[k] = tally::FinishReason::kStop;
      }
    }
    return why;
  }

  tally::Scheduler& sched_;
  ToyRunner runner_;
  std::vector<RequestId> ids_;
  std::unordered_map<RequestId, ToyRequest> specs_;
};

}  // namespace tally_test
