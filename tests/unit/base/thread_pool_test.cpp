#include "base/thread_pool.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <numeric>
#include <string>
#include <vector>

#include "base/thread_name.h"

#include <gtest/gtest.h>

namespace tally {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](int64_t task, int thread) {
        EXPECT_GE(thread, 0);
        EXPECT_LT(thread, threads);
        hits[task].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "task " << i;
    }
  }
}

std::string name_of_this_thread() {
  std::array<char, 16> name{};
  pthread_getname_np(pthread_self(), name.data(), name.size());
  return name.data();
}

TEST(ThreadPool, WorkersAreNamedByTheirIndex) {
  ThreadPool pool(3);
  std::vector<std::string> names(3);
  std::atomic<int> seen{0};
  // Which thread takes which task is not fixed, and on a loaded machine the caller may finish
  // tiny tasks before a worker wakes. So each task holds its thread until every thread has
  // taken one: with three tasks and three threads, each thread takes exactly one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  pool.run(3, [&](int64_t, int thread) {
    names[thread] = name_of_this_thread();
    seen.fetch_add(1);
    while (seen.load() < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  });
  ASSERT_EQ(seen.load(), 3);
  EXPECT_EQ(names[1], "tally-compute-1");
  EXPECT_EQ(names[2], "tally-compute-2");
  EXPECT_EQ(names[0], name_of_this_thread());  // the caller keeps its own name
}

TEST(ThreadName, LongNamesAreCutToWhatLinuxKeeps) {
  std::thread t([] {
    tally::name_this_thread("a-thread-name-longer-than-fifteen");
    EXPECT_EQ(name_of_this_thread(), "a-thread-name-l");
  });
  t.join();
}

TEST(ThreadPool, ManyShortJobsInARow) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 2000; ++rep) pool.run(3, [&](int64_t t, int) { sum += t + 1; });
  EXPECT_EQ(sum.load(), 2000 * 6);
}

TEST(ThreadPool, ParallelForCoversRange) {
  ThreadPool pool(3);
  std::vector<int> v(1003, 0);
  pool.parallel_for(v.size(), 64, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) v[i] += 1;
  });
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), 1003);
}

// A worker asleep on the futex (idle long past its spin) is woken by the next job: task 0
// waits for task 1 to start on another thread, which only a woken worker can do.
TEST(ThreadPool, SleepingWorkerIsWokenForTheNextJob) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic<int> started{-1};
    std::atomic<bool> met{false};
    pool.run(2, [&](int64_t, int thread) {
      int expected = -1;
      if (started.compare_exchange_strong(expected, thread)) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!met.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      } else {
        EXPECT_NE(expected, thread);
        met.store(true);
      }
    });
    EXPECT_TRUE(met.load()) << "rep " << rep;
  }
}

// Jobs of uneven tasks, idle gaps of every length (workers spinning, yielding, asleep or
// still waking when the next job comes): every task of every job runs exactly once, and a
// job's tasks never run after run() returned (a late worker must not touch a closed job).
TEST(ThreadPool, LateWorkersNeverRunAClosedJob) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int rep = 0; rep < 400; ++rep) {
      const int64_t n = 1 + rep % 9;
      std::vector<std::atomic<int>> hits(n);
      std::atomic<bool> returned{false};
      std::atomic<int> late{0};
      pool.run(n, [&](int64_t task, int) {
        if (returned.load()) late.fetch_add(1);
        if (task % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rep % 50));
        hits[task].fetch_add(1);
      });
      returned.store(true);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "rep " << rep << " task " << i;
      ASSERT_EQ(late.load(), 0) << "rep " << rep;
      if (rep % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(rep % 100 == 0 ? 30 : 1));
    }
  }
}

}  // namespace
}  // namespace tally
