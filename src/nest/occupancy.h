/*
 * occupancy.h - NVIDIA's occupancy rules: how many blocks and warps of a
 * kernel are resident on one SM at a time.
 *
 * Given a block's threads, the registers each thread uses and the shared
 * memory a block allocates, four limits bound the resident blocks per SM:
 *  - warps: max_threads_per_sm / warp_size warps fit an SM, a block takes
 *    ceil(threads / warp_size) of them;
 *  - registers: a warp's registers are rounded up to reg_alloc_unit, the
 *    register file gives warps out in steps of warp_alloc_granularity (one
 *    per warp scheduler);
 *  - shared memory: a block's bytes plus shared_mem_reserved_per_block,
 *    rounded up to shared_mem_alloc_unit, out of shared_mem_per_sm;
 *  - the hardware's max_blocks_per_sm.
 * These are the rules of the CUDA Occupancy Calculator (the target fields
 * are in target.h).  A block that cannot launch at all (too many threads,
 * registers or shared memory for one block) has 0 active blocks, with the
 * cause as its limit.
 */
#ifndef SC_OCCUPANCY_H
#define SC_OCCUPANCY_H

#include <stdint.h>
#include "target.h"

typedef enum {
    OCC_LIMIT_WARPS,        /* threads (warps) per SM */
    OCC_LIMIT_REGISTERS,
    OCC_LIMIT_SHARED,       /* shared memory */
    OCC_LIMIT_BLOCKS,       /* max_blocks_per_sm */
    OCC_LIMIT_COUNT
} occ_limit;

const char *occ_limit_name(occ_limit l);   /* "warps", "registers", "shared", "blocks" */

typedef struct {
    int warps_per_block;
    int max_warps_per_sm;                 /* max_threads_per_sm / warp_size */
    int regs_per_warp;                    /* allocated */
    int64_t smem_per_block;               /* allocated, reservation included */
    int blocks_by[OCC_LIMIT_COUNT];       /* blocks each limit allows alone (INT_MAX: none) */
    int active_blocks;                    /* per SM: the least of blocks_by */
    int active_warps;                     /* per SM */
    occ_limit limit;                      /* the first limit reaching active_blocks */
    double occupancy;                     /* active_warps / max_warps_per_sm */
} occ_result;

/* Occupancy of a kernel whose blocks have `threads` threads (>= 1), each
 * using `regs_per_thread` registers (0: not known, no register limit), and
 * `smem_bytes` of shared memory per block (>= 0).  Ties between limits go
 * to the first in enum order. */
void occ_compute(const target *t, int threads, int regs_per_thread, int64_t smem_bytes, occ_result *r);

#endif
