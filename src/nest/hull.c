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
    h->nleaf = 0;
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
    memset(h, 0, sizeof *h);
}

/* Whether e depends on the thread index. */
static bool uses_tid(const hull_syms *h, const sc_expr *e) {
    if (e->kind == E_VAR) return e->c.i == -2 || (e->c.i >= 0 && e->c.i < h->nleaf && h->ltid[e->c.i]);
    for (int i = 0; i < e->nargs; i++)
        if (uses_tid(h, e->args[i])) return true;
    return false;
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
        if (!h->ldef || !h->lval || !h->lstamp || !h->ltid) abort();
    }
    int id = h->nleaf++;
    h->ldef[id] = def;
    h->lstamp[id] = 0;
    h->ltid[id] = def && uses_tid(h, def);
    char name[32];
    snprintf(name, sizeof name, "L%d", id);
    return var(h, ir_strdup(h->xa, name), id);
}

sc_expr *hull_pos(hull_syms *h, bool thread) { return thread ? var(h, "tid", -2) : var(h, "bid", -1); }

/* The value of a variable at the current position: the block or thread
 * index, or a symbol, kept for the block, or for one position if it
 * depends on the thread index. */
static bool value_of(void *user, const sc_expr *e, int64_t *out) {
    hull_syms *h = user;
    int64_t id = e->c.i;
    if (id == -1) { *out = h->bid; return true; }
    if (id == -2) { *out = h->tid; return h->has_tid; }
    if (id < 0 || id >= h->nleaf || !h->ldef[id]) return false;
    if (h->lstamp[id] < (h->ltid[id] ? h->stamp : h->block_stamp)) {
        if (!fp_ieval(h->ldef[id], value_of, h, &h->lval[id])) return false;
        h->lstamp[id] = h->stamp;
    }
    *out = h->lval[id];
    return true;
}

/* When no span depends on the thread, one position per block stands for
 * all its threads (they give the same value). */
int64_t hull_extent(hull_syms *h, int64_t nblocks, int64_t nthreads, const bounds_func *pb, int d, int n,
                    const fp_span *sp, int stride) {
    int64_t nt = nthreads > 0 ? nthreads : 1, best = 0;
    if ((double)nblocks * (double)nt > (double)NEST_HULL_POSITIONS) return -1;
    int64_t rmin = pb->min[d], rmax = pb->min[d] + pb->extent[d] - 1;
    bool any_tid = false;
    for (int i = 0; i < n; i++) any_tid |= sp[i * stride].sym && uses_tid(h, sp[i * stride].sym);
    if (!any_tid) nt = 1;
    h->has_tid = nthreads > 0;
    for (int64_t b = 0; b < nblocks && best >= 0; b++) {
        h->bid = b;
        h->block_stamp = h->stamp + 1;
        for (int64_t t = 0; t < nt && best >= 0; t++) {
            h->tid = t;
            h->stamp++;
            int64_t mn = 0, mx = 0;
            for (int i = 0; i < n; i++) {
                const fp_span *v = &sp[i * stride];
                int64_t base = 0;
                if (v->sym && !fp_ieval(v->sym, value_of, h, &base)) { best = -1; break; }
                int64_t lo = base + v->lo, hi = base + v->hi;
                lo = lo < rmax ? lo : rmax;
                lo = lo > rmin ? lo : rmin;
                hi = hi < rmax ? hi : rmax;
                hi = hi > rmin ? hi : rmin;
                if (i == 0 || lo < mn) mn = lo;
                if (i == 0 || hi > mx) mx = hi;
            }
            if (best >= 0 && mx - mn + 1 > best) best = mx - mn + 1;
        }
    }
    return best;
}
