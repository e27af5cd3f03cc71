#!/usr/bin/env bash
# Times the reference evaluator on every app at its paper size (and small
# size), in one run, and prints a table.  Usage: bench/eval_apps.sh [BUILD]
# The goal (issue 2): every app checked at paper size in under a minute.
set -u
build=${1:-build}
sc="$build/stagecraft"
[ -x "$sc" ] || { echo "build $sc first (make)"; exit 2; }
printf "%-26s %7s %12s %12s %10s\n" app stages small_ms paper_ms status
total=0
for f in apps/*.pipe; do
    app=$(basename "$f" .pipe)
    stages=$("$sc" check "$f" --small 2>/dev/null | sed -n 's/.* Funcs, \([0-9]*\) stages.*/\1/p')
    small=$("$sc" run "$f" --small 2>/dev/null | sed -n 's/.* in \([0-9.]*\) ms$/\1/p')
    out=$("$sc" run "$f" 2>&1)
    rc=$?
    paper=$(printf "%s\n" "$out" | sed -n 's/.* in \([0-9.]*\) ms$/\1/p')
    status=ok
    [ $rc -eq 0 ] || status="exit $rc"
    printf "%-26s %7s %12s %12s %10s\n" "$app" "${stages:-?}" "${small:-?}" "${paper:-?}" "$status"
    total=$(awk -v a="$total" -v b="${paper:-0}" 'BEGIN { printf "%.1f", a + b }')
done
printf "%-26s %7s %12s %12s\n" total "" "" "$total"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), commit $(git rev-parse --short HEAD 2>/dev/null)"
