/*
 * hull.c - the hull of several consumers' footprints (hull.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hull.h"
#include "nest.h"

void hull_begin(hull_syms *h, bool on) {
    h->xa = on ? ir_arena_new() : NULL;
    h->nleaf = h->ndig = h->nsplit = 0;
}

void hull_end(hull_syms *h) {
    if (h->xa) ir_arena_free(h->xa);
    h->xa = NULL;
    h->nleaf = 0;
}

void hull_free(hull_syms *h) {
    hull_end(h);
    free(h->ldef);
    free(h->lval);
    free(h->lstamp);
    free(h->ltid);
    free(h->dbelow);
    free(h->drange);
    free(h->dval);
    free(h->dthread);
    free(h->dmod);
    free(h->dsplit);
    free(h->lmask);
    memset(h, 0, sizeof *h);
}

#define OVERFLOW (1ULL << 63)      /* digit 63 and up: no enumeration by digits */

/* Whether e depends on the thread index. */
static bool uses_tid(const hull_syms *h, const sc_expr *e) {
    if (e->kind == E_VAR) {
        int64_t id = e->c.i;
        if (id <= -3) return h->dthread[-3 - id];
        return id == -2 || (id >= 0 && id < h->nleaf && h->ltid[id]);
    }
    for (int i = 0; i < e->nargs; i++)
        if (uses_tid(h, e->args[i])) return true;
    return false;
}

/* The digits e depends on. */
static uint64_t mask_of(const hull_syms *h, const sc_expr *e) {
    if (e->kind == E_VAR) {
        int64_t id = e->c.i;
        if (id <= -3) return -3 - id < 63 ? 1ULL << (-3 - id) : OVERFLOW;
        if (id < 0) return OVERFLOW;
        return id < h->nleaf ? h->lmask[id] : 0;
    }
    uint64_t m = 0;
    for (int i = 0; i < e->nargs; i++) m |= mask_of(h, e->args[i]);
    return m;
}

static sc_expr *var(hull_syms *h, const char *name, int64_t which) {
    sc_expr *v = ir_alloc(h->xa, sizeof *v);
    v->kind = E_VAR;
    v->type = SC_I32;
    v->name = name;
    v->c.i = which;
    return v;
}

sc_expr *hull_sym(hull_syms *h, sc_expr *def) {
    if (h->nleaf == h->capleaf) {
        h->capleaf = h->capleaf ? 2 * h->capleaf : 64;
        h->ldef = realloc(h->ldef, sizeof(sc_expr *) * (size_t)h->capleaf);
        h->lval = realloc(h->lval, sizeof(int64_t) * (size_t)h->capleaf);
        h->lstamp = realloc(h->lstamp, sizeof(uint64_t) * (size_t)h->capleaf);
        h->ltid = realloc(h->ltid, sizeof(bool) * (size_t)h->capleaf);
        h->lmask = realloc(h->lmask, sizeof(uint64_t) * (size_t)h->capleaf);
        if (!h->ldef || !h->lval || !h->lstamp || !h->ltid || !h->lmask) abort();
    }
    int id = h->nleaf++;
    h->ldef[id] = def;
    h->lstamp[id] = 0;
    h->ltid[id] = def && uses_tid(h, def);
    h->lmask[id] = def ? mask_of(h, def) : 0;
    char name[32];
    snprintf(name, sizeof name, "L%d", id);
    return var(h, ir_strdup(h->xa, name), id);
}

int hull_split(hull_syms *h) { return h->nsplit++; }

sc_expr *hull_digit(hull_syms *h, int split, bool thread, int64_t below, int64_t range, bool mod) {
    if (h->ndig == h->capdig) {
        h->capdig = h->capdig ? 2 * h->capdig : 16;
        size_t n = (size_t)h->capdig;
        h->dbelow = realloc(h->dbelow, sizeof(int64_t) * n);
        h->drange = realloc(h->drange, sizeof(int64_t) * n);
        h->dval = realloc(h->dval, sizeof(int64_t) * n);
        h->dthread = realloc(h->dthread, sizeof(bool) * n);
        h->dmod = realloc(h->dmod, sizeof(bool) * n);
        h->dsplit = realloc(h->dsplit, sizeof(int) * n);
        if (!h->dbelow || !h->drange || !h->dval || !h->dthread || !h->dmod || !h->dsplit) abort();
    }
    int id = h->ndig++;
    h->dbelow[id] = below;
    h->drange[id] = range;
    h->dthread[id] = thread;
    h->dmod[id] = mod;
    h->dsplit[id] = split;
    return var(h, thread ? "tid_digit" : "bid_digit", -3 - id);
}

/* The value of a variable at the current position: the block or thread
 * index, or a symbol, kept for the block, or for one position if it
 * depends on the thread index. */
static bool value_of(void *user, const sc_expr *e, int64_t *out) {
    hull_syms *h = user;
    int64_t id = e->c.i;
    if (id == -1) { *out = h->bid; return true; }
    if (id == -2) { *out = h->tid; return h->has_tid; }
    if (id <= -3) {
        int k = (int)(-3 - id);
        if (h->by_digit) { *out = h->dval[k]; return true; }
        if (h->dthread[k] && !h->has_tid) return false;
        int64_t v = (h->dthread[k] ? h->tid : h->bid) / h->dbelow[k];
        *out = h->dmod[k] ? v % h->drange[k] : v;
        return true;
    }
    if (id < 0 || id >= h->nleaf || !h->ldef[id]) return false;
    if (h->lstamp[id] < (h->ltid[id] ? h->stamp : h->block_stamp)) {
        if (!fp_ieval(h->ldef[id], value_of, h, &h->lval[id])) return false;
        h->lstamp[id] = h->stamp;
    }
    *out = h->lval[id];
    return true;
}

/* The extent of one case (the current position or digits), or -1. */
static int64_t one_case(hull_syms *h, int64_t rmin, int64_t rmax, int n, const fp_span *sp, int stride) {
    int64_t mn = 0, mx = 0;
    for (int i = 0; i < n; i++) {
        const fp_span *v = &sp[i * stride];
        int64_t base = 0;
        if (v->sym && !fp_ieval(v->sym, value_of, h, &base)) return -1;
        int64_t lo = base + v->lo, hi = base + v->hi;
        lo = lo < rmax ? lo : rmax;
        lo = lo > rmin ? lo : rmin;
        hi = hi < rmax ? hi : rmax;
        hi = hi > rmin ? hi : rmin;
        if (i == 0 || lo < mn) mn = lo;
        if (i == 0 || hi > mx) mx = hi;
    }
    return mx - mn + 1;
}

/* The hull by digits (see hull.h), or -2 when the spans' digits do not
 * allow it (then every position is tried). */
static int64_t by_digits(hull_syms *h, int64_t nthreads, int64_t rmin, int64_t rmax, int n, const fp_span *sp,
                         int stride) {
    uint64_t m = 0;
    for (int i = 0; i < n; i++)
        if (sp[i * stride].sym) m |= mask_of(h, sp[i * stride].sym);
    if (m & OVERFLOW) return -2;
    int dig[63], nd = 0, bsplit = -1, tsplit = -1;
    for (int k = 0; k < h->ndig && k < 63; k++) {
        if (!(m >> k & 1)) continue;
        int *split = h->dthread[k] ? &tsplit : &bsplit;
        if (*split >= 0 && *split != h->dsplit[k]) return -2;
        *split = h->dsplit[k];
        if (h->dthread[k] && nthreads <= 0) return -1;      /* the thread index is unbound */
        dig[nd++] = k;
    }
    /* a thread digit without mod is the thread index itself: all threads */
    int64_t range[63];
    double cases = 1;
    for (int j = 0; j < nd; j++) {
        int k = dig[j];
        range[j] = h->dthread[k] && !h->dmod[k] ? (nthreads + h->dbelow[k] - 1) / h->dbelow[k] : h->drange[k];
        if (range[j] < 1) return -2;
        cases *= (double)range[j];
        h->dval[k] = 0;
    }
    if (cases > (double)NEST_HULL_POSITIONS) return -2;
    h->by_digit = true;
    int64_t best = 0;
    for (;;) {
        h->stamp++;
        h->block_stamp = h->stamp;
        int64_t e = one_case(h, rmin, rmax, n, sp, stride);
        if (e < 0) { best = -1; break; }
        if (e > best) best = e;
        int j = 0;
        while (j < nd && ++h->dval[dig[j]] == range[j]) h->dval[dig[j++]] = 0;
        if (j == nd) break;
    }
    h->by_digit = false;
    return best;
}

/* When no span depends on the thread, one position per block stands for
 * all its threads (they give the same value). */
int64_t hull_extent(hull_syms *h, int64_t nblocks, int64_t nthreads, const bounds_func *pb, int d, int n,
                    const fp_span *sp, int stride) {
    int64_t nt = nthreads > 0 ? nthreads : 1, best = 0;
    int64_t rmin = pb->min[d], rmax = pb->min[d] + pb->extent[d] - 1;
    int64_t e = by_digits(h, nthreads, rmin, rmax, n, sp, stride);
    if (e != -2) return e;
    bool any_tid = false;
    for (int i = 0; i < n; i++) any_tid |= sp[i * stride].sym && uses_tid(h, sp[i * stride].sym);
    if (!any_tid) nt = 1;
    if ((double)nblocks * (double)nt > (double)NEST_HULL_POSITIONS) return -1;
    h->has_tid = nthreads > 0;
    for (int64_t b = 0; b < nblocks && best >= 0; b++) {
        h->bid = b;
        h->block_stamp = h->stamp + 1;
        for (int64_t t = 0; t < nt && best >= 0; t++) {
            h->tid = t;
            h->stamp++;
            int64_t e1 = one_case(h, rmin, rmax, n, sp, stride);
            if (e1 < 0) best = -1;
            else if (e1 > best) best = e1;
        }
    }
    return best;
}
