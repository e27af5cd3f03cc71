#!/usr/bin/env bash
# Runs every test program in BUILD/tests and every script tests/*.sh, then
# prints the closing line "N passed, N failed".  Each test program prints
# one "PASS name" or "FAIL name" line per case.
build=${1:-build}
passed=0
failed=0
log=$(mktemp)
run_one() {
    local name=$1; shift
    "$@" >"$log" 2>&1
    local rc=$?
    local p f
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
    echo "$name: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
}
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for s in tests/test_*.sh; do
    [ -f "$s" ] || continue
    run_one "$(basename "$s")" env BUILD="$build" bash "$s"
done
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
