#include "base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <string>

#include "base/check.h"
#include "base/thread_name.h"

namespace tally {

namespace {
// Pause-spins before sleeping (workers) or yielding (the caller waiting for workers): long
// enough to bridge the gap between two kernels of one step, short enough that an
// oversubscribed machine (tests running in parallel) does not burn its time slices.
constexpr int kSpinIterations = 1 << 11;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

int hardware_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : hardware_threads()) {
  workers_.reserve(n_threads_ - 1);
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_main(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::work(int thread) {
  const int64_t n = n_tasks_;
  for (;;) {
    int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n) break;
    (*job_)(task, thread);
  }
}

namespace {
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kInsideMask = kClosed - 1;
}  // namespace

bool ThreadPool::try_enter(uint32_t generation) {
  uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if ((s >> 32) != generation || (s & kClosed) != 0) return false;
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      return true;
    }
  }
}

void ThreadPool::worker_main(int thread) {
  name_this_thread("tally-compute-" + std::to_string(thread));
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = generation_.load(std::memory_order_acquire);
    for (int i = 0; gen == seen && i < kSpinIterations; ++i) {
      cpu_relax();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      // seq_cst with run()'s store of generation_ then load of sleepers_: either run() sees
      // this sleeper and wakes it, or the wait sees the new generation and returns at once.
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      generation_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    if (try_enter(gen)) {
      work(thread);
      state_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

void ThreadPool::run(int64_t n_tasks, FunctionRef<void(int64_t task, int thread)> fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  job_ = &fn;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  state_.store(uint64_t{gen} << 32, std::memory_order_release);  // open, nobody inside
  generation_.store(gen, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  work(0);
  // Every task is claimed: close the job, then wait only for the workers inside it (they
  // may still be running a task they claimed).
  uint64_t s = state_.fetch_or(kClosed, std::memory_order_acq_rel) | kClosed;
  for (int i = 0; (s & kInsideMask) != 0; ++i) {
    if (i < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();  // a worker may need this core to finish
    }
    s = state_.load(std::memory_order_acquire);
  }
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              FunctionRef<void(int64_t, int64_t, int)> fn) {
  TALLY_CHECK(grain > 0, "grain must be positive, got {}", grain);
  const int64_t n_tasks = (n + grain - 1) / grain;
  run(n_tasks, [&](int64_t task, int thread) {
    const int64_t begin = task * grain;
    fn(begin, std::min(n, begin + grain), thread);
  });
}

}  // namespace tally
