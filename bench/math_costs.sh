#!/usr/bin/env bash
# math_costs.sh - what one call of each math function costs on a device,
# in multiply-adds of one lane (docs/benchmarks.md; the weights of the
# math_cost feature tried on 2026-12-02, docs/costmodel.md).
#
#   bench/math_costs.sh [--device opencl|c] [--math fast|exact] [--size N]
#        [--samples 3] [--out DIR]
#
# For each function f, a pipeline over an N x N f32 input (default 2048)
# applies f four times in a chain, each call's argument an affine function
# of the previous result (v * 0.5 + 1.25, so the values stay in f's
# domain and nothing folds); a chain of 64 multiply-adds measures one
# operation, and a chain of four affine steps alone the loads and stores.
# Per function: the time, ns per call ((time - chain of steps alone) /
# (4 N^2)) and that over ns per multiply-add.  Times are one run's
# (`stagecraft bench --samples`, the least sample): run it on an otherwise
# idle machine.  DIR (default: a fresh temporary folder, printed) keeps the
# pipelines and bench's output.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
sc=${STAGECRAFT:-$here/build/stagecraft}
device=opencl math=fast size=2048 samples=3 out=""
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --device) device=${2:-}; shift 2 ;;
        --math) math=${2:-}; shift 2 ;;
        --size) size=${2:-}; shift 2 ;;
        --samples) samples=${2:-}; shift 2 ;;
        --out) out=${2:-}; shift 2 ;;
        -h|--help) usage ;;
        *) echo "math_costs.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
case $size in ''|*[!0-9]*) echo "math_costs.sh: --size: expected a number of points a side, got '$size'" >&2; exit 2 ;; esac
case $samples in ''|*[!0-9]*|0) echo "math_costs.sh: --samples: expected a positive number, got '$samples'" >&2; exit 2 ;; esac
[ -x "$sc" ] || { echo "math_costs.sh: $sc: not built (make all)" >&2; exit 1; }
if [ -z "$out" ]; then out=$(mktemp -d /tmp/math_costs.XXXXXX); echo "keeping the pipelines and timings in $out"; fi
mkdir -p "$out" || exit 1

# name and the call, V standing for its argument
fns="steps:V abs:abs(V) sqrt:sqrt(V) floor:floor(V) ceil:ceil(V) round:round(V) sin:sin(V) cos:cos(V)
     exp:exp(V) tanh:tanh(V) log:log(V) atan2:atan2(V,1.5) pow:pow(V,0.4545)"
write_pipe() {   # name expression
    printf 'pipeline m_%s;\ninput f32 in(%d, %d);\nout(x, y) = %s;\noutput out(%d, %d);\n' \
        "$1" "$size" "$size" "$2" "$size" "$size" >"$out/$1.pipe"
}
for f in $fns; do
    name=${f%%:*} call=${f#*:} x="in(x, y)"
    for i in 1 2 3 4; do x=${call//V/($x * 0.5 + 1.25)}; done
    write_pipe "$name" "$x"
done
x="in(x, y)"
for i in $(seq 1 64); do x="($x * 0.999 + 0.001)"; done
write_pipe fma "$x"

time_of() {   # name -> ms, or nothing when bench failed
    "$sc" bench "$out/$1.pipe" --device "$device" --math "$math" --samples "$samples" >"$out/$1.txt" 2>&1 &&
        sed -n 's/^time: \([0-9.e+-]*\) ms.*/\1/p' "$out/$1.txt"
}
steps=$(time_of steps) fma=$(time_of fma)
if [ -z "$steps" ] || [ -z "$fma" ]; then
    echo "math_costs.sh: the reference pipelines failed: see $out/steps.txt and $out/fma.txt" >&2
    exit 1
fi
points=$((size * size))
op_ns=$(awk -v f="$fma" -v s="$steps" -v n="$points" 'BEGIN { printf "%.6g", (f - s) * 1e6 / (n * 128) }')
if awk -v o="$op_ns" 'BEGIN { exit !(o > 0) }'; then
    echo "device $device, $math math, $size x $size points; one multiply-add of one lane: $op_ns ns (the chain of 64: $fma ms, the steps alone: $steps ms)"
else
    # the chain ran no slower than the steps alone: noise (a small --size,
    # or a loaded machine), so no call is priced in multiply-adds ('-')
    echo "device $device, $math math, $size x $size points; one multiply-add of one lane: not measured (the chain of 64: $fma ms, no slower than the steps alone: $steps ms; use a larger --size on an idle machine)"
    op_ns=0
fi
printf '%-8s %12s %12s %14s\n' function ms ns/call multiply-adds
for f in $fns; do
    name=${f%%:*}
    [ "$name" = steps ] && continue
    ms=$(time_of "$name")
    if [ -z "$ms" ]; then printf '%-8s %12s\n' "$name" "failed (see $out/$name.txt)"; continue; fi
    awk -v n="$name" -v t="$ms" -v s="$steps" -v p="$points" -v o="$op_ns" \
        'BEGIN { ns = (t - s) * 1e6 / (4 * p); if (ns < 0) ns = 0
                 if (o > 0) printf "%-8s %12.4f %12.4f %14.0f\n", n, t, ns, ns / o
                 else printf "%-8s %12.4f %12.4f %14s\n", n, t, ns, "-" }'
done
