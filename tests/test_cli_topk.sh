#!/usr/bin/env bash
# `stagecraft schedule --strategy topk` (choose.h): the K best predicted of
# the one-shot batch measured on a device, checked first, the fastest
# returned; its schedule run again and checked bit-exactly on C and
# OpenCL for three apps at small sizes; the CUDA spill filter's report;
# bad usage (2).  Weights trained here from tests/data/train_tiny.txt.
source "$(dirname "$0")/cli_lib.sh" test_cli_topk
CASE_TIMEOUT=300
w=$tmp/w.weights
case_ topk_train 0 -- "$sc" train --data tests/data/train_tiny.txt -o "$w" --epochs 10 --seed 1
case_ topk_in_strategies 0 -o '^ +topk +the K best of the one-shot batch' -- "$sc" schedule --help

for app in box_blur harris unsharp; do
    for dev in c opencl; do
        case_ topk_${app}_$dev 0 -o "^# topk: the fastest of 2 measured is #[12]$" -- \
            "$sc" schedule apps/$app.pipe --small --strategy topk --k 2 --device $dev --math exact \
            --weights "$w" --samples 6 -o "$tmp/$app.$dev.sched"
        n=$(grep -c '^# topk: #[0-9]* (predicted [0-9.e+-]* ms): measured [0-9.e+-]* ms' "$out")
        ok topk_${app}_${dev}_two_measured "$([ "$n" = 2 ]; echo $?)"
        case_ topk_${app}_${dev}_checks 0 -o 'check: matches the reference' -- \
            "$sc" run apps/$app.pipe --small --schedule "$tmp/$app.$dev.sched" --device $dev --math exact --check
    done
done

# CUDA targets: every candidate is compiled with NVRTC and its spills read
case_ oneshot_spill_report 0 -o '^# spill filter: #1 \(predicted [0-9.e+-]+ ms\): [0-9]+ registers, [0-9]+ bytes spilled$' -- \
    "$sc" schedule apps/box_blur.pipe --small --strategy oneshot --target a100 --weights "$w" --samples 4
grep -q "^# note: these weights were trained on no CUDA GPU's samples" "$out"; ok oneshot_cuda_note $?
# the GPUs' own model: no note
case_ oneshot_cuda_weights 0 -o '^# oneshot: predicted .*weights weights/cuda.weights' -- \
    "$sc" schedule apps/box_blur.pipe --small --strategy oneshot --target a100 --weights weights/cuda.weights --samples 4
grep -q '^# note:' "$out"; ok oneshot_cuda_weights_no_note "$([ $? -ne 0 ]; echo $?)"

# every CUDA target: its architecture's code compiled, spills read
# (this CUDA 13 toolkit has no sm_70: the filter is skipped for v100, said so)
for tg in h100 rtx2080ti; do
    case_ oneshot_spill_$tg 0 -o '^# spill filter: #1 \(predicted [0-9.e+-]+ ms\): [0-9]+ registers' -- \
        "$sc" schedule apps/unsharp.pipe --small --strategy oneshot --target $tg --weights "$w" --samples 4
done
if nvcc --list-gpu-arch 2>/dev/null | grep -q compute_70; then
    case_ oneshot_spill_v100 0 -o '^# spill filter: #1 ' -- \
        "$sc" schedule apps/unsharp.pipe --small --strategy oneshot --target v100 --weights "$w" --samples 4
else
    case_ oneshot_spill_v100_skipped 0 -o '^# spill filter: skipped: .* cannot compile for sm_70' -- \
        "$sc" schedule apps/unsharp.pipe --small --strategy oneshot --target v100 --weights "$w" --samples 4
fi
# a device that cannot run here: a clear error before anything is measured
if ! "$sc" run apps/box_blur.pipe --small --strategy baseline --device cuda --check >/dev/null 2>&1; then
    case_ topk_cuda_cannot_run 1 -e 'cannot run kernels here' -- \
        "$sc" schedule apps/box_blur.pipe --small --strategy topk --device cuda --weights "$w" --samples 4
    case_ autotune_cuda_cannot_run 1 -e 'cannot run kernels here' -- \
        "$sc" autotune apps/box_blur.pipe --small --device cuda --db "$tmp/cuda.db" --weights "$w" --iterations 1 --batch 2
fi

case_ topk_needs_device 2 -e 'topk measures its candidates: give --device D' -- \
    "$sc" schedule apps/box_blur.pipe --small --strategy topk --weights "$w"
case_ topk_k_without 2 -e '--k and --jobs are options of --strategy topk' -- \
    "$sc" schedule apps/box_blur.pipe --small --strategy oneshot --k 3
case_ topk_bad_k 2 -e "--k: expected a positive integer, got '0'" -- \
    "$sc" schedule apps/box_blur.pipe --small --strategy topk --device c --k 0
case_ topk_device_without 2 -e '--device is an option of schedule with --strategy topk only' -- \
    "$sc" schedule apps/box_blur.pipe --small --strategy baseline --device c
exit $failed
