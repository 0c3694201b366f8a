// What distinguishes the llama-family architectures tally runs: a row of flags per
// `general.architecture` value. The forward pass reads these flags; adding an architecture
// that fits the family is one new row in arch.cpp (and a test).
#pragma once

#include <span>
#include <string_view>

#include "backend/backend_types.h"

namespace tally {

struct ArchTraits {
  std::string_view name;          // general.architecture, also the metadata key prefix
  RopeLayout rope_layout;         // which elements of a head rope rotates together
  bool qkv_bias;                  // blk.N.attn_{q,k,v}.bias present (and required)
};

// The row for `name`, or nullptr when tally does not run that architecture.
const ArchTraits* find_arch(std::string_view name);
// Every supported architecture (for messages and docs).
std::span<const ArchTraits> supported_archs();

}  // namespace tally
