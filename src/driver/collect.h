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
    FILE *log;                    /* progress and messages */
    bool progress_bar;            /* redraw one line (a terminal) instead of a line per sample */
} collect_opts;

typedef struct collect_ctx collect_ctx;

/* Opens the device (its target, description and key: measure.h) and
 * stores it.  NULL with err. */
collect_ctx *collect_open(store *st, const collect_opts *o, char *err, size_t errlen);
void collect_close(collect_ctx *c);
const target *collect_target(const collect_ctx *c);
const char *collect_device_key(const collect_ctx *c);

/* The totals so far. */
typedef struct {
    int64_t measured, failed, wrong, timeout;   /* stored this run */
    int64_t skipped;              /* already in the store */
    int64_t duplicates;           /* walks that gave a schedule drawn before */
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

/* Whether the budget is spent or a stop was requested. */
bool collect_stopped(const collect_ctx *c);
/* Async-signal-safe. */
void collect_request_stop(void);

#endif
