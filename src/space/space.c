/*
 * space.c - walking the schedule space (space.h): the random walk, the
 * feasibility of a partial state, and the fixed strategies.  The children
 * themselves are enumerated in enumerate.c.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "space.h"

uint64_t space_rand(space_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int space_rand_below(space_rng *r, int n) {
    return n <= 1 ? 0 : (int)(space_rand(r) % (uint64_t)n);
}

int64_t space_rand_below64(space_rng *r, int64_t n) {
    return n <= 1 ? 0 : (int64_t)(space_rand(r) % (uint64_t)n);
}

static sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

int space_fits(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const space_opts *o,
               char *why, size_t whylen) {
    if (!o->t) return 0;
    legal_ctx *x = space_legal(p, b, o);
    int rc = legal_fits(x, s, why, whylen);
    legal_free(x);
    return rc;
}

/* Each step counts the children of the state, draws one uniformly and
 * enumerates again up to it: no child is stored, and every child is
 * legal, so nothing is redrawn. */
sched_state *space_random(ir_arena *a, sc_pipeline *p, const bounds_result *b,
                          const space_opts *o, uint64_t seed, char *err, size_t errlen) {
    space_rng rng = { seed * 0x2545f4914f6cdd1dull + 1 };
    legal_ctx *x = space_legal(p, b, o);
    sched_state *s = sched_state_new(a, p);
    if (legal_fits(x, s, err, errlen) != 0) {
        /* even every Func at root with the default tiling breaks a rule */
        legal_free(x);
        return NULL;
    }
    for (;;) {
        space_enum e;
        if (space_enum_begin(&e, a, x, p, b, s, o) < 0) break;
        int64_t n = 0;
        while (space_enum_skip(&e)) n++;
        assert(n > 0);               /* root with the default tiling is always a child */
        int64_t pick = space_rand_below64(&rng, n);
        if (e.tiling) {
            space_enum_begin(&e, a, x, p, b, s, o);
        } else {
            e.iloc = -1;             /* the same location records */
        }
        for (int64_t i = 0; i < pick; i++) space_enum_skip(&e);
        s = space_enum_next(&e, a);
        assert(s);
    }
    legal_free(x);
    return s;
}

/* A 1-D tiling: `threads` threads on the chosen loop, one point each. */
static sched_tile one_d(const sc_func *f, int st, const bounds_result *b, int threads, int64_t threshold) {
    sched_tile t;
    memset(&t, 0, sizeof t);
    int64_t ext[SC_MAX_DIMS];
    t.npure = legal_pure_extents(b, f, st, ext);
    int k0 = 0;
    for (int k = 0; k < t.npure; k++) if (ext[k] >= threshold) { k0 = k; break; }
    for (int k = 0; k < t.npure; k++) {
        t.serial[k] = 1;
        t.threads[k] = 1;
    }
    if (t.npure) {
        int64_t n = ext[k0] < threads ? ext[k0] : threads;
        t.threads[k0] = (int)(n < 1 ? 1 : n);
    }
    return t;
}

/* A Func that only re-indexes another (a boundary helper): one stage whose
 * value is a call with coordinates built from clamp/min/max/select. */
static bool is_wrapper(const sc_func *f) {
    if (f->nstages != 1 || f->is_output) return false;
    const sc_expr *v = f->stages[0].value;
    if (v->kind == E_SELECT) v = v->args[1];
    return v->kind == E_CALL;
}

static sched_state *fixed(ir_arena *a, const sc_pipeline *p, const bounds_result *b, bool baseline) {
    sched_state *s = sched_state_new(a, p);
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        bool inl = baseline ? (f->nstages == 1 && !f->is_output && space_pointwise(p, i))
                            : is_wrapper(f);
        sched_func *sf = sched_func_new(a, inl ? SCHED_INLINE : SCHED_ROOT, -1, f->nstages);
        if (!inl)
            for (int st = 0; st < f->nstages; st++) sf->tile[st] = one_d(f, st, b, 64, baseline ? 64 : 16);
        s->f[i] = sf;
    }
    return s;
}

/* The first two pure loops of (f, st) of extent 8 or more, in loop order:
 * how many (0 to 2), their indices in k. */
static int shape_loops(const sc_func *f, int st, const bounds_result *b, int k[2], int64_t ext[SC_MAX_DIMS]) {
    int npure = legal_pure_extents(b, f, st, ext), n = 0;
    for (int q = 0; q < npure && n < 2; q++)
        if (ext[q] >= 8) k[n++] = q;
    return n;
}

static int clamp_to(int v, int64_t ext) { return ext < v ? (int)(ext < 1 ? 1 : ext) : v; }

sched_state *space_retile(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const sched_state *base,
                          uint64_t seed) {
    static const int tx[] = { 8, 16, 32, 64, 128, 256, 512 }, ty[] = { 1, 2, 4, 8, 16 };
    static const int sx[] = { 1, 2, 4 }, sy[] = { 1, 2, 4, 8 };
    space_rng rng = { seed * 0x9e3779b97f4a7c15ull + 7 };
    int stages = 0;
    for (int i = 0; i < p->funcs.n; i++) {
        const sched_func *sf = base->f[i];
        for (int st = 0; sf && sf->loc == SCHED_ROOT && st < sf->nstages; st++) {
            int k[2];
            int64_t ext[SC_MAX_DIMS];
            stages += shape_loops(func_at(p, i), st, b, k, ext) > 0;
        }
    }
    if (!stages) return NULL;
    int x, y;
    do {
        x = tx[space_rand_below(&rng, 7)];
        y = ty[space_rand_below(&rng, 5)];
    } while (x * y > 1024);
    bool serial = space_rand_below(&rng, 2);
    int ux = serial ? sx[space_rand_below(&rng, 3)] : 1, uy = serial ? sy[space_rand_below(&rng, 4)] : 1;
    int only = space_rand_below(&rng, 2) ? space_rand_below(&rng, stages) : -1;
    sched_state *s = sched_state_copy(a, base);
    int at = 0;
    for (int i = 0; i < p->funcs.n; i++) {
        const sched_func *sf = base->f[i];
        if (!sf || sf->loc != SCHED_ROOT) continue;
        sched_func *nf = NULL;
        for (int st = 0; st < sf->nstages; st++) {
            int k[2];
            int64_t ext[SC_MAX_DIMS];
            int n = shape_loops(func_at(p, i), st, b, k, ext);
            if (!n || (only >= 0 && at++ != only)) continue;
            if (!nf) nf = sched_func_copy(a, sf);
            sched_tile *t = &nf->tile[st];
            for (int q = 0; q < t->npure; q++) t->threads[q] = t->serial[q] = 1;
            t->threads[k[0]] = clamp_to(x, ext[k[0]]);
            t->serial[k[0]] = clamp_to(ux, ext[k[0]] / t->threads[k[0]]);
            if (n > 1) {
                t->threads[k[1]] = clamp_to(y, ext[k[1]]);
                t->serial[k[1]] = clamp_to(uy, ext[k[1]] / t->threads[k[1]]);
            }
        }
        if (nf) s->f[i] = nf;
    }
    return s;
}

sched_state *space_root(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t) {
    (void)t;
    return fixed(a, p, b, false);
}

sched_state *space_baseline(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t) {
    (void)t;
    return fixed(a, p, b, true);
}

sched_state *space_reference(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t,
                             bool warp_multiple, sched_state *fixed[2]) {
    sched_state *both[2] = { NULL, NULL };
    /* root is made only when it is asked for or the baseline does not pass */
    for (int k = 0; k < 2 && (fixed || !both[0]); k++) {
        both[k] = k == 0 ? space_baseline(a, p, b, t) : space_root(a, p, b, t);
        if (both[k] && sched_check(p, b, both[k], t, warp_multiple, NULL, 0) != 0) both[k] = NULL;
    }
    if (fixed) {
        fixed[0] = both[0];
        fixed[1] = both[1];
    }
    return both[0] ? both[0] : both[1];
}
