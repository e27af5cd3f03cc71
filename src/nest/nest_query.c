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

bool nest_reduction_around_tile(const nest_stage *rec) {
    if (!ir_stage_accumulates(rec->func, rec->stage)) return false;
    int64_t total = 1;
    for (int k = 0; k < rec->npure; k++) total *= rec->serial[k];
    return total > 1;
}

bool nest_any_reduction_around_tile(const nest *n) {
    for (int fid = 0; fid < n->nfuncs; fid++) {
        const nest_func *f = n->funcs[fid];
        for (int st = 1; f && st < f->nstages; st++)
            if (f->stages[st] && nest_reduction_around_tile(f->stages[st])) return true;
    }
    return false;
}

bool nest_hull_whole(const nest_kernel *k, bool thread) {
    double positions = (double)k->nblocks * (double)(thread && k->nthreads > 0 ? k->nthreads : 1);
    return positions > (double)NEST_HULL_POSITIONS;
}
