/*
 * nest_query.c - lowering's questions to the loop-nest model (nest_query.h).
 */
#include "nest_query.h"

void nest_owner(const nest *n, int fid, int *owner, int *owner_stage) {
    *owner = *owner_stage = -1;
    const nest_func *f = fid >= 0 && fid < n->nfuncs ? n->funcs[fid] : NULL;
    if (!f || (f->loc != SCHED_BLOCK && f->loc != SCHED_THREAD)) return;
    *owner = f->owner;
    *owner_stage = f->owner_stage;
}

int nest_staged_producers(const nest_stage *rec, const sc_func **out) {
    int n = 0;
    for (int i = 0; i < rec->naccess && n < NEST_MAX_STAGED; i++) {
        if (!rec->access[i].staged) continue;
        const sc_func *g = rec->access[i].producer;
        int j = 0;
        while (j < n && out[j] != g) j++;
        if (j == n) out[n++] = g;
    }
    return n;
}

int nest_unroll_limit(sched_loc loc, bool reads_private) {
    return loc == SCHED_THREAD || reads_private ? NEST_UNROLL_THREAD_LIMIT : NEST_UNROLL_LIMIT;
}

bool nest_reduction_unrolls_whole(const int64_t *red, int nred, int64_t tile_points, int limit, bool around) {
    if (!around || nred < 1 || tile_points >= limit) return false;
    int64_t all = tile_points;
    for (int k = 0; k < nred && all < NEST_UNROLL_AROUND_LIMIT; k++) all *= red[k];
    return all < NEST_UNROLL_AROUND_LIMIT;
}

bool nest_reduction_unrolls(const int64_t *red, int nred, int d, int64_t tile_points, int limit, bool around) {
    return (red[d] < limit && tile_points * red[d] < limit) ||
           nest_reduction_unrolls_whole(red, nred, tile_points, limit, around);
}

/* Which loops of rec `limit` unrolls, as bits: its pure tile (bit 0),
 * each reduction loop d (bit 1 + d), and the whole serial tile with the
 * reductions as the features count it (the last bit); with around, by
 * lowering's rule since CG_GENERATION_LONGER_UNROLLS, without it by the
 * rule for each loop alone. */
static unsigned unrolled_loops(const nest_stage *rec, int limit, bool around) {
    int64_t total = 1;
    for (int k = 0; k < rec->npure; k++) total *= rec->serial[k];
    around = around && rec->unroll_whole_ok && nest_reduction_around_tile(rec);
    int64_t all = total;
    unsigned bits = total < limit;
    for (int d = 0; d < rec->nred; d++) {
        bits |= (unsigned)nest_reduction_unrolls(rec->red, rec->nred, d, total, limit, around) << (1 + d);
        all *= rec->red[d];
    }
    return bits | (unsigned)(all < limit) << (1 + SC_MAX_DIMS);
}

bool nest_serial_loops_unrolled(const nest_stage *rec) {
    unsigned every = (1u << (1 + rec->nred)) - 1;    /* the tile's bit and each reduction's */
    return (unrolled_loops(rec, rec->unroll_limit, true) & every) == every;
}

bool nest_unrolls_thread_tiles(const nest *n) {
    for (int fid = 0; fid < n->nfuncs; fid++) {
        const nest_func *f = n->funcs[fid];
        if (!f || f->loc != SCHED_THREAD) continue;
        for (int st = 0; st < f->nstages; st++) {
            const nest_stage *rec = f->stages[st];
            if (rec && unrolled_loops(rec, NEST_UNROLL_LIMIT, false) != unrolled_loops(rec, NEST_UNROLL_THREAD_LIMIT, false))
                return true;
        }
    }
    return false;
}

bool nest_unrolls_private_readers(const nest *n) {
    for (int fid = 0; fid < n->nfuncs; fid++) {
        const nest_func *f = n->funcs[fid];
        if (!f || f->loc == SCHED_THREAD) continue;
        for (int st = 0; st < f->nstages; st++) {
            const nest_stage *rec = f->stages[st];
            if (rec && rec->unroll_limit == NEST_UNROLL_THREAD_LIMIT &&
                unrolled_loops(rec, NEST_UNROLL_LIMIT, false) != unrolled_loops(rec, NEST_UNROLL_THREAD_LIMIT, false))
                return true;
        }
    }
    return false;
}

bool nest_unrolls_reductions_around(const nest *n) {
    for (int fid = 0; fid < n->nfuncs; fid++) {
        const nest_func *f = n->funcs[fid];
        for (int st = 1; f && st < f->nstages; st++) {
            const nest_stage *rec = f->stages[st];
            if (rec && unrolled_loops(rec, rec->unroll_limit, true) != unrolled_loops(rec, rec->unroll_limit, false))
                return true;
        }
    }
    return false;
}

bool nest_reduction_around_tile(const nest_stage *rec) {
    if (!ir_stage_reduction_around(rec->func, rec->stage)) return false;
    int64_t total = 1;
    for (int k = 0; k < rec->npure; k++) total *= rec->serial[k];
    return total > 1;
}

/* Whether some update of n runs its reduction around its tile and does
 * not (scans) or does (!scans) accumulate in place. */
static bool any_around(const nest *n, bool scans) {
    for (int fid = 0; fid < n->nfuncs; fid++) {
        const nest_func *f = n->funcs[fid];
        for (int st = 1; f && st < f->nstages; st++) {
            const nest_stage *rec = f->stages[st];
            if (rec && nest_reduction_around_tile(rec) && ir_stage_accumulates(rec->func, st) != scans) return true;
        }
    }
    return false;
}

bool nest_any_reduction_around_tile(const nest *n) { return any_around(n, false); }

bool nest_any_scan_around_tile(const nest *n) { return any_around(n, true); }

bool nest_merges_thread_loops(const nest *n) {
    for (int fid = 0; fid < n->nfuncs; fid++) {
        const nest_func *f = n->funcs[fid];
        for (int st = 0; f && f->loc == SCHED_ROOT && st < f->nstages; st++) {
            const nest_stage *rec = f->stages[st];
            int64_t dims[3];
            if (rec && target_group_dims(rec->threads, rec->npure, dims)) return true;
        }
    }
    return false;
}
