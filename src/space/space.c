/*
 * space.c - enumerating and sampling schedules (space.h).
 */
#include <stdlib.h>
#include <string.h>
#include "lower.h"
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

static sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

int space_next(const sc_pipeline *p, const sched_state *s) {
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_DEFINED && !s->f[f->id]) return f->id;
    }
    return -1;
}

typedef struct { int fid; bool found; } call_find;

static void find_call(const sc_expr *e, void *user) {
    call_find *c = user;
    if (e->kind == E_CALL && e->func->id == c->fid) c->found = true;
}

static bool stage_calls(const sc_func *g, int st, int fid) {
    call_find c = { fid, false };
    ir_visit(g->stages[st].value, find_call, &c);
    for (int d = 0; d < g->stages[st].nargs && !c.found; d++) ir_visit(g->stages[st].args[d], find_call, &c);
    return c.found;
}

/* Adds the effective consumers (Func, stage) of f to the list; inline
 * consumers are looked through. */
static void consumers(const sc_pipeline *p, const sched_state *s, int fid, int *cons, int *stg,
                      int *n, int depth) {
    if (depth > p->funcs.n) return;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *g = func_at(p, i);
        if (g->kind != FUNC_DEFINED || g->id == fid) continue;
        for (int st = 0; st < g->nstages; st++) {
            if (!stage_calls(g, st, fid)) continue;
            const sched_func *gf = s->f[g->id];
            if (gf && gf->loc == SCHED_INLINE) {
                consumers(p, s, g->id, cons, stg, n, depth + 1);
                continue;
            }
            bool seen = false;
            for (int k = 0; k < *n; k++) seen |= cons[k] == g->id && stg[k] == st;
            if (!seen && *n < 64) { cons[*n] = g->id; stg[*n] = st; (*n)++; }
        }
    }
}

int space_consumer(const sc_pipeline *p, const sched_state *s, int fid, int *stage) {
    int cons[64], stg[64], n = 0;
    consumers(p, s, fid, cons, stg, &n, 0);
    if (n == 0) return -1;
    for (int k = 1; k < n; k++)
        if (cons[k] != cons[0] || stg[k] != stg[0]) return -2;
    *stage = stg[0];
    return cons[0];
}

typedef struct { int fid; bool pointwise; } pw_walk;

static void check_pointwise(const sc_expr *e, void *user) {
    pw_walk *w = user;
    if (e->kind != E_CALL || e->func->id != w->fid) return;
    for (int d = 0; d < e->nargs; d++)
        if (e->args[d]->kind != E_VAR) w->pointwise = false;
}

bool space_pointwise(const sc_pipeline *p, int fid) {
    pw_walk w = { fid, true };
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *g = func_at(p, i);
        for (int st = 0; st < g->nstages; st++) {
            ir_visit(g->stages[st].value, check_pointwise, &w);
            for (int d = 0; d < g->stages[st].nargs; d++) ir_visit(g->stages[st].args[d], check_pointwise, &w);
        }
    }
    return w.pointwise;
}

/* Whether f's updates write only at their pure point (needed for fusion). */
static bool pure_updates(const sc_func *f) {
    for (int s = 1; s < f->nstages; s++)
        for (int d = 0; d < f->ndims; d++) {
            const sc_expr *a = f->stages[s].args[d];
            if (a->kind != E_VAR || strcmp(a->name, f->vars[d])) return false;
        }
    return true;
}

int space_locations(const sc_pipeline *p, const sched_state *s, int fid,
                    const space_opts *o, sched_func *out, int max) {
    const sc_func *f = func_at(p, fid);
    int n = 0;
#define ADD(L, AT) do { if (n < max) { memset(&out[n], 0, sizeof out[n]); out[n].loc = (L); \
                        out[n].at = (AT); out[n].nstages = f->nstages; n++; } } while (0)
    if (f->is_output) { ADD(SCHED_ROOT, -1); return n; }
    bool inlinable = f->nstages == 1;
    if (inlinable && o->prune && space_pointwise(p, fid)) { ADD(SCHED_INLINE, -1); return n; }
    if (inlinable) ADD(SCHED_INLINE, -1);
    ADD(SCHED_ROOT, -1);
    int stage;
    int c = space_consumer(p, s, fid, &stage);
    if (c >= 0 && pure_updates(f)) {
        const sched_func *cf = s->f[c];
        if (cf && (cf->loc == SCHED_ROOT || cf->loc == SCHED_BLOCK)) ADD(SCHED_BLOCK, c);
        if (cf && cf->loc != SCHED_INLINE) ADD(SCHED_THREAD, c);
    }
#undef ADD
    return n;
}

static int first_large(int np, const int64_t *ext, int64_t threshold) {
    for (int k = 0; k < np; k++) if (ext[k] >= threshold) return k;
    return 0;
}

/* Options for one loop: serial sizes (ROOT) and thread counts. */
static int serial_options(int64_t extent, int *out) {
    static const int pow2[] = { 1, 2, 4, 8 };
    int n = 0;
    for (int i = 0; i < 4; i++) if (pow2[i] <= extent) out[n++] = pow2[i];
    static const int odd[] = { 3, 5, 7 };
    for (int i = 0; i < 3; i++)
        if (extent % odd[i] == 0 && (extent / odd[i]) % 32 == 0) out[n++] = odd[i];
    return n;
}

static int thread_options(int64_t extent, bool innermost, int *out) {
    int n = 0;
    if (innermost) {
        static const int w[] = { 16, 32, 64 };
        for (int i = 0; i < 3; i++) if (w[i] <= extent || i == 0) out[n++] = w[i];
        if (extent < 16) { n = 0; for (int t = 1; t <= extent && t <= 16; t *= 2) out[n++] = t; }
    } else {
        for (int t = 1; t <= 16 && t <= extent; t *= 2) out[n++] = t;
    }
    if (!n) out[n++] = 1;
    return n;
}

/* Mixed-radix enumeration over per-loop option lists. */
int space_tilings(const sc_func *f, int st, sched_loc loc, const int64_t *extents,
                  int max_threads, const space_opts *o, sched_tile *out, int max) {
    int which[2 * SC_MAX_DIMS], nl = ir_stage_loops(f, st, which), np = 0;
    for (int i = 0; i < nl; i++) if (which[i] >= 0) np++;
    int inner = first_large(np, extents, 16);
    int sopt[SC_MAX_DIMS][8], ns[SC_MAX_DIMS], topt[SC_MAX_DIMS][8], nt[SC_MAX_DIMS];
    int64_t combos = 1;
    for (int k = 0; k < np; k++) {
        ns[k] = loc == SCHED_ROOT ? serial_options(extents[k], sopt[k]) : (sopt[k][0] = 1, 1);
        nt[k] = thread_options(extents[k], k == inner, topt[k]);
        combos *= (int64_t)ns[k] * nt[k];
    }
    int n = 0;
    int warp = o->t ? o->t->warp_size : 32;
    int64_t sms = o->t ? o->t->sm_count : 1;
    for (int64_t c = 0; c < combos && n < max; c++) {
        sched_tile t;
        memset(&t, 0, sizeof t);
        t.npure = np;
        int64_t r = c, threads = 1, serial = 1, blocks = 1, total = 1;
        for (int k = 0; k < np; k++) {
            t.serial[k] = sopt[k][r % ns[k]]; r /= ns[k];
            t.threads[k] = topt[k][r % nt[k]]; r /= nt[k];
            threads *= t.threads[k];
            serial *= t.serial[k];
            int64_t tile = (int64_t)t.threads[k] * t.serial[k];
            blocks *= (extents[k] + tile - 1) / tile;
            total *= extents[k];
        }
        if (threads > max_threads) continue;
        /* sched_check's register estimate: 16 + one per serial point */
        if (o->t && 16 + serial > o->t->registers_per_thread) continue;
        if (o->prune) {
            if (serial > 64) continue;                                   /* too large to unroll */
            if (threads % warp && total >= warp && threads < max_threads) continue;   /* idle lanes */
            if (loc == SCHED_ROOT && blocks < sms && total >= (int64_t)warp * sms * 2) continue;  /* idle SMs */
        }
        out[n++] = t;
    }
    if (n == 0) {   /* always leave one option: one thread, one point */
        memset(&out[0], 0, sizeof out[0]);
        out[0].npure = np;
        for (int k = 0; k < np; k++) { out[0].threads[k] = 1; out[0].serial[k] = 1; }
        n = 1;
    }
    return n;
}

/* The pure loop extents of stage st of f over its whole region. */
static int stage_extents(const sc_func *f, int st, const bounds_result *b, int64_t *ext) {
    const bounds_stage *bs = &b->funcs[f->id].stages[st];
    int np = 0;
    for (int i = 0; i < bs->nloops; i++) if (bs->which[i] >= 0) ext[np++] = bs->extent[i] > 0 ? bs->extent[i] : 1;
    return np;
}

/* The thread budget of f's block: the threads of the root kernel it ends
 * up in (f at BLOCK of `at`). */
static int block_budget(const sc_pipeline *p, const sched_state *s, int at, int at_stage) {
    int g = at, st = at_stage, hops = 0;
    while (s->f[g] && s->f[g]->loc != SCHED_ROOT && hops++ < p->funcs.n) {
        int next_stage = 0;
        int c = space_consumer(p, s, g, &next_stage);
        if (c < 0) return 1;
        g = s->f[g]->at;
        st = next_stage;
    }
    if (!s->f[g]) return 1;
    const sched_tile *t = &s->f[g]->tile[st];
    int threads = 1;
    for (int k = 0; k < t->npure; k++) threads *= t->threads[k];
    return threads;
}

/* Fills the tiles of a location choice with random tilings (or the first
 * option when rng is NULL). */
static void choose_tiles(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                         int fid, sched_func *sf, const space_opts *o, space_rng *rng) {
    const sc_func *f = func_at(p, fid);
    sf->nstages = f->nstages;
    if (sf->loc != SCHED_ROOT && sf->loc != SCHED_BLOCK) {
        sf->tile = NULL;
        return;
    }
    sf->tile = ir_alloc(a, sizeof(sched_tile) * (size_t)(f->nstages ? f->nstages : 1));
    int budget = o->t ? o->t->max_threads_per_block : 1024;
    if (sf->loc == SCHED_BLOCK) {
        int stage = 0;
        space_consumer(p, s, fid, &stage);
        budget = block_budget(p, s, sf->at, stage);
    }
    static sched_tile opts[4096];
    for (int st = 0; st < f->nstages; st++) {
        int64_t ext[SC_MAX_DIMS];
        stage_extents(f, st, b, ext);
        int n = space_tilings(f, st, sf->loc, ext, budget, o, opts, 4096);
        sf->tile[st] = opts[rng ? space_rand_below(rng, n) : 0];
    }
}

int space_children(ir_arena *a, const sc_pipeline *p, const bounds_result *b,
                   const sched_state *s, const space_opts *o, space_rng *rng,
                   sched_state **out, int max) {
    int fid = space_next(p, s);
    if (fid < 0) return 0;
    sched_func locs[8];
    int nl = space_locations(p, s, fid, o, locs, 8), n = 0;
    const sc_func *f = func_at(p, fid);
    for (int l = 0; l < nl && n < max; l++) {
        if (locs[l].loc != SCHED_ROOT && locs[l].loc != SCHED_BLOCK) {
            sched_state *c = sched_state_copy(a, s);
            sched_func *sf = ir_alloc(a, sizeof *sf);
            *sf = locs[l];
            c->f[fid] = sf;
            out[n++] = c;
            continue;
        }
        /* one child per tiling of stage 0; other stages sampled */
        int budget = o->t ? o->t->max_threads_per_block : 1024;
        if (locs[l].loc == SCHED_BLOCK) {
            int stage = 0;
            space_consumer(p, s, fid, &stage);
            budget = block_budget(p, s, locs[l].at, stage);
        }
        static sched_tile opts[4096];
        int64_t ext[SC_MAX_DIMS];
        stage_extents(f, 0, b, ext);
        int nt = space_tilings(f, 0, locs[l].loc, ext, budget, o, opts, 4096);
        int room = (max - n) / (nl - l);
        if (room < 1) room = 1;
        for (int k = 0; k < nt && n < max && k < room; k++) {
            int pick = nt <= room ? k : space_rand_below(rng, nt);
            sched_func *sf = ir_alloc(a, sizeof *sf);
            *sf = locs[l];
            choose_tiles(a, p, b, s, fid, sf, o, rng);
            sf->tile[0] = opts[pick];
            sched_state *c = sched_state_copy(a, s);
            c->f[fid] = sf;
            out[n++] = c;
        }
    }
    return n;
}

int space_fits(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const space_opts *o,
               char *why, size_t whylen) {
    if (!o->t) return 0;
    /* Undecided Funcs are producers of every decided one (consumers are
     * decided first), so putting them at root with a small tiling adds
     * nothing to the decided Funcs' kernels: what fails now fails for
     * every completion. */
    ir_arena *scratch = ir_arena_new();
    sched_state *full = sched_state_copy(scratch, s);
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED || (full->f[i] && full->f[i]->loc != SCHED_UNDECIDED)) continue;
        /* one warp of threads, one point each: within every limit, even
         * where the Func has fewer points than a warp */
        sched_func *sf = sched_func_new(scratch, SCHED_ROOT, -1, f->nstages);
        for (int st = 0; st < f->nstages; st++) {
            sched_tile *tl = &sf->tile[st];
            int64_t ext[SC_MAX_DIMS];
            tl->npure = stage_extents(f, st, b, ext);
            for (int k = 0; k < tl->npure; k++) tl->threads[k] = tl->serial[k] = 1;
            if (tl->npure) tl->threads[first_large(tl->npure, ext, 16)] = o->t->warp_size;
        }
        full->f[i] = sf;
    }
    int rc = sched_check(p, b, full, o->t, o->prune, why, whylen);
    ir_arena_free(scratch);
    return rc;
}

sched_state *space_random(ir_arena *a, sc_pipeline *p, const bounds_result *b,
                          const space_opts *o, uint64_t seed, char *err, size_t errlen) {
    space_rng rng = { seed * 0x2545f4914f6cdd1dull + 1 };
    char why[512] = "";
    for (int attempt = 0; attempt < 100; attempt++) {
        sched_state *s = sched_state_new(a, p);
        bool dead = false;
        for (int fid; !dead && (fid = space_next(p, s)) >= 0;) {
            sched_func locs[8];
            int nl = space_locations(p, s, fid, o, locs, 8);
            sched_func *sf = ir_alloc(a, sizeof *sf);
            s->f[fid] = sf;
            /* A decision over the limits is redrawn (a few times) rather
             * than discovered when the whole schedule is done. */
            for (int tries = 0;; tries++) {
                *sf = locs[space_rand_below(&rng, nl)];
                if (sf->loc == SCHED_INLINE && lower_max_inlined_size(p, s, NULL) > LOWER_SEARCH_INLINED) {
                    /* excessive inlining: take another location */
                    for (int k = 0; k < nl; k++) if (locs[k].loc != SCHED_INLINE) { *sf = locs[k]; break; }
                }
                choose_tiles(a, p, b, s, fid, sf, o, &rng);
                if (sf->loc == SCHED_INLINE || space_fits(p, b, s, o, why, sizeof why) == 0) break;
                if (tries == 15) { dead = true; break; }
            }
        }
        if (!dead && (!o->t || sched_check(p, b, s, o->t, o->prune, why, sizeof why) == 0)) return s;
    }
    snprintf(err, errlen, "no random schedule within the target's limits after 100 walks (last: %s)", why);
    return NULL;
}

/* A 1-D tiling: `threads` threads on the chosen loop, one point each. */
static sched_tile one_d(const sc_func *f, int st, const bounds_result *b, int threads, int64_t threshold) {
    sched_tile t;
    memset(&t, 0, sizeof t);
    int64_t ext[SC_MAX_DIMS];
    t.npure = stage_extents(f, st, b, ext);
    int k0 = first_large(t.npure, ext, threshold);
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

sched_state *space_root(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t) {
    (void)t;
    return fixed(a, p, b, false);
}

sched_state *space_baseline(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t) {
    (void)t;
    return fixed(a, p, b, true);
}
