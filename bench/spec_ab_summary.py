#!/usr/bin/env python3
"""Summarises bench/spec_serve_ab.sh's runs: per configuration, auto / off output tok/s per
pair (a pair is the two runs of one rep, back to back), their geometric mean with a 95%
confidence interval, and whether that interval decides a target ratio (default 0.97).

A pair's ratio cancels what both of its runs share (the machine's load over a few seconds);
what is left varies from pair to pair, and the interval says how well the pairs pin the mean
ratio down: a t interval on the mean of log(auto / off). The target is met when the whole
interval is at or above it, missed when the whole interval is below it, undecided otherwise
(then more pairs, or a quieter machine, are needed).

Usage: spec_ab_summary.py OUT_DIR [TARGET]   (OUT_DIR/runs.tsv, written by spec_serve_ab.sh)
"""
import json
import math
import os
import re
import statistics
import sys

# Two-sided 95% quantiles of Student's t by degrees of freedom (1..30); 1.96 beyond.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

SPEC = re.compile(r"^[\w:]*spec_decode_num_(drafts|draft_tokens|accepted_tokens)_total"
                  r"(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96


def ratio_interval(ratios):
    """(geometric mean, low, high) of the ratios; low = high = None below two pairs."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), None, None
    half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def verdict(low, high, target):
    if low is None:
        return "undecided (one pair)"
    if low >= target:
        return f"met (>= {target})"
    if high < target:
        return f"NOT met (< {target})"
    return f"undecided (the interval holds {target})"


def read_run(out, name):
    """Output tok/s and median TPOT from the bench's JSON report, spec counters from /metrics."""
    try:
        with open(os.path.join(out, name + ".json")) as f:
            report = json.load(f)
    except (OSError, ValueError):
        return None
    if report.get("failed", 0) or not report.get("completed", 0):
        return None
    spec = {"drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0}
    try:
        with open(os.path.join(out, name + ".metrics.txt")) as f:
            for m in SPEC.finditer(f.read()):
                spec[m.group(1)] = float(m.group(2))
    except OSError:
        pass
    return {"tok_s": report["output_throughput"], "tpot": report.get("median_tpot_ms", 0.0),
            **spec}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    target = float(sys.argv[2]) if len(sys.argv) == 3 else 0.97
    configs = {}  # "dataset cN prompts" -> {rep: {mode: run}}
    with open(os.path.join(out, "runs.tsv")) as f:
        for line in f:
            name, cfg, rep, mode, load0, load1 = line.rstrip("\n").split("\t")
            run = read_run(out, name)
            if run is None:
                print(f"{name}: no result (server or bench failed), left out")
                continue
            run["load"] = (float(load0), float(load1))
            configs.setdefault(cfg, {}).setdefault(int(rep), {})[mode] = run
    for cfg, reps in configs.items():
        pairs = [(r["off"], r["auto"]) for _, r in sorted(reps.items()) if len(r) == 2]
        if not pairs:
            print(f"{cfg}: no complete pair")
            continue
        ratios = [a["tok_s"] / o["tok_s"] for o, a in pairs]
        tpot = [o["tpot"] / a["tpot"] for o, a in pairs if a["tpot"] > 0 and o["tpot"] > 0]
        gm, low, high = ratio_interval(ratios)
        offs = [o["tok_s"] for o, _ in pairs]
        loads = [x for o, a in pairs for x in (*o["load"], *a["load"])]
        drafts = sum(a["drafts"] for _, a in pairs)
        dtok = sum(a["draft_tokens"] for _, a in pairs)
        acc = sum(a["accepted_tokens"] for _, a in pairs)
        print(f"== {cfg}: {len(pairs)} pairs, load {min(loads):.1f}-{max(loads):.1f}")
        print(f"  off tok/s  median {statistics.median(offs):.1f}  range {min(offs):.1f}-"
              f"{max(offs):.1f} ({max(offs) / min(offs):.2f}x between runs)")
        print(f"  auto tok/s median {statistics.median(a['tok_s'] for _, a in pairs):.1f}")
        print("  auto/off per pair: " + " ".join(f"{r:.3f}" for r in ratios))
        ci = f"  95% CI {low:.3f}-{high:.3f}" if low is not None else ""
        print(f"  auto/off geometric mean {gm:.3f}{ci}: {verdict(low, high, target)}")
        if tpot:
            print(f"  off TPOT / auto TPOT (median TPOT) geometric mean "
                  f"{ratio_interval(tpot)[0]:.3f}")
        rate = f" ({acc / dtok:.0%} accepted)" if dtok else ""
        print(f"  auto drafted: {drafts:.0f} drafts, {dtok:.0f} draft tokens, "
              f"{acc:.0f} accepted{rate} over {len(pairs)} runs")


if __name__ == "__main__":
    main()
