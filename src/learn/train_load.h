/*
 * train_load.h - a training set (train.h) from the sample store (store.h):
 * every successful measurement, its pipeline text parsed once per
 * pipeline, its schedule text parsed and featurized for the target stored
 * with its device.  Samples that cannot be read back (a pipeline or
 * schedule this build no longer parses, a bad target) count as
 * rejected_input; those of held-out apps as held_out.
 *
 * Samples timed once (over a second) against a reference measured before
 * TRAIN_COLD_REFERENCE_FIXED took the reference's first run, which on
 * PoCL includes compiling its kernels, as its time: their ratios are off
 * by an unknown factor, and they count as rejected_cold.
 *
 * Samples measured before TRAIN_REDUCTION_AROUND_TILE whose schedule has a
 * stage that accumulates in place over a tile of more than one point
 * (nest_any_reduction_around_tile) ran other code than lowering makes now
 * (the reduction loops inside the tile, not around it: docs/schedule.md,
 * "Tiling"), and count as rejected_order.  Those samples stay in the
 * store (`collect` skips a schedule that has a result, so it does not
 * measure them again).
 *
 * Samples of a CPU target (target.cpu) of code older than
 * CG_GENERATION_CPU_UNSTAGED whose schedule has a kernel that the GPU
 * rule stages in registers (nest_would_stage) timed staged code, which
 * lowering no longer makes for a CPU: they count as rejected_staged
 * (`collect --remeasure` times them again).
 *
 * Samples of code older than CG_GENERATION_THREAD_UNROLLED whose code
 * left a loop rolled that this build unrolls count as rejected_unrolled
 * (`collect --remeasure` times them again): on every target, a
 * thread-level stage of 16 to 63 points (nest_unrolls_thread_tiles); on an
 * OpenCL device, a loop of 2,049 to 4,096 expression nodes unrolled
 * (cg_opencl_unrolls_past).
 *
 * Samples of code older than CG_GENERATION_POW2_DIVISION of a pipeline
 * that divides a signed integer by a constant power of two
 * (cg_divides_by_pow2) called a helper where this build shifts: they
 * count as rejected_division (`collect --remeasure` times them again).
 *
 * Samples of code older than CG_GENERATION_PRIVATE_INDICES whose schedule
 * has a stage reading a thread-level Func's private array with loops that
 * this build unrolls and older builds left rolled
 * (nest_unrolls_private_readers) count as rejected_private (`collect
 * --remeasure` times them again).  OpenCL's indices into private arrays
 * changed form in every reader; where its loops were unrolled before
 * too, PoCL ran the two forms alike (docs/backends.md), and those
 * samples are kept.
 *
 * Samples of a CPU's OpenCL code older than CG_GENERATION_SPLIT_INTERIOR
 * whose program has a kernel with interior blocks (cg_opencl_splits) ran
 * the interior copy in a branch of the kernel, which this build launches
 * apart: they count as rejected_interior (`collect --remeasure` times
 * them again).
 *
 * Samples of a CPU's OpenCL code older than CG_GENERATION_CPU_MINMAX of a
 * pipeline with an f32 min or max (cg_uses_f32_minmax) called OpenCL's
 * fmin or fmax, where this build calls clang's builtins: they count as
 * rejected_minmax (`collect --remeasure` times them again).
 *
 * Samples of code older than CG_GENERATION_SCANS_AROUND whose schedule
 * has a scan (an update that neither accumulates in place nor scatters)
 * over a tile of more than one point (nest_any_scan_around_tile) ran its
 * reduction loops inside the tile, where this build runs them around it:
 * they count as rejected_scan (`collect --remeasure` times them again).
 *
 * Samples of code older than CG_GENERATION_SQUARES of a pipeline that
 * squares with pow(a, 2.0) (cg_squares) called pow where this build
 * multiplies: they count as rejected_square (`collect --remeasure` times
 * them again).
 *
 * Samples of code older than CG_GENERATION_MERGED_THREADS whose schedule
 * has a root stage with threads in more than three loops
 * (nest_merges_thread_loops) read its thread indices from one flat index,
 * where this build's work-group has three dimensions: they count as
 * rejected_merged (`collect --remeasure` times them again).
 *
 * Samples of a CPU's OpenCL code older than CG_GENERATION_ROWS_APART whose
 * code indexes an array by a sum with a row that is not a linear form
 * (cg_opencl_rows_apart: a clamped row at an image's edge, a row y / 2),
 * where this build takes the row apart, (a + row)[x], ran slower code.
 * Where some such access is outside the edge blocks' copy of a kernel
 * (a pyramid's rows, read in every block) they count as
 * rejected_rows_apart, as every earlier change's samples did
 * (interpolate's schedules, timed by both builds in turn, changed their
 * order: Spearman's rho 0.35).  Where all are in it (an image's edges)
 * the rest of the code is the same and the schedules kept their order
 * (rho 0.87 to 1 over box_blur, harris, unsharp and stencil_chain;
 * docs/backends.md, "Generation 16"): they are kept, in their own group
 * (the code generation's), counted as kept_rows_apart.  `collect
 * --remeasure` times both again.
 *
 * Samples of a CPU's OpenCL code older than CG_GENERATION_POINTER_SELECTS
 * whose code selects between loads under a condition the same in every
 * lane (cg_opencl_pointer_selects), where this build loads once through
 * the selected pointer, ran code that PoCL left scalar: they count as
 * rejected_pointer_selects.
 *
 * Samples of a CPU's OpenCL code of generations CG_GENERATION_SPLIT_INTERIOR
 * to CG_GENERATION_NARROW_SPLITS - 1 with a small kernel that guards a
 * store of 8 or 16 bits (cg_opencl_splits_narrow) ran it as one kernel
 * with both copies in a branch, scalar on a CPU without AVX-512: they
 * count as rejected_narrow_splits (older ones are rejected_interior).
 *
 * Samples of OpenCL code (any device) older than CG_GENERATION_PRIVATE_PICKS
 * that read a private array at an index with a variable other than the
 * unrolled loops' counters in it (a block's channel: cg_opencl_private_picks),
 * where this build selects between constant indices, ran with the array
 * in memory on PoCL: they count as rejected_private_picks.
 *
 * Samples older than CG_GENERATION_BRANCHLESS_CONVERSIONS whose pipeline
 * converts f32 to an integer type (cg_converts_f32) timed the conversion
 * helpers with branches: they are kept, in their own group (the code
 * generation's), counted as kept_conversions (the apps' baselines timed
 * alike both ways but for hist's: docs/backends.md, "Generation 21").
 *
 * Samples older than CG_GENERATION_PARTIAL_GUARDS whose OpenCL or CUDA
 * code finds another interior now that a guard's conjuncts count apart
 * (cg_decides_guards_apart; none, where a short loop's partial block kept
 * one conjunct in every block) ran guarded code that PoCL left scalar
 * (camera_pipe's curved 6.5x slower): they count as rejected_partial_guards.
 *
 * Samples of OpenCL code (any device) older than CG_GENERATION_GUARDED_MINS
 * that read a private array inside a partial tile's guard at an index that
 * generation 23 prints by counters alone, seeing through the producer's
 * clamped min (cg_opencl_forms_of's guarded_mins), ran code whose array
 * PoCL kept in memory: they count as rejected_guarded_mins.
 *
 * A CPU's samples older than CG_GENERATION_LONGER_UNROLLS with a
 * reduction around an unrolled tile that lowering now unrolls whole where
 * it left a loop of it rolled (nest_unrolls_reductions_around), or whose
 * whole reduction came to 4,097 to 16,384 nodes, over the older cap
 * (cg_unrolls_whole_past), ran a kernel body with a loop, which PoCL ran
 * one work-item at a time: they count as rejected_longer_unrolls.
 *
 * Samples of OpenCL code (any device) older than CG_GENERATION_DATA_PICKS
 * that read a private array at an index with a temporary of a few values
 * in it (cg_opencl_forms_of's data_picks: a value computed from data) ran
 * code whose array PoCL kept in memory, its work-item loop scalar: they
 * count as rejected_data_picks.
 */
#ifndef SC_TRAIN_LOAD_H
#define SC_TRAIN_LOAD_H

#include "store.h"
#include "train.h"

#define TRAIN_COLD_REFERENCE_FIXED "2026-11-27T01:00:00Z"
#define TRAIN_REDUCTION_AROUND_TILE "2026-11-27T07:06:00Z"

typedef struct {
    const char *device_key;           /* only this device's samples (NULL: all) */
    int nhold;
    const char *const *hold;          /* apps left out: pipelines whose source is "app:NAME" */
    FILE *log;                        /* why pipelines or devices are skipped (NULL: quiet) */
    int64_t pipeline;                 /* only this pipeline's samples (the store's id; 0: all) */
    int *hold_pipes;                  /* NULL, or nhold counts: the pipelines each hold name left out */
    int min_generation;               /* samples of older code are left out (0, 1: none) */
    unsigned keep_changed;            /* bit 1 << c for each cg_code_change c whose samples are
                                         kept with the times of their older code (0: none) */
} train_load_opts;

/* The code changes train_load_opts.keep_changed can keep, by name
 * ("rows-apart", "narrow-store", ...; "all": every one): the bits of a
 * comma-separated list of them in *mask, or -1 with err naming the word
 * that is not one and the names there are. */
int train_keep_changed_parse(const char *list, unsigned *mask, char *err, size_t errlen);

/* Appends the store's samples to d.  0, or -1 with err. */
int train_load_store(train_data *d, store *st, const train_load_opts *o, char *err, size_t errlen);
/* The same from a database file (db) or an exchange file (data, .txt or
 * .txt.xz, imported into a store in memory). */
int train_load(train_data *d, const char *db, const char *data, const train_load_opts *o, char *err,
               size_t errlen);
/* The distinct device keys of the samples, quoted and comma-separated in
 * buf; their count, or -1 with err. */
int train_device_keys(const char *db, const char *data, char *buf, size_t len, char *err, size_t errlen);
/* The samples to train on: the database db (read only), or when db is
 * NULL the ndata exchange files imported in order into a store in memory
 * (a pipeline in several files is one pipeline).  NULL with err naming the
 * file that could not be read. */
store *train_open_samples(const char *db, const char *const *data, int ndata, char *err, size_t errlen);
/* train_device_keys of an open store. */
int train_store_device_keys(store *st, char *buf, size_t len, char *err, size_t errlen);

#endif
