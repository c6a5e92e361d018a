#!/usr/bin/env bash
# The functions of this crate a first `encode` runs (#62: at most 15 over 6 files), counted
# where they run, not read: examples/engine.rs built without optimisation (nothing inlined),
# run under callgrind on the default adapter with collection only inside
# `GpuSplitter::encode`, and every function of `src/` that took an instruction there listed
# by file. Closures and derived trait impls are counted apart. Needs valgrind.
#
#     bash scripts/first_encode.sh [--list]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --example engine
out=$(mktemp -d)
trap 'rm -r "$out"' EXIT
export WGPU_BACKEND="${WGPU_BACKEND:-vulkan}"
valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/callgrind.out" \
    "--toggle-collect=wgpu_split::gpu::prepared::<impl wgpu_split::gpu::splitter::GpuSplitter>::encode" \
    target/debug/examples/engine > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
python3 - "$out/callgrind.out" "$PWD/src/" "${1:-}" <<'PY'
import collections, re, sys
path, root, listing = sys.argv[1:]
names = {"f": {}, "n": {}}
current_file, found = None, set()
for line in open(path):
    m = re.match(r"^c?f([lien])=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
    if not m:
        continue
    kind, key, name = m.groups()
    table = names["n"] if kind == "n" else names["f"]
    if name:
        table[key] = name
    if line.startswith("fl="):
        current_file = table[key]
    elif line.startswith("fn=") and current_file and current_file.startswith(root):
        found.add((current_file[len(root):], table[key]))
named = {(f, n) for f, n in found if "{{closure}}" not in n and " as core::" not in n}
print(f"{len(named)} functions over {len({f for f, _ in named})} files "
      f"({len(found)} with closures and derived impls)")
for f, c in collections.Counter(f for f, _ in named).most_common():
    print(f"  {c:3} src/{f}")
if listing == "--list":
    for f, n in sorted(named):
        print(f"src/{f}: {n}")
PY
