#!/usr/bin/env bash
# `stagecraft collect` and `stagecraft samples`: a collection into a fresh
# database, killed in the middle (SIGKILL) and rerun: nothing measured is
# lost or measured twice; Ctrl-C (SIGINT) stops it cleanly; export and
# import; and clear errors for bad usage (2) and bad input (1).
source "$(dirname "$0")/cli_lib.sh" test_cli_collect
CASE_TIMEOUT=300
db=$tmp/s.db
pipe=$tmp/p.pipe
cat >"$pipe" <<'PIPE'
pipeline tiny;
size W = 256 small 64;
input f32 in(W, W);
b(x, y) = in(x, y) + 1;
c(x, y) = b(x, y) * 2 + b(clamp(x + 1, 0, W - 1), y);
out(x, y) = c(x, y) - c(x, clamp(y - 1, 0, W - 1));
output out(W, W);
PIPE

case_ collect_help 0 -o 'usage: stagecraft collect --db F' -- "$sc" collect --help
case_ collect_in_usage 0 -o 'collect +measure schedules' -- "$sc" --help
case_ collect_no_db 2 -e '--db F is required' -- "$sc" collect --device c "$pipe"
case_ collect_no_device 2 -e '--device opencl\|c\|cuda is required' -- "$sc" collect --db "$db" "$pipe"
case_ collect_bad_device 2 -e "--device: 'gpu' is not one of" -- "$sc" collect --db "$db" --device gpu "$pipe"
case_ collect_bad_count 2 -e '--schedules: expected' -- "$sc" collect --db "$db" --device c --schedules 0 "$pipe"
case_ collect_no_pipes 2 -e 'no pipelines given' -- "$sc" collect --db "$db" --device c
case_ collect_missing_pipe 1 -e 'nope.pipe: cannot open' -- "$sc" collect --db "$db" --device c "$pipe" "$tmp/nope.pipe"
ok collect_missing_pipe_no_db "$([ ! -e "$db" ]; echo $?)"
echo "not a database, and long enough to hold an SQLite header's worth of bytes" >"$tmp/junk.db"
case_ collect_junk_db 1 -e 'not a stagecraft sample database' -- "$sc" collect --db "$tmp/junk.db" --device c "$pipe"
ok collect_junk_db_untouched "$(grep -q '^not a database' "$tmp/junk.db"; echo $?)"

# a collection on the C device, run to the end: 6 results
case_ collect_c 0 -e 'collect: 6 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$db" --device c --small --schedules 6 "$pipe"
case_ samples_stats 0 -o '^6 samples$' -- "$sc" samples --db "$db" stats
ok collect_reference_times "$(sqlite3 "$db" 'SELECT count(*) FROM measurements WHERE ref_ms > 0' | grep -qx 6; echo $?)"
# each kernel timed alone: one FUNC.STAGE=MS entry per kernel
ok collect_kernel_times "$(sqlite3 "$db" "SELECT count(*) FROM measurements WHERE kernel_ms GLOB '*.[0-9]=[0-9]*' AND length(kernel_ms) - length(replace(kernel_ms, ',', '')) + 1 = kernels" | grep -qx 6; echo $?)"
case_ samples_device_key 0 -o '^  c:cc:.* \[fast math\]: 6, 0$' -- "$sc" samples --db "$db" stats
case_ collect_resumes_nothing_left 0 -e 'collect: 0 measured, .*6 already stored' -- \
    "$sc" collect --db "$db" --device c --small --schedules 6 "$pipe"

# a baseline that the pruning's warp multiples would refuse (a 40 x 3
# stage: 40 threads) is still the reference, and stored as a sample
cat >"$tmp/small_stage.pipe" <<'PIPE'
pipeline smallstage;
size W = 256 small 64;
input f32 in(W, W);
input f32 k(40, 3);
m(i, j) = k(i, j) * 2 + 1;
out(x, y) = in(x, y) * m(clamp(x, 0, 39), clamp(y, 0, 2));
output out(W, W);
PIPE
case_ collect_small_stage 0 -e 'collect: 2 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/small.db" --device c --small --schedules 2 "$tmp/small_stage.pipe"
ok collect_small_stage_refs "$(sqlite3 "$tmp/small.db" 'SELECT count(*) FROM measurements WHERE ref_ms > 0' | grep -qx 2; echo $?)"
ok collect_small_stage_baseline "$(sqlite3 "$tmp/small.db" "SELECT count(*) FROM schedules WHERE text LIKE '%m: root [i=40x1 j=1x1];%'" | grep -qx 1; echo $?)"

# --remeasure: measurements without a reference time (an older collect's)
# are measured again and replaced, the others left alone
sqlite3 "$db" 'UPDATE measurements SET ref_ms = NULL WHERE id IN (SELECT id FROM measurements ORDER BY id LIMIT 2)'
case_ collect_remeasure 0 -e 'collect: 2 measured, 0 failed, 0 wrong.* 4 already stored' -- \
    "$sc" collect --db "$db" --device c --small --schedules 6 --remeasure "$pipe"
ok collect_remeasure_refs "$(sqlite3 "$db" 'SELECT count(*) FROM measurements WHERE ref_ms > 0' | grep -qx 6; echo $?)"
ok collect_remeasure_in_place "$(sqlite3 "$db" 'SELECT count(*) FROM measurements' | grep -qx 6; echo $?)"
# ... and measurements of older code (a version without " cgN": generation 1)
sqlite3 "$db" "UPDATE measurements SET version = 'aa12d84' WHERE id IN (SELECT id FROM measurements ORDER BY id LIMIT 3)"
case_ collect_remeasure_old_code 0 -e 'collect: 3 measured, 0 failed, 0 wrong.* 3 already stored' -- \
    "$sc" collect --db "$db" --device c --small --schedules 6 --remeasure "$pipe"
ok collect_remeasure_generation "$(sqlite3 "$db" "SELECT count(*) FROM measurements WHERE version LIKE '% cg%'" | grep -qx 6; echo $?)"
case_ collect_not_stale_left 0 -e 'collect: 0 measured, .*6 already stored' -- \
    "$sc" collect --db "$db" --device c --small --schedules 6 --remeasure "$pipe"
# ... and stored schedules that are not drawn again (--schedules 2: the
# baseline and root only) are read back from their text: two of older code
# on this device, one on another device row (a new row here; the old one
# stays, and training leaves it out)
sqlite3 "$db" "UPDATE measurements SET version = 'aa12d84' WHERE id IN (SELECT id FROM measurements ORDER BY id DESC LIMIT 2)"
sqlite3 "$db" "INSERT INTO devices(key, math, description, target) SELECT 'c:another-cpu', math, description, target FROM devices LIMIT 1"
sqlite3 "$db" "UPDATE measurements SET version = 'aa12d84', device = (SELECT id FROM devices WHERE key = 'c:another-cpu') WHERE id = (SELECT id FROM measurements ORDER BY id DESC LIMIT 1 OFFSET 2)"
case_ collect_remeasure_stored 0 -e 'collect: 3 measured, 0 failed, 0 wrong.* 2 already stored' -- \
    "$sc" collect --db "$db" --device c --small --schedules 2 --remeasure "$pipe"
ok collect_remeasure_stored_count "$(grep -q ' 3 stored stale schedules read back, 0 whose text' "$err"; echo $?)"
ok collect_remeasure_stored_rows "$(sqlite3 "$db" "SELECT count(*) FROM measurements WHERE version LIKE '% cg%'" | grep -qx 6; echo $?)"
ok collect_remeasure_other_row_kept "$(sqlite3 "$db" "SELECT count(*) FROM measurements WHERE version = 'aa12d84'" | grep -qx 1; echo $?)"
case_ collect_remeasure_stored_done 0 -e ' 0 stored stale schedules read back' -- \
    "$sc" collect --db "$db" --device c --small --schedules 2 --remeasure "$pipe"
ok collect_remeasure_stored_none "$(grep -q 'collect: 0 measured, .*2 already stored' "$err"; echo $?)"
# --add-kernel-times: measurements without kernel times (measured before
# collect timed kernels) are measured again and replaced, the others kept
rows=$(sqlite3 "$db" 'SELECT count(*) FROM measurements')
sqlite3 "$db" 'UPDATE measurements SET kernel_ms = NULL WHERE id IN (SELECT id FROM measurements ORDER BY id LIMIT 2)'
case_ collect_add_kernel_times 0 -e 'collect: 2 measured, 0 failed, 0 wrong.* 4 already stored' -- \
    "$sc" collect --db "$db" --device c --small --schedules 6 --add-kernel-times "$pipe"
ok collect_add_kernel_times_all "$(sqlite3 "$db" 'SELECT count(*) FROM measurements WHERE kernel_ms IS NULL' | grep -qx 0; echo $?)"
ok collect_add_kernel_times_in_place "$(sqlite3 "$db" 'SELECT count(*) FROM measurements' | grep -qx "$rows"; echo $?)"
# a stale stored schedule whose text no longer parses (the schedule
# language changed) is counted and left, its measurement kept
sqlite3 "$db" "UPDATE measurements SET version = 'aa12d84' WHERE id = (SELECT max(id) FROM measurements)"
sqlite3 "$db" "UPDATE schedules SET text = 'schedule edge;' || char(10) || 'out: sideways;' || char(10) WHERE id = (SELECT schedule FROM measurements WHERE id = (SELECT max(id) FROM measurements))"
case_ collect_remeasure_unreadable 0 -e ' 0 stored stale schedules read back, 1 whose text no longer parses left alone' -- \
    "$sc" collect --db "$db" --device c --small --schedules 2 --remeasure "$pipe"
ok collect_remeasure_unreadable_kept "$(sqlite3 "$db" "SELECT count(*) FROM measurements WHERE version = 'aa12d84'" | grep -qx 2; echo $?)"

# the beam-search sampler (the learned model's batches, with dropout)
case_ collect_beam 0 -e 'collect: [1-9][0-9]* measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/b.db" --device c --small --schedules 6 --sampler beam --weights weights/pocl.weights "$pipe"
case_ collect_bad_sampler 2 -e "--sampler: 'walk' is not one of random, shapes, beam, picks" -- \
    "$sc" collect --db "$tmp/b.db" --device c --sampler walk "$pipe"
case_ collect_weights_alone 2 -e '--weights is an option of --sampler beam and picks' -- \
    "$sc" collect --db "$tmp/b.db" --device c --weights weights/pocl.weights "$pipe"
case_ collect_missing_weights 1 -e 'nope.weights' -- \
    "$sc" collect --db "$tmp/b.db" --device c --sampler beam --weights "$tmp/nope.weights" "$pipe"
ok collect_missing_weights_no_db "$([ ! -e "$tmp/nodb.db" ] && "$sc" collect --db "$tmp/nodb.db" --device c \
    --sampler beam --weights "$tmp/nope.weights" "$pipe" >/dev/null 2>&1; [ $? -eq 1 ] && [ ! -e "$tmp/nodb.db" ]; echo $?)"
# no --weights: the default model for the device's target (the PoCL one for C)
case_ collect_beam_default_weights 0 -e 'collect: [1-9][0-9]* measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/b2.db" --device c --small --schedules 3 --sampler beam "$pipe"
case_ collect_bad_dropout 2 -e '--dropout: expected a probability' -- \
    "$sc" collect --db "$tmp/b.db" --device c --sampler beam --dropout 1.5 "$pipe"

# --unroll-whole: random walks of the whole space (at the small size the
# pruning leaves too few blocks for it) also unroll unsharp's channel of 3
# whole, and every one is checked before it is stored
case_ collect_unroll_whole 0 -e 'collect: 16 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/uw.db" --device c --small --schedules 16 --no-prune --unroll-whole apps/unsharp.pipe
ok collect_unroll_whole_stored "$(sqlite3 "$tmp/uw.db" 'SELECT text FROM schedules' | grep -q ' c=[0-9]*x3[] ]'; echo $?)"
case_ collect_help_unroll_whole 0 -o '--unroll-whole +the space also offers a root loop of extent 3 to 7' -- "$sc" collect --help

# re-tilings of the baseline: its locations kept in every schedule stored
case_ collect_shapes 0 -e 'collect: 6 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/sh.db" --device c --small --schedules 6 --sampler shapes "$pipe"
ok collect_shapes_locations "$(sqlite3 "$tmp/sh.db" 'SELECT text FROM schedules' | sed -n 's/^\([a-z_0-9]*\): \(inline\|root\|block of [a-z_0-9]*\|thread of [a-z_0-9]*\).*/\1 \2/p' | sort | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ' | grep -qx '6 '; echo $?)"
ok collect_shapes_tilings "$(sqlite3 "$tmp/sh.db" 'SELECT count(DISTINCT text) FROM schedules' | grep -qx 6; echo $?)"
case_ collect_shapes_resume 0 -e 'collect: 0 measured, .*6 already stored' -- \
    "$sc" collect --db "$tmp/sh.db" --device c --small --schedules 6 --sampler shapes "$pipe"

# the model's picks, then their re-tilings: the best predicted of a batch
# is among them (the C device schedules for a100), and every other
# schedule has the locations of one of the four picks
case_ collect_picks 0 -e 'collect: 8 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/pk.db" --device c --small --schedules 8 --sampler picks --weights weights/pocl.weights "$pipe"
best=$("$sc" schedule "$pipe" --small --strategy oneshot --weights weights/pocl.weights --target a100 | grep -v '^#')
ok collect_picks_best "$(sqlite3 "$tmp/pk.db" 'SELECT text FROM schedules' | tr -d '\n' | grep -qF "$(printf '%s' "$best" | tr -d '\n')"; echo $?)"
locs() { sed -n 's/^\([a-z_0-9]*\): \(inline\|root\|block of [a-z_0-9]*\|thread of [a-z_0-9]*\).*/\1 \2/p'; }
ok collect_picks_locations "$(n=$(sqlite3 "$tmp/pk.db" "SELECT replace(text, char(10), '|') FROM schedules" | while read -r t; do printf '%s\n' "$t" | tr '|' '\n' | locs | tr '\n' ';'; echo; done | sort -u | wc -l); [ "$n" -ge 1 ] && [ "$n" -le 4 ]; echo $?)"
case_ collect_picks_resume 0 -e 'collect: 0 measured, .*8 already stored' -- \
    "$sc" collect --db "$tmp/pk.db" --device c --small --schedules 8 --sampler picks --weights weights/pocl.weights "$pipe"

# the picks of a mean of models, as the searches' --weights A,B: one-shot's
# pick with the same two is among them; the default is the shipped six
# (PoCL's: the C device schedules for a100, whose default is cuda.weights)
case_ collect_picks_mean 0 -e 'collect: the model: the mean of weights/pocl.weights,weights/pocl-2.weights' -- \
    "$sc" collect --db "$tmp/pm.db" --device c --small --schedules 6 --sampler picks \
    --weights weights/pocl.weights,weights/pocl-2.weights "$pipe"
best2=$("$sc" schedule "$pipe" --small --strategy oneshot --weights weights/pocl.weights,weights/pocl-2.weights --target a100 | grep -v '^#')
ok collect_picks_mean_best "$(sqlite3 "$tmp/pm.db" 'SELECT text FROM schedules' | tr -d '\n' | grep -qF "$(printf '%s' "$best2" | tr -d '\n')"; echo $?)"
case_ collect_picks_default_mean 0 -e 'collect: the model: the mean of .*pocl.weights,.*pocl-2.weights,.*pocl-6.weights' -- \
    "$sc" collect --db "$tmp/pd.db" --device opencl --small --schedules 2 --sampler picks "$pipe"
ok collect_picks_bad_member_no_db "$("$sc" collect --db "$tmp/pb.db" --device c --sampler picks \
    --weights weights/pocl.weights,"$tmp/nope.weights" "$pipe" 2>"$tmp/pb.err"; [ $? -eq 1 ] && [ ! -e "$tmp/pb.db" ] && grep -q 'nope.weights' "$tmp/pb.err"; echo $?)"

# random pipelines (random-pipeline's generator), recorded by seed
case_ collect_random 0 -e 'collect: 4 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/r.db" --device c --small --random 2 --first-seed 5 --schedules 2
ok collect_random_sources "$(sqlite3 "$tmp/r.db" 'SELECT source FROM pipelines ORDER BY source' | tr '\n' ' ' | grep -qx 'random:seed=5 random:seed=6 '; echo $?)"
case_ collect_bad_random 2 -e '--random: expected' -- "$sc" collect --db "$db" --device c --random x
# the lookups set: its own names and sources, beside the classic ones in one store
case_ collect_random_lookups 0 -e 'collect: 2 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/r.db" --device c --small --random 1 --first-seed 5 --ops lookups --schedules 2
ok collect_random_lookups_source "$(sqlite3 "$tmp/r.db" "SELECT name || ' ' || source FROM pipelines WHERE source LIKE '%ops=%'" | grep -qx 'random_lookups_5 random:ops=lookups:seed=5'; echo $?)"
ok collect_random_lookups_classic_kept "$(sqlite3 "$tmp/r.db" "SELECT count(*) FROM pipelines WHERE source LIKE 'random:seed=%'" | grep -qx 2; echo $?)"
case_ collect_random_layers 0 -e 'collect: 1 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$tmp/r.db" --device c --small --random 1 --first-seed 24 --ops layers --schedules 1
ok collect_random_layers_source "$(sqlite3 "$tmp/r.db" "SELECT name || ' ' || source FROM pipelines WHERE source LIKE '%layers%'" | grep -qx 'random_layers_24 random:ops=layers:seed=24'; echo $?)"
case_ collect_bad_ops 2 -e "--ops: 'gathers' is not one of classic, lookups, layers" -- \
    "$sc" collect --db "$db" --device c --random 1 --ops gathers
case_ collect_ops_alone 2 -e '--ops is an option of --random N' -- "$sc" collect --db "$db" --device c --ops lookups "$pipe"

# export, import elsewhere, export again: the same bytes
case_ samples_export 0 -o 'wrote .*: 7 samples and failures' -- "$sc" samples --db "$db" export "$tmp/s.txt.xz"
case_ samples_import 0 -o '7 samples and failures added' -- "$sc" samples --db "$tmp/t.db" import "$tmp/s.txt.xz"
"$sc" samples --db "$tmp/t.db" export "$tmp/t.txt.xz" >/dev/null
ok samples_round_trip "$(cmp -s <(xz -dc "$tmp/s.txt.xz") <(xz -dc "$tmp/t.txt.xz"); echo $?)"
case_ samples_import_again 0 -o '0 samples and failures added' -- "$sc" samples --db "$tmp/t.db" import "$tmp/s.txt.xz"
head -c 200 "$tmp/s.txt.xz" >"$tmp/cut.txt.xz"
case_ samples_import_truncated 1 -e 'not a valid xz file.*nothing was imported' -- \
    "$sc" samples --db "$tmp/t.db" import "$tmp/cut.txt.xz"
case_ samples_missing_db 1 -e 'no such database' -- "$sc" samples --db "$tmp/none.db" stats
case_ samples_bad_verb 2 -e "'frob' is not one of stats, export, import" -- "$sc" samples --db "$db" frob
case_ samples_export_no_file 2 -e 'export needs a FILE' -- "$sc" samples --db "$db" export

# start_collect DB N: a collection of 12 schedules on OpenCL in the
# background ($pid), returning once DB holds N measurements (or after 60 s)
start_collect() {
    "$sc" collect --db "$1" --device opencl --small --schedules 12 --jobs 2 "$pipe" >"$1.log" 2>&1 &
    pid=$!
    for i in $(seq 1 600); do
        n=$(sqlite3 "$1" 'SELECT count(*) FROM measurements' 2>/dev/null || echo 0)
        [ "${n:-0}" -ge "$2" ] && break
        sleep 0.1
    done
}

# killed at any instant: SIGKILL after the first results on OpenCL (each
# schedule measured in a child process), then a rerun completes the set
# with no duplicate; the database holds only whole samples throughout
kdb=$tmp/k.db
start_collect "$kdb" 3
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
n1=$(sqlite3 "$kdb" 'SELECT count(*) FROM measurements')
f1=$(sqlite3 "$kdb" 'SELECT count(*) FROM failures')
ok collect_killed_kept_samples "$([ "$n1" -ge 3 ] && [ "$n1" -lt 12 ]; echo $?)"
ok collect_killed_no_half_rows "$(sqlite3 "$kdb" 'SELECT count(*) FROM schedules s WHERE NOT EXISTS (SELECT 1 FROM measurements m WHERE m.schedule = s.id) AND NOT EXISTS (SELECT 1 FROM failures f WHERE f.schedule = s.id)' | grep -qx 0; echo $?)"
case_ collect_after_kill 0 -e "already stored" -- \
    "$sc" collect --db "$kdb" --device opencl --small --schedules 12 --jobs 2 "$pipe"
ok collect_after_kill_counts "$(grep -q "collect: $((12 - n1 - f1)) measured.* $((n1 + f1)) already stored" "$err"; echo $?)"
ok collect_after_kill_total "$(sqlite3 "$kdb" 'SELECT count(*) FROM schedules' | grep -qx 12; echo $?)"
ok collect_after_kill_unique "$(sqlite3 "$kdb" 'SELECT count(DISTINCT text) FROM schedules' | grep -qx 12; echo $?)"

# SIGINT: stops after the schedule being measured, stores no failure for it
idb=$tmp/i.db
start_collect "$idb" 2
kill -INT $pid
wait $pid
rc=$?
ok collect_sigint_exit "$rc"
ok collect_sigint_says_stopped "$(grep -q 'stopped: run again to resume' "$idb.log"; echo $?)"
ok collect_sigint_no_failures "$(sqlite3 "$idb" 'SELECT count(*) FROM failures' | grep -qx 0; echo $?)"
# --remeasure on a CPU (PoCL): generation 7 changed only the code of
# schedules that stage in registers, so of four generation-6 results
# (the baseline, one point a thread; the random draw, bx in out's threads
# of one point each; bx in out's threads of 2 x 3 points, which stages
# in; and a schedule whose out stages bx) the two that stage are timed
# again and the other two kept
sdb=$tmp/staged.db
spipe=$tmp/st.pipe
cat >"$spipe" <<'PIPE'
pipeline st;
input u16 in(66, 52);
bx(x, y) = u16((u32(in(x, y)) + in(x + 1, y)) / 2);
out(x, y) = u16((u32(bx(x, y)) + bx(x, y + 1) + bx(x, y + 2)) / 3);
output out(64, 48);
PIPE
# stale_all TEXT GEN: the schedule TEXT stored with a copy of the first
# result, then every result of $sdb marked as of code generation GEN
stale_all() {
    sqlite3 "$sdb" "INSERT INTO schedules(pipeline, text, hash0, hash1, hash2, hash3) VALUES (1, '$1', 'h', 'h', 'h', 'h')"
    sqlite3 "$sdb" "INSERT INTO measurements(schedule, device, ms, ref_ms, samples, runs, kernels, check_result, sizes, date, version) SELECT (SELECT max(id) FROM schedules), device, ms, ref_ms, samples, runs, kernels, check_result, sizes, date, version FROM measurements LIMIT 1"
    sqlite3 "$sdb" "UPDATE measurements SET version = 'abc cg$2'"
}
case_ collect_cpu_two 0 -e 'collect: 2 measured, 0 failed' -- \
    "$sc" collect --db "$sdb" --device opencl --schedules 2 "$spipe"
staged_text=$(printf 'schedule st;\nout: root [x=16x2 y=4x2];\nbx: root [x=32x1 y=8x1];\n')
stale_all "$staged_text" 6
staged_thread=$(printf 'schedule st;\nout: root [x=8x2 y=4x3];\nbx: thread of out;\n')
stale_all "$staged_thread" 6
case_ collect_cpu_staged_only 0 -e 'collect: 2 measured, 0 failed, 0 wrong.* 2 already stored' -- \
    "$sc" collect --db "$sdb" --device opencl --schedules 2 --remeasure "$spipe"
gen=$(sed -n 's/^#define CG_GENERATION \([0-9]*\)$/\1/p' src/codegen/codegen.h)
ok collect_cpu_staged_retimed "$(sqlite3 "$sdb" "SELECT version FROM measurements WHERE schedule = (SELECT max(id) FROM schedules)" | grep -q " cg$gen\$"; echo $?)"
ok collect_cpu_plain_kept "$(sqlite3 "$sdb" "SELECT s.text FROM measurements m JOIN schedules s ON s.id = m.schedule WHERE m.version = 'abc cg6'" | grep -c 'root \[x=64x1 y=1x1\]' | grep -qx 2; echo $?)"
# --remeasure of generation-7 results: generation 8 changed only the code
# of schedules with a thread-level Func of 16 to 63 points a thread, so of
# the five (the four above and bx in out's threads of 1 x 18 points) that
# one is timed again, and one more whose u16 bx has a partial tile
# (50 rows in tiles of 8), whose small kernel generation 18 launches
# apart (CG_CODE_INTERIOR before generation 11)
thr_text=$(printf 'schedule st;\nout: root [x=16x1 y=3x16];\nbx: thread of out;\n')
stale_all "$thr_text" 7
case_ collect_thread_unrolled_only 0 -e 'collect: 2 measured, 0 failed, 0 wrong' -- \
    "$sc" collect --db "$sdb" --device opencl --schedules 2 --remeasure "$spipe"
ok collect_thread_unrolled_retimed "$(sqlite3 "$sdb" "SELECT version FROM measurements WHERE schedule = (SELECT max(id) FROM schedules)" | grep -q " cg$gen\$"; echo $?)"
ok collect_thread_others_kept "$(sqlite3 "$sdb" "SELECT count(*) FROM measurements WHERE version = 'abc cg7'" | grep -qx 3; echo $?)"
exit $failed
