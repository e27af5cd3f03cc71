/*
 * occupancy.c - resident blocks and warps per SM (occupancy.h).
 *
 * The register rule, as the CUDA Occupancy Calculator applies it from
 * compute capability 3.0 on ("warp" register allocation granularity):
 *     regs_per_warp = round_up(regs_per_thread * warp_size, reg_alloc_unit)
 *     warps_by_regs = round_down(registers_per_sm / regs_per_warp,
 *                                warp_alloc_granularity)
 *     blocks_by_regs = warps_by_regs / warps_per_block
 * Rounding the warps down to the granularity is the same as dividing the
 * register file among the warp schedulers first (four on Volta and later),
 * which is what the hardware does.  Shared memory:
 *     smem = round_up(smem_bytes + shared_mem_reserved_per_block, shared_mem_alloc_unit)
 *     blocks_by_smem = shared_mem_per_sm / smem
 * A block over the per-block limits (threads, registers per thread, shared
 * memory per block) cannot launch: 0 blocks by the limit it breaks.
 */
#include <assert.h>
#include <limits.h>
#include "occupancy.h"

static const char *const limit_names[OCC_LIMIT_COUNT] = { "warps", "registers", "shared", "blocks" };

const char *occ_limit_name(occ_limit l) {
    assert(l >= 0 && l < OCC_LIMIT_COUNT);
    return limit_names[l];
}

static int64_t round_up(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; }
static int64_t ceil_div(int64_t x, int64_t d) { return (x + d - 1) / d; }

void occ_compute(const target *t, int threads, int regs_per_thread, int64_t smem_bytes, occ_result *r) {
    assert(threads >= 1 && regs_per_thread >= 0 && smem_bytes >= 0);
    assert(t->warp_size >= 1 && t->reg_alloc_unit >= 1 && t->warp_alloc_granularity >= 1);
    assert(t->shared_mem_alloc_unit >= 1);
    r->warps_per_block = (int)ceil_div(threads, t->warp_size);
    r->max_warps_per_sm = t->max_threads_per_sm / t->warp_size;

    /* warps */
    int by_warps = threads > t->max_threads_per_block ? 0 : r->max_warps_per_sm / r->warps_per_block;

    /* registers */
    int by_regs = INT_MAX;
    r->regs_per_warp = 0;
    if (regs_per_thread > 0) {
        r->regs_per_warp = (int)round_up((int64_t)regs_per_thread * t->warp_size, t->reg_alloc_unit);
        int64_t warps = t->registers_per_sm / r->regs_per_warp;
        warps -= warps % t->warp_alloc_granularity;
        by_regs = regs_per_thread > t->registers_per_thread ? 0 : (int)(warps / r->warps_per_block);
    }

    /* shared memory */
    r->smem_per_block = round_up(smem_bytes + t->shared_mem_reserved_per_block, t->shared_mem_alloc_unit);
    int64_t by_smem64 = smem_bytes > t->shared_mem_per_block ? 0
                      : r->smem_per_block == 0 ? INT_MAX       /* nothing reserved, nothing used */
                      : t->shared_mem_per_sm / r->smem_per_block;
    int by_smem = by_smem64 > INT_MAX ? INT_MAX : (int)by_smem64;

    r->blocks_by[OCC_LIMIT_WARPS] = by_warps;
    r->blocks_by[OCC_LIMIT_REGISTERS] = by_regs;
    r->blocks_by[OCC_LIMIT_SHARED] = by_smem;
    r->blocks_by[OCC_LIMIT_BLOCKS] = t->max_blocks_per_sm;
    r->limit = OCC_LIMIT_WARPS;
    for (int l = 1; l < OCC_LIMIT_COUNT; l++)
        if (r->blocks_by[l] < r->blocks_by[r->limit]) r->limit = (occ_limit)l;
    r->active_blocks = r->blocks_by[r->limit];
    r->active_warps = r->active_blocks * r->warps_per_block;
    r->occupancy = r->max_warps_per_sm ? (double)r->active_warps / r->max_warps_per_sm : 0.0;
}
