/*
 * test_nest.c - the loop-nest model against the kernel IR lowering makes,
 * on every app at its small sizes and NEST_SCHEDULES random schedules each
 * (default 20): kernels (count, order, blocks, threads), shared and
 * register allocations (extents, bytes), register-staged copies and the
 * footprints of fused Funcs must be equal.  Partial states (prefixes of
 * a random walk) must build and leave undecided Funcs out.  Plus hand
 * cases: a block-fused 3x3 stencil's recompute, and strides of a
 * transpose.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "check.h"
#include "fixtures.h"
#include "lower.h"
#include "nest.h"
#include "space.h"

/* The kernel IR's allocations of kernel k for Func id, or NULL. */
static const lower_alloc *alloc_of(const lower_kernel *k, int id) {
    const lower_alloc *a = k->storage[id];
    return a && a->mem != MEM_GLOBAL ? a : NULL;
}

/* Compares model and program; returns the number of mismatches (printed). */
static int compare(const char *what, const sc_pipeline *p, const nest *m, const lower_program *prog) {
    int bad = 0;
#define MISMATCH(...) do { if (bad++ < 5) { fprintf(stderr, "%s: ", what); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
    if (m->nkernels != prog->nkernels) MISMATCH("%d kernels in the model, %d lowered", m->nkernels, prog->nkernels);
    for (int k = 0; k < m->nkernels && k < prog->nkernels; k++) {
        const nest_kernel *mk = m->kernels[k];
        const lower_kernel *lk = prog->kernels[k];
        if (mk->root != lk->root || mk->stage != lk->stage)
            MISMATCH("kernel %d is %s.%d in the model, %s.%d lowered", k, mk->root->name, mk->stage, lk->root->name, lk->stage);
        if (mk->nblocks != lk->nblocks || mk->nthreads != lk->nthreads)
            MISMATCH("kernel %s: %lld x %d in the model, %lld x %d lowered", lk->name, (long long)mk->nblocks,
                     mk->nthreads, (long long)lk->nblocks, lk->nthreads);
        if (mk->nshared != lk->nshared) MISMATCH("kernel %s: %d shared arrays, %d lowered", lk->name, mk->nshared, lk->nshared);
        if (mk->nstaged != lk->nstaged || mk->staged_elems != lk->staged_elems)
            MISMATCH("kernel %s: %d staged (%lld elements) in the model, %d (%lld) lowered", lk->name, mk->nstaged,
                     (long long)mk->staged_elems, lk->nstaged, (long long)lk->staged_elems);
        int64_t shared = 0;
        for (int i = 0; i < lk->nshared; i++) shared += lk->shared[i]->count * (int64_t)sc_type_size(lk->shared[i]->func->type);
        if (shared != mk->shared_bytes)
            MISMATCH("kernel %s: %lld shared bytes in the model, %lld lowered", lk->name, (long long)mk->shared_bytes,
                     (long long)shared);
        int nreg = 0;
        int64_t regs = 0;
        for (int i = 0; i < p->funcs.n; i++) {
            const lower_alloc *a = alloc_of(lk, i);
            const nest_func *f = m->funcs[i];
            if (a && a->mem == MEM_LOCAL) { nreg++; regs += a->count; }
            if (!a) continue;
            if (!f || f->mem == NEST_GLOBAL) { MISMATCH("%s is fused in %s but not in the model", a->func->name, lk->name); continue; }
            if ((a->mem == MEM_SHARED) != (f->mem == NEST_SHARED)) MISMATCH("%s: memory kind differs", a->func->name);
            if (f->stages[0]->kernel != mk) MISMATCH("%s: not in kernel %d in the model", a->func->name, k);
            for (int d = 0; d < a->ndims; d++)
                if (a->extent[d] != f->extent[d])
                    MISMATCH("%s dim %d: extent %lld in the model, %lld lowered", a->func->name, d,
                             (long long)f->extent[d], (long long)a->extent[d]);
            if (f->bytes != a->count * (int64_t)sc_type_size(a->func->type)) MISMATCH("%s: bytes differ", a->func->name);
        }
        if (nreg != mk->nregister || regs != mk->register_elems)
            MISMATCH("kernel %s: %d register arrays (%lld elements) in the model, %d (%lld) lowered", lk->name,
                     mk->nregister, (long long)mk->register_elems, nreg, (long long)regs);
    }
#undef MISMATCH
    return bad;
}

static int nschedules(void) {
    const char *e = getenv("NEST_SCHEDULES");
    return e && atoi(e) > 0 ? atoi(e) : 20;
}

/* Every app, random complete schedules: the model equals the kernel IR;
 * and every prefix of the walk builds, modelling only decided Funcs. */
static void model_equals_kernel_ir(void) {
    target t = fixture_target("a100");
    int multi = 0;                 /* fused Funcs with several consumers */
    char **names, err[1024];
    int n = apps_list("apps", &names, err, sizeof err);
    CHECK(n >= 17);
    sc_parse_options po = { 1, 0, NULL, NULL };
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "apps/%s.pipe", names[i]);
        sc_pipeline *p = sc_parse_file(path, &po);
        bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
        CHECK(b != NULL);
        if (!b) { sc_pipeline_free(p); continue; }
        nest_ctx *x = nest_ctx_new(p, b);
        fusion_graph *g = fusion_graph_new(p);
        fusion_use *uses = calloc((size_t)fusion_max_uses(g) + 1, sizeof *uses);
        int ok = 0, total = nschedules(), fused = 0, partial = 0;
        for (int k = 0; k < total; k++) {
            space_opts o = { &t, k % 2 == 1, false };
            ir_arena *a = ir_arena_new();
            sched_state *s = space_random(a, p, b, &o, (uint64_t)k + 1, err, sizeof err);
            CHECK(s != NULL);
            if (!s) { ir_arena_free(a); continue; }
            lower_program *prog = lower_schedule(a, p, b, s, err, sizeof err);
            CHECK(prog != NULL);
            char merr[512];
            nest *m = nest_build(x, s, merr, sizeof merr);
            if (!m) fprintf(stderr, "%s seed %d: %s\n", names[i], k + 1, merr);
            CHECK(m != NULL);
            char what[300];
            snprintf(what, sizeof what, "%s seed %d", names[i], k + 1);
            if (m && prog && compare(what, p, m, prog) == 0) ok++;
            for (int f = 0; m && f < p->funcs.n; f++) {
                bool fu = m->funcs[f] && m->funcs[f]->loc != SCHED_ROOT;
                fused += fu;
                multi += fu && fusion_consumers(g, s, f, uses) > 1;
            }
            nest_free(m);
            /* built from scratch (no kernel reuse), the same */
            if (k < 3) {
                nest_ctx *y = nest_ctx_new(p, b);
                nest_ctx_cache_kernels(y, false);
                nest *f = nest_build(y, s, merr, sizeof merr);
                CHECK(f != NULL && prog && compare(what, p, f, prog) == 0);
                nest_free(f);
                nest_ctx_free(y);
            }
            /* prefixes: decide Funcs in the walk's order, undecided first */
            sched_state *q = sched_state_new(a, p);
            for (int f = space_next(p, q, NULL); f >= 0 && k < 3; f = space_next(p, q, NULL)) {
                q->f[f] = s->f[f];
                nest *pm = nest_build(x, q, merr, sizeof merr);
                if (!pm) fprintf(stderr, "%s seed %d partial: %s\n", names[i], k + 1, merr);
                CHECK(pm != NULL);
                for (int g = 0; pm && g < p->funcs.n; g++)
                    if (!q->f[g] || q->f[g]->loc == SCHED_INLINE) CHECK(pm->funcs[g] == NULL);
                partial += pm != NULL;
                nest_free(pm);
            }
            ir_arena_free(a);
        }
        check_report(ok == total, "%s: model equals kernel IR on %d/%d schedules (%d fused Funcs), %d partial states",
                     names[i], ok, total, fused, partial);
        nest_ctx_free(x);
        fusion_graph_free(g);
        free(uses);
        bounds_free(b);
        sc_pipeline_free(p);
    }
    apps_free_names(names, n);
    check_report(multi > 0, "the random schedules fuse %d Funcs into several consumers", multi);
}

static sc_pipeline *parse(const char *text) {
    sc_pipeline *p = sc_parse_string("t.pipe", text, strlen(text), NULL);
    CHECK(sc_error_count(p) == 0);
    return p;
}

static sc_func *func_named(const sc_pipeline *p, const char *name) {
    for (int i = 0; i < p->funcs.n; i++)
        if (!strcmp(((sc_func *)p->funcs.items[i])->name, name)) return p->funcs.items[i];
    return NULL;
}

/* g is read by a (x, x + 1) and b (y, y + 1), both fused into out: g
 * fused at their common ancestor out gets the hull of their footprints. */
static const char *TWO_CONSUMERS =
    "input f32 in(66, 66);\n"
    "g(x, y) = in(x, y) * 2.0;\n"
    "a(x, y) = g(x, y) + g(x + 1, y);\n"
    "b(x, y) = g(x, y) + g(x, y + 1);\n"
    "out(x, y) = a(x, y) + b(x, y);\n"
    "output out(64, 64);\n";

/* Block level: per 16x16 block a and b are 16x16, g the hull 17x17 (not
 * its 65x65 region); thread level (one point per thread): a and b 1x1, g
 * 2x2.  The model equals lowering on both. */
static void multi_consumer_hull(void) {
    sc_pipeline *p = parse(TWO_CONSUMERS);
    bounds_result *b = bounds_infer(p);
    const char *texts[2] = {
        "schedule t;\nout: root [x=16x1 y=16x1];\na: block of out [x=16 y=16];\nb: block of out [x=16 y=16];\n"
        "g: block of out [x=16 y=16];\n",
        "schedule t;\nout: root [x=16x1 y=16x1];\na: thread of out;\nb: thread of out;\ng: thread of out;\n" };
    const int64_t want[2] = { 17, 2 };
    for (int i = 0; i < 2; i++) {
        ir_arena *a = ir_arena_new();
        char err[512];
        sched_state *s = sched_parse(a, p, "t.sched", texts[i], err, sizeof err);
        if (!s) fprintf(stderr, "%s\n", err);
        CHECK(s != NULL);
        nest_ctx *x = nest_ctx_new(p, b);
        nest *m = s ? nest_build(x, s, err, sizeof err) : NULL;
        if (s && !m) fprintf(stderr, "%s\n", err);
        CHECK(m != NULL);
        lower_program *prog = s ? lower_schedule(a, p, b, s, err, sizeof err) : NULL;
        CHECK(prog != NULL);
        if (m) {
            const nest_func *gf = m->funcs[func_named(p, "g")->id], *af = m->funcs[func_named(p, "a")->id];
            CHECK(gf && gf->extent[0] == want[i] && gf->extent[1] == want[i]);
            CHECK(gf && gf->mem == (i ? NEST_REGISTER : NEST_SHARED));
            CHECK(af && af->extent[0] == want[i] - 1 && af->extent[1] == want[i] - 1);
            CHECK(!prog || compare(i ? "thread hull" : "block hull", p, m, prog) == 0);
        }
        nest_free(m);
        nest_ctx_free(x);
        ir_arena_free(a);
    }
    bounds_free(b);
    sc_pipeline_free(p);
}

/* What one block computes of a THREAD-level Func with several consumers
 * is the hull of what their blocks read, as lowering allocates a Func
 * fused at block level: with a, b and g at thread level of out (16x16
 * blocks, one point per thread), g's per-block figure is 17x17, the
 * shared array lowering makes for g when the three sit at block level
 * (a plain union of a's and b's reads, whose origins are different
 * symbols, would fall back to g's 65x65 region). */
static void thread_hull_per_block(void) {
    sc_pipeline *p = parse(TWO_CONSUMERS);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    char err[512];
    const sc_func *g = func_named(p, "g"), *af = func_named(p, "a"), *in = func_named(p, "in");
    sched_state *bs = sched_parse(a, p, "t.sched",
                                  "schedule t;\nout: root [x=16x1 y=16x1];\na: block of out [x=16 y=16];\n"
                                  "b: block of out [x=16 y=16];\ng: block of out [x=16 y=16];\n", err, sizeof err);
    sched_state *ts = sched_parse(a, p, "t.sched",
                                  "schedule t;\nout: root [x=16x1 y=16x1];\na: thread of out;\nb: thread of out;\n"
                                  "g: thread of out;\n", err, sizeof err);
    CHECK(bs != NULL && ts != NULL);
    lower_program *prog = bs ? lower_schedule(a, p, b, bs, err, sizeof err) : NULL;
    const lower_alloc *ga = prog && prog->nkernels == 1 ? alloc_of(prog->kernels[0], g->id) : NULL;
    CHECK(ga != NULL && ga->extent[0] == 17 && ga->extent[1] == 17);
    nest_ctx *x = nest_ctx_new(p, b);
    nest *m = ts ? nest_build(x, ts, err, sizeof err) : NULL;
    CHECK(m != NULL);
    if (m && ga) {
        const nest_func *gf = m->funcs[g->id];
        CHECK(gf && gf->mem == NEST_REGISTER && gf->extent[0] == 2 && gf->extent[1] == 2);
        const nest_access *gi = gf ? &gf->stages[0]->access[0] : NULL;     /* g reads in(x, y) */
        CHECK(gi && gi->producer == in);
        for (int d = 0; gi && d < 2; d++) CHECK(gi->fp_block[d] == ga->extent[d]);
        CHECK(gi && gi->bytes_block == 17 * 17 * 4);
        /* a reads g at (x, y) and (x + 1, y) over its 16x16 per block */
        const nest_access *ag = m->funcs[af->id] ? &m->funcs[af->id]->stages[0]->access[0] : NULL;
        CHECK(ag && ag->producer == g && ag->fp_block[0] == 16 && ag->fp_block[1] == 16);
    }
    nest_free(m);
    nest_ctx_free(x);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

static const char *STENCIL =
    "input f32 in(130, 130);\n"
    "blur(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y) + in(x, y + 1) + in(x, y + 2);\n"
    "out(x, y) = blur(x, y) + blur(x + 1, y) + blur(x + 2, y) + blur(x, y + 1) + blur(x + 1, y + 1)\n"
    "          + blur(x + 2, y + 1) + blur(x, y + 2) + blur(x + 1, y + 2) + blur(x + 2, y + 2);\n"
    "output out(126, 126);\n";

/* out 126x126 in blocks of 32x8 threads, 1x1 serial: 4 x 16 blocks; blur
 * at block level: a 34x10 footprint per block, 64 realizations, so
 * 64 * 340 points against blur's 128x128 region. */
static void fused_stencil_recompute(void) {
    sc_pipeline *p = parse(STENCIL);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    char err[512];
    const char *text = "schedule t;\nout: root [x=32x1 y=8x1];\nblur: block of out [x=32 y=8];\n";
    sched_state *s = sched_parse(a, p, "t.sched", text, err, sizeof err);
    CHECK(s != NULL);
    nest_ctx *x = nest_ctx_new(p, b);
    nest *m = s ? nest_build(x, s, err, sizeof err) : NULL;
    CHECK(m != NULL);
    if (m) {
        const sc_func *blur = func_named(p, "blur"), *out = func_named(p, "out"), *in = func_named(p, "in");
        CHECK(m->nkernels == 1 && m->kernels[0]->nblocks == 4 * 16 && m->kernels[0]->nthreads == 256);
        const nest_func *bf = m->funcs[blur->id];
        CHECK(bf && bf->mem == NEST_SHARED && bf->extent[0] == 34 && bf->extent[1] == 10 && bf->bytes == 340 * 4);
        const nest_stage *bs = bf->stages[0];
        CHECK(bs->realizations == 64 && bs->points_per_realization == 340 && bs->points_total == 64 * 340);
        CHECK(bs->serial[0] == 2 && bs->serial[1] == 2 && bs->threads_used == 256);
        const nest_stage *os = m->funcs[out->id]->stages[0];
        CHECK(os->points_total == 126 * 126 && os->realizations == 1 && os->naccess == 9);
        /* out reads blur in shared memory: x stride 1, y stride 34 */
        const nest_access *ac = &os->access[0];
        CHECK(ac->producer == blur && ac->mem == NEST_SHARED);
        CHECK(ac->stride_serial[0] == 1 && ac->stride_serial[1] == 34);
        CHECK(ac->fp_block[0] == 32 && ac->fp_block[1] == 8 && ac->fp_point[0] == 1);
        /* blur reads the input from global memory, staged in registers
         * (a 2x2 tile of a plus-shaped stencil: 4x4 staged points), so
         * its strides are the staged copy's */
        const nest_access *ia = &bs->access[0];
        CHECK(ia->producer == in && ia->mem == NEST_GLOBAL && ia->staged && ia->stride_serial[1] == 4);
        CHECK(m->kernels[0]->nstaged == 1 && m->kernels[0]->staged_elems == 16);
        CHECK(ia->fp_realization[0] == 34 && ia->fp_realization[1] == 10);
        int64_t ext[SC_MAX_DIMS];
        CHECK(nest_fused_extents(p, b, s, blur->id, ext, err, sizeof err) == 0 && ext[0] == 34 && ext[1] == 10);
        CHECK(nest_fused_extents(p, b, s, out->id, ext, err, sizeof err) != 0);
    }
    nest_free(m);
    /* a second build of the same state comes from the cache */
    nest_stats before = nest_ctx_stats(x);
    m = s ? nest_build(x, s, err, sizeof err) : NULL;
    nest_stats after = nest_ctx_stats(x);
    CHECK(m && after.kernel_hits == before.kernel_hits + 1 && after.kernel_misses == before.kernel_misses);
    nest_free(m);
    nest_ctx_free(x);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* The same stencil with blur at thread level of out (x=32x2 serial): each
 * thread computes a 4x3 footprint, once per thread of every block (256 x
 * 2 x 16 blocks); what one block computes of blur is 66x10. */
static void thread_stencil(void) {
    sc_pipeline *p = parse(STENCIL);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    char err[512];
    const char *text = "schedule t;\nout: root [x=32x2 y=8x1];\nblur: thread of out;\n";
    sched_state *s = sched_parse(a, p, "t.sched", text, err, sizeof err);
    CHECK(s != NULL);
    nest_ctx *x = nest_ctx_new(p, b);
    nest *m = s ? nest_build(x, s, err, sizeof err) : NULL;
    CHECK(m != NULL);
    if (m) {
        const nest_func *bf = m->funcs[func_named(p, "blur")->id];
        CHECK(m->nkernels == 1 && m->kernels[0]->nblocks == 2 * 16 && m->kernels[0]->nthreads == 256);
        CHECK(bf && bf->mem == NEST_REGISTER && bf->extent[0] == 4 && bf->extent[1] == 3 && bf->elems == 12);
        CHECK(m->kernels[0]->nregister == 1 && m->kernels[0]->register_elems == 12);
        const nest_stage *bs = bf->stages[0];
        CHECK(bs->realizations_per_block == 256 && bs->realizations == 256 * 32);
        CHECK(bs->points_per_realization == 12 && bs->points_total == 12 * 256 * 32);
        CHECK(bs->threads_used == 1 && bs->serial[0] == 4 && bs->serial[1] == 3);
        const nest_access *ia = &bs->access[0];       /* in(x, y) */
        CHECK(ia->fp_realization[0] == 4 && ia->fp_realization[1] == 3);
        CHECK(ia->fp_block[0] == 66 && ia->fp_block[1] == 10);
        /* 12 unrolled points: the input is staged, a 6x5 copy (30 < 5 x 12 loads) */
        CHECK(ia->staged && ia->stride_block[0] == 0 && ia->stride_serial[1] == 6);
        CHECK(m->kernels[0]->nstaged == 1 && m->kernels[0]->staged_elems == 30);
        const nest_access *oa = &m->funcs[func_named(p, "out")->id]->stages[0]->access[0];
        CHECK(oa->mem == NEST_REGISTER && oa->stride_serial[1] == 4);
    }
    nest_free(m);
    nest_ctx_free(x);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* A partial state: out decided, blur not.  blur has no records and no
 * kernel; out reads it as a root Func over its region (128 x 128). */
static void partial_state(void) {
    sc_pipeline *p = parse(STENCIL);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    target t = fixture_target("a100");
    space_opts o = { &t, false, false };
    char err[512];
    sched_state *full = space_random(a, p, b, &o, 3, err, sizeof err);
    sched_state *s = sched_state_new(a, p);
    const sc_func *out = func_named(p, "out"), *blur = func_named(p, "blur");
    s->f[out->id] = full ? full->f[out->id] : NULL;
    CHECK(full != NULL && space_next(p, s, NULL) == blur->id);
    nest_ctx *x = nest_ctx_new(p, b);
    nest *m = full ? nest_build(x, s, err, sizeof err) : NULL;
    CHECK(m != NULL);
    if (m) {
        CHECK(m->nkernels == 1 && m->nmodelled == 1 && m->funcs[blur->id] == NULL);
        const nest_stage *os = m->funcs[out->id]->stages[0];
        CHECK(os->naccess == 9 && os->access[0].producer == blur && os->access[0].mem == NEST_GLOBAL);
        CHECK(os->access[0].staged || os->access[0].stride_serial[1] == 128);
        CHECK(os->access[0].fp_realization[0] == 126 && os->access[0].fp_realization[1] == 126);
    }
    nest_free(m);
    nest_ctx_free(x);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

static const char *TRANSPOSE =
    "input f32 in(64, 48);\n"
    "out(x, y) = in(y, x) + in(clamp(y + 1, 0, 63), x);\n"
    "output out(48, 64);\n";

/* A transpose: the read's x stride is the input's row length, its y
 * stride 1, and the clamped tap keeps the same strides. */
static void transpose_strides(void) {
    sc_pipeline *p = parse(TRANSPOSE);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    char err[512];
    sched_state *s = sched_parse(a, p, "t.sched", "schedule t;\nout: root [x=16x1 y=4x2];\n", err, sizeof err);
    CHECK(s != NULL);
    nest_ctx *x = nest_ctx_new(p, b);
    nest *m = s ? nest_build(x, s, err, sizeof err) : NULL;
    CHECK(m != NULL);
    if (m) {
        const nest_stage *os = m->funcs[func_named(p, "out")->id]->stages[0];
        CHECK(os->naccess == 2);
        for (int i = 0; i < os->naccess && i < 2; i++) {
            const nest_access *ac = &os->access[i];
            CHECK(ac->affine && ac->stride_serial[0] == 64 && ac->stride_serial[1] == 1);
            CHECK(ac->stride_thread[0] == 64 && ac->stride_thread[1] == 2);
            CHECK(ac->stride_block[0] == 64 * 16 && ac->stride_block[1] == 8);
        }
        CHECK(os->access[0].fp_thread[0] == 2 && os->access[0].fp_thread[1] == 1);
        CHECK(os->access[0].fp_block[0] == 8 && os->access[0].fp_block[1] == 16);
    }
    nest_free(m);
    nest_ctx_free(x);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* 0-D Funcs (sums into a scalar, a scalar read by scalars and by a 2-D
 * stage, scalar outputs): over 60 random schedules, which place them at
 * root (one thread), in a consumer's block or thread, or inline, the model
 * equals the kernel IR, and a 0-D Func's stages run one point each. */
static const char *SCALARS =
    "input u8 img(40, 30);\n"
    "rdom r(0, 40, 0, 30);\n"
    "g(x, y) = f32(img(x, y)) * 0.5 + 1.0;\n"
    "total() = 0.0;\n"
    "total() += g(r.x, r.y);\n"
    "mean() = total() / 1200.0;\n"
    "k() = 3.0;\n"
    "var() = sum((g(r.x, r.y) - mean()) * (g(r.x, r.y) - mean())) / 1200.0;\n"
    "norm(x, y) = (g(x, y) - mean()) * k() / sqrt(var() + 1.0);\n"
    "output norm(40, 30);\n"
    "output var();\n";

static void zero_dim_funcs(void) {
    sc_pipeline *p = parse(SCALARS);
    bounds_result *b = bounds_infer(p);
    target t = fixture_target("a100");
    nest_ctx *x = nest_ctx_new(p, b);
    int ok = 0, total = 60, where[SCHED_THREAD + 1] = {0};
    const sc_func *tot = func_named(p, "total");
    for (int k = 0; k < total; k++) {
        space_opts o = { &t, k % 2 == 1, false };
        ir_arena *a = ir_arena_new();
        char err[1024], what[64];
        sched_state *s = space_random(a, p, b, &o, (uint64_t)k + 1, err, sizeof err);
        lower_program *prog = s ? lower_schedule(a, p, b, s, err, sizeof err) : NULL;
        nest *m = prog ? nest_build(x, s, err, sizeof err) : NULL;
        if (!m) fprintf(stderr, "scalars seed %d: %s\n", k + 1, err);
        snprintf(what, sizeof what, "scalars seed %d", k + 1);
        if (m && compare(what, p, m, prog) == 0) ok++;
        if (s) where[s->f[tot->id]->loc]++;
        const nest_func *nf = m ? m->funcs[tot->id] : NULL;
        for (int st = 0; nf && st < tot->nstages; st++)
            CHECK(nf->stages[st]->points_total == (st == 0 ? 1 : 1200));
        nest_free(m);
        ir_arena_free(a);
    }
    check_report(ok == total, "0-D Funcs: model equals kernel IR on %d/%d schedules (total at root %d, "
                 "block %d, thread %d)", ok, total, where[SCHED_ROOT], where[SCHED_BLOCK], where[SCHED_THREAD]);
    CHECK(where[SCHED_ROOT] > 0 && where[SCHED_BLOCK] > 0 && where[SCHED_THREAD] > 0);
    nest_ctx_free(x);
    bounds_free(b);
    sc_pipeline_free(p);
}

int main(void) {
    RUN(fused_stencil_recompute);
    RUN(thread_stencil);
    RUN(partial_state);
    RUN(transpose_strides);
    RUN(multi_consumer_hull);
    RUN(thread_hull_per_block);
    RUN(zero_dim_funcs);
    model_equals_kernel_ir();
    CHECK_EXIT();
}
