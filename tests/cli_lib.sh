# cli_lib.sh - sourced by the command-line test scripts (tests/test_cli*.sh,
# tests/test_bad_inputs.sh).  Moves to the project root, sets
#   sc      the stagecraft binary (BUILD, default build, relative to where
#           the script was started)
#   tmp     a scratch directory removed on exit
#   failed  0, set to 1 by a failing case
# and defines case_ and ok.  $1: the calling script's name, for the
# message when the binary is missing.
cli_start=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
build=${BUILD:-build}
case $build in /*) ;; *) build=$cli_start/$build ;; esac
sc=$build/stagecraft
[ -x "$sc" ] || { echo "FAIL $1 ($sc not built)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
out=$tmp/out.txt
err=$tmp/err.txt

# case_ NAME STATUS [-o REGEX] [-e REGEX] -- COMMAND...: runs COMMAND (at
# most CASE_TIMEOUT seconds, default 60) and checks its exit status, and
# that stdout (-o) and stderr (-e) match the extended regular expressions.
case_() {
    local name=$1 want=$2; shift 2
    local ore="" ere=""
    while [ "$1" != "--" ]; do
        case $1 in -o) ore=$2 ;; -e) ere=$2 ;; esac
        shift 2
    done
    shift
    timeout "${CASE_TIMEOUT:-60}" "$@" >"$out" 2>"$err"
    local rc=$? why=""
    if [ "$rc" -ne "$want" ]; then why="exit status $rc, expected $want"
    elif [ -n "$ore" ] && ! grep -Eq -- "$ore" "$out"; then why="stdout does not match /$ore/"
    elif [ -n "$ere" ] && ! grep -Eq -- "$ere" "$err"; then why="stderr does not match /$ere/"
    fi
    if [ -z "$why" ]; then
        echo "PASS $name"
    else
        echo "FAIL $name: $why"
        head -n 5 "$out" "$err" | sed 's/^/    /'
        failed=1
    fi
}

# ok NAME STATUS: a PASS/FAIL line for a shell condition already evaluated
# (STATUS 0 passes).
ok() { if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi; }
