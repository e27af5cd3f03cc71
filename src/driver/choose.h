/*
 * choose.h - choosing among the schedules of a one-shot batch (beam.h's
 * search_batch) once they are compiled or run, which the search itself
 * cannot do (it knows no device): Anderson et al. 2021 §8.
 *
 *  - The post-compile spill filter (§8.1), for CUDA targets: candidates
 *    are compiled for the target's architecture with NVRTC (ptxas reports
 *    spills; no GPU is needed), best predicted first; the first that
 *    spills nothing is chosen.  When every one spills, the best predicted
 *    among those within 50% of the least spilling is chosen.
 *  - Top-K: the K best predicted (of those the filter keeps, on CUDA
 *    targets) are compiled in parallel, then each is checked against the
 *    reference evaluator and timed on the device (measure.h), in turn with
 *    the pipeline's baseline schedule; the fastest relative to the baseline
 *    timed with it is chosen (the load of a shared machine cancels).
 *
 * choose_pick is a space_pick_fn (strategy.h) over a choose_ctx.
 */
#ifndef SC_CHOOSE_H
#define SC_CHOOSE_H

#include <stdio.h>
#include "measure.h"
#include "strategy.h"

#define CHOOSE_SPILL_SLACK 1.5        /* within 50% of the least spilling */

typedef struct {
    const target *t;              /* the schedules' target (a CUDA one: the filter runs) */
    cg_math math;
    int k;                        /* top-K: how many to measure; 0: one-shot (no measuring) */
    const char *device;           /* top-K: "opencl", "c", "cuda" */
    int jobs;                     /* parallel compiles */
    int timeout_ms;               /* per run */
    FILE *report;                 /* '#' lines on what was compiled and measured, or NULL */
} choose_ctx;

/* The spills of a schedule's CUDA code for arch ("sm_80"): the spill
 * stores and loads of every kernel, in bytes, added (-1 with err when it
 * does not compile), and the most registers any kernel uses. */
int choose_cuda_spills(sc_pipeline *p, const bounds_result *b, const sched_state *s, const char *arch, cg_math math,
                       int *registers, char *err, size_t errlen);

/* The spill filter over the batch's first n: the index chosen, -1 with
 * err when none compiles.  keep (may be NULL, n entries) says which pass
 * the filter (for top-K: what it may measure). */
int choose_spill_filter(const choose_ctx *c, sc_pipeline *p, const bounds_result *b, const search_sample *batch,
                        int n, bool *keep, char *err, size_t errlen);

/* A space_pick_fn: the spill filter on CUDA targets, then top-K's
 * measurements when c->k > 0. */
int choose_pick(void *ctx, sc_pipeline *p, const bounds_result *b, search_sample *batch, int n, char *err,
                size_t errlen);

#endif
