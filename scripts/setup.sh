#!/usr/bin/env bash
# Installs what Tessera needs (Debian packages), configures a Release build in
# build/ and builds it. Idempotent; quiet when everything is already there.
# Takes no arguments. Run from anywhere.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Debian packages: compiler and build tools, then the libraries we build on.
packages=(
  g++ cmake ninja-build pkg-config ccache
  libgtest-dev libgmock-dev libbenchmark-dev clang-14 libclang-rt-14-dev
  libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev
  libcpp-httplib-dev libssl-dev libboost-dev libpcre2-dev libutf8proc-dev
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
  libgloo-dev iproute2
  libxxhash-dev libhiredis-dev redis-server
  libucx-dev curl python3 python3-jsonschema chromium
  libopenblas-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages (test clients, peer benchmarks) are pinned in package-lock.json;
# Node.js and npm come from Debian when the machine has none.
if [[ -f package-lock.json ]] && ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs npm" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends nodejs npm >/dev/null
fi
if [[ -f package-lock.json ]]; then
  if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules ]]; then
    echo "setup: installing npm packages from package-lock.json" >&2
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
    touch node_modules
  fi
fi

jobs="$(nproc 2>/dev/null || echo 2)"
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
# Quiet on success; on failure show the build output.
if ! out="$(cmake --build build -j "$jobs" 2>&1)"; then
  printf '%s\n' "$out" >&2
  echo "setup: build failed (output above)" >&2
  exit 1
fi
