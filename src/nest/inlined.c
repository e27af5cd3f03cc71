/*
 * inlined.c - stages after inlining (inlined.h).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "analysis.h"
#include "fusion.h"
#include "inlined.h"
#include "nest.h"

#define INLINED_TABLE 4096   /* hash buckets (chained) */

struct inlined_cache {
    const sc_pipeline *p;
    ir_arena *arena;               /* the call graph, loops and stage expressions */
    int n;
    inlined_loops **loops;         /* [fid][stage] */
    int *ndirect;                  /* [fid] distinct Funcs called, any stage */
    int **direct;
    inlined_stages *etab[INLINED_TABLE];
    int64_t hits, misses;
    int *mark, *stack, *sig;       /* scratch for the signatures */
    int stamp;
};

static sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

/* Variable names: the same pointer, or the same text (the first
 * character tells most apart). */
static inline bool same_name(const char *a, const char *b) {
    return a == b || (a[0] == b[0] && !strcmp(a, b));
}

/* ---- the pipeline's call graph ---------------------------------------- */

typedef struct { inlined_cache *x; int self; int *list; int n; } callee_walk;

static void note_callee(const sc_expr *e, void *user) {
    callee_walk *w = user;
    if (e->kind != E_CALL || e->func->kind != FUNC_DEFINED || e->func->id == w->self) return;
    for (int i = 0; i < w->n; i++) if (w->list[i] == e->func->id) return;
    w->list[w->n++] = e->func->id;
}

inlined_cache *inlined_cache_new(const sc_pipeline *p) {
    inlined_cache *x = base_calloc(1, sizeof *x);
    x->p = p;
    x->arena = ir_arena_new();
    x->n = p->funcs.n;
    size_t n = (size_t)x->n + 1;
    x->ndirect = base_calloc(n, sizeof(int));
    x->direct = base_calloc(n, sizeof(int *));
    x->mark = base_calloc(n, sizeof(int));
    x->stack = base_calloc(n, sizeof(int));
    x->sig = base_calloc(n, sizeof(int));
    x->loops = ir_alloc(x->arena, sizeof(inlined_loops *) * n);
    for (int i = 0; i < x->n; i++) {
        const sc_func *f = func_at(p, i);
        x->loops[i] = ir_alloc(x->arena, sizeof(inlined_loops) * (size_t)(f->nstages + 1));
        for (int st = 0; st < f->nstages; st++) {
            inlined_loops *l = &x->loops[i][st];
            int which[2 * SC_MAX_DIMS];
            l->nloops = ir_stage_loops(f, st, which);
            for (int k = 0; k < l->nloops; k++)
                if (which[k] >= 0) {
                    l->li[l->npure] = k;
                    l->dims[l->npure++] = which[k];
                }
        }
    }
    int *tmp = base_calloc(n, sizeof(int));
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

void inlined_cache_free(inlined_cache *x) {
    if (!x) return;
    ir_arena_free(x->arena);
    free(x->ndirect);
    free(x->direct);
    free(x->mark);
    free(x->stack);
    free(x->sig);
    free(x);
}

const inlined_loops *inlined_loops_of(const inlined_cache *x, int fid, int st) { return &x->loops[fid][st]; }

void inlined_cache_stats(const inlined_cache *x, int64_t *hits, int64_t *misses) {
    *hits = x->hits;
    *misses = x->misses;
}

static bool is_inline(const sched_state *s, int id) {
    return s->f[id] && s->f[id]->loc == SCHED_INLINE;
}

/* ---- stages after inlining ------------------------------------------------ */

/* The inline Funcs reachable from fid through inline Funcs, in DFS
 * order, into x->sig; returns the count. */
static int inline_sig(inlined_cache *x, const sched_state *s, int fid) {
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

static const inlined_stages *stages_of(inlined_cache *x, const sched_state *s, int fid, bool calls);

/* An inline Func's size with its own inline calls expanded: its cached
 * inlined_stages (under the same state, so the same inline set). */
typedef struct { inlined_cache *x; const sched_state *s; } size_user;

static double inline_func_size(void *user, const sc_func *g) {
    size_user *u = user;
    return stages_of(u->x, u->s, g->id, false)->size;
}

/* Calls of inline Funcs replaced by their (inlined) values, as lowering's
 * inline_expr does. */
static sc_expr *inline_expr(inlined_cache *x, const sched_state *s, sc_expr *e) {
    sc_expr *r = e;
    for (int i = 0; i < e->nargs; i++) {
        sc_expr *v = inline_expr(x, s, e->args[i]);
        if (v != e->args[i]) {
            if (r == e) r = ir_copy_node(x->arena, e);
            r->args[i] = v;
        }
    }
    if (r->kind == E_CALL && r->func->kind == FUNC_DEFINED && is_inline(s, r->func->id)) {
        const sc_func *g = r->func;
        inlined_stages *ge = (inlined_stages *)stages_of(x, s, g->id, false);
        assert(ge->fits);         /* no larger than the caller, which fits */
        if (!ge->val0) ge->val0 = inline_expr(x, s, g->stages[0].value);
        ir_subst_map m = { 0 };
        for (int d = 0; d < g->ndims; d++) {
            m.names[m.n] = g->vars[d];
            m.vals[m.n++] = r->args[d];
        }
        return ir_subst(x->arena, ge->val0, &m);
    }
    return r;
}

static uint64_t sig_hash(int fid, int n, const int *sig) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)fid;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)sig[i]) * 1099511628211ULL;
    return h;
}

/* Whether e is a pure variable plus a constant, built with + and - of
 * constants only (then fp_arg's span is the variable's, shifted). */
static bool var_shift(const sc_expr *e, const char **var, int64_t *c) {
    if (e->kind == E_VAR) { *var = e->name; *c = 0; return true; }
    if (e->kind != E_BINARY || (e->op != SC_ADD && e->op != SC_SUB)) return false;
    const sc_expr *k = e->args[1];
    if (k->kind != E_CONST || k->type == SC_F32 || !var_shift(e->args[0], var, c)) return false;
    *c += e->op == SC_ADD ? k->c.i : -k->c.i;
    return true;
}

static void shifts_of(const sc_func *f, int st, inlined_stages *e, ir_arena *a) {
    size_t m = (size_t)(e->ncalls[st] + 1) * SC_MAX_DIMS;
    e->lin_k[st] = ir_alloc(a, m);
    e->lin_c[st] = ir_alloc(a, sizeof(int64_t) * m);
    e->prog[st] = ir_alloc(a, sizeof(fp_prog) * m);
    int dims[SC_MAX_DIMS], np = fusion_pure_dims(f, st, dims);
    const char *names[SC_MAX_DIMS];
    for (int k = 0; k < np; k++) names[k] = f->vars[dims[k]];
    for (int i = 0; i < e->ncalls[st]; i++) {
        const sc_expr *call = e->calls[st][i];
        for (int d = 0; d < call->nargs && d < SC_MAX_DIMS; d++) {
            size_t q = (size_t)i * SC_MAX_DIMS + (size_t)d;
            const char *v;
            int64_t c;
            e->lin_k[st][q] = -1;
            if (var_shift(call->args[d], &v, &c))
                for (int k = np - 1; k >= 0; k--)
                    if (same_name(f->vars[dims[k]], v)) { e->lin_k[st][q] = (signed char)k; e->lin_c[st][q] = c; }
            if (e->lin_k[st][q] < 0) e->prog[st][q] = fp_compile(a, call->args[d], np, names);
        }
    }
}

/* The affine row of a coordinate that is a pure variable plus and minus
 * integer constants (nearly every coordinate of a stencil chain once
 * inlined): deps_linearise's result without its general walk, the same
 * numbers (coefficient 1 on the variable's loop, the constants summed).
 * false for anything else (then deps_linearise is asked). */
static bool shift_row(const sc_func *f, const inlined_loops *lp, const sc_expr *e, int nl, double *coef, double *off) {
    int64_t c = 0;
    while (e->kind == E_BINARY) {
        const sc_expr *k = e->args[1];
        if ((e->op != SC_ADD && e->op != SC_SUB) || e->type == SC_F32 || e->type == SC_BOOL || k->kind != E_CONST ||
            k->type == SC_F32 || k->c.i > INT32_MAX || k->c.i < -INT32_MAX || c > INT32_MAX || c < -INT32_MAX)
            return false;
        c += e->op == SC_ADD ? k->c.i : -k->c.i;
        e = e->args[0];
    }
    if (e->kind != E_VAR) return false;
    /* deps_linearise's loop of a variable: the first whose dimension has its name */
    for (int k = 0; k < lp->npure; k++)
        if (same_name(f->vars[lp->dims[k]], e->name)) {
            for (int l = 0; l < nl; l++) coef[l] = 0;
            coef[lp->li[k]] = 1;
            *off = (double)c;
            return true;
        }
    return false;
}

/* Mixes n doubles into h a word at a time (their bits: equal rows hash
 * alike); the table takes the low bits, which small integers as doubles
 * leave zero, so the caller finishes with hash_finish. */
static uint64_t mix_doubles(uint64_t h, const double *v, int n) {
    for (int i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, &v[i], sizeof b);
        h = (h ^ b) * 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
    }
    return h;
}

static uint64_t hash_finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* r with its rows copied into the arena. */
static inlined_access keep_rows(inlined_cache *x, inlined_access r, int nd, int nl) {
    double *c = ir_alloc(x->arena, sizeof(double) * (size_t)(nd * nl + 1));
    double *o = ir_alloc(x->arena, sizeof(double) * (size_t)(nd + 1));
    memcpy(c, r.coef, sizeof(double) * (size_t)(nd * nl + 1));
    memcpy(o, r.off, sizeof(double) * (size_t)(nd + 1));
    r.coef = c;
    r.off = o;
    return r;
}

/* The accesses of stage st (see inlined_access).  Plain accesses are matched by
 * a hash of their producer and rows (open addressing over the reps). */
static void group_accesses(inlined_cache *x, const sc_func *f, int st, inlined_stages *e) {
    const inlined_loops *lp = &x->loops[f->id][st];
    int nl = lp->nloops, nc = e->ncalls[st];
    inlined_access *reps = ir_alloc(x->arena, sizeof(inlined_access) * (size_t)(nc + 1));
    int cap = 16;
    while (cap < 2 * nc) cap *= 2;
    int *slot = base_calloc((size_t)cap, sizeof(int));   /* rep + 1; 0: empty */
    uint64_t *hash = base_calloc((size_t)nc + 1, sizeof(uint64_t));
    int n = 0;
    /* a call's rows are worked out here and kept only for a new access
     * (the kept ones then lie together in the arena) */
    double coef[SC_MAX_DIMS * 2 * SC_MAX_DIMS + 1], off[SC_MAX_DIMS + 1];
    for (int i = 0; i < nc; i++) {
        const sc_expr *call = e->calls[st][i];
        int nd = call->func->ndims;
        memset(coef, 0, sizeof(double) * (size_t)(nd * nl + 1));
        memset(off, 0, sizeof(double) * (size_t)(nd + 1));
        inlined_access r = { call, call->func, i, 1, true, true, coef, off };
        for (int d = 0; d < nd && r.affine; d++) {
            if (shift_row(f, lp, call->args[d], nl, &r.coef[d * nl], &r.off[d])) continue;
            deps_ratio dc[2 * SC_MAX_DIMS], doff;
            bool clamped = false;
            if (!deps_linearise(f, st, call->args[d], dc, &doff, &clamped)) { r.affine = r.plain = false; break; }
            r.plain &= !clamped;
            for (int l = 0; l < nl; l++) r.coef[d * nl + l] = (double)dc[l].num / (double)dc[l].den;
            r.off[d] = (double)doff.num / (double)doff.den;
        }
        if (!r.plain) {
            reps[n++] = keep_rows(x, r, nd, nl);
            continue;
        }
        uint64_t h = mix_doubles(1469598103934665603ULL ^ (uint64_t)(uintptr_t)call->func, r.coef, nd * nl);
        h = hash_finish(mix_doubles(h, r.off, nd));
        int q = (int)(h & (uint64_t)(cap - 1)), j = -1;
        for (; slot[q]; q = (q + 1) & (cap - 1)) {
            const inlined_access *o = &reps[slot[q] - 1];
            if (hash[slot[q] - 1] == h && o->producer == call->func &&
                !memcmp(o->coef, r.coef, sizeof(double) * (size_t)(nd * nl)) &&
                !memcmp(o->off, r.off, sizeof(double) * (size_t)nd)) {
                j = slot[q] - 1;
                break;
            }
        }
        if (j >= 0) {
            reps[j].count++;
        } else {
            hash[n] = h;
            slot[q] = n + 1;
            reps[n++] = keep_rows(x, r, nd, nl);
        }
    }
    free(slot);
    free(hash);
    e->nacc[st] = n;
    e->acc[st] = reps;
}

/* Distinct calls, first seen first; slot: open addressing over them by
 * hash (a stage may have hundreds), malloc'd. */
typedef struct {
    ir_vec calls;
    uint64_t *hash;
    int *slot, cap;
    ir_arena *a;
} call_set;

/* The entry of m that ir_subst puts in place of e, or -1. */
static int subst_index(const sc_expr *e, const ir_subst_map *m) {
    if (e->kind != E_VAR) return -1;
    for (int i = 0; i < m->n; i++)
        if (same_name(m->names[i], e->name)) return i;
    return -1;
}

/* The call set hashes calls with ir_expr_hash.  subst_hash gives
 * ir_expr_hash(ir_subst(e, m)) without building the tree, from the hashes
 * of m's values (mh) and ir_expr_hash's parts, so that a call an inline
 * Func's call list gives again (most of a stencil chain's) is found
 * without being made. */
static uint64_t subst_hash(const sc_expr *e, const ir_subst_map *m, const uint64_t *mh) {
    int k = subst_index(e, m);
    if (k >= 0) return mh[k];
    uint64_t h = ir_expr_node_hash(e);
    for (int i = 0; i < e->nargs; i++) h = ir_hash_mix(h, subst_hash(e->args[i], m, mh));
    return h;
}

/* Whether the nodes a and b are equal apart from their arguments, as
 * ir_expr_equal decides (names compared by pointer first). */
static bool same_node(const sc_expr *a, const sc_expr *b) {
    if (a->kind != b->kind || a->type != b->type || a->nargs != b->nargs) return false;
    switch (a->kind) {
    case E_CONST: return a->type == SC_F32 ? a->c.f == b->c.f : a->c.i == b->c.i;
    case E_VAR: return same_name(a->name, b->name);
    case E_RVAR: return same_name(a->rdom->name, b->rdom->name) && a->dim == b->dim;
    case E_PARAM: return same_name(a->param->name, b->param->name);
    case E_CALL: return a->func == b->func || !strcmp(a->func->name, b->func->name);
    case E_BINARY: case E_UNARY: case E_MATH: return a->op == b->op;
    default: return true;
    }
}

/* ir_expr_equal(a, b). */
static bool tree_equal(const sc_expr *a, const sc_expr *b) {
    if (a == b) return true;
    if (!a || !b || !same_node(a, b)) return false;
    for (int i = 0; i < a->nargs; i++)
        if (!tree_equal(a->args[i], b->args[i])) return false;
    return true;
}

/* Whether a equals ir_subst(e, m). */
static bool subst_equal(const sc_expr *a, const sc_expr *e, const ir_subst_map *m) {
    int k = subst_index(e, m);
    if (k >= 0) return tree_equal(a, m->vals[k]);
    if (!same_node(a, e)) return false;
    for (int i = 0; i < a->nargs; i++)
        if (!subst_equal(a->args[i], e->args[i], m)) return false;
    return true;
}

/* Room for one more call. */
static void call_room(call_set *cs) {
    if (2 * (cs->calls.n + 1) <= cs->cap) return;
    cs->cap = cs->cap ? 2 * cs->cap : 64;
    free(cs->slot);
    cs->slot = base_calloc((size_t)cs->cap, sizeof(int));
    cs->hash = realloc(cs->hash, sizeof(uint64_t) * (size_t)cs->cap);
    if (!cs->hash) abort();
    for (int i = 0; i < cs->cap; i++) cs->slot[i] = -1;
    for (int k = 0; k < cs->calls.n; k++) {
        int i = (int)(cs->hash[k] & (uint64_t)(cs->cap - 1));
        while (cs->slot[i] >= 0) i = (i + 1) & (cs->cap - 1);
        cs->slot[i] = k;
    }
}

/* Adds c (hash h) at empty slot i. */
static void call_put(call_set *cs, int i, uint64_t h, sc_expr *c) {
    cs->slot[i] = cs->calls.n;
    cs->hash[cs->calls.n] = h;
    ir_vec_push(cs->a, &cs->calls, c);
}

static void add_call(call_set *cs, sc_expr *c) {
    uint64_t h = ir_expr_hash(c);
    call_room(cs);
    int i = (int)(h & (uint64_t)(cs->cap - 1));
    for (int k; (k = cs->slot[i]) >= 0; i = (i + 1) & (cs->cap - 1))
        if (cs->hash[k] == h && tree_equal(cs->calls.items[k], c)) return;
    call_put(cs, i, h, c);
}

/* Adds ir_subst(c, m) (mh: the hashes of m's values), made only when new. */
static void add_subst(call_set *cs, sc_expr *c, const ir_subst_map *m, const uint64_t *mh) {
    uint64_t h = subst_hash(c, m, mh);
    call_room(cs);
    int i = (int)(h & (uint64_t)(cs->cap - 1));
    for (int k; (k = cs->slot[i]) >= 0; i = (i + 1) & (cs->cap - 1))
        if (cs->hash[k] == h && subst_equal(cs->calls.items[k], c, m)) return;
    call_put(cs, i, h, ir_subst(cs->a, c, m));
}

static void ensure_calls(inlined_cache *x, const sched_state *s, inlined_stages *e);

/* Whether e, once inlined, uses the variable `name`. */
static bool uses_var(inlined_cache *x, const sched_state *s, const sc_expr *e, const char *name) {
    if (e->kind == E_VAR) return same_name(e->name, name);
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED && is_inline(s, e->func->id)) {
        inlined_stages *ge = (inlined_stages *)stages_of(x, s, e->func->id, true);
        for (int d = 0; d < e->nargs; d++)
            if (ge->uses[d] && uses_var(x, s, e->args[d], name)) return true;
        return false;
    }
    for (int i = 0; i < e->nargs; i++)
        if (uses_var(x, s, e->args[i], name)) return true;
    return false;
}

/* The distinct calls of e once inlined, first seen first, composed from
 * the inline Funcs' own call lists rather than from the inlined tree
 * (which can be thousands of times larger). */
static void walk_calls(inlined_cache *x, const sched_state *s, const sc_expr *e, call_set *cs) {
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED && is_inline(s, e->func->id)) {
        const sc_func *g = e->func;
        inlined_stages *ge = (inlined_stages *)stages_of(x, s, g->id, true);
        ir_subst_map m = { 0 };
        uint64_t mh[SC_MAX_DIMS];
        for (int d = 0; d < g->ndims; d++) {
            m.names[m.n] = g->vars[d];
            m.vals[m.n] = inline_expr(x, s, e->args[d]);
            mh[m.n] = ir_expr_hash(m.vals[m.n]);
            m.n++;
        }
        for (int i = 0; i < ge->ncalls[0]; i++) add_subst(cs, (sc_expr *)ge->calls[0][i], &m, mh);
        for (int d = 0; d < g->ndims; d++)
            if (ge->uses[d]) walk_calls(x, s, e->args[d], cs);
        return;
    }
    if (e->kind == E_CALL) add_call(cs, inline_expr(x, s, (sc_expr *)e));
    for (int i = 0; i < e->nargs; i++) walk_calls(x, s, e->args[i], cs);
}

/* The calls of e's stages (and, for stage 0, which variables it uses). */
static void ensure_calls(inlined_cache *x, const sched_state *s, inlined_stages *e) {
    if (e->calls || !e->fits) return;
    const sc_func *f = func_at(x->p, e->fid);
    int *ncalls = ir_alloc(x->arena, sizeof(int) * (size_t)f->nstages);
    const sc_expr ***calls = ir_alloc(x->arena, sizeof(sc_expr **) * (size_t)f->nstages);
    for (int st = 0; st < f->nstages; st++) {
        const ir_stage *sg = &f->stages[st];
        call_set cs = { {0}, NULL, NULL, 0, x->arena };
        walk_calls(x, s, sg->value, &cs);
        for (int d = 0; d < sg->nargs; d++) walk_calls(x, s, sg->args[d], &cs);
        ncalls[st] = cs.calls.n;
        calls[st] = (const sc_expr **)cs.calls.items;
        free(cs.slot);
        free(cs.hash);
    }
    e->uses = ir_alloc(x->arena, sizeof(bool) * (size_t)(f->ndims + 1));
    for (int d = 0; d < f->ndims; d++) e->uses[d] = uses_var(x, s, f->stages[0].value, f->vars[d]);
    e->ncalls = ncalls;
    e->calls = calls;
    e->callee = ir_alloc(x->arena, sizeof(const sc_func **) * (size_t)f->nstages);
    for (int st = 0; st < f->nstages; st++) {
        const sc_func **c = ir_alloc(x->arena, sizeof(const sc_func *) * (size_t)(ncalls[st] + 1));
        for (int i = 0; i < ncalls[st]; i++) c[i] = calls[st][i]->func;
        e->callee[st] = c;
    }
}

/* The fallbacks, shortcuts and accesses of e's stages (non-inline use). */
static void ensure_accesses(inlined_cache *x, const sched_state *s, inlined_stages *e) {
    ensure_calls(x, s, e);
    if (e->acc || !e->fits) return;
    const sc_func *f = func_at(x->p, e->fid);
    /* the fallbacks' arrays are made when a coordinate first needs one */
    e->fb = ir_alloc(x->arena, sizeof(fp_span *) * (size_t)f->nstages);
    e->fb_done = ir_alloc(x->arena, sizeof(unsigned char *) * (size_t)f->nstages);
    e->lin_k = ir_alloc(x->arena, sizeof(signed char *) * (size_t)f->nstages);
    e->lin_c = ir_alloc(x->arena, sizeof(int64_t *) * (size_t)f->nstages);
    e->prog = ir_alloc(x->arena, sizeof(fp_prog *) * (size_t)f->nstages);
    for (int st = 0; st < f->nstages; st++) shifts_of(f, st, e, x->arena);
    e->nacc = ir_alloc(x->arena, sizeof(int) * (size_t)f->nstages);
    inlined_access **acc = ir_alloc(x->arena, sizeof(inlined_access *) * (size_t)f->nstages);
    e->acc = acc;
    for (int st = 0; st < f->nstages; st++) group_accesses(x, f, st, e);
}

/* f's stages after inlining under s (cached), with their calls when
 * `calls`.  An inline Func's entry serves the Funcs that inline it. */
static const inlined_stages *stages_of(inlined_cache *x, const sched_state *s, int fid, bool calls) {
    int n = inline_sig(x, s, fid);
    uint64_t h = sig_hash(fid, n, x->sig);
    for (inlined_stages *e = x->etab[h % INLINED_TABLE]; e; e = e->next)
        if (e->h == h && e->fid == fid && e->nsig == n && !memcmp(e->sig, x->sig, sizeof(int) * (size_t)n)) {
            x->hits++;
            if (calls) ensure_calls(x, s, e);
            return e;
        }
    x->misses++;
    const sc_func *f = func_at(x->p, fid);
    inlined_stages *e = ir_alloc(x->arena, sizeof *e);
    e->fid = fid;
    e->nsig = n;
    e->h = h;
    e->sig = ir_alloc(x->arena, sizeof(int) * (size_t)(n + 1));
    memcpy(e->sig, x->sig, sizeof(int) * (size_t)n);
    /* (recursion below reuses the scratch signature: it is copied) */
    for (int st = 0; st < f->nstages; st++) {
        size_user u = { x, s };
        double v = fusion_inlined_size(s, f->stages[st].value, inline_func_size, &u);
        if (v > e->size) e->size = v;
    }
    e->fits = e->size <= NEST_MAX_INLINED;
    e->next = x->etab[h % INLINED_TABLE];
    x->etab[h % INLINED_TABLE] = e;
    if (calls) ensure_calls(x, s, e);
    return e;
}

inlined_stages *inlined_stages_of(inlined_cache *x, const sched_state *s, int fid) {
    inlined_stages *e = (inlined_stages *)stages_of(x, s, fid, true);
    ensure_accesses(x, s, e);
    return e;
}

fp_span inlined_fallback(inlined_cache *x, const bounds_result *b, const inlined_stages *e, const fp_box *box,
                         int call, int d) {
    int st = box->stage;
    if (!e->fb[st]) {
        size_t m = (size_t)(e->ncalls[st] + 1) * SC_MAX_DIMS;
        e->fb[st] = ir_alloc(x->arena, sizeof(fp_span) * m);
        e->fb_done[st] = ir_alloc(x->arena, m);
    }
    size_t k = (size_t)call * SC_MAX_DIMS + (size_t)d;
    if (!e->fb_done[st][k]) {
        e->fb[st][k] = fp_fallback(b, e->calls[st][call]->args[d], box);
        e->fb_done[st][k] = 1;
    }
    return e->fb[st][k];
}
