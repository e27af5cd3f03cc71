/*
 * exec.h - running a lowered program on a device: generate code for the
 * device's back end, compile it, hold the global buffers, upload inputs,
 * launch the kernels in order, read the outputs back, time it.
 *
 * Timing follows Sioutas et al. 2020 §5: warm up, then take `samples`
 * samples, each the mean time of `runs` back-to-back runs of the whole
 * pipeline, and report the minimum over samples.
 */
#ifndef SC_EXEC_H
#define SC_EXEC_H

#include "codegen.h"
#include "lower.h"
#include "rt.h"

typedef struct exec_session exec_session;

/* Generates and compiles the program for ops' back end (options are passed
 * to the compiler) and allocates its buffers.  NULL with err (which carries
 * the compiler's log when compiling failed).  exec_open generates exact
 * code (CG_MATH_EXACT); exec_open_math takes the math mode. */
exec_session *exec_open(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                        const char *options, char *err, size_t errlen);
exec_session *exec_open_math(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                             cg_math math, const char *options, char *err, size_t errlen);
void exec_close(exec_session *s);
const char *exec_source(const exec_session *s);
/* Compile information per kernel (count; *info stays owned by s). */
int exec_kernel_info(exec_session *s, const rt_kernel_info **info);

/* inputs[i]: the i-th input's buffer, as declared (dense, min 0). */
int exec_upload(exec_session *s, sc_buffer *const *inputs, char *err, size_t errlen);
/* Launches every kernel once and waits (at most timeout_ms). */
int exec_run(exec_session *s, int timeout_ms, char *err, size_t errlen);
/* outputs[i] <- new buffer over [0, out_extent) of the i-th output. */
int exec_download(exec_session *s, sc_buffer **outputs, char *err, size_t errlen);
/* The Sioutas §5 measure, in ms; < 0 on error (err set). */
double exec_time(exec_session *s, int warmup, int runs, int samples, int timeout_ms,
                 char *err, size_t errlen);

/* Each kernel timed alone (timer_start, the one launch, finish,
 * timer_stop), in launch order, the whole pipeline `runs` times over:
 * ms[i] (room for every kernel) is the fastest of kernel i's runs.  The
 * program runs in order, so every kernel reads what it would; the sum may
 * exceed exec_time's by the synchronisation after each launch.  0, or -1
 * with err. */
int exec_kernel_times(exec_session *s, int runs, int timeout_ms, double *ms, char *err, size_t errlen);

/* How closely outputs must agree with the reference evaluator's.
 *
 * Exact (CG_MATH_EXACT; exact is true): every point bit-identical, except
 * that a NaN equals any NaN (NaN payloads and signs are not specified by
 * IEEE 754 for results of operations, nor by C for the NAN macro).  +0 and
 * -0 differ.  Integers: equal.
 *
 * Fast (CG_MATH_FAST), with scale the output's largest finite |ref|:
 *  - a point is close if it is within one unit in the last place of an
 *    integer, or, for f32, within max_ulp ulps or abs_floor * scale (near
 *    zero, where an ulp is tiny, what rounding leaves after cancellation is
 *    a few ulps of the output's magnitude);
 *  - a point that is not close is an outlier if it is within
 *    outlier_floor * scale: a table index or coordinate computed from f32
 *    that moved by one (local_laplacian's remap), which changes the result
 *    by a step of the table, not by an ulp;
 *  - the check passes if every point is close or an outlier, and outliers
 *    are at most outlier_frac of the points.
 * Infinities must be equal and NaN must meet NaN.  The numbers and why:
 * exec_tolerance in exec.c and docs/backends.md. */
typedef struct {
    bool exact;
    int64_t max_ulp;
    double abs_floor;           /* times the scale */
    double outlier_floor;       /* times the scale */
    double outlier_frac;        /* of the points */
} exec_tol;

/* The tolerance of the math mode's check. */
exec_tol exec_tolerance(cg_math math);
/* A one-line description ("bit-exact (NaN equals NaN)", "f32 within ...");
 * buf is returned. */
const char *exec_tol_describe(const exec_tol *t, char *buf, size_t len);

/* How far apart two outputs are. */
typedef struct {
    int64_t points;             /* compared */
    int64_t mismatches;         /* outside the tolerance (with the outliers
                                   when they are too many) */
    int64_t differ;             /* not bit-identical (NaN = NaN) */
    int64_t outliers;           /* not close, within the outlier floor */
    double max_abs;             /* largest |got - ref|; inf where inf or NaN meets a number */
    int64_t max_ulp;            /* f32: largest distance in ulps (INT64_MAX as for max_abs) */
    double max_far;             /* largest |got - ref| / scale of the points
                                   beyond max_ulp (f32) or 1 (integers) */
    double scale;               /* the largest finite |ref| */
} exec_diff;

/* Adds b's counts to a and takes the larger maxima. */
void exec_diff_add(exec_diff *a, const exec_diff *b);

/* Opens a session with the math mode, uploads the inputs, runs once and
 * compares every output with ref (the reference evaluator's outputs) under
 * exec_tolerance(math).  Returns the session, ready for exec_time, with
 * *diff summed over the outputs (a session whose result differs is returned
 * too: the caller must not time it).  NULL with err if anything failed to
 * compile or run. */
exec_session *exec_open_checked(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                                cg_math math, const char *options, sc_buffer *const *in,
                                sc_buffer *const *ref, int timeout_ms, exec_diff *diff,
                                char *err, size_t errlen);

/* Compares two buffers of one shape under tol (see exec_tol); *diff is
 * set.  -1 if shapes or types differ. */
int exec_compare(const sc_buffer *got, const sc_buffer *ref, const exec_tol *tol, exec_diff *diff);

/* The distance in ulps between two finite or infinite f32 values (+0 and
 * -0 are 0 apart, the largest finite value and infinity 1); INT64_MAX if
 * either is NaN. */
int64_t exec_ulp_distance(float a, float b);

#endif
