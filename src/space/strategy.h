/*
 * strategy.h - the schedule strategies as plug-ins: each is a name, a line
 * saying what it does, and a function that makes a complete schedule of a
 * pipeline for a target.  The driver and the command line find them by
 * name in one table (strategy.c), so a new strategy (a search, a cost
 * model's choice) is one more entry there, and the usage text and the
 * "unknown strategy" error list it without further change.
 */
#ifndef SC_STRATEGY_H
#define SC_STRATEGY_H

#include "beam.h"
#include "nn.h"
#include "space.h"

/* The choice among a one-shot batch made after compiling (the driver's:
 * the CUDA spill filter, top-K's measurements), so that the search knows
 * nothing of devices: the batch's n distinct schedules come fastest
 * predicted first; the index of the one to return, or -1 with err. */
typedef int (*space_pick_fn)(void *ctx, sc_pipeline *p, const bounds_result *b, search_sample *batch, int n,
                             char *err, size_t errlen);

/* What a searching strategy (oneshot, topk) needs beyond the space, set
 * from the command line.  NULL: the defaults. */
typedef struct {
    const char *weights;          /* NULL: weights/pocl.weights beside the program */
    int beam, passes, samples;    /* 0: 32, 5, 80 */
    bool explain;                 /* per-stage costs and their largest terms */
    FILE *report;                 /* the prediction and the statistics as '#' lines (NULL: none) */
    space_pick_fn pick;           /* NULL: the best predicted (topk needs one) */
    void *pick_ctx;
    double margin;                /* one-shot keeps the baseline unless its pick is predicted
                                   * more than this many times faster (0 or 1: off) */
    bool spread_given;            /* search_opts.spread = spread; else the search's default */
    double spread;
    int freeze_min;               /* search_opts.freeze_min (0: the search's default) */
} space_search_args;

typedef struct space_strategy {
    const char *name;             /* as given to --strategy */
    const char *summary;          /* one line for --help */
    bool seeded;                  /* whether the seed changes the result */
    /* A complete schedule in arena a, or NULL with err.  args (may be
     * NULL) are read by the strategies that search. */
    sched_state *(*make)(ir_arena *a, sc_pipeline *p, const bounds_result *b, const space_opts *o,
                         const space_search_args *args, uint64_t seed, char *err, size_t errlen);
} space_strategy;

/* The strategy of that name; NULL if there is none. */
const space_strategy *space_strategy_by_name(const char *name);
/* The i-th strategy of the table, for 0 <= i < space_strategy_count(). */
int space_strategy_count(void);
const space_strategy *space_strategy_at(int i);
/* The names in table order, joined by sep, the last two by last
 * ("root, baseline or random"); buf is returned. */
const char *space_strategy_names(char *buf, size_t len, const char *sep, const char *last);

/* The weights a learned strategy uses when none are given, looked for in
 * ./weights/, then in weights/ beside the folder of the running program
 * (build/stagecraft -> weights/): for a CUDA GPU target (t->cuda_arch
 * set) the model trained on GPU samples, SPACE_CUDA_WEIGHTS, where it
 * exists; else (t NULL, another target, or no CUDA model) the PoCL model,
 * SPACE_POCL_WEIGHTS (docs/costmodel.md).  The path looked at last is left
 * in buf either way, and returned. */
#define SPACE_POCL_WEIGHTS "pocl.weights"
#define SPACE_CUDA_WEIGHTS "cuda.weights"
const char *space_default_weights(const target *t, char *buf, size_t len);
/* Whether model m was trained on samples of a CUDA GPU (alone or among
 * others): a CUDA target with weights that were not says so. */
bool space_weights_from_cuda(const nn_model *m);
/* The weights at path (NULL: the default ones for target t), malloc'd;
 * the path used in `used`.  NULL with err naming `who` needs them ("the
 * oneshot strategy") when there are none or the file is bad. */
nn_model *space_load_weights(const char *path, const char *who, const target *t, char *used, size_t usedlen,
                             char *err, size_t errlen);
/* The same for a comma-separated list of weights files (NULL: the default
 * ones for t, with the siblings beside them: NAME-2.weights, NAME-3.weights
 * and so on while they exist, the same network trained with other seeds),
 * whose mean a learned strategy predicts with
 * (cost_learned_mean_new): at most SPACE_MAX_WEIGHTS, each malloc'd into
 * ms; `used` names them all.  Their number, or -1 with err naming the
 * file (nothing is left allocated). */
#define SPACE_MAX_WEIGHTS COST_MAX_MEMBERS   /* the mean model's own bound */
int space_load_weights_list(const char *paths, const char *who, const target *t, nn_model **ms, char *used,
                            size_t usedlen, char *err, size_t errlen);

#endif
