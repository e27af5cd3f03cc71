#!/usr/bin/env bash
# The scheduling commands of the command line: schedule, compile, run with a
# schedule or strategy (--check, --dump), bench.  Exit statuses (0 ok, 1 bad
# input, 2 bad usage), messages naming the file/line or the limit, and the
# files written.  One PASS/FAIL line per case.  BUILD (default: build) is
# where the stagecraft binary is.
source "$(dirname "$0")/cli_lib.sh" test_cli_sched
CASE_TIMEOUT=300
# OpenCL cases run only where an OpenCL device opens (PoCL here).
have_opencl=0
"$sc" run apps/unsharp.pipe --small --strategy root --device opencl >/dev/null 2>&1 && have_opencl=1

app=apps/unsharp.pipe

# ---- help ---------------------------------------------------------------------
for c in schedule compile bench; do
    case_ "help_$c" 0 -o "usage: stagecraft $c FILE.pipe" -- "$sc" "$c" --help
done
case_ help_schedule_strategies 0 -o 'root\|baseline\|random' -- "$sc" schedule --help
case_ help_schedule_summaries 0 -o '^ +random +a random walk through the schedule space \(--seed\)' -- "$sc" schedule --help
case_ help_run_devices 0 -o '\[--device cuda\|opencl\|c\]' -- "$sc" run --help

# ---- schedule ---------------------------------------------------------------
for st in root baseline random; do
    case_ "schedule_$st" 0 -o "wrote $tmp/$st.sched \\(target a100\\)" -- \
        "$sc" schedule "$app" --small --target a100 --strategy "$st" --seed 3 -o "$tmp/$st.sched"
    ok "schedule_${st}_header" "$(head -n 1 "$tmp/$st.sched" | grep -q '^schedule unsharp;'; echo $?)"
done
"$sc" schedule "$app" --small --target a100 --strategy random --seed 3 -o "$tmp/again.sched" >/dev/null 2>&1
ok schedule_random_same_seed "$(cmp -s "$tmp/random.sched" "$tmp/again.sched"; echo $?)"
same=0
for s in 4 5 6 7; do
    "$sc" schedule "$app" --small --target a100 --strategy random --seed $s -o "$tmp/s$s.sched" >/dev/null 2>&1
    cmp -s "$tmp/random.sched" "$tmp/s$s.sched" && same=$((same + 1))
done
ok schedule_random_seeds_differ "$([ $same -lt 4 ]; echo $?)"
# --unroll-whole: random walks also unroll unsharp's channel (3) whole, and
# only then; such a schedule runs bit-exact on the C back end
whole=0 plain=0
for s in $(seq 1 24); do
    "$sc" schedule "$app" --small --target a100 --strategy random --seed $s --unroll-whole -o "$tmp/w$s.sched" >/dev/null 2>&1
    grep -q ' c=[0-9]*x3[] ]' "$tmp/w$s.sched" && { whole=$((whole + 1)); cp "$tmp/w$s.sched" "$tmp/whole.sched"; }
    "$sc" schedule "$app" --small --target a100 --strategy random --seed $s -o "$tmp/p$s.sched" >/dev/null 2>&1
    grep -q ' c=[0-9]*x3[] ]' "$tmp/p$s.sched" && plain=$((plain + 1))
done
ok schedule_unroll_whole_offers_c3 "$([ $whole -gt 0 ] && [ $plain -eq 0 ]; echo $?)"
# on a CPU target the space offers it by default; --no-unroll-whole takes it out
cpu=0 none=0
for s in $(seq 1 24); do
    "$sc" schedule "$app" --small --target host-opencl --strategy random --seed $s -o "$tmp/h$s.sched" >/dev/null 2>&1
    grep -q ' c=[0-9]*x3[] ]' "$tmp/h$s.sched" && cpu=$((cpu + 1))
    "$sc" schedule "$app" --small --target host-opencl --strategy random --seed $s --no-unroll-whole \
        -o "$tmp/n$s.sched" >/dev/null 2>&1
    grep -q ' c=[0-9]*x3[] ]' "$tmp/n$s.sched" && none=$((none + 1))
done
ok schedule_unroll_whole_cpu_default "$([ $cpu -gt 0 ] && [ $none -eq 0 ]; echo $?)"
case_ schedule_unroll_whole_runs 0 -o 'matches the reference' -- \
    "$sc" run "$app" --small --schedule "$tmp/whole.sched" --device c --check --math exact
case_ schedule_unroll_whole_fixed 2 -e '--unroll-whole and --no-unroll-whole are options of --strategy random, oneshot and topk' -- \
    "$sc" schedule "$app" --small --strategy baseline --unroll-whole
case_ schedule_no_unroll_whole_fixed 2 -e '--unroll-whole and --no-unroll-whole are options of --strategy random' -- \
    "$sc" schedule "$app" --small --strategy root --no-unroll-whole
case_ schedule_stdout 0 -o '^out: root \[' -- "$sc" schedule "$app" --small --target a100 --strategy root
case_ schedule_halide 0 -o 'compute_root\(\)' -- "$sc" schedule "$app" --small --target a100 --strategy baseline --halide
case_ schedule_halide_gpu 0 -o 'gpu_(blocks|tile|threads)' -- "$sc" schedule "$app" --small --target a100 --strategy baseline --halide
case_ schedule_paper_size 0 -- "$sc" schedule apps/local_laplacian.pipe --target a100 --strategy random --seed 1 -o "$tmp/ll.sched"
case_ schedule_unknown_strategy 2 -e "--strategy: 'best' is not one of root, baseline, random" -- \
    "$sc" schedule "$app" --small --target a100 --strategy best
case_ schedule_unknown_target 1 -e "unknown target 'p100'" -- \
    "$sc" schedule "$app" --small --target p100 --strategy root
case_ schedule_missing_pipe 1 -e "$tmp/none.pipe" -- "$sc" schedule "$tmp/none.pipe" --target a100 --strategy root
printf 'sm_count = 80\nwarp_size = 32\n' >"$tmp/half.target"
case_ schedule_target_file_incomplete 1 -e 'half.target' -- \
    "$sc" schedule "$app" --small --target "$tmp/half.target" --strategy root

# ---- compile ----------------------------------------------------------------
case_ compile_c 0 -o 'wrote .*unsharp\.c' -- "$sc" compile "$app" --small --schedule "$tmp/random.sched" --backend c -o "$tmp/c"
ok compile_c_files "$([ -s "$tmp/c/unsharp.c" ] && [ -s "$tmp/c/unsharp.sched" ]; echo $?)"
ok compile_c_builds "$(cc -std=c11 -fopenmp -O0 -c "$tmp/c/unsharp.c" -o "$tmp/c/u.o" 2>/dev/null; echo $?)"
ok compile_c_schedule_comment "$(grep -q 'ratio: block of out' "$tmp/c/unsharp.c" || grep -q 'schedule unsharp' "$tmp/c/unsharp.c"; echo $?)"
# the host entry point, called from a user's program built with cc
ok compile_c_header "$(grep -q '^int unsharp_run(const float \*in, float \*out);' "$tmp/c/unsharp.h"; echo $?)"
cat >"$tmp/c/main.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "unsharp.h"
int main(void)
{
    enum { N = 64 * 48 * 3 };
    float *in = malloc(sizeof(float) * N), *out = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) in[i] = 0.25f + (float)(i % 7) / 8;
    int rc = unsharp_run(in, out);
    double sum = 0;
    for (int i = 0; i < N; i++) sum += out[i];
    printf("rc %d sum %.3f\n", rc, sum);
    return rc;
}
EOF
ok compile_c_host_runs "$(cc -std=c11 -fopenmp -O1 -ffp-contract=off -I"$tmp/c" "$tmp/c/main.c" "$tmp/c/unsharp.c" \
    -lm -o "$tmp/c/main" 2>/dev/null && "$tmp/c/main" | grep -Eq '^rc 0 sum [0-9]'; echo $?)"
case_ compile_opencl 0 -o 'wrote .*unsharp\.cl' -- "$sc" compile "$app" --small --schedule "$tmp/random.sched" --backend opencl -o "$tmp/cl"
ok compile_opencl_kernel "$(grep -q '__kernel' "$tmp/cl/unsharp.cl"; echo $?)"
case_ compile_cuda 0 -o 'registers, [0-9]+ bytes spill stores' -- \
    "$sc" compile "$app" --small --schedule "$tmp/random.sched" --backend cuda -o "$tmp/cu"
ok compile_cuda_global "$(grep -q '__global__' "$tmp/cu/unsharp.cu"; echo $?)"
ok compile_cuda_host "$(grep -q '^extern "C" int unsharp_run(const float \*in, float \*out)' "$tmp/cu/unsharp.cu" &&
    grep -q 'unsharp_run' "$tmp/cu/unsharp.h"; echo $?)"
# the shipped targets are found from any directory
case_ schedule_elsewhere 0 -o 'target a100' -- sh -c "cd '$tmp' && '$sc' schedule '$PWD/$app' --small --target a100 --strategy root"
case_ compile_strategy 0 -- "$sc" compile "$app" --small --strategy baseline --backend c -o "$tmp/c2"
case_ compile_no_outdir 2 -e 'compile needs --backend cuda\|opencl\|c and -o DIR' -- \
    "$sc" compile "$app" --small --schedule "$tmp/random.sched" --backend c
case_ compile_bad_backend 2 -e "--backend: 'ptx' is not one of cuda, opencl, c" -- \
    "$sc" compile "$app" --small --schedule "$tmp/random.sched" --backend ptx -o "$tmp/x"
case_ compile_missing_schedule 1 -e "$tmp/none.sched" -- \
    "$sc" compile "$app" --small --schedule "$tmp/none.sched" --backend c -o "$tmp/x"
printf 'schedule unsharp;\nout: rooot;\n' >"$tmp/bad.sched"
case_ compile_bad_schedule 1 -e "bad\\.sched:2:6: expected inline, root, block or thread" -- \
    "$sc" compile "$app" --small --schedule "$tmp/bad.sched" --backend c -o "$tmp/x"
printf 'schedule harris;\n' >"$tmp/other.sched"
case_ compile_other_pipeline 1 -e 'other\.sched:1:.*harris' -- \
    "$sc" compile "$app" --small --schedule "$tmp/other.sched" --backend c -o "$tmp/x"
# 64 x 32 threads per block: over the a100's 1024
sed 's/^out: root \[[^]]*\]/out: root [x=64x1 y=32x1 c=1x1]/' "$tmp/root.sched" >"$tmp/wide.sched"
case_ compile_over_threads 1 -e "out: 2048 threads per block, over the target's 1024 \\(a100\\)" -- \
    "$sc" compile "$app" --small --target a100 --schedule "$tmp/wide.sched" --backend cuda -o "$tmp/x"
ok compile_over_nothing_written "$([ ! -e "$tmp/x/unsharp.cu" ]; echo $?)"
# 32 serial points per thread on each of x and y: over 255 registers
sed 's/^out: root \[[^]]*\]/out: root [x=32x32 y=1x32 c=1x1]/' "$tmp/root.sched" >"$tmp/regs.sched"
case_ compile_over_registers 1 -e "registers per thread .* over the target's 255 \\(a100\\)" -- \
    "$sc" compile "$app" --small --target a100 --schedule "$tmp/regs.sched" --backend cuda -o "$tmp/x"

# ---- run with a schedule ----------------------------------------------------
case_ run_check_c 0 -o 'check: matches the reference, max difference' -- \
    "$sc" run "$app" --small --schedule "$tmp/random.sched" --device c --check
case_ run_check_strategy_c 0 -o '^kernels: [0-9]+' -- "$sc" run "$app" --small --strategy root --device c --check
case_ run_dump_kernels 0 -o '^kernel [a-z_]+_s0  # ' -- \
    "$sc" run "$app" --small --schedule "$tmp/random.sched" --dump=kernels --device c
if [ $have_opencl = 1 ]; then
    case_ run_check_opencl 0 -o 'check: matches the reference' -- \
        "$sc" run "$app" --small --schedule "$tmp/random.sched" --device opencl --check
    case_ bench_opencl 0 -o '^time: [0-9.]+ ms \(min over' -- "$sc" bench "$app" --small --strategy baseline --device opencl
fi
# bench --per-kernel: one row per kernel, in launch order
case_ bench_per_kernel_c 0 -o '^per kernel \(each timed alone, the fastest of 2 runs; sum [0-9.]+ ms\):' -- \
    "$sc" bench "$app" --small --strategy root --device c --per-kernel --runs 2 --samples 1 --warmup 0
nk=$(sed -n 's/^kernels: //p' "$out"); rows=$(grep -cE '^  [a-z_0-9]+_s[0-9]+ +[0-9.]+ ms +[0-9.]+% ' "$out")
ok bench_per_kernel_rows "$([ -n "$nk" ] && [ "$nk" -gt 1 ] && [ "$rows" = "$nk" ]; echo $?)"
if [ $have_opencl = 1 ]; then
    case_ bench_per_kernel_opencl 0 -o '^  out_s0 +[0-9.]+ ms +[0-9.]+%  out stage 0, ' -- \
        "$sc" bench "$app" --small --strategy baseline --device opencl --per-kernel --runs 2 --samples 1
fi
# bench --per-kernel --weights: each kernel's predicted cost, the stages it
# computes (random seed 5 computes sharpen and blur_x in ratio's kernel):
# the kernels' predictions add up to the whole, which is predict's
case_ bench_per_kernel_predicted 0 \
    -o '^per kernel \(each timed alone, the fastest of 2 runs; sum [0-9.]+ ms; predicted [0-9.e+-]+ ms in all, measured / predicted [0-9.e+-]+\):' -- \
    "$sc" bench "$app" --small --strategy random --seed 5 --device c --per-kernel --runs 2 --samples 1 --warmup 0 \
    --weights weights/pocl.weights
nk=$(sed -n 's/^kernels: //p' "$out")
whole=$(sed -n 's/.*; predicted \([0-9.e+-]*\) ms in all.*/\1/p' "$out")
parts=$(grep -E '^  [a-z_0-9]+_s[0-9]+ ' "$out" | sed -n 's/.* predicted *\([0-9.e+-]*\) ms,.*/\1/p' | awk '{s += $1} END {print s}')
rows=$(grep -cE '^  [a-z_0-9]+_s[0-9]+ +[0-9.]+ ms +[0-9.]+%  predicted +[0-9.e+-]+ ms, x[0-9.e+-]+ +[a-z_]+ stage 0' "$out")
fused=$(grep -cE '^  ratio_s0 .* predicted' "$out")
pred=$("$sc" predict "$app" --small --strategy random --seed 5 --weights weights/pocl.weights --target host-opencl |
    sed -n 's/^predicted: \([0-9.e+-]*\) ms$/\1/p')
ok bench_per_kernel_predicted_rows "$([ -n "$nk" ] && [ "$nk" -gt 1 ] && [ "$rows" = "$nk" ] && [ "$fused" = 1 ]; echo $?)"
ok bench_per_kernel_predicted_sum "$(awk -v a="$whole" -v b="$parts" -v c="$pred" \
    'BEGIN { exit !(a > 0 && (a - b) ^ 2 < (1e-3 * a) ^ 2 && (a - c) ^ 2 < (1e-3 * a) ^ 2) }'; echo $?)"
case_ bench_per_kernel_weights_missing 1 -e "stagecraft bench: $tmp/none.weights: cannot open weights" -- \
    "$sc" bench "$app" --small --strategy root --device c --per-kernel --runs 2 --samples 1 --weights "$tmp/none.weights"
case_ bench_weights_need_per_kernel 2 -e '--weights also of bench --per-kernel' -- \
    "$sc" bench "$app" --small --strategy root --device c --samples 1 --weights weights/pocl.weights
# bench/kernel_prices.sh: one-shot's pick with an app's weights, its
# kernels beside their prices, the worst-priced in a table
mkdir -p "$tmp/wd"
cp weights/pocl.weights "$tmp/wd/unsharp.weights"
case_ kernel_prices_script 0 -o '^unsharp +[0-9.e+-]+ +[0-9.e+-]+ +[0-9.e+-]+$' -- \
    env STAGECRAFT="$sc" bench/kernel_prices.sh --weights-dir "$tmp/wd" --apps unsharp,box_blur --small --device c --runs 2 --out "$tmp/kp"
ok kernel_prices_skips_missing "$(grep -Eq '^box_blur +skipped: no box_blur.weights' "$out"; echo $?)"
ok kernel_prices_rows "$([ "$(grep -c '^unsharp	' "$tmp/kp/kernels.tsv")" -ge 1 ] && grep -Eq '^unsharp +[a-z_]+_s[0-9]+ ' "$out"; echo $?)"
case_ kernel_prices_needs_weights 2 -e 'weights-dir D\[,D2...\] is required' -- bench/kernel_prices.sh --apps unsharp
# bench/math_costs.sh: each math function's cost in multiply-adds, at a
# small size on the C back end (the numbers mean little there; the rows
# are what is checked)
case_ math_costs_script 0 -o '^pow +[0-9.]+ +[0-9.]+ +([0-9]+|-)$' -- \
    env STAGECRAFT="$sc" bench/math_costs.sh --device c --size 64 --samples 1 --out "$tmp/mc"
ok math_costs_all_rows "$([ "$(grep -cE '^(abs|sqrt|floor|ceil|round|sin|cos|exp|tanh|log|atan2|pow) ' "$out")" = 12 ]; echo $?)"
# times where the chain of 64 ran faster than the steps alone (noise, as
# on a loaded machine): no multiply-add price, '-' in place of a number
printf '#!/bin/sh\ncase $2 in *steps.pipe) echo "time: 0.4 ms";; *fma.pipe) echo "time: 0.05 ms";; *) echo "time: 0.3 ms";; esac\n' >"$tmp/noisy_sc"
chmod +x "$tmp/noisy_sc"
case_ math_costs_noise 0 -o '^pow +0.3000 +0.0000 +-$' -- \
    env STAGECRAFT="$tmp/noisy_sc" bench/math_costs.sh --device c --size 64 --samples 1 --out "$tmp/mcn"
ok math_costs_noise_said "$(grep -q 'one multiply-add of one lane: not measured' "$out"; echo $?)"
case_ math_costs_bad_size 2 -e "--size: expected a number of points a side, got 'big'" -- bench/math_costs.sh --size big
case_ per_kernel_not_for_run 2 -e '--per-kernel is an option of bench, not run' -- \
    "$sc" run "$app" --small --strategy root --device c --per-kernel
case_ run_check_hist_c 0 -o 'check: matches the reference' -- \
    "$sc" run apps/hist.pipe --small --strategy random --seed 2 --device c --check
case_ run_bad_device 2 -e "--device: 'gpu' is not one of cuda, opencl, c" -- \
    "$sc" run "$app" --small --strategy root --device gpu
case_ run_both_schedule_and_strategy 2 -e 'give --schedule or --strategy, not both' -- \
    "$sc" run "$app" --small --schedule "$tmp/random.sched" --strategy root --device c
case_ run_device_needs_schedule 2 -e '--device and --check need --schedule F or --strategy S' -- \
    "$sc" run "$app" --small --device c
case_ run_bad_dump 2 -e "--dump: 'asm' is not one of kernels, schedule" -- \
    "$sc" run "$app" --small --strategy root --dump=asm --device c

# ---- --math exact|fast -----------------------------------------------------------
case_ run_math_exact_default 0 -o 'check: matches the reference, max difference 0 \(0 ulp; 0 of 9216 .*bit-exact' -- \
    "$sc" run "$app" --small --strategy baseline --device c --check
case_ run_math_fast_c 0 -o 'check: matches the reference, .*tolerance: within [0-9]+ ulp' -- \
    "$sc" run "$app" --small --strategy baseline --device c --check --math fast
if [ $have_opencl = 1 ]; then
    case_ run_math_fast_opencl 0 -o 'check: matches the reference, .*tolerance: within [0-9]+ ulp' -- \
        "$sc" run "$app" --small --strategy baseline --device opencl --check --math=fast
fi
# OpenCL work-groups shaped by the root phase's threads per loop (code
# generation 3): out with 16 x 4 threads requires that shape and reads its
# coordinates as local ids; C derives them from the flat index
sed 's/^out: root \[[^]]*\]/out: root [x=16x1 y=4x1 c=1x1]/' "$tmp/root.sched" >"$tmp/two.sched"
case_ compile_workgroup_shape 0 -o 'wrote' -- \
    "$sc" compile "$app" --small --schedule "$tmp/two.sched" --backend opencl -o "$tmp/wg"
ok opencl_workgroup_shape "$(grep -A12 'void out_s0' "$tmp/wg/unsharp.cl" | grep -q 'const int tid1 = (int)get_local_id(1);' &&
    grep -B1 'void out_s0' "$tmp/wg/unsharp.cl" | grep -q 'reqd_work_group_size(16, 4, 1)'; echo $?)"
case_ run_workgroup_shape_c 0 -o 'check: matches the reference' -- \
    "$sc" run "$app" --small --schedule "$tmp/two.sched" --device c --check
if [ $have_opencl = 1 ]; then
    case_ run_workgroup_shape_opencl 0 -o 'check: matches the reference' -- \
        "$sc" run "$app" --small --schedule "$tmp/two.sched" --device opencl --check
fi
case_ compile_math_fast_opencl 0 -o 'fast math; build options: -cl-mad-enable' -- \
    "$sc" compile "$app" --small --strategy baseline --backend opencl --math fast -o "$tmp/fastcl"
ok compile_math_fast_native "$(grep -q 'native_exp(' "$tmp/fastcl/unsharp.cl" && ! grep -q 'sc_expf' "$tmp/fastcl/unsharp.cl"; echo $?)"
case_ compile_math_fast_c 0 -o 'build options: -ffp-contract=fast' -- \
    "$sc" compile "$app" --small --strategy baseline --backend c --math fast -o "$tmp/fastc"
ok compile_math_fast_expf "$(grep -q '[^_]expf(' "$tmp/fastc/unsharp.c" && ! grep -q 'sc_expf' "$tmp/fastc/unsharp.c"; echo $?)"
ok compile_math_exact_sc "$(grep -q 'sc_expf(' "$tmp/c/unsharp.c" && grep -q 'FP_CONTRACT OFF' "$tmp/c/unsharp.c"; echo $?)"
case_ math_bad_value 2 -e "--math: 'relaxed' is not one of exact, fast" -- \
    "$sc" run "$app" --small --strategy root --device c --math relaxed
case_ math_on_schedule 2 -e '--math is an option of run, compile, bench and schedule --strategy topk, not schedule' -- \
    "$sc" schedule "$app" --small --strategy root --math fast
case_ math_needs_schedule 2 -e '--math needs --schedule F or --strategy S' -- "$sc" run "$app" --small --math fast

# ---- bench --------------------------------------------------------------------
case_ bench_math_fast_default 0 -o '^math: fast' -- "$sc" bench "$app" --small --strategy root --device c --samples 1 --runs 1
case_ bench_math_exact 0 -o '^math: exact' -- "$sc" bench "$app" --small --strategy root --device c --samples 1 --runs 1 --math exact
case_ bench_c 0 -o '^time: [0-9.]+ ms \(min over [0-9]+ samples of the mean of [0-9]+ runs' -- \
    "$sc" bench "$app" --small --schedule "$tmp/random.sched" --device c
case_ bench_unknown_strategy 2 -e "--strategy: 'fast'" -- "$sc" bench "$app" --small --strategy fast --device c
# the names in the messages come from the strategy and runtime tables
case_ run_unknown_strategy_lists 2 -e "--strategy: 'beam' is not one of root, baseline, random" -- \
    "$sc" run "$app" --small --strategy beam --device c
exit $failed
