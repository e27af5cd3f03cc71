#!/usr/bin/env bash
# `stagecraft features`: the table and JSON forms for complete and partial
# schedules, one named column per feature, and clear errors for bad input
# (exit status 1) and bad usage (2).  One PASS/FAIL line per case.
source "$(dirname "$0")/cli_lib.sh" test_cli_features
CASE_TIMEOUT=120
app=apps/unsharp.pipe

case_ features_help 0 -o 'usage: stagecraft features FILE.pipe' -- "$sc" features --help
case_ features_in_usage 0 -o 'features  print the features' -- "$sc" --help

# the table: a header of names, then one line per stage of the baseline
case_ features_table 0 -o '^func	stage	loc	op_const_bool' -- "$sc" features "$app" --small
head -n 1 "$out" | tr '\t' '\n' >"$tmp/cols"
ok features_table_columns "$(grep -qx num_global_mem_loads_per_block "$tmp/cols" &&
    grep -qx max_warp_occupancy "$tmp/cols" && grep -qx global_lines_per_warp_access "$tmp/cols"; echo $?)"
ncols=$(wc -l <"$tmp/cols")
ok features_table_rows_as_wide "$(awk -F'\t' -v n="$ncols" 'NF != n { bad = 1 } END { exit bad }' "$out"; echo $?)"
ok features_table_output_row "$(grep -q '^out	0	root	' "$out"; echo $?)"

# JSON, from a schedule file and from the random walk
"$sc" schedule "$app" --small --target a100 --strategy random --seed 5 -o "$tmp/r.sched" >/dev/null 2>&1
case_ features_json_schedule 0 -o '"pipeline": "unsharp", "target": "a100"' -- \
    "$sc" features "$app" --small --schedule "$tmp/r.sched" --json
cp "$out" "$tmp/from_file.json"
case_ features_json_random 0 -o '"features": \{"op_const_bool"' -- \
    "$sc" features "$app" --small --strategy random --seed 5 --target a100 --json
ok features_same_schedule_same_json "$(cmp -s "$out" "$tmp/from_file.json"; echo $?)"
if command -v python3 >/dev/null; then
    ok features_json_parses "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["stages"]' "$out" 2>/dev/null; echo $?)"
fi
case_ features_target_h100 0 -o '"target": "h100"' -- "$sc" features "$app" --small --target h100 --json

# partial schedules: the first K decisions; fewer rows, none for undecided Funcs
case_ features_partial_1 0 -o '^out	0	root	' -- "$sc" features "$app" --small --strategy random --seed 5 --partial 1
ok features_partial_1_one_row "$([ "$(wc -l <"$out")" -eq 2 ]; echo $?)"
case_ features_partial_0 0 -o '^func	stage	loc' -- "$sc" features "$app" --small --strategy random --seed 5 --partial 0
ok features_partial_0_no_rows "$([ "$(wc -l <"$out")" -eq 1 ]; echo $?)"
case_ features_partial_all 0 -- "$sc" features "$app" --small --strategy random --seed 5 --partial 8 --json
ok features_partial_all_is_complete "$(cmp -s "$out" "$tmp/from_file.json"; echo $?)"
case_ features_partial_paper_size 0 -o '"stages"' -- \
    "$sc" features apps/local_laplacian.pipe --strategy random --seed 2 --partial 20 --json

# errors
case_ features_partial_too_many 2 -e '--partial 9: the schedule has 8 decisions \(expected 0 to 8\)' -- \
    "$sc" features "$app" --small --strategy random --partial 9
case_ features_partial_negative 2 -e "--partial: expected a number of decisions >= 0, got '-1'" -- \
    "$sc" features "$app" --small --partial -1
case_ features_partial_word 2 -e "--partial: expected a number of decisions >= 0, got 'two'" -- \
    "$sc" features "$app" --small --partial two
case_ features_partial_missing 2 -e 'option --partial needs a value' -- "$sc" features "$app" --small --partial
case_ features_unknown_target 1 -e "unknown target 'p100'" -- "$sc" features "$app" --small --target p100
case_ features_unknown_strategy 2 -e "--strategy: 'best' is not one of root, baseline, random" -- \
    "$sc" features "$app" --small --strategy best
case_ features_missing_schedule 1 -e "$tmp/none.sched" -- "$sc" features "$app" --small --schedule "$tmp/none.sched"
printf 'schedule unsharp;\nout: sideways;\n' >"$tmp/bad.sched"
case_ features_bad_schedule 1 -e 'bad.sched:2' -- "$sc" features "$app" --small --schedule "$tmp/bad.sched"
case_ features_missing_pipe 1 -e "$tmp/none.pipe" -- "$sc" features "$tmp/none.pipe"
case_ features_no_pipe 2 -e 'features: no pipeline file given' -- "$sc" features --json
case_ json_not_for_schedule 2 -e '--json is an option of features, not schedule' -- \
    "$sc" schedule "$app" --small --strategy root --json
case_ partial_not_for_bench 2 -e '--partial is an option of features, not bench' -- \
    "$sc" bench "$app" --small --strategy root --partial 2
case_ features_json_takes_no_value 2 -e 'option --json takes no value' -- "$sc" features "$app" --small --json=yes
exit $failed
