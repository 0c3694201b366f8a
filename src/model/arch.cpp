#include "model/arch.h"

#include <array>

namespace tally {

namespace {

constexpr std::array kArchs = {
    ArchTraits{.name = "llama", .rope_layout = RopeLayout::kAdjacent, .qkv_bias = false},
    ArchTraits{.name = "qwen2", .rope_layout = RopeLayout::kNeox, .qkv_bias = true},
};

}  // namespace

const ArchTraits* find_arch(std::string_view name) {
  for (const auto& a : kArchs)
    if (a.name == name) return &a;
  return nullptr;
}

std::span<const ArchTraits> supported_archs() { return kArchs; }

}  // namespace tally
