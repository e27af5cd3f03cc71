#!/usr/bin/env bash
# Runs every test program in BUILD/tests and every script tests/*.sh, then
# prints the closing line "N passed, N failed".  Each test program prints
# one "PASS name" or "FAIL name" line per case.
#
# TEST_JOBS (default: the core count, at most 4) of them run at once; each
# one's output goes to a log of its own and is reported in the fixed order
# below, with its seconds, once all have finished, so the report reads the
# same at any TEST_JOBS.  (On a fresh machine most of the suite's time is PoCL
# compiling kernels, one process at a time: two at once halve it on two
# cores.)
build=${1:-build}
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ "$jobs" -gt 4 ] && jobs=4
[ "$jobs" -lt 1 ] && jobs=1
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

names=()
cmds=()
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    if [ "$(basename "$t")" = test_schedules ] && [ -z "${SEEDS:-}" ]; then
        # the longest by far (12 min on a cold cache): its five seeds in
        # two programs, CUDA compiled for the first seed only, as in one
        names+=("test_schedules(seeds1-2)" "test_schedules(seeds3-5)")
        cmds+=("env SEEDS=1-2 $t" "env SEEDS=3-5 CUDA_SEEDS=0 $t")
        continue
    fi
    names+=("$(basename "$t")")
    cmds+=("$t")
done
for s in tests/test_*.sh; do
    [ -f "$s" ] || continue
    names+=("$(basename "$s")")
    cmds+=("env BUILD=$build bash $s")
done

# the pool: start each test when fewer than $jobs run, the longest
# (on a cold PoCL kernel cache) first, so that none of them starts last
slow=" test_schedules(seeds1-2) test_schedules(seeds3-5) test_oneshot test_legal test_randpipe \
test_cli_autotune.sh test_host test_beam test_cli_collect.sh test_cli_topk.sh "
order=()
for w in $slow; do
    for i in "${!names[@]}"; do [ "${names[$i]}" = "$w" ] && order+=("$i"); done
done
for i in "${!names[@]}"; do [[ $slow == *" ${names[$i]} "* ]] || order+=("$i"); done
running=0
for i in "${order[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    ( t0=$SECONDS; ${cmds[$i]} >"$logs/$i.log" 2>&1; echo $? >"$logs/$i.rc"; echo $((SECONDS - t0)) >"$logs/$i.s" ) &
    running=$((running + 1))
done
wait

passed=0
failed=0
for i in "${!names[@]}"; do
    name=${names[$i]}
    log="$logs/$i.log"
    rc=$(cat "$logs/$i.rc" 2>/dev/null || echo 127)
    p=$(grep -c '^PASS ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "FAIL $name (exit status $rc, no failing case reported)"
    fi
    grep '^FAIL ' "$log" | sed "s/^/[$name] /"
    if [ "$f" -ne 0 ]; then
        echo "---- output of $name ----"; tail -n 40 "$log"; echo "----"
    fi
    echo "$name: $p passed, $f failed ($(cat "$logs/$i.s" 2>/dev/null || echo '?') s)"
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
