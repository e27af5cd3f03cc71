/*
 * legal.h - the one place that says what a schedule may do: may Func f be
 * computed at this location (inline, root, block or thread of a Func), may
 * this stage be tiled so, and does this (partial) state still fit the
 * target.  sched_check, the enumerator (space/) and lowering all ask it.
 *
 * It owns (the first three through fusion.h, the layer below the
 * loop-nest model, which this module calls for footprints):
 *  - the consumer graph: who calls whom, in which stage, built once per
 *    pipeline in a legal_ctx; legal_consumers looks through the Funcs a
 *    given state inlines;
 *  - the fusion rules (sched.h): a fused Func at BLOCK or THREAD of A,
 *    where every consumer is A itself or is computed inside A through a
 *    chain of fused Funcs of the same level (the lowest such A is the
 *    lowest common ancestor of the consumers' compute chains);
 *  - pure-loop extraction (legal_pure_dims);
 *  - the target's limits: threads per block, warp multiples, shared memory
 *    per block and the register estimate, for complete and partial states
 *    (undecided Funcs count as root Funcs with the default tiling, which
 *    adds nothing to the decided Funcs' kernels);
 *  - the figures the search prunes with (Anderson et al. 2021 §6.6): the
 *    size of inlined expressions, the unroll limit, and the redundant work
 *    of a fused Func.
 *
 * Memory: a legal_ctx is malloc'd (legal_new / legal_free); it remembers
 * the footprint of every fused Func it has measured and the root tilings
 * it has checked, keyed by the Func's immutable sched_func record (a
 * record is never changed once it is in a state), so a ctx must not
 * outlive the arena of the states it is asked about, or must forget them
 * (legal_forget) before that arena is freed or reused.  Nothing here keeps
 * static state: two ctxs may be used at once.
 */
#ifndef SC_LEGAL_H
#define SC_LEGAL_H

#include <stdbool.h>
#include <stddef.h>
#include "bounds.h"
#include "fusion.h"
#include "ir.h"
#include "nest.h"
#include "sched.h"
#include "target.h"

/* Lowering unrolls a serial loop nest whose total extent is below this
 * (Anderson et al. 2021 §6.7); the §6.6 pruning keeps serial tiles under
 * it so that they are unrolled. */
#define LEGAL_UNROLL_LIMIT 16
/* Whether stage st of f, on target t, is one whose serial tile the device
 * compiler vectorizes: a CPU's update that runs its reduction around the
 * tile (ir_stage_reduction_around).  Its root tiling may take 16 to 64
 * serial points innermost, a loop by design, on threads that need not be
 * a warp multiple: its lanes are its serial points (docs/search.md,
 * "Vector tiles on a CPU"). */
bool legal_cpu_vector_stage(const target *t, const sc_func *f, int st);

/* Registers set aside in every kernel's estimate for register staging
 * (§6.7); lowering stages at most this many elements per kernel. */
#define LEGAL_STAGED_REGISTERS NEST_STAGED_REGISTERS
/* The register estimate's base: indices and addresses. */
#define LEGAL_BASE_REGISTERS 16
/* Inlining can grow expressions exponentially (a pyramid of inline
 * levels): lowering refuses a stage over LEGAL_MAX_INLINED nodes, and the
 * pruned search keeps under LEGAL_SEARCH_INLINED (§6.6, "excessive
 * recompute, usually caused by inlining"). */
#define LEGAL_MAX_INLINED FUSION_MAX_INLINED
#define LEGAL_SEARCH_INLINED 20000
/* The pruned search keeps a fused Func's points computed (per block or
 * thread, times the blocks or threads) within this factor of the points
 * its region has (§6.6, excessive recompute). */
#define LEGAL_MAX_REDUNDANCY 4.0

typedef struct legal_ctx legal_ctx;

/* A consumer: a stage of a Func that calls the Func asked about. */
typedef fusion_use legal_use;

/* The consumer graph of p (finalized), for checks against t (NULL: no
 * limits) with warp multiples required when warp_multiple is set. */
legal_ctx *legal_new(const sc_pipeline *p, const bounds_result *b, const target *t, bool warp_multiple);
void legal_free(legal_ctx *x);
/* Forgets every record x was asked about (before their arena is freed or
 * reused, to go on with x); what depends on the pipeline only stays. */
void legal_forget(legal_ctx *x);

/* The pure loops of stage st of f (ir_stage_loops order): dims[k] is the
 * Func dimension of the k-th pure loop.  Returns their count. */
int legal_pure_dims(const sc_func *f, int st, int *dims);
/* The extents of those loops over the stage's whole region (>= 1). */
int legal_pure_extents(const bounds_result *b, const sc_func *f, int st, int64_t *ext);

/* The consumers of fid in s once the Funcs s inlines are looked through (a
 * call inside an inline Func counts as a call by each of its callers;
 * self-references of updates do not count), distinct, in (func, stage)
 * order.  out has room for legal_max_uses(x) entries.  Returns the count. */
int legal_consumers(legal_ctx *x, const sched_state *s, int fid, legal_use *out);
int legal_max_uses(const legal_ctx *x);

/* Whether fid's updates write only at their pure point (fusion needs it). */
bool legal_pure_updates(const sc_func *f);

/* May fid be computed at loc (SCHED_BLOCK or SCHED_THREAD) of `at` in s
 * (its consumers decided)?  0 with the stage of `at` it is computed in
 * (*stage), or -1 with a message naming fid and the rule. */
int legal_fusion(legal_ctx *x, const sched_state *s, int fid, sched_loc loc, int at, int *stage,
                 char *err, size_t errlen);
/* The lowest Func fid may be fused into at loc in s (the lowest common
 * ancestor of its consumers' compute chains), or -1 when there is none. */
int legal_lca(legal_ctx *x, const sched_state *s, int fid, sched_loc loc);
/* The stage of s->f[fid]->at that the fused Func fid is computed in, or
 * -1 when its placement breaks the rules. */
int legal_stage_at(legal_ctx *x, const sched_state *s, int fid);

/* The default tiling of an undecided root stage: a warp of threads on the
 * first pure loop of extent >= 16 (else the first), one point each.  It
 * is within every limit and every pruning rule. */
sched_tile legal_default_tile(const legal_ctx *x, const sc_func *f, int st);

/* May stage st of fid, at loc (ROOT or BLOCK), be tiled t in s?  For ROOT:
 * well formed, threads per block, warp multiple, serial registers; for
 * BLOCK: well formed and within the threads of its kernel's block (the
 * kernel given by s->f[fid]->at).  0, or -1 with a message. */
int legal_tile(legal_ctx *x, const sched_state *s, int fid, int st, sched_loc loc, int at,
               const sched_tile *t, char *err, size_t errlen);

/* The most threads a BLOCK tiling of fid at `at` may have in s (the
 * threads per block of its kernel's root stage), INT64_MAX when no limit
 * applies: legal_tile of a well-formed BLOCK tiling is this comparison,
 * whatever the stage, so enumerators may check many tilings at once. */
int64_t legal_block_threads(legal_ctx *x, const sched_state *s, int fid, int at);

/* Does the (partial) state s keep every rule and fit the target?  The
 * undecided Funcs and the untiled stages (sched_func.pending) count as
 * root with legal_default_tile.  0, or -1 with a message naming the Func
 * and the limit.  sched_check is this on a complete state. */
int legal_fits(legal_ctx *x, const sched_state *s, char *err, size_t errlen);

/* The largest stage expression of a non-inline Func once inline Funcs are
 * substituted, in nodes (undecided Funcs count as not inline); *worst
 * gets that Func (may be NULL). */
double legal_max_inlined_size(const sc_pipeline *p, const sched_state *s, int *worst);

/* The redundant work of the fused Func fid in s: points computed (its
 * footprint times how many times it is computed) over the points of its
 * region; 1 for root Funcs.  -1 when it cannot be measured. */
double legal_redundancy(legal_ctx *x, const sched_state *s, int fid);
/* The same for an inline Func: how many times s evaluates fid's value per
 * point of its region (fusion_inline_evaluations), or 1 when its value
 * has no arithmetic of its own (a boundary condition), since then an
 * evaluation is only a load.  The pruned search keeps it within
 * LEGAL_MAX_REDUNDANCY too (§6.6, "excessive recompute, usually caused by
 * inlining"). */
double legal_inline_redundancy(legal_ctx *x, const sched_state *s, int fid);

/* A fused Func's footprint does not depend on its own tiling: child, a
 * copy of parent that tiles one more stage, has parent's measured
 * footprint (if parent was measured). */
void legal_inherit(legal_ctx *x, const sched_func *child, const sched_func *parent);

/* Threads per block and blocks of a root stage tiled t. */
int64_t legal_threads(const sched_tile *t);
int64_t legal_blocks(const legal_ctx *x, const sc_func *f, int st, const sched_tile *t);

#endif
