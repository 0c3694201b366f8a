#!/usr/bin/env python3
"""Writes the `loop` workload of docs/speculative.md: a ShareGPT-format file whose prompts are
one word said 48 times. A seeded random-weight model (tally convert --synthetic) does not copy
its prompt, but after such a prompt its greedy output falls into a short loop of its own
tokens, which the n-gram drafter then proposes: a copy-heavy answer from a model that cannot
copy. Use: python3 bench/spec_loop_prompts.py loop.json, then tally bench serve
--dataset-name sharegpt --dataset-path loop.json --sharegpt-output-len 64 ..."""
import json
import sys

WORDS = "cat rain the river town hill road mat sky green old quiet fell over grey ran".split()

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: spec_loop_prompts.py OUT.json")
    entries = [{"conversations": [{"from": "human", "value": " ".join([w] * 48)},
                                  {"from": "gpt", "value": w}]} for w in WORDS]
    with open(sys.argv[1], "w") as f:
        json.dump(entries, f)
