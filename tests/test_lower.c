/*
 * test_lower.c - lowering decisions checked on hand-written schedules:
 * register staging (Anderson et al. 2021 §6.7) happens exactly where a
 * thread's unrolled tile reuses a global producer at affine coordinates,
 * counts towards the register estimate, keeps results equal to the
 * reference on the C back end, and (where NVRTC is present) leaves the
 * staged array in registers: no stack frame.
 */
#include <string.h>
#include "check.h"
#include "exec.h"
#include "sched.h"
#include "legal.h"

/* A 3x1 then 1x3 box blur whose input is read through a clamp, so that
 * only the second stage (reading blur_x at x, y-1..y+1) stages affinely. */
static const char *blur_src =
    "size W = 64;\nsize H = 48;\n"
    "input u16 in(W, H);\n"
    "clamped = repeat_edge(in);\n"
    "blur_x(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y)) / 3);\n"
    "out(x, y) = u16((u32(blur_x(x, y - 1)) + blur_x(x, y) + blur_x(x, y + 1)) / 3);\n"
    "output out(W, H);\n";

typedef struct {
    sc_pipeline *p;
    bounds_result *b;
    ir_arena *a;
    sched_state *s;
    lower_program *prog;
} lowered;

static bool lower_text(lowered *l, const char *src, const char *sched) {
    memset(l, 0, sizeof *l);
    l->p = sc_parse_string("t.pipe", src, strlen(src), NULL);
    if (sc_error_count(l->p)) {
        fprintf(stderr, "%s\n", sc_error_message(l->p, 0));
        return false;
    }
    l->b = bounds_infer(l->p);
    l->a = ir_arena_new();
    char err[1024];
    l->s = sched_parse(l->a, l->p, "t.sched", sched, err, sizeof err);
    l->prog = l->s ? lower_schedule(l->a, l->p, l->b, l->s, err, sizeof err) : NULL;
    if (!l->prog) fprintf(stderr, "%s\n", err);
    return l->prog != NULL;
}

static void lowered_free(lowered *l) {
    if (l->a) ir_arena_free(l->a);
    if (l->b) bounds_free(l->b);
    if (l->p) sc_pipeline_free(l->p);
}

static const lower_kernel *kernel_named(const lower_program *prog, const char *name) {
    for (int i = 0; i < prog->nkernels; i++)
        if (!strcmp(prog->kernels[i]->name, name)) return prog->kernels[i];
    return NULL;
}

/* Runs prog on the C device and compares with the reference. */
static int64_t mismatches_on_c(const lowered *l) {
    char err[4096];
    rt_device *dev = rt_c_ops.open(err, sizeof err);
    if (!dev) { fprintf(stderr, "%s\n", err); return -1; }
    sc_buffer *in[4] = {0}, *ref[4] = {0};
    for (int i = 0; i < l->p->inputs.n; i++) in[i] = sc_input_random(l->p, i, 3);
    int64_t bad = -1;
    exec_diff diff;
    if (sc_evaluate(l->p, in, 3, ref) == 0) {
        exec_session *x = exec_open_checked(&rt_c_ops, dev, l->prog, CG_MATH_EXACT, NULL, in, ref, 60000, &diff,
                                            err, sizeof err);
        bad = x ? diff.mismatches : -1;
        if (!x) fprintf(stderr, "%s\n", err);
        exec_close(x);
    }
    for (int i = 0; i < 4; i++) { sc_buffer_free(in[i]); sc_buffer_free(ref[i]); }
    rt_c_ops.close(dev);
    return bad;
}

/* 2x2 points per thread: out reads blur_x over 2x4 points instead of 12
 * loads, and is staged; blur_x reads in through a clamp and is not. */
static void test_staging_stencil(void) {
    lowered l;
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=16x2 y=4x2];\nblur_x: root [x=32x2 y=8x1];\nclamped: inline;\n"));
    if (l.prog) {
        const lower_kernel *ko = kernel_named(l.prog, "out_s0"), *kb = kernel_named(l.prog, "blur_x_s0");
        CHECK(ko && ko->nstaged == 1 && ko->staged_elems == 8);
        CHECK(kb && kb->nstaged == 0);
        CHECK(mismatches_on_c(&l) == 0);
        char err[16384];
        rt_device *cu = rt_cuda_ops.open(err, sizeof err);
        if (cu) {
            char *src = cg_generate(l.prog, CG_CUDA);
            CHECK(strstr(src, "uint16_t blur_x_r[8];") != NULL);
            char opts[128];
            snprintf(opts, sizeof opts, "%s -arch=sm_80", cg_required_options(CG_CUDA));
            rt_module *m = rt_cuda_ops.compile(cu, src, opts, err, sizeof err);
            CHECK(m != NULL);
            rt_kernel_info *info = NULL;
            int n = m ? rt_cuda_ops.kernel_info(m, &info) : 0;
            for (int i = 0; i < n; i++)
                if (!strcmp(info[i].name, "out_s0")) CHECK(info[i].local_bytes == 0 && info[i].spill_store_bytes == 0);
            free(info);
            if (m) rt_cuda_ops.module_free(m);
            free(src);
            rt_cuda_ops.close(cu);
        }
    }
    lowered_free(&l);
}

/* No reuse (one point per call), or a tile too large to unroll: nothing
 * is staged, and the results still match. */
static void test_staging_needs_reuse_and_unrolling(void) {
    lowered l;
    const char *pointwise = "input f32 in(64, 32);\nf(x, y) = in(x, y) * 2.0;\ng(x, y) = f(x, y) + 1.0;\noutput g(64, 32);\n";
    CHECK(lower_text(&l, pointwise, "schedule t;\ng: root [x=16x2 y=2x2];\nf: root [x=32x1 y=1x1];\n"));
    if (l.prog) {
        CHECK(kernel_named(l.prog, "g_s0")->nstaged == 0);
        CHECK(mismatches_on_c(&l) == 0);
    }
    lowered_free(&l);
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=8x4 y=4x4];\nblur_x: root [x=32x1 y=8x1];\nclamped: inline;\n"));
    if (l.prog) {
        CHECK(kernel_named(l.prog, "out_s0")->nstaged == 0);     /* 16 points: not unrolled */
        CHECK(mismatches_on_c(&l) == 0);
    }
    lowered_free(&l);
}

/* A reduction over a 3-tap domain with 2 points per thread: the loops
 * unroll (2 x 3 < 16), the 4-point footprint replaces 6 loads. */
static void test_staging_reduction(void) {
    lowered l;
    const char *conv = "input f32 in(66);\nw(i) = f32(i) + 1.0;\nrdom r(0, 3);\n"
                       "out(x) = 0.0;\nout(x) = out(x) + in(x + r) * w(r);\noutput out(64);\n";
    CHECK(lower_text(&l, conv, "schedule t;\nout: root [x=32x1] [x=16x2];\nw: root [i=4x1];\n"));
    if (l.prog) {
        const lower_kernel *k = kernel_named(l.prog, "out_s1");
        CHECK(k && k->nstaged == 2);               /* in (4 points) and w (3) */
        CHECK(k && k->staged_elems == 7);
        CHECK(mismatches_on_c(&l) == 0);
    }
    lowered_free(&l);
}

/* The register estimate sets LEGAL_STAGED_REGISTERS (64) aside for staged
 * points, and lowering stages no more than that: 16 + 64 + 4 serial
 * points = 84. */
static void test_staging_registers(void) {
    lowered l;
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=16x2 y=4x2];\nblur_x: root [x=32x2 y=8x1];\nclamped: inline;\n"));
    if (l.prog) {
        target t;
        char err[512];
        CHECK(target_by_name("a100", NULL, &t, err, sizeof err) == 0);
        const lower_kernel *k = kernel_named(l.prog, "out_s0");
        CHECK(k && k->staged_elems == 8 && k->staged_elems <= LEGAL_STAGED_REGISTERS);
        t.registers_per_thread = 84;
        CHECK(sched_check(l.p, l.b, l.s, &t, false, err, sizeof err) == 0);
        t.registers_per_thread = 83;
        CHECK(sched_check(l.p, l.b, l.s, &t, false, err, sizeof err) != 0);
        CHECK(strstr(err, "out: an estimated 84 registers per thread (16 + 64 for thread-level and staged points "
                          "+ 4 serial points)") != NULL);
    }
    lowered_free(&l);
}

int main(void) {
    RUN(test_staging_stencil);
    RUN(test_staging_needs_reuse_and_unrolling);
    RUN(test_staging_reduction);
    RUN(test_staging_registers);
    CHECK_EXIT();
}
