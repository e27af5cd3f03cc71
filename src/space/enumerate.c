/*
 * enumerate.c - the children of a schedule state (space.h): phase (a), the
 * compute locations of the next Func, and phase (b), the tilings of one
 * stage of a root or block-level Func; every child legal (legal.h), the
 * Anderson et al. 2021 §6.6 pruning when asked.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "nest_query.h"
#include "space.h"

static const sc_func *func_at(const sc_pipeline *p, int id) { return p->funcs.items[id]; }

legal_ctx *space_legal(const sc_pipeline *p, const bounds_result *b, const space_opts *o) {
    return legal_new(p, b, o->t, o->prune);
}

int space_next(const sc_pipeline *p, const sched_state *s, bool *tiling) {
    for (int i = 0; i < s->nfuncs; i++)
        if (s->f[i] && s->f[i]->pending > 0) {
            if (tiling) *tiling = true;
            return i;
        }
    if (tiling) *tiling = false;
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_DEFINED && !s->f[f->id]) return f->id;
    }
    return -1;
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

/* ---- phase (a): locations -------------------------------------------------- */

/* The record of fid at loc (of at), its stages pending with the default
 * tiling (all ones at block level) until phase (b) tiles them. */
static sched_func *location_record(space_enum *e, ir_arena *a, sched_loc loc, int at) {
    const sc_func *f = func_at(e->p, e->fid);
    sched_func *sf = sched_func_new(a, loc, at, f->nstages);
    sf->pending = loc == SCHED_ROOT || loc == SCHED_BLOCK ? f->nstages : 0;
    for (int st = 0; sf->tile && st < sf->nstages; st++) {
        sf->tile[st] = legal_default_tile(e->x, f, st);
        for (int k = 0; loc == SCHED_BLOCK && k < sf->tile[st].npure; k++) sf->tile[st].threads[k] = 1;
    }
    return sf;
}

/* Whether a stage of f reduces over more points than a thread-level Func
 * unrolls (NEST_UNROLL_THREAD_LIMIT): computed in its consumer's threads,
 * each work-item would carry its running values through a rolled loop,
 * which a CPU's OpenCL runs one work-item at a time (docs/schedule.md,
 * "Pruning"). */
static bool long_reduction(const sc_func *f) {
    for (int st = 0; st < f->nstages; st++) {
        const sc_rdom *r = f->stages[st].rdom;
        int64_t n = 1;
        for (int d = 0; r && d < r->ndims; d++) n *= r->extent[d];
        if (r && n >= NEST_UNROLL_THREAD_LIMIT) return true;
    }
    return false;
}

/* Adds fid at loc when that is legal (and, pruning, not excessive); root
 * always is (legal.h, the default tiling). */
static void add_loc(space_enum *e, ir_arena *a, sched_loc loc, int at) {
    sched_func *sf = location_record(e, a, loc, at);
    bool ok = true;
    if (loc != SCHED_ROOT) {
        ir_arena *scratch = ir_arena_new();
        sched_state *c = sched_state_copy(scratch, e->s);
        c->f[e->fid] = sf;
        ok = legal_fits(e->x, c, NULL, 0) == 0;
        if (ok && e->o->prune) {
            if (loc == SCHED_INLINE)
                ok = legal_max_inlined_size(e->p, c, NULL) <= LEGAL_SEARCH_INLINED &&
                     legal_inline_redundancy(e->x, c, e->fid) <= LEGAL_MAX_REDUNDANCY;
            if (loc == SCHED_BLOCK || loc == SCHED_THREAD) {
                double r = legal_redundancy(e->x, c, e->fid);
                ok = r >= 0 && r <= LEGAL_MAX_REDUNDANCY;
            }
            if (ok && loc == SCHED_THREAD && e->o->t && e->o->t->cpu) ok = !long_reduction(func_at(e->p, e->fid));
        }
        ir_arena_free(scratch);
    }
    if (ok) e->locs[e->nlocs++] = sf;
}

static void locations(space_enum *e, ir_arena *a) {
    const sc_func *f = func_at(e->p, e->fid);
    e->nlocs = 0;
    if (f->is_output) {
        add_loc(e, a, SCHED_ROOT, -1);
        return;
    }
    bool inlinable = f->nstages == 1;
    if (inlinable && e->o->prune && space_pointwise(e->p, e->fid)) {
        /* §6: a point-wise single-stage Func is always inlined, when that
         * is within the limits */
        add_loc(e, a, SCHED_INLINE, -1);
        if (e->nlocs) return;
    }
    if (inlinable) add_loc(e, a, SCHED_INLINE, -1);
    add_loc(e, a, SCHED_ROOT, -1);
    if (legal_pure_updates(f)) {
        int ab = legal_lca(e->x, e->s, e->fid, SCHED_BLOCK);
        if (ab >= 0) add_loc(e, a, SCHED_BLOCK, ab);
        int at = legal_lca(e->x, e->s, e->fid, SCHED_THREAD);
        if (at >= 0) add_loc(e, a, SCHED_THREAD, at);
    }
}

/* ---- phase (b): tilings ---------------------------------------------------- */

/* t <= extent, or the smallest option that covers the extent. */
static int keep_covering(const int *opts, int n, int64_t extent, int *out) {
    int m = 0;
    bool covered = false;
    for (int i = 0; i < n; i++) {
        if (opts[i] <= extent) out[m++] = opts[i];
        else if (!covered) out[m++] = opts[i];
        if (opts[i] >= extent) covered = true;
    }
    return m;
}

static void sort_unique(int *v, int *n) {
    for (int i = 1; i < *n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
        }
    int m = 0;
    for (int i = 0; i < *n; i++) if (!m || v[m - 1] != v[i]) v[m++] = v[i];
    *n = m;
}

static void narrowest_call(const sc_expr *e, void *user) {
    size_t *bytes = user;
    if (e->kind == E_CALL && sc_type_size(e->func->type) < *bytes) *bytes = sc_type_size(e->func->type);
}

/* The work-items a CPU's OpenCL vectorizes stage st of f over: the
 * vector's bits (its f32 lanes, the target's warp size, x 32) over the
 * narrowest element the stage stores or reads.  PoCL vectorizes the loop
 * over local id 0 of a work-group; LLVM left it scalar where its trip
 * count, the work-group's first dimension, was below that many lanes: u16
 * stencils in 8 work-items, u8 ones in 16 (docs/search.md, "Vector lanes
 * on a CPU"). */
static int cpu_lanes(const space_enum *e, const sc_func *f, int st) {
    size_t bytes = sc_type_size(f->type);
    const ir_stage *g = &f->stages[st];
    ir_visit(g->value, narrowest_call, &bytes);
    for (int d = 0; d < g->nargs; d++) ir_visit(g->args[d], narrowest_call, &bytes);
    int64_t bits = (int64_t)e->o->t->warp_size * 32, lanes = bits / (8 * (int64_t)(bytes ? bytes : 1));
    return lanes < 1 ? 1 : lanes > 64 ? 64 : (int)lanes;
}

/* Whether stage st of f, at root on a CPU, runs its reduction around a
 * serial tile whose innermost loop the device compiler vectorizes
 * (ir_stage_reduction_around: scans and updates that accumulate in
 * place).  Such a stage's lanes come from its serial points, not from its
 * work-items: iir_blur's scans ran 3x faster in one work-item of 64
 * points than in 16 of 8 (docs/search.md, "Vector tiles on a CPU"). */
static bool cpu_vector_tile(const space_enum *e, const sc_func *f, int st) {
    return e->loc == SCHED_ROOT && legal_cpu_vector_stage(e->o->t, f, st);
}

/* The (serial, threads) options of loop k (ROOT), or threads (BLOCK).
 * With e->lanes, a root stage's innermost threaded loop has at least that
 * many threads (cpu_lanes) where its extent allows.  With e->vector_tile,
 * its innermost loop may also have 16, 32 or 64 serial points (each at
 * most the extent) on 1 to 16 threads. */
static void loop_options(space_enum *e, int k, int64_t ext, bool innermost) {
    int warp = e->o->t ? e->o->t->warp_size : 32;
    int n = 0;
    int serial[8], ns = 0;
    if (e->loc == SCHED_ROOT) {
        static const int pow2[] = { 1, 2, 4, 8 }, odd[] = { 3, 5, 7 };
        for (int i = 0; i < 4; i++) if (pow2[i] == 1 || pow2[i] <= ext) serial[ns++] = pow2[i];
        for (int i = 0; i < 3; i++)
            if (ext % odd[i] == 0 && (ext / odd[i]) % warp == 0) serial[ns++] = odd[i];
        /* a short loop unrolled whole (a colour channel of 3): each copy
         * sees a constant coordinate, so selects on it fold */
        if (e->o->unroll_whole && ext > 2 && ext < 8) {
            bool has = false;
            for (int i = 0; i < ns; i++) has |= serial[i] == ext;
            if (!has) serial[ns++] = (int)ext;
        }
    } else {
        serial[ns++] = 1;
    }
    for (int si = 0; si < ns; si++) {
        int64_t left = e->loc == SCHED_ROOT ? (ext + serial[si] - 1) / serial[si] : ext;
        int cand[8], nc = 0, th[8];
        if (e->loc == SCHED_ROOT && innermost) {
            cand[nc++] = 16; cand[nc++] = 32; cand[nc++] = 64;
        } else {
            for (int t = 1; t <= (innermost ? 64 : 16); t *= 2) cand[nc++] = t;
        }
        sort_unique(cand, &nc);
        int nt = keep_covering(cand, nc, left, th);
        if (e->loc == SCHED_ROOT && innermost) {
            /* the warp size itself, so the default tiling is a child */
            bool has = false;
            for (int i = 0; i < nt; i++) has |= th[i] == warp;
            if (!has) th[nt++] = warp;
            sort_unique(th, &nt);
            if (e->lanes) {
                int m = 0;
                for (int i = 0; i < nt; i++)
                    if (th[i] >= e->lanes || th[i] >= left || i == nt - 1) th[m++] = th[i];
                nt = m;
            }
        }
        for (int i = 0; i < nt; i++) {
            assert(n < SPACE_MAX_OPTS);
            e->sopt[k][n] = serial[si];
            e->topt[k][n++] = th[i];
        }
    }
    if (e->vector_tile && innermost) {
        static const int vec[] = { 16, 32, 64 };
        static const int few[] = { 1, 2, 4, 8, 16 };
        for (int si = 0; si < 3 && vec[si] <= ext; si++) {
            int th[5], nt = keep_covering(few, 5, (ext + vec[si] - 1) / vec[si], th);
            for (int i = 0; i < nt; i++) {
                assert(n < SPACE_MAX_OPTS);
                e->sopt[k][n] = vec[si];
                e->topt[k][n++] = th[i];
            }
        }
    }
    e->nopt[k] = n;
}

/* The loops' options, the counter at the first. */
static void tiling_options(space_enum *e) {
    int64_t ext[SC_MAX_DIMS];
    e->np = legal_pure_extents(e->b, func_at(e->p, e->fid), e->st, ext);
    int inner = 0;
    for (int k = 0; k < e->np; k++) if (ext[k] >= 16) { inner = k; break; }
    for (int k = 0; k < e->np; k++) {
        loop_options(e, k, ext[k], k == inner);
        e->digit[k] = 0;
    }
    e->started = false;
    e->done = false;
}

static void tilings_begin(space_enum *e) {
    const sched_func *sf = e->s->f[e->fid];
    e->st = sf->nstages - sf->pending;
    e->loc = sf->loc;
    e->at = sf->at;
    e->lanes = e->o->t && e->o->t->cpu && e->loc == SCHED_ROOT ? cpu_lanes(e, func_at(e->p, e->fid), e->st) : 0;
    e->vector_tile = cpu_vector_tile(e, func_at(e->p, e->fid), e->st);
    e->ntilings = 0;
    tiling_options(e);
}

/* The tiling the counter points at. */
static void current_tile(space_enum *e) {
    memset(&e->cur, 0, sizeof e->cur);
    e->cur.npure = e->np;
    for (int k = 0; k < e->np; k++) {
        e->cur.serial[k] = e->sopt[k][e->digit[k]];
        e->cur.threads[k] = e->topt[k][e->digit[k]];
    }
}

/* The §6.6 rules for a root tiling (the warp-lane rule is legality's
 * warp-multiple rule, on when pruning). */
static bool tile_pruned(space_enum *e, const sched_tile *t) {
    if (!e->o->prune || e->loc != SCHED_ROOT) return false;
    int64_t serial = 1, total = 1, ext[SC_MAX_DIMS];
    const sc_func *f = func_at(e->p, e->fid);
    legal_pure_extents(e->b, f, e->st, ext);
    for (int k = 0; k < t->npure; k++) {
        serial *= t->serial[k];
        total *= ext[k];
    }
    /* would not be unrolled; a vector tile is a loop by design */
    if (serial >= LEGAL_UNROLL_LIMIT && !e->vector_tile) return true;
    if (e->o->t) {
        /* idle SMs: fewer than 2 blocks per SM where the stage has the
         * points for 2 warp-sized blocks per SM */
        int64_t sms = e->o->t->sm_count, warp = e->o->t->warp_size;
        if (total >= 2 * sms * warp && legal_blocks(e->x, f, e->st, t) < 2 * sms) return true;
    }
    return false;
}

static bool next_tiling(space_enum *e) {
    while (!e->done) {
        if (!e->started) {
            e->started = true;
        } else {
            int k = 0;
            for (; k < e->np; k++) {
                if (++e->digit[k] < e->nopt[k]) break;
                e->digit[k] = 0;
            }
            if (k == e->np) {
                e->done = true;
                /* no legal tiling with the lanes rule: the options without it */
                if (e->lanes && e->ntilings == 0) {
                    e->lanes = 0;
                    tiling_options(e);
                }
                continue;
            }
        }
        current_tile(e);
        if (legal_tile(e->x, e->s, e->fid, e->st, e->loc, e->at, &e->cur, NULL, 0) == 0 && !tile_pruned(e, &e->cur)) {
            e->ntilings++;
            return true;
        }
    }
    return false;
}

/* ---- the enumeration ------------------------------------------------------- */

int space_enum_begin(space_enum *e, ir_arena *a, legal_ctx *x, const sc_pipeline *p, const bounds_result *b,
                     const sched_state *s, const space_opts *o) {
    memset(e, 0, sizeof *e);
    e->x = x;
    e->p = p;
    e->b = b;
    e->s = s;
    e->o = o;
    e->fid = space_next(p, s, &e->tiling);
    if (e->fid < 0) return -1;
    if (e->tiling) tilings_begin(e);
    else locations(e, a);
    e->iloc = -1;
    return e->fid;
}

bool space_enum_skip(space_enum *e) {
    if (e->fid < 0) return false;
    if (e->tiling) return next_tiling(e);
    if (e->iloc + 1 >= e->nlocs) return false;
    e->iloc++;
    return true;
}

sched_state *space_enum_next(space_enum *e, ir_arena *a) {
    if (!space_enum_skip(e)) return NULL;
    sched_state *c = sched_state_copy(a, e->s);
    sched_func *sf;
    if (e->tiling) {
        sf = sched_func_copy(a, e->s->f[e->fid]);
        sf->tile[e->st] = e->cur;
        sf->pending--;
        legal_inherit(e->x, sf, e->s->f[e->fid]);
    } else {
        sf = e->locs[e->iloc];
    }
    c->f[e->fid] = sf;
    return c;
}

int space_children(ir_arena *a, legal_ctx *x, const sc_pipeline *p, const bounds_result *b,
                   const sched_state *s, const space_opts *o, ir_vec *out) {
    space_enum e;
    if (space_enum_begin(&e, a, x, p, b, s, o) < 0) return 0;
    int n = 0;
    for (sched_state *c; (c = space_enum_next(&e, a)); n++) ir_vec_push(a, out, c);
    return n;
}

/* ---- the tilings of a stage, kept ------------------------------------------ */

/* A ROOT stage's legal tilings depend on the stage alone (legal_tile's
 * ROOT rules and the §6.6 rules read the stage's extents and the
 * target), so they are enumerated once.  A BLOCK stage's candidates are
 * kept with their thread counts: legal_block_threads gives the one limit
 * that a state puts on them. */
typedef struct {
    bool root_done, block_done;
    bool block_shaped;          /* the candidates are well formed: filter by threads */
    int nroot, nblock;
    sched_tile *root, *block;
    int64_t *bthreads, bmax;
} stage_tilings;

struct space_tilings {
    const sc_pipeline *p;
    const bounds_result *b;
    space_opts o;
    int *slot;                  /* [fid]: its first stage's entry */
    stage_tilings *st;
    sched_tile *scratch;        /* a filtered BLOCK list, valid until the next call */
    int cap;
};

space_tilings *space_tilings_new(const sc_pipeline *p, const bounds_result *b, const space_opts *o) {
    space_tilings *c = base_calloc(1, sizeof *c);
    c->p = p;
    c->b = b;
    c->o = *o;
    c->slot = base_calloc((size_t)p->funcs.n + 1, sizeof *c->slot);
    int n = 0;
    for (int i = 0; i < p->funcs.n; i++) {
        c->slot[i] = n;
        n += func_at(p, i)->nstages;
    }
    c->st = base_calloc((size_t)n + 1, sizeof *c->st);
    c->slot[p->funcs.n] = n;
    return c;
}

void space_tilings_free(space_tilings *c) {
    if (!c) return;
    for (int i = 0; i < c->slot[c->p->funcs.n]; i++) {
        free(c->st[i].root);
        free(c->st[i].block);
        free(c->st[i].bthreads);
    }
    free(c->st);
    free(c->slot);
    free(c->scratch);
    free(c);
}

static void push_tile(sched_tile **v, int *n, int *cap, const sched_tile *t) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = base_realloc(*v, sizeof **v * (size_t)*cap);
    }
    (*v)[(*n)++] = *t;
}

/* The enumerator of s's tilings of fid, begun (no arena: tilings make no
 * records). */
static void tilings_enum(space_tilings *c, legal_ctx *x, const sched_state *s, int fid, space_enum *e) {
    memset(e, 0, sizeof *e);
    e->x = x;
    e->p = c->p;
    e->b = c->b;
    e->s = s;
    e->o = &c->o;
    e->fid = fid;
    e->tiling = true;
    tilings_begin(e);
}

int space_tilings_of(space_tilings *c, legal_ctx *x, const sched_state *s, int fid, const sched_tile **out) {
    const sched_func *sf = s->f[fid];
    assert(sf && sf->pending > 0);
    int st = sf->nstages - sf->pending;
    stage_tilings *t = &c->st[c->slot[fid] + st];
    space_enum e;
    if (sf->loc == SCHED_ROOT) {
        if (!t->root_done) {
            int cap = 0;
            tilings_enum(c, x, s, fid, &e);
            while (next_tiling(&e)) push_tile(&t->root, &t->nroot, &cap, &e.cur);
            t->root_done = true;
        }
        *out = t->root;
        return t->nroot;
    }
    assert(sf->loc == SCHED_BLOCK);
    if (!t->block_done) {
        int cap = 0, dims[SC_MAX_DIMS];
        tilings_enum(c, x, s, fid, &e);
        t->block_shaped = legal_pure_dims(func_at(c->p, fid), st, dims) == e.np;
        for (e.started = true; t->block_shaped;) {
            current_tile(&e);
            push_tile(&t->block, &t->nblock, &cap, &e.cur);
            int k = 0;
            for (; k < e.np; k++) {
                if (++e.digit[k] < e.nopt[k]) break;
                e.digit[k] = 0;
            }
            if (k == e.np) break;
        }
        t->bthreads = base_calloc((size_t)t->nblock + 1, sizeof *t->bthreads);
        for (int i = 0; i < t->nblock; i++) {
            t->bthreads[i] = legal_threads(&t->block[i]);
            if (t->bthreads[i] > t->bmax) t->bmax = t->bthreads[i];
        }
        t->block_done = true;
    }
    int n = 0;
    if (!t->block_shaped) {
        /* not expected (the options are made from the stage's own
         * loops), but then the enumerator itself answers */
        tilings_enum(c, x, s, fid, &e);
        while (next_tiling(&e)) push_tile(&c->scratch, &n, &c->cap, &e.cur);
        *out = c->scratch;
        return n;
    }
    int64_t limit = legal_block_threads(x, s, fid, sf->at);
    if (limit >= t->bmax) {
        *out = t->block;
        return t->nblock;
    }
    for (int i = 0; i < t->nblock; i++)
        if (t->bthreads[i] <= limit) push_tile(&c->scratch, &n, &c->cap, &t->block[i]);
    *out = c->scratch;
    return n;
}
