/*
 * autotune.h - the autotuning loop of Anderson et al. 2021 §8 (after
 * Adams et al. 2019): batches of schedules from the beam search guided by
 * the learned model, each compiled in parallel, checked and timed on the
 * device, stored in the sample store, and the model fine-tuned on this
 * pipeline's samples after every batch, so that the next batch is drawn
 * from a model that knows more of this pipeline.
 *
 * Iteration i's batch is search_batch (one beam search and batch - 1
 * greedy samples, children dropped with probability dropout) with seed
 * seed + i * AUTOTUNE_SEED_STRIDE under the weights left by iteration i - 1.
 * Schedules already stored for this pipeline and device are not measured
 * again: their stored results count.  After the batch the model is
 * fine-tuned on every sample of this pipeline on this device (from the
 * starting weights' point: the shipped weights, or random ones with
 * from_scratch, trained from scratch after the first batch), the weights
 * are written (to a temporary file renamed over the weights file), and
 * then the store's meta table records the iteration as done (key
 * "autotune PIPELINE-HASH DEVICE-KEY MATH").
 *
 * Killed at any moment: every sample measured is in the store (collect.h),
 * and a rerun starts at the first iteration not recorded, from the
 * weights written by the last one recorded, so its batch is the same and
 * what was measured of it is not measured again.  (Killed between the
 * rename and the meta update, the rerun redoes the last iteration from
 * its own weights: a different batch, nothing lost or measured twice.)
 *
 * The best so far is the sample of least time relative to the pipeline's
 * baseline timed in turn with it (measure.h), over all of this pipeline's
 * samples on this device.
 */
#ifndef SC_AUTOTUNE_H
#define SC_AUTOTUNE_H

#include <stdio.h>
#include "collect.h"

#define AUTOTUNE_SEED_STRIDE 1000003

typedef struct {
    collect_opts measure;         /* device, math, jobs, timeout_ms, prune, log, progress_bar (the rest unused) */
    int iterations;               /* (20) */
    int batch;                    /* schedules per iteration (80) */
    int epochs;                   /* fine-tuning epochs after each batch (40) */
    double dropout;               /* (0.3) */
    uint64_t seed;                /* (1) */
    const char *weights;          /* the starting weights (NULL: the shipped ones) */
    bool from_scratch;            /* random starting weights (seeded) */
    const char *weights_out;      /* where the fine-tuned weights go (required) */
    bool small;                   /* the pipeline's small sizes */
} autotune_opts;

void autotune_opts_default(autotune_opts *o);

typedef struct {
    int iterations_done;          /* recorded in the store, this run's and earlier ones */
    int64_t measured, skipped;    /* this run: schedules measured, already stored */
    int64_t samples;              /* this pipeline's successful samples on the device */
    double best_ms;               /* the best sample's time (INFINITY: none) */
    double best_ratio;            /* its time / the baseline's timed with it (0: no reference) */
    char *best_text;              /* its schedule (malloc'd; NULL: none) */
} autotune_result;

/* Autotunes the pipeline of .pipe text `text` (name: for messages;
 * source: "app:NAME") on o->measure.device into store st.  0 when every
 * iteration is done or the run was stopped (collect_request_stop; r says
 * how far), -1 with err on a store, weights or device error, -2 with err
 * when the pipeline does not parse.  Free r->best_text. */
int autotune_run(store *st, const char *name, const char *text, const char *source, const autotune_opts *o,
                 autotune_result *r, char *err, size_t errlen);

#endif
