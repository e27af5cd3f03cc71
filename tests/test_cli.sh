#!/usr/bin/env bash
# The stagecraft command line: exit statuses (0 ok, 1 bad input, 2 bad
# usage), messages, file output and the size options.  One PASS/FAIL line
# per case.  BUILD (default: build) is where the stagecraft binary is.
source "$(dirname "$0")/cli_lib.sh" test_cli

# The app the file tests run: apps/box_blur.pipe (u16 in -> u16 out of the
# same size), or a stand-in of the same shape when it is not there.
app=apps/box_blur.pipe
if [ ! -f "$app" ]; then
    app=$tmp/box.pipe
    cat >"$app" <<'EOF'
size W = 1536 small 64;
size H = 2560 small 48;
input u16 in(W, H);
clamped = repeat_edge(in);
out(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y)) / 3);
output out(W, H);
EOF
fi


# ---- help and usage ------------------------------------------------------
case_ help_top 0 -o 'usage: stagecraft COMMAND' -- "$sc" --help
case_ help_word 0 -o 'usage: stagecraft COMMAND' -- "$sc" help
case_ help_h 0 -o 'usage: stagecraft COMMAND' -- "$sc" -h
for c in check run dump; do
    case_ "help_$c" 0 -o "usage: stagecraft $c FILE.pipe" -- "$sc" "$c" --help
done
case_ help_run_options 0 -o '--seed N' -- "$sc" run --help
case_ help_dump_options 0 -o 'ir|bounds|deps|ops' -- "$sc" dump -h
case_ no_arguments 2 -e 'usage:' -- "$sc"
case_ unknown_command 2 -e "unknown command 'frobnicate'" -- "$sc" frobnicate "$app"
case_ unknown_option 2 -e "unknown option '--bogus'" -- "$sc" check "$app" --bogus
case_ unknown_short_option 2 -e "unknown option '-x'" -- "$sc" run "$app" -x
case_ no_file 2 -e 'no pipeline file' -- "$sc" check --small
case_ two_files 2 -e 'more than one pipeline file' -- "$sc" check "$app" "$app"
case_ option_without_value 2 -e '--set needs a value' -- "$sc" check "$app" --set
case_ o_on_check 2 -e 'option.* of run, not check' -- "$sc" check "$app" -o "$tmp/x.npy"
case_ i_on_dump 2 -e 'option.* of run, not dump' -- "$sc" dump "$app" --what=ir -i "in=$tmp/x.npy"
case_ dump_without_what 2 -e 'dump needs --what' -- "$sc" dump "$app"
case_ dump_bogus 2 -e "--what: 'bogus' is not one of" -- "$sc" dump "$app" --what=bogus
case_ dump_bogus_separate 2 -e "'bogus'" -- "$sc" dump "$app" --what bogus
case_ what_on_check 2 -e '--what is an option of dump' -- "$sc" check "$app" --what=ir
case_ seed_negative 2 -e '--seed' -- "$sc" run "$app" --small --seed -3
case_ seed_not_number 2 -e '--seed' -- "$sc" run "$app" --small --seed=abc
case_ set_not_number 2 -e "--set: 'abc' is not a number" -- "$sc" check "$app" --set W=abc
case_ set_empty_value 2 -e "--set: '' is not a number" -- "$sc" check "$app" --set W=
case_ set_no_equals 2 -e '--set expects NAME=VALUE' -- "$sc" check "$app" --set W
case_ set_no_name 2 -e '--set expects NAME=VALUE' -- "$sc" check "$app" --set=7
case_ set_trailing_junk 2 -e 'is not a number' -- "$sc" check "$app" --set W=12px
case_ set_inf 2 -e 'is not a number' -- "$sc" check "$app" --set W=inf

# ---- bad input files (exit 1) --------------------------------------------
case_ missing_file 1 -e "$tmp/nonexistent.pipe: error: cannot open: No such file" -- \
    "$sc" check "$tmp/nonexistent.pipe"
case_ directory_as_file 1 -e 'error' -- "$sc" check "$tmp"
case_ set_unknown_name 1 -e 'there is no size or param named NOPE' -- "$sc" check "$app" --set NOPE=3
case_ set_size_fraction 1 -e 'a size must be an integer' -- "$sc" check "$app" --set W=2.5

# ---- sizes: --small and --set change what check reports ---------------------
case_ sizes_default 0 -o '^  in u16 \(1536, 2560\)$' -- "$sc" check "$app"
case_ sizes_small 0 -o '^  in u16 \(64, 48\)$' -- "$sc" check "$app" --small
case_ sizes_set 0 -o '^  out u16 \(100, 2560\)$' -- "$sc" check "$app" --set W=100
case_ sizes_set_small 0 -o '^  in u16 \(64, 7\)$' -- "$sc" check "$app" --small --set H=7
case_ sizes_set_equals 0 -o '^  in u16 \(33, 48\)$' -- "$sc" check "$app" --small --set=W=33
case_ dump_ir_small 0 -o '^input u16 in\(64, 48\);$' -- "$sc" dump "$app" --small --what=ir
case_ dump_bounds 0 -o 'out' -- "$sc" dump "$app" --small --what=bounds
case_ dump_deps 0 -- "$sc" dump "$app" --small --what=deps
case_ dump_ops 0 -- "$sc" dump "$app" --small --what=ops
# The IR text is itself a valid .pipe file.
"$sc" dump "$app" --small --what=ir >"$tmp/ir.pipe" 2>/dev/null
case_ dump_ir_checks 0 -o '^  in u16 \(64, 48\)$' -- "$sc" check "$tmp/ir.pipe"

# ---- run: outputs to .npy and .png, inputs from them ----------------------------
case_ run_summary 0 -o '^  out u16 \(64, 48\): min [0-9]' -- "$sc" run "$app" --small
case_ run_npy 0 -o "wrote $tmp/out.npy" -- "$sc" run "$app" --small -o "out=$tmp/out.npy"
ok run_npy_header "$(head -c 6 "$tmp/out.npy" 2>/dev/null | od -An -c | tr -d ' \n' | grep -q '223NUMPY'; echo $?)"
case_ run_png 0 -o "wrote $tmp/out.png" -- "$sc" run "$app" --small -o "out=$tmp/out.png"
ok run_png_header "$(head -c 4 "$tmp/out.png" 2>/dev/null | od -An -c | tr -d ' \n' | grep -q '211PNG'; echo $?)"
case_ run_first_output 0 -o "wrote $tmp/first.npy" -- "$sc" run "$app" --small -o "$tmp/first.npy"
ok run_same_bytes "$(cmp -s "$tmp/out.npy" "$tmp/first.npy"; echo $?)"
case_ run_seed 0 -- "$sc" run "$app" --small --seed 2 -o "out=$tmp/seed2.npy"
ok run_seed_differs "$(cmp -s "$tmp/out.npy" "$tmp/seed2.npy"; [ $? -eq 1 ]; echo $?)"
case_ run_unknown_output 1 -e 'has no output named nope' -- "$sc" run "$app" --small -o "nope=$tmp/x.npy"
case_ run_bad_extension 1 -e 'error|\.txt' -- "$sc" run "$app" --small -o "out=$tmp/x.txt"
case_ run_unwritable 1 -- "$sc" run "$app" --small -o "out=$tmp/no/such/dir/x.npy"
case_ run_input_npy 0 -o '^  out u16 \(64, 48\)' -- "$sc" run "$app" --small -i "in=$tmp/out.npy"
case_ run_input_png 0 -o '^  out u16 \(64, 48\)' -- "$sc" run "$app" --small -i "in=$tmp/out.png"
# The same data read from .npy and from .png gives the same result.
"$sc" run "$app" --small -i "in=$tmp/out.npy" -o "out=$tmp/a.npy" >/dev/null 2>&1
"$sc" run "$app" --small -i "in=$tmp/out.png" -o "out=$tmp/b.npy" >/dev/null 2>&1
ok run_npy_png_agree "$(cmp -s "$tmp/a.npy" "$tmp/b.npy"; echo $?)"
case_ run_input_wrong_size 1 -e "input in expects u16 65x48, the file holds u16 64x48" -- \
    "$sc" run "$app" --small --set W=65 -i "in=$tmp/out.npy"
case_ run_input_wrong_size_png 1 -e "input in expects u16 64x47" -- \
    "$sc" run "$app" --small --set H=47 -i "in=$tmp/out.png"
case_ run_input_unknown 1 -e 'has no input named nope' -- "$sc" run "$app" --small -i "nope=$tmp/out.npy"
case_ run_input_missing 1 -e "$tmp/none.npy" -- "$sc" run "$app" --small -i "in=$tmp/none.npy"
printf 'not an image' >"$tmp/junk.npy"
case_ run_input_junk 1 -e 'junk.npy' -- "$sc" run "$app" --small -i "in=$tmp/junk.npy"
case_ run_input_no_name 2 -e '-i expects NAME=FILE' -- "$sc" run "$app" --small -i "$tmp/out.npy"

# ---- run on a device: -i and -o as for the reference evaluator -----------
# The device's outputs are written; given the same input file, C and
# OpenCL (exact math) write the reference evaluator's bytes.
for d in c opencl; do
    case_ "run_${d}_writes" 0 -o "wrote $tmp/$d.npy" -- \
        "$sc" run "$app" --small --strategy baseline --device "$d" --check -i "in=$tmp/out.npy" -o "out=$tmp/$d.npy"
    ok "run_${d}_same_bytes" "$(cmp -s "$tmp/a.npy" "$tmp/$d.npy"; echo $?)"
done
case_ run_device_seed 0 -o "wrote $tmp/cseed2.npy" -- \
    "$sc" run "$app" --small --strategy baseline --device c --seed 2 -o "out=$tmp/cseed2.npy"
ok run_device_seed_as_reference "$(cmp -s "$tmp/seed2.npy" "$tmp/cseed2.npy"; echo $?)"
case_ run_device_unknown_output 1 -e 'has no output named nope' -- \
    "$sc" run "$app" --small --strategy baseline --device c -o "nope=$tmp/x.npy"
case_ run_device_input_wrong_size 1 -e "input in expects u16 65x48" -- \
    "$sc" run "$app" --small --set W=65 --strategy baseline --device c -i "in=$tmp/out.npy"

# ---- floor: the traffic floor and class of a pipeline (no device with --balance)
case_ floor_help 0 -o 'usage: stagecraft floor' -- "$sc" floor --help
# box_blur small: 64 x 48 u16 read and written, 6,144 bytes each way
case_ floor_given_balance 0 -o ' 0\.01 +0\.01 +0\.01 .* memory' -- "$sc" floor --balance 2 --small "$app"
case_ floor_compute 0 -o ' compute' -- "$sc" floor --balance 0.5 --small "$app"
case_ floor_bad_balance 2 -e '--balance: expected a positive number' -- "$sc" floor --balance -1 "$app"
case_ floor_missing_file 1 -e "$tmp/none.pipe" -- "$sc" floor --balance 2 "$tmp/none.pipe"
exit $failed
