/*
 * beam.h - the beam search of Anderson et al. 2021 §3-§6 over the
 * schedule space (space.h), guided by a cost model plug-in (costmodel.h);
 * docs/search.md describes the algorithm as implemented.
 *
 *  - States are extended one decision at a time, Funcs consumers first,
 *    in the enumerator's two phases per Func (location, then tiling).
 *  - Hierarchical sampling (§3, §6.4): the children of each beam state are
 *    bucketed by structural hash (sched_hash at depth min(pass + 1, 2));
 *    ceil(log2(B)) representatives (at least one) are drawn from a bucket
 *    of B children, and only they are featurized and costed, all of a step
 *    in one batched call of the cost model.
 *  - Children whose new stages leave more than lane_max of their block's
 *    lanes idle or waste core_max idle-core waves (the cost terms' figure) are
 *    secondary: a bucket's secondary representatives are costed only when
 *    none of its representatives is primary.
 *  - Passes (§6.5): pass i compares hashes at depth min(i + 1, 3); a state
 *    popped from the queue whose hash was already expanded in this step
 *    has its cost multiplied by (1 + times seen) once and goes back; at
 *    the end of a pass the complete states within 1.2x of the best bless
 *    their hashes and their ancestors' at the next pass's depth, and later
 *    passes multiply the cost of unblessed states by SEARCH_UNBLESSED.
 *  - Freezing (§4): a restricted pass (root or inline only) schedules
 *    every Func; each Func's own cost is predicted from its own rows, and
 *    all but the ceil(log2(N)) most expensive keep their restricted
 *    decisions in the full search (when N >= freeze_min).
 *  - A state with a single child (a frozen decision, an output's
 *    location, a single legal tiling) passes it on with its own cost,
 *    uncosted (there is nothing to choose), unless the child is complete.
 *  - Random dropout of children (never a parent's last), the §6.6
 *    pruning of the space (space_opts.prune), a deterministic seed.
 *
 * Memory: a search_ctx owns the featurizer and loop-nest caches (content
 * keyed), the legal tilings of each stage (space_tilings_of), a memo of
 * the cost model's part of each feature row (cost_predict_memo, by row
 * key) and a memo of the cost of every state costed, keyed by its
 * depth-3 structural hash; each pass runs in an arena of its own, freed
 * when the pass ends (the best state is copied out).  None of them
 * changes a decision: docs/search.md, "Speed".  Reentrant: no
 * static state; one ctx per thread.
 */
#ifndef SC_BEAM_H
#define SC_BEAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "costmodel.h"
#include "space.h"

#define SEARCH_BLESS_RATIO 1.2
#define SEARCH_UNBLESSED 1e10
/* The fewest Funcs a pipeline needs for the freezing pre-pass
 * (search_opts.freeze_min; docs/search.md, "Freezing") */
#define SEARCH_FREEZE_MIN 128

typedef struct {
    const target *t;
    cost_model *model;            /* borrowed */
    int beam;                     /* states kept per step (32) */
    int passes;                   /* (5) */
    uint64_t seed;
    double dropout;               /* probability a child is dropped (0) */
    bool prune;                   /* Anderson §6.6 (true) */
    bool unroll_whole;            /* space_opts.unroll_whole (false) */
    bool freeze;                  /* the §4 pre-pass (true) */
    int freeze_min;               /* freeze only pipelines of at least this many Funcs (SEARCH_FREEZE_MIN) */
    double lane_max, core_max;    /* secondary children: idle share of the block's lanes (0.5) / idle-core (1.2) */
    bool share_tiles;             /* a stage's tile also taken by the pending stages after it that run the
                                   * same loops, where legal: one decision (true) */
    double spread;                /* a batch of a mean of models is ranked by exp(mean + spread x standard
                                   * deviation) of its members' log predictions: > 0 prefers the schedules
                                   * they agree on (0: by the mean prediction) */
    /* Called for every bucket once its representatives are chosen (tests),
     * or NULL: its size, the representatives drawn, how many of them are
     * primary, how many secondary ones are costed. */
    void (*on_bucket)(void *hook, int size, int drawn, int primary, int secondary_costed);
    void *hook;
} search_opts;

void search_opts_default(search_opts *o, const target *t, cost_model *m);

typedef struct {
    int64_t enumerated;           /* children the enumerator produced */
    int64_t dropped;              /* by random dropout */
    int64_t buckets, drawn;       /* hierarchical sampling */
    int64_t featurized;           /* representatives featurized (memo misses) */
    int64_t costed;               /* states sent to the cost model */
    int64_t memo_hits;            /* representatives whose cost was memoized */
    int64_t secondary_costed;     /* secondary representatives costed */
    int64_t secondary_skipped;    /* secondary representatives left out */
    int64_t predict_calls;        /* batched cost-model calls */
    int64_t unfeaturized;         /* states the featurizer refused (left out; 0 unless a bug) */
    int64_t forced;               /* only children, passed on uncosted */
    int passes, samples;
    int frozen;                   /* Funcs whose decisions were frozen */
    double wall_s;
} search_stats;

typedef struct search_ctx search_ctx;

/* A search of p (bounded by b, both outliving the ctx) under o (copied).
 * NULL with err when even the root schedule breaks the target's limits. */
search_ctx *search_new(const sc_pipeline *p, const bounds_result *b, const search_opts *o, char *err,
                       size_t errlen);
void search_free(search_ctx *c);
search_stats search_ctx_stats(const search_ctx *c);

/* One beam search (beam states, passes passes, seed): a complete,
 * legal state in arena a, its predicted time in *ms.  NULL with err only
 * when the cost model fails. */
sched_state *search_run(search_ctx *c, ir_arena *a, int beam, int passes, uint64_t seed, double *ms, char *err,
                        size_t errlen);

/* The §4 pre-pass: a restricted search (root or inline only), then every
 * Func but the ceil(log2(N)) most expensive (N: the defined Funcs) is
 * frozen to its restricted decision in later runs.  is_free (may be NULL,
 * nfuncs entries) tells which stay free.  0, or -1 with err. */
int search_freeze(search_ctx *c, bool *is_free, char *err, size_t errlen);

/* The predicted cost of each Func's own stages in the complete or partial
 * state s (cost[fid], 0 for inputs and Funcs without rows), from one
 * batched call.  0, or -1 with err. */
int search_func_costs(search_ctx *c, const sched_state *s, double *cost, char *err, size_t errlen);

/* Which Funcs stay free: the k most expensive defined ones (ties to the
 * lower id).  is_free: nfuncs entries. */
void search_pick_free(const sc_pipeline *p, const double *cost, int k, bool *is_free);

/* One schedule of a batch: the state (in the caller's arena), its
 * prediction, its text (malloc'd) and which sample found it first (-1:
 * the baseline, -2: root, which join every batch). */
typedef struct {
    sched_state *s;
    double ms;
    char *text;
    int sample;
    double rank;                  /* what the batch is ordered by: ms, or with o->spread the members' score */
} search_sample;

/* The batch of §8: one beam search (o->beam, o->passes, seed o->seed) and
 * samples - 1 greedy ones (beam 1, 1 pass, seeds o->seed + i), with
 * o->dropout for diversity, and the two fixed schedules, baseline and
 * root, each where it passes the target's rules (docs/search.md).  The
 * distinct schedules (by text) go to out (room for `samples`; a fixed
 * schedule displaces the worst predicted when it is better and there is
 * no room), fastest predicted first (with o->spread, the lowest rank
 * first);
 * returns how many, or
 * -1 with err (nothing to free then).  search_samples_free frees the
 * texts. */
int search_batch(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const search_opts *o, int samples,
                 search_sample *out, search_stats *st, char *err, size_t errlen);
void search_samples_free(search_sample *s, int n);

/* One-shot mode (§8): one beam search (o->beam, o->passes) plus
 * samples - 1 greedy ones (beam 1, 1 pass, seeds o->seed + i), and the
 * baseline and root; the best by the model, in arena a, its prediction in *ms, the
 * statistics in *st. */
sched_state *search_oneshot(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const search_opts *o,
                            int samples, double *ms, search_stats *st, char *err, size_t errlen);

/* Per stage of the complete state s: its predicted cost and its largest
 * cost terms (the learned model's coefficients times terms), to out; with
 * nm > 1 models, the mean of their costs and of each term's part (the
 * prediction cost_learned_mean_new makes), a floor named with how many of
 * the models fell to it. */
int search_explain(FILE *out, const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                   const nn_model *const *ms, int nm, char *err, size_t errlen);
/* The features of the complete state s in *fr (feat_free it) and each
 * row's predicted cost in *cost (free it; ms), the mean of the nm models:
 * the parts search_explain prints and the prediction sums.  -1 with err
 * where s cannot be featurized. */
int search_stage_costs(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                       const nn_model *const *ms, int nm, feat_result *fr, double **cost, char *err, size_t errlen);

#endif
