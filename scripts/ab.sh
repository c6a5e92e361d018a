#!/usr/bin/env bash
# A/B of the kernel on the host at hand: builds a base revision (the commit .ci/last-release
# names, unless BASE says another) and the work tree, each in a target directory of its own
# (target/ab/base, target/ab/tree), then runs both builds' `wgpu-split bench` interleaved,
# round by round and adapter by adapter (base then tree, tree then base in the next round),
# and prints per case each build's median over the faster copy kernel and tree / base.
#
# A ratio over a copy kernel on a CPU adapter depends on the host (a copy runs at cache speed
# where the L3 holds the case whole), so the figure that holds across hosts is the two builds
# measured together: run this before landing any change under crates/wgsl-split/ or src/gpu/, and put
# its output in the note. The header names the host's CPU, its L3 and each adapter's driver.
#
# Usage: [BASE=rev] [ROUNDS=3] [BACKENDS="vulkan gl"] [OUT=target/ab/run] scripts/ab.sh [BENCH OPTIONS...]
#   e.g. scripts/ab.sh --cases=qkv_heads,columns --quick
# The bench options go to both builds (a case the base lacks shows as "-").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base=$(git rev-parse --verify "${BASE:-$(cat .ci/last-release)}^{commit}")
rounds=${ROUNDS:-3}
backends=${BACKENDS:-vulkan gl}
out=$(realpath -m "${OUT:-target/ab/run}")
ab=$root/target/ab
mkdir -p "$ab/bin" "$out"
rm -f "$out"/*.json

# The base's source, laid out again only when the revision changes (so its build stays
# incremental), and built in a target directory of its own.
if [ "$(cat "$ab/base-src/.rev" 2>/dev/null)" != "$base" ]; then
  rm -rf "$ab/base-src"
  mkdir -p "$ab/base-src"
  git archive "$base" | tar -x -C "$ab/base-src"
  # Inside this repository's workspace, a base from before the workspace (0.2.0) needs a
  # workspace of its own to build.
  grep -q '^\[workspace\]' "$ab/base-src/Cargo.toml" || printf '\n[workspace]\n' >> "$ab/base-src/Cargo.toml"
  echo "$base" > "$ab/base-src/.rev"
fi
echo "building the base ${base:0:12} and the work tree ..." >&2
(cd "$ab/base-src" && cargo build --release --locked --bin wgpu-split --target-dir "$ab/base" -q)
cargo build --release --locked --bin wgpu-split --target-dir "$ab/tree" -q
# Copies, so a later build cannot change a binary between rounds.
cp "$ab/base/release/wgpu-split" "$ab/bin/base"
cp "$ab/tree/release/wgpu-split" "$ab/bin/tree"

{
  echo "host: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), L3 $(lscpu | sed -n 's/^L3 cache: *//p'), $(nproc) cores"
  echo "base: ${base:0:12} \"$(git log -1 --format=%s "$base" | cut -c1-50)...\"; tree: $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- src shaders crates || echo ' + changes')"
  echo "rounds: $rounds; bench options: ${*:-(none)}"
} > "$out/host.txt"

# The options each build takes: a case named in --cases that a build lacks (a case newer than
# the base) is left out of its runs; the build lists its cases when asked for an unknown one.
options() {
  local build=$1 arg known
  shift
  for arg in "$@"; do
    if [[ "$arg" == --cases=* ]]; then
      known=$({ "$ab/bin/$build" bench --cases=- 2>&1 || true; } | sed -n 's/.*cases are //p' | tr -d ' ')
      arg=--cases=$(tr ',' '\n' <<< "${arg#--cases=}" | grep -Fxf <(tr ',' '\n' <<< "$known") | paste -sd,)
      [ "$arg" = --cases= ] && return 1
    fi
    echo "$arg"
  done
}

for round in $(seq 1 "$rounds"); do
  for backend in $backends; do
    # The order alternates by round, so neither build always runs on a warmer machine.
    order="base tree"
    [ $((round % 2)) -eq 0 ] && order="tree base"
    for build in $order; do
      echo "round $round/$rounds: $build on $backend" >&2
      opts=$(options "$build" "$@") || continue
      args=()
      [ -n "$opts" ] && mapfile -t args <<< "$opts"
      "$ab/bin/$build" bench --backend="$backend" --json="$out/$build.$backend.$round.json" \
        "${args[@]}" > "$out/$build.$backend.$round.log" 2>&1 || {
        echo "the $build build's bench on $backend failed:" >&2
        tail -5 "$out/$build.$backend.$round.log" >&2
        exit 1
      }
    done
  done
done
"$ab/bin/tree" info --json > "$out/info.json" 2>/dev/null || true
python3 scripts/ab_summary.py "$out"
