#!/usr/bin/env bash
# Packs what a machine without a Rust toolchain needs to test and measure this project on its
# GPU: the command and every release test binary, stripped, in one tarball that
# `scripts/device_report.sh` runs there from a copy of this repository.
#
# Usage: scripts/pack_binaries.sh OUT.tar.xz
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT.tar.xz" >&2; exit 2; }
out=$(realpath -m "$1")
mkdir -p "$(dirname "$out")"
cd "$(dirname "$0")/.."

cargo build --release
pack=$(mktemp -d)
trap 'rm -rf "$pack"' EXIT
mkdir "$pack/tests"
# Each test harness's executable, as cargo reports it (the examples it builds are not tests).
cargo test --release --no-run --message-format=json 2>/dev/null |
  grep '"profile":{[^}]*"test":true[,}]' | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 |
  while read -r exe; do cp "$exe" "$pack/tests/"; done
cp target/release/wgpu-split "$pack/"
# The command tests run the command from the path it was built at.
realpath target/release/wgpu-split > "$pack/command_path"
strip "$pack/wgpu-split" "$pack"/tests/*
tar -cJf "$out" -C "$pack" .
echo "$out: $(du -h "$out" | cut -f1), $(ls "$pack/tests" | wc -l) test binaries"
