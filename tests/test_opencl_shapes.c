/*
 * test_opencl_shapes.c - kernel shapes an OpenCL compiler got wrong, kept
 * so that the code we generate for them stays right: each pipeline runs
 * with its schedule on the C and OpenCL back ends (three times on OpenCL:
 * the first failure here gave results that changed from run to run) and
 * must match the reference evaluator bit for bit.
 *
 * PoCL 3.1's default work-group method (loopvec) miscompiled serial loops
 * that carried `#pragma unroll` when their start depends on the work-item:
 *
 *  - an in-place scan unrolled over its rdom read rows the unrolled
 *    iterations before had not yet stored (rows 2.. of 6 wrong);
 *  - a block-level Func filled in one phase and read by a 5x5 stencil
 *    after the barrier: the first unrolled points of each work-item read
 *    the __local array before it was filled.
 *
 * Both were found by test_oneshot with retrained weights (random_189,
 * random_109); the loops work-group method and the same loops without the
 * pragma were right.  The OpenCL back end now emits unrolled loops that
 * count from 0 and set their variable in the body (docs/backends.md):
 * with the pragma on the old form both shapes fail here again.
 *
 * Generation 5 also reads a block-level phase's thread coordinates from
 * the local ids where its threads line up with the work-group's shape
 * (lower.c, digit_in_local_ids); the box blurs below check the code of
 * both ways and run them.
 *
 * Generation 15 gives a root stage with threads in more than three loops
 * a work-group of three dimensions, the later loops digits of local id 2
 * (lower.c, kernel_tdim); the wide_threads schedules check the code and
 * run it.
 *
 * Generation 12 prints f32 min and max for a CPU as clang's builtins
 * (cg_opencl.c); relu_rows, a work-item over 4 rows of max and min, checks
 * the code for a CPU and for a GPU, and runs the CPU's.
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

/* A scan over y, its update stage on 8 threads of 3 unrolled columns. */
static const char scan_pipe[] =
    "pipeline scan_unrolled;\n"
    "size W = 24;\n"
    "size H = 6;\n"
    "input f32 in(W, H);\n"
    "rdom r(1, H - 1);\n"
    "s(x, y) = in(x, y);\n"
    "s(x, r) = 0.75 * s(x, r - 1) + 0.25 * s(x, r);\n"
    "output s(W, H);\n";
static const char scan_sched[] =
    "schedule scan_unrolled;\n"
    "s: root [x=8x1 y=4x1] [x=8x3];\n";

/* random_109's first four stages: act1 at block level in maxpool3, whose
 * threads compute 2 x 4 unrolled points of a 5x5 stencil of it. */
static const char block_pipe[] =
    "pipeline block_stencil;\n"
    "size W = 48;\n"
    "size H = 32;\n"
    "input f32 in(W, H, 4);\n"
    "input f32 w0(3);\n"
    "rdom r0(-1, 3);\n"
    "conv0(x, y, c) = 0.0;\n"
    "conv0(x, y, c) += w0(r0 + 1) * in(clamp(x + r0, 0, W - 1), clamp(y, 0, H - 1), clamp(c, 0, 3)) * 0.25;\n"
    "act1(x, y, c) = 1.0 / (1.0 + exp(-clamp(conv0(x, y, c), -30.0, 30.0)));\n"
    "conv2(x, y, c) = (2 * act1(x - 2, y - 2, c) + 2 * act1(x - 1, y - 2, c) + act1(x, y - 2, c)"
    " + 2 * act1(x + 1, y - 2, c) + 4 * act1(x + 2, y - 2, c) + 3 * act1(x - 2, y - 1, c)"
    " - act1(x - 1, y - 1, c) + 4 * act1(x, y - 1, c) + 4 * act1(x + 1, y - 1, c) + 3 * act1(x + 2, y - 1, c)"
    " + 3 * act1(x - 2, y, c) + 4 * act1(x - 1, y, c) + act1(x, y, c) + 3 * act1(x + 1, y, c)"
    " - 2 * act1(x + 2, y, c) + act1(x - 2, y + 1, c) + act1(x - 1, y + 1, c) + 3 * act1(x, y + 1, c)"
    " - 4 * act1(x + 1, y + 1, c) + 4 * act1(x + 2, y + 1, c) + 2 * act1(x - 2, y + 2, c)"
    " - 4 * act1(x - 1, y + 2, c) - act1(x, y + 2, c) + 2 * act1(x + 1, y + 2, c)"
    " - 4 * act1(x + 2, y + 2, c)) / 65.0;\n"
    "maxpool3(x, y, c) = max(max(max(conv2(x, y, c), conv2(x + 1, y, c)), conv2(x, y + 1, c)),"
    " conv2(x + 1, y + 1, c));\n"
    "output maxpool3(W, H, 4);\n";
static const char block_sched[] =
    "schedule block_stencil;\n"
    "maxpool3: root [x=8x2 y=4x4 c=4x1];\n"
    "conv2: inline;\n"
    "act1: block of maxpool3 [x=1 y=16 c=1];\n"
    "conv0: root [x=16x2 y=1x4 c=4x1] [x=8x4 y=8x2 c=4x1];\n";

/* A 3x3 box blur whose blur_x is computed per block of out. */
/* max and min over 4 rows a work-item, a reduction before them */
static const char relu_pipe[] =
    "pipeline relu_rows;\n"
    "input f32 in(66, 52);\n"
    "input f32 w(4);\n"
    "rdom r(0, 4);\n"
    "acc(x, y) = 0.0;\n"
    "acc(x, y) += w(r) * in(x + r % 2, y + r / 2);\n"
    "out(x, y) = min(max(acc(x, y), 0.0), 0.75);\n"
    "output out(64, 48);\n";

static const char relu_rows[] = "schedule relu_rows;\nout: root [x=16x1 y=4x4];\nacc: thread of out;\n";

static const char blur_pipe[] =
    "pipeline block_blur;\n"
    "size W = 40;\n"
    "size H = 27;\n"
    "input u16 in(W, H);\n"
    "clamped = repeat_edge(in);\n"
    "blur_x(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y)) / 3);\n"
    "out(x, y) = u16((u32(blur_x(x, y - 1)) + blur_x(x, y) + blur_x(x, y + 1)) / 3);\n"
    "output out(W, H);\n";
/* blur_x's threads are the work-group's (16 x 4): tid0 and tid1; its
 * footprint of 6 rows is 2 rows a thread (an unrolled, guarded loop) */
static const char blur_lined_up[] =
    "schedule block_blur;\n"
    "out: root [x=16x1 y=4x1];\n"
    "blur_x: block of out [x=16 y=4];\n"
    "clamped: inline;\n";
/* 8 x 8 threads in a 16 x 4 group: digits of the flat index */
static const char blur_flat[] =
    "schedule block_blur;\n"
    "out: root [x=16x1 y=4x1];\n"
    "blur_x: block of out [x=8 y=8];\n"
    "clamped: inline;\n";
/* 16 x 2 threads in a 16 x 4 group: tid0, then a digit of the flat
 * index (half the group, under a guard) */
static const char blur_half[] =
    "schedule block_blur;\n"
    "out: root [x=16x1 y=4x1];\n"
    "blur_x: block of out [x=16 y=2];\n"
    "clamped: inline;\n";

/* A root stage with threads in four loops (8 x 2 x 2 x 3): its
 * work-group is 8 x 2 x 6, the last two loops digits of local id 2
 * (generation 15, lower.c kernel_tdim), and so are a block-level Func's
 * threads of those loops, lined up with the group or not. */
static const char wide_pipe[] =
    "pipeline wide_threads;\n"
    "size W = 20;\n"
    "size H = 6;\n"
    "input f32 in(W, H);\n"
    "clamped = repeat_edge(in);\n"
    "p(x, y, a, b) = clamped(x + a, y - b) * 2.0 + f32(a * 3 + b);\n"
    "out(x, y, a, b) = p(x, y, a, b) - p(x + 1, y, a, b) * 0.5;\n"
    "output out(W, H, 4, 3);\n";
static const char wide_root[] =
    "schedule wide_threads;\n"
    "out: root [x=8x1 y=2x1 a=2x1 b=3x1];\n"
    "p: inline;\n"
    "clamped: inline;\n";
static const char wide_lined_up[] =
    "schedule wide_threads;\n"
    "out: root [x=8x1 y=2x1 a=2x1 b=3x1];\n"
    "p: block of out [x=8 y=2 a=2 b=3];\n"
    "clamped: inline;\n";
static const char wide_flat[] =
    "schedule wide_threads;\n"
    "out: root [x=8x1 y=2x1 a=2x1 b=3x1];\n"
    "p: block of out [x=4 y=4 a=2 b=3];\n"
    "clamped: inline;\n";

/* A 7x7 box filter (49 taps, each clamped), its x tiled 8 threads x S
 * serial points: unrolled, 8 points come to over the 2,048 expression
 * nodes that get the pragma (PoCL's compile time, cg_opencl.c), 2 do not. */
static char *big_body_pipe(void) {
    static char text[4096];
    int n = snprintf(text, sizeof text,
                     "pipeline big_body;\nsize W = 64;\nsize H = 16;\ninput f32 in(W, H);\n"
                     "clamped = repeat_edge(in);\nout(x, y) = (0.0");
    for (int i = -3; i <= 3; i++)
        for (int j = -3; j <= 3; j++) n += snprintf(text + n, sizeof text - (size_t)n, " + clamped(x + %d, y + %d)", i, j);
    snprintf(text + n, sizeof text - (size_t)n, ") / 49.0;\noutput out(W, H);\n");
    return text;
}
static const char big_body_8[] = "schedule big_body;\nout: root [x=8x8 y=1x1];\nclamped: inline;\n";
static const char big_body_2[] = "schedule big_body;\nout: root [x=8x2 y=1x1];\nclamped: inline;\n";
/* 4 points of 49 taps: over the 2,048 nodes of older generations' cap,
 * under CG_OPENCL_UNROLL_NODES */
static const char big_body_4[] = "schedule big_body;\nout: root [x=8x4 y=1x1];\nclamped: inline;\n";

/* Whether sched's OpenCL code unrolls a loop that the older cap left
 * rolled (cg_opencl_unrolls_past), as expected. */
static void unrolls_past(const char *name, const char *pipe, const char *sched, bool expected) {
    char err[8192] = "";
    fixture fx = fixture_load(pipe);
    sched_state *s = sched_parse(fx.a, fx.p, name, sched, err, sizeof err);
    lower_program *prog = s ? lower_schedule(fx.a, fx.p, fx.b, s, err, sizeof err) : NULL;
    check_report(prog && cg_opencl_unrolls_past(prog, CG_OPENCL_UNROLL_NODES_BEFORE_8) == expected,
                 "%s: unrolls past the old cap: %s", name, expected ? "yes" : "no");
    fixture_unload(&fx);
}

/* The OpenCL code of the schedule (lowered for a CPU or not) contains (or
 * lacks) each of the texts. */
static void code_has(const char *name, const char *pipe, const char *sched, bool cpu, const char *const *has,
                     const char *const *lacks) {
    char err[8192] = "";
    fixture fx = fixture_load(pipe);
    sched_state *s = sched_parse(fx.a, fx.p, name, sched, err, sizeof err);
    lower_program *prog = s ? lower_schedule_for(fx.a, fx.p, fx.b, s, cpu, err, sizeof err) : NULL;
    char *src = prog ? cg_generate(prog, CG_OPENCL) : NULL;
    if (!src) check_report(false, "%s: no code: %s", name, err);
    for (int i = 0; src && has[i]; i++) check_report(strstr(src, has[i]) != NULL, "%s: the code has '%s'", name, has[i]);
    for (int i = 0; src && lacks[i]; i++)
        check_report(strstr(src, lacks[i]) == NULL, "%s: the code lacks '%s'", name, lacks[i]);
    free(src);
    fixture_unload(&fx);
}

static void run_shape(const char *name, const char *pipe, const char *sched, bool cpu) {
    char err[8192] = "";
    fixture fx = fixture_load(pipe);
    sched_state *s = sched_parse(fx.a, fx.p, name, sched, err, sizeof err);
    lower_program *prog = s ? lower_schedule_for(fx.a, fx.p, fx.b, s, cpu, err, sizeof err) : NULL;
    sc_buffer **in = NULL, **ref = NULL;
    if (!prog || measure_buffers_new(fx.p, 1, &in, &ref, err, sizeof err) != 0) {
        check_report(false, "%s: %s", name, err);
        fixture_unload(&fx);
        return;
    }
    for (int d = 0; d < ndev; d++) {
        int times = strcmp(devs[d].ops->name, "opencl") ? 1 : 3;
        for (int t = 0; t < times; t++) {
            bool ok = fixture_run_exact(&devs[d], prog, in, ref, 60000, true, err, sizeof err);
            check_report(ok, "%s on %s, run %d%s%s", name, devs[d].ops->name, t + 1, ok ? "" : ": ", ok ? "" : err);
        }
    }
    measure_buffers_free(fx.p, in, ref);
    fixture_unload(&fx);
}

int main(void) {
    ndev = fixture_open_devices(devs);
    run_shape("scan_unrolled", scan_pipe, scan_sched, false);
    run_shape("block_stencil", block_pipe, block_sched, false);
    code_has("blur_lined_up", blur_pipe, blur_lined_up, false,
             (const char *const[]){ "blur_x_x_min + tid0;", "blur_x_y_min + (tid1 * 2);", "#pragma unroll",
                                    "for (int blur_x_y_u_ = 0; blur_x_y_u_ < 2; blur_x_y_u_++)", NULL },
             (const char *const[]){ "tid % 16", "tid / 16", NULL });
    code_has("blur_flat", blur_pipe, blur_flat, false, (const char *const[]){ "tid % 8", "tid / 8", NULL },
             (const char *const[]){ NULL });
    code_has("blur_half", blur_pipe, blur_half, false, (const char *const[]){ "blur_x_x_min + tid0;", "tid / 16", NULL },
             (const char *const[]){ "tid % 16", NULL });
    code_has("big_body_8", big_body_pipe(), big_body_8, false, (const char *const[]){ "for (int out_x = ", NULL },
             (const char *const[]){ "#pragma unroll", NULL });
    code_has("big_body_2", big_body_pipe(), big_body_2, false,
             (const char *const[]){ "#pragma unroll", "for (int out_x_u_ = 0; out_x_u_ < 2; out_x_u_++)", NULL },
             (const char *const[]){ NULL });
    code_has("big_body_4", big_body_pipe(), big_body_4, false,
             (const char *const[]){ "#pragma unroll", "for (int out_x_u_ = 0; out_x_u_ < 4; out_x_u_++)", NULL },
             (const char *const[]){ NULL });
    unrolls_past("big_body_4", big_body_pipe(), big_body_4, true);
    unrolls_past("big_body_2", big_body_pipe(), big_body_2, false);
    unrolls_past("big_body_8", big_body_pipe(), big_body_8, false);
    run_shape("big_body_8", big_body_pipe(), big_body_8, false);
    run_shape("big_body_4", big_body_pipe(), big_body_4, false);
    run_shape("blur_lined_up", blur_pipe, blur_lined_up, false);
    run_shape("blur_flat", blur_pipe, blur_flat, false);
    run_shape("blur_half", blur_pipe, blur_half, false);
    code_has("wide_root", wide_pipe, wide_root, true,
             (const char *const[]){ "reqd_work_group_size(8, 2, 6)", "out_x_b + tid0;", "out_y_b + tid1;",
                                    "out_a_b + (tid2 % 2);", "out_b_t_ = tid2 / 2;", NULL },
             (const char *const[]){ "tid % 8", "tid / ", "const int tid = ", NULL });
    code_has("wide_lined_up", wide_pipe, wide_lined_up, false,
             (const char *const[]){ "p_x_min + (tid0 * 2);", "p_y_min + tid1;", "p_a_min + (tid2 % 2);",
                                    "p_b_t_ = tid2 / 2;", NULL },
             (const char *const[]){ "const int tid = ", NULL });
    code_has("wide_flat", wide_pipe, wide_flat, false,
             (const char *const[]){ "(tid % 4)", "(tid / 4) % 4", "p_a_min + (tid2 % 2);", "p_b_t_ = tid2 / 2;", NULL },
             (const char *const[]){ NULL });
    run_shape("wide_root", wide_pipe, wide_root, true);
    run_shape("wide_lined_up", wide_pipe, wide_lined_up, false);
    run_shape("wide_flat", wide_pipe, wide_flat, true);
    code_has("relu_rows/cpu", relu_pipe, relu_rows, true,
             (const char *const[]){ "__builtin_fmaxf(", "__builtin_fminf(", NULL },
             (const char *const[]){ "fmax(", "fmin(", NULL });
    code_has("relu_rows/gpu", relu_pipe, relu_rows, false, (const char *const[]){ "fmax(", "fmin(", NULL },
             (const char *const[]){ "__builtin_", NULL });
    run_shape("relu_rows/cpu", relu_pipe, relu_rows, true);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
