#!/usr/bin/env bash
# `stagecraft train` and `stagecraft predict`: usage, bad usage (exit
# status 2) and bad input (1): missing or corrupt databases and weights,
# an unknown device key.  One PASS/FAIL line per case.
source "$(dirname "$0")/cli_lib.sh" test_cli_train
CASE_TIMEOUT=120
app=apps/unsharp.pipe

case_ train_help 0 -o 'usage: stagecraft train' -- "$sc" train --help
case_ predict_help 0 -o 'usage: stagecraft predict FILE.pipe' -- "$sc" predict --help
case_ train_in_usage 0 -o 'train ' -- "$sc" --help
grep -q '^  predict ' "$out"; ok predict_in_usage $?

# bad usage
case_ train_no_samples 2 -e 'train: no samples given' -- "$sc" train -o "$tmp/w.weights"
case_ train_db_and_data 2 -e '--db and --data are exclusive' -- "$sc" train --db a.db --data b.txt -o "$tmp/w"
case_ train_no_output 2 -e 'no weights file to write' -- "$sc" train --db a.db
case_ train_bad_epochs 2 -e "--epochs: expected a number of epochs >= 0, got 'two'" -- \
    "$sc" train --db a.db -o "$tmp/w" --epochs two
case_ train_bad_seed 2 -e "--seed: expected a number >= 0, got '-3'" -- "$sc" train --db a.db -o "$tmp/w" --seed -3
case_ train_bad_loss 2 -e "--loss: 'l1' is not one of throughput, rank" -- "$sc" train --db a.db -o "$tmp/w" --loss l1
case_ train_bad_anneal 2 -e "--anneal: expected a fraction of the epochs from 0 to 1, got '1.5'" -- "$sc" train --db a.db -o "$tmp/w" --anneal 1.5
case_ train_bad_decay 2 -e "--weight-decay: expected a factor from 0 to 100, got '-1'" -- "$sc" train --db a.db -o "$tmp/w" --weight-decay -1
case_ train_bad_kernel_loss 2 -e "--kernel-loss: expected a weight from 0 to 1000, got 'x'" -- "$sc" train --db a.db -o "$tmp/w" --kernel-loss x
case_ train_bad_fold 2 -e "--validation-fold: expected a fold from 0 to 99, got '-1'" -- "$sc" train --db a.db -o "$tmp/w" --validation-fold -1
case_ train_missing_value 2 -e 'option --device needs a value' -- "$sc" train --db a.db -o "$tmp/w" --device
case_ train_unknown_option 2 -e "unknown option '--fast'" -- "$sc" train --db a.db -o "$tmp/w" --fast
case_ predict_empty_weights 1 -e 'names no file' -- "$sc" predict "$app" --small --weights ,
case_ predict_no_pipe 2 -e 'no pipeline file given' -- "$sc" predict --weights w
case_ predict_both 2 -e '--schedule and --strategy are exclusive' -- \
    "$sc" predict "$app" --weights w --schedule s --strategy root
case_ predict_bad_strategy 2 -e "--strategy: 'best' is not one of" -- "$sc" predict "$app" --weights w --strategy best

# bad input: databases
case_ train_missing_db 1 -e "$tmp/none.db" -- "$sc" train --db "$tmp/none.db" -o "$tmp/w.weights"
printf 'not a database at all\n' >"$tmp/junk.db"
case_ train_corrupt_db 1 -e "$tmp/junk.db" -- "$sc" train --db "$tmp/junk.db" -o "$tmp/w.weights"
case_ train_missing_data 1 -e "$tmp/none.txt.xz" -- "$sc" train --data "$tmp/none.txt.xz" -o "$tmp/w.weights"
printf 'garbage\n' >"$tmp/junk.txt"
case_ train_corrupt_data 1 -e "$tmp/junk.txt" -- "$sc" train --data "$tmp/junk.txt" -o "$tmp/w.weights"
ok train_wrote_nothing "$([ ! -e "$tmp/w.weights" ]; echo $?)"

# bad input: weights
case_ predict_missing_weights 1 -e "$tmp/none.weights: cannot open weights" -- \
    "$sc" predict "$app" --small --weights "$tmp/none.weights"
printf 'SCWEIGHT' >"$tmp/short.weights"
case_ predict_truncated_weights 1 -e 'truncated weights file' -- "$sc" predict "$app" --small --weights "$tmp/short.weights"
head -c 4096 /dev/zero >"$tmp/zero.weights"
case_ predict_not_weights 1 -e 'not a stagecraft weights file' -- "$sc" predict "$app" --small --weights "$tmp/zero.weights"

# training on a tiny dataset (tests/data/train_tiny.txt: three small
# pipelines on an a100 target, times made up from a formula of the
# features, a C device and an OpenCL one)
data=tests/data/train_tiny.txt
ckey=c:cc-test:test-cpu
case_ train_data 0 -o 'epoch 3/3  train loss' -- "$sc" train --data "$data" -o "$tmp/all.weights" --epochs 3
grep -q 'loaded [0-9]* samples of 3 pipelines' "$out"; ok train_data_loaded $?
case_ train_device 0 -o "loaded 28 samples of 3 pipelines \(3 groups of one code generation and device\) from $data \(device $ckey\)" -- \
    "$sc" train --data "$data" -o "$tmp/c.weights" --device "$ckey" --epochs 5 --seed 4
grep -q "rejected: 0 with absurd features, 2 with absurd times, 0 unreadable, 0 timed against a cold reference, 0 measured before the reduction order changed, 0 of CPU code with register staging, 0 of code with loops rolled that are unrolled now, 0 of code dividing by powers of two with a helper, 0 of code reading private arrays otherwise, 0 of CPU OpenCL code with interior blocks in a branch, 0 of CPU OpenCL code calling fmin or fmax, 0 of code with a scan's reduction inside its tile, 0 of code calling pow for a square, 0 of code reading more than three threaded loops from a flat index, 0 of CPU OpenCL code indexing rows by a sum, 0 of CPU OpenCL code selecting between loads, 0 of CPU OpenCL code with a small kernel's narrow guarded store beside its interior, 0 of OpenCL code reading a private array at a block's coordinate, 0 of code whose interior a guard's conjuncts now decide otherwise, 0 of OpenCL code reading a private array through a guarded min, 0 of code with loops rolled that generation 24 unrolls, 0 of OpenCL code reading a private array at an index computed from data, 0 of code older than generation 1; held out: 0; kept: 0 of CPU OpenCL code indexing rows by a sum at the edges only" "$out"; ok train_rejects_counted $?
grep -q "wrote $tmp/c.weights: " "$out"; ok train_wrote $?
# --validation-fold: of 50%, fold 1 validates on what fold 0 trains on
"$sc" train --data "$data" -o "$tmp/f.weights" --epochs 1 --validation 50 >"$tmp/f0.txt" 2>&1
"$sc" train --data "$data" -o "$tmp/f.weights" --epochs 1 --validation 50 --validation-fold 1 >"$tmp/f1.txt" 2>&1
split() { grep -o '[0-9]* samples of [0-9]* groups trained, [0-9]* samples of [0-9]* validation' "$1" | awk '{ print $1, $4, $7, $10 }'; }
read -r t0 g0 v0 w0 <<<"$(split "$tmp/f0.txt")"
read -r t1 g1 v1 w1 <<<"$(split "$tmp/f1.txt")"
grep -q "validation fold 1 (hashes 50 to 99 of 100)" "$tmp/f1.txt"; ok train_fold_in_summary $?
! grep -q "validation fold" "$tmp/f0.txt"; ok train_fold_0_not_in_summary $?
ok train_fold_swaps "$([ -n "$t0" ] && [ "$v0" -gt 0 ] && [ "$t0" = "$v1" ] && [ "$v0" = "$t1" ] && [ "$g0" = "$w1" ]; echo $?)"
grep -q "^instruction floor: [0-9.e+-]* ms per instruction" "$out"; ok train_instruction_floor $?
# a lower quantile of the rates: a higher floor (more ms per instruction)
f999=$(sed -n 's/^instruction floor: \([0-9.e+-]*\) ms per instruction.*the 0.999 quantile.*/\1/p' "$out")
case_ train_floor_quantile 0 -o 'the 0.6 quantile of the training samples' -- \
    "$sc" train --data "$data" -o "$tmp/q.weights" --device "$ckey" --epochs 1 --floor-quantile 0.6 --gather-floor
f6=$(sed -n 's/^instruction floor: \([0-9.e+-]*\) ms per instruction.*/\1/p' "$out")
ok train_floor_quantile_higher "$(awk -v a="$f6" -v b="$f999" 'BEGIN { exit !(a > 0 && b > 0 && a > b) }'; echo $?)"
# the gather floor: printed beside it with --gather-floor, and none without
grep -q "^gather floor: [0-9.e+-]* ms per gather .*the 0.6 quantile" "$out"; ok train_gather_floor $?
case_ train_no_gather_floor 0 -o '^instruction floor: ' -- \
    "$sc" train --data "$data" -o "$tmp/q.weights" --device "$ckey" --epochs 1
! grep -q "^gather floor" "$out"; ok train_no_gather_floor_line $?
# --explain names the floor a stage is on: with the median rates both floors
# bind on some stages of unsharp's random schedules
"$sc" train --data "$data" -o "$tmp/q5.weights" --epochs 1 --floor-quantile 0.5 --gather-floor >/dev/null 2>&1
for s in 1 2 3 4 5 6; do
    "$sc" predict "$app" --small --strategy random --seed $s --target a100 --weights "$tmp/q5.weights" --explain 2>&1
done >"$tmp/floors.txt"
grep -q '\[gather floor: [0-9.e+]* gathers x [0-9.e+-]* ms' "$tmp/floors.txt"; ok predict_explain_gather_floor $?
grep -q '\[instruction floor: [0-9.e+]* instructions x [0-9.e+-]* ms' "$tmp/floors.txt"; ok predict_explain_instruction_floor $?
# a mean of models: the same model twice predicts what it predicts alone,
# and --explain names the floor with how many of the models fell to it
one=$("$sc" predict "$app" --small --strategy random --seed 2 --target a100 --weights "$tmp/q5.weights" | sed -n 's/^predicted: //p')
case_ predict_mean_same 0 -o "^predicted: $one\$" -- \
    "$sc" predict "$app" --small --strategy random --seed 2 --target a100 --weights "$tmp/q5.weights,$tmp/q5.weights"
grep -q "^weights: $tmp/q5.weights,$tmp/q5.weights (the mean of 2 models" "$out"; ok predict_mean_named $?
for s in 1 2 3 4 5 6; do
    "$sc" predict "$app" --small --strategy random --seed $s --target a100 --weights "$tmp/q5.weights,$tmp/q5.weights" \
        --explain 2>&1
done >"$tmp/floors2.txt"
grep -q '^# predicted cost per stage (ms; [0-9]* stages, [0-9.e+-]* ms in all; the mean of 2 models)' "$tmp/floors2.txt"
ok predict_mean_explain_header $?
grep -q 'instruction floor in 2 of 2 models [0-9.e+-]*' "$tmp/floors2.txt"; ok predict_mean_explain_floor $?
# the default: the shipped weights and their siblings, from ./weights/
mkdir -p "$tmp/dflt/weights"
cp "$tmp/q5.weights" "$tmp/dflt/weights/pocl.weights"
cp "$tmp/q5.weights" "$tmp/dflt/weights/pocl-2.weights"
case_ predict_default_weights 0 -o '^weights: weights/pocl.weights,weights/pocl-2.weights \(the mean of 2 models' -- \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$tmp/dflt" "$sc" predict "$PWD/$app" --small --target host-opencl
case_ train_floor_quantile_bad 2 -e "--floor-quantile: expected a quantile from 0.5 to 1, got '0.2'" -- \
    "$sc" train --data "$data" -o "$tmp/q.weights" --floor-quantile 0.2
case_ train_device_again 0 -- "$sc" train --data "$data" -o "$tmp/c2.weights" --device "$ckey" --epochs 5 --seed 4
ok train_deterministic "$(cmp -s "$tmp/c.weights" "$tmp/c2.weights"; echo $?)"
case_ train_other_seed 0 -- "$sc" train --data "$data" -o "$tmp/c3.weights" --device "$ckey" --epochs 5 --seed 5
ok train_seed_matters "$(! cmp -s "$tmp/c.weights" "$tmp/c3.weights"; echo $?)"
case_ train_hold_out 0 -o 'held out: [1-9]' -- \
    "$sc" train --data "$data" -o "$tmp/h.weights" --device "$ckey" --epochs 2 --hold-out blur
case_ train_hold_out_list 0 -o 'held out: [1-9]' -- \
    "$sc" train --data "$data" -o "$tmp/h.weights" --device "$ckey" --epochs 2 --hold-out blur,blur
# several exchange files train as one: the tiny data split in two (one
# pipeline, then the other two, each file with the devices), in either
# order, gives the same samples and the same weights as the whole file
{ grep -e '^stagecraft-samples' -e '^device ' "$data"; grep ' 010d4aee08f6a93f' "$data"; } >"$tmp/part1.txt"
grep -v ' 010d4aee08f6a93f' "$data" >"$tmp/part2.txt"
case_ train_two_files 0 -o "loaded 38 samples of 3 pipelines \(6 groups of one code generation and device\) from $tmp/part2.txt \+ $tmp/part1.txt " -- \
    "$sc" train --data "$tmp/part2.txt" --data "$tmp/part1.txt" -o "$tmp/parts.weights" --epochs 3 --seed 2
"$sc" train --data "$data" -o "$tmp/whole.weights" --epochs 3 --seed 2 >/dev/null 2>&1
cmp -s "$tmp/parts.weights" "$tmp/whole.weights"; ok train_two_files_same_weights $?
# a sample in two files is one sample
case_ train_same_file_twice 0 -o "loaded 38 samples of 3 pipelines \(6 groups of one code generation and device\)" -- \
    "$sc" train --data "$data" --data "$data" -o "$tmp/twice.weights" --epochs 1
case_ train_second_file_missing 1 -e "$tmp/none.txt: cannot open" -- \
    "$sc" train --data "$tmp/part1.txt" --data "$tmp/none.txt" -o "$tmp/none.weights"
ok train_second_file_missing_wrote_nothing "$(test ! -e "$tmp/none.weights"; echo $?)"
# a name with no pipeline in the data (a misspelling would otherwise be
# trained on): an error naming it and the data's apps, before any training
rm -f "$tmp/h.weights"
case_ train_hold_out_none 2 -e "--hold-out 'harris': no pipeline of that app in $data \(its apps: blur\)" -- \
    "$sc" train --data "$data" -o "$tmp/h.weights" --device "$ckey" --epochs 2 --hold-out blur,harris
ok train_hold_out_none_wrote_nothing "$([ ! -e "$tmp/h.weights" ]; echo $?)"
# only the samples of newer code (the tiny data's are all of generation 1)
case_ train_min_generation 1 -e "no usable samples in $data" -- \
    "$sc" train --data "$data" -o "$tmp/g.weights" --epochs 2 --min-generation 2
grep -q ', 40 of code older than generation 2; held out: 0' "$out"; ok train_min_generation_counted $?
case_ train_min_generation_bad 2 -e "--min-generation: expected a code generation from 1 to [0-9]+, got '0'" -- \
    "$sc" train --data "$data" -o "$tmp/g.weights" --min-generation 0
case_ train_rank_loss 0 -o 'epoch 2/2' -- "$sc" train --data "$data" -o "$tmp/r.weights" --epochs 2 --loss rank
case_ train_throughput_loss 0 -o 'epoch 2/2' -- "$sc" train --data "$data" -o "$tmp/t.weights" --epochs 2 --loss throughput
case_ train_fine_tune 0 -o 'fine-tuned from' -- \
    "$sc" train --data "$data" -o "$tmp/f.weights" --device "$ckey" --epochs 2 --init "$tmp/c.weights"
case_ train_unknown_device 1 -e "no samples of device 'cuda:none' in $data \(its devices: .*'$ckey'" -- \
    "$sc" train --data "$data" -o "$tmp/u.weights" --device cuda:none
ok train_unknown_device_wrote_nothing "$([ ! -e "$tmp/u.weights" ]; echo $?)"
case_ train_bad_init 1 -e "$tmp/zero.weights: not a stagecraft weights file" -- \
    "$sc" train --data "$data" -o "$tmp/u.weights" --init "$tmp/zero.weights"
"$sc" samples --db "$tmp/s.db" import "$data" >/dev/null 2>&1
case_ train_db 0 -o "loaded 28 samples of 3 pipelines \(3 groups of one code generation and device\) from $tmp/s.db" -- \
    "$sc" train --db "$tmp/s.db" -o "$tmp/d.weights" --device "$ckey" --epochs 2

# --evaluate: trains nothing, ranks each pipeline's samples; on the data
# the weights were trained on (no validation) it repeats the last epoch's
# training figures exactly
"$sc" train --data "$data" -o "$tmp/e.weights" --device "$ckey" --epochs 4 --validation 0 >"$tmp/e_train.txt" 2>&1
read -r tp trho <<<"$(sed -n 's/^epoch 4\/4 .* train pairwise \([0-9.]*\)  rho \([0-9.-]*\).*/\1 \2/p' "$tmp/e_train.txt")"
case_ train_evaluate 0 -o "^all: 28 samples of 3 pipelines: pairwise $tp, rho $trho " -- \
    "$sc" train --data "$data" --device "$ckey" --evaluate "$tmp/e.weights"
grep -q "^evaluating $tmp/e.weights (device $ckey; " "$out"; ok train_evaluate_names_weights $?
grep -Eq '^blur +[0-9]+ +[0-9.]+ +[0-9.-]+ +[0-9.]+$' "$out"; ok train_evaluate_pipeline_line $?
ok train_evaluate_has_figures "$([ -n "$tp" ]; echo $?)"
case_ train_evaluate_app 0 -o '^all: [0-9]+ samples of 1 pipeline: pairwise ' -- \
    "$sc" train --data "$data" --device "$ckey" --evaluate "$tmp/e.weights" --app blur
ok train_evaluate_app_only "$(grep -Ec '^[a-z_0-9]+ +[0-9]+ +[0-9.]+ ' "$out" | grep -qx 1; echo $?)"
case_ train_evaluate_app_none 2 -e "--app 'harris': no pipeline of that app in $data \(its apps: blur\)" -- \
    "$sc" train --data "$data" --evaluate "$tmp/e.weights" --app harris
case_ train_evaluate_with_output 2 -e '--evaluate writes no weights: drop -o' -- \
    "$sc" train --data "$data" --evaluate "$tmp/e.weights" -o "$tmp/x.weights"
case_ train_evaluate_with_init 2 -e '--evaluate and --init are exclusive' -- \
    "$sc" train --data "$data" --evaluate "$tmp/e.weights" --init "$tmp/e.weights"
case_ train_evaluate_with_hold_out 2 -e '--app chooses the pipelines' -- \
    "$sc" train --data "$data" --evaluate "$tmp/e.weights" --hold-out blur
case_ train_evaluate_with_epochs 2 -e '--evaluate trains nothing: drop --epochs' -- \
    "$sc" train --data "$data" --evaluate "$tmp/e.weights" --epochs=3
case_ train_app_without_evaluate 2 -e '--app goes with --evaluate' -- \
    "$sc" train --data "$data" -o "$tmp/x.weights" --app blur
ok train_evaluate_wrote_nothing "$([ ! -e "$tmp/x.weights" ]; echo $?)"
case_ train_evaluate_missing_weights 1 -e "$tmp/none.weights: cannot open weights" -- \
    "$sc" train --data "$data" --evaluate "$tmp/none.weights"
case_ train_evaluate_corrupt_weights 1 -e 'not a stagecraft weights file' -- \
    "$sc" train --data "$data" --evaluate "$tmp/zero.weights"

# predicting with the weights
case_ predict_strategy 0 -o '^predicted: [0-9.e+-]+ ms$' -- \
    "$sc" predict "$app" --small --strategy random --seed 3 --weights "$tmp/c.weights" --target a100
grep -qF "weights: $tmp/c.weights (device $ckey; " "$out"; ok predict_names_device $?
grep -q '^note: a100 is a CUDA GPU and these weights were trained on another device' "$out"; ok predict_cuda_note $?
grep '^predicted' "$out" >"$tmp/p1"
"$sc" schedule "$app" --small --target a100 --strategy random --seed 3 -o "$tmp/r.sched" >/dev/null 2>&1
case_ predict_schedule 0 -o '^predicted: ' -- "$sc" predict "$app" --small --schedule "$tmp/r.sched" --weights "$tmp/c.weights" --target a100
grep '^predicted' "$out" >"$tmp/p2"
ok predict_same_schedule_same_time "$(cmp -s "$tmp/p1" "$tmp/p2"; echo $?)"
case_ predict_cuda_weights 0 -o '^predicted: [0-9.e+-]+ ms$' -- \
    "$sc" predict "$app" --small --strategy random --seed 3 --weights weights/cuda.weights --target a100
grep -q '^note:' "$out"; ok predict_cuda_weights_no_note "$([ $? -ne 0 ]; echo $?)"
# weights trained on both devices of the data name both
case_ predict_mixed 0 -o '^predicted: ' -- "$sc" predict "$app" --small --strategy root --weights "$tmp/all.weights"
grep -qF "weights: $tmp/all.weights (device mixed: '$ckey', 'opencl:pocl-test:test-cpu'; " "$out"; ok predict_names_devices $?
case_ predict_missing_pipe 1 -e "$tmp/none.pipe" -- "$sc" predict "$tmp/none.pipe" --weights "$tmp/c.weights"
case_ predict_missing_schedule 1 -e "$tmp/none.sched" -- \
    "$sc" predict "$app" --small --schedule "$tmp/none.sched" --weights "$tmp/c.weights"
cp "$tmp/c.weights" "$tmp/bad.weights"
size=$(stat -c %s "$tmp/bad.weights")
printf '\x55' | dd of="$tmp/bad.weights" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
case_ predict_corrupt_weights 1 -e 'checksum mismatch: the weights file is corrupt' -- \
    "$sc" predict "$app" --small --weights "$tmp/bad.weights"

# each kernel's time alone (collect stores them): attached to the samples
# of two kernels or more, and the per-kernel loss logged while training
"$sc" collect --db "$tmp/kern.db" --device c --small --schedules 6 apps/box_blur.pipe >/dev/null 2>&1
case_ train_kernel_times 0 -o '^kernel times: [1-9][0-9]* samples with each kernel.s time alone.*; 0 whose kernels did not match' -- \
    "$sc" train --db "$tmp/kern.db" --epochs 2 --validation 0 --kernel-loss 10 -o "$tmp/kern.weights"
grep -Eq '^epoch 2/2 .* kernel divergence [0-9.]+ \([1-9][0-9]* samples\)$' "$out"; ok train_kernel_divergence_logged $?
case_ train_evaluate_kernels 0 -o '^kernels: [1-9][0-9]* samples with each kernel.s time alone; the predicted shares. mean divergence from them [0-9.]+ ' -- \
    "$sc" train --db "$tmp/kern.db" --evaluate "$tmp/kern.weights"
grep -Eq '^box_blur +6 .* +[1-9][0-9]* +[0-9.]+$' "$out"; ok train_evaluate_kernels_per_pipeline $?
case_ train_evaluate_worst_kernels 0 -o '^the 2 kernels priced furthest under their share' -- \
    "$sc" train --db "$tmp/kern.db" --evaluate "$tmp/kern.weights" --worst-kernels 2
grep -Eq '^box_blur +[0-9.e+-]+ +(clamped|blur_x|out)\.0 +[0-9.]+ +[0-9.]+ ' "$out"; ok train_evaluate_worst_kernels_rows $?
case_ train_worst_kernels_alone 2 -e '--worst-kernels goes with --evaluate' -- \
    "$sc" train --db "$tmp/kern.db" -o "$tmp/w2.weights" --worst-kernels 2
case_ train_bad_worst_kernels 2 -e "--worst-kernels: expected a number of kernels >= 1, got '0'" -- \
    "$sc" train --db "$tmp/kern.db" --evaluate "$tmp/kern.weights" --worst-kernels 0
case_ train_evaluate_kernel_loss 2 -e '--evaluate trains nothing: drop --kernel-loss' -- \
    "$sc" train --db "$tmp/kern.db" --evaluate "$tmp/kern.weights" --kernel-loss 1
# --hold-out-each: one model per app from one load, each the same bytes as
# --hold-out APP gives; the tiny data with its first random pipeline made
# an app, so that it has two apps
sed 's/^pipeline 010d4aee08f6a93f chain random:seed=1 /pipeline 010d4aee08f6a93f chain app:chain /' "$data" >"$tmp/two.txt"
case_ train_each_all 0 -o '^training 2 models, each without one app, 2 at a time, into ' -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each" --hold-out-each all --epochs 4 --seed 3 --jobs 2
grep -q "^\[[12]/2\] wrote $tmp/each/chain.weights: " "$out"; ok train_each_reports $?
"$sc" train --data "$tmp/two.txt" -o "$tmp/no_blur.weights" --hold-out blur --epochs 4 --seed 3 >/dev/null 2>&1
"$sc" train --data "$tmp/two.txt" -o "$tmp/no_chain.weights" --hold-out chain --epochs 4 --seed 3 >/dev/null 2>&1
cmp -s "$tmp/each/blur.weights" "$tmp/no_blur.weights"; ok train_each_same_as_hold_out_blur $?
cmp -s "$tmp/each/chain.weights" "$tmp/no_chain.weights"; ok train_each_same_as_hold_out_chain $?
! cmp -s "$tmp/each/blur.weights" "$tmp/each/chain.weights"; ok train_each_models_differ $?
grep -q '^held out: app blur (2 groups of its pipelines)$' "$tmp/each/blur.log" &&
    grep -q '^epoch 4/4  train loss' "$tmp/each/blur.log" &&
    grep -q "^wrote $tmp/each/blur.weights: " "$tmp/each/blur.log"; ok train_each_log $?
# one app named, one thread, into an existing directory; with --hold-out
case_ train_each_named 0 -o "^\[1/1\] wrote $tmp/each/chain.weights: " -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each" --hold-out-each chain,chain --epochs 4 --seed 3 --jobs 1
cmp -s "$tmp/each/chain.weights" "$tmp/no_chain.weights"; ok train_each_one_thread_same $?
"$sc" train --data "$tmp/two.txt" -o "$tmp/no_both.weights" --hold-out blur,chain --epochs 2 >/dev/null 2>&1
case_ train_each_with_hold_out 0 -o '1 models?, each without one app' -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each2" --hold-out blur --hold-out-each all --epochs 2
cmp -s "$tmp/each2/chain.weights" "$tmp/no_both.weights"; ok train_each_with_hold_out_same $?
ok train_each_with_hold_out_only_chain "$([ ! -e "$tmp/each2/blur.weights" ]; echo $?)"
# --evaluate-held-out: each app's pipelines ranked by its own held-out
# model, as --evaluate ranks them with that one file
case_ train_held_out_eval 0 -o '^mean over 2 apps: pairwise [0-9.]+, rho [0-9.-]+ \(each app once\); the pick at [0-9.]+x' -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/each"
grep -q "^held out in $tmp/each: each app's pipelines ranked by $tmp/each/APP.weights$" "$out"; ok train_held_out_eval_names_dir $?
grep -E '^blur +[0-9]+ ' "$out" | awk '{print $2, $3, $4}' >"$tmp/ho_blur"
"$sc" train --data "$tmp/two.txt" --evaluate "$tmp/each/blur.weights" --app blur >"$tmp/ev_blur" 2>&1
grep -E '^all: ' "$tmp/ev_blur" | sed -E 's/^all: ([0-9]+) samples of [0-9]+ pipelines?: pairwise ([0-9.]+), rho ([0-9.-]+) .*/\1 \2 \3/' >"$tmp/ev_blur1"
cmp -s "$tmp/ho_blur" "$tmp/ev_blur1" && [ -s "$tmp/ho_blur" ]; ok train_held_out_eval_same_as_evaluate $?
case_ train_held_out_eval_two 0 -o '^mean over 1 apps: ' -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/each,$tmp/each" --app chain
ok train_held_out_eval_two_blocks "$(grep -c '^held out in ' "$out" | grep -qx 2; echo $?)"
ok train_held_out_eval_app_only "$(grep -Ec '^blur +[0-9]' "$out" | grep -qx 0; echo $?)"
case_ train_held_out_eval_not_dir 1 -e "--evaluate-held-out '$tmp/nodir': not a directory" -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/nodir"
mkdir -p "$tmp/emptydir"
case_ train_held_out_eval_no_weights 1 -e "--evaluate-held-out: no APP.weights in $tmp/emptydir" -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/emptydir"
case_ train_held_out_eval_and_evaluate 2 -e '--evaluate and --evaluate-held-out are exclusive' -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/each" --evaluate "$tmp/no_blur.weights"
case_ train_held_out_eval_output 2 -e '--evaluate-held-out writes no weights: drop -o' -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/each" -o "$tmp/x2.weights"
case_ train_held_out_eval_epochs 2 -e '--evaluate-held-out trains nothing: drop --epochs' -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/each" --epochs 3
case_ train_held_out_eval_unknown_app 2 -e "--app 'harris': no pipeline of that app in $tmp/two.txt" -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/each" --app harris
printf 'garbage' >"$tmp/bad_each_blur"; mkdir -p "$tmp/bad_each"; cp "$tmp/bad_each_blur" "$tmp/bad_each/blur.weights"
case_ train_held_out_eval_corrupt 1 -e "$tmp/bad_each/blur.weights" -- \
    "$sc" train --data "$tmp/two.txt" --evaluate-held-out "$tmp/bad_each"
# bad usage and input: nothing is written
case_ train_each_unknown_app 2 -e "--hold-out-each 'harris': no pipeline of that app in $tmp/two.txt \(its apps: chain, blur\)" -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each3" --hold-out-each blur,harris --epochs 1
ok train_each_unknown_app_wrote_nothing "$([ ! -e "$tmp/each3" ]; echo $?)"
: >"$tmp/afile"
case_ train_each_to_file 2 -e "-o '$tmp/afile': with --hold-out-each, -o names a directory" -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/afile" --hold-out-each all --epochs 1
case_ train_each_all_and_names 2 -e "--hold-out-each: 'all' names every app; give it alone" -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each3" --hold-out-each all,blur
case_ train_each_path 2 -e "--hold-out-each: '../x' is not an app name" -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each3" --hold-out-each ../x
case_ train_each_no_out 2 -e 'no directory to write the models in \(-o DIR\)' -- \
    "$sc" train --data "$tmp/two.txt" --hold-out-each all
case_ train_jobs_alone 2 -e '--jobs goes with --hold-out-each' -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/w.weights" --jobs 2
case_ train_each_bad_jobs 2 -e "--jobs: expected a number of models at once from 1 to 1024, got '0'" -- \
    "$sc" train --data "$tmp/two.txt" -o "$tmp/each3" --hold-out-each all --jobs 0
case_ train_each_evaluate 2 -e '--evaluate trains nothing: drop --hold-out-each' -- \
    "$sc" train --data "$tmp/two.txt" --evaluate "$tmp/no_blur.weights" --hold-out-each all
case_ train_each_no_apps 1 -e "--hold-out-each all: no app's pipelines in $data to hold out" -- \
    "$sc" train --data "$data" --hold-out blur -o "$tmp/each3" --hold-out-each all
ok train_each_no_apps_wrote_nothing "$([ ! -e "$tmp/each3" ]; echo $?)"
exit $failed
