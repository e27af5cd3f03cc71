/*
 * costmodel.c - the cost terms of Anderson et al. 2021 Appendix B and the
 * learned cost model built on them (costmodel.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "costmodel.h"

#define F(name) v[FEAT_AT(FEAT_##name)]

/* The terms, by the coefficient index Halide's implementation gives them
 * (the appendix uses the same indices).  Where the appendix and Halide's
 * code differ we follow the code, and where our schema lacks a feature
 * the term is left out; docs/costmodel.md lists each case:
 *  - the per-thread load terms count num_blocks x num_threads_per_block
 *    threads (the code), not num_realizations (the appendix);
 *  - the global and shared load transactions have coefficients 28 and 27
 *    (the appendix prints them without one), and only the global ones are
 *    divided by their efficiency (the appendix also divides the shared
 *    ones; our shared transactions already count bank conflicts);
 *  - idle_core_wastage counts waves of blocks over the blocks the GPU
 *    holds at once (SMs x resident blocks per SM), where Halide divides
 *    inner x outer parallelism by a core count;
 *  - working_set is working_set_at_thread;
 *  - unique_{bytes,lines}_read_per_{point,task} (coefficients 10, 12, 14,
 *    15) have no feature here, and 23 (Halide's disabled register
 *    occupancy) is unused, as in Halide;
 *  - 30 and 31 (unused in Halide) are ours: the arithmetic and the load
 *    instructions the stage executes, so that the work of inlined
 *    producers enters a term and not only the coefficients;
 *  - 10 is ours too: the gathers (a load per lane on a CPU that vectorizes
 *    across threads), points computed x vector_gathers_per_point. */
void cost_terms(const double *v, const target *t, double *T) {
    for (int k = 0; k < NN_COEF; k++) T[k] = 0;
    bool inl = F(inlined_calls) != 0;
    double blocks = F(num_blocks) > 1 ? F(num_blocks) : 1;
    double threads = blocks * F(num_threads_per_block);
    double points = threads * F(points_computed_per_thread);
    double resident = (double)t->sm_count * fmax(1.0, F(max_block_occupancy) * t->max_blocks_per_sm);
    double per_core = blocks / resident;
    double idle_core = ceil(per_core) / fmax(1.0, per_core);
    double lanes = inl ? 1.0 : fmax(1e-3, 1.0 - F(idle_lane_wastage));
    double w = idle_core / lanes;

    /* compute */
    T[1] = inl ? 0 : F(num_scalars) * w;
    T[3] = inl ? F(num_scalars) * w : 0;
    T[19] = inl ? 0 : points * w;
    T[4] = inl ? points * w : 0;

    /* loads: footprints per realization and per thread */
    double r = F(num_realizations);
    T[5] = r * F(unique_global_lines_read_per_realization);
    T[16] = r * F(unique_shared_lines_read_per_realization);
    T[8] = r * F(unique_register_lines_read_per_realization);
    T[6] = r * F(unique_global_bytes_read_per_realization);
    T[20] = r * F(unique_shared_bytes_read_per_realization);
    T[7] = r * F(unique_register_bytes_read_per_realization);
    T[18] = threads * F(unique_global_lines_read_per_thread);
    T[17] = threads * F(unique_shared_lines_read_per_thread);
    T[2] = threads * F(unique_register_lines_read_per_thread);
    T[13] = threads * F(unique_global_bytes_read_per_thread);
    T[11] = threads * F(unique_shared_bytes_read_per_thread);
    T[0] = threads * F(unique_register_bytes_read_per_thread);
    /* loads: transactions */
    double gle = F(global_mem_load_efficiency), gse = F(global_mem_store_efficiency);
    T[28] = blocks * F(num_global_mem_loads_per_block) * (!inl && gle > 0 ? 1.0 / gle : 1.0);
    T[27] = blocks * F(num_shared_mem_loads_per_block);

    /* stores */
    T[29] = blocks * F(num_shared_mem_stores_per_block);
    T[21] = blocks * F(num_global_mem_stores_per_block) * (!inl && gse > 0 ? 1.0 / gse : 1.0);
    double ip = F(inner_parallelism);
    T[22] = ip > 1 ? F(num_scalars) / fmax(1.0, F(global_innermost_bytes_at_task)) : 0;

    /* allocation, parallelism, working set */
    T[24] = r;
    T[25] = ip > 1 ? F(num_productions) : 0;
    T[26] = F(num_productions) * (ip > 1 ? ip - 1 : 0);
    T[9] = F(working_set_at_thread);

    /* instructions: the arithmetic and the loads the stage's body
     * executes, inline Funcs' included (the op histogram is per point),
     * at the points it computes: num_scalars also counts the iterations
     * of a tile past the region, which a guard skips (a tile of 8 threads
     * over a region 1 wide counted 8 times the work), and the instruction
     * floor must not price work that is not done */
    double executed = F(points_computed_total);
    double arith = 0, loads = 0;
    for (int ty = 0; ty < SC_TYPE_COUNT; ty++) {
        for (int k = OPS_ADD; k <= OPS_MATH; k++) arith += v[FEAT_OP(k, ty)];
        arith += v[FEAT_OP(OPS_CAST, ty)];
        for (int k = OPS_LOAD_INPUT; k <= OPS_LOAD_SELF; k++) loads += v[FEAT_OP(k, ty)];
    }
    T[NN_TERM_ARITH] = executed * arith * w;
    T[NN_TERM_LOADS] = executed * loads * w;
    /* gathers: a CPU's vector load per lane where the lanes' addresses
     * are not one element or consecutive ones (feat_warp.h) */
    T[10] = executed * F(vector_gathers_per_point) * w;
}

static const char *const term_names[NN_COEF] = {
    [0] = "load: threads x unique_register_bytes_read_per_thread",
    [1] = "compute: num_scalars (not inlined) x idle core / lane wastage",
    [2] = "load: threads x unique_register_lines_read_per_thread",
    [3] = "compute: num_scalars (inlined) x idle core wastage",
    [4] = "compute: points computed (inlined) x idle core wastage",
    [5] = "load: num_realizations x unique_global_lines_read_per_realization",
    [6] = "load: num_realizations x unique_global_bytes_read_per_realization",
    [7] = "load: num_realizations x unique_register_bytes_read_per_realization",
    [8] = "load: num_realizations x unique_register_lines_read_per_realization",
    [9] = "working set: working_set_at_thread",
    [10] = "load: points computed x vector gathers per point x idle core / lane wastage",
    [11] = "load: threads x unique_shared_bytes_read_per_thread",
    [13] = "load: threads x unique_global_bytes_read_per_thread",
    [16] = "load: num_realizations x unique_shared_lines_read_per_realization",
    [17] = "load: threads x unique_shared_lines_read_per_thread",
    [18] = "load: threads x unique_global_lines_read_per_thread",
    [19] = "compute: points computed (not inlined) x idle core / lane wastage",
    [20] = "load: num_realizations x unique_shared_bytes_read_per_realization",
    [21] = "store: num_blocks x num_global_mem_stores_per_block / efficiency",
    [22] = "store: false sharing, num_scalars / global_innermost_bytes_at_task",
    [24] = "malloc: num_realizations",
    [25] = "parallelism: launches, num_productions",
    [26] = "parallelism: tasks, num_productions x (inner_parallelism - 1)",
    [27] = "load: num_blocks x num_shared_mem_loads_per_block",
    [28] = "load: num_blocks x num_global_mem_loads_per_block / efficiency",
    [29] = "store: num_blocks x num_shared_mem_stores_per_block",
    [NN_TERM_ARITH] = "compute: points computed x arithmetic operations per point x idle core / lane wastage",
    [NN_TERM_LOADS] = "load: points computed x load instructions per point x idle core / lane wastage",
};

const char *cost_term_name(int k) { return k >= 0 && k < NN_COEF ? term_names[k] : NULL; }

/* ---- the learned model ---- */

/* The algorithm part of one stage: its features and b3 + W3[:H1] e1. */
typedef struct {
    bool set;
    double algo[NN_ALGO_IN];
    double part[NN_COEF];
} learned_stage;

typedef struct {
    cost_model base;
    nn_model w;
    target t;
    double sw1[NN_ALGO_IN * NN_H1];
    /* per Func id, per stage: grown on demand */
    int nfuncs;
    int *nstages;
    learned_stage **stages;
} learned;

static const double *learned_part(learned *L, const feat_row *row) {
    if (row->func >= L->nfuncs) {
        int n = row->func + 1;
        L->nstages = base_realloc(L->nstages, sizeof(int) * (size_t)n);
        L->stages = base_realloc(L->stages, sizeof(learned_stage *) * (size_t)n);
        for (int i = L->nfuncs; i < n; i++) {
            L->nstages[i] = 0;
            L->stages[i] = NULL;
        }
        L->nfuncs = n;
    }
    if (row->stage >= L->nstages[row->func]) {
        int n = row->stage + 1, old = L->nstages[row->func];
        L->stages[row->func] = base_realloc(L->stages[row->func], sizeof(learned_stage) * (size_t)n);
        memset(L->stages[row->func] + old, 0, sizeof(learned_stage) * (size_t)(n - old));
        L->nstages[row->func] = n;
    }
    learned_stage *ls = &L->stages[row->func][row->stage];
    if (!ls->set || memcmp(ls->algo, row->v, sizeof ls->algo)) {
        memcpy(ls->algo, row->v, sizeof ls->algo);
        nn_algo_part(&L->w, L->sw1, row->v, ls->part);
        ls->set = true;
    }
    return ls->part;
}

/* A row's part of its state's cost, before the scale. */
static double learned_row(learned *L, const feat_row *row) {
    double sched[NN_SCHED_IN], terms[NN_COEF];
    nn_sched_inputs(row->v, sched);
    cost_terms(row->v, &L->t, terms);
    return nn_row_cost(&L->w, learned_part(L, row), sched, terms);
}

static double learned_finish(cost_model *m, double sum) {
    learned *L = (learned *)m;
    return exp(L->w.w[NN_OFF_SCALE]) * sum;
}

/* predict and row_parts of a model that is a sum over rows: one row's
 * part by `row`, a state's prediction finish(the parts summed in row
 * order), as cost_ops asks. */
typedef double (*row_fn)(cost_model *m, const feat_row *row);

static void predict_rows(cost_model *m, row_fn row, int n, const feat_result *const *feats, double *ms) {
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int r = 0; r < feats[i]->n; r++) sum += row(m, &feats[i]->rows[r]);
        ms[i] = m->ops->finish(m, sum);
    }
}

static void parts_rows(cost_model *m, row_fn row, int n, const feat_row *const *rows, double *parts) {
    for (int i = 0; i < n; i++) parts[i] = row(m, rows[i]);
}

static double learned_row_of(cost_model *m, const feat_row *row) { return learned_row((learned *)m, row); }

static int learned_predict(cost_model *m, int n, const feat_result *const *feats, double *ms, char *err,
                           size_t errlen) {
    (void)err, (void)errlen;
    predict_rows(m, learned_row_of, n, feats, ms);
    return 0;
}

static int learned_row_parts(cost_model *m, int n, const feat_row *const *rows, double *parts, char *err,
                             size_t errlen) {
    (void)err, (void)errlen;
    parts_rows(m, learned_row_of, n, rows, parts);
    return 0;
}

static void learned_free(cost_model *m) {
    learned *L = (learned *)m;
    for (int i = 0; i < L->nfuncs; i++) free(L->stages[i]);
    free(L->stages);
    free(L->nstages);
    free(L);
}

static const cost_ops learned_ops = {
    .name = "learned",
    .predict = learned_predict,
    .free = learned_free,
    .row_parts = learned_row_parts,
    .finish = learned_finish,
};

cost_model *cost_learned_new(const nn_model *w, const target *t) {
    learned *L = base_calloc(1, sizeof *L);
    L->base.ops = &learned_ops;
    L->w = *w;
    L->t = *t;
    nn_squash(&L->w, L->sw1);
    return &L->base;
}

/* ---- the mean of several learned models ---- */

/* Each row's part is the mean over the models of the row's scaled cost,
 * so a state's prediction (the sum of its rows' parts) is the mean of the
 * models' predictions and stays a sum over rows for the memo. */
typedef struct {
    cost_model base;
    int n;
    learned **m;
} learned_mean;

static double mean_row(cost_model *m, const feat_row *row) {
    learned_mean *E = (learned_mean *)m;
    double sum = 0;
    for (int k = 0; k < E->n; k++) sum += learned_finish(&E->m[k]->base, learned_row(E->m[k], row));
    return sum / E->n;
}

static double mean_finish(cost_model *m, double sum) {
    (void)m;
    return sum;
}

static int mean_predict(cost_model *m, int n, const feat_result *const *feats, double *ms, char *err, size_t errlen) {
    (void)err, (void)errlen;
    predict_rows(m, mean_row, n, feats, ms);
    return 0;
}

static int mean_row_parts(cost_model *m, int n, const feat_row *const *rows, double *parts, char *err,
                          size_t errlen) {
    (void)err, (void)errlen;
    parts_rows(m, mean_row, n, rows, parts);
    return 0;
}

static int mean_members(cost_model *m, const feat_result *f, double *each) {
    learned_mean *E = (learned_mean *)m;
    for (int k = 0; k < E->n; k++) {
        const feat_result *fr = f;
        predict_rows(&E->m[k]->base, learned_row_of, 1, &fr, &each[k]);
    }
    return E->n;
}

static void mean_free(cost_model *m) {
    learned_mean *E = (learned_mean *)m;
    for (int k = 0; k < E->n; k++) learned_free(&E->m[k]->base);
    free(E->m);
    free(E);
}

static const cost_ops mean_ops = {
    .name = "learned mean",
    .predict = mean_predict,
    .free = mean_free,
    .row_parts = mean_row_parts,
    .finish = mean_finish,
    .members = mean_members,
};

int cost_predict_members(cost_model *m, const feat_result *f, double *each, char *err, size_t errlen) {
    if (m->ops->members) return m->ops->members(m, f, each);
    return cost_predict(m, 1, &f, each, err, errlen) == 0 ? 1 : -1;
}

cost_model *cost_learned_mean_new(const nn_model *const *ws, int n, const target *t) {
    if (n == 1) return cost_learned_new(ws[0], t);
    if (n > COST_MAX_MEMBERS) n = COST_MAX_MEMBERS;
    learned_mean *E = base_calloc(1, sizeof *E);
    E->base.ops = &mean_ops;
    E->n = n;
    E->m = base_calloc((size_t)n, sizeof *E->m);
    for (int k = 0; k < n; k++) E->m[k] = (learned *)cost_learned_new(ws[k], t);
    return &E->base;
}

/* ---- the memo of row parts ---- */

typedef struct {
    uint64_t key;                 /* 0: empty */
    double part;                  /* NAN: being costed in this call */
} memo_slot;

/* Keys are handed out in sequence (feat_row.key), so key mod FRONT maps
 * the keys of a few thousand recent kernels to distinct slots of a small
 * direct-mapped table in front of the big one: a search's states share
 * most of their rows, and finding them there spares a cache miss each. */
#define FRONT 8192

struct cost_memo {
    memo_slot *s;
    size_t cap, n;
    memo_slot front[FRONT];       /* copies of entries with their part */
    cost_memo_stats st;
    /* a call's scratch */
    const feat_row **rows;
    double *parts;
    size_t rcap;
};

static memo_slot *memo_at(const cost_memo *c, uint64_t key);

cost_memo *cost_memo_new(void) {
    cost_memo *c = base_calloc(1, sizeof *c);
    c->cap = 1024;
    c->s = base_calloc(c->cap, sizeof *c->s);
    return c;
}

void cost_memo_free(cost_memo *c) {
    if (!c) return;
    free(c->s);
    free(c->rows);
    free(c->parts);
    free(c);
}

void cost_memo_clear(cost_memo *c) {
    memset(c->s, 0, c->cap * sizeof *c->s);
    memset(c->front, 0, sizeof c->front);
    c->n = 0;
}

/* The part of key, or NAN when it is not known (yet). */
static double memo_part(cost_memo *c, uint64_t key) {
    memo_slot *f = &c->front[key & (FRONT - 1)];
    if (f->key == key) return f->part;
    const memo_slot *sl = memo_at(c, key);
    if (sl->key && !isnan(sl->part)) *f = *sl;
    return sl->key ? sl->part : NAN;
}

cost_memo_stats cost_memo_get_stats(const cost_memo *c) {
    cost_memo_stats st = c->st;
    st.entries = c->n;
    return st;
}

static size_t memo_home(const cost_memo *c, uint64_t key) {
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (c->cap - 1);
}

/* The slot of key: found, or the empty one it would take. */
static memo_slot *memo_at(const cost_memo *c, uint64_t key) {
    size_t i = memo_home(c, key);
    while (c->s[i].key && c->s[i].key != key) i = (i + 1) & (c->cap - 1);
    return &c->s[i];
}

static memo_slot *memo_add(cost_memo *c, uint64_t key) {
    if (2 * (c->n + 1) > c->cap) {
        memo_slot *old = c->s;
        size_t cap = c->cap;
        c->cap *= 2;
        c->s = base_calloc(c->cap, sizeof *c->s);
        for (size_t i = 0; i < cap; i++)
            if (old[i].key) *memo_at(c, old[i].key) = old[i];
        free(old);
    }
    memo_slot *sl = memo_at(c, key);
    sl->key = key;
    sl->part = NAN;
    c->n++;
    return sl;
}

static void memo_push(cost_memo *c, size_t n, const feat_row *row) {
    if (n == c->rcap) {
        c->rcap = c->rcap ? 2 * c->rcap : 256;
        c->rows = base_realloc(c->rows, sizeof *c->rows * c->rcap);
        c->parts = base_realloc(c->parts, sizeof *c->parts * c->rcap);
    }
    c->rows[n] = row;
}

int cost_predict_schedule(cost_model *m, const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                          const target *t, double *ms, char *err, size_t errlen) {
    feat_result r = { 0 };
    int rc = feat_compute(p, b, s, t, &r, err, errlen);
    if (rc == 0) {
        const feat_result *fr = &r;
        rc = cost_predict(m, 1, &fr, ms, err, errlen);
    }
    feat_free(&r);
    return rc;
}

/* cost_predict on copies of the rows, for a model that is not a sum over
 * rows. */
static int predict_copies(cost_model *m, int n, const feat_refs *const *feats, double *ms, char *err,
                          size_t errlen) {
    feat_result *fr = base_calloc((size_t)n + 1, sizeof *fr);
    const feat_result **fs = base_calloc((size_t)n + 1, sizeof *fs);
    for (int i = 0; i < n; i++) {
        fr[i].rows = base_calloc((size_t)feats[i]->n + 1, sizeof *fr[i].rows);
        for (int r = 0; r < feats[i]->n; r++) fr[i].rows[r] = *feats[i]->rows[r];
        fr[i].n = feats[i]->n;
        fs[i] = &fr[i];
    }
    int rc = cost_predict(m, n, fs, ms, err, errlen);
    for (int i = 0; i < n; i++) free(fr[i].rows);
    free(fr);
    free(fs);
    return rc;
}

int cost_predict_memo(cost_model *m, cost_memo *memo, int n, const feat_refs *const *feats, double *ms, char *err,
                      size_t errlen) {
    if (!m->ops->row_parts || !m->ops->finish) return predict_copies(m, n, feats, ms, err, errlen);
    /* the rows to cost: every unkeyed row, and each keyed row not known
     * yet, once */
    size_t todo = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < feats[i]->n; r++) {
            const feat_row *row = feats[i]->rows[r];
            if (!row->key) {
                memo->st.unkeyed++;
                memo_push(memo, todo++, row);
                continue;
            }
            if (!isnan(memo_part(memo, row->key)) || memo_at(memo, row->key)->key) {
                memo->st.hits++;          /* known, or costed in this call */
                continue;
            }
            memo->st.misses++;
            memo_add(memo, row->key);
            memo_push(memo, todo++, row);
        }
    if (todo > 0 && m->ops->row_parts(m, (int)todo, memo->rows, memo->parts, err, errlen) != 0) {
        cost_memo_clear(memo);        /* the keys this call added have no part */
        return -1;
    }
    for (size_t j = 0; j < todo; j++)
        if (memo->rows[j]->key) memo_at(memo, memo->rows[j]->key)->part = memo->parts[j];
    /* the sums, in row order; unkeyed rows come in the order they were
     * pushed */
    size_t u = 0;
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int r = 0; r < feats[i]->n; r++) {
            const feat_row *row = feats[i]->rows[r];
            if (!row->key) {
                while (memo->rows[u]->key) u++;
                sum += memo->parts[u++];
            } else {
                sum += memo_part(memo, row->key);
            }
        }
        ms[i] = m->ops->finish(m, sum);
    }
    return 0;
}
