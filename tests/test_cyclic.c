/*
 * test_cyclic.c - cyclic points on a CPU (nest_ctx_set_cyclic, codegen.h
 * generation 20, docs/backends.md): where code is made for a CPU, a
 * work-item's points along a ROOT or BLOCK stage's first loop are the
 * loop's thread count apart (x = base + tid0 + u * threads) instead of
 * consecutive.  Checked here:
 *  - the loop-nest model marks the stages it applies to, for a CPU only:
 *    a root stencil, a partial tile, an update that accumulates in place,
 *    a block-level Func; not a stage with a Func in its threads, one
 *    point a thread along x, a tile of 16 points (looped, not unrolled),
 *    or threads along x of one;
 *  - its strides: a step of one thread is one element, a serial step
 *    the threads' worth;
 *  - the lowered code for a CPU says so and a GPU's does not;
 *  - the features of a CPU see no gather where the points are cyclic and
 *    the consecutive points' gathers where the ctx is left as older code
 *    had it (what training does for older samples);
 *  - every schedule, lowered for a CPU, runs on the C and OpenCL back
 *    ends and matches the reference evaluator bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "codegen.h"
#include "exec.h"
#include "features.h"
#include "fixtures.h"
#include "measure.h"
#include "nest.h"

static fixture_device devs[2];
static int ndev;
static target CPU;

/* A u16 5-tap row stencil and a 3-tap column one (stencil_chain's kind). */
static const char stencil_pipe[] =
    "pipeline st;\n"
    "input u16 in(70, 40);\n"
    "clamped = repeat_edge(in);\n"
    "out(x, y) = u16(clamped(x - 2, y) + 2 * clamped(x - 1, y) + 3 * clamped(x, y) + 4 * clamped(x + 1, y)\n"
    "                + 5 * clamped(x + 2, y) + clamped(x, y - 1) + clamped(x, y + 1));\n"
    "output out(70, 40);\n";

/* A row sum accumulated in place (reduction around the tile). */
static const char sum_pipe[] =
    "pipeline rsum;\n"
    "input f32 in(64, 24);\n"
    "rdom r(0, 5);\n"
    "clamped = repeat_edge(in);\n"
    "out(x, y) = 0.0;\n"
    "out(x, y) = out(x, y) + clamped(x + r.x, y) * 0.5;\n"
    "output out(60, 24);\n";

/* A blur whose first stage can sit in the second's blocks or threads. */
static const char blur_pipe[] =
    "pipeline blur;\n"
    "input u16 in(68, 50);\n"
    "bx(x, y) = u16((u32(in(x, y)) + in(x + 1, y) + in(x + 2, y)) / 3);\n"
    "out(x, y) = u16((u32(bx(x, y)) + bx(x, y + 1) + bx(x, y + 2)) / 3);\n"
    "output out(64, 48);\n";

/* Whether the model of sched marks Func fname's stage st cyclic; *ok
 * false (and a failed check) where it does not build. */
static bool model_cyclic(const fixture *fx, const char *sched, const char *fname, int st, bool cpu, bool *ok,
                         nest_access *acc0) {
    char err[2048];
    sched_state *s = sched_parse(fx->a, fx->p, "t.sched", sched, err, sizeof err);
    nest_ctx *x = nest_ctx_new(fx->p, fx->b);
    nest_ctx_set_staging(x, !cpu);
    nest_ctx_set_cyclic(x, cpu);
    nest *m = s ? nest_build(x, s, err, sizeof err) : NULL;
    bool cyc = false;
    *ok = false;
    for (int i = 0; m && i < fx->p->funcs.n; i++) {
        const nest_func *nf = m->funcs[i];
        if (!nf || strcmp(nf->func->name, fname)) continue;
        *ok = true;
        cyc = nf->stages[st]->cyclic;
        if (acc0 && nf->stages[st]->naccess > 0) *acc0 = nf->stages[st]->access[0];
        CHECK(nest_any_cyclic(m) == cyc || cyc == false);
    }
    if (!*ok) check_report(false, "%s: no model of %s (%s)", sched, fname, err);
    nest_free(m);
    nest_ctx_free(x);
    return cyc;
}

/* The lowered code for a CPU carries the coordinate as a LET of the
 * counter times the threads ("_c * T)"); a GPU's does not.  Runs the
 * CPU's program on every back end. */
static void cyclic_case(const char *name, const char *pipe, const char *sched, const char *fname, int st,
                        int threads, bool want) {
    fixture_lowered l = fixture_lower_both(pipe, name, sched);
    if (!l.ok) {
        fixture_lowered_free(&l);
        return;
    }
    bool ok;
    bool cpu = model_cyclic(&l.fx, sched, fname, st, true, &ok, NULL);
    bool gpu = model_cyclic(&l.fx, sched, fname, st, false, &ok, NULL);
    check_report(cpu == want && !gpu, "%s: the model's points of %s %s on a CPU, consecutive on a GPU", name, fname,
                 want ? "cyclic" : "consecutive");
    char pat[32];
    snprintf(pat, sizeof pat, "_c * %d)", threads);
    char *code = cg_generate(l.cpu, CG_OPENCL), *gcode = cg_generate(l.gpu, CG_OPENCL);
    check_report(code && gcode && (strstr(code, pat) != NULL) == want && !strstr(gcode, pat),
                 "%s: OpenCL for a CPU %s '%s', for a GPU not", name, want ? "has" : "lacks", pat);
    free(code);
    free(gcode);
    fixture_check_cpu_runs(devs, ndev, name, &l);
}

/* The strides of out's first access (clamped(x - 2, y), u16 in a row of
 * 74 elements) with 16 x 2 points: cyclic, a thread steps one element and
 * the serial loop 16; consecutive, 2 and 1. */
static void test_strides(void) {
    fixture fx = fixture_load(stencil_pipe);
    const char *sched = "schedule st;\nout: root [x=16x2 y=4x1];\nclamped: inline;\n";
    nest_access a = { 0 }, b = { 0 };
    bool ok1, ok2;
    bool cyc = model_cyclic(&fx, sched, "out", 0, true, &ok1, &a);
    bool con = model_cyclic(&fx, sched, "out", 0, false, &ok2, &b);
    if (ok1 && ok2) {
        check_report(cyc && !con, "strides: cyclic on a CPU only");
        check_report(a.stride_thread[0] == 1 && a.stride_serial[0] == 16, "strides: cyclic thread 1 (%g), serial 16 (%g)",
                     a.stride_thread[0], a.stride_serial[0]);
        check_report(b.stride_thread[0] == 2 && b.stride_serial[0] == 1,
                     "strides: consecutive thread 2 (%g), serial 1 (%g)", b.stride_thread[0], b.stride_serial[0]);
        check_report(a.bytes_thread == b.bytes_thread, "strides: the thread's footprint counts its points alike");
    }
    fixture_unload(&fx);
}

/* The CPU's features: vector_gathers_per_point of out, from a model with
 * the mapping on or off. */
static double gathers(const fixture *fx, const char *sched, bool cyclic) {
    char err[2048];
    sched_state *s = sched_parse(fx->a, fx->p, "t.sched", sched, err, sizeof err);
    nest_ctx *x = nest_ctx_new(fx->p, fx->b);
    nest_ctx_set_staging(x, false);
    nest_ctx_set_cyclic(x, cyclic);
    nest *m = s ? nest_build(x, s, err, sizeof err) : NULL;
    feat_result r = { 0 };
    double v = NAN;
    if (m && feat_compute_model(fx->p, fx->b, s, m, &CPU, &r, err, sizeof err) == 0) {
        int fi = feat_index("vector_gathers_per_point");
        for (int k = 0; k < r.n; k++)
            if (!strcmp(((const sc_func *)fx->p->funcs.items[r.rows[k].func])->name, "out")) v = r.rows[k].v[fi];
    }
    if (v != v) check_report(false, "features of %s: %s", sched, err);
    feat_free(&r);
    nest_free(m);
    nest_ctx_free(x);
    return v;
}

static void test_features(void) {
    fixture fx = fixture_load(stencil_pipe);
    const char *two = "schedule st;\nout: root [x=16x2 y=4x1];\nclamped: inline;\n";
    const char *one = "schedule st;\nout: root [x=16x1 y=4x1];\nclamped: inline;\n";
    double c2 = gathers(&fx, two, true), b2 = gathers(&fx, two, false), c1 = gathers(&fx, one, true);
    check_report(c2 == 0 && c1 == 0 && b2 > 0, "features: gathers cyclic %g, consecutive %g, one point %g", c2, b2, c1);
    /* feat_compute for a CPU target models the code a CPU gets */
    char err[2048];
    sched_state *s = sched_parse(fx.a, fx.p, "t.sched", two, err, sizeof err);
    feat_result r = { 0 };
    double v = NAN;
    if (s && feat_compute(fx.p, fx.b, s, &CPU, &r, err, sizeof err) == 0) {
        int fi = feat_index("vector_gathers_per_point");
        for (int k = 0; k < r.n; k++)
            if (!strcmp(((const sc_func *)fx.p->funcs.items[r.rows[k].func])->name, "out")) v = r.rows[k].v[fi];
    }
    check_report(v == 0, "features: feat_compute for a CPU sees the cyclic points (%g gathers)", v);
    feat_free(&r);
    fixture_unload(&fx);
}

int main(void) {
    CPU = fixture_target("a100");
    CPU.cpu = true;
    ndev = fixture_open_devices(devs);
    test_strides();
    test_features();
    cyclic_case("stencil", stencil_pipe, "schedule st;\nout: root [x=16x2 y=4x1];\nclamped: inline;\n", "out", 0, 16,
                true);
    /* 70 columns in tiles of 8 x 3 = 24: the last tile partial */
    cyclic_case("partial_tile", stencil_pipe, "schedule st;\nout: root [x=8x3 y=2x2];\nclamped: inline;\n", "out", 0, 8,
                true);
    cyclic_case("one_point", stencil_pipe, "schedule st;\nout: root [x=16x1 y=4x2];\nclamped: inline;\n", "out", 0, 16,
                false);
    /* 16 points a thread: a looped tile, whose in-thread loop over
     * consecutive points the compiler vectorizes */
    cyclic_case("looped_tile", stencil_pipe, "schedule st;\nout: root [x=4x16 y=4x1];\nclamped: inline;\n", "out", 0, 4,
                false);
    cyclic_case("one_thread_along_x", stencil_pipe, "schedule st;\nout: root [x=1x4 y=16x1];\nclamped: inline;\n",
                "out", 0, 1, false);
    cyclic_case("update_in_place", sum_pipe, "schedule rsum;\nout: root [x=8x4 y=4x1] [x=8x4 y=4x1];\nclamped: inline;\n", "out", 1, 8,
                true);
    cyclic_case("block_level", blur_pipe, "schedule blur;\nout: root [x=16x1 y=4x2];\nbx: block of out [x=4 y=8];\n",
                "bx", 0, 4, true);
    cyclic_case("root_with_block_level", blur_pipe,
                "schedule blur;\nout: root [x=8x2 y=4x2];\nbx: block of out [x=8 y=4];\n", "out", 0, 8, true);
    cyclic_case("func_in_the_threads", blur_pipe, "schedule blur;\nout: root [x=8x2 y=4x2];\nbx: thread of out;\n",
                "out", 0, 8, false);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
