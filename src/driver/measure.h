/*
 * measure.h - measuring one schedule on a device the way the benchmarks
 * and the sample collection do: lower, generate code, compile, run once
 * and check against the reference outputs (a wrong result is never
 * timed), then time it (Sioutas et al. 2020 §5: the mean of back-to-back
 * runs, several samples, the minimum is the summary).
 *
 * A kernel past its time limit cannot be stopped inside an OpenCL driver,
 * so on devices that allow it each schedule is measured in a child process
 * (fork) that is killed when late, and the parent never opens the device.
 * The parent computes reference outputs with the evaluator, which uses
 * OpenMP, and libgomp's threads do not survive fork: the C device runs
 * generated OpenMP code, so it is measured in-process instead, with a
 * fresh device per schedule (its runtime enforces the time limit).
 */
#ifndef SC_MEASURE_H
#define SC_MEASURE_H

#include "exec.h"
#include "sched.h"

typedef enum { MEASURE_OK, MEASURE_FAILED, MEASURE_WRONG, MEASURE_TIMEOUT } measure_kind;

#define MEASURE_MAX_SAMPLES 8

/* What one measurement gives (a plain struct: it is sent from a child
 * through a pipe). */
typedef struct {
    measure_kind kind;
    double ms;                          /* the summary: the least sample */
    double ref_ms;                      /* the reference's, timed in turn with it (0: none), such
                                         * that ms / ref_ms is the median of the in-turn ratios */
    int nsamples;
    double samples_ms[MEASURE_MAX_SAMPLES];  /* each the mean of `runs` runs */
    int runs;
    int kernels;
    /* each kernel timed alone after the in-turn samples, when the device
     * asks for it (measure_device.kernel_times): the store's text
     * (store_kernel_ms_parse); "" when not timed, or past its room */
    char kernel_ms[4096];
    double compile_s;                   /* lowering, code generation and compiling */
    char check[256];                    /* how the result compared */
    char msg[1024];                     /* what failed */
} measure_outcome;

typedef struct {
    const rt_ops *ops;
    bool fork_each;                     /* measure in a child process */
    cg_math math;
    bool cpu;                           /* its target is a CPU (target.cpu): lowered without
                                         * register staging (lower_schedule_for) */
    bool kernel_times;                  /* also time each kernel alone (measure_outcome.kernel_ms):
                                         * collect's samples, for the per-kernel loss */
} measure_device;

/* The device of that name ("opencl", "c", "cuda") with the math mode:
 * forked except for c.  false if the name is unknown.  cpu is false: a
 * caller that has the device's target (measure_find_target) sets it. */
bool measure_device_by_name(const char *name, cg_math math, measure_device *d);

/* What every schedule of p is checked against: the inputs (sc_input_random
 * for seed) in *in and the reference evaluator's outputs for them in *ref,
 * arrays of one more entry than p has inputs and outputs (the last NULL).
 * 0, or -1 with err when the evaluator fails; the arrays are made either
 * way: free them with measure_buffers_free. */
int measure_buffers_new(sc_pipeline *p, uint64_t seed, sc_buffer ***in, sc_buffer ***ref, char *err, size_t errlen);
/* Frees both arrays and what they hold (either may be NULL). */
void measure_buffers_free(const sc_pipeline *p, sc_buffer **in, sc_buffer **ref);

/* In-turn pairs (r, s) are timed until MEASURE_AGREEING of their ratios
 * s / r lie within MEASURE_AGREE of the median ratio (at least 3 pairs, at
 * most MEASURE_MAX_SAMPLES; docs/samples.md). */
#define MEASURE_AGREEING 3
#define MEASURE_AGREE 0.10
/* The median of ratio[0..n) (1 <= n <= MEASURE_MAX_SAMPLES) and in
 * *agreeing how many lie within MEASURE_AGREE of it. */
double measure_median_agreeing(const double *ratio, int n, int *agreeing);

/* Time limits: the checked first run (which also warms up: some drivers
 * finish compiling at the first launch) and each timed run. */
typedef struct { int first_ms, run_ms; } measure_limits;

/* The limits for runs of at most run_ms: the first run may take 3x that,
 * and at least 30 s, as it includes what the driver compiles at the first
 * launch (PoCL builds each kernel then: a 31-kernel stencil_chain schedule
 * that runs in 1.1 s took over 10 s to its first result on this loaded
 * machine, and was stored as a time-out). */
measure_limits measure_limits_for(int run_ms);
/* The first run's limit for a program of nkernels kernels: lim.first_ms
 * and MEASURE_FIRST_LAUNCH_MS more per kernel, for the driver's compile at
 * each kernel's first launch.  PoCL builds a kernel's work-group function
 * then, and the compile that `collect` runs ahead (clBuildProgram) does
 * not: a 108-kernel bgu schedule that runs in 0.5 s needed 43 s to its
 * first result with an empty kernel cache here, and under a load of 4 its
 * first run passed 30 s: 13 such schedules were stored as time-outs. */
#define MEASURE_FIRST_LAUNCH_MS 500
int measure_first_ms(measure_limits lim, int nkernels);

/* Lowers, compiles, checks and times s (in a child when d->fork_each; the
 * child is killed after a deadline that leaves room for compiling and
 * every run it makes).  *o is always filled.  With d->kernel_times, a
 * timed schedule's kernels are then timed alone (exec_kernel_times: the
 * fastest of 3 runs, 1 past 200 ms), each named by its root Func and
 * stage.
 *
 * With a reference schedule (rs, may be NULL) the same process also
 * compiles it and times it in turn with s, sample by sample (r, s, r, s,
 * ...) until the ratios of the pairs agree (measure.c), and reports as
 * ref_ms the time that makes ms / ref_ms their median: on a shared machine the
 * load drifts over minutes and moves every time with it, while the ratio
 * ms / ref_ms of two codes timed within the same second does not (the
 * reference is not checked here: it is checked when it is measured
 * itself). */
void measure_schedule(const measure_device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                      const sched_state *rs, sc_buffer *const *in, sc_buffer *const *ref, measure_limits lim,
                      measure_outcome *o);

/* Fast math can move a float across an integer boundary (a histogram's
 * bin), which changes the result beyond any tolerance though the schedule
 * is right.  When o is a wrong result of fast-math code on d, s is
 * measured again as measure_schedule does with exact code into *exact and
 * true is returned (whatever that gives); false otherwise (nothing run). */
bool measure_exact_retry(const measure_device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                         const sched_state *rs, sc_buffer *const *in, sc_buffer *const *ref, measure_limits lim,
                         const measure_outcome *o, measure_outcome *exact);

/* Compiles the code of n schedules in up to `jobs` child processes at
 * once, for drivers that cache what they compiled (PoCL keeps a kernel
 * cache keyed by the source, so the measurement's own compile is then a
 * lookup); nothing is run.  A no-op for devices that are not forked.
 * Returns how many compiled. */
int measure_precompile(const measure_device *d, sc_pipeline *p, const bounds_result *b,
                       const sched_state *const *s, int n, int jobs);

/* The target schedules are made for on a device (the OpenCL device's or
 * the CUDA GPU's own limits, host-opencl or host-cuda, queried in a child
 * so that the parent never opens the device; a100 for c), its description, and the key samples are stored
 * under: "BACKEND:DRIVER:HARDWARE" (e.g. "opencl:pocl-3.1:pthread-skylake-
 * avx512-Intel(R) Xeon(R) Processor").  0, or -1 with err. */
int measure_find_target(const char *devname, target *t, char *desc, size_t desclen, char *key, size_t keylen,
                        char *err, size_t errlen);

#endif
