/*
 * sched.h - schedules: where each Func is computed and how its loops are
 * tiled over GPU blocks, threads and serial loops (DESIGN.md, "Schedule
 * space").
 *
 * Per Func (indexed by sc_func.id; inputs have no entry):
 *  - SCHED_INLINE: substituted into its consumers (single pure definition,
 *    not an output).
 *  - SCHED_ROOT: its own kernel per stage, stored in global memory.  Each
 *    stage's pure loops are tiled: in loop k, `threads[k]` threads each do
 *    `serial[k]` consecutive points, so a block covers threads*serial points
 *    and the blocks cover the loop.  Reduction loops run serially inside.
 *  - SCHED_BLOCK of A: computed once per block of the kernel A lives in,
 *    over the footprint its consumers need in that block, in shared
 *    memory; its pure loops are spread over the block's threads
 *    (`threads[k]` per loop; the serial extent follows from the
 *    footprint), with a barrier before the first consumer reads it.
 *  - SCHED_THREAD of A: computed inside A's thread loop, over the
 *    footprint its consumers need in one thread's serial tile, in
 *    registers; all serial.
 *  A may itself be BLOCK or THREAD (nested fusion, Sioutas et al. 2020
 *  Listing 2).  The consumers (once inline Funcs are looked through) of a
 *  Func fused at A are A itself or Funcs fused, through a chain of `at`
 *  links of the same level (BLOCK: all BLOCK; THREAD: all THREAD), into A;
 *  each uses it in exactly one stage, and all of them are in the same stage
 *  of A (the lowest such A is the lowest common ancestor of the consumers'
 *  compute chains, Anderson et al. 2021 §6; a single consumer is its own).
 *  Its footprint is the union of what every consumer needs of it.  A fused
 *  Func's updates must write only at their pure point (left side = its
 *  pure variables), so a footprint is a closed box.  Outputs are ROOT.
 *  legal.h holds these rules and the target's limits.
 *
 * Memory: sched_func records are immutable once built and live in an arena
 * (ir_arena) owned by whoever builds schedules; a sched_state is an array of
 * pointers to them, so copying a state copies pointers only and unchanged
 * Funcs are shared.
 */
#ifndef SC_SCHED_H
#define SC_SCHED_H

#include <stdbool.h>
#include <stdio.h>
#include "bounds.h"
#include "ir.h"
#include "target.h"

typedef enum {
    SCHED_UNDECIDED, SCHED_INLINE, SCHED_ROOT, SCHED_BLOCK, SCHED_THREAD
} sched_loc;

/* Tiling of one stage's pure loops (in ir_stage_loops order, pure ones
 * only: index k is the k-th pure loop). */
typedef struct {
    int npure;
    int threads[SC_MAX_DIMS];
    int serial[SC_MAX_DIMS];      /* ROOT only; 1 elsewhere */
} sched_tile;

/* "undecided", "inline", "root", "block", "thread". */
const char *sched_loc_name(sched_loc l);

typedef struct {
    sched_loc loc;
    int at;                       /* consumer func id (BLOCK, THREAD), else -1 */
    int nstages;
    sched_tile *tile;             /* ROOT and BLOCK: nstages entries (arena); else NULL */
    int pending;                  /* ROOT and BLOCK, while the enumerator tiles it
                                     (space.h, phase b): the last `pending`
                                     stages are not tiled yet; 0 once decided */
} sched_func;

/* A decision with zeroed tiles for every stage (ROOT, BLOCK), in the arena. */
sched_func *sched_func_new(ir_arena *a, sched_loc loc, int at, int nstages);
/* A copy with its own tiles, to change (records in a state are shared). */
sched_func *sched_func_copy(ir_arena *a, const sched_func *sf);

typedef struct {
    int nfuncs;                   /* == pipeline funcs.n */
    const sched_func **f;         /* NULL: undecided (or an input) */
} sched_state;

/* State lifetime: in the caller's arena. */
sched_state *sched_state_new(ir_arena *a, const sc_pipeline *p);
sched_state *sched_state_copy(ir_arena *a, const sched_state *s);
/* Whether every defined Func has a decision. */
bool sched_complete(const sc_pipeline *p, const sched_state *s);

/* Structural hash to a depth: 0 = which Funcs are root; 1 = also what sits
 * at block level of what; 2 = also thread level; 3 = also the tilings. */
uint64_t sched_hash(const sched_state *s, int depth);

/* Checks a complete state against the pipeline's rules (the comment above)
 * and the target's limits: threads per block, warp-multiple thread counts
 * (when warp_multiple is set), shared memory per block, estimated registers
 * per thread (legal_fits, legal.h).  0, or -1 with a message naming the
 * Func and the limit. */
int sched_check(const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                const target *t, bool warp_multiple, char *err, size_t errlen);

/* The text form (docs/schedule.md):
 *     schedule PIPELINE;
 *     NAME: inline;
 *     NAME: root [x=32x2 y=8x1] [x=64x1];     one [...] per stage: var=threads x serial
 *     NAME: block of CONSUMER [x=32 y=8];     one [...] per stage: var=threads
 *     NAME: thread of CONSUMER;
 * Malloc'd string. */
char *sched_to_text(const sc_pipeline *p, const sched_state *s);
/* Parses the text form; NULL with "FILE:LINE:COL: message" in err. */
sched_state *sched_parse(ir_arena *a, const sc_pipeline *p, const char *filename,
                         const char *text, char *err, size_t errlen);
/* The equivalent Halide schedule (compute_root, compute_at, gpu_tile ...). */
char *sched_to_halide(const sc_pipeline *p, const sched_state *s);

#endif
