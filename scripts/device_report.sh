#!/usr/bin/env bash
# Tests and measures this project on a machine's Vulkan adapter from the binaries
# `scripts/pack_binaries.sh` packed: every test (the GL adapter's left out), then the bench
# three times per lane mapping and three times on the routes the device picks, each with the
# memory trace and 20 splits per submission. Writes logs and JSON reports into OUT_DIR and
# one line per step to OUT_DIR/summary.txt. Run it from a copy of this repository.
# BENCH_ARGS adds bench options (`--quick`, `--cases=...`) to every bench run.
#
# Usage: [BENCH_ARGS=...] scripts/device_report.sh BINARIES.tar.xz OUT_DIR [RUNS]
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BINARIES.tar.xz OUT_DIR [RUNS]" >&2; exit 2; }
pack=$(realpath "$1")
out=$(realpath -m "$2")
runs=${3:-3}
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
summary="$out/summary.txt"
: > "$summary"
step() {
  local name=$1
  shift
  local start=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  echo "$name: exit $? in $((SECONDS - start)) s" | tee -a "$summary"
}

"$bin/wgpu-split" info > "$out/info.txt" 2>&1
for t in "$bin"/tests/*; do
  step "test.$(basename "$t")" "$t" --skip ::gl
done
bench() {
  local name=$1
  shift
  step "$name" "$bin/wgpu-split" bench --backend=vulkan --batch=20 --memory \
    --json="$out/$name.json" "$@" ${BENCH_ARGS:-}
}
for r in $(seq 1 "$runs"); do
  for mode in gpu cpu; do
    bench "bench.gather.$mode.$r" --route=gather --gather-mode=$mode
  done
  bench "bench.auto.$r" --route=auto
done
grep -c "exit 0 " "$summary" | sed 's/$/ steps passed/' | tee -a "$summary"
