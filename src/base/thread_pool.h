// A persistent pool of compute workers that the engine thread hands the kernels of one step.
//
// run(n_tasks, fn) calls fn(task, thread) exactly once for every task in [0, n_tasks), spread
// over the calling thread and the workers, and returns when all are done. Tasks are claimed
// dynamically, so callers must make each task's output independent of which thread runs it
// (split work over output rows, heads or sequences, never over a reduction axis): that is what
// keeps results bit-identical across thread counts.
//
// Thread rules: one thread at a time may call run() (the engine thread); fn must not call run().
// No allocation per call. Workers spin briefly after a job, then sleep on a futex (woken only
// when one sleeps). The caller never waits for a worker that has not joined the job: once it
// has run out of tasks it closes the job, and a worker that was descheduled or still waking
// skips it. So a tiny step on an oversubscribed machine costs the caller's time, not a
// context switch per kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/function_ref.h"

namespace tally {

class ThreadPool {
 public:
  // n_threads counts the calling thread: n_threads = 1 runs everything inline.
  // 0 = one per hardware thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  void run(int64_t n_tasks, FunctionRef<void(int64_t task, int thread)> fn);

  // Splits [0, n) into tasks of `grain` items: fn(begin, end, thread).
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t, int)> fn);

 private:
  void worker_main(int thread);
  void work(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  bool try_enter(uint32_t generation);

  // Job state, published by run() with a release store of state_.
  FunctionRef<void(int64_t, int)>* job_ = nullptr;
  int64_t n_tasks_ = 0;
  alignas(64) std::atomic<int64_t> next_task_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};  // the futex workers sleep on
  // [generation:32][closed:1][workers inside the job:31]: joining (a CAS that fails once the
  // job is closed or replaced) and closing are one atomic word, so no worker can slip in
  // after the caller stopped waiting.
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

// Hardware threads available to this process (affinity-aware).
int hardware_threads();

}  // namespace tally
