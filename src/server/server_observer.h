// What the server tells an observer (the metrics) and asks of it. The server calls these;
// an implementation adapts them to its registry (apps/tally wires tally::metrics in).
#pragma once

#include <string>

#include "engine/engine_types.h"

namespace tally::server {

class ServerObserver {
 public:
  virtual ~ServerObserver() = default;
  // Every event of every request, on the engine thread as it happens (before the event is
  // posted to the I/O thread), so latencies are the engine's. Must not block.
  virtual void on_engine_event(const EngineEvent& event) = 0;
  // The body of GET /metrics (Prometheus text format 0.0.4).
  virtual std::string render_metrics() = 0;
};

}  // namespace tally::server
