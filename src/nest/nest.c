/*
 * nest.c - the loop-nest model (nest.h).
 *
 * The kernel walk below decides what lowering writes out (lower.c reads
 * the kernels, extents, allocations and staging from these records) and
 * keeps numbers instead of statements: every tile origin is a constant or
 * a fresh opaque symbol exactly where lowering makes a constant or a fresh
 * variable for its origin expressions, so the footprint algebra
 * (footprint.h) gives the same extents in both (lowering asserts it).
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "footprint.h"
#include "fusion.h"
#include "hull.h"
#include "nest_query.h"
#include "inlined.h"
#include "nest.h"

#define KERNEL_TABLE 4096   /* the kernel table's first size (buckets, chained) */

/* A kernel (root stage and the Funcs fused into it), for one key. */
typedef struct kentry {
    struct kentry *next;
    uint64_t h;
    int nkey;
    uintptr_t *key;
    nest_kernel k;
    nest_stage *root_stage;
    int nmem;                      /* fused Funcs, by id */
    int *mem_ids;
    nest_func *mem;
} kentry;

/* The key a kernel (root Func, stage) had the last time it was looked
 * up, and its entry: siblings in a search share most kernels, and this
 * compare stays in memory the builds keep hot. */
typedef struct {
    uintptr_t *key;
    int nkey, cap;
    kentry *e;                     /* NULL: none */
} klast;

/* A tile or footprint origin: h == 0: the constant v; else an opaque
 * symbol (with, while a kernel with a hull is built, its variable). */
typedef struct org { uint64_t h; int64_t v; sc_expr *sym; } org;

struct nest_ctx {
    const sc_pipeline *p;
    const bounds_result *b;
    inlined_cache *inl;            /* stages after inlining */
    ir_arena *karena;              /* cached kernels (nest_ctx_flush) */
    int n;
    kentry **ktab;                 /* chained, kcap buckets (a power of two), grown with kn */
    size_t kcap, kn;
    int *kslot;                    /* [fid] its stage 0's klast */
    klast *last;
    nest_stats stats;
    bool no_kernel_cache;
    bool no_staging;               /* nest_ctx_set_staging(x, false) */
    bool cyclic;                   /* nest_ctx_set_cyclic(x, true) */
    fusion_graph *graph;           /* the consumer graph and the fusion rules */
    fusion_use *uses;              /* fusion_max_uses entries */
    /* scratch, sized n (one build at a time per ctx) */
    int *ints;                     /* a build's per-Func ints (build: cstage .. next_mem) */
    const struct inlined_stages **se;
    int *mem_ids;
    org *fmin, *bmin;              /* a build's footprints, written before they are read */
    int64_t *fext, *bext;
    unsigned *fwhole;
    uintptr_t *key;                /* a kernel key: every decision with all its tiles */
};

static sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

const char *nest_mem_name(nest_mem m) {
    return m == NEST_GLOBAL ? "global" : m == NEST_SHARED ? "shared" : "register";
}

nest_ctx *nest_ctx_new(const sc_pipeline *p, const bounds_result *b) {
    nest_ctx *x = base_calloc(1, sizeof *x);
    x->p = p;
    x->b = b;
    x->inl = inlined_cache_new(p);
    x->karena = ir_arena_new();
    x->kcap = KERNEL_TABLE;
    x->ktab = base_calloc(x->kcap, sizeof *x->ktab);
    x->kslot = base_calloc((size_t)p->funcs.n + 1, sizeof *x->kslot);
    for (int i = 0; i < p->funcs.n; i++) x->kslot[i + 1] = x->kslot[i] + func_at(p, i)->nstages;
    x->last = base_calloc((size_t)x->kslot[p->funcs.n] + 1, sizeof *x->last);
    x->n = p->funcs.n;
    size_t n = (size_t)x->n + 1;
    x->ints = base_calloc(8 * n, sizeof(int));
    x->se = base_calloc(n, sizeof *x->se);
    x->mem_ids = base_calloc(n, sizeof(int));
    x->fmin = base_calloc(n * SC_MAX_DIMS, sizeof(org));
    x->bmin = base_calloc(n * SC_MAX_DIMS, sizeof(org));
    x->fext = base_calloc(n * SC_MAX_DIMS, sizeof(int64_t));
    x->bext = base_calloc(n * SC_MAX_DIMS, sizeof(int64_t));
    x->fwhole = base_calloc(n, sizeof(unsigned));
    size_t words = 8;
    for (int i = 0; i < x->n; i++) words += 4 + (size_t)func_at(p, i)->nstages * (1 + SC_MAX_DIMS);
    x->key = base_calloc(words, sizeof(uintptr_t));
    x->graph = fusion_graph_new(p);
    x->uses = base_calloc((size_t)fusion_max_uses(x->graph) + 1, sizeof(fusion_use));
    return x;
}

void nest_ctx_free(nest_ctx *x) {
    if (!x) return;
    inlined_cache_free(x->inl);
    ir_arena_free(x->karena);
    free(x->ktab);
    for (int i = 0; i < x->kslot[x->n]; i++) free(x->last[i].key);
    free(x->last);
    free(x->kslot);
    free(x->ints);
    free(x->se);
    free(x->mem_ids);
    free(x->fmin);
    free(x->bmin);
    free(x->fext);
    free(x->bext);
    free(x->fwhole);
    free(x->key);
    fusion_graph_free(x->graph);
    free(x->uses);
    free(x);
}

nest_stats nest_ctx_stats(const nest_ctx *x) {
    nest_stats st = x->stats;
    inlined_cache_stats(x->inl, &st.expr_hits, &st.expr_misses);
    return st;
}

void nest_ctx_cache_kernels(nest_ctx *x, bool on) { x->no_kernel_cache = !on; }

void nest_ctx_set_staging(nest_ctx *x, bool on) {
    if (x->no_staging == !on) return;
    x->no_staging = !on;
    nest_ctx_flush(x);
}

void nest_ctx_set_cyclic(nest_ctx *x, bool on) {
    if (x->cyclic == on) return;
    x->cyclic = on;
    nest_ctx_flush(x);
}

bool nest_any_cyclic(const nest *n) {
    for (int i = 0; i < n->nfuncs; i++) {
        const nest_func *m = n->funcs[i];
        for (int s = 0; m && s < m->nstages; s++)
            if (m->stages[s]->cyclic) return true;
    }
    return false;
}

bool nest_would_stage(const nest *n) {
    for (int i = 0; i < n->nkernels; i++)
        if (n->kernels[i]->unstaged) return true;
    return false;
}

void nest_ctx_flush(nest_ctx *x) {
    ir_arena_free(x->karena);
    x->karena = ir_arena_new();
    memset(x->ktab, 0, sizeof *x->ktab * x->kcap);
    x->kn = 0;
    for (int i = 0; i < x->kslot[x->n]; i++) x->last[i].e = NULL;
}

/* ---- one build ----------------------------------------------------------- */

typedef struct {
    nest_ctx *x;
    const sched_state *s;
    const struct inlined_stages **se;       /* [fid] for decided non-inline Funcs */
    int *cstage;                   /* fused: the stage of its `at` it is computed in */
    int *root, *kstage;            /* fused: the root of its chain and its stage */
    int *owner, *ostage;           /* fused: the stage whose group it is in (lower.c) */
    int *first, *next_mem;         /* [root fid] its first fused Func, [fid] the next: id order */
    org *fmin, *bmin;              /* [fid * SC_MAX_DIMS]: footprint per realization, */
    int64_t *fext, *bext;          /* and per block of the kernel */
    unsigned *fwhole;              /* [fid] the dimensions whose hull per
                                    * realization is the whole region */
    char *err;
    size_t errlen;
    bool failed;
    ir_arena *ka;                  /* where kernel records go */
    /* the kernel being built */
    kentry *ke;
    uint64_t leaf;
    /* Exact mode, for a kernel with a Func fused into several consumers:
     * every symbol is a variable defined as lowering's LET of it is, so
     * the hull of the consumers' boxes can be evaluated (hull.h). */
    hull_syms hs;                  /* hs.xa NULL: hashes only */
} build;

static int failf(build *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int failf(build *w, const char *fmt, ...) {
    if (w->failed) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errlen, fmt, ap);
    va_end(ap);
    w->failed = true;
    return -1;
}

static int pure_loops(const nest_ctx *x, const sc_func *f, int st, int *dims, int *li) {
    const inlined_loops *l = inlined_loops_of(x->inl, f->id, st);
    memcpy(dims, l->dims, sizeof(int) * (size_t)l->npure);
    if (li) memcpy(li, l->li, sizeof(int) * (size_t)l->npure);
    return l->npure;
}

/* A fresh symbol; def: its value in exact mode (NULL: none). */
static org fresh_def(build *w, sc_expr *def) {
    org o = { fp_hash_leaf(++w->leaf), 0, NULL };
    if (w->hs.xa) o.sym = hull_sym(&w->hs, def);
    return o;
}
static org fresh(build *w) { return fresh_def(w, NULL); }
static org konst(int64_t v) { org o = { 0, v, NULL }; return o; }

/* An origin as an expression (exact mode). */
static sc_expr *org_expr(build *w, org o) { return o.h ? o.sym : fp_int(w->hs.xa, o.v); }

static fp_box make_box(const nest_ctx *x, const sc_func *f, int st, const org *base, const int64_t *n) {
    fp_box box;
    memset(&box, 0, sizeof box);
    box.f = f;
    box.stage = st;
    int dims[SC_MAX_DIMS], np = pure_loops(x, f, st, dims, NULL);
    for (int k = 0; k < np; k++) {
        box.names[k] = f->vars[dims[k]];
        box.h[k] = base[k].h;
        box.sym[k] = base[k].h ? base[k].sym : NULL;
        box.lo[k] = base[k].h ? 0 : base[k].v;
        box.hi[k] = box.lo[k] + n[k] - 1;
    }
    box.n = np;
    return box;
}

static bool has_global(const build *w, int id) {
    const sc_func *g = func_at(w->x->p, id);
    const bounds_func *bf = &w->x->b->funcs[id];
    for (int d = 0; d < g->ndims; d++) if (bf->extent[d] <= 0) return false;
    if (g->kind == FUNC_INPUT) return true;
    const sched_func *sf = w->s->f[id];
    return !sf || sf->loc == SCHED_ROOT || sf->loc == SCHED_UNDECIDED;
}

static nest_func *member(build *w, int id) {
    kentry *ke = w->ke;
    for (int i = 0; i < ke->nmem; i++) if (ke->mem_ids[i] == id) return &ke->mem[i];
    return NULL;
}

/* fp_fallback of call idx[i] of a stage, remembered in its inlined_stages (it
 * depends on the expression and the consumer's region only). */
typedef struct { build *w; const inlined_stages *const *e; const fp_box *const *box; const int *idx; } fb_user;

static fp_span fallback_of(build *w, const inlined_stages *e, const fp_box *box, int call, int d) {
    return inlined_fallback(w->x->inl, w->x->b, e, box, call, d);
}

static fp_span cached_fallback(void *user, int i, int d) {
    fb_user *u = user;
    return fallback_of(u->w, u->e[i], u->box[i], u->idx[i], d);
}

/* fp_arg of coordinate d of call `call` of the stage over box. */
static fp_span arg_of(const inlined_stages *e, const fp_box *box, int call, int d) {
    size_t q = (size_t)call * SC_MAX_DIMS + (size_t)d;
    int k = e->lin_k[box->stage][q];
    if (k < 0) return fp_run(&e->prog[box->stage][q], e->calls[box->stage][call]->args[d], box);
    int64_t c = e->lin_c[box->stage][q];
    fp_span r = { true, true, NULL, box->h[k], box->lo[k] + c, box->hi[k] + c };
    return r;
}

static fp_span hooked_arg(void *user, int i, int d) {
    fb_user *u = user;
    return arg_of(u->e[i], u->box[i], u->idx[i], d);
}

/* The clipped footprint of prod: the union of what every consumer box
 * cboxes[j] (the calls of stage cboxes[j]->stage of cboxes[j]->f) reads
 * of it, as lowering's footprint().  Today a fused Func has one consumer
 * (nb == 1); a Func fused at the common ancestor of several consumers
 * gives one box per consumer, within one block (or thread) of it. */
static int footprint(build *w, const sc_func *prod, int nb, const fp_box *const *cboxes, org *mins,
                     int64_t *ext) {
    int nc = 0;
    for (int j = 0; j < nb; j++) nc += w->se[cboxes[j]->f->id]->ncalls[cboxes[j]->stage];
    const sc_expr **calls = base_calloc((size_t)nc + 1, sizeof(sc_expr *));
    const fp_box **boxes = base_calloc((size_t)nc + 1, sizeof(fp_box *));
    const inlined_stages **es = base_calloc((size_t)nc + 1, sizeof(inlined_stages *));
    int *idx = base_calloc((size_t)nc + 1, sizeof(int));
    int n = 0;
    for (int j = 0; j < nb; j++) {
        const fp_box *box = cboxes[j];
        const inlined_stages *e = w->se[box->f->id];
        for (int i = 0; i < e->ncalls[box->stage]; i++)
            if (e->callee[box->stage][i] == prod) {
                idx[n] = i;
                es[n] = e;
                calls[n] = e->calls[box->stage][i];
                boxes[n++] = box;
            }
    }
    fp_span dims[SC_MAX_DIMS];
    fb_user u = { w, es, boxes, idx };
    fp_hooks hooks = { hooked_arg, cached_fallback, &u };
    int rc = n ? fp_union(NULL, w->x->b, prod, n, calls, boxes, dims, &hooks, w->err, w->errlen) : -1;
    free(calls);
    free(boxes);
    free(es);
    free(idx);
    if (!n) return failf(w, "%s does not call %s", cboxes[0]->f->name, prod->name);
    if (rc) {
        w->failed = true;
        return -1;
    }
    for (int d = 0; d < prod->ndims; d++) {
        ext[d] = fp_clip_extent(w->x->b, prod, d, &dims[d]);
        if (dims[d].h) {
            mins[d] = fresh(w);
        } else {
            int64_t v = 0;
            fp_clip_origin(NULL, w->x->b, prod, d, &dims[d], ext[d], &v);
            mins[d] = konst(v);
        }
    }
    return 0;
}

/* The footprint of prod for the consumer boxes boxes[0..nb) in exact
 * mode, as lowering's footprint_union: per box the union of its calls;
 * per dimension, when every box reads at the same symbol, the union of
 * the spans, else the hull of the spans (each clamped into prod's region)
 * with its extent evaluated over the kernel's blocks (and, per_thread,
 * its threads), or the whole region; then clipped.  Origins get their
 * definitions.  per_thread: boxes of a thread tile (a THREAD Func's
 * realization); else boxes of what a block computes. */
static int footprint_exact(build *w, const sc_func *prod, int nb, const fp_box *boxes, bool per_thread, org *mins,
                           int64_t *ext, unsigned *whole) {
    if (nb == 0) return failf(w, "nothing uses %s where it is computed", prod->name);
    fp_span *sp = base_calloc((size_t)nb * SC_MAX_DIMS, sizeof(fp_span));
    int rc = 0;
    for (int j = 0; j < nb && !rc; j++) {
        const fp_box *box = &boxes[j];
        const inlined_stages *e = w->se[box->f->id];
        int nc = e->ncalls[box->stage], n = 0;
        const sc_expr **calls = base_calloc((size_t)nc + 1, sizeof(sc_expr *));
        const fp_box **bx = base_calloc((size_t)nc + 1, sizeof(fp_box *));
        for (int i = 0; i < nc; i++)
            if (e->callee[box->stage][i] == prod) { calls[n] = e->calls[box->stage][i]; bx[n++] = box; }
        if (!n) rc = failf(w, "%s does not call %s", box->f->name, prod->name);
        else if (fp_union(w->hs.xa, w->x->b, prod, n, calls, bx, &sp[j * SC_MAX_DIMS], NULL, w->err, w->errlen))
            rc = -1, w->failed = true;
        free(calls);
        free(bx);
    }
    sc_expr **lo = base_calloc((size_t)nb, sizeof(sc_expr *)), **hi = base_calloc((size_t)nb, sizeof(sc_expr *));
    if (whole) *whole = 0;
    for (int d = 0; d < prod->ndims && !rc; d++) {
        fp_span u;
        sc_expr *least;
        if (!fp_same_union(w->hs.xa, w->x->b, prod, d, nb, &sp[d], SC_MAX_DIMS, &u, lo, hi, &least)) {
            int64_t e = hull_extent(&w->hs, w->ke->k.nblocks, per_thread ? w->ke->k.nthreads : 0,
                                    &w->x->b->funcs[prod->id], d, nb, &sp[d], SC_MAX_DIMS);
            if (e < 0 && whole) *whole |= 1u << d;
            u = fp_hull_span(w->x->b, prod, d, least, e);
        }
        ext[d] = fp_clip_extent(w->x->b, prod, d, &u);
        sc_expr *o = fp_clip_origin(w->hs.xa, w->x->b, prod, d, &u, ext[d], NULL);
        mins[d] = o->kind == E_CONST ? konst(o->c.i) : fresh_def(w, o);
    }
    free(lo);
    free(hi);
    free(sp);
    return rc;
}

/* Extents of a box's footprint of one call, clipped (fallback when the
 * algebra cannot follow a coordinate). */
static int64_t access_box(build *w, const inlined_stages *e, int index, const sc_func *prod, const fp_box *box,
                          int64_t *ext) {
    int64_t elems = 1;
    const signed char *lin = &e->lin_k[box->stage][(size_t)index * SC_MAX_DIMS];
    for (int d = 0; d < prod->ndims; d++) {
        if (lin[d] >= 0) {
            /* a loop variable plus a constant: the box's extent in that loop */
            fp_span s = { true, true, NULL, 0, box->lo[lin[d]], box->hi[lin[d]] };
            ext[d] = fp_clip_extent(w->x->b, prod, d, &s);
            elems *= ext[d];
            continue;
        }
        fp_span s = arg_of(e, box, index, d);
        if (!s.ok) s = fallback_of(w, e, box, index, d);
        if (!s.ok) {
            s.lo = w->x->b->funcs[prod->id].min[d];
            s.hi = s.lo + w->x->b->funcs[prod->id].extent[d] - 1;
        }
        ext[d] = fp_clip_extent(w->x->b, prod, d, &s);
        elems *= ext[d];
    }
    return elems;
}

static int thread_group(build *w, const sc_func *f, int st, const fp_box *box, const fp_box *bbox, int64_t rpb);

/* Computes stage st of f over tiles of n points from origins tb, as
 * lowering's emit_stage; rpb: how many times per block; real: the
 * realization's origin and extents; blk/blkn: what one block of the
 * kernel computes of it (root: the block's tile; block level: the
 * realization; thread level: the union of its realizations in a block);
 * root: a root stage (block strides). */
static void emit_stage(build *w, const sc_func *f, int st, nest_stage *rec, const org *tb, const int64_t *n,
                       const org *real, const int64_t *realn, const org *blk, const int64_t *blkn, bool root,
                       int64_t rpb) {
    nest_ctx *x = w->x;
    kentry *ke = w->ke;
    fp_box box = make_box(w->x, f, st, tb, n);
    fp_box bbox = make_box(w->x, f, st, blk, blkn);
    /* a THREAD-level Func's own thread-level producers belong to the
     * group of the stage that computes it */
    int private_producers = 0;
    if (w->s->f[f->id]->loc != SCHED_THREAD)
        private_producers = thread_group(w, f, st, &box, &bbox, rpb * rec->threads_used);
    if (w->failed) return;
    int dims[SC_MAX_DIMS], li[SC_MAX_DIMS], np = pure_loops(x, f, st, dims, li);
    const ir_stage *stg = &f->stages[st];
    int64_t total = 1;
    for (int k = 0; k < np; k++) total *= n[k];
    int64_t loads = total;
    rec->unroll_limit = nest_unroll_limit(w->s->f[f->id]->loc, private_producers > 0);
    rec->unroll_whole_ok = x->no_staging;
    bool unrolled = total < NEST_UNROLL_LIMIT;          /* for staging, the base limit */
    int64_t redpts = 1;
    rec->nred = 0;
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) {
            loads *= stg->rdom->extent[d];
            redpts *= stg->rdom->extent[d];
            rec->red[rec->nred++] = stg->rdom->extent[d];
        }
    for (int d = 0; d < rec->nred; d++)
        unrolled &= nest_reduction_unrolls(rec->red, rec->nred, d, total, NEST_UNROLL_LIMIT, false);
    rec->unrolled = total < rec->unroll_limit;
    const inlined_stages *e = w->se[f->id];
    int nc = e->ncalls[st];
    const sc_expr *const *calls = e->calls[st];
    /* register staging, as lowering's stage_producers */
    int64_t staged_ext[NEST_MAX_STAGED][SC_MAX_DIMS];
    const sc_func *staged[NEST_MAX_STAGED];
    int nst = 0;
    if (total > 1 && unrolled) {
        const sc_func *cand[NEST_MAX_STAGED];
        int ncalls[NEST_MAX_STAGED], ncand = 0;
        /* the producers in order of first call, each asked once whether
         * it is read from global memory (a stage may make hundreds of
         * calls of a few producers) */
        const sc_func **prod = base_calloc((size_t)nc + 1, sizeof(sc_func *));
        int *pcalls = base_calloc((size_t)nc + 1, sizeof(int)), nprod = 0;
        for (int i = 0; i < nc; i++) {
            const sc_func *g = e->callee[st][i];
            int j = nprod - 1;
            while (j >= 0 && prod[j] != g) j--;
            if (j >= 0) pcalls[j]++;
            else { prod[nprod] = g; pcalls[nprod++] = 1; }
        }
        for (int j = 0; j < nprod && ncand < NEST_MAX_STAGED; j++) {
            const sc_func *g = prod[j];
            if (g == f || !has_global(w, g->id) || member(w, g->id)) continue;
            cand[ncand] = g;
            ncalls[ncand++] = pcalls[j];
        }
        free(prod);
        free(pcalls);
        for (int j = 0; j < ncand && ke->k.nstaged < NEST_MAX_STAGED; j++) {
            const sc_expr **gc = base_calloc((size_t)nc + 1, sizeof(sc_expr *));
            int *gi = base_calloc((size_t)nc + 1, sizeof(int));
            int ng = 0;
            for (int i = 0; i < nc; i++)
                if (e->callee[st][i] == cand[j]) { gi[ng] = i; gc[ng++] = calls[i]; }
            fp_span sp[SC_MAX_DIMS];
            const inlined_stages **ges = base_calloc((size_t)nc + 1, sizeof(inlined_stages *));
            const fp_box **gbx = base_calloc((size_t)nc + 1, sizeof(fp_box *));
            for (int i = 0; i < ng; i++) { ges[i] = e; gbx[i] = &box; }
            fb_user u = { w, ges, gbx, gi };
            fp_hooks hooks = { hooked_arg, cached_fallback, &u };
            bool aff = fp_affine_union(NULL, cand[j], ng, gc, &box, sp, &hooks);
            free(gc);
            free(gi);
            free(ges);
            free(gbx);
            if (!aff) continue;
            int64_t elems = 1;
            for (int d = 0; d < cand[j]->ndims; d++) elems *= sp[d].hi - sp[d].lo + 1;
            if (elems > NEST_STAGE_ELEMS || elems >= ncalls[j] * loads) continue;
            if (ke->k.staged_elems + elems > NEST_STAGED_REGISTERS) continue;
            if (x->no_staging) {
                ke->k.unstaged++;
                continue;
            }
            for (int d = 0; d < cand[j]->ndims; d++) staged_ext[nst][d] = sp[d].hi - sp[d].lo + 1;
            staged[nst++] = cand[j];
            ke->k.nstaged++;
            ke->k.staged_elems += elems;
            rec->nstaged++;
            rec->staged_elems += elems;
        }
    }
    /* accesses */
    int64_t one[SC_MAX_DIMS];
    for (int k = 0; k < SC_MAX_DIMS; k++) one[k] = 1;
    fp_box pbox = make_box(w->x, f, st, tb, one);
    fp_box rbox = make_box(w->x, f, st, real, realn);
    int nloops = inlined_loops_of(x->inl, f->id, st)->nloops;
    rec->naccess = e->nacc[st];
    rec->access = ir_alloc(w->ka, sizeof(nest_access) * (size_t)(rec->naccess + 1));
    for (int i = 0; i < rec->naccess; i++) {
        nest_access *a = &rec->access[i];
        const inlined_access *rep = &e->acc[st][i];
        const sc_func *g = rep->producer;
        a->producer = g;
        a->call = rep->call;
        a->calls = rep->count;
        a->ndims = g->ndims;
        const nest_func *m = member(w, g->id);
        a->mem = m ? m->mem : NEST_GLOBAL;
        int64_t strides[SC_MAX_DIMS], acc = 1;
        int si = -1;
        for (int j = 0; j < nst; j++) if (staged[j] == g) si = j;
        a->staged = si >= 0;
        for (int d = 0; d < g->ndims; d++) {
            strides[d] = acc;
            acc *= si >= 0 ? staged_ext[si][d] : m ? m->extent[d] : x->b->funcs[g->id].extent[d];
        }
        int64_t size = sc_type_size(g->type);
        a->bytes_point = access_box(w, e, rep->index, g, &pbox, a->fp_point) * size;
        a->bytes_thread = access_box(w, e, rep->index, g, &box, a->fp_thread) * size;
        a->bytes_block = access_box(w, e, rep->index, g, &bbox, a->fp_block) * size;
        a->bytes_realization = access_box(w, e, rep->index, g, &rbox, a->fp_realization) * size;
        a->affine = rep->affine;
        a->clamped = rep->affine && !rep->plain;
        double sl[2 * SC_MAX_DIMS] = {0};
        for (int d = 0; d < g->ndims && a->affine; d++)
            for (int l = 0; l < nloops; l++) sl[l] += rep->coef[d * nloops + l] * (double)strides[d];
        for (int l = 0; l < nloops; l++) a->stride_serial[l] = a->affine ? sl[l] : NAN;
        for (int k = 0; k < np; k++) {
            a->stride_thread[k] = a->affine ? sl[li[k]] * (double)n[k] : NAN;
            a->stride_block[k] = !a->affine ? NAN : root ? sl[li[k]] * (double)blkn[k] : 0;
        }
        if (rec->cyclic && a->affine) {
            /* a step of one thread is one point; of the serial loop, the
             * loop's threads */
            a->stride_thread[0] = sl[li[0]];
            a->stride_serial[li[0]] = sl[li[0]] * (double)rec->threads[0];
        }
    }
    rec->points_per_realization = redpts;
    for (int k = 0; k < np; k++) rec->points_per_realization *= realn[k];
}

static void fill_stage_head(const nest_ctx *x, nest_stage *rec, const sc_func *f, int st, const nest_kernel *kernel) {
    rec->func = f;
    rec->stage = st;
    rec->cyclic = false;
    rec->kernel = kernel;
    int dims[SC_MAX_DIMS];
    rec->npure = pure_loops(x, f, st, dims, NULL);
}

/* The Funcs fused at `level` that stage (owner, ostage) computes, as
 * lowering's fused_group: consumers first (the pipeline's order from the
 * outputs), each one's footprint the union of what its consumers' boxes
 * read (the owner's box obox, or another member's realization), per
 * realization (fmin/fext) and per block of the kernel (bmin/bext, from
 * obbox and the members' block boxes).  Members' ids, consumers first
 * (they are computed in the reverse order), go into members; returns
 * their count. */
static int fused_group(build *w, sched_loc level, const sc_func *owner, int ostage, const fp_box *obox,
                       const fp_box *obbox, int *members) {
    nest_ctx *x = w->x;
    const sc_pipeline *p = x->p;
    int n = 0;
    for (int i = p->order.n - 1; i >= 0 && !w->failed; i--) {
        const sc_func *g = ir_order_at(p, i);
        const sched_func *sf = g->kind == FUNC_DEFINED ? w->s->f[g->id] : NULL;
        if (!sf || sf->loc != level || w->owner[g->id] != owner->id || w->ostage[g->id] != ostage) continue;
        int nu = fusion_consumers(x->graph, w->s, g->id, x->uses);
        fp_box *boxes = base_calloc((size_t)nu + 1, sizeof(fp_box));
        fp_box *bboxes = base_calloc((size_t)nu + 1, sizeof(fp_box));
        const fp_box **bptr = base_calloc((size_t)nu + 1, sizeof(fp_box *));
        for (int u = 0; u < nu; u++) {
            int cf = x->uses[u].func;
            if (cf == owner->id) {
                boxes[u] = *obox;
                bboxes[u] = *obbox;
            } else {
                assert(w->s->f[cf]->loc == level && w->owner[cf] == owner->id);
                boxes[u] = make_box(x, func_at(p, cf), x->uses[u].stage, &w->fmin[cf * SC_MAX_DIMS],
                                    &w->fext[cf * SC_MAX_DIMS]);
                bboxes[u] = make_box(x, func_at(p, cf), x->uses[u].stage, &w->bmin[cf * SC_MAX_DIMS],
                                     &w->bext[cf * SC_MAX_DIMS]);
            }
            bptr[u] = &bboxes[u];
        }
        org *fm = &w->fmin[g->id * SC_MAX_DIMS], *bm = &w->bmin[g->id * SC_MAX_DIMS];
        int64_t *fe = &w->fext[g->id * SC_MAX_DIMS], *be = &w->bext[g->id * SC_MAX_DIMS];
        int rc;
        if (w->hs.xa) {
            rc = footprint_exact(w, g, nu, boxes, level == SCHED_THREAD, fm, fe, &w->fwhole[g->id]);
        } else {
            w->fwhole[g->id] = 0;
            const fp_box *one = &boxes[0];
            rc = nu == 1 ? footprint(w, g, 1, &one, fm, fe) : failf(w, "%s: several consumers", g->name);
        }
        if (!rc && level == SCHED_THREAD) {
            /* what a block computes of it: with several consumers the hull
             * of theirs, as lowering would allocate it per block */
            rc = w->hs.xa ? footprint_exact(w, g, nu, bboxes, false, bm, be, NULL) : footprint(w, g, nu, bptr, bm, be);
        } else if (!rc) {
            memcpy(bm, fm, sizeof(org) * SC_MAX_DIMS);
            memcpy(be, fe, sizeof(int64_t) * SC_MAX_DIMS);
        }
        free(boxes);
        free(bboxes);
        free(bptr);
        if (rc) return n;
        members[n++] = g->id;
    }
    return n;
}

static void alloc_member(build *w, nest_func *m, const sc_func *prod, nest_mem mem) {
    m->mem = mem;
    m->ndims = prod->ndims;
    m->elems = 1;
    m->hull_whole = w->fwhole[prod->id];
    for (int d = 0; d < prod->ndims; d++) {
        m->extent[d] = w->fext[prod->id * SC_MAX_DIMS + d];
        m->elems *= m->extent[d];
    }
    m->bytes = m->elems * sc_type_size(prod->type);
}

/* The THREAD-level Funcs that stage st of f computes per thread tile
 * (box; bbox: what one block computes of the stage): in registers over
 * their footprints, producers first; rpb: realizations per block. */
static int thread_group(build *w, const sc_func *f, int st, const fp_box *box, const fp_box *bbox, int64_t rpb) {
    int *members = base_calloc((size_t)w->x->n + 1, sizeof(int));
    int n = fused_group(w, SCHED_THREAD, f, st, box, bbox, members);
    for (int i = n - 1; i >= 0 && !w->failed; i--) {
        const sc_func *prod = func_at(w->x->p, members[i]);
        nest_func *m = member(w, prod->id);
        alloc_member(w, m, prod, NEST_REGISTER);
        w->ke->k.nregister++;
        w->ke->k.register_elems += m->elems;
        org *mins = &w->fmin[prod->id * SC_MAX_DIMS], *bmins = &w->bmin[prod->id * SC_MAX_DIMS];
        int64_t *ext = &w->fext[prod->id * SC_MAX_DIMS], *bext = &w->bext[prod->id * SC_MAX_DIMS];
        for (int s = 0; s < prod->nstages && !w->failed; s++) {
            nest_stage *rec = (nest_stage *)m->stages[s];
            fill_stage_head(w->x, rec, prod, s, &w->ke->k);
            for (int k = 0; k < rec->npure; k++) {
                rec->extent[k] = rec->serial[k] = ext[k];
                rec->blocks[k] = 1;
                rec->threads[k] = 1;
            }
            rec->threads_used = 1;
            rec->realizations_per_block = rpb;
            emit_stage(w, prod, s, rec, mins, ext, mins, ext, bmins, bext, false, rpb);
        }
    }
    free(members);
    return n;
}

/* Whether stage st of f (ROOT or BLOCK, threads and per points a thread
 * per pure loop) takes cyclic points (nest_ctx_set_cyclic): the ctx's
 * rule, no staging, several threads and points along pure loop 0, a tile
 * that lowering unrolls, and no Func computed in its threads. */
static bool cyclic_stage(const build *w, const sc_func *f, int st, int np, const int *threads, const int64_t *per) {
    const nest_ctx *x = w->x;
    if (!x->cyclic || !x->no_staging || np < 1 || threads[0] < 2 || per[0] < 2) return false;
    int64_t total = 1;
    for (int k = 0; k < np; k++) total *= per[k];
    if (total >= nest_unroll_limit(w->s->f[f->id]->loc, false)) return false;
    for (int g = 0; g < x->n; g++) {
        const sched_func *sf = w->s->f[g];
        if (sf && sf->loc == SCHED_THREAD && w->owner[g] == f->id && w->ostage[g] == st) return false;
    }
    return true;
}

/* The thread bases of a stage spread over threads[k] threads from base
 * (lowering's thread_bases): a constant where lowering's is one, else a
 * symbol defined as lowering's LET; cyclic: one point apart along pure
 * loop 0. */
static void thread_bases(build *w, int np, const int *threads, const org *base, const int64_t *per, bool cyclic,
                         org *out) {
    int64_t below = 1;
    int split = w->hs.xa ? hull_split(&w->hs) : 0;
    for (int k = 0; k < np; k++) {
        if (!base[k].h && threads[k] == 1) {
            out[k] = base[k];
        } else if (!w->hs.xa) {
            out[k] = fresh(w);
        } else {
            ir_arena *a = w->hs.xa;
            bool mod = nest_thread_digit_wraps(threads, np, k);
            sc_expr *t = threads[k] == 1 ? fp_int(a, 0) : hull_digit(&w->hs, split, true, below, threads[k], mod);
            int64_t step = nest_thread_step(cyclic, k, per[k]);
            out[k] = fresh_def(w, fp_bin(a, SC_ADD, org_expr(w, base[k]), fp_bin(a, SC_MUL, t, fp_int(a, step))));
        }
        below *= threads[k];
    }
}

/* The BLOCK-level Funcs of the kernel of root stage (r, st), whose block
 * covers box: in shared memory over their footprints, then one phase per
 * stage, producers first. */
static void block_group(build *w, const sc_func *r, int st, const fp_box *box) {
    kentry *ke = w->ke;
    int *members = base_calloc((size_t)w->x->n + 1, sizeof(int));
    int n = fused_group(w, SCHED_BLOCK, r, st, box, box, members);
    for (int i = 0; i < n && !w->failed; i++) {
        const sc_func *prod = func_at(w->x->p, members[i]);
        nest_func *m = member(w, prod->id);
        alloc_member(w, m, prod, NEST_SHARED);
        ke->k.nshared++;
        ke->k.shared_bytes += m->bytes;
    }
    for (int i = n - 1; i >= 0 && !w->failed; i--) {
        const sc_func *prod = func_at(w->x->p, members[i]);
        nest_func *m = member(w, prod->id);
        const sched_func *sf = w->s->f[prod->id];
        org *mins = &w->fmin[prod->id * SC_MAX_DIMS];
        int64_t *ext = &w->fext[prod->id * SC_MAX_DIMS];
        for (int s = 0; s < prod->nstages && !w->failed; s++) {
            const sched_tile *t = &sf->tile[s];
            int dims[SC_MAX_DIMS], np = pure_loops(w->x, prod, s, dims, NULL);
            if (t->npure != np) {
                failf(w, "the schedule of %s stage %d tiles %d loops; it has %d", prod->name, s, t->npure, np);
                break;
            }
            nest_stage *rec = (nest_stage *)m->stages[s];
            fill_stage_head(w->x, rec, prod, s, &w->ke->k);
            int64_t used = 1, per[SC_MAX_DIMS];
            for (int q = 0; q < np; q++) {
                if (t->threads[q] < 1) { failf(w, "%s: thread counts must be positive", prod->name); break; }
                used *= t->threads[q];
                per[q] = (ext[q] + t->threads[q] - 1) / t->threads[q];
                rec->extent[q] = ext[q];
                rec->blocks[q] = 1;
                rec->threads[q] = t->threads[q];
                rec->serial[q] = per[q];
            }
            if (w->failed) break;
            if (used > ke->k.nthreads) {
                failf(w, "%s (block level) spreads stage %d over %lld threads, but the block of its kernel has %d",
                      prod->name, s, (long long)used, ke->k.nthreads);
                break;
            }
            rec->threads_used = used;
            rec->realizations_per_block = 1;
            rec->cyclic = cyclic_stage(w, prod, s, np, t->threads, per);
            org tb[SC_MAX_DIMS];
            thread_bases(w, np, t->threads, mins, per, rec->cyclic, tb);
            emit_stage(w, prod, s, rec, tb, per, mins, ext, mins, ext, false, 1);
        }
    }
    free(members);
}

int nest_grid_of(const bounds_result *b, const sc_func *r, int st, const sched_tile *t, int np,
                 nest_grid *g, char *err, size_t errlen) {
    if (t->npure != np)
        return base_fail(err, errlen, "the schedule of %s stage %d tiles %d loops; it has %d", r->name, st,
                         t->npure, np);
    const bounds_stage *bs = &b->funcs[r->id].stages[st];
    g->nblocks = g->nthreads = 1;
    for (int k = 0, li = 0; k < np; k++, li++) {
        while (bs->which[li] < 0) li++;
        g->ext[k] = bs->extent[li];
        g->min[k] = bs->min[li];
        if (g->ext[k] <= 0) return 0;   /* an unused Func: nothing to compute */
        if (t->threads[k] < 1 || t->serial[k] < 1) return base_fail(err, errlen, "%s: tile sizes must be positive", r->name);
        g->blk[k] = (int64_t)t->threads[k] * t->serial[k];
        g->nb[k] = (g->ext[k] + g->blk[k] - 1) / g->blk[k];
        g->nblocks *= g->nb[k];
        g->nthreads *= t->threads[k];
    }
    if (g->nthreads > (1 << 20))
        return base_fail(err, errlen, "%s: %lld threads per block", r->name, (long long)g->nthreads);
    return 1;
}

/* Kernel of stage st of root Func r (lowering's build_kernel).  Members:
 * the Funcs fused into it, by id. */
static void build_kernel(build *w, const sc_func *r, int st) {
    nest_ctx *x = w->x;
    kentry *ke = w->ke;
    const sched_func *sf = w->s->f[r->id];
    const sched_tile *t = &sf->tile[st];
    int dims[SC_MAX_DIMS], np = pure_loops(x, r, st, dims, NULL);
    nest_grid g;
    int made = nest_grid_of(x->b, r, st, t, np, &g, w->failed ? NULL : w->err, w->errlen);
    if (made < 0) { w->failed = true; return; }
    if (made == 0) { ke->k.root = NULL; return; }
    const int64_t *ext = g.ext, *mn = g.min, *blk = g.blk, *nb = g.nb;
    int64_t nblocks = g.nblocks, nthreads = g.nthreads;
    ke->k.root = r;
    ke->k.stage = st;
    ke->k.nblocks = nblocks;
    ke->k.nthreads = (int)nthreads;
    org base[SC_MAX_DIMS], tb[SC_MAX_DIMS], reg[SC_MAX_DIMS];
    int64_t below = 1;
    int split = w->hs.xa ? hull_split(&w->hs) : 0;
    for (int q = 0; q < np; q++) {
        if (nb[q] == 1) {
            base[q] = konst(mn[q]);
        } else if (!w->hs.xa) {
            base[q] = fresh(w);
        } else {
            ir_arena *a = w->hs.xa;
            sc_expr *b = hull_digit(&w->hs, split, false, below, nb[q], q < np - 1);
            base[q] = fresh_def(w, fp_bin(a, SC_ADD, fp_int(a, mn[q]), fp_bin(a, SC_MUL, b, fp_int(a, blk[q]))));
        }
        below *= nb[q];
        reg[q] = konst(mn[q]);
    }
    fp_box box = make_box(w->x, r, st, base, blk);
    block_group(w, r, st, &box);
    if (w->failed) return;
    nest_stage *rec = ke->root_stage;
    fill_stage_head(w->x, rec, r, st, &w->ke->k);
    int64_t per[SC_MAX_DIMS];
    for (int q = 0; q < np; q++) {
        per[q] = t->serial[q];
        rec->extent[q] = ext[q];
        rec->blocks[q] = nb[q];
        rec->threads[q] = t->threads[q];
        rec->serial[q] = per[q];
    }
    rec->cyclic = cyclic_stage(w, r, st, np, t->threads, per);
    thread_bases(w, np, t->threads, base, per, rec->cyclic, tb);
    rec->threads_used = nthreads;
    rec->realizations_per_block = 1;
    emit_stage(w, r, st, rec, tb, per, reg, ext, base, blk, true, 1);
}

/* Fills the totals of a kernel's stage records once nblocks is known. */
static void finish_stage(nest_stage *rec, int64_t nblocks, bool root) {
    rec->realizations = root ? 1 : rec->realizations_per_block * nblocks;
    rec->points_total = rec->realizations * rec->points_per_realization;
}

/* A decision's content, appended to a kernel key (records are compared
 * by value: a state's arena may be freed and its addresses reused). */
static int key_decision(uintptr_t *key, int nkey, int id, const sched_func *sf, const inlined_stages *se, int only) {
    key[nkey++] = (uintptr_t)id;
    key[nkey++] = (uintptr_t)se;
    key[nkey++] = (uintptr_t)sf->loc | (uintptr_t)(sf->at + 1) << 8;
    if (sf->tile)
        for (int s = only < 0 ? 0 : only; s < (only < 0 ? sf->nstages : only + 1); s++) {
            const sched_tile *t = &sf->tile[s];
            key[nkey++] = (uintptr_t)t->npure;
            for (int k = 0; k < t->npure; k++)
                key[nkey++] = (uintptr_t)t->threads[k] | (uintptr_t)t->serial[k] << 24;
        }
    return nkey;
}

/* Keys are a few dozen words: compared inline, not through memcmp. */
static inline bool same_words(const uintptr_t *a, const uintptr_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static uint64_t key_hash(const uintptr_t *key, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)key[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
    }
    /* a finalizer: the table takes the low bits, and keys that differ
     * only in high bits (a serial size, shifted up) must spread */
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static kentry *find_kernel(build *w, const sc_func *r, int st, const uintptr_t *key, int nkey, const int *mem_ids,
                           int nmem);

/* The kernel of stage st of root r under s, from the cache or built. */
static kentry *kernel_of(build *w, const sc_func *r, int st, uintptr_t *key, int *mem_ids) {
    nest_ctx *x = w->x;
    int nkey = 0, nmem = 0;
    key[nkey++] = (uintptr_t)st;
    nkey = key_decision(key, nkey, r->id, w->s->f[r->id], w->se[r->id], st);
    /* the members, in id order (w->first / w->next_mem) */
    for (int i = w->first[r->id]; i >= 0; i = w->next_mem[i])
        if (w->kstage[i] == st) {
            mem_ids[nmem++] = i;
            nkey = key_decision(key, nkey, i, w->s->f[i], w->se[i], -1);
        }
    klast *l = x->no_kernel_cache ? NULL : &x->last[x->kslot[r->id] + st];
    if (l && l->e && l->nkey == nkey && same_words(l->key, key, nkey)) {
        x->stats.kernel_hits++;
        return l->e;
    }
    kentry *ke = find_kernel(w, r, st, key, nkey, mem_ids, nmem);
    if (l && ke) {
        if (l->cap < nkey) {
            l->key = base_realloc(l->key, sizeof *l->key * (size_t)nkey);
            l->cap = nkey;
        }
        memcpy(l->key, key, sizeof *key * (size_t)nkey);
        l->nkey = nkey;
        l->e = ke;
    }
    return ke;
}

/* The kernel of key (nkey words; the members mem_ids), from the table or
 * built (and added to it). */
static kentry *find_kernel(build *w, const sc_func *r, int st, const uintptr_t *key, int nkey, const int *mem_ids,
                           int nmem) {
    nest_ctx *x = w->x;
    uint64_t h = key_hash(key, nkey);
    for (kentry *e = x->no_kernel_cache ? NULL : x->ktab[h & (x->kcap - 1)]; e; e = e->next)
        if (e->h == h && e->nkey == nkey && same_words(e->key, key, nkey)) {
            x->stats.kernel_hits++;
            return e;
        }
    x->stats.kernel_misses++;
    kentry *ke = ir_alloc(w->ka, sizeof *ke);
    ke->h = h;
    ke->nkey = nkey;
    ke->key = ir_alloc(w->ka, sizeof(uintptr_t) * (size_t)nkey);
    memcpy(ke->key, key, sizeof(uintptr_t) * (size_t)nkey);
    ke->nmem = nmem;
    ke->mem_ids = ir_alloc(w->ka, sizeof(int) * (size_t)(nmem + 1));
    memcpy(ke->mem_ids, mem_ids, sizeof(int) * (size_t)nmem);
    ke->mem = ir_alloc(w->ka, sizeof(nest_func) * (size_t)(nmem + 1));
    ke->root_stage = ir_alloc(w->ka, sizeof(nest_stage));
    for (int i = 0; i < nmem; i++) {
        const sc_func *g = func_at(x->p, mem_ids[i]);
        nest_func *m = &ke->mem[i];
        m->func = g;
        m->loc = w->s->f[g->id]->loc;
        m->at = w->s->f[g->id]->at;
        m->at_stage = w->cstage[g->id];
        m->owner = w->owner[g->id];
        m->owner_stage = w->ostage[g->id];
        m->nstages = g->nstages;
        m->stages = ir_alloc(w->ka, sizeof(nest_stage *) * (size_t)g->nstages);
        for (int s = 0; s < g->nstages; s++) m->stages[s] = ir_alloc(w->ka, sizeof(nest_stage));
    }
    w->ke = ke;
    w->leaf = 0;
    /* exact mode when a member has several consumers (a hull to evaluate) */
    bool exact = false;
    for (int i = 0; i < nmem && !exact; i++) exact = fusion_consumers(x->graph, w->s, mem_ids[i], x->uses) > 1;
    hull_begin(&w->hs, exact);
    build_kernel(w, r, st);
    hull_end(&w->hs);
    if (w->failed) return NULL;   /* the arena keeps the partial entry; it is not cached */
    if (ke->k.root) {
        finish_stage(ke->root_stage, ke->k.nblocks, true);
        for (int i = 0; i < nmem; i++)
            for (int s = 0; s < ke->mem[i].nstages; s++)
                finish_stage((nest_stage *)ke->mem[i].stages[s], ke->k.nblocks, false);
    }
    if (!x->no_kernel_cache) {
        if (x->kn >= x->kcap) {
            /* chains of one entry on average: a search caches hundreds
             * of thousands of kernels */
            size_t cap = 2 * x->kcap;
            kentry **t = base_calloc(cap, sizeof *t);
            for (size_t i = 0; i < x->kcap; i++)
                for (kentry *e = x->ktab[i], *next; e; e = next) {
                    next = e->next;
                    e->next = t[e->h & (cap - 1)];
                    t[e->h & (cap - 1)] = e;
                }
            free(x->ktab);
            x->ktab = t;
            x->kcap = cap;
        }
        ke->next = x->ktab[h & (x->kcap - 1)];
        x->ktab[h & (x->kcap - 1)] = ke;
        x->kn++;
    }
    return ke;
}

/* The rules lowering enforces (lower.c prepare and check_fusion), for the
 * decided Funcs. */
static int check_rules(build *w) {
    nest_ctx *x = w->x;
    const sc_pipeline *p = x->p;
    const sched_state *s = w->s;
    for (int i = 0; i < p->order.n; i++) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT) continue;
        const sched_func *sf = s->f[f->id];
        if (!sf || sf->loc == SCHED_UNDECIDED) continue;
        if (sf->loc == SCHED_INLINE && (f->nstages > 1 || f->is_output))
            return failf(w, "%s cannot be inline: %s", f->name,
                         f->is_output ? "it is an output" : "it has update definitions");
        if (f->is_output && sf->loc != SCHED_ROOT)
            return failf(w, "%s is an output and must be computed at root", f->name);
        if (sf->loc == SCHED_ROOT && sf->nstages != f->nstages)
            return failf(w, "%s has %d stage%s but its schedule tiles %d", f->name, f->nstages,
                         f->nstages == 1 ? "" : "s", sf->nstages);
        if (sf->loc != SCHED_BLOCK && sf->loc != SCHED_THREAD) continue;
        if (sf->at < 0 || sf->at >= p->funcs.n || func_at(p, sf->at)->kind != FUNC_DEFINED)
            return failf(w, "%s is computed at %s level of something that is not a Func", f->name,
                         sf->loc == SCHED_BLOCK ? "block" : "thread");
        const sched_func *af = s->f[sf->at];
        if (!af || af->loc == SCHED_UNDECIDED) continue;      /* not modelled yet */
        if (fusion_check(x->graph, s, f->id, sf->loc, sf->at, &w->cstage[f->id], w->err, w->errlen)) {
            w->failed = true;
            return -1;
        }
        if (sf->loc == SCHED_BLOCK && sf->nstages != f->nstages)
            return failf(w, "%s has %d stage%s but its schedule tiles %d", f->name, f->nstages,
                         f->nstages == 1 ? "" : "s", sf->nstages);
    }
    return 0;
}

nest *nest_build(nest_ctx *x, const sched_state *s, char *err, size_t errlen) {
    char local[256];
    if (!err || !errlen) { err = local; errlen = sizeof local; }
    err[0] = 0;
    const sc_pipeline *p = x->p;
    int n = x->n;
    if (s->nfuncs != n) {
        snprintf(err, errlen, "the schedule is for a pipeline of %d Funcs, not %d", s->nfuncs, n);
        return NULL;
    }
    build w;
    memset(&w, 0, sizeof w);
    w.x = x;
    w.s = s;
    w.err = err;
    w.errlen = errlen;
    ir_arena *own = x->no_kernel_cache ? ir_arena_new() : NULL;
    w.ka = own ? own : x->karena;
    size_t nn = (size_t)n + 1;
    /* the ctx's scratch: se cleared, the ints set below, the footprints
     * written before they are read */
    w.se = x->se;
    memset(w.se, 0, sizeof *w.se * nn);
    int *ints = x->ints;
    w.first = ints + 6 * nn;
    w.next_mem = ints + 7 * nn;
    w.cstage = ints + nn;
    w.root = ints + 2 * nn;
    w.kstage = ints + 3 * nn;
    w.owner = ints + 4 * nn;
    w.ostage = ints + 5 * nn;
    w.fmin = x->fmin;
    w.bmin = x->bmin;
    w.fext = x->fext;
    w.fwhole = x->fwhole;
    w.bext = x->bext;
    uintptr_t *key = x->key;
    int *mem_ids = x->mem_ids;
    nest *out = NULL;
    /* stages after inlining, and consumers */
    for (int i = 0; i < n; i++) {
        w.cstage[i] = w.owner[i] = w.ostage[i] = -1;
        w.root[i] = w.kstage[i] = -1;
        const sched_func *sf = s->f[i];
        if (func_at(p, i)->kind != FUNC_DEFINED || !sf || sf->loc == SCHED_UNDECIDED || sf->loc == SCHED_INLINE)
            continue;
        w.se[i] = inlined_stages_of(x->inl, s, i);
        if (w.se[i]->size > NEST_MAX_INLINED) {
            failf(&w, "inlining makes the expression of %s %.3g nodes large (the limit is %d): compute some of "
                  "its producers at root or fused", func_at(p, i)->name, w.se[i]->size, NEST_MAX_INLINED);
            goto done;
        }
    }
    if (check_rules(&w)) goto done;
    /* the kernel of every fused Func: follow `at` up to a root Func */
    for (int i = 0; i < n; i++) {
        const sched_func *sf = s->f[i];
        if (!sf || (sf->loc != SCHED_BLOCK && sf->loc != SCHED_THREAD)) continue;
        int g = i, prev = i, hops = 0;
        bool ok = true;
        while (ok && s->f[g]->loc != SCHED_ROOT) {
            if (++hops > n) { failf(&w, "%s is computed inside a cycle of Funcs", func_at(p, i)->name); goto done; }
            prev = g;
            g = s->f[g]->at;
            ok = s->f[g] && s->f[g]->loc != SCHED_UNDECIDED && s->f[g]->loc != SCHED_INLINE;
        }
        if (!ok) continue;
        w.root[i] = g;
        w.kstage[i] = w.cstage[prev];
        /* its group (lower.c): up the links of its own level */
        int h = i;
        while (s->f[s->f[h]->at]->loc == sf->loc) h = s->f[h]->at;
        w.owner[i] = s->f[h]->at;
        w.ostage[i] = w.cstage[h];
    }
    for (int i = 0; i < n; i++) w.first[i] = -1;
    for (int i = n - 1; i >= 0; i--) {
        w.next_mem[i] = -1;
        if (w.root[i] < 0) continue;
        w.next_mem[i] = w.first[w.root[i]];
        w.first[w.root[i]] = i;
    }
    out = base_calloc(1, sizeof *out);
    out->own_arena = own;
    out->nfuncs = n;
    out->funcs = base_calloc(nn, sizeof(nest_func *));
    int nk = 0, nr = 0;
    for (int i = 0; i < n; i++)
        if (s->f[i] && s->f[i]->loc == SCHED_ROOT) {
            nk += func_at(p, i)->nstages;
            nr++;
        }
    out->kernels = base_calloc((size_t)nk + 1, sizeof(nest_kernel *));
    nest_func *roots = base_calloc((size_t)nr + 1, sizeof(nest_func));
    const nest_stage **sp = base_calloc((size_t)nk + 1, sizeof(nest_stage *));
    int used = 0, nroot = 0;
    for (int i = 0; i < p->order.n; i++) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? s->f[f->id] : NULL;
        if (!sf || sf->loc != SCHED_ROOT) continue;
        nest_func *rf = &roots[nroot++];
        rf->func = f;
        rf->loc = SCHED_ROOT;
        rf->at = rf->at_stage = rf->owner = rf->owner_stage = -1;
        rf->mem = NEST_GLOBAL;
        rf->ndims = f->ndims;
        rf->elems = 1;
        for (int d = 0; d < f->ndims; d++) {
            rf->extent[d] = x->b->funcs[f->id].extent[d];
            rf->elems *= rf->extent[d] > 0 ? rf->extent[d] : 0;
        }
        rf->bytes = rf->elems * sc_type_size(f->type);
        rf->stages = sp + used;
        out->funcs[f->id] = rf;
        out->nmodelled++;
        if (!rf->elems) continue;      /* an unused Func: nothing to compute */
        rf->nstages = f->nstages;
        used += f->nstages;
        for (int st = 0; st < f->nstages; st++) {
            kentry *ke = kernel_of(&w, f, st, key, mem_ids);
            if (!ke) {
                free(out->funcs);
                free(out->kernels);
                free(out);
                out = NULL;
                goto done_roots;
            }
            if (!ke->k.root) continue;
            int kid = out->nkernels++;
            out->kernels[kid] = &ke->k;
            rf->stages[st] = ke->root_stage;
            for (int m = 0; m < ke->nmem; m++) {
                nest_func *mf = &ke->mem[m];
                out->funcs[ke->mem_ids[m]] = mf;
                out->nmodelled++;
            }
        }
    }
done_roots:
    if (out) {
        out->own_roots = roots;
        out->own_stages = sp;
    } else {
        free(roots);
        free(sp);
    }
done:
    if (!out && own) ir_arena_free(own);
    hull_free(&w.hs);
    return out;
}

void nest_free(nest *n) {
    if (!n) return;
    if (n->own_arena) ir_arena_free(n->own_arena);
    free(n->own_roots);
    free(n->own_stages);
    free(n->funcs);
    free(n->kernels);
    free(n);
}

int nest_fused_extents(const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                       int func_id, int64_t *extent, char *err, size_t errlen) {
    nest_ctx *x = nest_ctx_new(p, b);
    nest *m = nest_build(x, s, err, errlen);
    int rc = -1;
    if (m) {
        const nest_func *f = func_id >= 0 && func_id < m->nfuncs ? m->funcs[func_id] : NULL;
        if (f && f->loc != SCHED_ROOT && f->mem != NEST_GLOBAL) {
            for (int d = 0; d < f->ndims; d++) extent[d] = f->extent[d];
            rc = 0;
        } else {
            snprintf(err, errlen, "%s is not fused into any kernel", func_at(p, func_id)->name);
        }
    }
    nest_free(m);
    nest_ctx_free(x);
    return rc;
}
