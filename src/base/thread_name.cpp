#include "base/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <array>

namespace tally {

void name_this_thread(std::string_view name) {
  std::array<char, 16> buffer{};  // the kernel's TASK_COMM_LEN, with the terminating zero
  const size_t n = std::min(name.size(), buffer.size() - 1);
  std::copy_n(name.data(), n, buffer.data());
  pthread_setname_np(pthread_self(), buffer.data());
}

}  // namespace tally
