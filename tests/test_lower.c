/*
 * test_lower.c - lowering decisions checked on hand-written schedules:
 * register staging (Anderson et al. 2021 §6.7) happens exactly where a
 * thread's unrolled tile reuses a global producer at affine coordinates,
 * counts towards the register estimate, keeps results equal to the
 * reference on the C back end, and (where NVRTC is present) leaves the
 * staged array in registers: no stack frame.  And where the reduction
 * loops of an update go (inside or around the serial tile).
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "exec.h"
#include "sched.h"
#include "legal.h"
#include "features.h"
#include "fixtures.h"
#include "nest.h"
#include "nest_query.h"

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
    bool cpu;
} lowered;

/* Lowers sched of src for a GPU (lower_text) or a CPU (lower_text_cpu). */
static bool lower_text_on(lowered *l, const char *src, const char *sched, bool cpu) {
    memset(l, 0, sizeof *l);
    l->cpu = cpu;
    l->p = sc_parse_string("t.pipe", src, strlen(src), NULL);
    if (sc_error_count(l->p)) {
        fprintf(stderr, "%s\n", sc_error_message(l->p, 0));
        return false;
    }
    l->b = bounds_infer(l->p);
    l->a = ir_arena_new();
    char err[1024];
    l->s = sched_parse(l->a, l->p, "t.sched", sched, err, sizeof err);
    l->prog = l->s ? lower_schedule_for(l->a, l->p, l->b, l->s, l->cpu, err, sizeof err) : NULL;
    if (!l->prog) fprintf(stderr, "%s\n", err);
    return l->prog != NULL;
}

static bool lower_text(lowered *l, const char *src, const char *sched) { return lower_text_on(l, src, sched, false); }

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

/* Runs prog on the device of ops and compares with the reference; -2
 * when the device is not there. */
static int64_t mismatches_on(const rt_ops *ops, const lowered *l) {
    char err[4096];
    rt_device *dev = ops->open(err, sizeof err);
    if (!dev) { fprintf(stderr, "%s\n", err); return -2; }
    sc_buffer *in[4] = {0}, *ref[4] = {0};
    for (int i = 0; i < l->p->inputs.n; i++) in[i] = sc_input_random(l->p, i, 3);
    int64_t bad = -1;
    exec_diff diff;
    if (sc_evaluate(l->p, in, 3, ref) == 0) {
        exec_session *x = exec_open_checked(ops, dev, l->prog, CG_MATH_EXACT, NULL, in, ref, 60000, &diff,
                                            err, sizeof err);
        bad = x ? diff.mismatches : -1;
        if (!x) fprintf(stderr, "%s\n", err);
        exec_close(x);
    }
    for (int i = 0; i < 4; i++) { sc_buffer_free(in[i]); sc_buffer_free(ref[i]); }
    ops->close(dev);
    return bad;
}

static int64_t mismatches_on_c(const lowered *l) { return mismatches_on(&rt_c_ops, l); }

/* l's code matches the reference bit for bit on C, and on OpenCL where
 * a device is there. */
static void check_matches(const lowered *l) {
    CHECK(mismatches_on_c(l) == 0);
    int64_t bad = mismatches_on(&rt_opencl_ops, l);
    CHECK(bad == 0 || bad == -2);
}

/* A Func fused into several consumers takes the hull of their boxes,
 * found over the combinations of the tile indices each dimension's boxes
 * depend on; a kernel with more positions than NEST_HULL_POSITIONS (here
 * 1024 x 1040 threads, and 532,480 blocks of two) keeps that hull rather
 * than g's whole region (before, 1025 x 1041 elements a thread: over any
 * register file).  The model and lowering agree, the schedule fits an
 * A100 and the code matches the reference on C and OpenCL. */
static void test_hull_past_positions(void) {
    const char *src = "input f32 in(1026, 1042);\n"
                      "g(x, y) = in(x, y) * 2.0;\n"
                      "a(x, y) = g(x, y) + g(x + 1, y);\n"
                      "b(x, y) = g(x, y) + g(x, y + 1);\n"
                      "out(x, y) = a(x, y) + b(x, y);\n"
                      "output out(1024, 1040);\n";
    const char *texts[2] = {
        "schedule t;\nout: root [x=16x1 y=16x1];\na: thread of out;\nb: thread of out;\ng: thread of out;\n",
        "schedule t;\nout: root [x=2x1 y=1x1];\na: block of out [x=2 y=1];\nb: block of out [x=2 y=1];\n"
        "g: block of out [x=2 y=1];\n" };
    const int64_t want[2][2] = { { 2, 2 }, { 3, 2 } };
    for (int i = 0; i < 2; i++) {
        lowered l;
        CHECK(lower_text(&l, src, texts[i]));
        if (!l.prog) { lowered_free(&l); continue; }
        char err[1024];
        target a100 = fixture_target("a100");
        if (sched_check(l.p, l.b, l.s, &a100, false, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            CHECK(false);
        }
        nest_ctx *x = nest_ctx_new(l.p, l.b);
        nest *m = nest_build(x, l.s, err, sizeof err);
        CHECK(m != NULL);
        int g = -1;
        for (int f = 0; f < l.p->funcs.n; f++)
            if (!strcmp(((const sc_func *)l.p->funcs.items[f])->name, "g")) g = f;
        const nest_func *gf = m && g >= 0 ? m->funcs[g] : NULL;
        CHECK(gf && !gf->hull_whole && gf->extent[0] == want[i][0] && gf->extent[1] == want[i][1]);
        const lower_alloc *ga = l.prog->nkernels == 1 ? l.prog->kernels[0]->storage[g] : NULL;
        CHECK(ga && ga->extent[0] == want[i][0] && ga->extent[1] == want[i][1]);
        nest_free(m);
        nest_ctx_free(x);
        check_matches(&l);
        lowered_free(&l);
    }
}

/* A CPU target stages nothing (PoCL keeps the array in memory per
 * work-item: docs/backends.md, generation 7): the schedule that stages
 * out's reads of blur_x on a GPU lowers with none for a CPU, its model
 * says the GPU rule would have staged (nest_would_stage), the register
 * estimate counts no staged points, and the code still matches the
 * reference on C and OpenCL. */
static void test_no_staging_on_cpu(void) {
    lowered l;
    const char *sched = "schedule t;\nout: root [x=16x2 y=4x2];\nblur_x: root [x=32x2 y=8x1];\nclamped: inline;\n";
    CHECK(lower_text(&l, blur_src, sched));
    if (!l.prog) { lowered_free(&l); return; }
    char err[1024];
    lower_program *cpu = lower_schedule_for(l.a, l.p, l.b, l.s, true, err, sizeof err);
    CHECK(cpu != NULL);
    if (cpu) {
        for (int i = 0; i < cpu->nkernels; i++) CHECK(cpu->kernels[i]->nstaged == 0);
        char *src = cg_generate(cpu, CG_OPENCL);
        CHECK(src && !strstr(src, "blur_x_r["));
        free(src);
    }
    nest_ctx *x = nest_ctx_new(l.p, l.b);
    nest *gpu_model = nest_build(x, l.s, err, sizeof err);
    CHECK(gpu_model && !nest_would_stage(gpu_model));
    nest_free(gpu_model);
    nest_ctx_set_staging(x, false);
    nest *cpu_model = nest_build(x, l.s, err, sizeof err);
    CHECK(cpu_model && nest_would_stage(cpu_model));
    for (int i = 0; cpu_model && i < cpu_model->nkernels; i++) CHECK(cpu_model->kernels[i]->nstaged == 0);
    nest_free(cpu_model);
    nest_ctx_free(x);
    /* the staged elements leave the register estimate */
    target t = fixture_target("a100");
    feat_result fg = { 0 }, fc = { 0 };
    CHECK(feat_compute(l.p, l.b, l.s, &t, &fg, err, sizeof err) == 0);
    t.cpu = true;
    CHECK(feat_compute(l.p, l.b, l.s, &t, &fc, err, sizeof err) == 0);
    int reg = feat_index("registers_per_thread"), found = 0;
    for (int i = 0; i < fg.n && i < fc.n; i++)
        if (!strcmp(((const sc_func *)l.p->funcs.items[fg.rows[i].func])->name, "out")) {
            CHECK(fc.rows[i].v[reg] == fg.rows[i].v[reg] - 8);
            found++;
        }
    CHECK(found == 1);
    feat_free(&fg);
    feat_free(&fc);
    if (cpu) {
        l.prog = cpu;
        check_matches(&l);
    }
    lowered_free(&l);
}

/* A thread-level Func of 16 to 63 points a thread has its loops unrolled
 * (NEST_UNROLL_THREAD_LIMIT), so that every index into its private array
 * is a constant, and so has the stage that reads that array (generation
 * 10), whose OpenCL indices into it are the unrolled loops' counters; a
 * root Func's tile of as many points with no such producer keeps its
 * loops; a reduction in a thread-level Func unrolls under the same
 * limit. */
static void test_thread_tiles_unrolled(void) {
    lowered l;
    /* out: 1 x 16 points a thread; blur_x in its threads: 1 x 18 (the
     * tiles divide the image: no thread's window is clamped) */
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=16x1 y=1x16];\nblur_x: thread of out;\nclamped: inline;\n"));
    if (l.prog) {
        char *src = cg_generate(l.prog, CG_OPENCL);
        CHECK(src && strstr(src, "for (int blur_x_y_u_ = 0; blur_x_y_u_ < 18; blur_x_y_u_++)") != NULL);
        /* out's own 16 points, which read blur_x's array, unroll too, and
         * index it with the loops' counters alone */
        CHECK(src && strstr(src, "for (int out_y_u_ = 0; out_y_u_ < 16; out_y_u_++)") != NULL);
        CHECK(src && strstr(src, "blur_x_r[blur_x_x_u_ + blur_x_y_u_]") != NULL);
        CHECK(src && strstr(src, "blur_x_r[out_x_u_ + out_y_u_ + 2]") != NULL);
        CHECK(src && !strstr(src, "- blur_x_y_min"));
        free(src);
        char err[1024];
        nest_ctx *x = nest_ctx_new(l.p, l.b);
        nest *m = nest_build(x, l.s, err, sizeof err);
        CHECK(m && nest_unrolls_thread_tiles(m));
        nest_free(m);
        nest_ctx_free(x);
        check_matches(&l);
    }
    lowered_free(&l);
    /* a 2-D tile: out 4 x 8 points a thread reading blur_x's 4 x 10 */
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=4x4 y=2x8];\nblur_x: thread of out;\nclamped: inline;\n"));
    if (l.prog) {
        char *src = cg_generate(l.prog, CG_OPENCL);
        CHECK(src && strstr(src, "for (int out_x_u_ = 0; out_x_u_ < 4; out_x_u_++)") != NULL);
        CHECK(src && strstr(src, "blur_x_r[out_x_u_ + out_y_u_ * 4 + 8]") != NULL);
        free(src);
        check_matches(&l);
    }
    lowered_free(&l);
    /* out's 16 points with blur_x at root: no private array, a loop */
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=16x1 y=2x16];\nblur_x: root [x=16x1 y=2x1];\nclamped: inline;\n"));
    if (l.prog) {
        char *src = cg_generate(l.prog, CG_OPENCL);
        CHECK(src && strstr(src, "for (int out_y = ") != NULL && !strstr(src, "out_y_u_ < 16"));
        free(src);
    }
    lowered_free(&l);
    /* 1 x 4 points: unrolled under either limit, nothing changed */
    CHECK(lower_text(&l, blur_src, "schedule t;\nout: root [x=16x1 y=2x2];\nblur_x: thread of out;\nclamped: inline;\n"));
    if (l.prog) {
        char err[1024];
        nest_ctx *x = nest_ctx_new(l.p, l.b);
        nest *m = nest_build(x, l.s, err, sizeof err);
        CHECK(m && !nest_unrolls_thread_tiles(m));
        nest_free(m);
        nest_ctx_free(x);
    }
    lowered_free(&l);
    /* a reduction of 8 steps over 4 points in a consumer's threads */
    const char *red_src = "size W = 64;\nsize H = 48;\ninput f32 in(W + 8, H);\n"
                          "rdom r(0, 8);\nacc(x, y) = 0.5f;\nacc(x, y) += in(x + r.x, y);\n"
                          "out(x, y) = acc(x, y) * 2.0f;\noutput out(W, H);\n";
    CHECK(lower_text(&l, red_src, "schedule t;\nout: root [x=16x1 y=4x4];\nacc: thread of out;\n"));
    if (l.prog) {
        char *src = cg_generate(l.prog, CG_OPENCL);
        /* the reduction loop carries the unroll pragma (an unrolled loop
         * counts from 0) */
        const char *r = src ? strstr(src, "for (int acc_r_x_u_ = 0; acc_r_x_u_ < 8; acc_r_x_u_++)") : NULL;
        CHECK(r != NULL);
        if (r) {
            const char *line = r;
            while (line > src && line[-1] != '\n') line--;
            const char *prev = line - 1;
            while (prev > src && prev[-1] != '\n') prev--;
            CHECK(!strncmp(prev + strspn(prev, " "), "#pragma unroll", 14));
        }
        free(src);
        check_matches(&l);
    }
    lowered_free(&l);
}

/* Whether OpenCL code src has the loop over `var` (an unrolled one counts
 * from 0 as var_u_) unrolled (1), rolled (0), or not at all (-1). */
static int loop_unrolled(const char *src, const char *var) {
    char u[96], r[96];
    snprintf(u, sizeof u, "for (int %s_u_ = 0;", var);
    snprintf(r, sizeof r, "for (int %s = ", var);
    return src && strstr(src, u) ? 1 : src && strstr(src, r) ? 0 : -1;
}

/* On a CPU, a reduction around an unrolled tile unrolls whole where the
 * tile times the whole reduction is under NEST_UNROLL_AROUND_LIMIT
 * (generation 24): a convolution's 8 channels a work-item over a 4 x 3 x
 * 3 reduction (288 points; each loop alone with the tile, 32 and 24
 * points, was over 16), where the reduction's loops come to about 11,000
 * nodes (over the 4,096 that cap other loops); not a tile of 16 points (no
 * unrolled tile), nor 8 channels over a 8 x 3 x 3 reduction (576 points),
 * whose loops stay as each alone says; one point a thread is unchanged;
 * and on a GPU nothing changes (the reduction whole spilled registers in
 * lens_blur's CUDA).  The loop-nest model says the same
 * (nest_unrolls_reductions_around, and every loop unrolled), and each
 * runs the reference's result bit for bit on C and OpenCL. */
static void test_reductions_around_unrolled(void) {
    static const char *conv =
        "size W = 64;\nsize H = 48;\ninput f32 in(W + 2, H + 2, 8);\ninput f32 w(8, 8, 3, 3);\n"
        "rdom r(0, %d, 0, 3, 0, 3);\nl(x, y, c) = 0.5;\n"
        "l(x, y, c) += w(c, r.x, r.y, r.z) * in(x + r.y, y + r.z, r.x);\noutput l(W, H, 8);\n";
    struct { int chans; const char *tile; bool cpu; int want; bool changed; } c[] = {
        { 4, "x=16x1 y=4x1 c=1x8", true, 1, true },     /* 288 points */
        { 4, "x=16x1 y=4x1 c=1x8", false, 0, false },   /* a GPU's */
        { 4, "x=16x1 y=4x2 c=1x8", true, 0, false },    /* a tile of 16 */
        { 8, "x=16x1 y=4x1 c=1x8", true, 0, false },    /* 576 points */
        { 4, "x=16x1 y=4x1 c=8x1", true, 1, false },    /* one point: unrolled before */
    };
    for (int i = 0; i < 5; i++) {
        char src[512], sched[256];
        snprintf(src, sizeof src, conv, c[i].chans);
        snprintf(sched, sizeof sched, "schedule t;\nl: root [x=16x1 y=4x1 c=1x1] [%s];\n", c[i].tile);
        lowered l;
        CHECK(lower_text_on(&l, src, sched, c[i].cpu));
        if (!l.prog) { lowered_free(&l); continue; }
        char *code = cg_generate(l.prog, CG_OPENCL);
        const char *k = code ? strstr(code, "void l_s1(") : NULL;
        CHECK(k != NULL);
        if (k) {
            CHECK(loop_unrolled(k, "l_r_x") == c[i].want);
            CHECK(loop_unrolled(k, "l_r_y") == c[i].want);
            CHECK(loop_unrolled(k, "l_r_z") == c[i].want);
        }
        free(code);
        /* generation 23 would have left it rolled: the loop of 288
         * points comes to more than its cap of 4,096 nodes */
        CHECK(cg_unrolls_whole_past(l.prog) == c[i].changed);
        char err[1024];
        nest_ctx *x = nest_ctx_new(l.p, l.b);
        nest_ctx_set_staging(x, !c[i].cpu);
        nest *m = nest_build(x, l.s, err, sizeof err);
        CHECK(m != NULL);
        if (m) {
            CHECK(nest_unrolls_reductions_around(m) == c[i].changed);
            const nest_stage *rec = NULL;
            for (int fid = 0; fid < m->nfuncs && !rec; fid++)
                if (m->funcs[fid] && m->funcs[fid]->nstages == 2) rec = m->funcs[fid]->stages[1];
            CHECK(rec && nest_serial_loops_unrolled(rec) == (c[i].want == 1));
        }
        nest_free(m);
        nest_ctx_free(x);
        check_matches(&l);
        lowered_free(&l);
    }
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

/* Which updates accumulate in place (ir_stage_accumulates) and which
 * scatter (ir_stage_scatters). */
static void test_accumulates(void) {
    const char *src = "input f32 in(8, 8);\nrdom r(0, 8);\n"
                      "acc(x) = 0.0;\nacc(x) += in(x, r);\n"            /* in place */
                      "mx(x) = 0.0;\nmx(x) = max(mx(x), in(r, x));\n"  /* in place */
                      "rdom s(1, 7);\nscan(x, y) = in(x, y);\nscan(x, s) = scan(x, s - 1) + scan(x, s);\n"
                      "h(i) = 0;\nh(clamp(i32(in(r, 0)), 0, 7)) += 1;\n"
                      "dbl(x) = acc(x);\ndbl(x) = dbl(x) * 2.0;\n"        /* no reduction */
                      "out(x) = dbl(x) + mx(x) + scan(x, 7) + f32(h(x));\noutput out(8);\n";
    sc_pipeline *p = sc_parse_string("t.pipe", src, strlen(src), NULL);
    if (sc_error_count(p)) fprintf(stderr, "%s\n", sc_error_message(p, 0));
    CHECK(sc_error_count(p) == 0);
    const char *names[] = { "acc", "mx", "scan", "h", "dbl" };
    const bool want[] = { true, true, false, false, false };
    for (int i = 0; i < 5; i++) {
        const sc_func *f = NULL;
        for (int k = 0; k < p->funcs.n; k++)
            if (!strcmp(((sc_func *)p->funcs.items[k])->name, names[i])) f = p->funcs.items[k];
        CHECK(f && f->nstages == 2);
        if (!f) continue;
        if (ir_stage_accumulates(f, 1) != want[i]) fprintf(stderr, "%s: expected %d\n", names[i], want[i]);
        CHECK(ir_stage_accumulates(f, 1) == want[i]);
        CHECK(!ir_stage_accumulates(f, 0));
        CHECK(ir_stage_scatters(f, 1) == (i == 3));     /* only h's coordinate is loaded */
        CHECK(!ir_stage_scatters(f, 0));
    }
    sc_pipeline_free(p);
}

/* Where the reduction loops go: around the serial tile of an update over
 * several points a thread (a matrix product's 4x2 or 4x4, a scan's 4),
 * inside it for one point and for a scatter (4 points along its pure x);
 * each gives the reference's result bit for bit. */
static void test_reduction_order(void) {
    const char *mm = "input f32 A(16, 16);\ninput f32 B(16, 16);\nrdom r(0, 16);\n"
                     "prod(i, j) = 0.0;\nprod(i, j) += A(i, r) * B(r, j);\noutput prod(16, 16);\n";
    const char *sc = "input f32 in(16, 16);\nrdom r(1, 15);\n"
                     "f(x, y) = in(x, y);\nf(x, r) = f(x, r - 1) * 0.5 + f(x, r);\noutput f(16, 16);\n";
    const char *sg = "input f32 in(8, 16);\nrdom r(0, 16);\n"
                     "h(x, y) = 0.0;\nh(x, clamp(i32(in(x, r) * 8.0), 0, 7)) += in(x, r);\noutput h(8, 8);\n";
    struct { const char *src, *sched, *kernel, *rloop, *ploop; bool outer; } c[] = {
        { mm, "schedule t;\nprod: root [i=4x4 j=4x4] [i=4x4 j=4x2];\n", "void prod_s1(", "prod_r_x = ", "prod_i = ",
          true },
        /* 16 points a thread, not unrolled: around them too */
        { mm, "schedule t;\nprod: root [i=4x4 j=4x4] [i=4x4 j=4x4];\n", "void prod_s1(", "prod_r_x = ", "prod_i = ",
          true },
        /* one point a thread: the same code either way, the reduction inside */
        { mm, "schedule t;\nprod: root [i=4x4 j=4x4] [i=4x1 j=4x1];\n", "void prod_s1(", "prod_r_x = ", "prod_i = ",
          false },
        /* a scan: around its tile since code generation 13, inside one point */
        { sc, "schedule t;\nf: root [x=4x4 y=4x1] [x=4x4];\n", "void f_s1(", "f_r_x = ", "f_x = ", true },
        { sc, "schedule t;\nf: root [x=4x4 y=4x1] [x=4x1];\n", "void f_s1(", "f_r_x = ", "f_x = ", false },
        /* a scatter along y, pure in x: inside */
        { sg, "schedule t;\nh: root [x=4x1 y=4x1] [x=2x4];\n", "void h_s1(", "h_r_x = ", "h_x = ", false },
    };
    for (int i = 0; i < 6; i++) {
        lowered l;
        CHECK(lower_text(&l, c[i].src, c[i].sched));
        if (l.prog) {
            char *code = cg_generate_math(l.prog, CG_C, CG_MATH_EXACT);
            const char *k = code ? strstr(code, c[i].kernel) : NULL;
            const char *rl = k ? strstr(k, c[i].rloop) : NULL, *pl = k ? strstr(k, c[i].ploop) : NULL;
            CHECK(rl && pl);
            if (rl && pl) CHECK((rl < pl) == c[i].outer);
            free(code);
            CHECK(mismatches_on_c(&l) == 0);
        }
        lowered_free(&l);
    }
}

int main(void) {
    RUN(test_accumulates);
    RUN(test_reduction_order);
    RUN(test_staging_stencil);
    RUN(test_no_staging_on_cpu);
    RUN(test_thread_tiles_unrolled);
    RUN(test_reductions_around_unrolled);
    RUN(test_hull_past_positions);
    RUN(test_staging_needs_reuse_and_unrolling);
    RUN(test_staging_reduction);
    RUN(test_staging_registers);
    CHECK_EXIT();
}
