/*
 * costmodel.h - cost models as plug-ins: a small ops struct that predicts
 * the run time of many (partial) states at once from their feature rows,
 * for the searches (DESIGN.md: "cost models and searches as small ops
 * structs").  The learned model of Anderson et al. 2021 is the first:
 * the cost terms of Appendix B computed from each stage's features and
 * the target, weighted by the coefficients the network (nn.h) predicts
 * from the same features, summed over a state's stages
 * (docs/costmodel.md).
 */
#ifndef SC_COSTMODEL_H
#define SC_COSTMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "features.h"
#include "nn.h"
#include "target.h"

/* The cost terms of one stage (Appendix B; the coefficient indices are
 * Halide's, so term k is weighted by coefficient k): NN_COEF values, 0
 * for the indices no term uses.  v is a feature vector (FEAT_COUNT), t
 * the target it was featurized for (its SM count and block limit enter
 * the idle-core term). */
void cost_terms(const double *v, const target *t, double *terms);
/* The name of term k ("compute: num_scalars (not inlined)"), or NULL for
 * an index no term uses. */
const char *cost_term_name(int k);

typedef struct cost_model cost_model;
typedef struct {
    const char *name;
    /* ms[i] = the predicted run time of state i from its features
     * (feats[i]: the rows of every decided, non-inline stage of one state;
     * the states may be of one pipeline or several).  0, or -1 with err. */
    int (*predict)(cost_model *m, int n, const feat_result *const *feats, double *ms, char *err,
                   size_t errlen);
    void (*free)(cost_model *m);
    /* Optional, for a model whose prediction of a state is a sum over its
     * rows (NULL otherwise): parts[i] = row i's part, alone; predict must
     * give finish(m, the parts of a state's rows summed in row order from
     * 0) bit for bit.  0, or -1 with err. */
    int (*row_parts)(cost_model *m, int n, const feat_row *const *rows, double *parts, char *err, size_t errlen);
    double (*finish)(cost_model *m, double sum);
    /* Optional, for a model that is a mean of others (NULL otherwise):
     * each[k] = member k's prediction of the state f (room for
     * COST_MAX_MEMBERS); returns how many members. */
    int (*members)(cost_model *m, const feat_result *f, double *each);
} cost_ops;
#define COST_MAX_MEMBERS 16
struct cost_model {
    const cost_ops *ops;
};

static inline int cost_predict(cost_model *m, int n, const feat_result *const *feats, double *ms, char *err,
                               size_t errlen) {
    return m->ops->predict(m, n, feats, ms, err, errlen);
}
static inline void cost_free(cost_model *m) {
    if (m) m->ops->free(m);
}
/* Each member's prediction of the state f: each[k] for the members of a
 * mean of models (cost_learned_mean_new), else each[0] = the model's own
 * prediction.  Returns how many (>= 1), or -1 with err. */
int cost_predict_members(cost_model *m, const feat_result *f, double *each, char *err, size_t errlen);

/* The prediction for one complete schedule s of p on target t: its
 * features (feat_compute) costed alone.  0, or -1 with err. */
int cost_predict_schedule(cost_model *m, const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                          const target *t, double *ms, char *err, size_t errlen);

/* The parts of rows already costed, by feat_row.key, for a search that
 * costs the same kernels' rows again and again (a state differs from its
 * parent in one decision, so in the rows of one or two kernels): with a
 * model that is a sum over rows (cost_ops.row_parts), cost_predict_memo
 * computes each keyed row once and gives cost_predict's predictions bit
 * for bit; with another model it is cost_predict.  The keys must all come
 * from one feat_ctx, the same for the memo's whole life (or until
 * cost_memo_clear).  Explicit create/destroy; one per thread. */
typedef struct cost_memo cost_memo;
cost_memo *cost_memo_new(void);
void cost_memo_free(cost_memo *c);
void cost_memo_clear(cost_memo *c);
typedef struct {
    int64_t hits, misses;         /* keyed rows found / costed */
    int64_t unkeyed;              /* rows without a key (costed every time) */
    size_t entries;
} cost_memo_stats;
cost_memo_stats cost_memo_get_stats(const cost_memo *c);
int cost_predict_memo(cost_model *m, cost_memo *memo, int n, const feat_refs *const *feats, double *ms, char *err,
                      size_t errlen);

/* The learned model with a copy of weights w, for states featurized for
 * target t.  It keeps, per stage (Func and stage index), the part of the
 * network that depends only on the algorithm features (checked against
 * the row's features on every use), and its scratch: a call allocates
 * only when it meets a stage it has not seen. */
cost_model *cost_learned_new(const nn_model *w, const target *t);
/* The mean of n >= 1 learned models' predictions (the same network
 * trained with other seeds or data: their errors differ, so the best
 * predicted state of a search is less often one model's mistake).  With
 * n == 1 it is cost_learned_new(ws[0], t); at most COST_MAX_MEMBERS are
 * used (the weights lists that reach it are held to that). */
cost_model *cost_learned_mean_new(const nn_model *const *ws, int n, const target *t);

#endif
