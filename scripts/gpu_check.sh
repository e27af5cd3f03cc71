#!/usr/bin/env bash
# gpu_check.sh OUT [SECONDS] - the checks that need a CUDA GPU, run on a
# machine that has one (make test cannot: CI has no GPU), with the build
# made by `make all` (build/).  Everything is written under OUT:
#   info.txt     the GPU (nvidia-smi), the device and target stagecraft
#                finds on its own (host-cuda), a baseline run with no
#                --device (the best device: the GPU)
#   tests.log    test_rt, test_target and test_host (CUDA host code built
#                with nvcc and called: HOST_CUDA_APPS, three apps by
#                default) on the GPU
#   fuzz.log     SEEDS (default 3) random schedules of every app run on the
#                GPU and compared with the reference evaluator: exact math
#                bit for bit, then fast math within its tolerance
#   bench.txt, modes.tsv
#                bench_autosched --device cuda at paper size: baseline, the
#                best of RANDOM (default 5) random schedules, one-shot and
#                top-K (default 5), each checked and timed in turn with the
#                baseline
#   gpu.txt.xz   with the seconds left of SECONDS (default 480) after that,
#                `collect --device cuda` on random pipelines (from seed
#                FIRST_SEED, default 1), exported as samples text
# Each step has a time limit (FUZZ_LIMIT, default 180 s for exact math and
# two thirds of it for fast math; BENCH_LIMIT, default 300 s); a step that
# fails or runs out says so in its log and the next one runs.
set -u
out=${1:?usage: scripts/gpu_check.sh OUT [SECONDS]}
budget=${2:-480}
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$out"
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
jobs=$(nproc 2>/dev/null || echo 2)
sc=build/stagecraft
step() {   # step LOG SECONDS CMD...: runs CMD with a limit, appending to LOG
    local log=$1 limit=$2
    shift 2
    echo "== $* (limit ${limit}s)" >>"$log"
    local t0=$(date +%s)
    timeout -s TERM -k 10 "$limit" "$@" >>"$log" 2>&1
    local rc=$?
    echo "== exit status $rc after $(($(date +%s) - t0)) s" >>"$log"
    echo "$(basename "$log"): $* -> $rc ($(($(date +%s) - t0)) s)"
}

{
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
    echo "cores: $jobs"
    ldd "$sc" | grep -i 'not found' && echo "missing libraries"
} >"$out/info.txt" 2>&1
step "$out/info.txt" 60 "$sc" schedule apps/unsharp.pipe --strategy baseline --target host-cuda -o /tmp/unsharp.sched
step "$out/info.txt" 120 "$sc" run apps/unsharp.pipe --strategy baseline --check --samples 3
step "$out/info.txt" 60 "$sc" floor --device cuda apps/box_blur.pipe

step "$out/tests.log" 60 build/tests/test_rt
step "$out/tests.log" 60 build/tests/test_target
step "$out/tests.log" 180 build/tests/test_host

SEEDS=${SEEDS:-3} BACKENDS=cuda CUDA_SEEDS=0 JOBS=$jobs step "$out/fuzz.log" "${FUZZ_LIMIT:-180}" bash tests/fuzz_schedules.sh build
SEEDS=${SEEDS:-3} BACKENDS=cuda CUDA_SEEDS=0 JOBS=$jobs MATH=fast step "$out/fuzz.log" $((${FUZZ_LIMIT:-180} * 2 / 3)) bash tests/fuzz_schedules.sh build

step "$out/bench.txt" "${BENCH_LIMIT:-300}" build/bench_autosched --device cuda --random "${RANDOM_SCHEDULES:-5}" --k "${K:-5}" \
    --jobs "$jobs" --tsv "$out/bench"
[ -f "$out/bench/modes.tsv" ] && mv "$out/bench/modes.tsv" "$out/modes.tsv"
rm -rf "$out/bench"

secs=$(($(left) - 20))
if [ "$secs" -gt 30 ]; then
    rm -f /tmp/gpu.db
    step "$out/collect.log" "$secs" "$sc" collect --db /tmp/gpu.db --device cuda --random 5000 \
        --first-seed "${FIRST_SEED:-1}" --schedules 12 --jobs "$jobs"
    step "$out/collect.log" 60 "$sc" samples --db /tmp/gpu.db export "$out/gpu.txt.xz"
fi
echo "done in $(($(date +%s) - start)) s"
