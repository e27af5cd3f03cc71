#!/usr/bin/env bash
# `stagecraft schedule --strategy oneshot` (docs/search.md): the search's
# options, its report ('#' lines: prediction, statistics, --explain), the
# schedule it writes (checked and run on the C back end), determinism in
# the seed, and bad usage (2) and bad input (1).  Weights are trained here
# from the committed fixture tests/data/train_tiny.txt.  One PASS/FAIL line
# per case.
source "$(dirname "$0")/cli_lib.sh" test_cli_oneshot
CASE_TIMEOUT=120
app=apps/harris.pipe
data=tests/data/train_tiny.txt
w=$tmp/w.weights

case_ oneshot_train 0 -- "$sc" train --data "$data" -o "$w" --epochs 10 --seed 1
case_ oneshot_help 0 -o '--beam N +states of the beam search' -- "$sc" schedule --help
case_ oneshot_in_strategies 0 -o '^ +oneshot +beam search guided by the learned cost model' -- "$sc" schedule --help

# a schedule, its report and its statistics
opts=(--small --target a100 --weights "$w" --beam 8 --passes 2 --samples 5 --seed 4)
case_ oneshot_schedule 0 -o '^# oneshot: predicted [0-9.e+-]+ ms' -- "$sc" schedule "$app" --strategy oneshot "${opts[@]}"
cp "$out" "$tmp/first.txt"
grep -Eq '^# search: 5 samples \(beam 8 x 2 passes' "$out"; ok oneshot_samples_reported $?
grep -Eq '^# states: [1-9][0-9]* enumerated, .* [1-9][0-9]* buckets, .* [1-9][0-9]* costed in' "$out"; ok oneshot_states_reported $?
grep -Eq '^# wall time: [0-9.]+ s' "$out"; ok oneshot_wall_reported $?
grep -q '^schedule harris;' "$out"; ok oneshot_prints_schedule $?
case_ oneshot_again 0 -- "$sc" schedule "$app" --strategy oneshot "${opts[@]}"
diff <(grep -v '^# wall' "$tmp/first.txt") <(grep -v '^# wall' "$out") >/dev/null; ok oneshot_same_seed_same_output $?
case_ oneshot_explain 0 -o '^#   out +root +[0-9.e+-]+ ms +[0-9.]+%  \[' -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --explain
grep -q '^# predicted cost per stage' "$out"; ok oneshot_explain_header $?

# --unroll-whole: the search over the larger space returns a schedule that
# matches the reference (unsharp: a channel of 3)
case_ oneshot_unroll_whole 0 -o 'check: matches the reference' -- \
    "$sc" run apps/unsharp.pipe --strategy oneshot "${opts[@]}" --unroll-whole --device c --check --math exact

# a CPU's default space (short loops unrolled whole, docs/schedule.md) with
# the shipped weights: every app's one-shot schedule matches the reference
# bit for bit on the OpenCL back end
for a in apps/*.pipe; do
    case_ "oneshot_cpu_default_$(basename "$a" .pipe)" 0 -o 'check: matches the reference' -- \
        "$sc" run "$a" --small --strategy oneshot --device opencl --check --math exact
done

# a mean of two models: named in the report, deterministic, and checked
case_ oneshot_train2 0 -- "$sc" train --data "$data" -o "$tmp/w2.weights" --epochs 10 --seed 2
mopts=(--small --target a100 --weights "$w,$tmp/w2.weights" --beam 8 --passes 2 --samples 5 --seed 4)
case_ oneshot_mean_of_models 0 -o "^# oneshot: predicted [0-9.e+-]+ ms \\(weights $w,$tmp/w2.weights\\)" -- \
    "$sc" schedule "$app" --strategy oneshot "${mopts[@]}" -o "$tmp/m.sched"
case_ oneshot_mean_runs 0 -o 'check: matches the reference' -- \
    "$sc" run "$app" --small --target a100 --schedule "$tmp/m.sched" --device c --check
# --spread ranks the mean's batch by the models' agreement: a schedule
# either way; bad values and other strategies refused
case_ oneshot_mean_spread 0 -o "^# oneshot: predicted [0-9.e+-]+ ms" -- \
    "$sc" schedule "$app" --strategy oneshot "${mopts[@]}" --spread 2 -o "$tmp/sp.sched"
case_ oneshot_mean_spread_runs 0 -o 'check: matches the reference' -- \
    "$sc" run "$app" --small --target a100 --schedule "$tmp/sp.sched" --device c --check
case_ oneshot_spread_bad 2 -e "--spread: expected a number from 0 to 10, got '-1'" -- \
    "$sc" schedule "$app" --strategy oneshot "${mopts[@]}" --spread -1
case_ oneshot_spread_not_oneshot 2 -e '--spread is an option of --strategy oneshot and topk' -- \
    "$sc" schedule "$app" --small --strategy baseline --spread 1
# --freeze-min: harris's 13 Funcs are frozen (all but 4) from 4 Funcs on,
# not under 100; bad values and other strategies refused
case_ oneshot_freeze_min_low 0 -o '^# search: .*, 9 Funcs frozen$' -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --freeze-min 4 -o "$tmp/fz.sched"
case_ oneshot_freeze_min_runs 0 -o 'check: matches the reference' -- \
    "$sc" run "$app" --small --target a100 --schedule "$tmp/fz.sched" --device c --check
case_ oneshot_freeze_min_high 0 -o '^# search: .*, 0 Funcs frozen$' -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --freeze-min 100
case_ oneshot_freeze_min_bad 2 -e "--freeze-min: expected a positive number of Funcs, got '0'" -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --freeze-min 0
case_ oneshot_freeze_min_not_oneshot 2 -e '--freeze-min is an option of --strategy oneshot and topk' -- \
    "$sc" schedule "$app" --small --strategy random --freeze-min 20
case_ oneshot_mean_bad_file 1 -e "$tmp/none.weights: cannot open weights" -- \
    "$sc" schedule "$app" --small --strategy oneshot --weights "$w,$tmp/none.weights"
case_ oneshot_mean_no_file 1 -e "names no file" -- "$sc" schedule "$app" --small --strategy oneshot --weights ,
case_ oneshot_mean_too_many 1 -e "at most 16 weights files" -- \
    "$sc" schedule "$app" --small --strategy oneshot --weights "$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w,$w"

# the default weights and the siblings beside them (pocl-2.weights, ...,
# while they exist in a row): searched with their mean, named in the
# report; a bad sibling is an error naming it
mkdir -p "$tmp/dflt/weights"
cp "$w" "$tmp/dflt/weights/pocl.weights"
cp "$tmp/w2.weights" "$tmp/dflt/weights/pocl-2.weights"
cp "$w" "$tmp/dflt/weights/pocl-4.weights"
root=$PWD
dflt=(schedule "$root/$app" --strategy oneshot --small --target host-opencl --beam 8 --passes 2 --samples 5 --seed 4)
case_ oneshot_default_siblings 0 \
    -o '^# oneshot: predicted [0-9.e+-]+ ms \(weights weights/pocl.weights,weights/pocl-2.weights\)' -- \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$tmp/dflt" "$sc" "${dflt[@]}"
echo "not weights" >"$tmp/dflt/weights/pocl-2.weights"
case_ oneshot_default_bad_sibling 1 -e 'weights/pocl-2.weights' -- \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$tmp/dflt" "$sc" "${dflt[@]}"

# written, read back, run and checked on the C back end
case_ oneshot_write 0 -o "wrote $tmp/h.sched \\(target a100\\)" -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" -o "$tmp/h.sched"
case_ oneshot_runs 0 -o 'check: matches the reference' -- \
    "$sc" run "$app" --small --target a100 --schedule "$tmp/h.sched" --device c --check
case_ oneshot_run_strategy 0 -o 'check: matches the reference' -- \
    "$sc" run apps/unsharp.pipe --strategy oneshot "${opts[@]}" --device c --check

# 0-D outputs: scheduled, written, read back (a 0-D Func's tiling is []),
# run and checked; and a random pipeline from the generator
cat >"$tmp/scalar.pipe" <<'PIPE'
pipeline scalar;
size N = 20000 small 500;
input f32 in(N);
rdom r(0, N);
total() = 0.0;
total() += in(r);
mean() = total() / f32(N);
centered(x) = in(x) - mean();
output centered(N);
output mean();
output total();
PIPE
case_ oneshot_scalar_write 0 -o "wrote $tmp/s.sched" -- \
    "$sc" schedule "$tmp/scalar.pipe" --strategy oneshot "${opts[@]}" -o "$tmp/s.sched"
grep -Eq '^total: .*\[\]' "$tmp/s.sched"; ok oneshot_scalar_tiling_text $?
case_ oneshot_scalar_runs 0 -o 'check: matches the reference.* 0 of 502 output points differ' -- \
    "$sc" run "$tmp/scalar.pipe" --small --target a100 --schedule "$tmp/s.sched" --device c --check
"$sc" random-pipeline --seed 17 -o "$tmp/r17.pipe"
case_ oneshot_random_pipeline 0 -o 'check: matches the reference' -- \
    "$sc" run "$tmp/r17.pipe" --strategy oneshot "${opts[@]}" --device c --check
# --margin: the baseline kept unless the pick is predicted more than R
# times faster; a huge margin keeps it, and it is the baseline strategy's
# schedule
case_ oneshot_margin_keeps_baseline 0 -o '^# oneshot: kept the baseline \([0-9.e+-]+ ms predicted\), within --margin 1e\+06' -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --margin 1e6 -o "$tmp/mb.sched"
case_ oneshot_margin_baseline 0 -- "$sc" schedule "$app" --small --target a100 --strategy baseline -o "$tmp/b.sched"
diff <(grep -v '^#' "$tmp/mb.sched") <(grep -v '^#' "$tmp/b.sched") >/dev/null; ok oneshot_margin_is_baseline $?
case_ oneshot_margin_one 0 -- "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --margin 1
diff <(grep -v '^# wall' "$tmp/first.txt") <(grep -v '^# wall' "$out") >/dev/null; ok oneshot_margin_one_unchanged $?
case_ oneshot_margin_small 2 -e "--margin: expected a number of at least 1, got '0.5'" -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --margin 0.5
case_ oneshot_margin_not_number 2 -e "--margin: expected a number of at least 1, got 'x'" -- \
    "$sc" schedule "$app" --strategy oneshot "${opts[@]}" --margin x
case_ oneshot_margin_without 2 -e '--margin is an option of --strategy oneshot' -- \
    "$sc" schedule "$app" --small --strategy baseline --margin 2

# bad usage
case_ oneshot_weights_without 2 -e 'are options of --strategy oneshot' -- \
    "$sc" schedule "$app" --small --strategy root --weights "$w"
case_ oneshot_beam_without 2 -e 'are options of --strategy oneshot' -- "$sc" schedule "$app" --small --beam 4
case_ oneshot_samples_without 2 -e 'are options of --strategy oneshot' -- \
    "$sc" schedule "$app" --small --strategy random --samples 3
case_ oneshot_explain_without 2 -e 'are options of --strategy oneshot' -- "$sc" schedule "$app" --small --explain
case_ oneshot_bad_beam 2 -e "--beam: expected a positive integer, got '0'" -- \
    "$sc" schedule "$app" --strategy oneshot --weights "$w" --beam 0
case_ oneshot_bad_passes 2 -e "--passes: expected a positive integer, got 'many'" -- \
    "$sc" schedule "$app" --strategy oneshot --weights "$w" --passes many
case_ oneshot_bad_samples 2 -e '--samples: expected a positive integer' -- \
    "$sc" schedule "$app" --strategy oneshot --weights "$w" --samples -1
case_ oneshot_weights_no_value 2 -e 'option --weights needs a value' -- "$sc" schedule "$app" --strategy oneshot --weights

# bad input: weights
case_ oneshot_missing_weights 1 -e "$tmp/none.weights: cannot open weights" -- \
    "$sc" schedule "$app" --small --strategy oneshot --weights "$tmp/none.weights"
head -c 4096 /dev/zero >"$tmp/zero.weights"
case_ oneshot_not_weights 1 -e 'not a stagecraft weights file' -- \
    "$sc" schedule "$app" --small --strategy oneshot --weights "$tmp/zero.weights"
# no --weights and no weights/pocl.weights beside the program: the message names the file
mkdir -p "$tmp/bin" "$tmp/run"
cp "$sc" "$tmp/bin/stagecraft"
(cd "$tmp/run" && STAGECRAFT_TARGETS="$OLDPWD/targets" "$tmp/bin/stagecraft" schedule "$OLDPWD/$app" --small --target a100 --strategy oneshot \
    >"$out" 2>"$err")
rc=$?
[ "$rc" -eq 1 ] && grep -q "no file .*/weights/pocl.weights" "$err" && grep -q 'make train' "$err"
ok oneshot_default_weights_missing $?
# ... and with one there, it is used
mkdir -p "$tmp/weights" && cp "$w" "$tmp/weights/pocl.weights"
(cd "$tmp/run" && STAGECRAFT_TARGETS="$OLDPWD/targets" "$tmp/bin/stagecraft" schedule "$OLDPWD/$app" --small --target a100 --strategy oneshot \
    --beam 4 --passes 1 --samples 2 >"$out" 2>"$err")
rc=$?
[ "$rc" -eq 0 ] && grep -q "weights $tmp/bin/../weights/pocl.weights\|weights $tmp/weights/pocl.weights" "$out"
ok oneshot_default_weights_found $?
# a CUDA target takes the GPUs' own model beside the program where there is
# one (weights/cuda.weights), and a non-CUDA target the PoCL one still
cp weights/cuda.weights "$tmp/weights/cuda.weights"
(cd "$tmp/run" && STAGECRAFT_TARGETS="$OLDPWD/targets" "$tmp/bin/stagecraft" schedule "$OLDPWD/$app" --small --target a100 --strategy oneshot \
    --beam 4 --passes 1 --samples 2 >"$out" 2>"$err")
rc=$?
[ "$rc" -eq 0 ] && grep -q "weights $tmp/weights/cuda.weights" "$out"
ok oneshot_default_weights_cuda $?
(cd "$tmp/run" && STAGECRAFT_TARGETS="$OLDPWD/targets" "$tmp/bin/stagecraft" schedule "$OLDPWD/$app" --small --target host-opencl \
    --strategy oneshot --beam 4 --passes 1 --samples 2 >"$out" 2>"$err")
rc=$?
[ "$rc" -eq 0 ] && grep -q "weights $tmp/weights/pocl.weights" "$out"
ok oneshot_default_weights_opencl $?
exit $failed
