/*
 * driver.h - the whole path from .pipe text to a checked, timed run, in
 * one place (driver_compile, driver_run): parse, bound, schedule (from a
 * file or a strategy), check against the target, lower, generate code,
 * compile, run, compare with the reference evaluator, time.
 */
#ifndef SC_DRIVER_H
#define SC_DRIVER_H

#include "exec.h"
#include "strategy.h"

typedef struct {
    sc_pipeline *p;
    bounds_result *b;
    ir_arena *arena;              /* schedules */
    target t;
    sched_state *s;
    lower_program *prog;
} driver_state;

typedef struct {
    const char *schedule_path;    /* a .sched file, or NULL */
    const char *strategy;         /* a name in strategy.h's table (when no file) */
    uint64_t seed;
    const char *target;           /* a target name, or several, comma-separated: the first
                                   * there is used (host-cuda and host-opencl need their
                                   * device); NULL = "host-cuda,host-opencl,a100", the
                                   * best device's own */
    const char *targets_dir;      /* NULL = "targets" */
    bool prune;
    int unroll_whole;             /* space_opts.unroll_whole: 0 off, 1 on, or
                                   * SPACE_UNROLL_WHOLE_BY_TARGET (space.h) */
    const space_search_args *search;  /* a searching strategy's options, or NULL */
    /* After a one-shot batch (choose.h): top-K measures the k best on the
     * device (topk_device, math, jobs parallel compiles, timeout_ms per
     * run); CUDA targets filter out spilling code (both strategies). */
    int k;
    const char *topk_device;
    cg_math math;
    int jobs, timeout_ms;
} driver_sched_opts;

/* Parses and bounds the pipeline; 0, or -1 with the errors printed to err_out. */
int driver_load(driver_state *d, const char *pipe_path, const sc_parse_options *po, FILE *err_out);
/* Chooses the target and the schedule and checks it; then lowers it. */
int driver_schedule(driver_state *d, const driver_sched_opts *o, FILE *err_out);
void driver_free(driver_state *d);
/* The whole text file at path (at most 16 MiB), malloc'd; NULL with err. */
char *driver_read_text(const char *path, char *err, size_t errlen);

/* Runs the lowered program on a device (by name, or NULL for the best),
 * its code generated with the math mode (exact: bit-identical to the
 * reference evaluator; fast: the device's own f32 functions, checked within
 * exec_tolerance); with check, compares every output with the reference
 * evaluator and prints how far apart they are; with timing > 0 also times
 * it (warmup, runs, samples).  Returns 0 if everything ran (and matched),
 * 1 on a mismatch (the outputs are still handed back), -1 on an error. */
typedef struct {
    const char *device;
    bool check;
    int warmup, runs, samples;    /* samples == 0: no timing */
    int timeout_ms;
    cg_math math;
    const char *arch;             /* CUDA: "sm_80" ...; NULL: the GPU's own, or the
                                   * target's where kernels cannot run */
    FILE *out;
    double *time_ms;              /* out: the measured time, if timed */
    sc_buffer **inputs;           /* every input of the pipeline (the caller's) */
    sc_buffer **outputs;          /* if not NULL: out, the device's outputs
                                   * (the caller frees them); left NULL
                                   * where the program did not run */
    bool per_kernel;              /* with timing: also each kernel timed alone */
    /* With per_kernel: also what the mean of these nmodels models predicts
     * for each kernel (the stages it computes), beside its time. */
    const nn_model *const *models;
    int nmodels;
} driver_run_opts;

int driver_run(driver_state *d, const driver_run_opts *o, FILE *err_out);

#endif
