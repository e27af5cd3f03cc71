/*
 * floor.h - how fast a pipeline could be on a device: the least memory
 * traffic any schedule of it must make, the copy bandwidth and the
 * arithmetic rate the device reaches through stagecraft's own code, and
 * which pipelines are memory-bound (their time floor is then traffic /
 * bandwidth).  docs/benchmarks.md, "Traffic floors", gives the rules and
 * the figures measured here.
 *
 * The traffic floor of a pipeline is every input's required region read
 * once plus every output written once: any schedule reads at least what
 * the outputs depend on and writes the outputs, and a perfect one keeps
 * every intermediate Func on chip.  The required region of an input is
 * the union, over every call of it in the stages bounds inference found
 * needed, of the interval of each coordinate with the stage's loops over
 * their extents (bounds.h); for a data-dependent coordinate that is its
 * value range clipped to the input, so the floor can then be above what a
 * schedule really reads.
 *
 * The arithmetic of a pipeline is the operations every stage evaluates
 * per point, summed over the points of the stage's region: what a
 * schedule that recomputes nothing performs.  An operation is a node of
 * kind add, sub, mul, div, mod, min, max, a comparison, a logical or
 * bitwise operator, a shift, a negation, a select or a math function
 * (each counts one), in the stage's value, not in the coordinates of its
 * calls (address arithmetic) and not casts, constants, variables, loads or
 * stores.
 *
 * A pipeline is memory-bound on a device when its arithmetic intensity
 * (operations / traffic-floor bytes) is below the device's balance: the
 * operations per second it reaches on a compute-bound pipeline
 * (floor_peak_ops) over the bytes per second of the copy
 * (floor_copy_bandwidth), both measured with measure_schedule, the
 * operations counted by the same rule.
 */
#ifndef SC_FLOOR_H
#define SC_FLOOR_H

#include "measure.h"

/* The balance measured on PoCL 3.1 on the development machine's two AMD
 * EPYC cores with the machine otherwise idle, rounded: the median of five
 * runs of `stagecraft floor` (2.07; 1.99-3.02 operations per byte, copy
 * 39-59 GB/s, 113-118 Gop/s, each the fastest of the tilings that the
 * measurements try); for reports that want a class that does not move
 * with the machine's load (docs/benchmarks.md).  The GPU targets'
 * nominal figures for comparison: a100 19,500 GFLOP/s / 1,555 GB/s =
 * 12.5, h100 20. */
#define FLOOR_BALANCE_POCL 2.1

/* The least bytes any schedule of p must move (see above).  b from
 * bounds_infer(p). */
int64_t floor_traffic_bytes(const sc_pipeline *p, const bounds_result *b);

/* The bytes of inputs' required regions alone (the part of the floor
 * that is read); the rest is written. */
int64_t floor_read_bytes(const sc_pipeline *p, const bounds_result *b);

/* The arithmetic operations a schedule that recomputes nothing performs. */
double floor_ops(const sc_pipeline *p, const bounds_result *b);

/* Operations per byte of the traffic floor. */
double floor_intensity(const sc_pipeline *p, const bounds_result *b);

/* Whether p is memory-bound on a device of that balance (operations per
 * byte): its intensity is below it. */
bool floor_is_memory_bound(const sc_pipeline *p, const bounds_result *b, double balance);

/* The time floor of p in ms at a bandwidth of gbs GB/s. */
double floor_time_ms(const sc_pipeline *p, const bounds_result *b, double gbs);

/* The device's copy bandwidth in GB/s, bytes read + written: the pipeline
 * out(x, y) = in(x, y) over f32 rows of 4096 points, `bytes` each way
 * (rounded down to whole rows, at least one), under each of a few
 * schedules (the baseline, and tilings of 64-256 threads with 1-16 points
 * each along x or y; those legal for t), each measured with
 * measure_schedule within lim: the fastest's.  *o is its measurement and
 * `which` (may be NULL) gets its schedule ("baseline" or "root [x=...]");
 * -1 (o->msg says why) when none ran and checked. */
double floor_copy_bandwidth(const measure_device *d, const target *t, int64_t bytes, measure_limits lim,
                            measure_outcome *o, char *which, size_t whichlen);

/* The device's arithmetic rate in Gop/s on a compute-bound pipeline: per
 * point of a 512-wide f32 image of `points` points (rounded down to whole
 * rows, at least one), 32 independent chains of 32 steps v * a + b on the
 * input (so a device that has the units can overlap them), added: 2,079
 * operations as floor_ops counts them; the fastest of the same schedules
 * as the copy's, measured as above (`which` as above).  -1 when none ran
 * and checked. */
double floor_peak_ops(const measure_device *d, const target *t, int64_t points, measure_limits lim,
                      measure_outcome *o, char *which, size_t whichlen);

#endif
