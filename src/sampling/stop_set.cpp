#include "sampling/stop_set.h"

#include <algorithm>
#include <deque>

namespace tally {

StopSet::StopSet(std::vector<std::string> stops) : stops_(std::move(stops)) {
  // The trie, with each node's edges in a list of its own while it grows.
  std::vector<std::vector<Edge>> children(1);
  nodes_.resize(1);
  for (size_t i = 0; i < stops_.size(); ++i) {
    State s = kStart;
    for (const char c : stops_[i]) {
      const auto byte = static_cast<uint8_t>(c);
      std::vector<Edge>& out = children[static_cast<size_t>(s)];
      auto it = std::find_if(out.begin(), out.end(), [&](const Edge& e) { return e.byte == byte; });
      if (it != out.end()) {
        s = it->to;
        continue;
      }
      const auto next = static_cast<State>(nodes_.size());
      out.push_back({byte, next});
      Node node;
      node.depth = nodes_[static_cast<size_t>(s)].depth + 1;
      nodes_.push_back(node);
      children.emplace_back();
      s = next;
    }
    // The first of equal strings keeps the node; an empty string never reaches one.
    if (s != kStart && nodes_[static_cast<size_t>(s)].output < 0) {
      nodes_[static_cast<size_t>(s)].output = static_cast<int32_t>(i);
    }
  }
  build(children);
}

void StopSet::build(const std::vector<std::vector<Edge>>& children) {
  for (size_t s = 0; s < children.size(); ++s) {
    std::vector<Edge> sorted = children[s];
    std::sort(sorted.begin(), sorted.end(), [](const Edge& a, const Edge& b) { return a.byte < b.byte; });
    nodes_[s].first_edge = static_cast<uint32_t>(edges_.size());
    nodes_[s].n_edges = static_cast<uint32_t>(sorted.size());
    edges_.insert(edges_.end(), sorted.begin(), sorted.end());
  }
  // Breadth first, so a node's fail target (shallower) is finished before the node.
  std::deque<State> queue;
  for (const Edge& e : children[kStart]) queue.push_back(e.to);
  while (!queue.empty()) {
    const State u = queue.front();
    queue.pop_front();
    for (const Edge& e : children[static_cast<size_t>(u)]) {
      State f = nodes_[static_cast<size_t>(u)].fail;
      while (f != kStart && child(f, e.byte) < 0) f = nodes_[static_cast<size_t>(f)].fail;
      const State g = child(f, e.byte);
      Node& v = nodes_[static_cast<size_t>(e.to)];
      v.fail = (g >= 0 && g != e.to) ? g : kStart;
      // A stop ending here is longer than any ending at a proper suffix.
      if (v.output < 0) v.output = nodes_[static_cast<size_t>(v.fail)].output;
      queue.push_back(e.to);
    }
  }
}

Status StopSet::validate(const std::vector<std::string>& stops) {
  size_t total = 0;
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) {
      return make_error(ErrorCode::kInvalidArgument, "stop[{}] is an empty string", i);
    }
    total += stops[i].size();
  }
  if (total > kMaxTotalBytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "stop strings have {} bytes in all, at most {} are allowed", total,
                      kMaxTotalBytes);
  }
  return {};
}

StopSet::State StopSet::child(State s, uint8_t byte) const {
  const Node& n = nodes_[static_cast<size_t>(s)];
  const auto begin = edges_.begin() + n.first_edge;
  const auto end = begin + n.n_edges;
  const auto it = std::lower_bound(begin, end, byte,
                                   [](const Edge& e, uint8_t b) { return e.byte < b; });
  return (it != end && it->byte == byte) ? it->to : -1;
}

StopSet::State StopSet::next(State s, uint8_t byte, uint64_t& work) const {
  for (;;) {
    ++work;
    const State c = child(s, byte);
    if (c >= 0) return c;
    if (s == kStart) return kStart;
    s = nodes_[static_cast<size_t>(s)].fail;
  }
}

}  // namespace tally
