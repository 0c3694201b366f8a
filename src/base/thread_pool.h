// A persistent pool of compute workers that the engine thread hands the kernels of one step.
//
// run(n_tasks, fn) calls fn(task, thread) exactly once for every task in [0, n_tasks), spread
// over the calling thread and the workers, and returns when all are done. Tasks are claimed
// dynamically, so callers must make each task's output independent of which thread runs it
// (split work over output rows, heads or sequences, never over a reduction axis): that is what
// keeps results bit-identical across thread counts.
//
// Thread rules: one thread at a time may call run() (the engine thread); fn must not call run().
// No allocation per call. Workers spin briefly after a job, then sleep on a futex.
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
  // Job state, published by run() with a release store of generation_.
  FunctionRef<void(int64_t, int)>* job_ = nullptr;
  int64_t n_tasks_ = 0;
  alignas(64) std::atomic<int64_t> next_task_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> pending_workers_{0};
  std::atomic<bool> stop_{false};
};

// Hardware threads available to this process (affinity-aware).
int hardware_threads();

}  // namespace tally
