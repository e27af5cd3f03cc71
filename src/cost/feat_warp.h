/*
 * feat_warp.h - memory transactions of one warp of a stage, from the
 * forms of its accesses (feat_access.h) and its thread layout.
 *
 * A lane's value of stage loop j at serial iteration s is
 *     x_j = floor(origin_j + sum_k lanec[j][k] * t_k) + s_j
 * where t_k are the lane's thread coordinates in the layout (dimension 0
 * fastest: thread id = t_0 + L_0 * (t_1 + L_1 * ...)) and s_j runs over
 * the loop's serial extent in steps of sstep_j (1, or the threads of a
 * loop whose points are cyclic: nest.h, nest_ctx_set_cyclic).  Each access then has a byte address per lane,
 * from which:
 *  - global memory: the 32-byte sectors and 128-byte lines the warp's
 *    active lanes touch per load or store instruction (a transaction is a
 *    sector);
 *  - shared memory: 32 banks of 4 bytes; an instruction costs as many
 *    transactions as the most distinct words any one bank serves (lanes
 *    reading the same word share it);
 *  - LIFT (Remmelg et al. 2020): the distinct lines of one instruction
 *    counted from the lanes' differences to lane 0, floor((a_l - a_0) / 128).
 * When the serial loops are unrolled (as lowering unrolls them, each loop
 * on its own: nest_serial_loops_unrolled), a lane does not load again an
 * address it has loaded in an earlier iteration (the value stays in a
 * register), and does not store again an address it stores later (the
 * store moves out of the unrolled block): only lanes with a new address
 * take part in an instruction.
 * Otherwise every iteration issues its instructions; at most
 * FEAT_WARP_ITERS iterations are enumerated (FEAT_WARP_SLOW_ITERS for an
 * access with fractional coefficients, a resampling) and the counts
 * scaled.  An irregular coordinate (a gather) puts every lane in a sector
 * and line of its own and, in shared memory, a wavefront of its own.
 *
 * A CPU (`cached`: target.h `kind = cpu`) runs a work-group's work-items
 * as a loop, vectorized over neighbouring ones, and its L1 keeps the lines
 * a warp of work-items has touched while the warp runs its serial
 * iterations and its calls, where a GPU issues each instruction to memory.
 * There the warp's transactions are the distinct 32-byte sectors its
 * regular accesses touch over all its iterations and calls (in global and
 * local memory alike: a CPU has no banks), the bytes it needs the distinct
 * elements, and a gather still a sector per lane and iteration; at most
 * FEAT_WARP_CACHED_ITERS iterations are enumerated and the counts scaled.
 * So a thread that computes 8 neighbouring points costs on a CPU what 8
 * neighbouring threads cost, where on a GPU its warp's instructions are
 * strided (8 times the sectors), and a stencil's taps share their lines.
 *
 * What the sectors do not show is the instruction: a CPU's vector load
 * serves the lanes only where their addresses are one element (a
 * broadcast) or consecutive elements, up or down; any other pattern is a
 * gather, an element per lane (a stride of 2 along x ran a u16 stencil
 * 6x slower on PoCL, docs/features.md).  `gathers` counts the calls whose
 * lanes along the layout's first dimension (the one PoCL vectorizes: at
 * most to the end of the warp's first row of it) are such a pattern,
 * irregular calls included, once per call whatever the iterations.
 */
#ifndef SC_FEAT_WARP_H
#define SC_FEAT_WARP_H

#include <stdbool.h>
#include "feat_access.h"

#define FEAT_WARP_ITERS 64
#define FEAT_WARP_SLOW_ITERS 8      /* accesses with fractional coefficients */
#define FEAT_WARP_CACHED_ITERS 16   /* a cached warp (a CPU) */

typedef struct {
    int nloops;
    int nlayout;
    int64_t L[SC_MAX_DIMS];                     /* the layout's extents */
    double lanec[FEAT_MAX_LOOPS][SC_MAX_DIMS];
    double origin[FEAT_MAX_LOOPS];
    int64_t serial[FEAT_MAX_LOOPS];             /* serial extent per loop (>= 1) */
    int64_t sstep[FEAT_MAX_LOOPS];              /* a serial step's offset (1, or a
                                                 * loop's threads where its points
                                                 * are cyclic, nest_stage.cyclic) */
} feat_lanes;

/* Where a producer's elements are: address of (i_0, i_1 ...) =
 * elem * sum_d (i_d - base_d) * stride_d. */
typedef struct {
    int ndims;
    int64_t base[SC_MAX_DIMS], stride[SC_MAX_DIMS];
    int elem;                                    /* bytes */
    bool shared;                                 /* banks, not sectors */
} feat_storage;

typedef struct {
    double trans;          /* transactions (sectors, or shared wavefronts) */
    double needed;         /* distinct bytes the lanes asked for, per instruction */
    double moved;          /* bytes the transactions move (32 per sector, 128 per wavefront) */
    double lift_lines;     /* LIFT lines, summed over the accesses (first iteration) */
    int lift_n;            /* accesses counted in lift_lines */
    double gathers;        /* calls whose lanes are a gather (below), once per call */
} feat_warp_cost;

/* Lane patterns priced per residue, kept across calls (the same stencil
 * taps recur in state after state); NULL to feat_warp_access: a pool of
 * its own for the call.  Its memory grows with the distinct patterns:
 * feat_warp_pool_bytes, feat_warp_pool_clear. */
typedef struct feat_warp_pool feat_warp_pool;
feat_warp_pool *feat_warp_pool_new(void);
void feat_warp_pool_free(feat_warp_pool *pool);
void feat_warp_pool_clear(feat_warp_pool *pool);
size_t feat_warp_pool_bytes(const feat_warp_pool *pool);

/* The cost for one warp whose lanes are threads first .. first + nlanes - 1
 * (nlanes <= 32) of the layout, of the accesses calls[0..n) (each an array
 * of st->ndims forms) to one producer; cached for a CPU's warp (above).
 * Adds into *c.  0, or -1 when out of memory. */
int feat_warp_access(const feat_lanes *ln, int n, const feat_form *const *calls, const feat_storage *st,
                     int64_t first, int nlanes, bool unrolled, bool cached, feat_warp_pool *pool, feat_warp_cost *c);

#endif
