#!/usr/bin/env python3
"""Summarizes the reports `scripts/device_report.sh` wrote into one Markdown section for
`docs/performance.md`: the adapter, the clock, the tests' counts, and per case the prepared
split's rate over the case's fastest copy in every run of every configuration, the fastest copy
and its rate, ours beside it, PyTorch's where a `torch.json` is given, and the traced figures.

Usage: scripts/bench_summary.py OUT_DIR [TORCH_JSON]
Standard library only: it runs on a GPU machine as it comes.
"""

import json
import re
import statistics
import sys
from pathlib import Path

# The configurations device_report.sh runs, in its order: report-name stem, column heading.
CONFIGS = [
    ("bench.gather.gpu", "gather, gpu mapping"),
    ("bench.gather.cpu", "gather, cpu mapping"),
    ("bench.auto", "auto"),
]


def reports(out, stem):
    """The JSON reports of one configuration, in run order."""
    found = []
    for path in out.glob(f"{stem}.*.json"):
        run = path.name[len(stem) + 1 : -len(".json")]
        if run.isdigit():
            found.append((int(run), json.loads(path.read_text())))
    return [report for _, report in sorted(found, key=lambda x: x[0])]


def test_counts(out):
    """Passed and failed tests over every harness's log, and the harnesses that failed."""
    passed = failed = 0
    failing = []
    for log in sorted(out.glob("test.*.log")):
        text = log.read_text(errors="replace")
        for p, f in re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed", text):
            passed += int(p)
            failed += int(f)
        failing += [
            f"{log.stem[len('test.'):]}::{name}"
            for name in re.findall(r"^test (\S+) \.\.\. FAILED$", text, re.M)
        ]
    return passed, failed, failing


# PyTorch's way of each case, first that torch.json has: the copying split where it runs (a
# plain split of a leading axis is a view, not a copy), else split + contiguous, cat, and one
# copy_ per part through views.
TORCH_OPS = ["split_with_sizes_copy", "split_contiguous", "cat_out", "copy_through_views"]


def torch_rates(path):
    """PyTorch's rate per case in torch.json, with the operation's name."""
    if path is None:
        return {}
    rates = {}
    for case in json.loads(Path(path).read_text())["cases"]:
        op = next((op for op in TORCH_OPS if case.get(f"{op}_gbps")), None)
        if op:
            rates[case["name"]] = (case[f"{op}_gbps"], op)
    return rates


def rate(x):
    """A rate in GB/s: whole numbers from 100 up, three figures below."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    torch = torch_rates(sys.argv[2] if len(sys.argv) == 3 else None)
    runs = {stem: reports(out, stem) for stem, _ in CONFIGS}
    first = next((r[0] for r in runs.values() if r), None)
    if first is None:
        sys.exit(f"{out}: no bench reports")
    adapter = first["adapter"]
    print(f"Adapter: {adapter['name']} ({adapter['backend']}); clock: {first['clock']} time; "
          f"{first['batch']} splits per submission; runs per configuration: "
          f"{', '.join(f'{h} {len(runs[s])}' for s, h in CONFIGS)}.")
    passed, failed, failing = test_counts(out)
    print(f"Tests: {passed} passed, {failed} failed"
          + (f" ({', '.join(failing)})" if failing else "") + ".")
    print()
    print("Prepared split over the case's fastest copy, each run; the fastest copy (median rate of "
          "the auto runs, or of the gather's GPU-mapping runs where no auto run ran); ours = "
          "the prepared split in the same runs, median; GB/s = input bytes / time.")
    print()
    heads = [h for _, h in CONFIGS]
    print("| case | " + " | ".join(heads)
          + " | fastest copy GB/s | ours GB/s | PyTorch GB/s | program (auto) |")
    print("|---" * (len(heads) + 5) + "|")
    names = [c["name"] for c in first["cases"]]
    for name in names:
        cells = []
        for stem, _ in CONFIGS:
            ratios = [
                c["prepared_over_best_copy"]
                for r in runs[stem]
                for c in r["cases"]
                if c["name"] == name
            ]
            cells.append(" ".join(f"{x:.2f}" for x in ratios) or "-")
        # The auto runs', or where none ran (a deadline), the gather's in the GPU mapping.
        source = "bench.auto" if runs["bench.auto"] else "bench.gather.gpu"
        auto = [c for r in runs[source] for c in r["cases"] if c["name"] == name]
        best = "-"
        ours = "-"
        program = "-"
        if auto:
            program = ", ".join(dict.fromkeys(auto[0].get("programs", []))) or "copies"
            kinds = [c["best_copy"] for c in auto]
            kind = max(set(kinds), key=kinds.count)
            fastest = statistics.median(c["copies"][c["best_copy"]]["gbps"] for c in auto)
            best = f"{rate(fastest)} ({kind})"
            ours = rate(statistics.median(c["prepared"]["gbps"] for c in auto))
        theirs = f"{rate(torch[name][0])} ({torch[name][1]})" if name in torch else "-"
        print(f"| {name} | " + " | ".join(cells) + f" | {best} | {ours} | {theirs} | {program} |")
    steps_section(out, runs)
    rows_section(runs)
    memory = out / "memory.json"
    traced = json.loads(memory.read_text()) if memory.exists() else None
    if traced:
        print()
        print("Traced memory figures (warp of 32): load efficiency, load lines per 512 bytes "
              "stored, table bytes read per 512 bytes stored.")
        print()
        print("| case | load eff | load l/512 | table B/512 |")
        print("|---|---|---|---|")
        for c in traced["cases"]:
            m = c.get("memory", {}).get("warp32")
            if m:
                print(f"| {c['name']} | {m['load_efficiency']:.2f} | "
                      f"{m['load_lines_per_512']:.1f} | {m['table_bytes_per_512']:.1f} |")


def steps_section(out, runs):
    """The gather in the GPU mapping at more steps a lane (device_report.sh's `bench.stepsN`
    runs) beside its default runs: each case's prepared split over its fastest copy."""
    counts = {int(m.group(1)) for p in out.glob("bench.steps*.json")
              if (m := re.match(r"bench\.steps(\d+)\.", p.name))}
    trials = [(n, reports(out, f"bench.steps{n}")) for n in sorted(counts)]
    if not trials:
        return
    default = runs["bench.gather.gpu"]
    print()
    print("Steps per lane, the gather in the GPU mapping: the prepared split over the case's "
          "fastest copy, each run, at the default and at more steps a lane.")
    print()
    steps = default[0].get("max_steps_per_lane", "default") if default else "default"
    heads = [f"{steps} (default)"] + [str(n) for n, _ in trials]
    print("| case | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    names = []
    for _, found in trials:
        names += [c["name"] for r in found for c in r["cases"] if c["name"] not in names]
    for name in names:
        cells = []
        for found in [default] + [f for _, f in trials]:
            ratios = [c["prepared_over_best_copy"] for r in found for c in r["cases"]
                      if c["name"] == name]
            cells.append(" ".join(f"{x:.2f}" for x in ratios) or "-")
        print(f"| {name} | " + " | ".join(cells) + " |")


def rows_section(runs):
    """Rows placed by indices: each case over the faster copy kernel moving its bytes, and
    the prepared node's host time, in every run of every configuration."""
    names = []
    for stem, _ in CONFIGS:
        for r in runs[stem]:
            names += [c["name"] for c in r.get("rows_cases", []) if c["name"] not in names]
    if not names:
        return
    print()
    print("Rows placed by indices (docs/rows.md): over the faster copy kernel moving the same "
          "bytes, each run.")
    print()
    heads = [h for _, h in CONFIGS]
    print("| case | " + " | ".join(heads) + " | prepared encode, us |")
    print("|---" * (len(heads) + 2) + "|")
    for name in names:
        cells = []
        host = []
        for stem, _ in CONFIGS:
            found = [c for r in runs[stem] for c in r.get("rows_cases", []) if c["name"] == name]
            cells.append(" ".join(f"{c['over_copy_kernel']:.2f}" for c in found) or "-")
            host += [c["prepared_host_ms"] * 1e3 for c in found]
        us = f"{statistics.median(host):.1f}" if host else "-"
        print(f"| {name} | " + " | ".join(cells) + f" | {us} |")


if __name__ == "__main__":
    main()
