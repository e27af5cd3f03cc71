/*
 * fusion.c - the consumer graph and the fusion rules (fusion.h).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "fusion.h"

struct fusion_graph {
    const sc_pipeline *p;
    int n;                      /* funcs */
    fusion_use **callers;       /* [f] the stages that call f directly (not f itself) */
    int **sites;                /* [f][i]: how many calls of f callers[f][i] makes per point */
    int *ncallers;
    int max_uses;
    int *mark;                  /* [f] generation marks for walks */
    int gen;
    int *stack;
    double *evals;              /* [f] fusion_inline_evaluations' figures, */
    int *evals_mark;            /* valid where evals_mark is evals_gen */
    int evals_gen;
};

static const sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

/* ---- the consumer graph ------------------------------------------------- */

typedef struct { fusion_graph *x; int caller, stage; } call_walk;

static void add_caller(fusion_graph *x, int callee, int caller, int stage) {
    for (int i = 0; i < x->ncallers[callee]; i++)
        if (x->callers[callee][i].func == caller && x->callers[callee][i].stage == stage) {
            x->sites[callee][i]++;
            return;
        }
    int n = x->ncallers[callee];
    fusion_use *c = realloc(x->callers[callee], sizeof(fusion_use) * (size_t)(n + 1));
    int *k = realloc(x->sites[callee], sizeof(int) * (size_t)(n + 1));
    if (!c || !k) abort();
    c[n] = (fusion_use){ caller, stage };
    k[n] = 1;
    x->callers[callee] = c;
    x->sites[callee] = k;
    x->ncallers[callee] = n + 1;
}

static void note_call(const sc_expr *e, void *user) {
    call_walk *w = user;
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED && e->func->id != w->caller)
        add_caller(w->x, e->func->id, w->caller, w->stage);
}

fusion_graph *fusion_graph_new(const sc_pipeline *p) {
    fusion_graph *x = base_calloc(1, sizeof *x);
    x->p = p;
    x->n = p->funcs.n;
    x->callers = base_calloc((size_t)x->n + 1, sizeof(fusion_use *));
    x->sites = base_calloc((size_t)x->n + 1, sizeof(int *));
    x->evals = base_calloc((size_t)x->n + 1, sizeof(double));
    x->evals_mark = base_calloc((size_t)x->n + 1, sizeof(int));
    x->ncallers = base_calloc((size_t)x->n + 1, sizeof(int));
    x->mark = base_calloc((size_t)x->n + 1, sizeof(int));
    x->stack = base_calloc((size_t)x->n + 1, sizeof(int));
    int stages = 0;
    for (int i = 0; i < x->n; i++) {
        const sc_func *g = func_at(p, i);
        if (g->kind != FUNC_DEFINED) continue;
        stages += g->nstages;
        for (int st = 0; st < g->nstages; st++) {
            call_walk w = { x, i, st };
            ir_visit(g->stages[st].value, note_call, &w);
            for (int d = 0; d < g->stages[st].nargs; d++) ir_visit(g->stages[st].args[d], note_call, &w);
        }
    }
    x->max_uses = stages + 1;
    return x;
}

void fusion_graph_free(fusion_graph *x) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) {
        free(x->callers[i]);
        free(x->sites[i]);
    }
    free(x->callers);
    free(x->sites);
    free(x->evals);
    free(x->evals_mark);
    free(x->ncallers);
    free(x->mark);
    free(x->stack);
    free(x);
}

int fusion_max_uses(const fusion_graph *x) { return x->max_uses; }

static int use_cmp(const void *a, const void *b) {
    const fusion_use *u = a, *v = b;
    if (u->func != v->func) return u->func < v->func ? -1 : 1;
    return (u->stage > v->stage) - (u->stage < v->stage);
}

static bool is_inline(const sched_state *s, int g) { return s->f[g] && s->f[g]->loc == SCHED_INLINE; }

int fusion_consumers(fusion_graph *x, const sched_state *s, int fid, fusion_use *out) {
    int n = 0, top = 0;
    x->gen++;
    x->stack[top++] = fid;
    x->mark[fid] = x->gen;
    while (top > 0) {
        int h = x->stack[--top];
        for (int i = 0; i < x->ncallers[h]; i++) {
            fusion_use u = x->callers[h][i];
            if (u.func == fid) continue;
            if (is_inline(s, u.func)) {
                if (x->mark[u.func] != x->gen) {
                    x->mark[u.func] = x->gen;
                    x->stack[top++] = u.func;
                }
                continue;
            }
            bool seen = false;
            for (int k = 0; k < n && !seen; k++) seen = out[k].func == u.func && out[k].stage == u.stage;
            if (!seen) {
                assert(n < x->max_uses);
                out[n++] = u;
            }
        }
    }
    qsort(out, (size_t)n, sizeof *out, use_cmp);
    return n;
}

/* ---- inline recompute ------------------------------------------------------ */

/* Points of stage st of a non-inline f: its loops over the whole region
 * (reduction loops included). */
static double stage_points(const bounds_result *b, int f, int st) {
    const bounds_stage *bs = &b->funcs[f].stages[st];
    double n = 1;
    for (int i = 0; i < bs->nloops; i++) n *= bs->extent[i] > 0 ? (double)bs->extent[i] : 1;
    return n;
}

/* How many times f's value is evaluated in s: its region's points when it
 * is not inline, else the sum over its callers' stages of their call
 * sites times their evaluations (memoized for one walk). */
static double evaluations(fusion_graph *x, const bounds_result *b, const sched_state *s, int f) {
    if (!is_inline(s, f)) return stage_points(b, f, 0);
    if (x->evals_mark[f] == x->evals_gen) return x->evals[f];
    double n = 0;
    for (int i = 0; i < x->ncallers[f]; i++) {
        fusion_use u = x->callers[f][i];
        double pts = is_inline(s, u.func) ? evaluations(x, b, s, u.func) : stage_points(b, u.func, u.stage);
        n += (double)x->sites[f][i] * pts;
    }
    x->evals_mark[f] = x->evals_gen;
    x->evals[f] = n;
    return n;
}

double fusion_inline_evaluations(fusion_graph *x, const bounds_result *b, const sched_state *s, int fid) {
    if (!is_inline(s, fid)) return 1;
    x->evals_gen++;
    double region = 1;
    const bounds_func *bf = &b->funcs[fid];
    for (int d = 0; d < bf->ndims; d++) region *= bf->extent[d] > 0 ? (double)bf->extent[d] : 1;
    return evaluations(x, b, s, fid) / region;
}

static int value_ops(const sc_expr *e) {
    if (e->kind == E_CALL) return 0;
    int n = e->kind == E_BINARY || e->kind == E_UNARY || e->kind == E_SELECT || e->kind == E_MATH;
    for (int i = 0; i < e->nargs; i++) n += value_ops(e->args[i]);
    return n;
}

int fusion_value_ops(const sc_func *f) {
    int n = 0;
    for (int st = 0; st < f->nstages; st++) n += value_ops(f->stages[st].value);
    return n;
}

/* ---- loops ------------------------------------------------------------------ */

int fusion_pure_dims(const sc_func *f, int st, int *dims) {
    int which[2 * SC_MAX_DIMS], n = ir_stage_loops(f, st, which), np = 0;
    for (int i = 0; i < n; i++) if (which[i] >= 0) dims[np++] = which[i];
    return np;
}

int fusion_pure_extents(const bounds_result *b, const sc_func *f, int st, int64_t *ext) {
    const bounds_stage *bs = &b->funcs[f->id].stages[st];
    int np = 0;
    for (int i = 0; i < bs->nloops; i++)
        if (bs->which[i] >= 0) ext[np++] = bs->extent[i] > 0 ? bs->extent[i] : 1;
    return np;
}

bool fusion_pure_updates(const sc_func *f) {
    for (int st = 1; st < f->nstages; st++)
        for (int d = 0; d < f->ndims; d++) {
            const sc_expr *a = f->stages[st].args[d];
            if (a->kind != E_VAR || strcmp(a->name, f->vars[d])) return false;
        }
    return true;
}

/* ---- fusion ------------------------------------------------------------------ */

static bool fused(const sched_func *sf) { return sf && (sf->loc == SCHED_BLOCK || sf->loc == SCHED_THREAD); }

static int fusion(fusion_graph *x, const sched_state *s, int fid, sched_loc loc, int at, int *stage, char *err,
                  size_t errlen, int depth);

/* The stage of s->f[g]->at that fused g is computed in (-1: illegal). */
static int stage_at(fusion_graph *x, const sched_state *s, int g, int depth) {
    const sched_func *sf = s->f[g];
    int st = -1;
    if (!fused(sf) || depth > x->n) return -1;
    if (fusion(x, s, g, sf->loc, sf->at, &st, NULL, 0, depth + 1) != 0) return -1;
    return st;
}

int fusion_stage_at(fusion_graph *x, const sched_state *s, int fid) { return stage_at(x, s, fid, 0); }

/* The rules of sched.h for fid at loc of `at`; see fusion_fusion. */
static int fusion(fusion_graph *x, const sched_state *s, int fid, sched_loc loc, int at, int *stage, char *err,
                  size_t errlen, int depth) {
    const sc_pipeline *p = x->p;
    const sc_func *f = func_at(p, fid);
    const char *lv = sched_loc_name(loc);
    if (at < 0 || at >= x->n || func_at(p, at)->kind != FUNC_DEFINED)
        return base_fail(err, errlen, "%s: computed at %s level of something that is not a Func (id %d)", f->name, lv, at);
    const sc_func *af = func_at(p, at);
    const sched_func *as = s->f[at];
    if (at == fid) return base_fail(err, errlen, "%s: computed at its own %s level", f->name, lv);
    if (!as || as->loc == SCHED_UNDECIDED)
        return base_fail(err, errlen, "%s: computed at %s level of %s, which is not decided yet", f->name, lv, af->name);
    if (as->loc == SCHED_INLINE)
        return base_fail(err, errlen, "%s: computed at %s level of %s, which is inline (fuse into a Func that is not)",
                    f->name, lv, af->name);
    if (loc == SCHED_BLOCK && as->loc == SCHED_THREAD)
        return base_fail(err, errlen, "%s: computed at block level of %s, which is itself at thread level (shared "
                    "memory cannot live inside a thread)", f->name, af->name);
    if (!fusion_pure_updates(f)) {
        for (int st = 1; st < f->nstages; st++)
            for (int d = 0; d < f->ndims; d++) {
                const sc_expr *a = f->stages[st].args[d];
                if (a->kind != E_VAR || strcmp(a->name, f->vars[d]))
                    return base_fail(err, errlen, "%s: fused at %s level, but its update %d writes at a computed "
                                "coordinate (a fused Func's updates must write only at their pure point)",
                                f->name, lv, st);
            }
    }
    fusion_use *u = base_calloc((size_t)x->max_uses, sizeof *u);
    int nu = fusion_consumers(x, s, fid, u), entry = -1, rc = 0;
    if (nu == 0) rc = base_fail(err, errlen, "%s: computed at %s level of %s, but nothing uses it", f->name, lv, af->name);
    for (int i = 0; i < nu && !rc; i++) {
        int c = u[i].func, st;
        if (i + 1 < nu && u[i + 1].func == c) {
            rc = base_fail(err, errlen, "%s: computed at %s level of %s, but several stages of %s use it (fusion needs "
                      "exactly one per consumer)", f->name, lv, af->name, func_at(p, c)->name);
            break;
        }
        if (c == at) {
            st = u[i].stage;
        } else {
            /* c must be computed inside `at` through links of this level */
            int g = c, hops = 0;
            while (g != at && fused(s->f[g]) && s->f[g]->loc == loc && s->f[g]->at != at && hops++ <= x->n)
                g = s->f[g]->at;
            if (g == at || !fused(s->f[g]) || s->f[g]->loc != loc || s->f[g]->at != at) {
                if (nu == 1)
                    rc = base_fail(err, errlen, "%s: computed at %s level of %s, but its consumer is %s (after "
                              "inlining), which is not computed at %s level inside %s", f->name, lv, af->name,
                              func_at(p, c)->name, lv, af->name);
                else
                    rc = base_fail(err, errlen, "%s: computed at %s level of %s, but of its several consumers, %s is "
                              "not computed at %s level inside %s", f->name, lv, af->name, func_at(p, c)->name,
                              lv, af->name);
                break;
            }
            st = stage_at(x, s, g, depth);
            if (st < 0) {
                rc = base_fail(err, errlen, "%s: computed at %s level of %s, inside %s, whose own placement breaks the "
                          "rules", f->name, lv, af->name, func_at(p, g)->name);
                break;
            }
        }
        if (entry >= 0 && st != entry)
            rc = base_fail(err, errlen, "%s: computed at %s level of %s, but its consumers are in different stages of %s "
                      "(%d and %d)", f->name, lv, af->name, af->name, entry, st);
        entry = st;
    }
    free(u);
    if (!rc && stage) *stage = entry;
    return rc;
}

int fusion_check(fusion_graph *x, const sched_state *s, int fid, sched_loc loc, int at, int *stage,
                 char *err, size_t errlen) {
    assert(loc == SCHED_BLOCK || loc == SCHED_THREAD);
    return fusion(x, s, fid, loc, at, stage, err, errlen, 0);
}

int fusion_lca(fusion_graph *x, const sched_state *s, int fid, sched_loc loc) {
    fusion_use *u = base_calloc((size_t)x->max_uses, sizeof *u);
    int nu = fusion_consumers(x, s, fid, u), best = -1;
    /* candidates: the first consumer and the Funcs it is fused into at
     * this level, lowest first; the first that passes the rules */
    for (int g = nu ? u[0].func : -1, hops = 0; g >= 0 && hops <= x->n; hops++) {
        const sched_func *gs = s->f[g];
        if (!gs || gs->loc == SCHED_INLINE || gs->loc == SCHED_UNDECIDED) break;
        if (fusion(x, s, fid, loc, g, NULL, NULL, 0, 0) == 0) {
            best = g;
            break;
        }
        if (!fused(gs) || gs->loc != loc) break;
        g = gs->at;
    }
    free(u);
    return best;
}

/* ---- inlined expression size ------------------------------------------------ */

double fusion_inlined_size(const sched_state *s, const sc_expr *e, fusion_size_fn func_size, void *user) {
    double n = 1;
    for (int i = 0; i < e->nargs; i++) n += fusion_inlined_size(s, e->args[i], func_size, user);
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED && e->func->id < s->nfuncs) {
        const sched_func *sf = s->f[e->func->id];
        if (sf && sf->loc == SCHED_INLINE) n += func_size(user, e->func) * (e->nargs ? 2 : 1);
    }
    return n;
}

typedef struct { const sc_pipeline *p; const sched_state *s; double *memo; } size_ctx;

static double inline_func_size(void *user, const sc_func *g) {
    size_ctx *z = user;
    if (z->memo[g->id] >= 0) return z->memo[g->id];
    z->memo[g->id] = 1e300;      /* a cycle cannot happen; guards anyway */
    double v = fusion_inlined_size(z->s, g->stages[0].value, inline_func_size, z);
    z->memo[g->id] = v;
    return v;
}

double fusion_max_inlined_size(const sc_pipeline *p, const sched_state *s, int *worst) {
    size_ctx z = { p, s, base_calloc((size_t)p->funcs.n + 1, sizeof(double)) };
    for (int i = 0; i < p->funcs.n; i++) z.memo[i] = -1;
    double best = 0;
    if (worst) *worst = -1;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        const sched_func *sf = s->f[i];
        if (f->kind != FUNC_DEFINED || (sf && sf->loc == SCHED_INLINE)) continue;
        for (int st = 0; st < f->nstages; st++) {
            double v = fusion_inlined_size(s, f->stages[st].value, inline_func_size, &z);
            if (v > best) { best = v; if (worst) *worst = i; }
        }
    }
    free(z.memo);
    return best;
}
