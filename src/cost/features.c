/*
 * features.c - per-stage features of a (partial) schedule (features.h).
 *
 * First a small loop-nest picture of every decided, non-inline Func, built
 * consumers first (a fused Func's footprint comes from its consumer's tile):
 *
 *   ROOT stage:   its loops over the Func's region; pure loop k is split
 *                 into blocks x threads[k] x serial[k] (the tile), reduction
 *                 loops run whole inside; one realization.
 *   BLOCK of C:   a footprint F per block of C's kernel (C's calls of it
 *                 over C's per-block box), threads[k] from its tile and
 *                 serial ceil(F / threads); realized once per block.
 *   THREAD of C:  a footprint F per thread of C (C's calls over C's
 *                 per-thread box), all serial, run by C's threads; realized
 *                 once per running thread of C.
 *
 * A footprint dimension is the span of the calls' forms (feat_access.h)
 * over the consumer's box when every call has the same coefficients there,
 * else the producer's whole region, always clipped to the region (as
 * lowering clips).  The kernel of a stage is its root ancestor's stage;
 * its shared memory is the sum of its BLOCK Funcs' footprints and its
 * registers per thread are estimated as sched_check does: 16 (indices,
 * addresses) + one per element of every THREAD Func in the kernel + one per
 * point of the root stage's serial tile.  Register staging (Anderson et
 * al. 2021 §6.7) is not modelled apart from the reuse of loads across
 * unrolled serial loops (feat_warp.h).
 *
 * Then each stage's row, feature by feature (docs/features.md).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "feat_access.h"
#include "feat_warp.h"
#include "features.h"
#include "occupancy.h"

/* ---- the schema -------------------------------------------------------------- */

typedef struct { const char *name; feat_kind kind; const char *unit, *doc; } feat_info;

static const feat_info list_info[FEAT_LIST_COUNT] = {
#define FEAT_INFO_(name, kind, unit, doc) { #name, kind, unit, doc },
    FEAT_LIST(FEAT_INFO_)
#undef FEAT_INFO_
};

/* "op_" KIND "_" TYPE, made on first use from analysis.h's names. */
static char hist_names[FEAT_HIST_COUNT][40];
static bool hist_ready;

static void make_hist_names(void) {
    if (hist_ready) return;
    for (int k = 0; k < OPS_KIND_COUNT; k++)
        for (int t = 0; t < SC_TYPE_COUNT; t++)
            snprintf(hist_names[k * SC_TYPE_COUNT + t], sizeof hist_names[0], "op_%s_%s",
                     ops_kind_name((ops_kind)k), sc_type_name((sc_type)t));
    hist_ready = true;
}

const char *feat_name(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    if (i < FEAT_HIST_COUNT) {
        make_hist_names();
        return hist_names[i];
    }
    return list_info[i - FEAT_HIST_COUNT].name;
}

feat_kind feat_kind_of(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    return i < FEAT_HIST_COUNT ? FEAT_ALGO : list_info[i - FEAT_HIST_COUNT].kind;
}

const char *feat_unit(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    return i < FEAT_HIST_COUNT ? "ops" : list_info[i - FEAT_HIST_COUNT].unit;
}

const char *feat_doc(int i) {
    assert(i >= 0 && i < FEAT_COUNT);
    return i < FEAT_HIST_COUNT ? "operations of this kind and type per point (Adams et al. 2019)"
                               : list_info[i - FEAT_HIST_COUNT].doc;
}

int feat_index(const char *name) {
    for (int i = 0; i < FEAT_COUNT; i++)
        if (!strcmp(feat_name(i), name)) return i;
    return -1;
}

/* ---- the loop-nest picture --------------------------------------------------- */

typedef enum { MEM_G, MEM_S, MEM_R } mem_kind;   /* global, shared, register */

typedef struct {
    feat_stage_access acc;
    int npure;
    int pure_loop[SC_MAX_DIMS];       /* loop index of the k-th pure loop */
    int64_t extent[FEAT_MAX_LOOPS];   /* per loop, in one realization */
    int threads[SC_MAX_DIMS];         /* per pure loop (ROOT, BLOCK) */
    int64_t serial[FEAT_MAX_LOOPS];   /* per loop, per thread */
    int64_t blocks[SC_MAX_DIMS];      /* ROOT: per pure loop */
    int64_t block_box[FEAT_MAX_LOOPS];   /* what one block covers */
    int64_t thread_box[FEAT_MAX_LOOPS];  /* what one thread covers */
    int64_t threads_used;             /* threads running it per block */
    double thread_instances;          /* (block, thread) pairs running it */
    feat_lanes lanes;                 /* the lanes' loop values */
    double realizations;
} stage_pic;

typedef struct {
    bool have;                        /* decided, not inline */
    sched_loc loc;
    int at, at_stage;                 /* consumer and its stage (fused) */
    int root, kstage;                 /* the kernel: root Func and stage */
    int64_t extent[SC_MAX_DIMS];      /* per realization */
    int64_t elems;
    stage_pic *st;
} func_pic;

typedef struct {
    const sc_pipeline *p;
    const bounds_result *b;
    const sched_state *s;
    func_pic *fp;                     /* [func id] */
    char *err;
    size_t errlen;
} ctx;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static const sc_func *func_at(const sc_pipeline *p, int id) { return (const sc_func *)p->funcs.items[id]; }

static mem_kind mem_of(const ctx *c, const sc_func *g) {
    if (g->kind != FUNC_DEFINED || !c->fp[g->id].have) return MEM_G;
    switch (c->fp[g->id].loc) {
    case SCHED_BLOCK: return MEM_S;
    case SCHED_THREAD: return MEM_R;
    default: return MEM_G;
    }
}

/* The extent of one producer dimension read by calls[0..n) (dimension d)
 * over a box of the stage's loops, clipped to `region`. */
static int64_t span(const feat_form *const *dims, int n, int nloops, const int64_t *box, int64_t region) {
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        const feat_form *f = dims[i];
        if (!f->ok || (i && !feat_form_same_coefs(f, dims[0], nloops))) return region;
        double l = f->off, h = f->off;
        for (int j = 0; j < nloops; j++) {
            double v = f->c[j] * (double)(box[j] - 1);
            if (v < 0) l += v; else h += v;
        }
        if (!i || l < lo) lo = l;
        if (!i || h > hi) hi = h;
    }
    int64_t e = (int64_t)floor(hi) - (int64_t)floor(lo) + 1;
    return e < region ? e : region;
}

/* The region extents of a Func or input. */
static const int64_t *region_of(const ctx *c, const sc_func *g) { return c->b->funcs[g->id].extent; }

/* The footprint box of producer g read by a stage over box: extents per
 * dimension (clipped to lim, g's extents where it is stored). */
static void footprint(const stage_pic *sp, const sc_func *g, const int64_t *box, const int64_t *lim,
                      int64_t *out) {
    const feat_form *dims[256];
    for (int d = 0; d < g->ndims; d++) {
        int n = 0;
        for (int i = 0; i < sp->acc.n && n < 256; i++)
            if (sp->acc.calls[i].prod == g) dims[n++] = &sp->acc.calls[i].dim[d];
        out[d] = n ? span(dims, n, sp->acc.nloops, box, lim[d]) : 0;
    }
}

static int fail(ctx *c, const char *msg, const sc_func *f) {
    snprintf(c->err, c->errlen, "%s: %s", f->name, msg);
    return -1;
}

/* The consumer's stage that calls f (after inlining), or -1. */
static int calling_stage(const func_pic *cp, const sc_func *cons, const sc_func *f) {
    for (int st = 0; st < cons->nstages; st++)
        for (int i = 0; i < cp->st[st].acc.n; i++)
            if (cp->st[st].acc.calls[i].prod == f) return st;
    return -1;
}

/* Fills the picture of stage st of f (f's func_pic loc/extent set). */
static void build_stage(ctx *c, const sc_func *f, int st) {
    func_pic *fp = &c->fp[f->id];
    stage_pic *sp = &fp->st[st];
    const bounds_stage *bs = &c->b->funcs[f->id].stages[st];
    const sched_func *sf = c->s->f[f->id];
    int nl = sp->acc.nloops;
    sp->npure = 0;
    for (int j = 0; j < nl; j++) {
        int d = sp->acc.which[j];
        if (d >= 0) sp->pure_loop[sp->npure++] = j;
        sp->extent[j] = fp->loc == SCHED_ROOT || d < 0 ? bs->extent[j] : fp->extent[d];
        if (sp->extent[j] < 1) sp->extent[j] = 1;
        sp->serial[j] = sp->extent[j];                 /* reduction loops, THREAD */
        sp->block_box[j] = sp->thread_box[j] = sp->extent[j];
    }
    feat_lanes *ln = &sp->lanes;
    memset(ln, 0, sizeof *ln);
    ln->nloops = nl;
    sp->threads_used = 1;
    if (fp->loc == SCHED_ROOT || fp->loc == SCHED_BLOCK) {
        const sched_tile *tl = &sf->tile[st];
        ln->nlayout = sp->npure;
        for (int k = 0; k < sp->npure; k++) {
            int j = sp->pure_loop[k];
            int T = k < tl->npure && tl->threads[k] > 0 ? tl->threads[k] : 1;
            int64_t S = fp->loc == SCHED_ROOT ? (k < tl->npure && tl->serial[k] > 0 ? tl->serial[k] : 1)
                                              : ceil_div(sp->extent[j], T);
            sp->threads[k] = T;
            sp->serial[j] = S;
            sp->blocks[k] = fp->loc == SCHED_ROOT ? ceil_div(sp->extent[j], (int64_t)T * S) : 1;
            sp->block_box[j] = fp->loc == SCHED_ROOT && (int64_t)T * S < sp->extent[j] ? (int64_t)T * S
                                                                                      : sp->extent[j];
            sp->thread_box[j] = S < sp->extent[j] ? S : sp->extent[j];
            sp->threads_used *= T;
            ln->L[k] = T;
            ln->lanec[j][k] = (double)S;
            ln->origin[j] = fp->loc == SCHED_ROOT ? (double)bs->min[j] : 0;
        }
    } else {
        /* THREAD: C's lanes, each starting where C's call of f puts it */
        const func_pic *cp = &c->fp[fp->at];
        const stage_pic *cs = &cp->st[fp->at_stage];
        const feat_call *call = NULL;
        for (int i = 0; i < cs->acc.n && !call; i++)
            if (cs->acc.calls[i].prod == f) call = &cs->acc.calls[i];
        assert(call);
        *ln = cs->lanes;
        ln->nloops = nl;
        for (int j = 0; j < nl; j++) {
            memset(ln->lanec[j], 0, sizeof ln->lanec[j]);
            ln->origin[j] = 0;
            int d = sp->acc.which[j];
            if (d < 0 || !call->dim[d].ok) continue;
            const feat_form *fm = &call->dim[d];
            ln->origin[j] = fm->off;
            for (int i = 0; i < cs->acc.nloops; i++) {
                ln->origin[j] += fm->c[i] * cs->lanes.origin[i];
                for (int k = 0; k < cs->lanes.nlayout; k++) ln->lanec[j][k] += fm->c[i] * cs->lanes.lanec[i][k];
            }
        }
        sp->threads_used = cs->threads_used;
    }
    for (int j = 0; j < nl; j++) ln->serial[j] = sp->serial[j];

    /* realizations and running threads */
    if (fp->loc == SCHED_ROOT) {
        sp->realizations = 1;
        double th = 1;
        for (int k = 0; k < sp->npure; k++) th *= (double)ceil_div(sp->extent[sp->pure_loop[k]], sp->serial[sp->pure_loop[k]]);
        sp->thread_instances = th;
    } else {
        const stage_pic *ks = &c->fp[fp->root].st[fp->kstage];
        double nblocks = 1;
        for (int k = 0; k < ks->npure; k++) nblocks *= (double)ks->blocks[k];
        if (fp->loc == SCHED_BLOCK) {
            sp->realizations = nblocks;
            double th = nblocks;
            for (int k = 0; k < sp->npure; k++)
                th *= (double)ceil_div(sp->extent[sp->pure_loop[k]], sp->serial[sp->pure_loop[k]]);
            sp->thread_instances = th;
        } else {
            sp->realizations = c->fp[fp->at].st[fp->at_stage].thread_instances;
            sp->thread_instances = sp->realizations;
        }
    }
}

/* The picture of every decided non-inline Func, consumers first. */
static int build(ctx *c) {
    const sc_pipeline *p = c->p;
    for (int oi = p->order.n - 1; oi >= 0; oi--) {
        const sc_func *f = ir_order_at(p, oi);
        if (f->kind != FUNC_DEFINED) continue;
        const sched_func *sf = c->s->f[f->id];
        if (!sf || sf->loc == SCHED_INLINE || sf->loc == SCHED_UNDECIDED) continue;
        func_pic *fp = &c->fp[f->id];
        fp->loc = sf->loc;
        fp->at = sf->at;
        fp->at_stage = -1;
        fp->st = calloc((size_t)f->nstages, sizeof *fp->st);
        if (!fp->st) return fail(c, "out of memory", f);
        fp->have = true;
        for (int st = 0; st < f->nstages; st++)
            if (feat_stage_accesses(p, c->s, f, st, &fp->st[st].acc) < 0) return fail(c, "out of memory", f);
        if ((sf->loc == SCHED_ROOT || sf->loc == SCHED_BLOCK) && !sf->tile)
            return fail(c, "a root or block-level Func without tiles", f);
        const int64_t *reg = region_of(c, f);
        fp->elems = 1;
        if (sf->loc == SCHED_ROOT) {
            fp->root = f->id;
            fp->kstage = -1;
            for (int d = 0; d < f->ndims; d++) fp->extent[d] = reg[d];
        } else {
            if (sf->at < 0 || sf->at >= p->funcs.n || !c->fp[sf->at].have)
                return fail(c, "fused into a Func that is not decided, or inline", f);
            const sc_func *cons = func_at(p, sf->at);
            func_pic *cp = &c->fp[sf->at];
            int cst = calling_stage(cp, cons, f);
            if (cst < 0) return fail(c, "fused into a Func that does not call it", f);
            if (sf->loc == SCHED_BLOCK && cp->loc == SCHED_THREAD)
                return fail(c, "at the block level of a thread-level Func", f);
            fp->at_stage = cst;
            fp->root = cp->root;
            fp->kstage = cp->loc == SCHED_ROOT ? cst : cp->kstage;
            const stage_pic *cs = &cp->st[cst];
            footprint(cs, f, sf->loc == SCHED_BLOCK ? cs->block_box : cs->thread_box, reg, fp->extent);
        }
        for (int d = 0; d < f->ndims; d++) fp->elems *= fp->extent[d] > 0 ? fp->extent[d] : 1;
        for (int st = 0; st < f->nstages; st++) build_stage(c, f, st);
    }
    return 0;
}

/* ---- the kernels -------------------------------------------------------------- */

typedef struct {
    int64_t nblocks, nthreads;
    int64_t shared_bytes, register_elems;
    occ_result occ;
    int regs;
} kernel_pic;

static void kernel_of(const ctx *c, const target *t, int root, int kstage, kernel_pic *k) {
    const sc_pipeline *p = c->p;
    const stage_pic *rs = &c->fp[root].st[kstage];
    memset(k, 0, sizeof *k);
    k->nblocks = 1;
    for (int i = 0; i < rs->npure; i++) k->nblocks *= rs->blocks[i];
    k->nthreads = rs->threads_used;
    int64_t serial = 1;
    for (int i = 0; i < rs->npure; i++) serial *= rs->serial[rs->pure_loop[i]];
    for (int i = 0; i < p->funcs.n; i++) {
        const func_pic *g = &c->fp[i];
        if (!g->have || g->loc == SCHED_ROOT || g->root != root || g->kstage != kstage) continue;
        if (g->loc == SCHED_BLOCK) k->shared_bytes += g->elems * (int64_t)sc_type_size(func_at(p, i)->type);
        else k->register_elems += g->elems;
    }
    int64_t regs = 16 + k->register_elems + serial;
    k->regs = regs > 1 << 20 ? 1 << 20 : (int)regs;
    int threads = k->nthreads > 1 << 20 ? 1 << 20 : (int)k->nthreads;
    occ_compute(t, threads, k->regs, k->shared_bytes, &k->occ);
}

/* ---- one row ------------------------------------------------------------------- */

/* Adams et al.'s access classes of one call (forms over the stage's loops). */
static void classify(const feat_stage_access *a, const feat_form *dims, int ndims, double *v, int base) {
    bool regular = true, perm = true, ident = true, zero_row = false;
    bool used[FEAT_MAX_LOOPS] = {false};
    for (int d = 0; d < ndims; d++) {
        const feat_form *f = &dims[d];
        if (!f->ok) { regular = false; break; }
        int nz = 0, at = -1;
        for (int j = 0; j < a->nloops; j++)
            if (f->c[j] != 0) { nz++; at = j; }
        if (nz == 0) { zero_row = true; perm = ident = false; continue; }
        if (nz > 1 || fabs(f->c[at]) != 1 || used[at]) perm = ident = false;
        else if (a->which[at] != d) ident = false;
        if (at >= 0) used[at] = true;
    }
    if (!regular) return;
    bool broadcast = false;
    for (int j = 0; j < a->nloops; j++)
        if (!used[j] && a->which[j] >= 0) broadcast = true;
    if (ident && !broadcast) v[base + 0] += 1;
    else if (perm && !broadcast) v[base + 1] += 1;
    if (broadcast) v[base + 2] += 1;
    if (zero_row) v[base + 3] += 1;
}

static void algo_patterns(const sc_pipeline *p, const sc_func *f, int st, double *v) {
    feat_stage_access a;
    if (feat_stage_accesses(p, NULL, f, st, &a) < 0) return;
    for (int i = 0; i < a.n; i++) {
        const feat_call *call = &a.calls[i];
        int base = call->prod == f ? FEAT_load_self_pointwise
                 : call->prod->kind == FUNC_INPUT ? FEAT_load_input_pointwise : FEAT_load_func_pointwise;
        classify(&a, call->dim, call->ndims, v, FEAT_AT(base));
    }
    classify(&a, a.store, a.nstore, v, FEAT_AT(FEAT_store_pointwise));
    feat_stage_access_free(&a);
}

/* Where producer g's elements are, for addresses. */
static void storage_of(const ctx *c, const sc_func *g, feat_storage *st) {
    memset(st, 0, sizeof *st);
    st->ndims = g->ndims;
    st->elem = (int)sc_type_size(g->type);
    mem_kind m = mem_of(c, g);
    st->shared = m == MEM_S;
    const int64_t *ext = m == MEM_G ? region_of(c, g) : c->fp[g->id].extent;
    int64_t stride = 1;
    for (int d = 0; d < g->ndims; d++) {
        st->base[d] = m == MEM_G ? c->b->funcs[g->id].min[d] : 0;
        st->stride[d] = stride;
        stride *= ext[d] > 0 ? ext[d] : 1;
    }
}

typedef struct {
    feat_warp_cost load[2], store[2];   /* [global, shared] */
} warp_costs;

/* Loads and stores of one warp (lanes first .. first + nlanes - 1). */
static int warp_of(const ctx *c, const sc_func *f, const stage_pic *sp, int64_t first, int nlanes, bool unrolled,
                   warp_costs *w) {
    memset(w, 0, sizeof *w);
    const feat_stage_access *a = &sp->acc;
    const feat_form **calls = malloc(sizeof *calls * (size_t)(a->n + 1));
    if (!calls) return -1;
    bool *done = calloc((size_t)a->n + 1, 1);
    if (!done) { free(calls); return -1; }
    int rc = 0;
    for (int i = 0; i < a->n && !rc; i++) {
        if (done[i]) continue;
        const sc_func *g = a->calls[i].prod;
        mem_kind m = mem_of(c, g);
        int n = 0;
        for (int q = i; q < a->n; q++)
            if (a->calls[q].prod == g) { calls[n++] = a->calls[q].dim; done[q] = true; }
        if (m == MEM_R) continue;
        feat_storage st;
        storage_of(c, g, &st);
        rc = feat_warp_access(&sp->lanes, n, calls, &st, first, nlanes, unrolled, &w->load[m == MEM_S]);
    }
    mem_kind own = mem_of(c, f);
    if (!rc && own != MEM_R) {
        feat_storage st;
        storage_of(c, f, &st);
        calls[0] = a->store;
        rc = feat_warp_access(&sp->lanes, 1, calls, &st, first, nlanes, unrolled, &w->store[own == MEM_S]);
    }
    free(calls);
    free(done);
    return rc;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

static int fill_row(ctx *c, const target *t, const ops_result *ops, const sc_func *f, int st, feat_row *row) {
    const func_pic *fp = &c->fp[f->id];
    const stage_pic *sp = &fp->st[st];
    const feat_stage_access *a = &sp->acc;
    double *v = row->v;
    memset(row, 0, sizeof *row);
    row->func = f->id;
    row->stage = st;
    row->loc = fp->loc;
    int nl = a->nloops;
    size_t esize = sc_type_size(f->type);

    for (int i = 0; i < ops->n; i++)
        if (ops->items[i].func == f->id && ops->items[i].stage == st)
            for (int k = 0; k < OPS_KIND_COUNT; k++)
                for (int ty = 0; ty < SC_TYPE_COUNT; ty++)
                    v[k * SC_TYPE_COUNT + ty] = (double)ops->items[i].count[k][ty];
    algo_patterns(c->p, f, st, v);

    kernel_pic k;
    kernel_of(c, t, fp->root, fp->loc == SCHED_ROOT ? st : fp->kstage, &k);

    double pts = 1, pure_pts = 1, serial_pts = 1, red = 1;
    for (int j = 0; j < nl; j++) {
        pts *= (double)sp->extent[j];
        serial_pts *= (double)sp->serial[j];
        if (a->which[j] >= 0) pure_pts *= (double)sp->extent[j];
        else red *= (double)sp->extent[j];
    }
    const bounds_stage *bs = &c->b->funcs[f->id].stages[st];
    double minimum = 1;
    for (int j = 0; j < bs->nloops; j++) minimum *= (double)bs->extent[j];
    double fbytes = (double)fp->elems * (double)esize;
    double region_bytes = (double)esize;
    for (int d = 0; d < f->ndims; d++) region_bytes *= (double)region_of(c, f)[d];

    v[FEAT_AT(FEAT_num_realizations)] = sp->realizations;
    v[FEAT_AT(FEAT_num_productions)] = sp->realizations;
    v[FEAT_AT(FEAT_points_computed_per_realization)] = pts;
    v[FEAT_AT(FEAT_points_computed_total)] = pts * sp->realizations;
    v[FEAT_AT(FEAT_points_computed_minimum)] = minimum;
    v[FEAT_AT(FEAT_inlined_calls)] = (double)a->inlined_calls;
    v[FEAT_AT(FEAT_bytes_at_realization)] = fbytes;
    v[FEAT_AT(FEAT_bytes_at_production)] = pure_pts * (double)esize;
    v[FEAT_AT(FEAT_bytes_at_root)] = region_bytes;
    int inner = -1, inner_pure = sp->npure ? sp->pure_loop[0] : -1;
    for (int j = 0; j < nl && inner < 0; j++)
        if (a->which[j] < 0) inner = j;
    if (inner < 0) inner = inner_pure;
    v[FEAT_AT(FEAT_innermost_loop_extent)] = inner >= 0 ? (double)sp->serial[inner] : 1;
    v[FEAT_AT(FEAT_innermost_pure_loop_extent)] = inner_pure >= 0 ? (double)sp->extent[inner_pure] : 1;
    bool unrolled = serial_pts < 16;
    v[FEAT_AT(FEAT_unrolled_loop_extent)] = unrolled ? serial_pts : 1;
    v[FEAT_AT(FEAT_inner_parallelism)] = (double)sp->threads_used;
    v[FEAT_AT(FEAT_outer_parallelism)] = (double)k.nblocks;

    /* Anderson et al. 2021 Appendix A */
    double scalars;
    if (fp->loc == SCHED_THREAD) scalars = sp->realizations * pts;
    else {
        scalars = (fp->loc == SCHED_ROOT ? 1 : (double)k.nblocks) * red;
        for (int q = 0; q < sp->npure; q++) {
            int j = sp->pure_loop[q];
            scalars *= (double)sp->threads[q] * (double)sp->serial[j] * (double)sp->blocks[q];
        }
    }
    v[FEAT_AT(FEAT_num_scalars)] = scalars;
    v[FEAT_AT(FEAT_points_computed_per_thread)] = serial_pts;

    /* footprints read, by memory kind */
    static const int ub_real[3] = { FEAT_unique_global_bytes_read_per_realization,
                                    FEAT_unique_shared_bytes_read_per_realization,
                                    FEAT_unique_register_bytes_read_per_realization };
    static const int ul_real[3] = { FEAT_unique_global_lines_read_per_realization,
                                    FEAT_unique_shared_lines_read_per_realization,
                                    FEAT_unique_register_lines_read_per_realization };
    static const int ub_thr[3] = { FEAT_unique_global_bytes_read_per_thread, FEAT_unique_shared_bytes_read_per_thread,
                                   FEAT_unique_register_bytes_read_per_thread };
    static const int ul_thr[3] = { FEAT_unique_global_lines_read_per_thread, FEAT_unique_shared_lines_read_per_thread,
                                   FEAT_unique_register_lines_read_per_thread };
    static const int alloc[3] = { FEAT_global_allocation_bytes_read_per_realization,
                                  FEAT_shared_allocation_bytes_read_per_realization,
                                  FEAT_register_allocation_bytes_read_per_realization };
    for (int i = 0; i < a->n; i++) {
        const sc_func *g = a->calls[i].prod;
        bool first = true;
        for (int q = 0; q < i && first; q++) first = a->calls[q].prod != g;
        if (!first) continue;
        mem_kind m = mem_of(c, g);
        const int64_t *lim = m == MEM_G ? region_of(c, g) : c->fp[g->id].extent;
        int64_t ext[SC_MAX_DIMS];
        double gsize = (double)sc_type_size(g->type);
        for (int level = 0; level < 2; level++) {
            footprint(sp, g, level ? sp->thread_box : sp->extent, lim, ext);
            double bytes = gsize, lines = 1;
            for (int d = 0; d < g->ndims; d++) {
                bytes *= (double)ext[d];
                if (d) lines *= (double)ext[d];
            }
            v[FEAT_AT(level ? ub_thr[m] : ub_real[m])] += bytes;
            v[FEAT_AT(level ? ul_thr[m] : ul_real[m])] += lines;
        }
        double abytes = gsize;
        for (int d = 0; d < g->ndims; d++) abytes *= (double)lim[d];
        v[FEAT_AT(alloc[m])] += abytes;
    }

    /* written per block */
    mem_kind own = mem_of(c, f);
    double task = (double)esize, inner_task = (double)esize;
    for (int q = 0; q < sp->npure; q++) {
        int j = sp->pure_loop[q];
        double e = (double)(fp->loc == SCHED_ROOT ? sp->block_box[j] : sp->extent[j]);
        task *= e;
        if (a->which[j] == 0) inner_task *= e;
    }
    if (fp->loc == SCHED_THREAD) task *= (double)sp->threads_used;
    static const int at_task[3] = { FEAT_global_bytes_at_task, FEAT_shared_bytes_at_task, FEAT_register_bytes_at_task };
    static const int at_inner[3] = { FEAT_global_innermost_bytes_at_task, FEAT_shared_innermost_bytes_at_task,
                                     FEAT_register_innermost_bytes_at_task };
    v[FEAT_AT(at_task[own])] = task;
    v[FEAT_AT(at_inner[own])] = inner_task;

    /* parallelism */
    int ws = t->warp_size;
    double active_warps = (double)ceil_div(sp->threads_used, ws);
    v[FEAT_AT(FEAT_num_blocks)] = (double)k.nblocks;
    v[FEAT_AT(FEAT_num_warps_per_block)] = (double)ceil_div(k.nthreads, ws);
    v[FEAT_AT(FEAT_num_active_warps_per_block)] = active_warps;
    v[FEAT_AT(FEAT_num_threads_per_block)] = (double)sp->threads_used;
    v[FEAT_AT(FEAT_expr_branching)] = a->strahler;
    v[FEAT_AT(FEAT_block_occupancy)] = (double)sp->threads_used / t->max_threads_per_block;
    v[FEAT_AT(FEAT_warp_lane_utilization)] = (double)sp->threads_used / (ws * active_warps);
    v[FEAT_AT(FEAT_idle_lane_wastage)] = (ws * active_warps - (double)sp->threads_used) / t->max_threads_per_block;

    /* memory transactions: a regular warp and the tail warp */
    int64_t full = sp->threads_used / 32, tail = sp->threads_used % 32;
    warp_costs reg, tl;
    memset(&reg, 0, sizeof reg);
    memset(&tl, 0, sizeof tl);
    if (full && warp_of(c, f, sp, 0, 32, unrolled, &reg) < 0) return fail(c, "out of memory", f);
    if (tail && warp_of(c, f, sp, full * 32, (int)tail, unrolled, &tl) < 0) return fail(c, "out of memory", f);
    double nf = (double)full, nt = tail ? 1 : 0;
    v[FEAT_AT(FEAT_num_global_mem_loads_per_block)] = nf * reg.load[0].trans + nt * tl.load[0].trans;
    v[FEAT_AT(FEAT_num_shared_mem_loads_per_block)] = nf * reg.load[1].trans + nt * tl.load[1].trans;
    v[FEAT_AT(FEAT_num_global_mem_stores_per_block)] = nf * reg.store[0].trans + nt * tl.store[0].trans;
    v[FEAT_AT(FEAT_num_shared_mem_stores_per_block)] = nf * reg.store[1].trans + nt * tl.store[1].trans;
    v[FEAT_AT(FEAT_global_mem_loads_per_regular_warp)] = full ? reg.load[0].trans : 0;
    v[FEAT_AT(FEAT_shared_mem_loads_per_regular_warp)] = full ? reg.load[1].trans : 0;
    v[FEAT_AT(FEAT_global_mem_stores_per_regular_warp)] = full ? reg.store[0].trans : 0;
    v[FEAT_AT(FEAT_shared_mem_stores_per_regular_warp)] = full ? reg.store[1].trans : 0;
    v[FEAT_AT(FEAT_global_mem_loads_per_tail_warp)] = tl.load[0].trans;
    v[FEAT_AT(FEAT_shared_mem_loads_per_tail_warp)] = tl.load[1].trans;
    v[FEAT_AT(FEAT_global_mem_stores_per_tail_warp)] = tl.store[0].trans;
    v[FEAT_AT(FEAT_shared_mem_stores_per_tail_warp)] = tl.store[1].trans;
#define EFF(cost) ratio(nf * reg.cost.needed + nt * tl.cost.needed, nf * reg.cost.moved + nt * tl.cost.moved)
    v[FEAT_AT(FEAT_global_mem_load_efficiency)] = EFF(load[0]);
    v[FEAT_AT(FEAT_shared_mem_load_efficiency)] = EFF(load[1]);
    v[FEAT_AT(FEAT_global_mem_store_efficiency)] = EFF(store[0]);
    v[FEAT_AT(FEAT_shared_mem_store_efficiency)] = EFF(store[1]);
#undef EFF
    const warp_costs *lw = full ? &reg : &tl;
    double lift = lw->load[0].lift_lines + lw->store[0].lift_lines;
    int nlift = lw->load[0].lift_n + lw->store[0].lift_n;
    v[FEAT_AT(FEAT_global_lines_per_warp_access)] = ratio(lift, nlift);

    /* working set at the thread level: this Func if it lives there, and the
     * thread-level Funcs computed inside its threads */
    double wset = fp->loc == SCHED_THREAD ? fbytes : 0;
    for (int i = 0; i < c->p->funcs.n; i++) {
        const func_pic *g = &c->fp[i];
        if (!g->have || g->loc != SCHED_THREAD || i == f->id) continue;
        int up = g->at;
        while (up >= 0 && up != f->id && c->fp[up].loc == SCHED_THREAD) up = c->fp[up].at;
        if (up == f->id) wset += (double)g->elems * (double)sc_type_size(func_at(c->p, i)->type);
    }
    v[FEAT_AT(FEAT_working_set_at_thread)] = wset;

    /* occupancy of the kernel */
    v[FEAT_AT(FEAT_registers_per_thread)] = k.regs;
    v[FEAT_AT(FEAT_shared_mem_occupancy)] = (double)k.shared_bytes / t->shared_mem_per_block;
    int smem_blocks = k.occ.blocks_by[OCC_LIMIT_SHARED];
    if (smem_blocks > t->max_blocks_per_sm) smem_blocks = t->max_blocks_per_sm;
    v[FEAT_AT(FEAT_shared_mem_block_limit_factor)] = (double)smem_blocks / t->max_blocks_per_sm;
    v[FEAT_AT(FEAT_max_warp_occupancy)] = k.occ.occupancy;
    v[FEAT_AT(FEAT_max_block_occupancy)] = (double)k.occ.active_blocks / t->max_blocks_per_sm;
    return 0;
}

int feat_compute(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                 feat_result *out, char *err, size_t errlen) {
    char local[256];
    if (!err || !errlen) { err = local; errlen = sizeof local; }
    err[0] = 0;
    memset(out, 0, sizeof *out);
    ctx c = { p, b, s, calloc((size_t)p->funcs.n + 1, sizeof(func_pic)), err, errlen };
    ops_result *ops = ops_count(p);
    int rc = 0;
    if (!c.fp || !ops) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (!rc) rc = build(&c);
    int nrows = 0;
    for (int i = 0; !rc && i < p->funcs.n; i++)
        if (c.fp[i].have) nrows += func_at(p, i)->nstages;
    if (!rc && nrows) {
        out->rows = calloc((size_t)nrows, sizeof *out->rows);
        if (!out->rows) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    for (int oi = p->order.n - 1; !rc && oi >= 0; oi--) {
        const sc_func *f = ir_order_at(p, oi);
        if (f->kind != FUNC_DEFINED || !c.fp[f->id].have) continue;
        for (int st = 0; st < f->nstages && !rc; st++) rc = fill_row(&c, t, ops, f, st, &out->rows[out->n++]);
    }
    for (int i = 0; c.fp && i < p->funcs.n; i++) {
        if (!c.fp[i].st) continue;
        for (int st = 0; st < func_at(p, i)->nstages; st++) feat_stage_access_free(&c.fp[i].st[st].acc);
        free(c.fp[i].st);
    }
    free(c.fp);
    if (ops) ops_free(ops);
    if (rc) feat_free(out);
    return rc;
}

void feat_free(feat_result *r) {
    free(r->rows);
    r->rows = NULL;
    r->n = 0;
}
