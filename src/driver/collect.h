/*
 * collect.h - measuring schedules into the sample store: the loop behind
 * `stagecraft collect` (and, later, each batch of autotuning).
 *
 * For one pipeline: its canonical text (the IR text form, sizes resolved)
 * is stored and parsed back, so that what is measured is exactly what the
 * store holds; schedules are drawn (random walks of the space now),
 * duplicates and those that already have a result on this device are
 * skipped (so a rerun resumes), the rest are compiled in parallel (a
 * compiler cache makes the measurement's own compile a lookup), then
 * measured one at a time (measure.h: checked against the reference
 * first, in a child process with a time limit) and each result is stored
 * in a transaction of its own as soon as it is known.
 *
 * Stopping: collect_request_stop (from a signal handler) makes the loop
 * stop after the schedule it is measuring, without storing that one (a
 * child killed by the same Ctrl-C would otherwise look like a failure).
 */
#ifndef SC_COLLECT_H
#define SC_COLLECT_H

#include <stdio.h>
#include "costmodel.h"
#include "measure.h"
#include "store.h"

typedef struct {
    const char *device;           /* "opencl", "c", "cuda" */
    cg_math math;
    int jobs;                     /* parallel compiles */
    int timeout_ms;               /* per run */
    double budget_s;              /* stop after this long (0: no limit) */
    int schedules;                /* per pipeline */
    bool prune;                   /* the space's §6.6 pruning */
    FILE *log;                    /* progress and messages (NULL: none) */
    bool progress_bar;            /* redraw one line (a terminal) instead of a line per sample */
    /* Where schedules come from: random walks of the space (nmodels 0),
     * or the batches of the beam search guided by the mean of these
     * models (borrowed; costed for the device's target, as the searches'
     * cost_learned_mean_new) with children dropped at random with
     * probability dropout. */
    const nn_model *const *models;
    int nmodels;
    double dropout;
    /* Measures again the schedules whose stored measurement is stale (no
     * reference time, or code older than this build's: store_found_stale),
     * replacing it (store_result.replace_stale): those drawn, and then
     * every stored schedule of the pipeline that has no fresh measurement
     * on any device row (store_stale_schedules). */
    bool remeasure;
    /* Measures again, likewise, the schedules whose stored measurement has
     * no kernel times (store_found_without_kernel_times), replacing it
     * (store_result.replace_without_kernel_times): the labels of the
     * per-kernel loss for samples measured before collect timed kernels. */
    bool add_kernel_times;
    /* Where schedules come from, with model NULL: re-tilings of the
     * baseline (space_retile, seeds 1, 2, ...) that pass the target's
     * limits, its root stages' block shapes and serial tiles drawn anew
     * and its locations kept, instead of random walks; with a model: its
     * four best of a one-shot batch, then re-tilings of each in turn
     * (`--sampler picks`). */
    bool retile;
    int unroll_whole;             /* the space's short loops also unrolled whole (space_opts):
                                   * 0 off, 1 on, or SPACE_UNROLL_WHOLE_BY_TARGET (space.h) */
} collect_opts;

typedef struct collect_ctx collect_ctx;

/* Opens the device (its target, description and key: measure.h) and
 * stores it.  NULL with err. */
collect_ctx *collect_open(store *st, const collect_opts *o, char *err, size_t errlen);
void collect_close(collect_ctx *c);
const target *collect_target(const collect_ctx *c);
/* Makes the beam sampler use the mean of the n models ms (borrowed; n 0:
 * random walks), as collect_opts.models does at collect_open: for weights
 * chosen by the device's target (space_load_weights_list's defaults). */
void collect_set_models(collect_ctx *c, const nn_model *const *ms, int n);
const char *collect_device_key(const collect_ctx *c);

/* The totals so far. */
typedef struct {
    int64_t measured, failed, wrong, timeout;   /* stored this run */
    int64_t skipped;              /* already in the store */
    int64_t duplicates;           /* walks that gave a schedule drawn before */
    int64_t stale;                /* --remeasure: stored stale schedules read back */
    int64_t unreadable;           /* ... and those whose text no longer parses */
    int64_t pipelines;
    int64_t planned;              /* schedules to measure in all (for the progress) */
} collect_totals;
collect_totals collect_get_totals(const collect_ctx *c);
/* Adds n to the schedules planned (the progress bar's total). */
void collect_plan(collect_ctx *c, int64_t n);

/* Collects up to o->schedules schedules of the pipeline whose .pipe text
 * is given (name: for messages; source: "app:NAME", "random:seed=N").
 * 0 when done (or stopped: collect_stopped), -1 with err on an error that
 * ends the collection (the database); a pipeline that does not parse or
 * bound is -2 with err (the caller moves on to the next one). */
int collect_pipeline(collect_ctx *c, const char *name, const char *text, const char *source, bool small,
                     char *err, size_t errlen);

/* The parts of collect_pipeline, for callers that choose the schedules
 * themselves (autotuning): a pipeline opened (canonical text stored,
 * parsed back, bounded, its baseline and root made; NULL with *rc -1 on
 * a store error, -2 when it does not parse or bound, err says why), its
 * schedules' stored results looked up, and schedules measured. */
typedef struct collect_pipe collect_pipe;
collect_pipe *collect_pipe_open(collect_ctx *c, const char *name, const char *text, const char *source, bool small,
                                int *rc, char *err, size_t errlen);
void collect_pipe_free(collect_pipe *cp);
sc_pipeline *collect_pipe_pipeline(const collect_pipe *cp);
const bounds_result *collect_pipe_bounds(const collect_pipe *cp);
ir_arena *collect_pipe_arena(const collect_pipe *cp);   /* lives as long as cp */
const sched_state *collect_pipe_baseline(const collect_pipe *cp);   /* the reference (space_reference) */
int64_t collect_pipe_id(const collect_pipe *cp);

/* The stored result of a schedule text of the pipeline on the device (or
 * its exact-math row): as store_find_result. */
int collect_find(collect_ctx *c, const collect_pipe *cp, const char *text, store_found *f, char *err, size_t errlen);

/* Measures the n schedules (texts: their text forms) and stores each
 * result as it is known; res (may be NULL, n entries) gets each one's
 * result (done false for those not reached: a stop).  0, -1 with err (the
 * store), -2 with err (the reference evaluator failed). */
typedef struct {
    bool done;
    store_outcome outcome;
    double ms, ref_ms;
} collect_result;
int collect_measure(collect_ctx *c, collect_pipe *cp, sched_state *const *states, char *const *texts, int n,
                    collect_result *res, char *err, size_t errlen);

/* Whether the budget is spent or a stop was requested. */
bool collect_stopped(const collect_ctx *c);
/* Async-signal-safe. */
void collect_request_stop(void);

#endif
