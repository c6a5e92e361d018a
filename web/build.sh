#!/usr/bin/env bash
# Builds the browser page: the library and web/src, and the core alone for the JavaScript
# driver (web/core), for wasm32 with Debian's wasm toolchain (rustc-web, cargo-web,
# rust-web-src, lld-22: std is built from source, hence RUSTC_BOOTSTRAP and -Z build-std),
# then the JS glue of each with wasm-bindgen into web/pkg.
# With --serve, serves web/ at http://127.0.0.1:8000/ afterwards (open it in a browser with
# WebGPU; Chromium on Linux: --enable-unsafe-webgpu).
set -euo pipefail
cd "$(dirname "$0")/.."
PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --release \
  --manifest-path web/Cargo.toml --workspace --target wasm32-unknown-unknown \
  -Z build-std=std,panic_abort --target-dir target/wasm
for module in wgpu_split_web wgsl_split_js; do
  wasm-bindgen --target web --out-dir web/pkg \
    "target/wasm/wasm32-unknown-unknown/release/$module.wasm"
done
echo "built web/pkg"
if [[ "${1:-}" == "--serve" ]]; then
  echo "serving web/ at http://127.0.0.1:8000/"
  exec python3 -m http.server --bind 127.0.0.1 --directory web 8000
fi
