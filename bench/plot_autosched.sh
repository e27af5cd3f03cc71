#!/usr/bin/env bash
# plot_autosched.sh - the plots of bench_autosched's output, drawn with
# gnuplot:
#
#   bench/plot_autosched.sh [DIR] [--modes F] [--autotune F] [--out DIR]
#
# reads DIR/modes.tsv and DIR/autotune.tsv (DIR defaults to .; --modes and
# --autotune name the files themselves) and writes
#
#   OUT/autosched_speedup.png  one group of bars per app, one bar per mode:
#                              the speed-up over the app's baseline, on a
#                              log scale (a bar grows up from 1 when the mode
#                              is faster, down when it is slower)
#   OUT/autotune_curve.png     the best time found against the samples
#                              measured, one line per app, each divided by
#                              the best of its first batch
#
# with OUT = docs/img unless --out says otherwise.
#
# modes.tsv: a header `app mode ms speedup` (tab-separated), then one row
# per app and mode.  Modes are drawn in this order, those present only:
# baseline (the line at 1), random, oneshot, topK (bench_autosched's top5
# with --k 5), autotune, halide-anderson2021, halide-li2018; others after
# them in the order met.
# A speedup that is not a number ("-", empty: bench/halide_compare.py
# writes none) is the app's baseline ms over the row's ms; a row whose ms
# is not a number either is skipped, and so is an app with neither.  When
# an app and mode appear twice, the later row wins (files are appended to).
#
# autotune.tsv: a header `app samples best_ms`, then rows in any order.
#
# Needs gnuplot with the pngcairo or png terminal (Debian: apt-get install
# gnuplot-nox).  Nothing in `make test` needs it.
set -euo pipefail

dir=.
modes= autotune= out=docs/img
while [ $# -gt 0 ]; do
    case $1 in
        --modes) modes=$2; shift 2 ;;
        --autotune) autotune=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "plot_autosched.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) dir=$1; shift ;;
    esac
done
modes=${modes:-$dir/modes.tsv}
autotune=${autotune:-$dir/autotune.tsv}
if [ ! -f "$modes" ] && [ ! -f "$autotune" ]; then
    echo "plot_autosched.sh: neither $modes nor $autotune exists" >&2
    exit 1
fi

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "plot_autosched.sh: gnuplot is not installed (Debian: apt-get install gnuplot-nox)" >&2
    exit 1
fi
term=png
if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then term=pngcairo; fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- speed-up per app and mode ------------------------------------------------
# awk writes one data block per mode (x centre, speed-up, bar half-width)
# and the gnuplot commands naming apps and modes.
if [ -f "$modes" ]; then
    awk -F'\t' -v data="$work/modes.dat" -v cmds="$work/modes.gp" '
        function num(s) { return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
        # where a mode is drawn: the order of the modes below, any other
        # after them in the order met
        function rank(m) {
            if (m == "random") return 1
            if (m == "oneshot") return 2
            if (m ~ /^top[0-9]+$/) return 3
            if (m == "autotune") return 4
            if (m == "halide-anderson2021") return 5
            if (m == "halide-li2018") return 6
            return 7
        }
        BEGIN { nmodes = 0; napps = 0 }
        NR == 1 && $1 == "app" { next }
        NF >= 3 {
            if (!($1 in appidx)) { appidx[$1] = ++napps; app[napps] = $1 }
            if ($2 == "baseline") { if (num($3)) base[$1] = $3; next }
            if (!($2 in known)) { known[$2] = ++nmodes; mode[nmodes] = $2 }
            ms[$1, $2] = $3; sp[$1, $2] = $4; have[$1, $2] = 1
        }
        END {
            # the modes by rank, those of one rank in the order met
            n = 0
            for (r = 1; r <= 7; r++)
                for (i = 1; i <= nmodes; i++)
                    if (rank(mode[i]) == r) sorted[++n] = i
            # modes with at least one bar, in that order
            used = 0
            for (mi = 1; mi <= nmodes; mi++) {
                m = sorted[mi]
                any = 0
                for (a = 1; a <= napps; a++) {
                    k = app[a] SUBSEP mode[m]
                    if (!(k in have)) continue
                    s = num(sp[k]) ? sp[k] + 0 : (num(ms[k]) && ms[k] > 0 && app[a] in base) ? base[app[a]] / ms[k] : -1
                    if (s > 0) {
                        val[a, m] = s; any = 1
                        if (!lo || s < lo) lo = s
                        if (s > hi) hi = s
                    }
                }
                if (any) usedmode[++used] = m
            }
            if (used == 0) { print "no rows with a speed-up" > "/dev/stderr"; exit 3 }
            w = 0.8 / used
            for (u = 1; u <= used; u++) {
                m = usedmode[u]
                printf "# %s\n", mode[m] > data
                for (a = 1; a <= napps; a++)
                    if ((a, m) in val) printf "%g %g %g\n", a - 0.4 + (u - 0.5) * w, val[a, m], w / 2 > data
                printf "\n\n" > data
            }
            tics = ""
            for (a = 1; a <= napps; a++) tics = tics (a > 1 ? ", " : "") sprintf("\"%s\" %d", app[a], a)
            printf "set xtics (%s) rotate by -35\n", tics > cmds
            printf "set xrange [0.4:%g]\n", napps + 0.6 > cmds
            printf "nmodes = %d\n", used > cmds
            # the range holds 1, where the bars start
            ylo = (lo < 1 ? lo : 1) / 1.25; yhi = (hi > 1 ? hi : 1) * 1.25
            printf "set yrange [%g:%g]\n", ylo, yhi > cmds
            # tics at the powers of 2 in the range
            ytics = ""
            for (k = int(log(ylo) / log(2)) - 1; 2 ^ k <= yhi; k++)
                if (2 ^ k >= ylo) ytics = ytics (ytics == "" ? "" : ", ") sprintf("\"%g\" %g", 2 ^ k, 2 ^ k)
            printf "set ytics (%s)\n", ytics > cmds
            names = ""
            for (u = 1; u <= used; u++) names = names (u > 1 ? " " : "") mode[usedmode[u]]
            printf "modes = \"%s\"\n", names > cmds
            printf "set terminal TERM size %d,600\n", 400 + 60 * napps > cmds
        }' "$modes"
    sed -i "s/TERM/$term/" "$work/modes.gp"
    gnuplot <<EOF
load "$work/modes.gp"
set termoption noenhanced
set output "$out/autosched_speedup.png"
set title "speed-up over the baseline schedule (log scale)"
set ylabel "baseline ms / mode ms"
set logscale y
set grid ytics
set key outside right top
set style fill solid 0.85 border -1
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb "black"
set bmargin 7
# each bar from 1 to its speed-up: x, y, x low, x high, y low, y high
plot for [i=0:nmodes-1] "$work/modes.dat" index i using 1:2:(\$1-\$3):(\$1+\$3):(1):2 \
     with boxxyerror lc i+1 title word(modes, i+1)
EOF
    echo "wrote $out/autosched_speedup.png"
else
    echo "plot_autosched.sh: no $modes, no speed-up chart" >&2
fi

# ---- autotuning curves ------------------------------------------------------------
if [ -f "$autotune" ]; then
    awk -F'\t' -v data="$work/tune.dat" -v cmds="$work/tune.gp" '
        function num(s) { return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
        NR == 1 && $1 == "app" { next }
        NF >= 3 && num($2) && num($3) && $3 > 0 {
            if (!($1 in idx)) { idx[$1] = ++n; app[n] = $1; cnt[n] = 0 }
            a = idx[$1]; k = ++cnt[a]; xs[a, k] = $2 + 0; ys[a, k] = $3 + 0
        }
        END {
            if (n == 0) { print "no autotuning rows" > "/dev/stderr"; exit 3 }
            names = ""
            for (a = 1; a <= n; a++) {
                # sort the rows of the app by samples (insertion sort: few rows)
                for (i = 2; i <= cnt[a]; i++)
                    for (j = i; j > 1 && xs[a, j - 1] > xs[a, j]; j--) {
                        t = xs[a, j]; xs[a, j] = xs[a, j - 1]; xs[a, j - 1] = t
                        t = ys[a, j]; ys[a, j] = ys[a, j - 1]; ys[a, j - 1] = t
                    }
                printf "# %s\n", app[a] > data
                for (i = 1; i <= cnt[a]; i++) printf "%g %g\n", xs[a, i], ys[a, i] / ys[a, 1] > data
                printf "\n\n" > data
                names = names (a > 1 ? " " : "") app[a]
            }
            printf "napps = %d\napps = \"%s\"\n", n, names > cmds
        }' "$autotune"
    gnuplot <<EOF
load "$work/tune.gp"
set terminal $term size 1000,600
set termoption noenhanced
set output "$out/autotune_curve.png"
set title "autotuning: best time against samples measured"
set xlabel "samples measured"
set ylabel "best ms / best ms of the first batch"
set grid
set key outside right top
plot for [i=0:napps-1] "$work/tune.dat" index i using 1:2 with linespoints lw 2 pt ((i % 13) + 1) \
     lc ((i % 8) + 1) title word(apps, i+1)
EOF
    echo "wrote $out/autotune_curve.png"
else
    echo "plot_autosched.sh: no $autotune, no autotuning curve" >&2
fi
