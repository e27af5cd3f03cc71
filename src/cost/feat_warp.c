/*
 * feat_warp.c - a warp's memory transactions (feat_warp.h).
 *
 * Speed matters (searches featurize thousands of states a second), so:
 * an access whose forms have integer coefficients and offsets (nearly
 * all) has an address linear in the loop values, so its lanes keep fixed
 * offsets from lane 0 and an instruction's cost depends only on lane 0's
 * address modulo 128 bytes, computed once per lane pattern and residue;
 * distinct values are counted on sorted lanes; and the addresses already
 * loaded (unrolled loops) are kept in a hash set.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "feat_warp.h"

#define LANES 32
#define SECTOR_LOG2 5
#define SECTOR (1 << SECTOR_LOG2)
#define LINE 128
#define BANKS 32

/* The number of distinct values of v[0..n) (n <= LANES); sorts v. */
static int distinct(int64_t *v, int n) {
    for (int i = 1; i < n; i++) {
        int64_t x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) { v[j + 1] = v[j]; j--; }
        v[j + 1] = x;
    }
    int k = n > 0;
    for (int i = 1; i < n; i++) k += v[i] != v[i - 1];
    return k;
}

/* The serial iteration after s, as per-loop offsets (loop 0 fastest):
 * iteration number it has the digits of it in the loops' extents, each
 * digit times its loop's step. */
static void next_iteration(const feat_lanes *ln, int64_t *s) {
    for (int j = 0; j < ln->nloops; j++) {
        int64_t step = ln->sstep[j] > 1 ? ln->sstep[j] : 1;
        if ((s[j] += step) < ln->serial[j] * step) return;
        s[j] = 0;
    }
}

/* Whether a coordinate of the access is irregular (a gather). */
static bool irregular(const feat_form *dims, const feat_storage *st) {
    for (int d = 0; d < st->ndims; d++)
        if (!dims[d].ok) return true;
    return false;
}

/* The byte address of a regular access by a lane at loop values x. */
static int64_t address(const feat_form *dims, const feat_storage *st, int nloops, const int64_t *x) {
    int64_t a = 0;
    for (int d = 0; d < st->ndims; d++) {
        const feat_form *f = &dims[d];
        double v = f->off;
        for (int j = 0; j < nloops; j++) v += f->c[j] * (double)x[j];
        a += ((int64_t)floor(v) - st->base[d]) * st->stride[d];
    }
    return a * st->elem;
}

/* Whether every coordinate is regular with integer coefficients and
 * offset; then address = konst + sum_j step[j] * x_j (bytes). */
static bool linear(const feat_form *dims, const feat_storage *st, int nloops, int64_t *konst, int64_t *step) {
    *konst = 0;
    for (int j = 0; j < nloops; j++) step[j] = 0;
    for (int d = 0; d < st->ndims; d++) {
        const feat_form *f = &dims[d];
        if (!f->ok || f->off != floor(f->off) || fabs(f->off) > 1e15) return false;
        for (int j = 0; j < nloops; j++)
            if (f->c[j] != floor(f->c[j]) || fabs(f->c[j]) > 1e9) return false;
        *konst += ((int64_t)f->off - st->base[d]) * st->stride[d] * st->elem;
        for (int j = 0; j < nloops; j++) step[j] += (int64_t)f->c[j] * st->stride[d] * st->elem;
    }
    return true;
}

/* The transactions and distinct bytes of one instruction whose active
 * lanes read addr[0..m).  One sort: floor division is monotone, so the
 * sorted addresses give sorted elements and sectors. */
static void instruction(const feat_storage *st, const int64_t *addr, int m, double *trans, double *needed) {
    int64_t a[LANES];
    memcpy(a, addr, sizeof(int64_t) * (size_t)m);
    distinct(a, m);
    int units = m > 0, sectors = m > 0, es = base_log2_exact(st->elem);
    for (int l = 1; l < m; l++) {
        if (es >= 0) units += (a[l] >> es) != (a[l - 1] >> es);
        else units += base_floor_div(a[l], st->elem) != base_floor_div(a[l - 1], st->elem);
        sectors += (a[l] >> SECTOR_LOG2) != (a[l - 1] >> SECTOR_LOG2);
    }
    *needed = (double)units * st->elem;
    if (!st->shared) {
        *trans = sectors;
        return;
    }
    /* the most distinct 4-byte words any bank serves: the addresses are
     * sorted, so equal words are neighbours */
    int count[BANKS] = {0}, worst = 0;
    for (int l = 0; l < m; l++) {
        int64_t w = a[l] >> 2;                                /* floor(a / 4) */
        if (l && w == a[l - 1] >> 2) continue;
        int k = ++count[w & (BANKS - 1)];
        if (k > worst) worst = k;
    }
    *trans = worst;
}

/* Calls with a linear address share a lane pattern when their lanes sit
 * at the same offsets from lane 0 (stencil taps do): an instruction of
 * the pattern is then its lane-0 address B, and its cost depends on B
 * only modulo 128 bytes (sectors, lines and banks all divide 128). */
#define ALIGN 128
typedef struct {
    int64_t rel[LANES];
    double lift;                      /* distinct lines from lane 0 */
    bool have[ALIGN];
    double trans[ALIGN], needed[ALIGN];
} pattern;

#define POOL_BUCKETS 1024

/* Patterns, for one call or kept across calls (feat_warp_pool): keyed by
 * the lane offsets, the lanes and the storage's element size and kind
 * (what instruction() reads besides the addresses). */
struct feat_warp_pool {
    pattern *p;
    uint64_t *h;
    int *next;                        /* chain in its bucket, -1 ends */
    int n, cap;
    int head[POOL_BUCKETS];           /* first pattern + 1; 0: none */
    /* scratch of one feat_warp_access at a time, kept between calls (not
     * counted in feat_warp_pool_bytes): its per-call arrays, and the
     * reuse set, whose slots are empty unless stamped with the call's
     * generation (so it is never cleared) */
    void *buf;
    size_t bufcap;
    uint64_t *skeys;
    uint32_t *sgen, scur;
    int64_t scap;
};

feat_warp_pool *feat_warp_pool_new(void) { return calloc(1, sizeof(feat_warp_pool)); }

static void pool_release(feat_warp_pool *pool) {
    free(pool->p);
    free(pool->h);
    free(pool->next);
    free(pool->buf);
    free(pool->skeys);
    free(pool->sgen);
}

void feat_warp_pool_free(feat_warp_pool *pool) {
    if (!pool) return;
    pool_release(pool);
    free(pool);
}

void feat_warp_pool_clear(feat_warp_pool *pool) {
    pool_release(pool);
    memset(pool, 0, sizeof *pool);
}

size_t feat_warp_pool_bytes(const feat_warp_pool *pool) {
    return sizeof *pool + (size_t)pool->cap * (sizeof(pattern) + sizeof(uint64_t) + sizeof(int));
}

/* The index of the pattern with these lane offsets (added if new), or -1
 * when out of memory. */
static int find_pattern(feat_warp_pool *pool, const feat_storage *st, const int64_t *rel, int nlanes) {
    uint64_t h = 1469598103934665603ull ^ ((uint64_t)nlanes << 40 | (uint64_t)st->elem << 8 | (uint64_t)st->shared);
    for (int l = 0; l < nlanes; l++) h = (h ^ (uint64_t)rel[l]) * 1099511628211ull;
    int bucket = (int)(h % POOL_BUCKETS);
    for (int g = pool->head[bucket] - 1; g >= 0; g = pool->next[g])
        if (pool->h[g] == h && !memcmp(pool->p[g].rel, rel, sizeof(int64_t) * (size_t)nlanes)) return g;
    if (pool->n == pool->cap) {
        int cap = pool->cap ? 2 * pool->cap : 8;
        pattern *p = realloc(pool->p, sizeof *p * (size_t)cap);
        if (!p) return -1;
        pool->p = p;
        uint64_t *hs = realloc(pool->h, sizeof *hs * (size_t)cap);
        if (!hs) return -1;
        pool->h = hs;
        int *nx = realloc(pool->next, sizeof *nx * (size_t)cap);
        if (!nx) return -1;
        pool->next = nx;
        pool->cap = cap;
    }
    pattern *g = &pool->p[pool->n];
    memset(g->rel, 0, sizeof g->rel);
    memcpy(g->rel, rel, sizeof(int64_t) * (size_t)nlanes);
    memset(g->have, 0, sizeof g->have);
    int64_t lines[LANES];
    for (int l = 0; l < nlanes; l++) lines[l] = base_floor_div(rel[l], LINE);
    g->lift = distinct(lines, nlanes);
    pool->h[pool->n] = h;
    pool->next[pool->n] = pool->head[bucket] - 1;
    pool->head[bucket] = pool->n + 1;
    return pool->n++;
}

/* The cost of residue r of a pattern, computed on first use. */
static void pattern_fill(const feat_storage *st, pattern *g, int m, int r) {
    int64_t addr[LANES];
    for (int l = 0; l < m; l++) addr[l] = g->rel[l] + r;
    instruction(st, addr, m, &g->trans[r], &g->needed[r]);
    g->have[r] = true;
}

static inline void pattern_cost(const feat_storage *st, pattern *g, int m, int64_t b, double *trans, double *needed) {
    int r = (int)(b & (ALIGN - 1));                           /* b mod 128, in [0, 128) */
    if (!g->have[r]) pattern_fill(st, g, m, r);
    *trans = g->trans[r];
    *needed = g->needed[r];
}

/* A set of 64-bit keys: open addressing, a slot empty unless gen[i] is
 * cur.  Two values with the same mixed key would merge; with 64-bit
 * mixing that does not happen in practice. */
typedef struct {
    uint64_t *keys;
    uint32_t *gen, cur;
    int64_t mask;
} key_set;

static uint64_t mix2(uint64_t a, int64_t b) {
    uint64_t h = ((uint64_t)b * 0x9e3779b97f4a7c15ull) ^ ((a + 1) * 0xc2b2ae3d27d4eb4full);
    h ^= h >> 31;
    return h ? h : 1;
}

static bool set_insert(key_set *s, uint64_t k) {
    for (int64_t i = (int64_t)(k & (uint64_t)s->mask);; i = (i + 1) & s->mask) {
        if (s->gen[i] != s->cur) {
            s->gen[i] = s->cur;
            s->keys[i] = k;
            return true;
        }
        if (s->keys[i] == k) return false;
    }
}

/* An empty set of at least cap slots (a power of two) from the pool's
 * scratch; false when out of memory. */
static bool set_open(feat_warp_pool *pool, int64_t cap, key_set *s) {
    if (pool->scap < cap) {
        free(pool->skeys);
        free(pool->sgen);
        pool->skeys = malloc(sizeof *pool->skeys * (size_t)cap);
        pool->sgen = calloc((size_t)cap, sizeof *pool->sgen);
        pool->scap = pool->skeys && pool->sgen ? cap : 0;
        pool->scur = 0;
        if (!pool->scap) return false;
    }
    if (++pool->scur == 0) {                  /* the generations wrapped: clear */
        memset(pool->sgen, 0, sizeof *pool->sgen * (size_t)pool->scap);
        pool->scur = 1;
    }
    s->keys = pool->skeys;
    s->gen = pool->sgen;
    s->cur = pool->scur;
    s->mask = pool->scap - 1;
    return true;
}

/* n bytes of the pool's scratch (one call's arrays), or NULL. */
static void *scratch(feat_warp_pool *pool, size_t n) {
    if (pool->bufcap < n) {
        free(pool->buf);
        pool->buf = malloc(n);
        pool->bufcap = pool->buf ? n : 0;
    }
    return pool->buf;
}

/* The serial iterations enumerated: all of them when unrolled or at most
 * cap, else cap, with *scale the factor to all of them. */
static int64_t iterations(const feat_lanes *ln, bool unrolled, int64_t cap, double *scale) {
    int64_t total = 1;
    for (int j = 0; j < ln->nloops; j++) total *= ln->serial[j];
    int64_t iters = unrolled || total <= cap ? total : cap;
    *scale = (double)total / (double)iters;
    return iters;
}

/* The lane origins (x_j without the serial offset) of lanes first ..
 * first + nlanes - 1. */
static void lane_origins(const feat_lanes *ln, int64_t first, int nlanes, int64_t base[][FEAT_MAX_LOOPS]) {
    for (int l = 0; l < nlanes; l++) {
        int64_t tid = first + l, t[SC_MAX_DIMS];
        for (int k = 0; k < ln->nlayout; k++) {
            t[k] = tid % ln->L[k];
            tid /= ln->L[k];
        }
        for (int j = 0; j < ln->nloops; j++) {
            double v = ln->origin[j];
            for (int k = 0; k < ln->nlayout; k++) v += ln->lanec[j][k] * (double)t[k];
            base[l][j] = (int64_t)floor(v);
        }
    }
}

/* The cached warp of a CPU (feat_warp.h): the distinct sectors and
 * elements of the warp's regular accesses over its iterations (at most
 * FEAT_WARP_CACHED_ITERS of them enumerated, the counts scaled), plus a
 * sector per lane and iteration for a gather.  Calls with linear
 * addresses and the same steps (a stencil's taps) have the same lane
 * offsets, so an instruction of theirs is its lane-0 address: one already
 * seen adds nothing, and only a new one's lanes are counted (a lane whose
 * sector or element is its left neighbour's is not looked up again). */
static int warp_cached(const feat_lanes *ln, int n, const feat_form *const *calls, const feat_storage *st,
                       int64_t first, int nlanes, bool unrolled, feat_warp_pool *keep, feat_warp_cost *c) {
    double scale;
    int64_t iters = iterations(ln, unrolled, FEAT_WARP_CACHED_ITERS, &scale);
    int64_t base[LANES][FEAT_MAX_LOOPS];
    lane_origins(ln, first, nlanes, base);
    feat_warp_pool *local = keep ? NULL : calloc(1, sizeof *local), *pool = keep ? keep : local;
    int nl = ln->nloops, rc = -1;
    size_t un = (size_t)n;
    /* per call: its steps, constant and group (the first call with its
     * steps, -1 when not linear); per group: the lanes' offsets */
    char *buf = pool ? scratch(pool, sizeof(int64_t) * un * (FEAT_MAX_LOOPS + 2 + LANES) + sizeof(int) * un) : NULL;
    int64_t cap = 64;
    while (cap < 4 * iters * n * (nlanes + 1)) cap *= 2;
    key_set seen;
    if (!buf || !set_open(pool, cap, &seen)) goto done;
    int64_t *steps = (int64_t *)(void *)buf, *konst = steps + un * FEAT_MAX_LOOPS, *goff = konst + un;
    int64_t *lanes = goff + un;                       /* [n][LANES], used for group leaders */
    int *grp = (int *)(void *)(lanes + un * LANES);
    for (int i = 0; i < n; i++) {
        int64_t *step = steps + i * FEAT_MAX_LOOPS;
        grp[i] = -1;
        if (!linear(calls[i], st, nl, &konst[i], step)) continue;
        int g = 0;
        while (g < i && (grp[g] != g || memcmp(steps + g * FEAT_MAX_LOOPS, step, sizeof(int64_t) * (size_t)nl))) g++;
        grp[i] = g;
        if (g == i)
            for (int l = 0; l < nlanes; l++) {
                int64_t a = 0;
                for (int j = 0; j < nl; j++) a += step[j] * base[l][j];
                lanes[i * LANES + l] = a;
            }
    }
    double sectors = 0, units = 0, gather = 0;
    int es = base_log2_exact(st->elem);
    int64_t s[FEAT_MAX_LOOPS] = {0};
    for (int64_t it = 0; it < iters; it++, next_iteration(ln, s)) {
        for (int i = 0; i < n; i++)
            if (grp[i] == i) {
                int64_t o = 0;
                for (int j = 0; j < nl; j++) o += steps[i * FEAT_MAX_LOOPS + j] * s[j];
                goff[i] = o;
            }
        for (int i = 0; i < n; i++) {
            int64_t addr[LANES];
            if (grp[i] >= 0) {
                const int64_t *d = lanes + grp[i] * LANES;
                int64_t b = konst[i] + goff[grp[i]];
                if (!set_insert(&seen, mix2(2 + (uint64_t)grp[i], b + d[0])) && it > 0) continue;
                for (int l = 0; l < nlanes; l++) addr[l] = b + d[l];
            } else if (irregular(calls[i], st)) {
                gather += nlanes;
                if (it == 0) {
                    c->lift_lines += nlanes;
                    c->lift_n++;
                }
                continue;
            } else {
                for (int l = 0; l < nlanes; l++) {
                    int64_t x[FEAT_MAX_LOOPS];
                    for (int j = 0; j < nl; j++) x[j] = base[l][j] + s[j];
                    addr[l] = address(calls[i], st, nl, x);
                }
            }
            int64_t ps = 0, pe = 0;
            for (int l = 0; l < nlanes; l++) {
                int64_t a = addr[l], sec = a >> SECTOR_LOG2, el = es >= 0 ? a >> es : base_floor_div(a, st->elem);
                if (!l || sec != ps) sectors += set_insert(&seen, mix2(0, sec));
                if (!l || el != pe) units += set_insert(&seen, mix2(1, el));
                ps = sec;
                pe = el;
            }
            if (it == 0) {
                /* LIFT's lines: the first iteration's, from lane 0 */
                int64_t lines[LANES];
                for (int l = 0; l < nlanes; l++) lines[l] = base_floor_div(addr[l] - addr[0], LINE);
                c->lift_lines += distinct(lines, nlanes);
                c->lift_n++;
            }
        }
    }
    c->trans += scale * (sectors + gather);
    c->needed += scale * (units + gather) * st->elem;
    c->moved += scale * (sectors + gather) * SECTOR;
    rc = 0;
done:
    feat_warp_pool_free(local);
    return rc;
}

/* How many of the calls are gathers to the lanes first .. along the
 * layout's first dimension, up to the end of its row (feat_warp.h). */
static int gather_calls(const feat_lanes *ln, int n, const feat_form *const *calls, const feat_storage *st,
                        int64_t first, int nlanes) {
    int m = nlanes;
    if (ln->nlayout > 0) {
        int64_t row_left = ln->L[0] - first % ln->L[0];
        if (row_left < m) m = (int)row_left;
    }
    if (m < 2) return 0;
    int64_t base[LANES][FEAT_MAX_LOOPS];
    lane_origins(ln, first, m, base);
    int nl = ln->nloops, gathers = 0;
    for (int i = 0; i < n; i++) {
        int64_t rel[LANES], konst, step[FEAT_MAX_LOOPS];
        if (linear(calls[i], st, nl, &konst, step)) {
            for (int l = 0; l < m; l++) {
                rel[l] = 0;
                for (int j = 0; j < nl; j++) rel[l] += step[j] * (base[l][j] - base[0][j]);
            }
        } else if (irregular(calls[i], st)) {
            gathers++;
            continue;
        } else {
            int64_t a0 = address(calls[i], st, nl, base[0]);
            for (int l = 0; l < m; l++) rel[l] = address(calls[i], st, nl, base[l]) - a0;
        }
        bool same = true, up = true, down = true;
        for (int l = 1; l < m; l++) {
            same &= rel[l] == 0;
            up &= rel[l] == (int64_t)l * st->elem;
            down &= rel[l] == -(int64_t)l * st->elem;
        }
        gathers += !(same || up || down);
    }
    return gathers;
}

int feat_warp_access(const feat_lanes *ln, int n, const feat_form *const *calls, const feat_storage *st,
                     int64_t first, int nlanes, bool unrolled, bool cached, feat_warp_pool *keep, feat_warp_cost *c) {
    if (n == 0 || nlanes <= 0) return 0;
    c->gathers += gather_calls(ln, n, calls, st, first, nlanes);
    if (cached) return warp_cached(ln, n, calls, st, first, nlanes, unrolled, keep, c);
    double scale;
    int64_t iters = iterations(ln, unrolled, FEAT_WARP_ITERS, &scale);

    int64_t base[LANES][FEAT_MAX_LOOPS];
    lane_origins(ln, first, nlanes, base);
    /* per call: its linear form, lane-0 address and pattern.  Calls with
     * the same steps (a stencil's taps) have the same lane offsets, so the
     * offsets and their pattern are found once per group of equal steps:
     * lane l's address is konst + d_l with d_l = step . base[l], the
     * pattern d_l - d_0 whatever konst is. */
    feat_warp_pool *local = keep ? NULL : calloc(1, sizeof *local), *pool = keep ? keep : local;
    key_set seen = { NULL, NULL, 0, 0 };
    feat_warp_cost acc = *c;
    int rc = -1;
    /* the arrays, in the pool's scratch: int64 ones first */
    size_t un = (size_t)n;
    char *buf = pool ? scratch(pool, sizeof(int64_t) * un * (FEAT_MAX_LOOPS + 3) + sizeof(int) * un * 6) : NULL;
    if (!buf) goto done;
    int64_t *steps = (int64_t *)(void *)buf;
    int64_t *b0 = steps + un * FEAT_MAX_LOOPS;
    /* the groups: lane 0's d_0, the offset of the current iteration */
    int64_t *gd0 = b0 + un, *goff = gd0 + un;
    int *pat = (int *)(void *)(goff + un);
    int *uid = pat + un, *grp = uid + un;
    /* the groups: first call (its steps name the group), pattern, reuse name */
    int *gfirst = grp + un, *gpat = gfirst + un, *guid = gpat + un;
    int ng = 0, nl = ln->nloops;
    for (int i = 0; i < n; i++) {
        int64_t konst, *step = steps + i * FEAT_MAX_LOOPS;
        pat[i] = grp[i] = -1;
        if (!linear(calls[i], st, nl, &konst, step)) continue;
        int g = 0;
        while (g < ng && memcmp(steps + gfirst[g] * FEAT_MAX_LOOPS, step, sizeof(int64_t) * (size_t)nl)) g++;
        if (g == ng) {
            int64_t rel[LANES];
            for (int l = 0; l < nlanes; l++) {
                int64_t a = 0;
                for (int j = 0; j < nl; j++) a += step[j] * base[l][j];
                rel[l] = a;
            }
            gd0[g] = rel[0];
            for (int l = nlanes - 1; l >= 0; l--) rel[l] -= rel[0];
            gpat[g] = find_pattern(pool, st, rel, nlanes);
            if (gpat[g] < 0) goto done;
            gfirst[g] = i;
            ng++;
        }
        grp[i] = g;
        pat[i] = gpat[g];
        b0[i] = konst + gd0[g];
    }
    /* the reuse set's name of a call's pattern: the first call with it
     * (below n, apart from the lanes' names n + l) */
    for (int g = 0; g < ng; g++) {
        guid[g] = gfirst[g];
        for (int h = 0; h < ng; h++)
            if (gpat[h] == gpat[g] && gfirst[h] < guid[g]) guid[g] = gfirst[h];
    }
    for (int i = 0; i < n; i++) uid[i] = pat[i] >= 0 ? guid[grp[i]] : i;
    if (unrolled) {
        /* at most one key per iteration of a linear call, one per lane
         * and iteration of another: the set at most half full */
        int64_t keys = 0, cap = 64;
        for (int i = 0; i < n; i++) keys += pat[i] >= 0 ? iters : iters * nlanes;
        while (cap < 2 * keys) cap *= 2;
        if (!set_open(pool, cap, &seen)) goto done;
    }

    /* the sums in a local (the same additions in the same order; the
     * pool's stores cannot reach it) */
    int64_t s[FEAT_MAX_LOOPS] = {0};
    for (int64_t it = 0; it < iters; it++, next_iteration(ln, s)) {
        for (int g = 0; g < ng; g++) {
            const int64_t *step = steps + gfirst[g] * FEAT_MAX_LOOPS;
            int64_t o = 0;
            for (int j = 0; j < nl; j++) o += step[j] * s[j];
            goff[g] = o;
        }
        for (int i = 0; i < n; i++) {
            double trans, needed;
            if (pat[i] >= 0) {
                int64_t b = b0[i] + goff[grp[i]];
                /* a lane reloads nothing it has loaded: with a shared
                 * pattern, an instruction is new exactly when its lane-0
                 * address is new for the pattern */
                if (unrolled && !set_insert(&seen, mix2((uint64_t)uid[i], b))) continue;
                if (it == 0 && !st->shared) {
                    acc.lift_lines += pool->p[pat[i]].lift;
                    acc.lift_n++;
                }
                pattern_cost(st, &pool->p[pat[i]], nlanes, b, &trans, &needed);
            } else if (irregular(calls[i], st)) {
                /* every lane in a sector and line of its own, never
                 * reused: a gather */
                if (it == 0 && !st->shared) {
                    acc.lift_lines += nlanes;
                    acc.lift_n++;
                }
                trans = nlanes;
                needed = (double)nlanes * st->elem;
            } else {
                /* fractional coefficients (down- and up-sampling): lane
                 * by lane, on a sample of the iterations when not unrolled */
                if (!unrolled && it >= FEAT_WARP_SLOW_ITERS) continue;
                int64_t addr[LANES];
                int m = 0;
                for (int l = 0; l < nlanes; l++) {
                    int64_t x[FEAT_MAX_LOOPS];
                    for (int j = 0; j < ln->nloops; j++) x[j] = base[l][j] + s[j];
                    int64_t a = address(calls[i], st, ln->nloops, x);
                    if (unrolled && !set_insert(&seen, mix2((uint64_t)(n + l), a))) continue;
                    addr[m++] = a;
                }
                if (m == 0) continue;
                if (m == nlanes) {
                    /* all lanes: priced through its lane pattern */
                    int64_t rel[LANES];
                    for (int l = 0; l < m; l++) rel[l] = addr[l] - addr[0];
                    int g = find_pattern(pool, st, rel, nlanes);
                    if (g < 0) goto done;
                    if (it == 0 && !st->shared) {
                        acc.lift_lines += pool->p[g].lift;
                        acc.lift_n++;
                    }
                    pattern_cost(st, &pool->p[g], nlanes, addr[0], &trans, &needed);
                } else {
                    instruction(st, addr, m, &trans, &needed);
                }
                if (!unrolled) {
                    double k = (double)iters / (double)(iters < FEAT_WARP_SLOW_ITERS ? iters : FEAT_WARP_SLOW_ITERS);
                    trans *= k;
                    needed *= k;
                }
            }
            acc.trans += scale * trans;
            acc.needed += scale * needed;
            acc.moved += scale * trans * (st->shared ? LINE : SECTOR);
        }
    }
    rc = 0;
done:
    *c = acc;
    feat_warp_pool_free(local);
    return rc;
}
