#!/usr/bin/env bash
# stagecraft random-pipeline: usage errors (exit 2), the file it writes
# (accepted by check, the same for the same seed, different for another),
# stdout, the stage count asked, a file that cannot be written (exit 1).
source "$(dirname "$0")/cli_lib.sh" test_cli_randpipe

rp="$sc random-pipeline"

# ---- usage ------------------------------------------------------------------
case_ help 0 -o 'usage: stagecraft random-pipeline' -- $rp --help
case_ listed_in_top_help 0 -o 'random-pipeline' -- "$sc" --help
case_ unknown_option 2 -e "random-pipeline: unknown option '--bogus'" -- $rp --bogus
case_ seed_word 2 -e "--seed: 'abc' is not an integer" -- $rp --seed abc
case_ seed_negative 2 -e "--seed: '-1' is not an integer" -- $rp --seed -1
case_ seed_missing 2 -e '--seed needs a value' -- $rp --seed
case_ stages_low 2 -e "--stages: '1' is not an integer in 2 .. 20" -- $rp --stages 1
case_ stages_high 2 -e "--stages: '21' is not an integer in 2 .. 20" -- $rp --stages=21
case_ stages_word 2 -e "--stages: 'many'" -- $rp --stages many
case_ o_missing 2 -e '-o needs a value' -- $rp -o
case_ positional 2 -e "unknown option 'extra'" -- $rp extra

# ---- output -----------------------------------------------------------------
case_ write_file 0 -- $rp --seed 7 -o "$tmp/a.pipe"
case_ written_file_checks 0 -o 'pipeline random_7: ' -- "$sc" check "$tmp/a.pipe"
case_ written_file_checks_small 0 -o 'pipeline random_7: ' -- "$sc" check "$tmp/a.pipe" --small
$rp --seed 7 -o "$tmp/b.pipe" >/dev/null 2>&1
cmp -s "$tmp/a.pipe" "$tmp/b.pipe"; ok same_seed_same_file $?
$rp --seed=7 >"$tmp/c.pipe" 2>/dev/null
cmp -s "$tmp/a.pipe" "$tmp/c.pipe"; ok stdout_same_as_file $?
$rp --seed 8 -o "$tmp/d.pipe" >/dev/null 2>&1
! cmp -s "$tmp/a.pipe" "$tmp/d.pipe"; ok other_seed_other_file $?
$rp >"$tmp/e.pipe" 2>/dev/null && $rp --seed 1 >"$tmp/f.pipe" 2>/dev/null
cmp -s "$tmp/e.pipe" "$tmp/f.pipe"; ok default_seed_is_1 $?
for k in 2 11 20; do
    $rp --seed 3 --stages $k -o "$tmp/k$k.pipe" >/dev/null 2>&1
    case_ "stages_$k" 0 -o "pipeline random_3: $k Funcs" -- "$sc" check "$tmp/k$k.pipe" --small
done
case_ run_small_checked 0 -o 'check: matches the reference' -- \
    "$sc" run "$tmp/a.pipe" --small --strategy random --seed 2 --device c --check
# the lookups set: named for it, valid, checked on C; the classic set is the default
case_ ops_bad 2 -e "--ops: 'gathers' is not one of classic, lookups, layers" -- $rp --ops gathers
case_ ops_missing 2 -e '--ops needs a value' -- $rp --ops
case_ ops_lookups_write 0 -- $rp --ops lookups --seed 3 -o "$tmp/l.pipe"
case_ ops_lookups_named 0 -o 'pipeline random_lookups_3: ' -- "$sc" check "$tmp/l.pipe" --small
ok ops_lookups_has_gathers "$(grep -q 'lookup(\|grid_slice(' "$tmp/l.pipe"; echo $?)"
case_ ops_lookups_run_checked 0 -o 'check: matches the reference' -- \
    "$sc" run "$tmp/l.pipe" --small --strategy random --seed 2 --device c --check
# the layers set: seed 24 has a depthwise and a 1x1 layer with biases, checked on C
case_ ops_layers_write 0 -- $rp --ops layers --seed 24 -o "$tmp/n.pipe"
case_ ops_layers_named 0 -o 'pipeline random_layers_24: ' -- "$sc" check "$tmp/n.pipe" --small
ok ops_layers_has_bias "$(grep -q '^layer3(x, y, c) = bias2(c);$' "$tmp/n.pipe"; echo $?)"
case_ ops_layers_run_checked 0 -o 'check: matches the reference' -- \
    "$sc" run "$tmp/n.pipe" --small --strategy random --seed 2 --device c --check
$rp --ops classic --seed 7 -o "$tmp/g.pipe" >/dev/null 2>&1
cmp -s "$tmp/a.pipe" "$tmp/g.pipe"; ok ops_classic_is_default $?
case_ unwritable 1 -e "cannot write $tmp/no/such/dir/x.pipe" -- $rp --seed 1 -o "$tmp/no/such/dir/x.pipe"
exit $failed
