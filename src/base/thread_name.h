// Names the calling thread (what `top -H`, `ps -L`, gdb and perf show), so an operator can tell
// the engine, compute, prompt and I/O threads apart. Linux keeps 15 characters; longer names are
// cut. Best effort: a failure changes nothing else.
#pragma once

#include <string_view>

namespace tally {

void name_this_thread(std::string_view name);

}  // namespace tally
