// Plain English words that prompts are drawn from: common words, so every tokenizer splits
// them into few tokens and the text reads as text.
#pragma once

#include <span>
#include <string_view>

namespace tally::loadgen {

std::span<const std::string_view> prompt_words();

}  // namespace tally::loadgen
