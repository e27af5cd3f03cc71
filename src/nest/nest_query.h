/*
 * nest_query.h - what lowering reads from the loop-nest model of a
 * complete schedule (nest.h), beyond the records themselves: the group a
 * fused Func belongs to, the producers a stage stages in registers, and
 * whether the hull of a Func fused into several consumers was found or
 * replaced by the whole region.  All answers come from the records; they
 * decide nothing.
 */
#ifndef SC_NEST_QUERY_H
#define SC_NEST_QUERY_H

#include <stdbool.h>
#include "nest.h"

/* The stage whose block (a BLOCK-level Func: the root stage of its
 * kernel) or thread tile (a THREAD-level Func: the first Func up its
 * chain of `at` links that is not at thread level) computes fused Func
 * fid: owner's id and stage.  -1 for both when fid is not a modelled
 * fused Func.  The Funcs with one owner stage and one level form a group
 * (docs/architecture.md, "A fused Func sits at ..."). */
void nest_owner(const nest *n, int fid, int *owner, int *owner_stage);

/* The producers stage rec stages in registers (Anderson et al. 2021
 * §6.7), each once, in the order of its accesses; out has room for
 * NEST_MAX_STAGED.  Returns the count. */
int nest_staged_producers(const nest_stage *rec, const sc_func **out);

/* Loops of a stage with fewer points than this (its serial tile, times a
 * reduction loop's extent for that loop) are unrolled: NEST_UNROLL_LIMIT,
 * or NEST_UNROLL_THREAD_LIMIT for a Func computed at thread level, whose
 * values live in a private array that stays in registers only when every
 * index into it is a constant (its loops unrolled), and for a stage that
 * reads such arrays (reads_private: Funcs at thread level of it), whose
 * indices into them are constants only when its own loops are unrolled
 * too.  A looped one lives in memory: PoCL kept harris' clamped (3 x 8
 * points a thread) there, and its consumer took 17.3 ms against 2.8 ms at
 * root; box_blur's out over 16 rows a thread, reading blur_x's 18 rows
 * from such an array, 3.6 ms looped. */
#define NEST_UNROLL_LIMIT 16
#define NEST_UNROLL_THREAD_LIMIT 64
int nest_unroll_limit(sched_loc loc, bool reads_private);
/* On a CPU (a context that stages nothing: nest_stage.unroll_whole_ok), a
 * reduction that runs around an unrolled serial tile (around: the stage
 * is nest_reduction_around_tile's) unrolls every one of its loops where
 * the tile times the whole reduction has fewer points than this (since
 * CG_GENERATION_LONGER_UNROLLS): a convolution's 8 channels a work-item
 * over its 4 x 3 x 3 taps, 288 points, runs as straight-line code that
 * keeps its 8 running values in registers, and PoCL vectorizes the
 * work-items only where the kernel's body has no loop of its own.  By the
 * rule for each loop alone, 8 x 4 and 8 x 3 were too many, and the kernel
 * ran one work-item at a time (docs/backends.md, "Generation 24").  A
 * GPU keeps the rule for each loop: lens_blur's CUDA with reductions
 * unrolled whole spilled 16 to 64 times the registers. */
#define NEST_UNROLL_AROUND_LIMIT 512
/* Whether reduction loop d of the reduction red[0..nred) (loop 0
 * innermost), around a serial tile of tile_points points (around) or
 * inside it, unrolls under limit: its extent and the tile times it both
 * below limit, or, around an unrolled tile (fewer than limit points), the
 * tile times the whole reduction below NEST_UNROLL_AROUND_LIMIT. */
bool nest_reduction_unrolls(const int64_t *red, int nred, int d, int64_t tile_points, int limit, bool around);
/* Whether the reduction red[0..nred) around (around) an unrolled tile of
 * tile_points (fewer than limit) unrolls whole: the tile times the whole
 * reduction below NEST_UNROLL_AROUND_LIMIT. */
bool nest_reduction_unrolls_whole(const int64_t *red, int nred, int64_t tile_points, int limit, bool around);
/* Whether lowering unrolls every serial loop of rec under its own limit
 * (rec->unroll_limit): the pure tile and each reduction loop, so that a
 * thread runs its points as straight-line code. */
bool nest_serial_loops_unrolled(const nest_stage *rec);

/* Whether some thread-level stage of n has loops that NEST_UNROLL_LIMIT
 * left rolled and NEST_UNROLL_THREAD_LIMIT unrolls (its serial tile, a
 * reduction loop, or the model's unrolled extent): code that lowering made
 * otherwise before CG_GENERATION_THREAD_UNROLLED (codegen.h). */
bool nest_unrolls_thread_tiles(const nest *n);

/* Whether some stage of n that is not at thread level reads a thread-level
 * Func's private array (its limit NEST_UNROLL_THREAD_LIMIT) with loops
 * that NEST_UNROLL_LIMIT left rolled and its limit unrolls: code that
 * lowering made otherwise before CG_GENERATION_PRIVATE_INDICES. */
bool nest_unrolls_private_readers(const nest *n);

/* Whether lowering runs the reduction loops of stage rec around its
 * serial tile rather than inside it: the stage is an update with a
 * reduction domain that does not scatter (ir_stage_scatters) and its
 * tile has more than one point.  Each reduction step then updates the
 * whole tile (pure points never interact, so the order is free): an
 * unrolled tile (under 16 points) keeps its running values in registers
 * and shares the step's loads, a larger one runs its innermost pure loop
 * over contiguous points, which the device compiler can vectorize.
 * Before CG_GENERATION_SCANS_AROUND (codegen.h) only the updates that
 * accumulate in place (ir_stage_accumulates) did, not scans (f(x, r) =
 * f(x, r - 1) ...).  Scatters keep the reduction innermost: a scatter's
 * reduction loop often runs along its input's rows (hist's rows of Y),
 * and around the tile it ran up to 1.8x slower (docs/benchmarks.md). */
bool nest_reduction_around_tile(const nest_stage *rec);

/* Whether some stage of n has its reduction loops around an unrolled
 * tile unrolled by NEST_UNROLL_AROUND_LIMIT where the rule for each loop
 * alone left one rolled: code that lowering made otherwise before
 * CG_GENERATION_LONGER_UNROLLS (codegen.h). */
bool nest_unrolls_reductions_around(const nest *n);

/* Whether some stage of n that accumulates in place has its reduction
 * loops around its tile: code that lowering made otherwise before
 * TRAIN_REDUCTION_AROUND_TILE (train_load.h). */
bool nest_any_reduction_around_tile(const nest *n);

/* Whether some update of n that does not accumulate in place (a scan)
 * has its reduction loops around its tile: code that lowering made
 * otherwise before CG_GENERATION_SCANS_AROUND. */
bool nest_any_scan_around_tile(const nest *n);

/* Whether some root stage of n has threads in more than three of its pure
 * loops: its work-group merges the third and later ones into its third
 * dimension (lower_kernel.merged_tdim), where code generations before
 * CG_GENERATION_MERGED_THREADS read every thread index from the flat one. */
bool nest_merges_thread_loops(const nest *n);

#endif
