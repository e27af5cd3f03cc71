#!/usr/bin/env bash
# Runs `stagecraft check` on every bad input in tests/bad/ and checks the
# diagnostics.  Each file starts with one or more lines
#     # expect: LINE:COL: <a substring of the error message>
# meaning that some line of stderr starts with FILE:LINE:COL: and contains
# the substring (LINE:COL 0:0 stands for an error about the whole file,
# printed as "FILE: error: ...").  A line "#! args: ..." gives extra
# options for the command (--small, --set NAME=V).  Every file must exit
# with status 1 (bad input), within 10 s, without a crash.  The empty file,
# which cannot carry an expect line, is made here.  One PASS/FAIL line per
# file.  BUILD (default: build) is where the stagecraft binary is.
source "$(dirname "$0")/cli_lib.sh" test_bad_inputs
bin=$sc

# The generated cases: an empty file and one holding only blank space.
: >"$tmp/empty.pipe"
printf '\n  \t\n\n' >"$tmp/blank.pipe"
gen_expect() { echo "1:1: the file is empty"; }

failed=0
# check FILE EXPECT... : runs the checker and prints PASS or FAIL.
check() {
    local f=$1 name; shift
    name=$(basename "$f" .pipe)
    local args=() line
    for line in "${head[@]}"; do
        [[ $line == '#! args:'* ]] && read -r -a args <<<"${line#'#! args:'}"
    done
    local err rc
    err=$(timeout 10 "$bin" check "$f" "${args[@]}" 2>&1 >/dev/null)
    rc=$?
    local why=""
    if [ "$rc" -eq 124 ]; then why="timed out"
    elif [ "$rc" -ge 128 ]; then why="crashed (exit status $rc)"
    elif [ "$rc" -ne 1 ]; then why="exit status $rc, expected 1"
    elif [ $# -eq 0 ]; then why="no '# expect:' line"
    fi
    local exp
    for exp in "$@"; do
        [ -n "$why" ] && break
        local loc=${exp%%: *} sub=${exp#*: } prefix
        if [ "$loc" = "0:0" ]; then prefix="$f: error: "; else prefix="$f:$loc: error: "; fi
        local found=0 l
        while IFS= read -r l; do
            if [[ "$l" == "$prefix"* && "$l" == *"$sub"* ]]; then found=1; break; fi
        done <<<"$err"
        [ "$found" -eq 1 ] || why="no error '$prefix...$sub...'"
    done
    if [ -z "$why" ]; then
        echo "PASS $name"
    else
        echo "FAIL $name: $why"
        echo "$err" | head -n 10 | cut -c1-300 | sed 's/^/    /'
        failed=1
    fi
}

# head: the first lines of the file being checked (NUL bytes dropped).
for f in tests/bad/*.pipe; do
    mapfile -t -n 20 head <"$f" 2>/dev/null
    expects=()
    for line in "${head[@]}"; do
        [[ $line == '# expect: '* ]] && expects+=("${line#'# expect: '}")
    done
    check "$f" "${expects[@]}"
done
head=()
check "$tmp/empty.pipe" "$(gen_expect)"
check "$tmp/blank.pipe" "$(gen_expect)"
exit $failed
