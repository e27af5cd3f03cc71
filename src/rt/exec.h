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
 * the compiler's log when compiling failed). */
exec_session *exec_open(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                        const char *options, char *err, size_t errlen);
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

/* Opens a session, uploads the inputs, runs once and compares every output
 * with ref (the reference evaluator's outputs).  Returns the session, ready
 * for exec_time, with *max_diff and *mismatches summed over the outputs
 * (a session whose result differs is returned too: the caller must not time
 * it).  NULL with err if anything failed to compile or run. */
exec_session *exec_open_checked(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                                const char *options, sc_buffer *const *in, sc_buffer *const *ref,
                                double abs_tol, double rel_tol, int timeout_ms,
                                double *max_diff, int64_t *mismatches, char *err, size_t errlen);

/* How far apart two buffers of one shape are: the largest absolute
 * difference, and whether they agree (exactly for integer types; within
 * abs_tol + rel_tol * |ref| for f32).  -1 if shapes or types differ. */
int exec_compare(const sc_buffer *got, const sc_buffer *ref, double abs_tol, double rel_tol,
                 double *max_diff, int64_t *mismatches);

#endif
