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
 * pragma were right.  docs/backends.md says what the OpenCL back end emits
 * instead.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
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

static void run_shape(const char *name, const char *pipe, const char *sched) {
    char err[8192] = "";
    fixture fx = fixture_load(pipe);
    sched_state *s = sched_parse(fx.a, fx.p, name, sched, err, sizeof err);
    lower_program *prog = s ? lower_schedule(fx.a, fx.p, fx.b, s, err, sizeof err) : NULL;
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
    run_shape("scan_unrolled", scan_pipe, scan_sched);
    run_shape("block_stencil", block_pipe, block_sched);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
