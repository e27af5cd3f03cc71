#!/usr/bin/env bash
# kernel_prices.sh - where the learned model's prices are off, kernel by
# kernel: for every app, one-shot's pick with the given weights, each of
# its kernels timed alone beside the cost the same weights predict for it
# (`stagecraft bench --per-kernel --weights`), then two tables:
#
#   bench/kernel_prices.sh --weights-dir D[,D2...] [--apps a,b] [--small]
#        [--device opencl|c] [--runs 3] [--top 12] [--out DIR]
#
#   per app: the kernels' measured sum, their predicted sum and the ratio
#   the kernels furthest from their price (the largest |log(measured /
#   predicted)| among those taking at least 5% of their pick's time)
#
# Weights: D/APP.weights of each folder (held-out models: `make
# holdout-weights`, or `stagecraft train --hold-out APP`); several folders
# give the mean of their models, as bench_autosched's --weights-dir.  An
# app with no weights file is skipped and said so.  An app whose fast-math
# result is beyond its tolerance is timed with exact code (hist and
# lens_blur on PoCL), as bench_autosched does.
#
# DIR (default: a fresh temporary folder, printed) keeps each app's
# APP.sched and APP.pk (bench's output).  Times are one run's (the fastest
# of --runs runs of each kernel alone): run it on an otherwise idle machine.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
sc=${STAGECRAFT:-$here/build/stagecraft}
dirs="" apps="" small="" device=opencl runs=3 top=12 out=""
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --weights-dir) dirs=${2:-}; shift 2 ;;
        --apps) apps=${2:-}; shift 2 ;;
        --small) small=--small; shift ;;
        --device) device=${2:-}; shift 2 ;;
        --runs) runs=${2:-}; shift 2 ;;
        --top) top=${2:-}; shift 2 ;;
        --out) out=${2:-}; shift 2 ;;
        -h|--help) usage ;;
        *) echo "kernel_prices.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
[ -n "$dirs" ] || { echo "kernel_prices.sh: --weights-dir D[,D2...] is required" >&2; exit 2; }
[ -x "$sc" ] || { echo "kernel_prices.sh: $sc is not built (make all)" >&2; exit 2; }
for n in "$runs" "$top"; do
    case $n in ''|*[!0-9]*|0) echo "kernel_prices.sh: --runs and --top take a number >= 1, got '$n'" >&2; exit 2 ;; esac
done
IFS=, read -r -a dir_list <<<"$dirs"
for d in "${dir_list[@]}"; do
    [ -d "$d" ] || { echo "kernel_prices.sh: --weights-dir: '$d' is not a folder" >&2; exit 2; }
done
if [ -z "$apps" ]; then
    apps=$(cd "$here/apps" && ls *.pipe | sed 's/\.pipe$//' | paste -sd, -)
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/kernel_prices.XXXXXX)
mkdir -p "$out" || exit 1
echo "kernel_prices: weights $dirs, device $device${small:+, small sizes}; files in $out"

rows=$out/kernels.tsv
printf 'app\tkernel\tms\tpredicted_ms\tshare\n' >"$rows"
printf '%-26s %12s %12s %9s\n' app "measured ms" "predicted ms" "ratio"
IFS=, read -r -a app_list <<<"$apps"
for app in "${app_list[@]}"; do
    pipe=$here/apps/$app.pipe
    [ -f "$pipe" ] || { echo "kernel_prices.sh: no app '$app' (no $pipe)" >&2; exit 2; }
    w=""
    for d in "${dir_list[@]}"; do
        [ -f "$d/$app.weights" ] || { w=""; break; }
        w=${w:+$w,}$d/$app.weights
    done
    if [ -z "$w" ]; then
        printf '%-26s %s\n' "$app" "skipped: no $app.weights in every folder of $dirs"
        continue
    fi
    if ! "$sc" schedule "$pipe" $small --strategy oneshot --weights "$w" -o "$out/$app.sched" \
        >"$out/$app.schedlog" 2>&1; then
        printf '%-26s %s\n' "$app" "one-shot failed: $(tail -n 1 "$out/$app.schedlog")"
        continue
    fi
    ok=0
    for math in fast exact; do
        if "$sc" bench "$pipe" $small --device "$device" --math $math --schedule "$out/$app.sched" \
            --samples 1 --runs "$runs" --per-kernel --weights "$w" >"$out/$app.pk" 2>&1; then
            ok=1
            break
        fi
        grep -q 'beyond the tolerance' "$out/$app.pk" || break
    done
    if [ $ok = 0 ]; then
        printf '%-26s %s\n' "$app" "bench failed: $(tail -n 1 "$out/$app.pk")"
        continue
    fi
    # the header: "sum S ms; predicted P ms in all, measured / predicted R"
    sed -n 's/^per kernel .*; sum \([0-9.]*\) ms; predicted \([0-9.e+-]*\) ms in all, measured \/ predicted \([0-9.e+-]*\)).*/\1 \2 \3/p' \
        "$out/$app.pk" | awk -v a="$app" '{ printf "%-26s %12.4g %12.4g %9.3g\n", a, $1, $2, $3 }'
    # each kernel: "  NAME  MS ms  SHARE%  predicted P ms, xR  ..."
    awk -v a="$app" '$0 ~ /^  [A-Za-z_0-9]+ +[0-9.]+ ms +[0-9.]+%  predicted +[0-9.e+-]+ ms,/ {
        share = $4; sub(/%/, "", share); p = $6
        printf "%s\t%s\t%s\t%s\t%s\n", a, $1, $2, p, share }' "$out/$app.pk" >>"$rows"
done

echo
echo "the kernels furthest from their price (at least 5% of their pick's time):"
printf '%-26s %-30s %10s %12s %9s %7s\n' app kernel "ms" "predicted" "ratio" "share"
awk -F'\t' 'NR > 1 && $4 > 0 && $5 >= 5 {
    r = $3 / $4; l = log(r); if (l < 0) l = -l
    printf "%.6f\t%s\t%s\t%s\t%s\t%.3g\t%s\n", l, $1, $2, $3, $4, r, $5 }' "$rows" |
    sort -t"$(printf '\t')" -k1,1 -g -r | head -n "$top" |
    awk -F'\t' '{ printf "%-26s %-30s %10.4g %12.4g %9s %6s%%\n", $2, $3, $4, $5, $6, $7 }'
