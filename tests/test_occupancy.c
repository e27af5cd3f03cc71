/*
 * test_occupancy.c - the occupancy calculator against cases worked by hand
 * from the published per-SM limits (CUDA C++ Programming Guide,
 * "Compute Capabilities"; the allocation units of the CUDA Occupancy
 * Calculator):
 *
 *   a100 (sm_80): 64 warps, 32 blocks, 65536 registers, 167936 bytes of
 *                 shared memory per SM, 1024 reserved per block;
 *   h100 (sm_90): the same but 233472 bytes of shared memory per SM;
 *   rtx2080ti (sm_75): 32 warps, 16 blocks, 65536 bytes, none reserved;
 *   all: registers per warp rounded up to 256, warps to steps of 4,
 *   shared memory to 128 bytes.
 *
 * Run from the repository root: the shipped targets are in targets/.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "occupancy.h"

static target a100, h100, turing;

static int load(const char *name, target *t) {
    char err[512];
    if (target_by_name(name, NULL, t, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

/* One case: the active blocks and warps per SM, occupancy and limit. */
static void expect(const target *t, int threads, int regs, int64_t smem, int blocks, int warps,
                   double occ, occ_limit limit) {
    occ_result r;
    occ_compute(t, threads, regs, smem, &r);
    bool ok = r.active_blocks == blocks && r.active_warps == warps && fabs(r.occupancy - occ) < 1e-12 &&
              r.limit == limit;
    if (!ok)
        fprintf(stderr, "  %s %d threads x %d regs, %lld B: got %d blocks %d warps %.4f (%s), want %d %d %.4f (%s)\n",
                t->name, threads, regs, (long long)smem, r.active_blocks, r.active_warps, r.occupancy,
                occ_limit_name(r.limit), blocks, warps, occ, occ_limit_name(limit));
    CHECK(ok);
}

/* 256 threads x 64 registers, 48 KiB of shared memory per block (a100):
 *   warps:     8 warps a block; 64 / 8 = 8 blocks
 *   registers: 64 * 32 = 2048 per warp (a multiple of 256);
 *              65536 / 2048 = 32 warps (a multiple of 4); 32 / 8 = 4 blocks
 *   shared:    49152 + 1024 = 50176 (= 392 * 128); 167936 / 50176 = 3.35 -> 3
 *   blocks:    32
 *   -> 3 blocks, 24 warps, 24 / 64 = 0.375, limited by shared memory.
 * h100: 233472 / 50176 = 4.65 -> 4, tying with the registers' 4 blocks; at
 * 32 registers (1024 per warp, 64 warps, 8 blocks) shared memory alone
 * limits it: 4 blocks, 32 warps, 0.5. */
static void test_shared_limited(void) {
    expect(&a100, 256, 64, 49152, 3, 24, 0.375, OCC_LIMIT_SHARED);
    expect(&h100, 256, 32, 49152, 4, 32, 0.5, OCC_LIMIT_SHARED);
    occ_result r;
    occ_compute(&a100, 256, 64, 49152, &r);
    CHECK(r.warps_per_block == 8 && r.max_warps_per_sm == 64 && r.regs_per_warp == 2048);
    CHECK(r.smem_per_block == 50176);
    CHECK(r.blocks_by[OCC_LIMIT_WARPS] == 8 && r.blocks_by[OCC_LIMIT_REGISTERS] == 4);
    CHECK(r.blocks_by[OCC_LIMIT_SHARED] == 3 && r.blocks_by[OCC_LIMIT_BLOCKS] == 32);
    /* 10000 bytes: 10000 + 1024 = 11024 -> 11136 (87 * 128); a100:
     * 167936 / 11136 = 15.08 -> 15 blocks of 2 warps (64 threads, 32
     * registers: 64 warps by registers = 32 blocks; 64 / 2 = 32 by warps)
     * -> 15 blocks, 30 warps, 30 / 64. */
    expect(&a100, 64, 32, 10000, 15, 30, 30.0 / 64, OCC_LIMIT_SHARED);
    occ_compute(&a100, 64, 32, 10000, &r);
    CHECK(r.smem_per_block == 11136);
    /* Turing: 256 threads x 32 registers, 20 KiB: nothing reserved,
     * 65536 / 20480 = 3.2 -> 3 blocks (warps: 32 / 8 = 4; registers:
     * 64 warps / 8 = 8; blocks: 16) -> 24 warps of 32 = 0.75. */
    expect(&turing, 256, 32, 20480, 3, 24, 0.75, OCC_LIMIT_SHARED);
}

/* 256 threads x 128 registers, no shared memory (a100 and h100):
 *   registers: 128 * 32 = 4096 per warp; 65536 / 4096 = 16 warps;
 *              16 / 8 = 2 blocks
 *   warps: 8 blocks; shared: (0 + 1024) -> 167936 / 1024 = 164; blocks: 32
 *   -> 2 blocks, 16 warps, 0.25, limited by registers.
 * 96 threads (3 warps) x 37 registers (a100): 37 * 32 = 1184 -> 1280 per
 * warp; 65536 / 1280 = 51.2 -> 51 warps -> 48 in steps of 4; 48 / 3 = 16
 * blocks (without the step of 4 it would be 17); warps: 64 / 3 = 21
 * -> 16 blocks, 48 warps, 0.75, limited by registers. */
static void test_register_limited(void) {
    expect(&a100, 256, 128, 0, 2, 16, 0.25, OCC_LIMIT_REGISTERS);
    expect(&h100, 256, 128, 0, 2, 16, 0.25, OCC_LIMIT_REGISTERS);
    expect(&a100, 96, 37, 0, 16, 48, 0.75, OCC_LIMIT_REGISTERS);
    occ_result r;
    occ_compute(&a100, 96, 37, 0, &r);
    CHECK(r.regs_per_warp == 1280 && r.warps_per_block == 3 && r.blocks_by[OCC_LIMIT_WARPS] == 21);
}

/* 1024 threads x 16 registers: 32 warps a block, 64 / 32 = 2 blocks;
 * registers 512 per warp -> 128 warps -> 4 blocks -> 2 blocks, 64 warps,
 * occupancy 1, limited by warps.  32 threads x 16 registers: warps allow
 * 64 blocks, the hardware 32 -> 32 warps, 0.5, limited by the block limit;
 * Turing's 16 blocks -> 16 warps of 32 = 0.5.  Registers not known (0):
 * no register limit. */
static void test_warp_and_block_limited(void) {
    expect(&a100, 1024, 16, 0, 2, 64, 1.0, OCC_LIMIT_WARPS);
    expect(&h100, 1024, 16, 0, 2, 64, 1.0, OCC_LIMIT_WARPS);
    expect(&a100, 32, 16, 0, 32, 32, 0.5, OCC_LIMIT_BLOCKS);
    expect(&turing, 32, 16, 0, 16, 16, 0.5, OCC_LIMIT_BLOCKS);
    expect(&a100, 32, 0, 0, 32, 32, 0.5, OCC_LIMIT_BLOCKS);
    occ_result r;
    occ_compute(&a100, 32, 0, 0, &r);
    CHECK(r.blocks_by[OCC_LIMIT_REGISTERS] == INT_MAX && r.regs_per_warp == 0);
    /* 33 threads take 2 warps: 64 / 2 = 32 blocks, tying with the block
     * limit, reported as warps (the first in order). */
    expect(&a100, 33, 16, 0, 32, 64, 1.0, OCC_LIMIT_WARPS);
}

/* Blocks that cannot launch: 1024 threads x 255 registers (255 * 32 =
 * 8160 -> 8192 per warp, 8 warps of the 32 a block needs); 2048 threads
 * (over 1024 a block); 49153 bytes (over 48 KiB a block); 256 registers
 * a thread (over 255). */
static void test_cannot_launch(void) {
    expect(&a100, 1024, 255, 0, 0, 0, 0.0, OCC_LIMIT_REGISTERS);
    expect(&a100, 2048, 16, 0, 0, 0, 0.0, OCC_LIMIT_WARPS);
    expect(&h100, 256, 16, 49153, 0, 0, 0.0, OCC_LIMIT_SHARED);
    expect(&h100, 32, 256, 0, 0, 0, 0.0, OCC_LIMIT_REGISTERS);
    for (int l = 0; l < OCC_LIMIT_COUNT; l++) CHECK(strlen(occ_limit_name((occ_limit)l)) > 0);
    CHECK(!strcmp(occ_limit_name(OCC_LIMIT_SHARED), "shared"));
}

int main(void) {
    if (load("a100", &a100) || load("h100", &h100) || load("rtx2080ti", &turing)) return 1;
    RUN(test_shared_limited);
    RUN(test_register_limited);
    RUN(test_warp_and_block_limited);
    RUN(test_cannot_launch);
    CHECK_EXIT();
}
