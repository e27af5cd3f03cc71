/*
 * feat_warp.c - a warp's memory transactions (feat_warp.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "feat_warp.h"

#define LANES 32
#define SECTOR 32
#define LINE 128
#define BANKS 32

/* Counts the distinct values of v[0..n) (n <= LANES). */
static int distinct(const int64_t *v, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = v[j] == v[i];
        k += !seen;
    }
    return k;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The serial iteration number it as per-loop offsets (loop 0 fastest). */
static void iteration(const feat_lanes *ln, int64_t it, int64_t *s) {
    for (int j = 0; j < ln->nloops; j++) {
        s[j] = it % ln->serial[j];
        it /= ln->serial[j];
    }
}

/* The byte address of one access by a lane at loop values x; irregular
 * coordinates give an address of the lane's own (key) far from the rest. */
static int64_t address(const feat_form *dims, const feat_storage *st, int nloops, const int64_t *x,
                       int64_t key) {
    int64_t a = 0;
    for (int d = 0; d < st->ndims; d++) {
        const feat_form *f = &dims[d];
        if (!f->ok) return ((int64_t)1 << 48) + key * 4096;
        double v = f->off;
        for (int j = 0; j < nloops; j++) v += f->c[j] * (double)x[j];
        a += ((int64_t)floor(v) - st->base[d]) * st->stride[d];
    }
    return a * st->elem;
}

int feat_warp_access(const feat_lanes *ln, int n, const feat_form *const *calls, const feat_storage *st,
                     int64_t first, int nlanes, bool unrolled, feat_warp_cost *c) {
    if (n == 0 || nlanes <= 0) return 0;
    int64_t total = 1;
    for (int j = 0; j < ln->nloops; j++) total *= ln->serial[j];
    int64_t iters = unrolled || total <= FEAT_WARP_ITERS ? total : FEAT_WARP_ITERS;
    double scale = (double)total / (double)iters;

    /* lane origins: x_j without the serial offset */
    int64_t base[LANES][FEAT_MAX_LOOPS];
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
    /* per lane, the addresses loaded so far (unrolled only) */
    int64_t cap = unrolled ? iters * n : 0;
    int64_t *seen = cap ? malloc(sizeof(int64_t) * (size_t)(cap * nlanes)) : NULL;
    int64_t nseen[LANES] = {0};
    if (cap && !seen) return -1;

    for (int64_t it = 0; it < iters; it++) {
        int64_t s[FEAT_MAX_LOOPS];
        iteration(ln, it, s);
        for (int i = 0; i < n; i++) {
            int64_t addr[LANES];
            int m = 0;
            for (int l = 0; l < nlanes; l++) {
                int64_t x[FEAT_MAX_LOOPS];
                for (int j = 0; j < ln->nloops; j++) x[j] = base[l][j] + s[j];
                int64_t a = address(calls[i], st, ln->nloops, x, (first + l) * 1000003 + it * 64 + i);
                if (unrolled) {
                    bool old = false;
                    for (int64_t q = 0; q < nseen[l] && !old; q++) old = seen[l * cap + q] == a;
                    if (old) continue;
                    seen[l * cap + nseen[l]++] = a;
                }
                addr[m++] = a;
            }
            if (it == 0 && !st->shared && m == nlanes) {
                int64_t rel[LANES];
                for (int l = 0; l < m; l++) rel[l] = floor_div(addr[l] - addr[0], LINE);
                c->lift_lines += distinct(rel, m);
                c->lift_n++;
            }
            if (m == 0) continue;
            int64_t unit[LANES];
            for (int l = 0; l < m; l++) unit[l] = floor_div(addr[l], st->elem);
            double needed = (double)distinct(unit, m) * st->elem;
            double trans;
            if (!st->shared) {
                int64_t sec[LANES];
                for (int l = 0; l < m; l++) sec[l] = floor_div(addr[l], SECTOR);
                trans = distinct(sec, m);
                c->moved += scale * trans * SECTOR;
            } else {
                /* the most distinct 4-byte words any bank serves */
                int64_t word[LANES];
                for (int l = 0; l < m; l++) word[l] = floor_div(addr[l], 4);
                int worst = 1;
                for (int b = 0; b < BANKS; b++) {
                    int64_t in[LANES];
                    int k = 0;
                    for (int l = 0; l < m; l++)
                        if (((word[l] % BANKS) + BANKS) % BANKS == b) in[k++] = word[l];
                    int dk = distinct(in, k);
                    if (dk > worst) worst = dk;
                }
                trans = worst;
                c->moved += scale * trans * LINE;
            }
            c->trans += scale * trans;
            c->needed += scale * needed;
        }
    }
    free(seen);
    return 0;
}
