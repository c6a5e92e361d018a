#!/usr/bin/env bash
# Tests and measures this project on a machine's Vulkan adapter from the binaries
# `scripts/pack_binaries.sh` packed, the steps in the order of what they show: the bench once
# on the gather in the GPU lane mapping (20 splits per submission, device time where the
# adapter has timestamps), every test (the GL adapter's left out), the other gather runs, the
# routes the device picks (RUNS times each, 3 by default), the CPU lane mapping once, then the
# memory trace (a driver's compiler may take long over a trace build). Between the gather's
# runs and the routes', the GPU mapping at more steps a lane (STEPS, "16 64" by default) on
# some cases. A step that would start
# past DEADLINE seconds (400 by default) is skipped and said so, and a step is stopped after
# STEP_LIMIT seconds (150 by default; exit 124 in steps.txt), so that a call under a time
# limit still brings back what ran. Writes logs and JSON reports into OUT_DIR, one line per
# step to OUT_DIR/steps.txt, and OUT_DIR/summary.md after every step
# (scripts/bench_summary.py: a section for docs/performance.md, with PyTorch's rates beside
# ours when TORCH names its torch.json), which it prints at the end. BENCH_ARGS adds bench
# options (`--quick`, `--cases=...`) to every bench run.
#
# Usage: [BENCH_ARGS=...] [TORCH=torch.json] [DEADLINE=s] [STEP_LIMIT=s] scripts/device_report.sh BINARIES.tar.xz OUT_DIR [RUNS]
#
# On a lent GPU (the device tool: a 10-minute command, 15 minutes of device time in all, at
# most 8 files back), pack here, then run in one call, carrying the pack and the Vulkan loader
# (`.gl`, /work/.library/device/README.md), and bring the reports back as one file (on the
# H200: the machine's start about 40 s, a bench run 50 s, every test 100 s; the last step
# starts by DEADLINE and ends by STEP_LIMIT after it, so the tar below runs inside 600 s):
#   scripts/pack_binaries.sh target/pack/binaries.tar.xz
#   carry [".gl", "target/pack"], timeout_s 600:
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig;
#   scripts/device_report.sh target/pack/binaries.tar.xz /tmp/report;
#   tar -cJf $OUT/report.tar.xz -C /tmp/report .; cp /tmp/report/summary.md $OUT/
# then here, with PyTorch's rates beside ours (../shared is not carried):
#   mkdir -p target/report && tar -xJf FILES_AT/report.tar.xz -C target/report
#   python3 scripts/bench_summary.py target/report ../shared/gpu/h200-2026-11-27/torch.json
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
deadline=${DEADLINE:-400}
summarize() {
  python3 scripts/bench_summary.py "$out" ${torch:+"$torch"} > "$out/summary.md" 2>/dev/null
}
step() {
  local name=$1
  shift
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "$name: skipped at $SECONDS s (DEADLINE $deadline s)" | tee -a "$steps"
    return
  fi
  local start=$SECONDS
  # A step that hangs (a driver's deadlock hung a test binary once) ends at STEP_LIMIT.
  timeout "${STEP_LIMIT:-150}" "$@" > "$out/$name.log" 2>&1
  echo "$name: exit $? in $((SECONDS - start)) s" | tee -a "$steps"
  summarize
}

"$bin/wgpu-split" info > "$out/info.txt" 2>&1
bench() {
  local name=$1
  shift
  # shellcheck disable=SC2086 # BENCH_ARGS holds several options
  step "$name" "$bin/wgpu-split" bench --backend=vulkan --batch=20 \
    --json="$out/$name.json" "$@" ${BENCH_ARGS:-}
}
bench bench.gather.gpu.1 --route=gather --gather-mode=gpu
for t in "$bin"/tests/*; do
  step "test.$(basename "$t")" "$t" --skip ::gl
done
for r in $(seq 2 "$runs"); do
  bench "bench.gather.gpu.$r" --route=gather --gather-mode=gpu
done
# More steps a lane, fewer workgroups (a grid of a few waves, each lane several units): the
# cases a dispatch's fixed cost holds back, and two of the largest, in the GPU mapping (or
# the cases BENCH_ARGS names).
steps_cases=--cases=qkv,concat_kv_append,concat_c2f,merge_heads,glu,bytes_odd,concat_bytes_odd
[[ "${BENCH_ARGS:-}" == *--cases* ]] && steps_cases=
for n in ${STEPS:-16 64}; do
  # shellcheck disable=SC2086 # steps_cases is one option or none
  bench "bench.steps$n.1" --route=gather --gather-mode=gpu --max-steps-per-lane="$n" $steps_cases
done
for r in $(seq 1 "$runs"); do
  bench "bench.auto.$r" --route=auto
done
bench bench.gather.cpu.1 --route=gather --gather-mode=cpu
# The traced figures: the gather as a GPU runs it, each case once, timed briefly (`--quick`,
# given once), within what the deadline leaves.
memory_args=${BENCH_ARGS:-}
limit=$((deadline + 60 - SECONDS))
# shellcheck disable=SC2086 # BENCH_ARGS holds several options
step memory timeout $((limit < 240 ? (limit > 1 ? limit : 1) : 240)) "$bin/wgpu-split" bench \
  --backend=vulkan --quick --route=gather --gather-mode=gpu --memory --json="$out/memory.json" \
  ${memory_args//--quick/}
echo "$(grep -c "exit 0 " "$steps") of $(wc -l < "$steps") steps passed in $SECONDS s" | tee -a "$steps"
summarize
cat "$out/summary.md"
