#include "sched/scheduler_output.h"

namespace tally {

void SchedulerOutput::clear() {
  step = 0;
  scheduled.clear();
  token_ids.clear();
  block_ids.clear();
  draft_tokens.clear();
  block_copies.clear();
  samples.clear();
  freed_seq_ids.clear();
  finished_request_ids.clear();
  preempted_request_ids.clear();
  n_tokens = 0;
}

}  // namespace tally
