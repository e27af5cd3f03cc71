/*
 * features.c - per-stage features of a (partial) schedule (features.h).
 *
 * Everything about loops, kernels, realizations, points and allocations
 * comes from the loop-nest model (nest.h), which lowering's kernel IR is
 * held equal to.  What the model does not give, this file derives from the
 * stage's accesses as affine forms (feat_access.h):
 *  - the union footprint of all calls of one producer (the model gives one
 *    box per distinct call), for the unique bytes and lines read;
 *  - where each lane of a warp reads and writes, for coalescing, bank
 *    conflicts and the LIFT figure (feat_warp.h): a lane of a ROOT or
 *    BLOCK stage starts its serial tile at t_k * serial_k of pure loop k
 *    and steps through it by one (consecutive points), or starts at t_0
 *    and steps by the threads (cyclic points, nest.h); a THREAD stage runs
 *    in its consumer's lanes, from where the consumer's call puts it;
 *  - the Strahler number and the inline calls of the inlined expression.
 * Registers per thread are estimated as sched_check does (16 + the
 * elements of the kernel's THREAD Funcs and staged copies + the root
 * stage's serial points) and fed with the kernel's threads and shared
 * memory to the occupancy calculator (occupancy.h).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "feat_access.h"
#include "feat_warp.h"
#include "features.h"
#include "nest.h"
#include "nest_query.h"
#include "occupancy.h"

/* ---- the loop-nest picture --------------------------------------------------- */

typedef enum { MEM_G, MEM_S, MEM_R } mem_kind;   /* global, shared, register */

/* A stage as the featurizer sees it: the model's record, its accesses as
 * forms, and its loops indexed the way the forms are (ir_stage_loops). */
typedef struct {
    const nest_stage *rec;            /* NULL: no record (an empty stage) */
    const feat_stage_access *acc;     /* cached in the feat_ctx */
    int npure;
    int pure_loop[SC_MAX_DIMS];       /* loop index of the k-th pure loop */
    int64_t extent[FEAT_MAX_LOOPS];   /* per loop, in one realization */
    int64_t serial[FEAT_MAX_LOOPS];   /* per loop, per thread */
    feat_lanes lanes;                 /* the lanes' loop values */
    bool built;                       /* the fields above rec and acc filled (ensure_stage) */
} stage_pic;

typedef struct {
    const nest_func *nf;              /* NULL: not modelled */
    stage_pic *st;
} func_pic;

/* What depends on the pipeline only, and the accesses of stages keyed by
 * the inline Funcs they expand (feat_access.h walks the inlined
 * expression, the costliest part of a featurization). */
typedef struct acc_entry {
    struct acc_entry *next;
    uint64_t h;
    int fid, st, nsig;
    int *sig;                         /* the inline Funcs expanded, DFS order */
    feat_stage_access acc;
} acc_entry;

#define ACC_TABLE 1024
#define ROW_TABLE 4096
#define WARP_TABLE 4096

/* One warp's cost of the accesses to one producer, for one key: the lane
 * map, the forms, the storage, the lanes and whether unrolled (warp_key). */
typedef struct warp_entry {
    struct warp_entry *next;
    uint64_t h;
    int nkey;
    double *key;
    feat_warp_cost cost;
} warp_entry;

/* The Funcs fused into the stages of one root Func, for one key (their
 * decisions and accesses, stage by stage), interned: a kernel's key holds
 * its entry's address, so that the kernels of a Func of many stages do
 * not each repeat (and hash, and compare) what all of them share. */
#define PART_TABLE 1024
typedef struct part_entry {
    struct part_entry *next;
    uint64_t h;
    int nkey;
    uintptr_t *key;
} part_entry;

/* The rows of the stages of one kernel, for one key (feat_ctx_new's
 * comment in features.h: the kernel's decisions and inlined accesses). */
typedef struct row_entry {
    struct row_entry *next;
    uint64_t h;
    int nkey;
    uintptr_t *key;
    int nrows, cap;
    feat_row **rows;                  /* in rows_mem: feat_refs point at them until a flush */
} row_entry;

/* The key a kernel slot had in the last call that looked it up, and its
 * entry: siblings in a search differ in one or two kernels, so most
 * slots find their key unchanged here, in memory the call keeps hot,
 * instead of in the table. */
typedef struct {
    uintptr_t *key;
    int nkey, cap;
    row_entry *e;                     /* NULL: none (flush_rows) */
} slot_last;

struct feat_ctx {
    const sc_pipeline *p;
    const bounds_result *b;
    int n;
    int *slot;                        /* [func id]: first stage slot */
    int nslots;
    int *ncallees;                    /* [slot]: distinct Funcs a stage calls */
    int **callees;
    ops_result *ops;
    int *ops_of;                      /* [slot]: its entry in ops (the last one), or -1 */
    double (*patterns)[FEAT_store_slice + 1];   /* [slot]: the access classes */
    acc_entry *table[ACC_TABLE];
    int *mark, *stack, *sig;          /* scratch for the signatures */
    int stamp;
    row_entry **rtab;                 /* chained, rcap buckets (a power of two), grown with rn */
    ir_arena *rows_mem;               /* the row and part entries, their keys and rows: freed at once */
    size_t rcap, rn;
    part_entry *ptab[PART_TABLE];
    part_entry **fpart;               /* [func id] its fused part, this call's when */
    int *fstamp;                      /* [func id] == callno */
    warp_entry *wtab[WARP_TABLE];
    feat_warp_pool *pool;             /* lane patterns, across calls */
    double *wkey;                     /* scratch for a warp key */
    int wkeycap;
    bool no_row_cache;
    bool hold;                        /* no flush at the start of a call (feat_ctx_hold) */
    uint64_t last_key;                /* the last feat_row.key given */
    size_t bytes, limit;              /* held by both caches; the limit */
    target tgt;                       /* the rows' target */
    bool have_tgt;
    feat_cache_stats stats;
    /* scratch for the kernel keys, per call */
    uintptr_t *key;
    int keycap;
    int *head, *nextm;                /* [slot] first member, [func id] next */
    row_entry **kent;                 /* [slot] the kernel's entry (NULL: uncached) */
    slot_last *last;                  /* [slot] */
    int *kstamp;                      /* [slot] == callno: kent is this call's */
    func_pic *fps;                    /* [func id] a call's pictures */
    stage_pic *pics;                  /* [slot] */
    int callno;
};

typedef struct {
    const sc_pipeline *p;
    const bounds_result *b;
    const sched_state *s;
    const nest *model;
    feat_ctx *x;
    func_pic *fp;                     /* [func id] */
    char *err;
    size_t errlen;
} ctx;

static const sc_func *func_at(const sc_pipeline *p, int id) { return (const sc_func *)p->funcs.items[id]; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static mem_kind mem_of(const ctx *c, const sc_func *g) {
    const nest_func *nf = g->kind == FUNC_DEFINED ? c->fp[g->id].nf : NULL;
    if (!nf) return MEM_G;
    return nf->mem == NEST_SHARED ? MEM_S : nf->mem == NEST_REGISTER ? MEM_R : MEM_G;
}

/* The range of one form over a box of the stage's loops (from loop
 * values 0), residual included: [*lo, *hi]. */
static void form_range(const feat_form *f, int nloops, const int64_t *box, double *lo, double *hi) {
    double l = f->off, h = f->off;
    for (int j = 0; j < nloops; j++) {
        double v = f->c[j] * (double)(box[j] - 1);
        if (v < 0) l += v; else h += v;
    }
    if (!f->ok) {
        l += f->rlo;
        h += f->rhi;
    }
    *lo = l;
    *hi = h;
}

static bool coefs_equal(const feat_form *a, const feat_form *b, int nloops) {
    for (int j = 0; j < nloops; j++)
        if (a->c[j] != b->c[j]) return false;
    return true;
}

/* The extent of one producer dimension read by calls[0..n) (dimension d)
 * over a box of the stage's loops, clipped to `region`: the span of the
 * forms' union when they share their coefficients (their offsets apart
 * by the same amount everywhere); else the sum of their spans (a bound
 * on the union's size); the whole region when one is irregular and
 * unbounded. */
static int64_t span(const feat_form *const *dims, int n, int nloops, const int64_t *box, int64_t region) {
    double lo = 0, hi = 0, sum = 0;
    bool same = true;
    for (int i = 0; i < n; i++) {
        const feat_form *f = dims[i];
        if (!f->ok && !f->bounded) return region;
        double l, h;
        form_range(f, nloops, box, &l, &h);
        if (isinf(l) || isinf(h)) return region;
        sum += floor(h) - floor(l) + 1;
        if (i && !coefs_equal(f, dims[0], nloops)) same = false;
        if (!i || l < lo) lo = l;
        if (!i || h > hi) hi = h;
    }
    double e = same ? floor(hi) - floor(lo) + 1 : sum;
    return e < (double)region ? (int64_t)e : region;
}

/* The region extents of a Func or input. */
static const int64_t *region_of(const ctx *c, const sc_func *g) { return c->b->funcs[g->id].extent; }

/* Where g's elements are stored, as extents: its region (global) or its
 * allocation (shared, registers). */
static const int64_t *stored_extent(const ctx *c, const sc_func *g) {
    return mem_of(c, g) == MEM_G ? region_of(c, g) : c->fp[g->id].nf->extent;
}

/* The union box of all calls of producer q (acc->prods[q]) by a stage
 * over box: extents per dimension, clipped to lim. */
static void footprint(const stage_pic *sp, int q, const int64_t *box, const int64_t *lim, int64_t *out) {
    const feat_form *dims[256];
    const feat_stage_access *a = sp->acc;
    for (int d = 0; d < a->prods[q]->ndims; d++) {
        int n = 0;
        for (int i = 0; i < a->n && n < 256; i++)
            if (a->prod_of[i] == q) dims[n++] = &a->calls[i].dim[d];
        out[d] = n ? span(dims, n, a->nloops, box, lim[d]) : 0;
    }
}

static int fail(ctx *c, const char *msg, const sc_func *f) {
    snprintf(c->err, c->errlen, "%s: %s", f->name, msg);
    return -1;
}

/* The accesses of stage st of f under c->s's inline decisions: from the
 * cache when the same inline Funcs were expanded before.  NULL when out
 * of memory. */
static const feat_stage_access *stage_accesses(ctx *c, const sc_func *f, int st) {
    feat_ctx *x = c->x;
    const sched_state *s = c->s;
    /* the signature: the inline Funcs the stage expands, DFS order */
    int nsig = 0, top = 0, slot = x->slot[f->id] + st;
    x->stamp++;
    for (int i = x->ncallees[slot] - 1; i >= 0; i--) x->stack[top++] = x->callees[slot][i];
    while (top) {
        int g = x->stack[--top];
        if (g == f->id || x->mark[g] == x->stamp || !s->f[g] || s->f[g]->loc != SCHED_INLINE) continue;
        x->mark[g] = x->stamp;
        x->sig[nsig++] = g;
        int gs = x->slot[g];
        for (int i = x->ncallees[gs] - 1; i >= 0 && top < x->n; i--)
            if (x->mark[x->callees[gs][i]] != x->stamp) x->stack[top++] = x->callees[gs][i];
    }
    uint64_t h = 1469598103934665603ull ^ (uint64_t)slot;
    for (int i = 0; i < nsig; i++) h = (h ^ (uint64_t)x->sig[i]) * 1099511628211ull;
    acc_entry **b = &x->table[h % ACC_TABLE];
    for (acc_entry *e = *b; e; e = e->next)
        if (e->h == h && e->fid == f->id && e->st == st && e->nsig == nsig &&
            !memcmp(e->sig, x->sig, sizeof(int) * (size_t)nsig))
            return &e->acc;
    acc_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->sig = malloc(sizeof(int) * (size_t)(nsig + 1));
    if (!e->sig || feat_stage_accesses(c->p, s, f, st, &e->acc) < 0) {
        free(e->sig);
        free(e);
        return NULL;
    }
    memcpy(e->sig, x->sig, sizeof(int) * (size_t)nsig);
    x->bytes += sizeof *e + sizeof(int) * (size_t)(nsig + 1) + sizeof(feat_call) * (size_t)e->acc.cap +
                (sizeof(sc_func *) + sizeof(int)) * (size_t)(e->acc.n + 1);
    e->h = h;
    e->fid = f->id;
    e->st = st;
    e->nsig = nsig;
    e->next = *b;
    *b = e;
    return &e->acc;
}

/* Fills the picture of stage st of f from its model record.  A lane of a
 * ROOT or BLOCK stage with thread coordinates t_k starts its serial tile
 * at t_k * serial_k in pure loop k (lowering gives each thread consecutive
 * points; a ROOT stage from its region's origin, a BLOCK stage from its
 * footprint's), or at t_0 in pure loop 0 with its points threads_0 apart
 * where they are cyclic (nest_stage.cyclic).  A THREAD stage runs in its
 * consumer's lanes: its loop over dimension d of f starts where the
 * consumer's call of f puts it, i.e. the call's form composed with the
 * consumer's lane map. */
static void build_stage(ctx *c, const sc_func *f, int st) {
    func_pic *fp = &c->fp[f->id];
    stage_pic *sp = &fp->st[st];
    const nest_stage *rec = sp->rec;
    const bounds_stage *bs = &c->b->funcs[f->id].stages[st];
    int nl = sp->acc->nloops;
    sp->npure = 0;
    for (int j = 0; j < nl; j++) {
        int d = sp->acc->which[j];
        if (d >= 0) {
            int k = sp->npure++;
            sp->pure_loop[k] = j;
            sp->extent[j] = k < rec->npure ? rec->extent[k] : 1;
            sp->serial[j] = k < rec->npure ? rec->serial[k] : 1;
        } else {
            sp->extent[j] = sp->serial[j] = -1 - d < rec->nred ? rec->red[-1 - d] : bs->extent[j];
        }
        if (sp->extent[j] < 1) sp->extent[j] = 1;
        if (sp->serial[j] < 1) sp->serial[j] = 1;
    }
    feat_lanes *ln = &sp->lanes;
    memset(ln, 0, sizeof *ln);
    ln->nloops = nl;
    if (fp->nf->loc == SCHED_ROOT || fp->nf->loc == SCHED_BLOCK) {
        ln->nlayout = sp->npure;
        for (int k = 0; k < sp->npure; k++) {
            int j = sp->pure_loop[k];
            ln->L[k] = k < rec->npure && rec->threads[k] > 0 ? rec->threads[k] : 1;
            ln->lanec[j][k] = (double)nest_thread_step(rec->cyclic, k, sp->serial[j]);
            ln->origin[j] = fp->nf->loc == SCHED_ROOT ? (double)bs->min[j] : 0;
        }
    } else {
        const stage_pic *cs = &c->fp[fp->nf->at].st[fp->nf->at_stage];
        const feat_call *call = NULL;
        for (int i = 0; i < cs->acc->n && !call; i++)
            if (cs->acc->calls[i].prod == f) call = &cs->acc->calls[i];
        *ln = cs->lanes;
        ln->nloops = nl;
        for (int j = 0; j < nl; j++) {
            memset(ln->lanec[j], 0, sizeof ln->lanec[j]);
            ln->origin[j] = 0;
            int d = sp->acc->which[j];
            if (d < 0 || !call || !call->dim[d].ok) continue;
            const feat_form *fm = &call->dim[d];
            ln->origin[j] = fm->off;
            for (int i = 0; i < cs->acc->nloops; i++) {
                ln->origin[j] += fm->c[i] * cs->lanes.origin[i];
                for (int k = 0; k < cs->lanes.nlayout; k++) ln->lanec[j][k] += fm->c[i] * cs->lanes.lanec[i][k];
            }
        }
    }
    for (int j = 0; j < nl; j++) {
        ln->serial[j] = sp->serial[j];
        ln->sstep[j] = 1;
    }
    if (rec->cyclic && sp->npure > 0 && (fp->nf->loc == SCHED_ROOT || fp->nf->loc == SCHED_BLOCK))
        ln->sstep[sp->pure_loop[0]] = rec->threads[0];
}

/* The picture of every modelled Func, consumers first (a THREAD stage
 * takes its lanes from its consumer's). */
static int build(ctx *c) {
    const sc_pipeline *p = c->p;
    for (int oi = p->order.n - 1; oi >= 0; oi--) {
        const sc_func *f = ir_order_at(p, oi);
        if (f->kind != FUNC_DEFINED || !c->model->funcs[f->id]) continue;
        const nest_func *nf = c->model->funcs[f->id];
        if (nf->loc == SCHED_THREAD && (nf->at < 0 || !c->fp[nf->at].nf || nf->at_stage < 0 ||
                                        !c->fp[nf->at].st[nf->at_stage].rec))
            continue;   /* not reachable through a modelled consumer stage */
        func_pic *fp = &c->fp[f->id];
        fp->st = c->x->pics + c->x->slot[f->id];   /* the ctx's scratch */
        fp->nf = nf;
        for (int st = 0; st < f->nstages; st++) {
            fp->st[st].acc = NULL;
            fp->st[st].built = false;
            fp->st[st].rec = st < nf->nstages ? nf->stages[st] : NULL;
            if (!fp->st[st].rec) continue;
            fp->st[st].acc = stage_accesses(c, f, st);
            if (!fp->st[st].acc) return fail(c, "out of memory", f);
        }
    }
    return 0;
}

/* Fills the picture of a stage when a row needs it (rows found in the
 * cache do not): a THREAD stage's consumer first. */
static void ensure_stage(ctx *c, const sc_func *f, int st) {
    stage_pic *sp = &c->fp[f->id].st[st];
    if (sp->built) return;
    const nest_func *nf = c->fp[f->id].nf;
    if (nf->loc == SCHED_THREAD) ensure_stage(c, func_at(c->p, nf->at), nf->at_stage);
    build_stage(c, f, st);
    sp->built = true;
}

/* ---- the kernels -------------------------------------------------------------- */

/* Registers per thread, estimated as sched_check does: 16 (indices,
 * addresses) + one per element of every THREAD Func and register-staged
 * copy of the kernel + one per point of the root stage's serial tile. */
static int kernel_registers(const ctx *c, const nest_kernel *k) {
    const stage_pic *rs = &c->fp[k->root->id].st[k->stage];
    int64_t serial = 1;
    for (int i = 0; i < rs->npure; i++) serial *= rs->serial[rs->pure_loop[i]];
    int64_t regs = 16 + k->register_elems + k->staged_elems + serial;
    return regs > 1 << 20 ? 1 << 20 : (int)regs;
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
    const int64_t *ext = stored_extent(c, g);
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

static uint64_t hash_words(const uint64_t *k, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        h ^= k[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    /* a finalizer: the tables take the low bits */
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* Everything feat_warp_access reads, as numbers (all exact in a double):
 * the lanes, the storage, the forms; NULL when out of memory. */
static const double *warp_key(feat_ctx *x, const feat_lanes *ln, int n, const feat_form *const *calls,
                              const feat_storage *st, int64_t first, int nlanes, bool unrolled, bool cached,
                              int *nkey) {
    int need = 8 + SC_MAX_DIMS + ln->nloops * (3 + ln->nlayout) + 2 * st->ndims + n * st->ndims * (2 + ln->nloops);
    if (need > x->wkeycap) {
        int cap = x->wkeycap ? x->wkeycap : 256;
        while (cap < need) cap *= 2;
        double *k = realloc(x->wkey, sizeof *k * (size_t)cap);
        if (!k) return NULL;
        x->wkey = k;
        x->wkeycap = cap;
    }
    double *k = x->wkey;
    int m = 0;
    k[m++] = (double)first;
    k[m++] = nlanes;
    k[m++] = unrolled + 2 * cached;
    k[m++] = n;
    k[m++] = ln->nloops;
    k[m++] = ln->nlayout;
    for (int q = 0; q < ln->nlayout; q++) k[m++] = (double)ln->L[q];
    for (int j = 0; j < ln->nloops; j++) {
        k[m++] = ln->origin[j];
        k[m++] = (double)ln->serial[j];
        k[m++] = (double)ln->sstep[j];
        for (int q = 0; q < ln->nlayout; q++) k[m++] = ln->lanec[j][q];
    }
    k[m++] = st->ndims;
    k[m++] = st->elem + 1000.0 * st->shared;
    for (int d = 0; d < st->ndims; d++) {
        k[m++] = (double)st->base[d];
        k[m++] = (double)st->stride[d];
    }
    for (int i = 0; i < n; i++)
        for (int d = 0; d < st->ndims; d++) {
            const feat_form *f = &calls[i][d];
            k[m++] = f->ok;
            k[m++] = f->off;
            for (int j = 0; j < ln->nloops; j++) k[m++] = f->c[j];
        }
    *nkey = m;
    return k;
}

/* feat_warp_access's cost of the accesses, from zero, added into *c: from
 * the ctx's cache when the same key was priced before.  Both paths add the
 * same figures, so cached and fresh rows are bit-identical. */
static int warp_access(ctx *c, const feat_lanes *ln, int n, const feat_form *const *calls, const feat_storage *st,
                       int64_t first, int nlanes, bool unrolled, bool cached, feat_warp_cost *out) {
    feat_ctx *x = c->x;
    feat_warp_cost d;
    memset(&d, 0, sizeof d);
    warp_entry *e = NULL, **b = NULL;
    int nkey = 0;
    uint64_t h = 0;
    const double *key = x->no_row_cache ? NULL : warp_key(x, ln, n, calls, st, first, nlanes, unrolled, cached, &nkey);
    if (key) {
        h = hash_words((const uint64_t *)(const void *)key, nkey);
        b = &x->wtab[h % WARP_TABLE];
        for (e = *b; e; e = e->next)
            if (e->h == h && e->nkey == nkey && (nkey == 0 || !memcmp(e->key, key, sizeof(double) * (size_t)nkey))) break;
    }
    if (e) {
        d = e->cost;
    } else {
        if (feat_warp_access(ln, n, calls, st, first, nlanes, unrolled, cached, x->no_row_cache ? NULL : x->pool, &d) < 0)
            return -1;
        if (key && (e = malloc(sizeof *e)) != NULL) {
            if ((e->key = malloc(sizeof(double) * (size_t)nkey)) != NULL) {
                if (nkey) memcpy(e->key, key, sizeof(double) * (size_t)nkey);
                e->h = h;
                e->nkey = nkey;
                e->cost = d;
                e->next = *b;
                *b = e;
                x->bytes += sizeof *e + sizeof(double) * (size_t)nkey;
            } else {
                free(e);
            }
        }
    }
    out->trans += d.trans;
    out->needed += d.needed;
    out->moved += d.moved;
    out->lift_lines += d.lift_lines;
    out->lift_n += d.lift_n;
    out->gathers += d.gathers;
    return 0;
}

/* A bounded irregular coordinate whose residual spans at most this many
 * elements (upsampling's `x/2 - 1 + 2*(x % 2)`: 2) is priced, in a warp,
 * as the regular access at the residual's middle: each lane is then at
 * most this far from its real address, where taking the coordinate as a
 * gather would put every lane in a sector of its own. */
#define WARP_NARROW_RESIDUAL 4

/* The forms of a call as a warp prices them (dims, with narrow bounded
 * coordinates at their middle): dims itself when none is narrow, else
 * copied into out. */
static const feat_form *warp_forms(const feat_form *dims, feat_form *out) {
    bool narrow = false;
    for (int d = 0; d < SC_MAX_DIMS; d++)
        narrow |= !dims[d].ok && dims[d].bounded && dims[d].rhi - dims[d].rlo <= WARP_NARROW_RESIDUAL;
    if (!narrow) return dims;
    for (int d = 0; d < SC_MAX_DIMS; d++) {
        out[d] = dims[d];
        if (!dims[d].ok && dims[d].bounded && dims[d].rhi - dims[d].rlo <= WARP_NARROW_RESIDUAL) {
            out[d].ok = true;
            out[d].bounded = false;
            out[d].off += (dims[d].rlo + dims[d].rhi) / 2;
            out[d].rlo = out[d].rhi = 0;
        }
    }
    return out;
}

_Static_assert(_Alignof(feat_form) >= _Alignof(feat_form *), "warp_of puts pointers after feat_forms");

/* Loads and stores of one warp (lanes first .. first + nlanes - 1). */
static int warp_of(ctx *c, const sc_func *f, const stage_pic *sp, int64_t first, int nlanes, bool unrolled,
                   bool cached, warp_costs *w) {
    memset(w, 0, sizeof *w);
    const feat_stage_access *a = sp->acc;
    /* one allocation: the narrowed forms of every call, then the calls
     * (pointers) passed on per producer */
    feat_form (*narrowed)[SC_MAX_DIMS] = malloc((sizeof *narrowed + sizeof(feat_form *)) * (size_t)(a->n + 1));
    if (!narrowed) return -1;
    const feat_form **calls = (const feat_form **)(void *)(narrowed + a->n + 1);
    int rc = 0;
    for (int p = 0; p < a->nprods && !rc; p++) {
        const sc_func *g = a->prods[p];
        mem_kind m = mem_of(c, g);
        if (m == MEM_R) continue;
        int n = 0;
        for (int q = 0; q < a->n; q++)
            if (a->prod_of[q] == p) calls[n++] = warp_forms(a->calls[q].dim, narrowed[q]);
        feat_storage st;
        storage_of(c, g, &st);
        rc = warp_access(c, &sp->lanes, n, calls, &st, first, nlanes, unrolled, cached, &w->load[m == MEM_S]);
    }
    mem_kind own = mem_of(c, f);
    if (!rc && own != MEM_R) {
        feat_storage st;
        storage_of(c, f, &st);
        calls[0] = a->store;
        rc = warp_access(c, &sp->lanes, 1, calls, &st, first, nlanes, unrolled, cached, &w->store[own == MEM_S]);
    }
    free(narrowed);
    return rc;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* Threads per block running a stage: its own (ROOT, BLOCK) or its
 * consumer's (THREAD, which runs inside the consumer's thread loop). */
static int64_t running_threads(const ctx *c, const sc_func *f, int st) {
    const nest_func *nf = c->fp[f->id].nf;
    while (nf->loc == SCHED_THREAD) {
        st = nf->at_stage;
        f = func_at(c->p, nf->at);
        nf = c->fp[f->id].nf;
    }
    return nf->stages[st]->threads_used;
}

/* Whether call c's address moves along stage loop j (an irregular
 * coordinate counts as moving). */
static bool call_varies(const feat_call *c, int j) {
    for (int d = 0; d < c->ndims; d++)
        if (!c->dim[d].ok || c->dim[d].c[j] != 0) return true;
    return false;
}

/* The loads per point of a stage whose reduction loops run around its
 * tile (nest_reduction_around_tile) when the tile is unrolled, as the
 * generated code does them: at each reduction step a call is loaded once
 * per distinct address in the tile, so one that does not move along a
 * pure loop serves the tile's points along it (sgemm's A(i, r) serves a
 * tile's j), and the running values of a stage that accumulates in place
 * stay in registers (a scan's read of the step before is a load like any
 * other). */
static void reuse_tile_loads(const sc_func *f, int st, const feat_stage_access *a, const stage_pic *sp, double *v) {
    double pts = 1;
    for (int k = 0; k < sp->npure; k++) pts *= (double)sp->serial[sp->pure_loop[k]];
    bool in_place = ir_stage_accumulates(f, st);
    for (int i = 0; i < a->n; i++) {
        const feat_call *c = &a->calls[i];
        ops_kind kind = ops_load_kind(f, c->prod);
        double distinct = 0;
        if (kind != OPS_LOAD_SELF || !in_place) {
            distinct = 1;
            for (int k = 0; k < sp->npure; k++)
                if (call_varies(c, sp->pure_loop[k])) distinct *= (double)sp->serial[sp->pure_loop[k]];
        }
        double *slot = &v[FEAT_OP(kind, c->prod->type)];
        *slot = fmax(0.0, *slot - (1.0 - distinct / pts));
    }
}

static int fill_row(ctx *c, const target *t, const sc_func *f, int st, feat_row *row) {
    const func_pic *fp = &c->fp[f->id];
    const nest_func *nf = fp->nf;
    const stage_pic *sp = &fp->st[st];
    const nest_stage *rec = sp->rec;
    ensure_stage(c, f, st);
    ensure_stage(c, rec->kernel->root, rec->kernel->stage);
    const nest_kernel *kn = rec->kernel;
    const feat_stage_access *a = sp->acc;
    double *v = row->v;
    memset(row, 0, sizeof *row);
    row->func = f->id;
    row->stage = st;
    row->loc = nf->loc;
    row->kernel_func = kn->root->id;
    row->kernel_stage = kn->stage;
    int nl = a->nloops;
    size_t esize = sc_type_size(f->type);

    const ops_result *ops = c->x->ops;
    int oi = c->x->ops_of[c->x->slot[f->id] + st];
    if (oi >= 0)
        for (int k = 0; k < OPS_KIND_COUNT; k++)
            for (int ty = 0; ty < SC_TYPE_COUNT; ty++)
                v[FEAT_OP(k, ty)] = (double)ops->items[oi].count[k][ty];
    /* the operations of the inline Funcs the stage expands, as many times
     * per point as it makes distinct calls of them: what the generated code
     * computes per point once its compiler has computed each repeated
     * pure expression once (without them an inlined producer's work would
     * be visible only as a count of calls) */
    for (int i = 0; i < a->ninl; i++) {
        int gi = c->x->ops_of[c->x->slot[a->inl[i]->id]];
        if (gi < 0) continue;
        for (int k = 0; k < OPS_KIND_COUNT; k++)
            for (int ty = 0; ty < SC_TYPE_COUNT; ty++)
                v[FEAT_OP(k, ty)] += (double)a->inl_calls[i] * (double)ops->items[gi].count[k][ty];
    }
    /* its loads, likewise: one per distinct access (the same producer at
     * the same forms), however many calls of the expression tree make it */
    for (int ty = 0; ty < SC_TYPE_COUNT; ty++)
        v[FEAT_OP(OPS_LOAD_INPUT, ty)] = v[FEAT_OP(OPS_LOAD_FUNC, ty)] = v[FEAT_OP(OPS_LOAD_SELF, ty)] = 0;
    for (int i = 0; i < a->n; i++) v[FEAT_OP(ops_load_kind(f, a->calls[i].prod), a->calls[i].prod->type)] += 1;
    /* asked once: it walks the update's coordinates */
    bool around = nest_reduction_around_tile(rec);
    if (around && rec->unrolled) reuse_tile_loads(f, st, a, sp, v);
    memcpy(v + FEAT_AT(0), c->x->patterns[c->x->slot[f->id] + st], sizeof c->x->patterns[0]);

    double pure_pts = 1, serial_pts = 1, red = 1;
    for (int j = 0; j < nl; j++) {
        serial_pts *= (double)sp->serial[j];
        if (a->which[j] >= 0) pure_pts *= (double)sp->extent[j];
        else red *= (double)sp->extent[j];
    }
    const bounds_stage *bs = &c->b->funcs[f->id].stages[st];
    double minimum = 1;
    for (int j = 0; j < bs->nloops; j++) minimum *= (double)bs->extent[j];
    double fbytes = (double)nf->bytes;
    double region_bytes = (double)esize;
    for (int d = 0; d < f->ndims; d++) region_bytes *= (double)region_of(c, f)[d];
    int64_t threads = running_threads(c, f, st);

    /* Adams et al. 2019 */
    v[FEAT_AT(FEAT_num_realizations)] = (double)rec->realizations;
    v[FEAT_AT(FEAT_num_productions)] = (double)rec->realizations;
    v[FEAT_AT(FEAT_points_computed_per_realization)] = (double)rec->points_per_realization;
    v[FEAT_AT(FEAT_points_computed_total)] = (double)rec->points_total;
    v[FEAT_AT(FEAT_points_computed_minimum)] = minimum;
    v[FEAT_AT(FEAT_inlined_calls)] = (double)a->inlined_calls;
    v[FEAT_AT(FEAT_bytes_at_realization)] = fbytes;
    v[FEAT_AT(FEAT_bytes_at_production)] = pure_pts * (double)esize;
    v[FEAT_AT(FEAT_bytes_at_root)] = region_bytes;
    /* the innermost loop that iterates: the first reduction loop, or,
     * where lowering runs the reduction loops around the serial tile
     * (nest_reduction_around_tile), the first pure loop of more than one
     * serial point */
    int inner = -1, inner_pure = sp->npure ? sp->pure_loop[0] : -1;
    if (around)
        for (int j = 0; j < nl && inner < 0; j++)
            if (a->which[j] >= 0 && sp->serial[j] > 1) inner = j;
    for (int j = 0; j < nl && inner < 0; j++)
        if (a->which[j] < 0) inner = j;
    if (inner < 0) inner = inner_pure;
    v[FEAT_AT(FEAT_innermost_loop_extent)] = inner >= 0 ? (double)sp->serial[inner] : 1;
    v[FEAT_AT(FEAT_innermost_pure_loop_extent)] = inner_pure >= 0 ? (double)sp->extent[inner_pure] : 1;
    /* straight-line code only where lowering unrolls every serial loop,
     * each on its own (a 4 x 3 x 3 reduction is, 36 points) */
    bool unrolled = nest_serial_loops_unrolled(rec);
    v[FEAT_AT(FEAT_unrolled_loop_extent)] = unrolled ? serial_pts : 1;
    v[FEAT_AT(FEAT_inner_parallelism)] = (double)threads;
    v[FEAT_AT(FEAT_outer_parallelism)] = (double)kn->nblocks;

    /* Anderson et al. 2021 Appendix A */
    double scalars;
    if (nf->loc == SCHED_THREAD) scalars = (double)rec->points_total;
    else {
        scalars = (nf->loc == SCHED_ROOT ? 1 : (double)kn->nblocks) * red;
        for (int q = 0; q < sp->npure && q < rec->npure; q++)
            scalars *= (double)rec->threads[q] * (double)rec->serial[q] * (double)rec->blocks[q];
    }
    v[FEAT_AT(FEAT_num_scalars)] = scalars;
    v[FEAT_AT(FEAT_points_computed_per_thread)] = serial_pts;

    /* footprints read, by memory kind: per realization (the stage's loops
     * whole) and per thread (its serial tile) */
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
    for (int q = 0; q < a->nprods; q++) {
        const sc_func *g = a->prods[q];
        mem_kind m = mem_of(c, g);
        const int64_t *lim = stored_extent(c, g);
        int64_t ext[SC_MAX_DIMS];
        double gsize = (double)sc_type_size(g->type);
        int ncalls = 0;
        for (int i = 0; i < a->n; i++) ncalls += a->prod_of[i] == q;
        for (int level = 0; level < 2; level++) {
            const int64_t *loops = level ? sp->serial : sp->extent;
            footprint(sp, q, loops, lim, ext);
            double bytes = gsize, lines = 1;
            for (int d = 0; d < g->ndims; d++) {
                bytes *= (double)ext[d];
                if (d) lines *= (double)ext[d];
            }
            /* a point reads one element per call: no more than that, where
             * an irregular call's box (its residual, or the whole Func)
             * is wider than what the region's points can read */
            double reads = ncalls;
            for (int j = 0; j < nl; j++) reads *= (double)loops[j];
            if (bytes > reads * gsize) bytes = reads * gsize;
            if (lines > reads) lines = reads;
            v[FEAT_AT(level ? ub_thr[m] : ub_real[m])] += bytes;
            v[FEAT_AT(level ? ul_thr[m] : ul_real[m])] += lines;
        }
        double abytes = gsize;
        for (int d = 0; d < g->ndims; d++) abytes *= (double)lim[d];
        v[FEAT_AT(alloc[m])] += abytes;
    }

    /* written per block: a ROOT stage its block's tile, a BLOCK stage its
     * footprint, a THREAD stage its footprint in every running thread */
    mem_kind own = mem_of(c, f);
    double task = (double)esize, inner_task = (double)esize;
    for (int q = 0; q < sp->npure; q++) {
        int j = sp->pure_loop[q];
        double e = (double)sp->extent[j];
        if (nf->loc == SCHED_ROOT && q < rec->npure) {
            double tile = (double)rec->threads[q] * (double)rec->serial[q];
            if (tile < e) e = tile;
        }
        task *= e;
        if (a->which[j] == 0) inner_task *= e;
    }
    if (nf->loc == SCHED_THREAD) task *= (double)threads;
    static const int at_task[3] = { FEAT_global_bytes_at_task, FEAT_shared_bytes_at_task, FEAT_register_bytes_at_task };
    static const int at_inner[3] = { FEAT_global_innermost_bytes_at_task, FEAT_shared_innermost_bytes_at_task,
                                     FEAT_register_innermost_bytes_at_task };
    v[FEAT_AT(at_task[own])] = task;
    v[FEAT_AT(at_inner[own])] = inner_task;

    /* parallelism */
    int ws = t->warp_size;
    double active_warps = (double)ceil_div(threads, ws);
    v[FEAT_AT(FEAT_num_blocks)] = (double)kn->nblocks;
    v[FEAT_AT(FEAT_num_warps_per_block)] = (double)ceil_div(kn->nthreads, ws);
    v[FEAT_AT(FEAT_num_active_warps_per_block)] = active_warps;
    v[FEAT_AT(FEAT_num_threads_per_block)] = (double)threads;
    v[FEAT_AT(FEAT_expr_branching)] = a->strahler;
    v[FEAT_AT(FEAT_block_occupancy)] = (double)threads / t->max_threads_per_block;
    v[FEAT_AT(FEAT_warp_lane_utilization)] = (double)threads / (ws * active_warps);
    v[FEAT_AT(FEAT_idle_lane_wastage)] = (ws * active_warps - (double)threads) / t->max_threads_per_block;

    /* memory transactions: a regular warp and the tail warp (NVIDIA's
     * 32-lane warps, 32-byte sectors, 32 banks; on a CPU, the sectors a
     * warp touches over its iterations: feat_warp.h) */
    int64_t full = threads / 32, tail = threads % 32;
    warp_costs reg, tl;
    memset(&reg, 0, sizeof reg);
    memset(&tl, 0, sizeof tl);
    if (full && warp_of(c, f, sp, 0, 32, unrolled, t->cpu, &reg) < 0) return fail(c, "out of memory", f);
    if (tail && warp_of(c, f, sp, full * 32, (int)tail, unrolled, t->cpu, &tl) < 0) return fail(c, "out of memory", f);
    double nfull = (double)full, ntail = tail ? 1 : 0;
    v[FEAT_AT(FEAT_num_global_mem_loads_per_block)] = nfull * reg.load[0].trans + ntail * tl.load[0].trans;
    v[FEAT_AT(FEAT_num_shared_mem_loads_per_block)] = nfull * reg.load[1].trans + ntail * tl.load[1].trans;
    v[FEAT_AT(FEAT_num_global_mem_stores_per_block)] = nfull * reg.store[0].trans + ntail * tl.store[0].trans;
    v[FEAT_AT(FEAT_num_shared_mem_stores_per_block)] = nfull * reg.store[1].trans + ntail * tl.store[1].trans;
    v[FEAT_AT(FEAT_global_mem_loads_per_regular_warp)] = reg.load[0].trans;
    v[FEAT_AT(FEAT_shared_mem_loads_per_regular_warp)] = reg.load[1].trans;
    v[FEAT_AT(FEAT_global_mem_stores_per_regular_warp)] = reg.store[0].trans;
    v[FEAT_AT(FEAT_shared_mem_stores_per_regular_warp)] = reg.store[1].trans;
    v[FEAT_AT(FEAT_global_mem_loads_per_tail_warp)] = tl.load[0].trans;
    v[FEAT_AT(FEAT_shared_mem_loads_per_tail_warp)] = tl.load[1].trans;
    v[FEAT_AT(FEAT_global_mem_stores_per_tail_warp)] = tl.store[0].trans;
    v[FEAT_AT(FEAT_shared_mem_stores_per_tail_warp)] = tl.store[1].trans;
#define EFF(cost) ratio(nfull * reg.cost.needed + ntail * tl.cost.needed, nfull * reg.cost.moved + ntail * tl.cost.moved)
    v[FEAT_AT(FEAT_global_mem_load_efficiency)] = EFF(load[0]);
    v[FEAT_AT(FEAT_shared_mem_load_efficiency)] = EFF(load[1]);
    v[FEAT_AT(FEAT_global_mem_store_efficiency)] = EFF(store[0]);
    v[FEAT_AT(FEAT_shared_mem_store_efficiency)] = EFF(store[1]);
#undef EFF
    const warp_costs *lw = full ? &reg : &tl;
    double lift = lw->load[0].lift_lines + lw->store[0].lift_lines;
    int nlift = lw->load[0].lift_n + lw->store[0].lift_n;
    v[FEAT_AT(FEAT_global_lines_per_warp_access)] = ratio(lift, nlift);
    v[FEAT_AT(FEAT_vector_gathers_per_point)] =
        lw->load[0].gathers + lw->load[1].gathers + lw->store[0].gathers + lw->store[1].gathers;

    /* working set at the thread level: this Func if it lives there, and the
     * THREAD Funcs computed inside its threads (directly or nested) */
    double wset = nf->loc == SCHED_THREAD ? fbytes : 0;
    for (int i = 0; i < c->p->funcs.n; i++) {
        const nest_func *g = c->fp[i].nf;
        if (!g || g->loc != SCHED_THREAD || i == f->id) continue;
        int up = g->at;
        while (up >= 0 && up != f->id && c->fp[up].nf && c->fp[up].nf->loc == SCHED_THREAD) up = c->fp[up].nf->at;
        if (up == f->id) wset += (double)g->bytes;
    }
    v[FEAT_AT(FEAT_working_set_at_thread)] = wset;

    /* occupancy of the kernel */
    int regs = kernel_registers(c, kn);
    occ_result occ;
    occ_compute(t, kn->nthreads, regs, kn->shared_bytes, &occ);
    v[FEAT_AT(FEAT_registers_per_thread)] = regs;
    v[FEAT_AT(FEAT_shared_mem_occupancy)] = (double)kn->shared_bytes / t->shared_mem_per_block;
    int smem_blocks = occ.blocks_by[OCC_LIMIT_SHARED];
    if (smem_blocks > t->max_blocks_per_sm) smem_blocks = t->max_blocks_per_sm;
    v[FEAT_AT(FEAT_shared_mem_block_limit_factor)] = (double)smem_blocks / t->max_blocks_per_sm;
    v[FEAT_AT(FEAT_max_warp_occupancy)] = occ.occupancy;
    v[FEAT_AT(FEAT_max_block_occupancy)] = (double)occ.active_blocks / t->max_blocks_per_sm;
    return 0;
}

/* ---- the row cache ------------------------------------------------------------ */

static void flush_rows(feat_ctx *x) {
    if (x->rtab) memset(x->rtab, 0, sizeof *x->rtab * x->rcap);
    x->rn = 0;
    for (int i = 0; x->last && i < x->nslots; i++) x->last[i].e = NULL;
    for (int i = 0; i < PART_TABLE; i++) x->ptab[i] = NULL;
    if (x->rows_mem) ir_arena_reset(x->rows_mem);
}

static void flush_accesses(feat_ctx *x) {
    for (int i = 0; i < ACC_TABLE; i++) {
        for (acc_entry *e = x->table[i], *next; e; e = next) {
            next = e->next;
            feat_stage_access_free(&e->acc);
            free(e->sig);
            free(e);
        }
        x->table[i] = NULL;
    }
}

static void flush_warps(feat_ctx *x) {
    for (int i = 0; i < WARP_TABLE; i++) {
        for (warp_entry *e = x->wtab[i], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e);
        }
        x->wtab[i] = NULL;
    }
}

void feat_ctx_flush(feat_ctx *x) {
    /* row keys hold access entries' addresses: both go together */
    flush_rows(x);
    flush_accesses(x);
    flush_warps(x);
    if (x->pool) feat_warp_pool_clear(x->pool);
    x->bytes = 0;
}

void feat_ctx_set_limit(feat_ctx *x, size_t bytes) { x->limit = bytes ? bytes : FEAT_CACHE_LIMIT; }

void feat_ctx_cache_rows(feat_ctx *x, bool on) { x->no_row_cache = !on; }

feat_cache_stats feat_ctx_stats(const feat_ctx *x) {
    feat_cache_stats st = x->stats;
    st.bytes = x->bytes + feat_warp_pool_bytes(x->pool);
    return st;
}

static bool key_room(feat_ctx *x, int nkey, int more) {
    if (nkey + more <= x->keycap) return true;
    int cap = x->keycap ? x->keycap : 64;
    while (cap < nkey + more) cap *= 2;
    uintptr_t *k = realloc(x->key, sizeof *k * (size_t)cap);
    if (!k) return false;
    x->key = k;
    x->keycap = cap;
    return true;
}

/* Appends one Func's part of a kernel key: its decision and the accesses
 * of its stages (stage `only` of a ROOT Func, which is a kernel of its
 * own; every stage of a fused one).  -1 when out of memory. */
static int key_func(ctx *c, int nkey, const sc_func *f, int only) {
    feat_ctx *x = c->x;
    const sched_func *sf = c->s->f[f->id];
    const func_pic *fp = &c->fp[f->id];
    int lo = only < 0 ? 0 : only, hi = only < 0 ? f->nstages : only + 1;
    if (!key_room(x, nkey, 6 + (hi - lo) * (2 + 2 * SC_MAX_DIMS))) return -1;
    uintptr_t *k = x->key;
    k[nkey++] = (uintptr_t)f->id;
    k[nkey++] = (uintptr_t)sf->loc | (uintptr_t)(sf->at + 1) << 8;
    k[nkey++] = (uintptr_t)fp->nf->at_stage + 1;
    k[nkey++] = (uintptr_t)sf->pending | (uintptr_t)sf->nstages << 16;
    for (int st = lo; st < hi; st++) {
        k[nkey++] = (uintptr_t)fp->st[st].acc;
        const sched_tile *t = sf->tile && st < sf->nstages ? &sf->tile[st] : NULL;
        k[nkey++] = t ? (uintptr_t)t->npure + 1 : 0;
        for (int q = 0; t && q < t->npure; q++) {
            k[nkey++] = (uintptr_t)t->threads[q];
            k[nkey++] = (uintptr_t)t->serial[q];
        }
    }
    return nkey;
}

/* Whether a stage of kernel (root slot `ks`) reads a shared or register
 * Func that is not in the kernel (its rows would then read outside it). */
static bool reads_outside(const ctx *c, const stage_pic *sp, int ks) {
    for (int i = 0; sp->acc && i < sp->acc->nprods; i++) {
        const sc_func *g = sp->acc->prods[i];
        if (mem_of(c, g) == MEM_G) continue;
        const func_pic *gp = &c->fp[g->id];
        const nest_stage *r = NULL;
        for (int st = 0; gp->st && st < g->nstages && !r; st++) r = gp->st[st].rec;
        if (!r || c->x->slot[r->kernel->root->id] + r->kernel->stage != ks) return true;
    }
    return false;
}

/* Keys are a few dozen words: compared inline, not through memcmp (whose
 * call, for keys this short, cost more than the comparison). */
static inline bool same_words(const uintptr_t *a, const uintptr_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static uint64_t key_hash(const uintptr_t *k, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)k[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    /* a finalizer: the tables take the low bits */
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* Doubles the row table (chains of one entry on average: a search caches
 * hundreds of thousands of kernels); keeps the old one when out of
 * memory. */
static void grow_rows(feat_ctx *x) {
    size_t cap = 2 * x->rcap;
    row_entry **t = calloc(cap, sizeof *t);
    if (!t) return;
    for (size_t i = 0; i < x->rcap; i++)
        for (row_entry *e = x->rtab[i], *next; e; e = next) {
            next = e->next;
            e->next = t[e->h & (cap - 1)];
            t[e->h & (cap - 1)] = e;
        }
    x->bytes += sizeof *t * (cap - x->rcap);
    free(x->rtab);
    x->rtab = t;
    x->rcap = cap;
}

/* The interned fused part of root Func r (part_entry): the Funcs fused
 * into each of its stages, behind a separator per stage; made once per
 * call.  NULL with *oom when out of memory. */
static part_entry *fused_part(ctx *c, const sc_func *r, bool *oom) {
    feat_ctx *x = c->x;
    if (x->fstamp[r->id] == x->callno) return x->fpart[r->id];
    int nkey = 0;
    for (int rs = 0; rs < r->nstages; rs++) {
        int slot = x->slot[r->id] + rs;
        if (x->head[slot] < 0) continue;                       /* nothing fused into this stage */
        if (!key_room(x, nkey, 1)) { *oom = true; return NULL; }
        x->key[nkey++] = (uintptr_t)-1 - (uintptr_t)rs;     /* a separator */
        for (int m = x->head[slot]; m >= 0; m = x->nextm[m]) {
            nkey = key_func(c, nkey, func_at(c->p, m), -1);
            if (nkey < 0) { *oom = true; return NULL; }
        }
    }
    uint64_t h = key_hash(x->key, nkey);
    part_entry **b = &x->ptab[h % PART_TABLE], *e = NULL;
    for (e = *b; e; e = e->next)
        if (e->h == h && e->nkey == nkey && (nkey == 0 || !memcmp(e->key, x->key, sizeof(uintptr_t) * (size_t)nkey))) break;
    if (!e) {
        e = ir_alloc_try(x->rows_mem, sizeof *e);
        if (!e || !(e->key = ir_alloc_try(x->rows_mem, sizeof(uintptr_t) * (size_t)(nkey ? nkey : 1)))) {
            *oom = true;
            return NULL;
        }
        if (nkey) memcpy(e->key, x->key, sizeof(uintptr_t) * (size_t)nkey);
        e->h = h;
        e->nkey = nkey;
        e->next = *b;
        *b = e;
        x->bytes += sizeof *e + sizeof(uintptr_t) * (size_t)nkey;
    }
    x->fstamp[r->id] = x->callno;
    return x->fpart[r->id] = e;
}

static row_entry *find_kernel(feat_ctx *x, int nkey);

/* The cache entry of the kernel whose root stage is slot ks (found or
 * added), or NULL when it cannot be cached.  -1 in *oom when out of memory. */
static row_entry *kernel_entry(ctx *c, const nest_kernel *kn, bool *oom) {
    feat_ctx *x = c->x;
    const sc_func *r = kn->root;
    int ks = x->slot[r->id] + kn->stage;
    if (x->kstamp[ks] == x->callno) return x->kent[ks];
    x->kstamp[ks] = x->callno;
    x->kent[ks] = NULL;
    if (reads_outside(c, &c->fp[r->id].st[kn->stage], ks)) return NULL;
    for (int m = x->head[ks]; m >= 0; m = x->nextm[m]) {
        const sc_func *g = func_at(c->p, m);
        for (int st = 0; st < g->nstages; st++)
            if (c->fp[m].st[st].rec && reads_outside(c, &c->fp[m].st[st], ks)) return NULL;
    }
    /* the Funcs fused into every stage of r, not only this one: a root
     * stage's working_set_at_thread counts the THREAD Funcs of all of r */
    const part_entry *part = fused_part(c, r, oom);
    if (!part) return NULL;
    int nkey = key_func(c, 0, r, kn->stage);
    if (nkey < 0 || !key_room(x, nkey, 1)) { *oom = true; return NULL; }
    x->key[nkey++] = (uintptr_t)part;
    slot_last *l = &x->last[ks];
    if (l->e && l->nkey == nkey && same_words(l->key, x->key, nkey))
        return x->kent[ks] = l->e;
    row_entry *e = find_kernel(x, nkey);
    if (!e) {
        *oom = true;
        return NULL;
    }
    if (l->cap < nkey) {
        uintptr_t *k = realloc(l->key, sizeof *k * (size_t)nkey);
        if (!k) return x->kent[ks] = e;        /* not remembered; the entry is right */
        l->key = k;
        l->cap = nkey;
    }
    memcpy(l->key, x->key, sizeof(uintptr_t) * (size_t)nkey);
    l->nkey = nkey;
    l->e = e;
    return x->kent[ks] = e;
}

/* The entry of the kernel key in x->key[0..nkey), found or added; NULL
 * when out of memory. */
static row_entry *find_kernel(feat_ctx *x, int nkey) {
    uint64_t h = key_hash(x->key, nkey);
    row_entry **b = &x->rtab[h & (x->rcap - 1)];
    for (row_entry *e = *b; e; e = e->next)
        if (e->h == h && e->nkey == nkey && same_words(e->key, x->key, nkey)) return e;
    row_entry *e = ir_alloc_try(x->rows_mem, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    if (!(e->key = ir_alloc_try(x->rows_mem, sizeof(uintptr_t) * (size_t)(nkey ? nkey : 1)))) return NULL;
    if (nkey) memcpy(e->key, x->key, sizeof(uintptr_t) * (size_t)nkey);
    e->h = h;
    e->nkey = nkey;
    e->next = *b;
    *b = e;
    x->bytes += sizeof *e + sizeof(uintptr_t) * (size_t)nkey;
    if (++x->rn > x->rcap) grow_rows(x);
    return e;
}

/* Row (f, st): *out points at it in its kernel's entry, found or
 * computed (and kept there); a row that cannot be kept is computed into
 * *own (allocated on first need, room for `room` rows). */
static int cached_row(ctx *c, const target *t, const sc_func *f, int st, const feat_row **out, feat_row **own,
                      int *nown, int room) {
    feat_ctx *x = c->x;
    const nest_kernel *kn = c->fp[f->id].st[st].rec->kernel;
    bool oom = false;
    row_entry *e = x->no_row_cache ? NULL : kernel_entry(c, kn, &oom);
    if (oom) return fail(c, "out of memory", f);
    if (e)
        for (int i = 0; i < e->nrows; i++)
            if (e->rows[i]->func == f->id && e->rows[i]->stage == st) {
                x->stats.row_hits++;
                *out = e->rows[i];
                return 0;
            }
    feat_row *row = e ? ir_alloc_try(x->rows_mem, sizeof *row) : NULL;
    if (e && row && e->nrows == e->cap) {
        /* the old list stays in the arena until the flush */
        int cap = e->cap ? 2 * e->cap : 2;
        feat_row **rows = ir_alloc_try(x->rows_mem, sizeof *rows * (size_t)cap);
        if (rows) {
            if (e->nrows) memcpy(rows, e->rows, sizeof *rows * (size_t)e->nrows);
            x->bytes += sizeof *rows * (size_t)cap;
            e->rows = rows;
            e->cap = cap;
        }
    }
    if (!row || e->nrows == e->cap) {
        /* not kept (uncacheable, or out of memory): computed into own */
        row = NULL;
        if (!*own && !(*own = malloc(sizeof **own * (size_t)room))) return fail(c, "out of memory", f);
        if (e) e = NULL;
        else x->stats.uncached += !x->no_row_cache;
        if (fill_row(c, t, f, st, &(*own)[*nown])) return -1;
        *out = &(*own)[(*nown)++];
        return 0;
    }
    x->stats.row_misses++;
    if (fill_row(c, t, f, st, row)) return -1;
    row->key = ++x->last_key;
    e->rows[e->nrows++] = row;
    x->bytes += sizeof *row;
    *out = row;
    return 0;
}

/* Before a call: the target's rows only, memory under the limit, and the
 * fused Funcs of each kernel listed under its root stage's slot. */
static int prepare_cache(ctx *c, const target *t) {
    feat_ctx *x = c->x;
    if (x->no_row_cache) return 0;
    if (!x->have_tgt || memcmp(&x->tgt, t, sizeof *t)) {
        flush_rows(x);
        x->tgt = *t;
        x->have_tgt = true;
    }
    x->callno++;
    for (int i = 0; i < x->nslots; i++) x->head[i] = -1;
    for (int i = c->p->funcs.n - 1; i >= 0; i--) {
        const func_pic *fp = &c->fp[i];
        x->nextm[i] = -1;
        if (!fp->nf || fp->nf->loc == SCHED_ROOT) continue;
        const nest_stage *r = NULL;
        for (int st = 0; st < func_at(c->p, i)->nstages && !r; st++) r = fp->st[st].rec;
        if (!r) continue;
        int ks = x->slot[r->kernel->root->id] + r->kernel->stage;
        x->nextm[i] = x->head[ks];
        x->head[ks] = i;
    }
    return 0;
}

static void collect_callee(const sc_expr *e, void *user) {
    int *list = user;   /* list[0] = count, then ids; sized n + 1 */
    if (e->kind != E_CALL || e->func->kind != FUNC_DEFINED) return;
    for (int i = 1; i <= list[0]; i++)
        if (list[i] == e->func->id) return;
    list[++list[0]] = e->func->id;
}

feat_ctx *feat_ctx_new(const sc_pipeline *p, const bounds_result *b) {
    feat_ctx *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->p = p;
    x->b = b;
    x->n = p->funcs.n;
    x->slot = calloc((size_t)x->n + 1, sizeof *x->slot);
    for (int i = 0; x->slot && i < x->n; i++) {
        x->slot[i] = x->nslots;
        x->nslots += func_at(p, i)->kind == FUNC_DEFINED ? func_at(p, i)->nstages : 0;
    }
    x->ncallees = calloc((size_t)x->nslots + 1, sizeof *x->ncallees);
    x->callees = calloc((size_t)x->nslots + 1, sizeof *x->callees);
    x->patterns = calloc((size_t)x->nslots + 1, sizeof *x->patterns);
    x->mark = calloc((size_t)x->n + 1, sizeof *x->mark);
    x->stack = calloc((size_t)x->n + 1, sizeof *x->stack);
    x->sig = calloc((size_t)x->n + 1, sizeof *x->sig);
    x->limit = FEAT_CACHE_LIMIT;
    int *list = calloc((size_t)x->n + 1, sizeof *list);
    x->ops = ops_count(p);
    x->ops_of = malloc(sizeof *x->ops_of * (size_t)(x->nslots + 1));
    for (int i = 0; x->ops_of && i <= x->nslots; i++) x->ops_of[i] = -1;
    for (int i = 0; x->ops_of && x->ops && x->slot && i < x->ops->n; i++) {
        int fid = x->ops->items[i].func, st = x->ops->items[i].stage;
        if (fid >= 0 && fid < x->n && func_at(p, fid)->kind == FUNC_DEFINED && st >= 0 && st < func_at(p, fid)->nstages)
            x->ops_of[x->slot[fid] + st] = i;
    }
    x->head = calloc((size_t)x->nslots + 1, sizeof *x->head);
    x->kent = calloc((size_t)x->nslots + 1, sizeof *x->kent);
    x->kstamp = calloc((size_t)x->nslots + 1, sizeof *x->kstamp);
    x->fpart = calloc((size_t)x->n + 1, sizeof *x->fpart);
    x->rcap = ROW_TABLE;
    x->rtab = calloc(x->rcap, sizeof *x->rtab);
    x->rows_mem = ir_arena_new();
    x->last = calloc((size_t)x->nslots + 1, sizeof *x->last);
    x->fstamp = calloc((size_t)x->n + 1, sizeof *x->fstamp);
    x->nextm = calloc((size_t)x->n + 1, sizeof *x->nextm);
    x->pool = feat_warp_pool_new();
    x->fps = calloc((size_t)x->n + 1, sizeof *x->fps);
    x->pics = calloc((size_t)x->nslots + 1, sizeof *x->pics);
    bool ok = x->slot && x->ncallees && x->callees && x->patterns && x->mark && x->stack && x->sig && list && x->ops &&
              x->ops_of &&
              x->head && x->kent && x->kstamp && x->rtab && x->last && x->fpart && x->fstamp && x->nextm && x->pool && x->fps && x->pics;
    for (int i = 0; ok && i < x->n; i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        for (int st = 0; ok && st < f->nstages; st++) {
            int slot = x->slot[i] + st;
            list[0] = 0;
            const ir_stage *sg = &f->stages[st];
            ir_visit(sg->value, collect_callee, list);
            for (int d = 0; d < sg->nargs; d++) ir_visit(sg->args[d], collect_callee, list);
            x->ncallees[slot] = list[0];
            x->callees[slot] = malloc(sizeof(int) * (size_t)(list[0] + 1));
            if (!x->callees[slot]) { ok = false; break; }
            memcpy(x->callees[slot], list + 1, sizeof(int) * (size_t)list[0]);
            double v[FEAT_COUNT] = {0};
            algo_patterns(p, f, st, v);
            memcpy(x->patterns[slot], v + FEAT_AT(0), sizeof x->patterns[slot]);
        }
    }
    free(list);
    if (!ok) {
        feat_ctx_free(x);
        return NULL;
    }
    return x;
}

void feat_ctx_free(feat_ctx *x) {
    if (!x) return;
    feat_ctx_flush(x);
    free(x->key);
    free(x->wkey);
    feat_warp_pool_free(x->pool);
    free(x->fps);
    free(x->pics);
    free(x->head);
    free(x->kent);
    free(x->kstamp);
    free(x->fpart);
    free(x->rtab);
    ir_arena_free(x->rows_mem);
    for (int i = 0; x->last && i < x->nslots; i++) free(x->last[i].key);
    free(x->last);
    free(x->fstamp);
    free(x->nextm);
    for (int i = 0; x->callees && i < x->nslots; i++) free(x->callees[i]);
    free(x->callees);
    free(x->ncallees);
    free(x->patterns);
    free(x->slot);
    free(x->mark);
    free(x->stack);
    free(x->sig);
    if (x->ops) ops_free(x->ops);
    free(x->ops_of);
    free(x);
}

void feat_ctx_hold(feat_ctx *x, bool hold) { x->hold = hold; }

bool feat_ctx_trim(feat_ctx *x) {
    if (x->bytes + feat_warp_pool_bytes(x->pool) <= x->limit) return false;
    feat_ctx_flush(x);
    x->stats.flushes++;
    return true;
}

int feat_compute_refs(feat_ctx *x, const sched_state *s, const nest *model, const target *t, feat_refs *out,
                      char *err, size_t errlen) {
    char local[256];
    if (!err || !errlen) { err = local; errlen = sizeof local; }
    err[0] = 0;
    memset(out, 0, sizeof *out);
    const sc_pipeline *p = x->p;
    /* the pictures live in the ctx's scratch (one call at a time) */
    memset(x->fps, 0, sizeof *x->fps * (size_t)(p->funcs.n + 1));
    ctx c = { p, x->b, s, model, x, x->fps, err, errlen };
    int rc = 0;
    if (!c.fp) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    /* before anything of this call points into the caches */
    if (!rc && !x->hold) feat_ctx_trim(x);
    if (!rc) rc = build(&c);
    if (!rc) rc = prepare_cache(&c, t);
    int nrows = 0;
    for (int i = 0; !rc && i < p->funcs.n; i++)
        for (int st = 0; c.fp[i].nf && st < func_at(p, i)->nstages; st++) nrows += c.fp[i].st[st].rec != NULL;
    if (!rc && nrows && !(out->rows = malloc(sizeof *out->rows * (size_t)nrows))) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    for (int oi = p->order.n - 1; !rc && oi >= 0; oi--) {
        const sc_func *f = ir_order_at(p, oi);
        if (f->kind != FUNC_DEFINED || !c.fp[f->id].nf) continue;
        for (int st = 0; st < f->nstages && !rc; st++)
            if (c.fp[f->id].st[st].rec)
                rc = cached_row(&c, t, f, st, &out->rows[out->n++], &out->own, &out->nown, nrows);
    }
    if (rc) feat_refs_free(out);
    return rc;
}

void feat_refs_free(feat_refs *r) {
    free(r->rows);
    free(r->own);
    memset(r, 0, sizeof *r);
}

int feat_compute_ctx(feat_ctx *x, const sched_state *s, const nest *model, const target *t, feat_result *out,
                     char *err, size_t errlen) {
    feat_refs r;
    memset(out, 0, sizeof *out);
    int rc = feat_compute_refs(x, s, model, t, &r, err, errlen);
    if (rc == 0 && r.n) {
        out->rows = malloc(sizeof *out->rows * (size_t)r.n);
        if (!out->rows) {
            if (err && errlen) snprintf(err, errlen, "out of memory");
            rc = -1;
        }
        for (int i = 0; rc == 0 && i < r.n; i++) memcpy(&out->rows[i], r.rows[i], sizeof out->rows[i]);
        if (rc == 0) out->n = r.n;
    }
    feat_refs_free(&r);
    return rc;
}

int feat_compute_model(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const nest *model,
                       const target *t, feat_result *out, char *err, size_t errlen) {
    feat_ctx *x = feat_ctx_new(p, b);
    if (!x) {
        memset(out, 0, sizeof *out);
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = feat_compute_ctx(x, s, model, t, out, err, errlen);
    feat_ctx_free(x);
    return rc;
}

int feat_compute(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                 feat_result *out, char *err, size_t errlen) {
    char local[256];
    if (!err || !errlen) { err = local; errlen = sizeof local; }
    memset(out, 0, sizeof *out);
    nest_ctx *x = nest_ctx_new(p, b);
    if (x) {
        nest_ctx_set_staging(x, target_stages_registers(t));
        nest_ctx_set_cyclic(x, target_cyclic_points(t));
    }
    nest *model = x ? nest_build(x, s, err, errlen) : NULL;
    int rc = model ? feat_compute_model(p, b, s, model, t, out, err, errlen) : -1;
    if (!x) snprintf(err, errlen, "out of memory");
    nest_free(model);
    nest_ctx_free(x);
    return rc;
}

void feat_free(feat_result *r) {
    free(r->rows);
    r->rows = NULL;
    r->n = 0;
}
