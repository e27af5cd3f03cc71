/*
 * beam.c - the beam search of Anderson et al. 2021 (beam.h).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "beam.h"
#include "features.h"
#include "legal.h"
#include "nest.h"

void search_opts_default(search_opts *o, const target *t, cost_model *m) {
    memset(o, 0, sizeof *o);
    o->t = t;
    o->model = m;
    o->beam = 32;
    o->passes = 5;
    o->seed = 1;
    o->prune = true;
    o->freeze = true;
    o->freeze_min = SEARCH_FREEZE_MIN;
    o->lane_max = 0.5;
    o->core_max = 1.2;
    o->share_tiles = true;
}

/* ---- a map from 64-bit hashes to small records (open addressing) -------- */

typedef struct {
    uint64_t key;
    double cost;                  /* NAN: featurized, not costed */
    int count;
    bool used, secondary;
} slot;

typedef struct {
    slot *s;
    size_t cap, n;
} hmap;

static void hmap_init(hmap *m, size_t cap) {
    m->cap = cap;
    m->n = 0;
    m->s = calloc(cap, sizeof *m->s);
    if (!m->s) abort();
}

static void hmap_free(hmap *m) {
    free(m->s);
    m->s = NULL;
    m->cap = m->n = 0;
}

static void hmap_clear(hmap *m) {
    memset(m->s, 0, m->cap * sizeof *m->s);
    m->n = 0;
}

static slot *hmap_find(const hmap *m, uint64_t key) {
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->s[i].used) {
        if (m->s[i].key == key) return &m->s[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

static slot *hmap_get(hmap *m, uint64_t key) {
    slot *f = hmap_find(m, key);
    if (f) return f;
    if (2 * (m->n + 1) > m->cap) {
        hmap old = *m;
        hmap_init(m, old.cap * 2);
        for (size_t i = 0; i < old.cap; i++)
            if (old.s[i].used) *hmap_get(m, old.s[i].key) = old.s[i];
        free(old.s);
    }
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->s[i].used) i = (i + 1) & (m->cap - 1);
    m->s[i].used = true;
    m->s[i].key = key;
    m->s[i].cost = NAN;
    m->n++;
    return &m->s[i];
}

/* ---- the context ------------------------------------------------------- */

struct search_ctx {
    const sc_pipeline *p;
    const bounds_result *b;
    search_opts o;
    space_opts so;
    nest_ctx *nx;
    feat_ctx *fx;
    space_tilings *tilings;       /* the legal tilings of each stage, kept */
    cost_memo *parts;             /* the model's part of each feature row costed, by key */
    int64_t flushes;              /* of fx, when parts was last cleared */
    hmap memo;                    /* depth-3 hash -> cost, secondary */
    ir_arena *keep;               /* frozen records */
    const sched_func **frozen;    /* [fid]: the decision kept, NULL = free */
    bool restricted;              /* root or inline only (the freezing pre-pass) */
    search_stats st;
};

search_ctx *search_new(const sc_pipeline *p, const bounds_result *b, const search_opts *o, char *err,
                       size_t errlen) {
    search_ctx *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->p = p;
    c->b = b;
    c->o = *o;
    if (c->o.beam < 1) c->o.beam = 1;
    if (c->o.passes < 1) c->o.passes = 1;
    c->so.t = o->t;
    c->so.prune = o->prune;
    c->so.unroll_whole = o->unroll_whole;
    /* even the all-root state must fit, or no state does */
    legal_ctx *x = space_legal(p, b, &c->so);
    ir_arena *a = ir_arena_new();
    int rc = legal_fits(x, sched_state_new(a, p), err, errlen);
    ir_arena_free(a);
    legal_free(x);
    if (rc != 0) {
        free(c);
        return NULL;
    }
    c->nx = nest_ctx_new(p, b);
    nest_ctx_set_staging(c->nx, target_stages_registers(c->so.t));
    nest_ctx_set_cyclic(c->nx, target_cyclic_points(c->so.t));
    c->fx = feat_ctx_new(p, b);
    c->tilings = space_tilings_new(p, b, &c->so);
    c->parts = cost_memo_new();
    feat_ctx_hold(c->fx, true);           /* trimmed between steps (run_pass) */
    hmap_init(&c->memo, 1 << 12);
    c->keep = ir_arena_new();
    c->frozen = ir_alloc(c->keep, sizeof *c->frozen * (size_t)(p->funcs.n ? p->funcs.n : 1));
    return c;
}

void search_free(search_ctx *c) {
    if (!c) return;
    nest_ctx_free(c->nx);
    feat_ctx_free(c->fx);
    space_tilings_free(c->tilings);
    cost_memo_free(c->parts);
    hmap_free(&c->memo);
    ir_arena_free(c->keep);
    free(c);
}

search_stats search_ctx_stats(const search_ctx *c) {
    return c->st;
}

static sched_state *copy_state(ir_arena *a, const sc_pipeline *p, const sched_state *s) {
    sched_state *d = sched_state_new(a, p);
    for (int i = 0; i < s->nfuncs; i++)
        if (s->f[i]) d->f[i] = sched_func_copy(a, s->f[i]);
    return d;
}

/* Featurizes s with the ctx's caches, its rows copied.  0, or -1 with
 * err. */
static int featurize(search_ctx *c, const sched_state *s, feat_result *out, char *err, size_t errlen) {
    nest *m = nest_build(c->nx, s, err, errlen);
    if (!m) return -1;
    int rc = feat_compute_ctx(c->fx, s, m, c->o.t, out, err, errlen);
    nest_free(m);
    return rc;
}

/* The same, the rows pointing into the cache (valid until the next
 * feat_ctx_trim: the ctx holds fx). */
static int featurize_refs(search_ctx *c, const sched_state *s, feat_refs *out, char *err, size_t errlen) {
    nest *m = nest_build(c->nx, s, err, errlen);
    if (!m) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    int rc = feat_compute_refs(c->fx, s, m, c->o.t, out, err, errlen);
    nest_free(m);
    return rc;
}

/* Whether the stages fid has in r waste more than the thresholds: the
 * share of its block's lanes (its kernel's warps) that idle while the
 * stage runs, and the idle-core figure of the cost terms (costmodel.c).
 * The feature idle_lane_wastage is not the lane figure: it counts idle
 * lanes of the stage's active warps over the target's thread limit, under
 * 32 / 1024 for any stage, so that a threshold of 0.5 on it never caught
 * a stage of 2 threads in a block of 64. */
static bool is_secondary(const search_ctx *c, const feat_refs *r, int fid) {
    const target *t = c->o.t;
    for (int i = 0; i < r->n; i++) {
        if (r->rows[i]->func != fid) continue;
        const double *v = r->rows[i]->v;
        double block_lanes = fmax(1.0, v[FEAT_AT(FEAT_num_warps_per_block)] * t->warp_size);
        double lanes = 1.0 - fmin(block_lanes, v[FEAT_AT(FEAT_num_threads_per_block)]) / block_lanes;
        double blocks = fmax(1.0, v[FEAT_AT(FEAT_num_blocks)]);
        double resident = (double)t->sm_count * fmax(1.0, v[FEAT_AT(FEAT_max_block_occupancy)] * t->max_blocks_per_sm);
        double per_core = blocks / resident;
        double core = ceil(per_core) / fmax(1.0, per_core);
        if (lanes > c->o.lane_max || core > c->o.core_max) return true;
    }
    return false;
}

/* ---- one pass ------------------------------------------------------------ */

typedef struct node {
    const sched_state *s;
    const struct node *parent;
    double cost;                  /* with penalties */
    double raw;                   /* the model's */
    int64_t seq;                  /* ties: first made first */
    bool penalized;
} node;

/* A binary min-heap of nodes on (cost, seq). */
typedef struct {
    node **v;
    int n, cap;
} heap;

static bool before(const node *a, const node *b) {
    return a->cost < b->cost || (a->cost == b->cost && a->seq < b->seq);
}

static void heap_push(heap *h, node *x) {
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->v = realloc(h->v, sizeof *h->v * (size_t)h->cap);
        if (!h->v) abort();
    }
    int i = h->n++;
    while (i > 0 && before(x, h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
}

static node *heap_pop(heap *h) {
    if (!h->n) return NULL;
    node *top = h->v[0], *x = h->v[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        const node *best = x;
        if (l < h->n && before(h->v[l], best)) { m = l; best = h->v[l]; }
        if (r < h->n && before(h->v[r], best)) m = r;
        if (m == i) break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n) h->v[i] = x;
    return top;
}

/* A representative waiting for its cost. */
typedef struct {
    sched_state *s;
    const node *parent;
    uint64_t key;                 /* depth-3 hash */
    feat_refs fr;                 /* when featurized now */
    bool secondary, fresh;
    bool forced;                  /* its parent's only child: not costed */
    double cost;
} rep;

typedef struct {
    rep *v;
    int n, cap;
} reps;

static rep *reps_add(reps *r) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->v = realloc(r->v, sizeof *r->v * (size_t)r->cap);
        if (!r->v) abort();
    }
    rep *x = &r->v[r->n++];
    memset(x, 0, sizeof *x);
    return x;
}

static int hash_depth(int pass) {
    return pass + 1 < 3 ? pass + 1 : 3;
}

static int bucket_depth(int pass) {
    return pass + 1 < 2 ? pass + 1 : 2;
}

/* ceil(log2(n)), at least 1 (never more than n). */
static int draws(int n) {
    int k = 0;
    while (k < 31 && (1 << k) < n) k++;
    if (k < 1) k = 1;
    return k < n ? k : n;
}

/* Whether child (deciding fid) keeps the restrictions of the ctx: root or
 * inline only in the restricted pass; a frozen Func's decision. */
static bool allowed(const search_ctx *c, const sched_state *child, int fid) {
    const sched_func *sf = child->f[fid];
    if (c->restricted && sf->loc != SCHED_ROOT && sf->loc != SCHED_INLINE) return false;
    const sched_func *fz = c->frozen[fid];
    if (!fz) return true;
    if (sf->loc != fz->loc || sf->at != fz->at) return false;
    int done = sf->tile ? sf->nstages - sf->pending : 0;
    for (int st = 0; st < done; st++)
        if (memcmp(&sf->tile[st], &fz->tile[st], sizeof sf->tile[st]) != 0) return false;
    return true;
}

/* A parent's only child (a frozen decision, an output's location, a
 * single legal tiling): there is nothing to choose between, so it is
 * passed on with its parent's cost, uncosted, unless it is complete. */
static bool pass_on(search_ctx *c, const node *parent, sched_state *child, reps *out) {
    if (space_next(c->p, child, NULL) < 0) return false;
    rep *r = reps_add(out);
    r->s = child;
    r->parent = parent;
    r->forced = true;
    r->cost = parent->raw;
    c->st.forced++;
    return true;
}

/* The drawn members of one bucket of m children of parent: each is
 * featurized (or found in the memo) and classified; the secondary ones are
 * kept only when none is primary.  0, or -1 with err. */
static int take_bucket(search_ctx *c, const node *parent, int fid, sched_state *const *drawn, int k, int m,
                       reps *out, char *err, size_t errlen) {
    c->st.buckets++;
    c->st.drawn += k;
    int first = out->n, primary = 0;
    for (int t = 0; t < k; t++) {
        rep *r = reps_add(out);
        r->s = drawn[t];
        r->parent = parent;
        r->key = sched_hash(r->s, 3);
        slot *m0 = hmap_find(&c->memo, r->key);
        if (m0) {
            r->secondary = m0->secondary;
            r->cost = m0->cost;
        } else {
            if (featurize_refs(c, r->s, &r->fr, err, errlen) != 0) {
                /* the model refuses a state the enumerator made (an internal
                 * disagreement): left out, counted, the search goes on */
                out->n--;
                c->st.unfeaturized++;
                continue;
            }
            c->st.featurized++;
            r->fresh = true;
            r->secondary = is_secondary(c, &r->fr, fid);
            r->cost = NAN;
            hmap_get(&c->memo, r->key)->secondary = r->secondary;
        }
        primary += !r->secondary;
    }
    /* secondary representatives only when no primary one survives */
    if (primary) {
        int w = first;
        for (int t = first; t < out->n; t++) {
            if (out->v[t].secondary) {
                c->st.secondary_skipped++;
                if (out->v[t].fresh) feat_refs_free(&out->v[t].fr);
            } else {
                out->v[w++] = out->v[t];
            }
        }
        out->n = w;
    } else {
        c->st.secondary_costed += out->n - first;
    }
    if (c->o.on_bucket) c->o.on_bucket(c->o.hook, m, k, primary, primary ? 0 : out->n - first);
    return 0;
}

/* Random dropout over n candidates (keep[i]), never of them all. */
static void dropout(search_ctx *c, space_rng *rng, int n, bool *keep) {
    int left = 0;
    for (int i = 0; i < n; i++) left += keep[i];
    if (c->o.dropout <= 0 || left < 2) return;
    int now = 0;
    for (int i = 0; i < n; i++)
        if (keep[i] && (double)(space_rand(rng) >> 11) * 0x1.0p-53 < c->o.dropout) keep[i] = false;
    for (int i = 0; i < n; i++) now += keep[i];
    if (now == 0) {
        int pick = space_rand_below(rng, left);
        for (int i = 0; i < n; i++)
            if (!keep[i] && pick-- == 0) { keep[i] = true; break; }
        now = 1;
    }
    c->st.dropped += left - now;
}

/* k of the n indices with keep[i] set, uniformly (a partial Fisher-Yates
 * shuffle of them); their count. */
static int draw(space_rng *rng, int n, const bool *keep, int *idx) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (keep[i]) idx[m++] = i;
    int k = draws(m);
    for (int t = 0; t < k; t++) {
        int u = t + space_rand_below(rng, m - t);
        int tmp = idx[t]; idx[t] = idx[u]; idx[u] = tmp;
    }
    return k;
}

/* Whether stages a and b of fid run the same loops (the same variables
 * and reduction dimensions over the same ranges). */
static bool same_loops(const search_ctx *c, int fid, int a, int b) {
    const bounds_stage *x = &c->b->funcs[fid].stages[a], *y = &c->b->funcs[fid].stages[b];
    if (x->nloops != y->nloops) return false;
    for (int j = 0; j < x->nloops; j++)
        if (x->which[j] != y->which[j] || x->min[j] != y->min[j] || x->extent[j] != y->extent[j]) return false;
    return true;
}

/* The tile sf just took for stage st, given to the pending stages after
 * it that run the same loops while it is legal for them (and a frozen
 * decision does not say otherwise): a run of like updates is one
 * decision, as Anderson et al. tile all of a Func's stages at once.  bgu's
 * sol has 100 such updates; one search step each made its one-shot search
 * take 9 s with some weights (docs/search.md). */
static void share_tile(search_ctx *c, legal_ctx *x, const sched_state *s, sched_func *sf, int fid, int st) {
    const sched_func *fz = c->frozen[fid];
    while (sf->pending > 0) {
        int nx = sf->nstages - sf->pending;
        if (nx < 1 || !same_loops(c, fid, st, nx)) return;
        if (fz && fz->loc == sf->loc && memcmp(&fz->tile[nx], &sf->tile[st], sizeof sf->tile[st]) != 0) return;
        if (legal_tile(x, s, fid, nx, sf->loc, sf->at, &sf->tile[st], NULL, 0) != 0) return;
        sf->tile[nx] = sf->tile[st];
        sf->pending--;
    }
}

/* The tiling children of parent (phase b of fid).  A tiling never
 * changes the hash at depth <= 2 (sched_hash), so they are one bucket:
 * their tiles come from the stage's list (space_tilings_of, the same
 * tilings in the enumerator's order) and only the drawn ones become
 * states. */
static int expand_tilings(search_ctx *c, ir_arena *a, legal_ctx *x, int fid, const node *parent, space_rng *rng,
                          reps *out, char *err, size_t errlen) {
    const sched_func *fz0 = c->frozen[fid], *pf0 = parent->s->f[fid];
    if (fz0 && fz0->loc == pf0->loc && fz0->at == pf0->at) {
        /* a frozen tiling that is still legal is the only child: no need
         * to step through the others */
        int st = pf0->nstages - pf0->pending;
        if (legal_tile(x, parent->s, fid, st, pf0->loc, pf0->at, &fz0->tile[st], NULL, 0) == 0) {
            sched_state *ch = sched_state_copy(a, parent->s);
            sched_func *sf = sched_func_copy(a, pf0);
            sf->tile[st] = fz0->tile[st];
            sf->pending--;
            legal_inherit(x, sf, pf0);
            ch->f[fid] = sf;
            c->st.enumerated++;
            if (pass_on(c, parent, ch, out)) return 0;
            return take_bucket(c, parent, fid, &ch, 1, 1, out, err, errlen);
        }
    }
    const sched_tile *tiles;
    int n = space_tilings_of(c->tilings, x, parent->s, fid, &tiles);
    c->st.enumerated += n;
    assert(n > 0);
    bool *keep = malloc((size_t)n);
    int *idx = malloc(sizeof *idx * (size_t)n);
    sched_state **drawn = malloc(sizeof *drawn * (size_t)n);
    if (!keep || !idx || !drawn) abort();
    const sched_func *fz = c->frozen[fid], *pf = parent->s->f[fid];
    int st = pf->nstages - pf->pending, match = 0;
    for (int i = 0; i < n; i++) {
        keep[i] = !fz || fz->loc != pf->loc || !memcmp(&tiles[i], &fz->tile[st], sizeof tiles[i]);
        match += keep[i];
    }
    if (!match)                                  /* the frozen tiling no longer fits: free it */
        for (int i = 0; i < n; i++) keep[i] = true;
    dropout(c, rng, n, keep);
    int m = 0;
    for (int i = 0; i < n; i++) m += keep[i];
    int k = draw(rng, n, keep, idx);
    if (m == 1) {
        sched_state *ch = sched_state_copy(a, parent->s);
        sched_func *sf = sched_func_copy(a, pf);
        sf->tile[st] = tiles[idx[0]];
        sf->pending--;
        legal_inherit(x, sf, pf);
        ch->f[fid] = sf;
        if (c->o.share_tiles) share_tile(c, x, ch, sf, fid, st);
        if (pass_on(c, parent, ch, out)) {
            free(keep);
            free(idx);
            free(drawn);
            return 0;
        }
    }
    for (int t = 0; t < k; t++) {
        sched_state *ch = sched_state_copy(a, parent->s);
        sched_func *sf = sched_func_copy(a, pf);
        sf->tile[st] = tiles[idx[t]];
        sf->pending--;
        legal_inherit(x, sf, pf);
        ch->f[fid] = sf;
        if (c->o.share_tiles) share_tile(c, x, ch, sf, fid, st);
        drawn[t] = ch;
    }
    int rc = take_bucket(c, parent, fid, drawn, k, m, out, err, errlen);
    free(keep);
    free(idx);
    free(drawn);
    return rc;
}

/* The children of parent, filtered, dropped out and bucketed; the drawn
 * representatives are appended to out (featurized, or their memo entry
 * found).  0, or -1 with err. */
static int expand(search_ctx *c, ir_arena *a, legal_ctx *x, const node *parent, int pass, space_rng *rng,
                  reps *out, char *err, size_t errlen) {
    bool tiling;
    int fid = space_next(c->p, parent->s, &tiling);
    assert(fid >= 0);
    if (tiling) return expand_tilings(c, a, x, fid, parent, rng, out, err, errlen);
    space_enum e;
    space_enum_begin(&e, a, x, c->p, c->b, parent->s, &c->so);
    /* locations: a handful of children */
    sched_state *all[8];
    int n = 0;
    for (sched_state *ch; n < 8 && (ch = space_enum_next(&e, a));) all[n++] = ch;
    c->st.enumerated += n;
    assert(n > 0);
    bool keep[8], taken[8] = { false };
    int match = 0;
    for (int i = 0; i < n; i++) match += keep[i] = allowed(c, all[i], fid);
    if (!match)                                  /* a frozen decision that no longer fits: free it */
        for (int i = 0; i < n; i++) keep[i] = true;
    dropout(c, rng, n, keep);
    int left = 0, only = -1;
    for (int i = 0; i < n; i++)
        if (keep[i]) { left++; only = i; }
    if (left == 1 && pass_on(c, parent, all[only], out)) return 0;
    /* buckets by structural hash, in order of first appearance */
    uint64_t h[8];
    int d = bucket_depth(pass);
    for (int i = 0; i < n; i++) h[i] = sched_hash(all[i], d);
    for (int i = 0; i < n; i++) {
        if (!keep[i] || taken[i]) continue;
        bool in[8] = { false };
        int m = 0, idx[8];
        for (int j = i; j < n; j++)
            if (keep[j] && !taken[j] && h[j] == h[i]) { in[j] = taken[j] = true; m++; }
        int k = draw(rng, n, in, idx);
        sched_state *drawn[8];
        for (int t = 0; t < k; t++) drawn[t] = all[idx[t]];
        if (take_bucket(c, parent, fid, drawn, k, m, out, err, errlen) != 0) return -1;
    }
    return 0;
}

/* Costs every representative not memoized, in one batched call. */
static int cost_reps(search_ctx *c, reps *r, char *err, size_t errlen) {
    int n = 0;
    const feat_refs **fs = malloc(sizeof *fs * (size_t)(r->n ? r->n : 1));
    int *idx = malloc(sizeof *idx * (size_t)(r->n ? r->n : 1));
    double *ms = malloc(sizeof *ms * (size_t)(r->n ? r->n : 1));
    if (!fs || !idx || !ms) abort();
    for (int i = 0; i < r->n; i++) {
        if (r->v[i].forced) continue;
        if (!isnan(r->v[i].cost)) {
            c->st.memo_hits++;
            continue;
        }
        if (!r->v[i].fresh) {
            /* memoized as featurized but never costed (it was a secondary
             * representative then): featurize it again */
            int rc = featurize_refs(c, r->v[i].s, &r->v[i].fr, err, errlen);
            if (rc != 0) { free(fs); free(idx); free(ms); return -1; }
            r->v[i].fresh = true;
            c->st.featurized++;
        }
        fs[n] = &r->v[i].fr;
        idx[n++] = i;
    }
    int rc = 0;
    if (n) {
        c->st.predict_calls++;
        c->st.costed += n;
        /* the rows' keys die with a flush of the feature cache: their
         * parts can go too */
        int64_t fl = feat_ctx_stats(c->fx).flushes;
        if (fl != c->flushes) {
            cost_memo_clear(c->parts);
            c->flushes = fl;
        }
        rc = cost_predict_memo(c->o.model, c->parts, n, fs, ms, err, errlen);
        for (int j = 0; rc == 0 && j < n; j++) {
            double v = ms[j];
            if (!(v >= 0) || isinf(v)) v = 1e300;    /* NaN or absurd: last, but still a state */
            r->v[idx[j]].cost = v;
            hmap_get(&c->memo, r->v[idx[j]].key)->cost = v;
        }
    }
    for (int i = 0; i < r->n; i++)
        if (r->v[i].fresh) feat_refs_free(&r->v[i].fr);
    free(fs);
    free(idx);
    free(ms);
    return rc;
}

/* One pass of the beam search.  *best gets the best complete node (in the
 * pass arena).  blessed: the hashes of the earlier passes' good states
 * (NULL in the first pass); on return it holds this pass's. */
static int run_pass(search_ctx *c, ir_arena *a, int beam, int pass, space_rng *rng, hmap *blessed, bool use_blessed,
                    const node **best, char *err, size_t errlen) {
    legal_ctx *x = space_legal(c->p, c->b, &c->so);
    heap q = { 0 };
    hmap seen;
    hmap_init(&seen, 256);
    reps r = { 0 };
    ir_vec complete = { 0 };
    int64_t seq = 0;
    node *root = ir_alloc(a, sizeof *root);
    root->s = sched_state_new(a, c->p);
    heap_push(&q, root);
    int hd = hash_depth(pass), rc = 0;
    *best = NULL;
    while (rc == 0 && !*best) {
        hmap_clear(&seen);
        r.n = 0;
        feat_ctx_trim(c->fx);             /* no representative's rows are held now */
        int expanded = 0;
        node *nd;
        while (rc == 0 && expanded < beam && (nd = heap_pop(&q))) {
            if (space_next(c->p, nd->s, NULL) < 0) {
                *best = nd;                      /* the cheapest state left is complete: the pass is over */
                break;
            }
            slot *sl = hmap_get(&seen, sched_hash(nd->s, hd));
            if (sl->count > 0 && !nd->penalized) {
                nd->penalized = true;
                nd->cost *= 1 + sl->count;
                heap_push(&q, nd);
                continue;
            }
            sl->count++;
            rc = expand(c, a, x, nd, pass, rng, &r, err, errlen);
            expanded++;
        }
        if (*best || rc != 0) {
            /* representatives featurized in this step before the pass
             * ended are not costed */
            for (int i = 0; i < r.n; i++)
                if (r.v[i].fresh) feat_refs_free(&r.v[i].fr);
            break;
        }
        if (expanded == 0) break;                /* cannot happen: every state has a child */
        rc = cost_reps(c, &r, err, errlen);
        q.n = 0;
        for (int i = 0; rc == 0 && i < r.n; i++) {
            node *ch = ir_alloc(a, sizeof *ch);
            ch->s = r.v[i].s;
            ch->parent = r.v[i].parent;
            ch->raw = r.v[i].cost;
            ch->cost = ch->raw;
            ch->seq = seq++;
            if (use_blessed && !hmap_find(blessed, sched_hash(ch->s, hd))) ch->cost *= SEARCH_UNBLESSED;
            heap_push(&q, ch);
            if (space_next(c->p, ch->s, NULL) < 0) ir_vec_push(a, &complete, ch);
        }
    }
    if (rc == 0 && !*best) {
        snprintf(err, errlen, "the search of %s ran out of states", c->p->name);
        rc = -1;
    }
    if (rc == 0) {
        /* bless the good complete states and their ancestors for the next pass */
        hmap_clear(blessed);
        int nd = hash_depth(pass + 1);
        for (int i = 0; i < complete.n; i++) {
            const node *n0 = complete.items[i];
            if (n0->raw > SEARCH_BLESS_RATIO * (*best)->raw && n0 != *best) continue;
            for (const node *u = n0; u; u = u->parent) hmap_get(blessed, sched_hash(u->s, nd));
        }
        for (const node *u = *best; u; u = u->parent) hmap_get(blessed, sched_hash(u->s, nd));
    }
    free(q.v);
    free(r.v);
    hmap_free(&seen);
    legal_free(x);
    return rc;
}

sched_state *search_run(search_ctx *c, ir_arena *a, int beam, int passes, uint64_t seed, double *ms, char *err,
                        size_t errlen) {
    double t0 = base_now_s();
    space_rng rng = { seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull };
    hmap blessed;
    hmap_init(&blessed, 256);
    sched_state *out = NULL;
    double out_ms = INFINITY;
    if (beam < 1) beam = 1;
    if (passes < 1) passes = 1;
    for (int pass = 0; pass < passes; pass++) {
        ir_arena *pa = ir_arena_new();
        const node *best = NULL;
        int rc = run_pass(c, pa, beam, pass, &rng, &blessed, pass > 0, &best, err, errlen);
        c->st.passes++;
        if (rc != 0) {
            ir_arena_free(pa);
            out = NULL;
            break;
        }
        if (!out || best->raw < out_ms) {
            out = copy_state(a, c->p, best->s);
            out_ms = best->raw;
        }
        ir_arena_free(pa);
    }
    hmap_free(&blessed);
    if (out && ms) *ms = out_ms;
    c->st.samples++;
    c->st.wall_s += base_now_s() - t0;
    return out;
}

/* ---- freezing -------------------------------------------------------------- */

int search_func_costs(search_ctx *c, const sched_state *s, double *cost, char *err, size_t errlen) {
    const sc_pipeline *p = c->p;
    for (int i = 0; i < p->funcs.n; i++) cost[i] = 0;
    feat_result fr = { 0 };
    if (featurize(c, s, &fr, err, errlen) != 0) return -1;
    /* one feat_result per Func with rows: its own rows only */
    int n = 0;
    feat_result *per = calloc((size_t)p->funcs.n + 1, sizeof *per);
    const feat_result **fs = calloc((size_t)p->funcs.n + 1, sizeof *fs);
    int *fid = calloc((size_t)p->funcs.n + 1, sizeof *fid);
    double *ms = calloc((size_t)p->funcs.n + 1, sizeof *ms);
    if (!per || !fs || !fid || !ms) abort();
    for (int f = 0; f < p->funcs.n; f++) {
        int k = 0;
        for (int i = 0; i < fr.n; i++) k += fr.rows[i].func == f;
        if (!k) continue;
        per[n].rows = malloc(sizeof *per[n].rows * (size_t)k);
        if (!per[n].rows) abort();
        for (int i = 0; i < fr.n; i++)
            if (fr.rows[i].func == f) per[n].rows[per[n].n++] = fr.rows[i];
        fs[n] = &per[n];
        fid[n++] = f;
    }
    int rc = n ? cost_predict(c->o.model, n, fs, ms, err, errlen) : 0;
    if (n) c->st.predict_calls++;
    for (int i = 0; i < n; i++) {
        if (rc == 0) cost[fid[i]] = ms[i];
        free(per[i].rows);
    }
    free(per);
    free(fs);
    free(fid);
    free(ms);
    feat_free(&fr);
    return rc;
}

void search_pick_free(const sc_pipeline *p, const double *cost, int k, bool *is_free) {
    for (int i = 0; i < p->funcs.n; i++) is_free[i] = false;
    for (int j = 0; j < k; j++) {
        int pick = -1;
        for (int i = 0; i < p->funcs.n; i++) {
            const sc_func *f = p->funcs.items[i];
            if (f->kind != FUNC_DEFINED || is_free[i]) continue;
            if (pick < 0 || cost[i] > cost[pick]) pick = i;
        }
        if (pick < 0) break;
        is_free[pick] = true;
    }
}

/* The predicted time of the complete state s, in *ms.  0, or -1 with err. */
static int predict_state(search_ctx *c, const sched_state *s, double *ms, char *err, size_t errlen) {
    feat_result fr = { 0 };
    if (featurize(c, s, &fr, err, errlen) != 0) return -1;
    const feat_result *fs = &fr;
    int rc = cost_predict(c->o.model, 1, &fs, ms, err, errlen);
    c->st.predict_calls++;
    feat_free(&fr);
    return rc;
}

/* Adds s (predicted ms, found by sample) to the batch out[0..*n) of room
 * `room`, in order of prediction (equal predictions keep the order they
 * were found in), unless its text is there already; when the batch is
 * full, s displaces the worst predicted only if it is better.  The batch
 * owns the text it keeps. */
static void batch_add(const sc_pipeline *p, search_sample *out, int *n, int room, sched_state *s, double ms,
                      int sample) {
    char *text = sched_to_text(p, s);
    bool dup = false;
    for (int k = 0; k < *n && !dup; k++) dup = !strcmp(out[k].text, text);
    if (dup || (*n == room && ms >= out[*n - 1].ms)) {
        free(text);
        return;
    }
    if (*n == room) free(out[--*n].text);
    int at = *n;
    while (at > 0 && out[at - 1].ms > ms) at--;
    memmove(out + at + 1, out + at, sizeof *out * (size_t)(*n - at));
    out[at] = (search_sample){ s, ms, text, sample, ms };
    ++*n;
}

int search_freeze(search_ctx *c, bool *is_free, char *err, size_t errlen) {
    const sc_pipeline *p = c->p;
    for (int i = 0; i < p->funcs.n; i++) c->frozen[i] = NULL;
    c->restricted = true;
    ir_arena *a = ir_arena_new();
    sched_state *s = search_run(c, a, c->o.beam, 1, c->o.seed, NULL, err, errlen);
    c->st.samples--;                      /* the pre-pass is not a sample */
    c->restricted = false;
    double *cost = calloc((size_t)p->funcs.n + 1, sizeof *cost);
    bool *fr = calloc((size_t)p->funcs.n + 1, sizeof *fr);
    if (!cost || !fr) abort();
    int rc = s ? search_func_costs(c, s, cost, err, errlen) : -1;
    if (rc == 0) {
        int ndef = 0;
        for (int i = 0; i < p->funcs.n; i++) ndef += ((const sc_func *)p->funcs.items[i])->kind == FUNC_DEFINED;
        search_pick_free(p, cost, draws(ndef), fr);
        c->st.frozen = 0;
        for (int i = 0; i < p->funcs.n; i++) {
            if (is_free) is_free[i] = fr[i];
            if (fr[i] || !s->f[i]) continue;
            c->frozen[i] = sched_func_copy(c->keep, s->f[i]);
            c->st.frozen++;
        }
    }
    free(cost);
    free(fr);
    ir_arena_free(a);
    return rc;
}

/* ---- one-shot ---------------------------------------------------------------- */

/* Orders the batch out[0..n) by its members' agreement: rank = exp(mean +
 * spread x standard deviation of the members' log predictions), lowest
 * first (equal ranks keep their order); a model with one member leaves
 * the order as it is.  0, or -1 with err. */
static int rank_by_spread(search_ctx *c, search_sample *out, int n, double spread, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        feat_result fr = { 0 };
        double each[COST_MAX_MEMBERS];
        if (featurize(c, out[i].s, &fr, err, errlen) != 0) return -1;
        int k = cost_predict_members(c->o.model, &fr, each, err, errlen);
        feat_free(&fr);
        if (k < 0) return -1;
        if (k < 2) return 0;
        double mean = 0, var = 0;
        for (int j = 0; j < k; j++) mean += log(each[j]) / k;
        for (int j = 0; j < k; j++) var += (log(each[j]) - mean) * (log(each[j]) - mean) / (k - 1);
        out[i].rank = exp(mean + spread * sqrt(var));
    }
    for (int i = 1; i < n; i++) {
        search_sample x = out[i];
        int at = i;
        while (at > 0 && out[at - 1].rank > x.rank) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = x;
    }
    return 0;
}

int search_batch(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const search_opts *o, int samples,
                 search_sample *out, search_stats *st, char *err, size_t errlen) {
    double t0 = base_now_s();
    search_ctx *c = search_new(p, b, o, err, errlen);
    if (!c) return -1;
    int ndef = 0;
    for (int i = 0; i < p->funcs.n; i++) ndef += ((const sc_func *)p->funcs.items[i])->kind == FUNC_DEFINED;
    int rc = 0, n = 0;
    if (o->freeze && ndef >= o->freeze_min) rc = search_freeze(c, NULL, err, errlen);
    if (samples < 1) samples = 1;
    for (int i = 0; rc == 0 && i < samples; i++) {
        double m = INFINITY;
        sched_state *s = i == 0 ? search_run(c, a, c->o.beam, c->o.passes, o->seed, &m, err, errlen)
                                : search_run(c, a, 1, 1, o->seed + (uint64_t)i, &m, err, errlen);
        if (!s) { rc = -1; break; }
        batch_add(p, out, &n, samples, s, m, i);
    }
    /* The fixed schedules, baseline and root, each where it passes the
     * target's rules (space_reference; the rules, not the pruning's warp
     * multiples, which narrow what the search enumerates), join the batch
     * with their predictions (samples -1 and -2): a batch never lacks a
     * schedule the model prefers to them. */
    sched_state *fx[2] = { NULL, NULL };
    if (rc == 0) space_reference(a, p, b, c->o.t, false, fx);
    for (int k = 0; k < 2 && rc == 0; k++) {
        double fx_ms;
        if (fx[k] && (rc = predict_state(c, fx[k], &fx_ms, err, errlen)) == 0)
            batch_add(p, out, &n, samples, fx[k], fx_ms, -1 - k);
    }
    if (rc == 0 && o->spread > 0) rc = rank_by_spread(c, out, n, o->spread, err, errlen);
    if (st) {
        *st = c->st;
        st->wall_s = base_now_s() - t0;
    }
    search_free(c);
    if (rc != 0) {
        search_samples_free(out, n);
        return -1;
    }
    return n;
}

void search_samples_free(search_sample *s, int n) {
    for (int i = 0; i < n; i++) {
        free(s[i].text);
        s[i].text = NULL;
    }
}

sched_state *search_oneshot(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const search_opts *o,
                            int samples, double *ms, search_stats *st, char *err, size_t errlen) {
    if (samples < 1) samples = 1;
    search_sample *all = malloc(sizeof *all * (size_t)samples);
    if (!all) abort();
    int n = search_batch(a, p, b, o, samples, all, st, err, errlen);
    sched_state *best = n > 0 ? all[0].s : NULL;
    if (best && ms) *ms = all[0].ms;
    if (n > 0) search_samples_free(all, n);
    free(all);
    return best;
}

/* ---- explain ----------------------------------------------------------------- */

/* Each row's predicted cost, the mean over the nm models (as
 * cost_learned_mean_new predicts), and, where part and floored are given,
 * each term's part of it (relu(z_k) * term_k * scale_k; slots NN_COEF and
 * NN_COEF + 1: the cost of the models whose prediction fell to the
 * instruction and the gather floor) and how many models fell to each;
 * terms gets each row's NN_COEF terms. */
enum { PART_SLOTS = NN_COEF + 2 };

static void stage_costs(const feat_result *fr, const target *t, const nn_model *const *ms, int nm, double *mean,
                        double *part, int *floored, double *terms) {
    int n = fr->n;
    size_t rn = (size_t)(n ? n : 1);
    const double **algo = malloc(sizeof *algo * rn);
    double *sched = malloc(sizeof *sched * rn * NN_SCHED_IN);
    double *cost = malloc(sizeof *cost * rn);
    if (!algo || !sched || !cost) abort();
    for (int i = 0; i < n; i++) {
        algo[i] = fr->rows[i].v;
        nn_sched_inputs(fr->rows[i].v, sched + (size_t)i * NN_SCHED_IN);
        cost_terms(fr->rows[i].v, t, terms + (size_t)i * NN_COEF);
        mean[i] = 0;
    }
    nn_rows rows = { n, algo, sched, terms };
    nn_tape tape;
    nn_tape_init(&tape);
    nn_tape_reserve(&tape, n);
    for (int j = 0; j < nm && n; j++) {
        const nn_model *m = ms[j];
        nn_forward(m, &rows, &tape, cost);
        double scale = exp(m->w[NN_OFF_SCALE]);
        for (int i = 0; i < n; i++) {
            mean[i] += cost[i] * scale / nm;
            if (!part) continue;
            double *pi = part + (size_t)i * PART_SLOTS;
            if (tape.floored[i]) {
                int g = tape.floored[i] == NN_FLOOR_GATHERS;
                pi[NN_COEF + g] += cost[i] * scale / nm;
                floored[2 * i + g]++;
                continue;
            }
            for (int k = 0; k < NN_COEF; k++) {
                double z = tape.z[(size_t)i * NN_COEF + k];
                pi[k] += (z > 0 ? z : 0) * terms[(size_t)i * NN_COEF + k] * m->term_scale[k] * scale / nm;
            }
        }
    }
    nn_tape_free(&tape);
    free(algo);
    free(sched);
    free(cost);
}

int search_stage_costs(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                       const nn_model *const *ms, int nm, feat_result *fr, double **cost, char *err, size_t errlen) {
    *cost = NULL;
    memset(fr, 0, sizeof *fr);
    if (feat_compute(p, b, s, t, fr, err, errlen) != 0) return -1;
    size_t rn = (size_t)(fr->n ? fr->n : 1);
    double *terms = malloc(sizeof *terms * rn * NN_COEF);
    *cost = malloc(sizeof **cost * rn);
    if (!terms || !*cost) abort();
    stage_costs(fr, t, ms, nm, *cost, NULL, NULL, terms);
    free(terms);
    return 0;
}

int search_explain(FILE *out, const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                   const nn_model *const *ms, int nm, char *err, size_t errlen) {
    feat_result fr = { 0 };
    if (feat_compute(p, b, s, t, &fr, err, errlen) != 0) return -1;
    int n = fr.n;
    size_t rn = (size_t)(n ? n : 1);
    enum { SLOTS = PART_SLOTS };
    double *terms = malloc(sizeof *terms * rn * NN_COEF);
    double *mean = calloc(rn, sizeof *mean), *part = calloc(rn * SLOTS, sizeof *part);
    int *floored = calloc(rn * 2, sizeof *floored);
    if (!terms || !mean || !part || !floored) abort();
    stage_costs(&fr, t, ms, nm, mean, part, floored, terms);
    double total = 0;
    for (int i = 0; i < n; i++) total += mean[i];
    if (nm > 1)
        fprintf(out, "# predicted cost per stage (ms; %d stages, %.6g ms in all; the mean of %d models)\n", n, total,
                nm);
    else
        fprintf(out, "# predicted cost per stage (ms; %d stages, %.6g ms in all)\n", n, total);
    for (int i = 0; i < n; i++) {
        const sc_func *f = p->funcs.items[fr.rows[i].func];
        char name[160];
        if (f->nstages > 1) snprintf(name, sizeof name, "%s.%d", f->name, fr.rows[i].stage);
        else snprintf(name, sizeof name, "%s", f->name);
        fprintf(out, "#   %-24s %-6s %10.4g ms %5.1f%%", name, sched_loc_name(fr.rows[i].loc), mean[i],
                total > 0 ? 100 * mean[i] / total : 0.0);
        double *pi = part + (size_t)i * SLOTS;
        const double *ti = terms + (size_t)i * NN_COEF;
        int shown = 0;
        if (nm == 1 && (floored[2 * i] || floored[2 * i + 1])) {
            /* the network's terms fell below the floor: the floor is the cost */
            if (floored[2 * i + 1])
                fprintf(out, "  [gather floor: %.4g gathers x %.3g ms]\n", nn_gathers(ti), ms[0]->gather_floor_ms);
            else
                fprintf(out, "  [instruction floor: %.4g instructions x %.3g ms]\n", nn_instructions(ti),
                        ms[0]->floor_ms);
            continue;
        }
        /* the three largest parts, a floor among them where some models
         * fell to it */
        for (int j = 0; j < 3; j++) {
            int kb = -1;
            for (int k = 0; k < SLOTS; k++)
                if ((k >= NN_COEF || cost_term_name(k)) && pi[k] > 0 && (kb < 0 || pi[k] > pi[kb])) kb = k;
            if (kb < 0) break;
            fprintf(out, "%s", shown++ ? "; " : "  [");
            if (kb < NN_COEF) fprintf(out, "%s %.3g", cost_term_name(kb), pi[kb]);
            else
                fprintf(out, "%s floor in %d of %d models %.3g", kb == NN_COEF ? "instruction" : "gather",
                        floored[2 * i + (kb - NN_COEF)], nm, pi[kb]);
            pi[kb] = -1;
        }
        if (shown) fprintf(out, "]");
        fprintf(out, "\n");
    }
    free(terms);
    free(mean);
    free(part);
    free(floored);
    feat_free(&fr);
    return 0;
}
