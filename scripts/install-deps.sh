#!/usr/bin/env bash
# Installs the Debian packages stagecraft needs, when they are missing.
# Called by `make demo`, `make test` and .ci/run; a no-op once installed.
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# OpenCL: headers to build, the ICD loader and PoCL (a CPU device) to run.
# SQLite holds the cost model's samples; liblzma compresses their export.
for pkg in build-essential libpng-dev libsqlite3-dev sqlite3 liblzma-dev xz-utils pkg-config clang opencl-headers ocl-icd-libopencl1 ocl-icd-opencl-dev pocl-opencl-icd; do
    have_pkg "$pkg" || need+=("$pkg")
done
# libFuzzer's runtime comes with clang's compiler-rt.
if ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    for v in 16 15 14; do
        if apt-cache show "libclang-rt-$v-dev" >/dev/null 2>&1; then need+=("libclang-rt-$v-dev"); break; fi
    done
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "install-deps: installing ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
