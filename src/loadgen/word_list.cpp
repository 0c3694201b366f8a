#include "loadgen/word_list.h"

namespace tally::loadgen {

std::span<const std::string_view> prompt_words() {
  static constexpr std::string_view kWords[] = {
      "the",     "of",      "and",     "to",      "in",     "is",     "was",     "that",    "for",
      "it",      "with",    "as",      "on",      "be",     "at",     "by",      "this",    "had",
      "not",     "are",     "but",     "from",    "or",     "have",   "an",      "they",    "which",
      "one",     "you",     "were",    "all",     "her",    "she",    "there",   "would",   "their",
      "we",      "him",     "been",    "has",     "when",   "who",    "will",    "more",    "no",
      "if",      "out",     "so",      "said",    "what",   "up",     "its",     "about",   "into",
      "than",    "them",    "can",     "only",    "other",  "new",    "some",    "could",   "time",
      "these",   "two",     "may",     "then",    "do",     "first",  "any",     "my",      "now",
      "such",    "like",    "our",     "over",    "man",    "me",     "even",    "most",    "made",
      "after",   "also",    "did",     "many",    "before", "must",   "through", "back",    "years",
      "where",   "much",    "your",    "way",     "well",   "down",   "should",  "because", "each",
      "just",    "those",   "people",  "how",     "too",    "little", "state",   "good",    "very",
      "make",    "world",   "still",   "own",     "see",    "men",    "work",    "long",    "get",
      "here",    "between", "both",    "life",    "being",  "under",  "never",   "day",     "same",
      "another", "know",    "while",   "last",    "might",  "us",     "great",   "old",     "year",
      "off",     "come",    "since",   "against", "go",     "came",   "right",   "used",    "take",
      "three",   "small",   "house",   "once",    "upon",   "girl",   "boy",     "dog",     "cat",
      "tree",    "sun",     "happy",   "sad",     "big",    "play",   "friend",  "mom",     "dad",
      "ball",    "park",    "water",   "bird",    "fish",   "garden", "flower",  "apple",   "cake",
      "toy",     "box",     "door",    "window",  "sky",    "rain",   "snow",    "wind",    "star",
      "moon",    "night",   "morning", "school",  "book",   "story",  "name",    "red",     "blue",
      "green",   "yellow",  "bright",  "warm",    "cold",   "fast",   "slow",    "jump",    "run",
      "walk",    "sing",    "dance",   "laugh",   "smile",  "help",   "find",    "look",    "open",
      "close",   "give",    "share",   "love",    "kind",   "gentle", "brave",   "quiet",   "loud",
      "soft",    "hard",    "round",   "tall",    "short",  "young",  "wise",    "funny",
  };
  return kWords;
}

}  // namespace tally::loadgen
