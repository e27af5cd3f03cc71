#!/usr/bin/env bash
# fuzz_schedules.sh BUILD - make fuzz-schedules: build/tests/test_schedules
# once per app, JOBS apps at a time (default: the number of cores), with
# the SEEDS, CUDA_SEEDS, BACKENDS, APPS and MATH (exact or fast) of the
# environment.  Each app's cases are printed as its process ends, then the
# closing line "N passed, N failed".  Exit status 1 if any case failed.
build=${1:-build}
cd "$(dirname "$0")/.." || exit 2
bin=$build/tests/test_schedules
[ -x "$bin" ] || { echo "FAIL fuzz_schedules ($bin not built)"; exit 1; }
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
apps=()
for f in apps/*.pipe; do
    a=$(basename "$f" .pipe)
    case ",${APPS:-$a}," in *",$a,"*) apps+=("$a") ;; esac
done
if [ ${#apps[@]} -eq 0 ]; then
    echo "FAIL fuzz_schedules (no app in apps/ matches APPS=$APPS)"
    echo "0 passed, 1 failed"
    exit 1
fi
# One process per app; each writes its log, then prints it whole.
printf '%s\n' "${apps[@]}" | xargs -P "$jobs" -I{} sh -c \
    'APPS={} "$0" >"$1/{}.log" 2>&1; echo "exit status $?" >>"$1/{}.log"; cat "$1/{}.log"' "$bin" "$logs"
passed=$(cat "$logs"/*.log 2>/dev/null | grep -c '^PASS ')
failed=$(cat "$logs"/*.log 2>/dev/null | grep -c '^FAIL ')
# a process that died without reporting a failing case counts as one
for l in "$logs"/*.log; do
    [ -e "$l" ] || continue
    if ! grep -q '^exit status 0$' "$l" && ! grep -q '^FAIL ' "$l"; then
        echo "FAIL $(basename "$l" .log) ($(tail -n 1 "$l"), no failing case reported)"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
