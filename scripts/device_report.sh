#!/usr/bin/env bash
# Tests and measures this project on a machine's Vulkan adapter from the binaries
# `scripts/pack_binaries.sh` packed: every test (the GL adapter's left out), then the bench RUNS
# times (3 by default) per lane mapping and on the routes the device picks, 20 splits per
# submission, in device time where the adapter has timestamps; then the memory trace once, a
# step of its own under a time limit (a driver's compiler may take long over a trace build).
# Writes logs and JSON reports into OUT_DIR, one line per step to OUT_DIR/steps.txt,
# and OUT_DIR/summary.md (scripts/bench_summary.py: a section for docs/performance.md, with
# PyTorch's rates beside ours when TORCH names its torch.json), which it prints at the end.
# On an H200 it should take about 5 minutes: the tests about 95 s, each bench run about 25 s.
# BENCH_ARGS adds bench options (`--quick`, `--cases=...`) to every bench run.
#
# Usage: [BENCH_ARGS=...] [TORCH=torch.json] scripts/device_report.sh BINARIES.tar.xz OUT_DIR [RUNS]
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BINARIES.tar.xz OUT_DIR [RUNS]" >&2; exit 2; }
pack=$(realpath "$1")
out=$(realpath -m "$2")
runs=${3:-3}
torch=${TORCH:+$(realpath "$TORCH")}
cd "$(dirname "$0")/.."
mkdir -p "$out"
bin=$(mktemp -d)
link=
# The unpacked binaries and the command's link go when the script ends, however it ends.
trap 'rm -rf "$bin"; [ -n "$link" ] && rm -f "$link"' EXIT
tar -xJf "$pack" -C "$bin"
command_path=$(cat "$bin/command_path")
if [ ! -e "$command_path" ]; then
  mkdir -p "$(dirname "$command_path")" && ln -s "$bin/wgpu-split" "$command_path" \
    && link=$command_path
fi
steps="$out/steps.txt"
: > "$steps"
step() {
  local name=$1
  shift
  local start=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  echo "$name: exit $? in $((SECONDS - start)) s" | tee -a "$steps"
}

"$bin/wgpu-split" info > "$out/info.txt" 2>&1
for t in "$bin"/tests/*; do
  step "test.$(basename "$t")" "$t" --skip ::gl
done
bench() {
  local name=$1
  shift
  # shellcheck disable=SC2086 # BENCH_ARGS holds several options
  step "$name" "$bin/wgpu-split" bench --backend=vulkan --batch=20 \
    --json="$out/$name.json" "$@" ${BENCH_ARGS:-}
}
for r in $(seq 1 "$runs"); do
  bench "bench.gather.gpu.$r" --route=gather --gather-mode=gpu
  bench "bench.gather.cpu.$r" --route=gather --gather-mode=cpu
  bench "bench.auto.$r" --route=auto
done
# The traced figures: the gather as a GPU runs it, each case once, timed briefly (`--quick`,
# given once).
memory_args=${BENCH_ARGS:-}
# shellcheck disable=SC2086 # BENCH_ARGS holds several options
step memory timeout 240 "$bin/wgpu-split" bench --backend=vulkan --quick --route=gather \
  --gather-mode=gpu --memory --json="$out/memory.json" ${memory_args//--quick/}
echo "$(grep -c "exit 0 " "$steps") of $(wc -l < "$steps") steps passed in $SECONDS s" | tee -a "$steps"
python3 scripts/bench_summary.py "$out" ${torch:+"$torch"} > "$out/summary.md"
cat "$out/summary.md"
