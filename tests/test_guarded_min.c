/*
 * test_guarded_min.c - reads of a private array inside a partial tile's
 * guard (cg_expr.c, guard_caps; codegen.h generation 23): a Func computed
 * in the threads of a ragged tile starts at min(x_t, k), so that the last
 * work-items' producers stay in range, and inside the guard `x < k + 1`
 * that min is x_t itself, so the read indexes the array by unrolled
 * loops' counters and a constant (PoCL keeps an array in registers only
 * where it sees its indices to be constants).  Checked here:
 *  - the counters' form is printed, and counted (cg_opencl_forms_of's
 *    guarded_mins), in the edge blocks of a tile ragged along x, for a CPU
 *    and a GPU, and for nl_means' shape (offsets dx in threads, 7 in
 *    tiles of 4);
 *  - it is not printed where the guard does not cap the min for every
 *    iteration of the thread's serial loop (two rows a work-item, the
 *    last block's partial: y <= 19 - u leaves y_t up to 19, past 18),
 *    nor in C (no loops printed counted);
 *  - every schedule, lowered for a CPU, runs on the C and OpenCL back
 *    ends and matches the reference evaluator bit for bit, and lowered
 *    for a GPU, on OpenCL.
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

static const char pair_pipe[] =
    "pipeline gm;\n"
    "input f32 in(100, 20);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(x, y) + f(x + 1, y);\n"
    "output out(99, 20);\n";

/* nl_means' patch distances, small: a box filter along y of squared
 * differences at the offsets (dx, dy), 7 of each, dx in the threads in
 * tiles of 4, the sum and d in the threads. */
static const char offsets_pipe[] =
    "pipeline offs;\n"
    "input f32 in(40, 24);\n"
    "clamped = repeat_edge(in);\n"
    "rdom patch(-1, 3);\n"
    "d(x, y, dx, dy) = (clamped(x, y) - clamped(x + dx, y + dy)) * (clamped(x, y) - clamped(x + dx, y + dy));\n"
    "out(x, y, dx, dy) = sum(d(x, y + patch, dx - 3, dy - 3));\n"
    "output out(40, 24, 7, 7);\n";

/* Whether code subtracts `min` in an index of private array arr: "arr[("
 * followed, before the closing bracket, by "- min)". */
static bool whole_index(const char *code, const char *arr, const char *min) {
    char pat[64], m[64];
    snprintf(pat, sizeof pat, "%s[(", arr);
    snprintf(m, sizeof m, "- %s)", min);
    for (const char *s = code ? strstr(code, pat) : NULL; s; s = strstr(s + 1, pat)) {
        const char *end = strchr(s, ']'), *at = strstr(s, m);
        if (at && end && at < end) return true;
    }
    return false;
}

static void guarded_case(const char *name, const char *pipe, const char *sched, const char *arr, const char *min,
                         bool want) {
    fixture_lowered l = fixture_lower_both(pipe, name, sched);
    if (!l.ok) {
        fixture_lowered_free(&l);
        return;
    }
    char *code = cg_generate(l.cpu, CG_OPENCL), *gcode = cg_generate(l.gpu, CG_OPENCL);
    char *ccode = cg_generate(l.cpu, CG_C);
    int64_t n = cg_opencl_forms_of(l.cpu).guarded_mins, ng = cg_opencl_forms_of(l.gpu).guarded_mins;
    check_report(code && whole_index(code, arr, min) != want && (n > 0) == want, "%s/cpu: %s (%lld counted)", name,
                 want ? "reads by counters through the guarded min" : "keeps the index whole", (long long)n);
    check_report(gcode && whole_index(gcode, arr, min) != want && (ng > 0) == want, "%s/gpu: %s (%lld counted)",
                 name, want ? "reads by counters through the guarded min" : "keeps the index whole", (long long)ng);
    check_report(ccode && whole_index(ccode, arr, min), "%s/c: the index whole (no loops counted)", name);
    free(code);
    free(gcode);
    free(ccode);
    fixture_check_runs(devs, ndev, name, l.gpu, l.in, l.ref);
    fixture_check_cpu_runs(devs, ndev, name, &l);
}

int main(void) {
    ndev = fixture_open_devices(devs);
    guarded_case("ragged_x", pair_pipe, "schedule gm;\nout: root [x=16x1 y=4x1];\nf: thread of out;\n", "f_r",
                 "f_x_min", true);
    guarded_case("ragged_rows_in_thread", pair_pipe, "schedule gm;\nout: root [x=16x1 y=4x2];\nf: thread of out;\n",
                 "f_r", "f_y_min", false);
    guarded_case("offsets", offsets_pipe,
                 "schedule offs;\nout: root [x=8x1 y=1x4 dx=4x1 dy=1x1];\nout_sum1: thread of out;\n"
                 "d: thread of out_sum1;\nclamped: inline;\n",
                 "out_sum1_r", "out_sum1_dx_min", true);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
