#!/usr/bin/env python3
"""Summarizes a `scripts/ab.sh` run: the host, then per adapter and per case each build's
median (over the rounds) of its time over the faster copy kernel of the same run, and the work
tree's median over the base's. Suite cases use the prepared split over the faster copy kernel
moving the same bytes, rows placed by indices their dispatch over it.

Usage: scripts/ab_summary.py RUN_DIR
Standard library only.
"""

import json
import re
import statistics
import sys
from pathlib import Path

# Work tree over base below this is flagged: the bound on a regression.
FLAG_BELOW = 0.90

# The copy kernels of a suite case's report (one vec4 a lane, four): the faster is the floor's
# measure. The device's own buffer copy is left out: on CPU adapters it is a memcpy.
KERNELS = ("copy_kernel", "copy_kernel_x4")


def load(run):
    """{(build, backend): [report, ...]} in round order."""
    found = {}
    for path in sorted(run.glob("*.json")):
        m = re.fullmatch(r"(base|tree)\.(\w+)\.(\d+)\.json", path.name)
        if m:
            found.setdefault((m[1], m[2]), []).append((int(m[3]), json.loads(path.read_text())))
    return {k: [r for _, r in sorted(v, key=lambda x: x[0])] for k, v in found.items()}


def ratios(reports):
    """{case: [ratio per round]}: suite cases, then rows cases."""
    out = {}
    for r in reports:
        for c in r.get("cases", []):
            kernel = max(c["copies"][k]["gbps"] for k in KERNELS)
            out.setdefault(c["name"], []).append(c["prepared"]["gbps"] / kernel)
        for c in r.get("rows_cases", []):
            out.setdefault(c["name"], []).append(c["over_copy_kernel"])
    return out


def drivers(run):
    """{backend: driver} from the tree's `info --json`."""
    try:
        adapters = json.loads((run / "info.json").read_text())["adapters"]
    except (OSError, ValueError, KeyError):
        return {}
    return {a["backend"]: f"{a['name']}, {a['driver']}" for a in adapters}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run = Path(sys.argv[1])
    reports = load(run)
    if not reports:
        sys.exit(f"{run}: no bench reports")
    host = run / "host.txt"
    if host.exists():
        print(host.read_text().rstrip())
    names = drivers(run)
    flagged = []
    for backend in dict.fromkeys(b for _, b in reports):
        base = ratios(reports.get(("base", backend), []))
        tree = ratios(reports.get(("tree", backend), []))
        print()
        print(f"{backend}: {names.get(backend, 'adapter unknown')}")
        print("median over the faster copy kernel (rounds in brackets); tree / base")
        print(f"  {'case':<20} {'base':>24} {'tree':>24} {'tree/base':>9}")
        for name in dict.fromkeys(list(base) + list(tree)):
            cells = []
            for found in (base.get(name), tree.get(name)):
                cells.append(
                    f"{statistics.median(found):.2f} [{' '.join(f'{x:.2f}' for x in found)}]"
                    if found else "-")
            change = "-"
            if base.get(name) and tree.get(name):
                q = statistics.median(tree[name]) / statistics.median(base[name])
                change = f"{q:.2f}"
                if q < FLAG_BELOW:
                    change += " <"
                    flagged.append(f"{name} ({backend}) {q:.2f}")
            print(f"  {name:<20} {cells[0]:>24} {cells[1]:>24} {change:>9}")
    print()
    print(f"below {FLAG_BELOW} of the base: {', '.join(flagged) or 'none'}")


if __name__ == "__main__":
    main()
