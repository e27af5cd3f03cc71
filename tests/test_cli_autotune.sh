#!/usr/bin/env bash
# `stagecraft autotune` (autotune.h): a 2 x 8 autotune on three apps at small
# sizes whose best schedule is run again and checked bit-exactly on C and
# OpenCL; a rerun that has nothing left to do; more iterations continuing
# from the database; a kill -9 in the middle of a batch and a rerun that
# loses and repeats nothing; --from-scratch; bad usage (2) and bad input (1).
source "$(dirname "$0")/cli_lib.sh" test_cli_autotune
CASE_TIMEOUT=300
w=$tmp/w.weights
case_ autotune_train 0 -- "$sc" train --data tests/data/train_tiny.txt -o "$w" --epochs 10 --seed 1
case_ autotune_help 0 -o 'usage: stagecraft autotune FILE.pipe --device' -- "$sc" autotune --help
case_ autotune_in_usage 0 -o 'autotune +search, measure and retrain' -- "$sc" --help

for app in box_blur harris unsharp; do
    db=$tmp/$app.db
    case_ autotune_$app 0 -o '^autotune: 2 of 2 iterations done; [1-9][0-9]* measured this run' -- \
        "$sc" autotune apps/$app.pipe --small --device c --math exact --db "$db" --iterations 2 --batch 8 \
        --weights "$w" --epochs 5 -o "$tmp/$app.sched"
    grep -Eq '^best: [0-9.e+-]+ ms, [0-9.e+-]+x the baseline timed with it' "$out"; ok autotune_${app}_best $?
    for dev in c opencl; do
        case_ autotune_${app}_checks_$dev 0 -o 'check: matches the reference' -- \
            "$sc" run apps/$app.pipe --small --schedule "$tmp/$app.sched" --device $dev --math exact --check
    done
done

# nothing left: a rerun measures nothing; a third iteration continues
db=$tmp/box_blur.db
case_ autotune_rerun 0 -o '^autotune: 2 of 2 iterations done; 0 measured this run' -- \
    "$sc" autotune apps/box_blur.pipe --small --device c --math exact --db "$db" --iterations 2 --batch 8 --weights "$w" --epochs 5
case_ autotune_more 0 -o '^autotune: 3 of 3 iterations done' -- \
    "$sc" autotune apps/box_blur.pipe --small --device c --math exact --db "$db" --iterations 3 --batch 8 --weights "$w" --epochs 5
ok autotune_record "$(sqlite3 "$db" "SELECT value FROM meta WHERE key LIKE 'autotune %'" | grep -qx 'iteration 3'; echo $?)"
ok autotune_weights_written "$([ -s "$tmp/box_blur-box_blur.weights" ]; echo $?)"
ok autotune_unique "$(sqlite3 "$db" 'SELECT count(*) = count(DISTINCT text) FROM schedules' | grep -qx 1; echo $?)"

# killed in the middle of a batch (OpenCL: each schedule in a child), rerun
kdb=$tmp/k.db
args=(apps/harris.pipe --small --device opencl --db "$kdb" --iterations 2 --batch 8 --weights "$w" --epochs 5 --jobs 2)
"$sc" autotune "${args[@]}" >"$tmp/k.log" 2>&1 &
pid=$!
for i in $(seq 1 900); do
    n=$(sqlite3 "$kdb" 'SELECT count(*) FROM measurements' 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 3 ] && break
    sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
sqlite3 "$kdb" 'SELECT m.id, s.text, m.ms FROM measurements m JOIN schedules s ON m.schedule = s.id ORDER BY m.id' >"$tmp/before.txt"
n1=$(sqlite3 "$kdb" 'SELECT count(*) FROM measurements')
f1=$(sqlite3 "$kdb" 'SELECT count(*) FROM failures')
ok autotune_killed_kept "$([ "$n1" -ge 3 ] && [ "$n1" -lt 16 ]; echo $?)"
case_ autotune_after_kill 0 -o '^autotune: 2 of 2 iterations done' -- "$sc" autotune "${args[@]}"
sqlite3 "$kdb" 'SELECT m.id, s.text, m.ms FROM measurements m JOIN schedules s ON m.schedule = s.id ORDER BY m.id' >"$tmp/after.txt"
ok autotune_after_kill_nothing_lost "$(head -c "$(wc -c <"$tmp/before.txt")" "$tmp/after.txt" | cmp -s - "$tmp/before.txt"; echo $?)"
ok autotune_after_kill_no_duplicate "$(sqlite3 "$kdb" 'SELECT count(*) = count(DISTINCT text) FROM schedules' | grep -qx 1; echo $?)"
ok autotune_after_kill_every_result "$(sqlite3 "$kdb" 'SELECT count(*) FROM schedules s WHERE NOT EXISTS (SELECT 1 FROM measurements m WHERE m.schedule = s.id) AND NOT EXISTS (SELECT 1 FROM failures f WHERE f.schedule = s.id)' | grep -qx 0; echo $?)"
m2=$(sed -n 's/^autotune: 2 of 2 iterations done; \([0-9]*\) measured this run, \([0-9]*\) already stored.*/\1 \2/p' "$out")
ok autotune_after_kill_resumed "$(set -- $m2; [ "${2:-0}" -ge "$((n1 + f1))" ]; echo $?)"

# random starting weights
case_ autotune_from_scratch 0 -o '^autotune: 1 of 1 iterations done; [1-9][0-9]* measured' -- \
    "$sc" autotune apps/box_blur.pipe --small --device c --db "$tmp/s.db" --iterations 1 --batch 4 --from-scratch --epochs 5

# bad usage
case_ autotune_no_pipe 2 -e 'no pipeline file given' -- "$sc" autotune --device c --db "$tmp/x.db"
case_ autotune_no_db 2 -e '--db F is required' -- "$sc" autotune apps/box_blur.pipe --device c
case_ autotune_no_device 2 -e '--device opencl|c|cuda is required' -- "$sc" autotune apps/box_blur.pipe --db "$tmp/x.db"
case_ autotune_bad_device 2 -e "--device: 'gpu' is not one of" -- "$sc" autotune apps/box_blur.pipe --db "$tmp/x.db" --device gpu
case_ autotune_both_starts 2 -e 'give --weights or --from-scratch, not both' -- \
    "$sc" autotune apps/box_blur.pipe --db "$tmp/x.db" --device c --weights "$w" --from-scratch
case_ autotune_bad_batch 2 -e "--batch: expected 1 to 100000, got '0'" -- \
    "$sc" autotune apps/box_blur.pipe --db "$tmp/x.db" --device c --batch 0
# bad input
case_ autotune_missing_pipe 1 -e 'nope.pipe' -- "$sc" autotune "$tmp/nope.pipe" --db "$tmp/x.db" --device c
case_ autotune_missing_weights 1 -e 'none.weights' -- \
    "$sc" autotune apps/box_blur.pipe --small --db "$tmp/x.db" --device c --weights "$tmp/none.weights"
echo garbage >"$tmp/box_blur-box_blur.weights"
case_ autotune_bad_saved_weights 1 -e 'records 3 autotuning iterations done' -- \
    "$sc" autotune apps/box_blur.pipe --small --device c --math exact --db "$db" --iterations 4 --batch 8 --epochs 5
exit $failed
