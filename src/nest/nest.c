/*
 * nest.c - the loop-nest model (nest.h).
 *
 * The kernel walk below follows lowering's construction step by step
 * (lower.c: build_kernel, emit_block_child, emit_stage, emit_thread_child,
 * thread_bases, stage_producers) but keeps numbers instead of statements:
 * every tile origin is a constant or a fresh opaque symbol exactly where
 * lowering has a constant or a fresh variable, so the footprint algebra
 * (footprint.h) gives the same extents in both.
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis.h"
#include "footprint.h"
#include "nest.h"

#define TABLE 4096   /* hash buckets (chained) */

/* A Func's stages after inlining, for one set of inline Funcs. */
typedef struct sexpr {
    struct sexpr *next;
    int fid;
    int nsig;
    int *sig;                      /* the inline Funcs it expands, DFS order */
    uint64_t h;
    double size;                   /* largest stage, in tree nodes */
    sc_expr **val;                 /* [stage] */
    sc_expr ***lhs;                /* [stage][d] */
    int *ncalls;                   /* [stage] distinct calls, first seen first */
    const sc_expr ***calls;
} sexpr;

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

struct nest_ctx {
    const sc_pipeline *p;
    const bounds_result *b;
    ir_arena *arena;
    int n;
    int *ndirect;                  /* [fid] distinct Funcs called, any stage */
    int **direct;
    sexpr *etab[TABLE];
    kentry *ktab[TABLE];
    nest_stats stats;
    /* scratch, sized n (one build at a time per ctx) */
    int *mark, *stack, *sig;
    int stamp;
    double *size_memo;
    sc_expr **inl_memo;
    int *inl_stamp;
};

static sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

const char *nest_mem_name(nest_mem m) {
    return m == NEST_GLOBAL ? "global" : m == NEST_SHARED ? "shared" : "register";
}

static void *xcalloc(size_t n, size_t s) {
    void *r = calloc(n ? n : 1, s);
    if (!r) abort();
    return r;
}

/* ---- the pipeline's call graph ---------------------------------------- */

typedef struct { nest_ctx *x; int self; int *list; int n; } callee_walk;

static void note_callee(const sc_expr *e, void *user) {
    callee_walk *w = user;
    if (e->kind != E_CALL || e->func->kind != FUNC_DEFINED || e->func->id == w->self) return;
    for (int i = 0; i < w->n; i++) if (w->list[i] == e->func->id) return;
    w->list[w->n++] = e->func->id;
}

nest_ctx *nest_ctx_new(const sc_pipeline *p, const bounds_result *b) {
    nest_ctx *x = xcalloc(1, sizeof *x);
    x->p = p;
    x->b = b;
    x->arena = ir_arena_new();
    x->n = p->funcs.n;
    size_t n = (size_t)x->n + 1;
    x->ndirect = xcalloc(n, sizeof(int));
    x->direct = xcalloc(n, sizeof(int *));
    x->mark = xcalloc(n, sizeof(int));
    x->stack = xcalloc(n, sizeof(int));
    x->sig = xcalloc(n, sizeof(int));
    x->size_memo = xcalloc(n, sizeof(double));
    x->inl_memo = xcalloc(n, sizeof(sc_expr *));
    x->inl_stamp = xcalloc(n, sizeof(int));
    int *tmp = xcalloc(n, sizeof(int));
    for (int i = 0; i < x->n; i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        callee_walk w = { x, i, tmp, 0 };
        for (int s = 0; s < f->nstages; s++) {
            ir_visit(f->stages[s].value, note_callee, &w);
            for (int d = 0; d < f->stages[s].nargs; d++) ir_visit(f->stages[s].args[d], note_callee, &w);
        }
        x->ndirect[i] = w.n;
        x->direct[i] = ir_alloc(x->arena, sizeof(int) * (size_t)(w.n + 1));
        memcpy(x->direct[i], tmp, sizeof(int) * (size_t)w.n);
    }
    free(tmp);
    return x;
}

void nest_ctx_free(nest_ctx *x) {
    if (!x) return;
    ir_arena_free(x->arena);
    free(x->ndirect);
    free(x->direct);
    free(x->mark);
    free(x->stack);
    free(x->sig);
    free(x->size_memo);
    free(x->inl_memo);
    free(x->inl_stamp);
    free(x);
}

nest_stats nest_ctx_stats(const nest_ctx *x) { return x->stats; }

static bool is_inline(const sched_state *s, int id) {
    return s->f[id] && s->f[id]->loc == SCHED_INLINE;
}

/* ---- stages after inlining ------------------------------------------------ */

/* The inline Funcs reachable from fid through inline Funcs, in DFS
 * order, into x->sig; returns the count. */
static int inline_sig(nest_ctx *x, const sched_state *s, int fid) {
    int top = 0, n = 0;
    x->stamp++;
    x->stack[top++] = fid;
    x->mark[fid] = x->stamp;
    while (top) {
        int g = x->stack[--top];
        for (int i = 0; i < x->ndirect[g]; i++) {
            int h = x->direct[g][i];
            if (x->mark[h] == x->stamp || !is_inline(s, h)) continue;
            x->mark[h] = x->stamp;
            x->sig[n++] = h;
            x->stack[top++] = h;
        }
    }
    return n;
}

static double inlined_size(nest_ctx *x, const sched_state *s, const sc_expr *e);

static double inline_func_size(nest_ctx *x, const sched_state *s, const sc_func *g) {
    if (x->inl_stamp[g->id] == x->stamp && x->size_memo[g->id] >= 0) return x->size_memo[g->id];
    x->inl_stamp[g->id] = x->stamp;
    x->inl_memo[g->id] = NULL;
    x->size_memo[g->id] = 1e300;
    double v = inlined_size(x, s, g->stages[0].value);
    x->size_memo[g->id] = v;
    return v;
}

/* Tree size once inline Funcs are substituted (lower_max_inlined_size's
 * measure). */
static double inlined_size(nest_ctx *x, const sched_state *s, const sc_expr *e) {
    double n = 1;
    for (int i = 0; i < e->nargs; i++) n += inlined_size(x, s, e->args[i]);
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED && is_inline(s, e->func->id))
        n += inline_func_size(x, s, e->func) * (e->nargs ? 2 : 1);
    return n;
}

typedef struct {
    int n;
    const char *names[SC_MAX_DIMS];
    sc_expr *vals[SC_MAX_DIMS];
} subst_map;

static sc_expr *copy_node(ir_arena *a, const sc_expr *e) {
    sc_expr *r = ir_alloc(a, sizeof *r);
    *r = *e;
    if (e->nargs) {
        r->args = ir_alloc(a, sizeof(sc_expr *) * (size_t)e->nargs);
        memcpy(r->args, e->args, sizeof(sc_expr *) * (size_t)e->nargs);
    }
    return r;
}

static sc_expr *subst(ir_arena *a, sc_expr *e, const subst_map *m) {
    if (e->kind == E_VAR) {
        for (int i = 0; i < m->n; i++)
            if (!strcmp(m->names[i], e->name)) return m->vals[i];
        return e;
    }
    if (!e->nargs) return e;
    sc_expr *r = NULL;
    for (int i = 0; i < e->nargs; i++) {
        sc_expr *v = subst(a, e->args[i], m);
        if (v != e->args[i] && !r) r = copy_node(a, e);
        if (r) r->args[i] = v;
    }
    return r ? r : e;
}

/* Calls of inline Funcs replaced by their (inlined) values, as lowering's
 * inline_expr does. */
static sc_expr *inline_expr(nest_ctx *x, const sched_state *s, sc_expr *e) {
    sc_expr *r = e;
    for (int i = 0; i < e->nargs; i++) {
        sc_expr *v = inline_expr(x, s, e->args[i]);
        if (v != e->args[i]) {
            if (r == e) r = copy_node(x->arena, e);
            r->args[i] = v;
        }
    }
    if (r->kind == E_CALL && r->func->kind == FUNC_DEFINED && is_inline(s, r->func->id)) {
        const sc_func *g = r->func;
        if (x->inl_stamp[g->id] != x->stamp || !x->inl_memo[g->id]) {
            x->inl_stamp[g->id] = x->stamp;
            x->size_memo[g->id] = -1;
            x->inl_memo[g->id] = inline_expr(x, s, g->stages[0].value);
        }
        subst_map m = { 0, {0}, {0} };
        for (int d = 0; d < g->ndims; d++) {
            m.names[m.n] = g->vars[d];
            m.vals[m.n++] = r->args[d];
        }
        return subst(x->arena, x->inl_memo[g->id], &m);
    }
    return r;
}

/* Distinct calls (structurally) of an expression DAG, first seen first. */
typedef struct { ir_vec seen; ir_vec calls; ir_arena *a; } call_walk;

static void collect_calls(call_walk *w, const sc_expr *e) {
    for (int i = 0; i < w->seen.n; i++) if (w->seen.items[i] == e) return;
    ir_vec_push(w->a, &w->seen, (void *)e);
    if (e->kind == E_CALL) {
        bool dup = false;
        for (int i = 0; i < w->calls.n && !dup; i++) dup = ir_expr_equal(w->calls.items[i], e);
        if (!dup) ir_vec_push(w->a, &w->calls, (void *)e);
    }
    for (int i = 0; i < e->nargs; i++) collect_calls(w, e->args[i]);
}

static uint64_t sig_hash(int fid, int n, const int *sig) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)fid;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)sig[i]) * 1099511628211ULL;
    return h;
}

/* f's stages after inlining under s (cached). */
static const sexpr *stages_of(nest_ctx *x, const sched_state *s, int fid) {
    int n = inline_sig(x, s, fid);
    uint64_t h = sig_hash(fid, n, x->sig);
    for (sexpr *e = x->etab[h % TABLE]; e; e = e->next)
        if (e->h == h && e->fid == fid && e->nsig == n && !memcmp(e->sig, x->sig, sizeof(int) * (size_t)n)) {
            x->stats.expr_hits++;
            return e;
        }
    x->stats.expr_misses++;
    const sc_func *f = func_at(x->p, fid);
    sexpr *e = ir_alloc(x->arena, sizeof *e);
    e->fid = fid;
    e->nsig = n;
    e->h = h;
    e->sig = ir_alloc(x->arena, sizeof(int) * (size_t)(n + 1));
    memcpy(e->sig, x->sig, sizeof(int) * (size_t)n);
    x->stamp++;
    for (int st = 0; st < f->nstages; st++) {
        double v = inlined_size(x, s, f->stages[st].value);
        if (v > e->size) e->size = v;
    }
    if (e->size <= NEST_MAX_INLINED) {
        x->stamp++;
        e->val = ir_alloc(x->arena, sizeof(sc_expr *) * (size_t)f->nstages);
        e->lhs = ir_alloc(x->arena, sizeof(sc_expr **) * (size_t)f->nstages);
        e->ncalls = ir_alloc(x->arena, sizeof(int) * (size_t)f->nstages);
        e->calls = ir_alloc(x->arena, sizeof(sc_expr **) * (size_t)f->nstages);
        for (int st = 0; st < f->nstages; st++) {
            const ir_stage *sg = &f->stages[st];
            e->val[st] = inline_expr(x, s, sg->value);
            e->lhs[st] = ir_alloc(x->arena, sizeof(sc_expr *) * (size_t)(sg->nargs + 1));
            for (int d = 0; d < sg->nargs; d++) e->lhs[st][d] = inline_expr(x, s, sg->args[d]);
            call_walk w = { {0}, {0}, x->arena };
            collect_calls(&w, e->val[st]);
            for (int d = 0; d < sg->nargs; d++) collect_calls(&w, e->lhs[st][d]);
            e->ncalls[st] = w.calls.n;
            e->calls[st] = (const sc_expr **)w.calls.items;
        }
    }
    e->next = x->etab[h % TABLE];
    x->etab[h % TABLE] = e;
    return e;
}

/* ---- one build ----------------------------------------------------------- */

typedef struct { uint64_t h; int64_t v; } org;   /* h == 0: the constant v */

typedef struct {
    nest_ctx *x;
    const sched_state *s;
    const sexpr **se;              /* [fid] for decided non-inline Funcs */
    int *cons, *cstage;            /* consumer after inlining: -1 none, -2 several */
    int *root, *kstage;            /* fused: the root of its chain and its stage */
    char *err;
    size_t errlen;
    bool failed;
    /* the kernel being built */
    kentry *ke;
    uint64_t leaf;
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

static int pure_loops(const sc_func *f, int st, int *dims, int *li) {
    int which[2 * SC_MAX_DIMS], n = ir_stage_loops(f, st, which), np = 0;
    for (int i = 0; i < n; i++)
        if (which[i] >= 0) {
            if (li) li[np] = i;
            dims[np++] = which[i];
        }
    return np;
}

static org fresh(build *w) { org o = { fp_hash_leaf(++w->leaf), 0 }; return o; }
static org konst(int64_t v) { org o = { 0, v }; return o; }

static fp_box make_box(const sc_func *f, int st, const org *base, const int64_t *n) {
    fp_box box;
    memset(&box, 0, sizeof box);
    box.f = f;
    box.stage = st;
    int dims[SC_MAX_DIMS], np = pure_loops(f, st, dims, NULL);
    for (int k = 0; k < np; k++) {
        box.names[k] = f->vars[dims[k]];
        box.h[k] = base[k].h;
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

/* The clipped footprint of prod over box (the calls of stage box->stage
 * of box->f): origins and extents, as lowering's footprint(). */
static int footprint(build *w, const sc_func *prod, const fp_box *box, org *mins, int64_t *ext) {
    const sexpr *e = w->se[box->f->id];
    int nc = e->ncalls[box->stage];
    const sc_expr **calls = xcalloc((size_t)nc + 1, sizeof(sc_expr *));
    const fp_box **boxes = xcalloc((size_t)nc + 1, sizeof(fp_box *));
    int n = 0;
    for (int i = 0; i < nc; i++)
        if (e->calls[box->stage][i]->func == prod) {
            calls[n] = e->calls[box->stage][i];
            boxes[n++] = box;
        }
    fp_span dims[SC_MAX_DIMS];
    int rc = n ? fp_union(NULL, w->x->b, prod, n, calls, boxes, dims, w->err, w->errlen) : -1;
    free(calls);
    free(boxes);
    if (!n) return failf(w, "%s does not call %s", box->f->name, prod->name);
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

/* Extents of a box's footprint of one call, clipped (fallback when the
 * algebra cannot follow a coordinate). */
static int64_t access_box(build *w, const sc_expr *call, const fp_box *box, int64_t *ext) {
    const sc_func *prod = call->func;
    int64_t elems = 1;
    for (int d = 0; d < prod->ndims; d++) {
        fp_span s = fp_arg(NULL, call->args[d], box);
        if (!s.ok) s = fp_fallback(w->x->b, call->args[d], box);
        if (!s.ok) {
            s.lo = w->x->b->funcs[prod->id].min[d];
            s.hi = s.lo + w->x->b->funcs[prod->id].extent[d] - 1;
        }
        ext[d] = fp_clip_extent(w->x->b, prod, d, &s);
        elems *= ext[d];
    }
    return elems;
}

static void thread_child(build *w, const sc_func *prod, const fp_box *box, int64_t rpb);

/* Computes stage st of f over tiles of n points from origins tb, as
 * lowering's emit_stage; rpb: how many times per block; real: the
 * realization's origin and extents (for its footprints); blk/blkn: the
 * block's origin and extents (root stages), else NULL. */
static void emit_stage(build *w, const sc_func *f, int st, nest_stage *rec, const org *tb, const int64_t *n,
                       const org *real, const int64_t *realn, const org *blk, const int64_t *blkn, int64_t rpb) {
    nest_ctx *x = w->x;
    kentry *ke = w->ke;
    fp_box box = make_box(f, st, tb, n);
    for (int i = 0; i < ke->nmem && !w->failed; i++) {
        int id = ke->mem_ids[i];
        const sched_func *sf = w->s->f[id];
        if (sf->loc == SCHED_THREAD && sf->at == f->id && w->cstage[id] == st)
            thread_child(w, func_at(x->p, id), &box, rpb * (rec->threads_used));
    }
    if (w->failed) return;
    int dims[SC_MAX_DIMS], li[SC_MAX_DIMS], np = pure_loops(f, st, dims, li);
    const ir_stage *stg = &f->stages[st];
    int64_t total = 1;
    for (int k = 0; k < np; k++) total *= n[k];
    int64_t loads = total;
    bool unrolled = total < 16;
    int64_t redpts = 1;
    rec->nred = 0;
    if (stg->rdom)
        for (int d = 0; d < stg->rdom->ndims; d++) {
            unrolled &= stg->rdom->extent[d] < 16 && total * stg->rdom->extent[d] < 16;
            loads *= stg->rdom->extent[d];
            redpts *= stg->rdom->extent[d];
            rec->red[rec->nred++] = stg->rdom->extent[d];
        }
    rec->unrolled = total < 16;
    const sexpr *e = w->se[f->id];
    int nc = e->ncalls[st];
    const sc_expr *const *calls = e->calls[st];
    rec->naccess = nc;
    rec->access = ir_alloc(x->arena, sizeof(nest_access) * (size_t)(nc + 1));
    /* register staging, as lowering's stage_producers */
    int64_t staged_ext[NEST_MAX_STAGED][SC_MAX_DIMS];
    const sc_func *staged[NEST_MAX_STAGED];
    int nst = 0;
    if (total > 1 && unrolled) {
        const sc_func *cand[NEST_MAX_STAGED];
        int ncalls[NEST_MAX_STAGED], ncand = 0;
        for (int i = 0; i < nc; i++) {
            const sc_func *g = calls[i]->func;
            if (g == f || !has_global(w, g->id) || member(w, g->id)) continue;
            int j = 0;
            while (j < ncand && cand[j] != g) j++;
            if (j < ncand) ncalls[j]++;
            else if (ncand < NEST_MAX_STAGED) { cand[ncand] = g; ncalls[ncand++] = 1; }
        }
        for (int j = 0; j < ncand && ke->k.nstaged < NEST_MAX_STAGED; j++) {
            const sc_expr **gc = xcalloc((size_t)nc + 1, sizeof(sc_expr *));
            int ng = 0;
            for (int i = 0; i < nc; i++) if (calls[i]->func == cand[j]) gc[ng++] = calls[i];
            fp_span sp[SC_MAX_DIMS];
            bool aff = fp_affine_union(NULL, cand[j], ng, gc, &box, sp);
            free(gc);
            if (!aff) continue;
            int64_t elems = 1;
            for (int d = 0; d < cand[j]->ndims; d++) elems *= sp[d].hi - sp[d].lo + 1;
            if (elems > NEST_STAGE_ELEMS || elems >= ncalls[j] * loads) continue;
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
    fp_box pbox = make_box(f, st, tb, one);
    fp_box rbox = make_box(f, st, real, realn);
    fp_box bbox = blk ? make_box(f, st, blk, blkn) : rbox;
    int which[2 * SC_MAX_DIMS], nloops = ir_stage_loops(f, st, which);
    for (int i = 0; i < nc; i++) {
        nest_access *a = &rec->access[i];
        const sc_expr *call = calls[i];
        const sc_func *g = call->func;
        a->producer = g;
        a->call = call;
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
        a->bytes_point = access_box(w, call, &pbox, a->fp_point) * size;
        a->bytes_thread = access_box(w, call, &box, a->fp_thread) * size;
        a->bytes_block = access_box(w, call, &bbox, a->fp_block) * size;
        a->bytes_realization = access_box(w, call, &rbox, a->fp_realization) * size;
        a->affine = true;
        double sl[2 * SC_MAX_DIMS] = {0};
        for (int d = 0; d < g->ndims && a->affine; d++) {
            deps_ratio coef[2 * SC_MAX_DIMS];
            if (!deps_linearise(f, st, call->args[d], coef, NULL, NULL)) { a->affine = false; break; }
            for (int l = 0; l < nloops; l++) sl[l] += (double)coef[l].num / (double)coef[l].den * (double)strides[d];
        }
        for (int l = 0; l < nloops; l++) a->stride_serial[l] = a->affine ? sl[l] : NAN;
        for (int k = 0; k < np; k++) {
            a->stride_thread[k] = a->affine ? sl[li[k]] * (double)n[k] : NAN;
            a->stride_block[k] = !a->affine ? NAN : blk ? sl[li[k]] * (double)blkn[k] : 0;
        }
    }
    (void)which;
    rec->points_per_realization = redpts;
    for (int k = 0; k < np; k++) rec->points_per_realization *= realn[k];
}

static void fill_stage_head(nest_stage *rec, const sc_func *f, int st, int kernel) {
    rec->func = f;
    rec->stage = st;
    rec->kernel = kernel;
    int dims[SC_MAX_DIMS];
    rec->npure = pure_loops(f, st, dims, NULL);
}

/* A THREAD-level producer: in registers over its footprint. */
static void thread_child(build *w, const sc_func *prod, const fp_box *box, int64_t rpb) {
    nest_func *m = member(w, prod->id);
    org mins[SC_MAX_DIMS];
    int64_t ext[SC_MAX_DIMS];
    if (footprint(w, prod, box, mins, ext)) return;
    m->mem = NEST_REGISTER;
    m->ndims = prod->ndims;
    m->elems = 1;
    for (int d = 0; d < prod->ndims; d++) { m->extent[d] = ext[d]; m->elems *= ext[d]; }
    m->bytes = m->elems * sc_type_size(prod->type);
    w->ke->k.nregister++;
    w->ke->k.register_elems += m->elems;
    for (int s = 0; s < prod->nstages && !w->failed; s++) {
        nest_stage *rec = (nest_stage *)m->stages[s];
        fill_stage_head(rec, prod, s, -1);
        for (int k = 0; k < rec->npure; k++) {
            rec->extent[k] = rec->serial[k] = ext[k];
            rec->blocks[k] = 1;
            rec->threads[k] = 1;
        }
        rec->threads_used = 1;
        rec->realizations_per_block = rpb;
        emit_stage(w, prod, s, rec, mins, ext, mins, ext, NULL, NULL, rpb);
    }
}

/* A BLOCK-level producer: in shared memory over its footprint, its own
 * block-level producers first, then one phase per stage. */
static void block_child(build *w, const sc_func *prod, const fp_box *box) {
    kentry *ke = w->ke;
    nest_func *m = member(w, prod->id);
    org mins[SC_MAX_DIMS];
    int64_t ext[SC_MAX_DIMS];
    if (footprint(w, prod, box, mins, ext)) return;
    m->mem = NEST_SHARED;
    m->ndims = prod->ndims;
    m->elems = 1;
    for (int d = 0; d < prod->ndims; d++) { m->extent[d] = ext[d]; m->elems *= ext[d]; }
    m->bytes = m->elems * sc_type_size(prod->type);
    ke->k.nshared++;
    ke->k.shared_bytes += m->bytes;
    const sched_func *sf = w->s->f[prod->id];
    for (int s = 0; s < prod->nstages && !w->failed; s++) {
        fp_box pbox = make_box(prod, s, mins, ext);
        for (int i = 0; i < ke->nmem && !w->failed; i++) {
            int id = ke->mem_ids[i];
            const sched_func *cf = w->s->f[id];
            if (cf->loc == SCHED_BLOCK && cf->at == prod->id && w->cstage[id] == s)
                block_child(w, func_at(w->x->p, id), &pbox);
        }
        if (w->failed) return;
        const sched_tile *t = &sf->tile[s];
        int dims[SC_MAX_DIMS], np = pure_loops(prod, s, dims, NULL);
        if (t->npure != np) {
            failf(w, "the schedule of %s stage %d tiles %d loops; it has %d", prod->name, s, t->npure, np);
            return;
        }
        nest_stage *rec = (nest_stage *)m->stages[s];
        fill_stage_head(rec, prod, s, -1);
        int64_t used = 1, per[SC_MAX_DIMS];
        for (int q = 0; q < np; q++) {
            if (t->threads[q] < 1) { failf(w, "%s: thread counts must be positive", prod->name); return; }
            used *= t->threads[q];
            per[q] = (ext[q] + t->threads[q] - 1) / t->threads[q];
            rec->extent[q] = ext[q];
            rec->blocks[q] = 1;
            rec->threads[q] = t->threads[q];
            rec->serial[q] = per[q];
        }
        if (used > ke->k.nthreads) {
            failf(w, "%s (block level) spreads stage %d over %lld threads, but the block of its kernel has %d",
                  prod->name, s, (long long)used, ke->k.nthreads);
            return;
        }
        rec->threads_used = used;
        rec->realizations_per_block = 1;
        org tb[SC_MAX_DIMS];
        for (int q = 0; q < np; q++) tb[q] = !mins[q].h && t->threads[q] == 1 ? mins[q] : fresh(w);
        emit_stage(w, prod, s, rec, tb, per, mins, ext, NULL, NULL, 1);
    }
}

/* Kernel of stage st of root Func r (lowering's build_kernel).  Members:
 * the Funcs fused into it, by id. */
static void build_kernel(build *w, const sc_func *r, int st) {
    nest_ctx *x = w->x;
    kentry *ke = w->ke;
    const sched_func *sf = w->s->f[r->id];
    const sched_tile *t = &sf->tile[st];
    const bounds_stage *bs = &x->b->funcs[r->id].stages[st];
    int dims[SC_MAX_DIMS], np = pure_loops(r, st, dims, NULL);
    if (t->npure != np) {
        failf(w, "the schedule of %s stage %d tiles %d loops; it has %d", r->name, st, t->npure, np);
        return;
    }
    int64_t ext[SC_MAX_DIMS], mn[SC_MAX_DIMS], blk[SC_MAX_DIMS], nb[SC_MAX_DIMS];
    int64_t nblocks = 1, nthreads = 1;
    for (int k = 0, li = 0; k < np; k++, li++) {
        while (bs->which[li] < 0) li++;
        ext[k] = bs->extent[li];
        mn[k] = bs->min[li];
        if (ext[k] <= 0) { ke->k.root = NULL; return; }
        if (t->threads[k] < 1 || t->serial[k] < 1) { failf(w, "%s: tile sizes must be positive", r->name); return; }
        blk[k] = (int64_t)t->threads[k] * t->serial[k];
        nb[k] = (ext[k] + blk[k] - 1) / blk[k];
        nblocks *= nb[k];
        nthreads *= t->threads[k];
    }
    if (nthreads > (1 << 20)) { failf(w, "%s: %lld threads per block", r->name, (long long)nthreads); return; }
    ke->k.root = r;
    ke->k.stage = st;
    ke->k.nblocks = nblocks;
    ke->k.nthreads = (int)nthreads;
    org base[SC_MAX_DIMS], tb[SC_MAX_DIMS], reg[SC_MAX_DIMS];
    for (int q = 0; q < np; q++) {
        base[q] = nb[q] == 1 ? konst(mn[q]) : fresh(w);
        reg[q] = konst(mn[q]);
    }
    fp_box box = make_box(r, st, base, blk);
    for (int i = 0; i < ke->nmem && !w->failed; i++) {
        int id = ke->mem_ids[i];
        const sched_func *cf = w->s->f[id];
        if (cf->loc == SCHED_BLOCK && cf->at == r->id && w->cstage[id] == st)
            block_child(w, func_at(x->p, id), &box);
    }
    if (w->failed) return;
    nest_stage *rec = ke->root_stage;
    fill_stage_head(rec, r, st, -1);
    int64_t per[SC_MAX_DIMS];
    for (int q = 0; q < np; q++) {
        per[q] = t->serial[q];
        rec->extent[q] = ext[q];
        rec->blocks[q] = nb[q];
        rec->threads[q] = t->threads[q];
        rec->serial[q] = per[q];
        tb[q] = !base[q].h && t->threads[q] == 1 ? base[q] : fresh(w);
    }
    rec->threads_used = nthreads;
    rec->realizations_per_block = 1;
    emit_stage(w, r, st, rec, tb, per, reg, ext, base, blk, 1);
}

/* Fills the totals of a kernel's stage records once nblocks is known. */
static void finish_stage(nest_stage *rec, int64_t nblocks, bool root) {
    rec->realizations = root ? 1 : rec->realizations_per_block * nblocks;
    rec->points_total = rec->realizations * rec->points_per_realization;
}

/* A decision's content, appended to a kernel key (records are compared
 * by value: a state's arena may be freed and its addresses reused). */
static int key_decision(uintptr_t *key, int nkey, int id, const sched_func *sf, const sexpr *se) {
    key[nkey++] = (uintptr_t)id;
    key[nkey++] = (uintptr_t)se;
    key[nkey++] = (uintptr_t)sf->loc | (uintptr_t)(sf->at + 1) << 8;
    if (sf->tile)
        for (int s = 0; s < sf->nstages; s++) {
            const sched_tile *t = &sf->tile[s];
            key[nkey++] = (uintptr_t)t->npure;
            for (int k = 0; k < t->npure; k++)
                key[nkey++] = (uintptr_t)t->threads[k] | (uintptr_t)t->serial[k] << 24;
        }
    return nkey;
}

static uint64_t key_hash(const uintptr_t *key, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)key[i] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
    }
    return h;
}

/* The kernel of stage st of root r under s, from the cache or built. */
static kentry *kernel_of(build *w, const sc_func *r, int st, uintptr_t *key, int *mem_ids) {
    nest_ctx *x = w->x;
    int nkey = 0, nmem = 0;
    key[nkey++] = (uintptr_t)st;
    nkey = key_decision(key, nkey, r->id, w->s->f[r->id], w->se[r->id]);
    for (int i = 0; i < x->n; i++)
        if (w->root[i] == r->id && w->kstage[i] == st) {
            mem_ids[nmem++] = i;
            nkey = key_decision(key, nkey, i, w->s->f[i], w->se[i]);
        }
    uint64_t h = key_hash(key, nkey);
    for (kentry *e = x->ktab[h % TABLE]; e; e = e->next)
        if (e->h == h && e->nkey == nkey && !memcmp(e->key, key, sizeof(uintptr_t) * (size_t)nkey)) {
            x->stats.kernel_hits++;
            return e;
        }
    x->stats.kernel_misses++;
    kentry *ke = ir_alloc(x->arena, sizeof *ke);
    ke->h = h;
    ke->nkey = nkey;
    ke->key = ir_alloc(x->arena, sizeof(uintptr_t) * (size_t)nkey);
    memcpy(ke->key, key, sizeof(uintptr_t) * (size_t)nkey);
    ke->nmem = nmem;
    ke->mem_ids = ir_alloc(x->arena, sizeof(int) * (size_t)(nmem + 1));
    memcpy(ke->mem_ids, mem_ids, sizeof(int) * (size_t)nmem);
    ke->mem = ir_alloc(x->arena, sizeof(nest_func) * (size_t)(nmem + 1));
    ke->root_stage = ir_alloc(x->arena, sizeof(nest_stage));
    for (int i = 0; i < nmem; i++) {
        const sc_func *g = func_at(x->p, mem_ids[i]);
        nest_func *m = &ke->mem[i];
        m->func = g;
        m->loc = w->s->f[g->id]->loc;
        m->at = w->s->f[g->id]->at;
        m->at_stage = w->cstage[g->id];
        m->nstages = g->nstages;
        m->stages = ir_alloc(x->arena, sizeof(nest_stage *) * (size_t)g->nstages);
        for (int s = 0; s < g->nstages; s++) m->stages[s] = ir_alloc(x->arena, sizeof(nest_stage));
    }
    w->ke = ke;
    w->leaf = 0;
    build_kernel(w, r, st);
    if (w->failed) return NULL;   /* the arena keeps the partial entry; it is not cached */
    if (ke->k.root) {
        finish_stage(ke->root_stage, ke->k.nblocks, true);
        for (int i = 0; i < nmem; i++)
            for (int s = 0; s < ke->mem[i].nstages; s++)
                finish_stage((nest_stage *)ke->mem[i].stages[s], ke->k.nblocks, false);
    }
    ke->next = x->ktab[h % TABLE];
    x->ktab[h % TABLE] = ke;
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
        const char *lv = sf->loc == SCHED_BLOCK ? "block" : "thread";
        if (sf->at < 0 || sf->at >= p->funcs.n || func_at(p, sf->at)->kind == FUNC_INPUT)
            return failf(w, "%s is computed at %s level of something that is not a Func", f->name, lv);
        const sc_func *at = func_at(p, sf->at);
        const sched_func *af = s->f[at->id];
        if (!af || af->loc == SCHED_UNDECIDED) continue;      /* not modelled yet */
        if (w->cons[f->id] != at->id || w->cstage[f->id] < 0)
            return failf(w, "%s is computed at %s level of %s, but %s", f->name, lv, at->name,
                         w->cons[f->id] == -2 ? "it has several consumers (a fused Func has exactly one)" :
                         w->cstage[f->id] == -2 ? "several stages of it use it (fusion needs exactly one)" :
                         w->cons[f->id] == -1 ? "nothing uses it" : "that Func does not use it (after inlining)");
        if (af->loc == SCHED_INLINE)
            return failf(w, "%s is computed at %s level of %s, which is inline", f->name, lv, at->name);
        if (sf->loc == SCHED_BLOCK && af->loc == SCHED_THREAD)
            return failf(w, "%s is computed at block level of %s, which is itself at thread level", f->name,
                         at->name);
        for (int st = 1; st < f->nstages; st++)
            for (int d = 0; d < f->ndims; d++) {
                const sc_expr *a = f->stages[st].args[d];
                if (a->kind != E_VAR || strcmp(a->name, f->vars[d]))
                    return failf(w, "%s is fused (%s level) but its update %d writes at a computed coordinate; "
                                 "only root Funcs may", f->name, lv, st);
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
    size_t nn = (size_t)n + 1;
    w.se = xcalloc(nn, sizeof(sexpr *));
    int *ints = xcalloc(4 * nn, sizeof(int));
    w.cons = ints;
    w.cstage = ints + nn;
    w.root = ints + 2 * nn;
    w.kstage = ints + 3 * nn;
    int maxst = 1;
    for (int i = 0; i < n; i++) if (func_at(p, i)->nstages > maxst) maxst = func_at(p, i)->nstages;
    uintptr_t *key = xcalloc(nn * (size_t)(4 + maxst * (1 + SC_MAX_DIMS)) + 8, sizeof(uintptr_t));
    int *mem_ids = xcalloc(nn, sizeof(int));
    nest *out = NULL;
    /* stages after inlining, and consumers */
    for (int i = 0; i < n; i++) {
        w.cons[i] = -1;
        w.root[i] = w.kstage[i] = -1;
        const sched_func *sf = s->f[i];
        if (func_at(p, i)->kind != FUNC_DEFINED || !sf || sf->loc == SCHED_UNDECIDED || sf->loc == SCHED_INLINE)
            continue;
        w.se[i] = stages_of(x, s, i);
        if (w.se[i]->size > NEST_MAX_INLINED) {
            failf(&w, "inlining makes the expression of %s %.3g nodes large (the limit is %d): compute some of "
                  "its producers at root or fused", func_at(p, i)->name, w.se[i]->size, NEST_MAX_INLINED);
            goto done;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!w.se[i]) continue;
        const sc_func *f = func_at(p, i);
        for (int st = 0; st < f->nstages; st++)
            for (int c = 0; c < w.se[i]->ncalls[st]; c++) {
                const sc_func *g = w.se[i]->calls[st][c]->func;
                if (g->kind != FUNC_DEFINED || g->id == i) continue;
                int id = g->id;
                if (w.cons[id] == -1) { w.cons[id] = i; w.cstage[id] = st; }
                else if (w.cons[id] != i) w.cons[id] = -2;
                else if (w.cstage[id] != st) w.cstage[id] = -2;
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
    }
    out = xcalloc(1, sizeof *out);
    out->nfuncs = n;
    out->funcs = xcalloc(nn, sizeof(nest_func *));
    int nk = 0;
    for (int i = 0; i < n; i++)
        if (s->f[i] && s->f[i]->loc == SCHED_ROOT) nk += func_at(p, i)->nstages;
    out->kernels = xcalloc((size_t)nk + 1, sizeof(nest_kernel *));
    nest_func *roots = xcalloc(nn, sizeof(nest_func));
    const nest_stage **sp = xcalloc((size_t)nk + 1, sizeof(nest_stage *));
    int used = 0;
    for (int i = 0; i < p->order.n; i++) {
        const sc_func *f = ir_order_at(p, i);
        const sched_func *sf = f->kind == FUNC_DEFINED ? s->f[f->id] : NULL;
        if (!sf || sf->loc != SCHED_ROOT) continue;
        nest_func *rf = &roots[f->id];
        rf->func = f;
        rf->loc = SCHED_ROOT;
        rf->at = rf->at_stage = -1;
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
            ke->root_stage->kernel = kid;
            rf->stages[st] = ke->root_stage;
            for (int m = 0; m < ke->nmem; m++) {
                nest_func *mf = &ke->mem[m];
                for (int q = 0; q < mf->nstages; q++) ((nest_stage *)mf->stages[q])->kernel = kid;
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
    free(w.se);
    free(ints);
    free(key);
    free(mem_ids);
    return out;
}

void nest_free(nest *n) {
    if (!n) return;
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

static void print_ext(FILE *out, int n, const int64_t *e) {
    for (int i = 0; i < n; i++) fprintf(out, "%s%lld", i ? "x" : "", (long long)e[i]);
}

void nest_print(FILE *out, const sc_pipeline *p, const nest *n) {
    fprintf(out, "# loop nest of %s: %d kernel%s, %d Func%s modelled\n", p->name, n->nkernels,
            n->nkernels == 1 ? "" : "s", n->nmodelled, n->nmodelled == 1 ? "" : "s");
    for (int k = 0; k < n->nkernels; k++) {
        const nest_kernel *kn = n->kernels[k];
        fprintf(out, "kernel %d %s.%d: %lld blocks x %d threads, shared %lld B (%d), registers %lld (%d), staged %lld (%d)\n",
                k, kn->root->name, kn->stage, (long long)kn->nblocks, kn->nthreads, (long long)kn->shared_bytes,
                kn->nshared, (long long)kn->register_elems, kn->nregister, (long long)kn->staged_elems, kn->nstaged);
    }
    for (int i = 0; i < n->nfuncs; i++) {
        const nest_func *f = n->funcs[i];
        if (!f) continue;
        fprintf(out, "%s: %s", f->func->name, f->loc == SCHED_ROOT ? "root" : f->loc == SCHED_BLOCK ? "block" : "thread");
        if (f->at >= 0) fprintf(out, " of %s.%d", func_at(p, f->at)->name, f->at_stage);
        fprintf(out, ", %s ", nest_mem_name(f->mem));
        print_ext(out, f->ndims, f->extent);
        fprintf(out, " = %lld B\n", (long long)f->bytes);
        for (int st = 0; st < f->nstages; st++) {
            const nest_stage *r = f->stages[st];
            if (!r) continue;
            fprintf(out, "  stage %d (kernel %d): extent ", st, r->kernel);
            print_ext(out, r->npure, r->extent);
            fprintf(out, ", blocks ");
            print_ext(out, r->npure, r->blocks);
            fprintf(out, ", threads ");
            for (int k = 0; k < r->npure; k++) fprintf(out, "%s%d", k ? "x" : "", r->threads[k]);
            fprintf(out, ", serial ");
            print_ext(out, r->npure, r->serial);
            if (r->nred) { fprintf(out, ", reduction "); print_ext(out, r->nred, r->red); }
            fprintf(out, "; realizations %lld, points %lld per realization, %lld in all\n",
                    (long long)r->realizations, (long long)r->points_per_realization, (long long)r->points_total);
            for (int a = 0; a < r->naccess; a++) {
                const nest_access *ac = &r->access[a];
                char *txt = ir_expr_to_string(ac->call);
                fprintf(out, "    %s %s%s: thread %lld B, block %lld B, realization %lld B; stride",
                        txt, nest_mem_name(ac->mem), ac->staged ? " staged" : "", (long long)ac->bytes_thread,
                        (long long)ac->bytes_block, (long long)ac->bytes_realization);
                free(txt);
                for (int k = 0; k < r->npure; k++) fprintf(out, " %g", ac->stride_serial[k]);
                fprintf(out, "\n");
            }
        }
    }
}
