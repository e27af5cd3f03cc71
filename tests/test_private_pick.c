/*
 * test_private_pick.c - reads of a private array at a block's coordinate
 * in OpenCL code (cg_expr.c, codegen.h generation 19, docs/backends.md):
 * where the flat index of a read is a sum of unrolled loops' counters, a
 * constant and variables of a few values together (a channel c, one a
 * block, of a Func computed in the threads for all its channels), the
 * read is printed as a select over those values whose sides index the
 * array by counters and constants alone.  Checked here:
 *  - the form is printed, and counted (cg_opencl_private_picks), for a
 *    CPU and for a GPU, with one variable (the channel) and with two (the
 *    channel and the block's row, of a Func in the threads whose tile
 *    spans every row: out reads its first row);
 *  - it is not printed where the variable has more values than
 *    PRIVATE_PICK_CASES (twelve channels), where the index is a sum of
 *    counters already, nor in C (no loops printed counted);
 *  - a read at a temporary of a few values (a level computed from data,
 *    and the next one: generation 25) is printed as a chain of select()
 *    and counted (cg_opencl_forms_of's data_picks), for a CPU and a GPU,
 *    with one row a work-item and two; not over 12 values, nor in C;
 *  - every schedule, lowered for a CPU, runs on the C and OpenCL back
 *    ends and matches the reference evaluator bit for bit.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "codegen.h"
#include "exec.h"
#include "fixtures.h"
#include "measure.h"

static fixture_device devs[2];
static int ndev;

/* Each channel over the alpha channel, as interpolate's out. */
static const char chan_pipe[] =
    "pipeline chan;\n"
    "input f32 in(64, 48, 4);\n"
    "f(x, y, c) = in(x, y, c) * 2.0 + 1.0;\n"
    "out(x, y, c) = f(x, y, c) / f(x, y, 3);\n"
    "output out(64, 48, 3);\n";

/* The same over twelve channels: eleven values of the block's channel. */
static const char wide_pipe[] =
    "pipeline wide;\n"
    "input f32 in(32, 16, 12);\n"
    "f(x, y, c) = in(x, y, c) * 2.0 + 1.0;\n"
    "out(x, y, c) = f(x, y, c) / f(x, y, 11);\n"
    "output out(32, 16, 11);\n";

/* A row and the first row of the image, in each channel and the last:
 * f's tile in out's threads spans every row and channel, and out's read
 * f(x, y, c) is at the block's row and channel, 3 x 2 values. */
static const char rows_pipe[] =
    "pipeline rows;\n"
    "input i32 in(32, 4, 3);\n"
    "f(x, y, c) = in(x, y, c) * 3 + 1;\n"
    "out(x, y, c) = f(x, y, c) - f(x, 0, 2) + f(x, y, 2);\n"
    "output out(32, 4, 2);\n";

/* A box blur: blur_x's rows in out's threads, indexed by counters. */
static const char blur_pipe[] =
    "pipeline blur;\n"
    "input u16 in(66, 52);\n"
    "bx(x, y) = u16((u32(in(x, y)) + in(x + 1, y)) / 2);\n"
    "out(x, y) = u16((u32(bx(x, y)) + bx(x, y + 1) + bx(x, y + 2)) / 3);\n"
    "output out(64, 48);\n";

/* A level read at a value computed from data, k in [0, 3], and the next
 * one, as local_laplacian's out reads lp at two of its levels: lv in
 * out's threads is computed for all five levels. */
static const char level_pipe[] =
    "pipeline level;\n"
    "input f32 in(64, 48);\n"
    "lv(x, y, k) = in(x, y) * f32(k + 1) - 0.5;\n"
    "out(x, y) = lv(x, y, clamp(i32(in(x, y) * 4.0), 0, 3)) + lv(x, y, clamp(i32(in(x, y) * 4.0), 0, 3) + 1);\n"
    "output out(64, 48);\n";

/* The same over 13 levels: 12 values of k, more than PRIVATE_PICK_CASES. */
static const char levels13_pipe[] =
    "pipeline levels13;\n"
    "input f32 in(64, 48);\n"
    "lv(x, y, k) = in(x, y) * f32(k + 1) - 0.5;\n"
    "out(x, y) = lv(x, y, clamp(i32(in(x, y) * 12.0), 0, 11)) + lv(x, y, clamp(i32(in(x, y) * 12.0), 0, 11) + 1);\n"
    "output out(64, 48);\n";

/* Whether code reads private array `arr` through select(): "select(arr["
 * or "select(select(... arr[", with a temporary's case "(int)(sc_t". */
static bool data_pick_form(const char *code, const char *arr) {
    char pat[64];
    snprintf(pat, sizeof pat, "select(%s[", arr);
    return code && strstr(code, pat) && strstr(code, "(int)(sc_t");
}

/* Whether code reads private array `arr` through a select: "(V == K ?
 * arr[" with the array's name right after the first "? ". */
static bool pick_form(const char *code, const char *arr) {
    char pat[64];
    snprintf(pat, sizeof pat, " ? %s[", arr);
    for (const char *s = code ? strstr(code, pat) : NULL; s; s = strstr(s + 1, pat)) {
        const char *open = s;
        while (open > code && *open != '(' && *open != '\n') open--;
        if (*open == '(' && strstr(open, " == ") && strstr(open, " == ") < s) return true;
    }
    return false;
}

/* The form checked for a CPU and a GPU and counted, none in C, and the
 * CPU's schedule run: a generation-19 pick of a block's coordinate, or
 * (data) a generation-25 pick of a temporary's values. */
static void pick_case(const char *name, const char *pipe, const char *sched, const char *arr, bool want, bool data) {
    fixture_lowered l = fixture_lower_both(pipe, name, sched);
    if (!l.ok) {
        fixture_lowered_free(&l);
        return;
    }
    bool (*form)(const char *, const char *) = data ? data_pick_form : pick_form;
    const char *what = data ? "select()" : "a select";
    char *code = cg_generate(l.cpu, CG_OPENCL), *gcode = cg_generate(l.gpu, CG_OPENCL);
    char *ccode = cg_generate(l.cpu, CG_C);
    int64_t n = data ? cg_opencl_forms_of(l.cpu).data_picks : cg_opencl_private_picks(l.cpu);
    int64_t ng = data ? cg_opencl_forms_of(l.gpu).data_picks : cg_opencl_private_picks(l.gpu);
    const char *const dev[2] = { "cpu", "gpu" };
    const char *const codes[2] = { code, gcode };
    const int64_t counts[2] = { n, ng };
    for (int d = 0; d < 2; d++)
        check_report(codes[d] && form(codes[d], arr) == want && (counts[d] > 0) == want,
                     "%s/%s: %s %s (%lld counted)", name, dev[d], want ? "reads the private array through" : "no",
                     want ? what : "select of private reads", (long long)counts[d]);
    check_report(ccode && !form(ccode, arr), "%s/c: no %s of private reads", name, data ? "select()" : "select");
    free(code);
    free(gcode);
    free(ccode);
    fixture_check_cpu_runs(devs, ndev, name, &l);
}

static void private_pick_case(const char *name, const char *pipe, const char *sched, const char *arr, bool want) {
    pick_case(name, pipe, sched, arr, want, false);
}

static void data_pick_case(const char *name, const char *pipe, const char *sched, const char *arr, bool want) {
    pick_case(name, pipe, sched, arr, want, true);
}

int main(void) {
    ndev = fixture_open_devices(devs);
    private_pick_case("channel", chan_pipe, "schedule chan;\nout: root [x=16x1 y=1x2 c=1x1];\nf: thread of out;\n",
                      "f_r", true);
    private_pick_case("channel_unrolled_y", chan_pipe,
                      "schedule chan;\nout: root [x=8x2 y=2x4 c=1x1];\nf: thread of out;\n", "f_r", true);
    private_pick_case("channel_and_row", rows_pipe,
                      "schedule rows;\nout: root [x=16x1 y=1x2 c=1x1];\nf: thread of out;\n", "f_r", true);
    private_pick_case("twelve_channels", wide_pipe,
                      "schedule wide;\nout: root [x=16x1 y=1x2 c=1x1];\nf: thread of out;\n", "f_r", false);
    private_pick_case("channels_in_the_thread", chan_pipe,
                      "schedule chan;\nout: root [x=16x1 y=1x2 c=1x3];\nf: thread of out;\n", "f_r", false);
    private_pick_case("blur_rows", blur_pipe, "schedule blur;\nout: root [x=16x1 y=1x4];\nbx: thread of out;\n", "bx_r",
                      false);
    data_pick_case("level", level_pipe, "schedule level;\nout: root [x=16x1 y=1x2];\nlv: thread of out;\n", "lv_r",
                   true);
    data_pick_case("level_two_rows", level_pipe, "schedule level;\nout: root [x=8x1 y=2x2];\nlv: thread of out;\n",
                   "lv_r", true);
    data_pick_case("thirteen_levels", levels13_pipe,
                   "schedule levels13;\nout: root [x=16x1 y=1x2];\nlv: thread of out;\n", "lv_r", false);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
