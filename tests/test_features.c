/*
 * test_features.c - features of small pipelines worked out by hand (each
 * number is derived in the comment above its check), the schema, and every
 * feature finite and non-negative on every app for a random complete
 * schedule and a partial one.  Target a100 throughout: 32-lane warps,
 * 1024 threads per block, 64 warps and 32 blocks per SM, 65536 registers,
 * 48 KiB of shared memory per block, 167936 per SM, 1024 reserved per block.
 *
 * Run from the repository root (targets/ and apps/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "check.h"
#include "feat_access.h"
#include "features.h"
#include "space.h"

static target A100;

typedef struct {
    sc_pipeline *p;
    bounds_result *b;
    ir_arena *a;
    sched_state *s;
    feat_result r;
    bool ok;
} featured;

static bool featurize_for(featured *x, const char *src, const char *sched, const target *t) {
    memset(x, 0, sizeof *x);
    x->p = sc_parse_string("t.pipe", src, strlen(src), NULL);
    if (sc_error_count(x->p)) {
        fprintf(stderr, "  %s\n", sc_error_message(x->p, 0));
        return false;
    }
    x->b = bounds_infer(x->p);
    x->a = ir_arena_new();
    char err[1024];
    x->s = sched_parse(x->a, x->p, "t.sched", sched, err, sizeof err);
    if (!x->s) {
        fprintf(stderr, "  %s\n", err);
        return false;
    }
    if (sched_check(x->p, x->b, x->s, t, false, err, sizeof err) != 0) {
        fprintf(stderr, "  %s\n", err);
        return false;
    }
    if (feat_compute(x->p, x->b, x->s, t, &x->r, err, sizeof err) != 0) {
        fprintf(stderr, "  %s\n", err);
        return false;
    }
    x->ok = true;
    return true;
}

static bool featurize(featured *x, const char *src, const char *sched) { return featurize_for(x, src, sched, &A100); }

static void featured_free(featured *x) {
    feat_free(&x->r);
    if (x->a) ir_arena_free(x->a);
    if (x->b) bounds_free(x->b);
    if (x->p) sc_pipeline_free(x->p);
}

/* The value of a feature of stage st of Func `func`; NAN (and a message)
 * if absent. */
static double fv_stage(const featured *x, const char *func, int st, const char *name) {
    int i = feat_index(name);
    if (i < 0) {
        fprintf(stderr, "  no feature %s\n", name);
        return NAN;
    }
    for (int k = 0; k < x->r.n; k++) {
        const sc_func *f = x->p->funcs.items[x->r.rows[k].func];
        if (!strcmp(f->name, func) && x->r.rows[k].stage == st) return x->r.rows[k].v[i];
    }
    fprintf(stderr, "  no row for %s stage %d\n", func, st);
    return NAN;
}

/* The same of stage 0. */
static double fv(const featured *x, const char *func, const char *name) { return fv_stage(x, func, 0, name); }

/* CHECK that a feature equals a value (to 1e-9 relative), naming it. */
#define EXPECT(x, func, name, want) do { \
    double got_ = fv(x, func, name), want_ = (want); \
    if (!(fabs(got_ - want_) <= 1e-9 * fmax(1, fabs(want_)))) \
        fprintf(stderr, "  %s.%s = %.10g, expected %.10g\n", func, name, got_, want_); \
    CHECK(fabs(got_ - want_) <= 1e-9 * fmax(1, fabs(want_))); } while (0)

static const char *COPY =
    "pipeline copy;\n"
    "input f32 in(256, 64);\n"
    "out(x, y) = in(x, y);\n"
    "output out(256, 64);\n";

/* 32x1 threads: lane l reads and writes in(x0 + l, y): 32 consecutive
 * floats = 128 bytes from an aligned start, so 4 sectors and 1 line per
 * instruction, every byte used (efficiency 1).  256 / 32 = 8 by 64 blocks
 * = 512, one warp each: 4 loads and 4 stores per block.  Per thread one
 * point: 4 bytes in 1 line; per realization the whole 256 x 64 input,
 * 65536 bytes in 64 rows.  The store writes 32 x 1 floats per block = 128
 * bytes (all along x).  The expression out = in(x, y): the call over its
 * two variable leaves has Strahler number 2. */
static void test_copy_coalesced(void) {
    featured x;
    if (featurize(&x, COPY, "schedule copy;\nout: root [x=32x1 y=1x1];\n")) {
        EXPECT(&x, "out", "num_blocks", 512);
        EXPECT(&x, "out", "num_threads_per_block", 32);
        EXPECT(&x, "out", "num_warps_per_block", 1);
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 4);
        EXPECT(&x, "out", "num_global_mem_loads_per_block", 4);
        EXPECT(&x, "out", "num_global_mem_stores_per_block", 4);
        EXPECT(&x, "out", "global_mem_load_efficiency", 1);
        EXPECT(&x, "out", "global_mem_store_efficiency", 1);
        EXPECT(&x, "out", "global_lines_per_warp_access", 1);
        EXPECT(&x, "out", "global_mem_loads_per_tail_warp", 0);
        EXPECT(&x, "out", "unique_global_bytes_read_per_thread", 4);
        EXPECT(&x, "out", "unique_global_lines_read_per_thread", 1);
        EXPECT(&x, "out", "unique_global_bytes_read_per_realization", 65536);
        EXPECT(&x, "out", "unique_global_lines_read_per_realization", 64);
        EXPECT(&x, "out", "global_bytes_at_task", 128);
        EXPECT(&x, "out", "global_innermost_bytes_at_task", 128);
        EXPECT(&x, "out", "points_computed_per_thread", 1);
        EXPECT(&x, "out", "num_scalars", 256 * 64);
        EXPECT(&x, "out", "points_computed_total", 256 * 64);
        EXPECT(&x, "out", "expr_branching", 2);
        EXPECT(&x, "out", "load_input_pointwise", 1);
        EXPECT(&x, "out", "store_pointwise", 1);
        EXPECT(&x, "out", "op_load_input_f32", 1);
        EXPECT(&x, "out", "warp_lane_utilization", 1);
        EXPECT(&x, "out", "block_occupancy", 32.0 / 1024);
    }
    featured_free(&x);
}

/* 1x32 threads: lane l reads in(x0, y0 + l), 256 floats = 1024 bytes
 * apart, so each lane touches its own sector and line: 32 sectors and 32
 * lines per instruction, 4 of every 32 bytes used (efficiency 1/8).
 * 256 by 64 / 32 = 2 blocks = 512. */
static void test_copy_uncoalesced(void) {
    featured x;
    if (featurize(&x, COPY, "schedule copy;\nout: root [x=1x1 y=32x1];\n")) {
        EXPECT(&x, "out", "num_blocks", 512);
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 32);
        EXPECT(&x, "out", "num_global_mem_loads_per_block", 32);
        EXPECT(&x, "out", "num_global_mem_stores_per_block", 32);
        EXPECT(&x, "out", "global_mem_load_efficiency", 0.125);
        EXPECT(&x, "out", "global_lines_per_warp_access", 32);
        /* a block writes one column: 32 rows of 4 bytes, 4 along x */
        EXPECT(&x, "out", "global_bytes_at_task", 128);
        EXPECT(&x, "out", "global_innermost_bytes_at_task", 4);
    }
    featured_free(&x);
}

/* 48x1 threads: a regular warp (lanes 0-31: 128 bytes, 4 sectors) and a
 * tail warp of 16 lanes (x0 + 32 .. x0 + 47: 64 bytes, 2 sectors); per
 * block 4 + 2 = 6 loads.  2 active warps hold 64 lanes for 48 threads:
 * utilization 48 / 64 = 0.75, 16 idle lanes of 1024 = 1/64.  256 / 48 =
 * 5.33 -> 6 blocks along x (the last guarded) by 64 = 384; num_scalars
 * counts the guarded iterations: 6 * 48 * 64 = 18432, while 16384 points
 * are computed. */
static void test_tail_warp(void) {
    featured x;
    if (featurize(&x, COPY, "schedule copy;\nout: root [x=48x1 y=1x1];\n")) {
        EXPECT(&x, "out", "num_blocks", 384);
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 4);
        EXPECT(&x, "out", "global_mem_loads_per_tail_warp", 2);
        EXPECT(&x, "out", "num_global_mem_loads_per_block", 6);
        EXPECT(&x, "out", "num_active_warps_per_block", 2);
        EXPECT(&x, "out", "warp_lane_utilization", 0.75);
        EXPECT(&x, "out", "idle_lane_wastage", 16.0 / 1024);
        EXPECT(&x, "out", "num_scalars", 18432);
        EXPECT(&x, "out", "points_computed_total", 16384);
        EXPECT(&x, "out", "global_mem_load_efficiency", 1);
    }
    featured_free(&x);
}

static const char *STENCIL =
    "pipeline stencil;\n"
    "input f32 in(66, 34);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(x, y) + f(x + 1, y) + f(x + 2, y)\n"
    "          + f(x, y + 1) + f(x + 1, y + 1) + f(x + 2, y + 1)\n"
    "          + f(x, y + 2) + f(x + 1, y + 2) + f(x + 2, y + 2);\n"
    "output out(64, 32);\n";

/* A 3x3 stencil with f at the block level of out (16x8 threads, 1 point
 * each): out has 64 / 16 = 4 by 32 / 8 = 4 = 16 blocks; each block needs
 * f over (16 + 2) x (8 + 2) = 180 points, so f is realized 16 times and
 * computes 16 * 180 = 2880 points where the pipeline needs its 66 x 34 =
 * 2244: the redundant recompute of the halo.  f's 16x8 threads cover 18x10
 * with ceil(18 / 16) x ceil(10 / 8) = 2 x 2 points each, so its loops run
 * 16 blocks x 32 x 16 = 8192 iterations (guarded ones included).  It
 * writes 180 x 4 = 720 bytes of shared memory per block, 18 x 4 = 72 along
 * x; out reads f from shared memory, 3x3 = 9 points (36 bytes, 3 rows) per
 * thread, and the whole 18x10 allocation (720 bytes) per block. */
static void test_stencil_block_fusion(void) {
    featured x;
    if (featurize(&x, STENCIL, "schedule stencil;\nout: root [x=16x1 y=8x1];\nf: block of out [x=16 y=8];\n")) {
        EXPECT(&x, "out", "num_blocks", 16);
        EXPECT(&x, "f", "num_realizations", 16);
        EXPECT(&x, "f", "points_computed_per_realization", 180);
        EXPECT(&x, "f", "points_computed_total", 2880);
        EXPECT(&x, "f", "points_computed_minimum", 2244);
        EXPECT(&x, "f", "points_computed_per_thread", 4);
        EXPECT(&x, "f", "num_scalars", 8192);
        EXPECT(&x, "f", "bytes_at_realization", 720);
        EXPECT(&x, "f", "shared_bytes_at_task", 720);
        EXPECT(&x, "f", "shared_innermost_bytes_at_task", 72);
        EXPECT(&x, "f", "global_bytes_at_task", 0);
        EXPECT(&x, "out", "points_computed_total", 64 * 32);
        EXPECT(&x, "out", "unique_shared_bytes_read_per_thread", 36);
        EXPECT(&x, "out", "unique_shared_lines_read_per_thread", 3);
        EXPECT(&x, "out", "unique_shared_bytes_read_per_realization", 720);
        EXPECT(&x, "out", "shared_allocation_bytes_read_per_realization", 720);
        EXPECT(&x, "out", "unique_global_bytes_read_per_thread", 0);
        EXPECT(&x, "out", "load_func_pointwise", 9);
        /* the kernel's shared memory: 720 of 49152 bytes */
        EXPECT(&x, "out", "shared_mem_occupancy", 720.0 / 49152);
        EXPECT(&x, "f", "shared_mem_occupancy", 720.0 / 49152);
    }
    featured_free(&x);
}

static const char *VSTENCIL =
    "pipeline vstencil;\n"
    "input f32 in(32, 34);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(x, y) + f(x, y + 1) + f(x, y + 2);\n"
    "output out(32, 32);\n";

/* A vertical 3-tap stencil over a root f (global, 32 floats = 128 bytes a
 * row, so rows are line-aligned), out with 32x1 threads of 1x4 points.
 * 4 points < 16: the serial loop is unrolled, and a lane does not load
 * again a row it loaded for an earlier point.  Iteration 0 loads rows
 * y..y+2 (3 instructions of 4 sectors), iterations 1-3 one new row each
 * (4 sectors): 12 + 3 * 4 = 24 per warp (one warp per block).  With 1x16
 * points (16: not unrolled) every iteration loads its 3 rows: 16 * 3 * 4
 * = 192.  Per thread, 1x4 points read a 1x6 column of f: 24 bytes in 6
 * lines. */
static void test_unrolled_reuse(void) {
    featured x;
    if (featurize(&x, VSTENCIL, "schedule vstencil;\nout: root [x=32x1 y=1x4];\nf: root [x=32x1 y=1x1];\n")) {
        EXPECT(&x, "out", "num_blocks", 8);
        EXPECT(&x, "out", "unrolled_loop_extent", 4);
        EXPECT(&x, "out", "num_global_mem_loads_per_block", 24);
        EXPECT(&x, "out", "num_global_mem_stores_per_block", 16);
        EXPECT(&x, "out", "unique_global_bytes_read_per_thread", 24);
        EXPECT(&x, "out", "unique_global_lines_read_per_thread", 6);
        EXPECT(&x, "out", "innermost_loop_extent", 1);
    }
    featured_free(&x);
    if (featurize(&x, VSTENCIL, "schedule vstencil;\nout: root [x=32x1 y=1x16];\nf: root [x=32x1 y=1x1];\n")) {
        EXPECT(&x, "out", "unrolled_loop_extent", 1);
        EXPECT(&x, "out", "num_global_mem_loads_per_block", 192);
        EXPECT(&x, "out", "points_computed_per_thread", 16);
    }
    featured_free(&x);
}

static const char *TRANSPOSE =
    "pipeline transpose;\n"
    "input f32 in(64, 64);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(y, x);\n"
    "output out(64, 64);\n";

/* A transpose through shared memory: out 32x32 threads (4 blocks of 1024
 * threads, 32 warps), f at its block level over the 32x32 footprint, with
 * 32x32 threads.  f's warps store a row (lane l -> f(l, r), words r*32 + l:
 * 32 banks, 1 transaction) and load in(l, r) (4 sectors).  out's lane l
 * reads f(r, l): words l*32 + r, all in bank r: a 32-way conflict, 32
 * transactions for 128 useful bytes of 32 * 128 moved (efficiency 1/32).
 * Per block: 32 warps x 32 = 1024 loads, f's 32 x 1 = 32 stores.
 * Occupancy: 1024 threads = 32 warps; registers 16 + 1 serial point = 17
 * -> 544 -> 768 per warp, 85 -> 84 warps = 2 blocks; warps: 64 / 32 = 2
 * blocks; shared (4096 + 1024 = 5120): 32 blocks -> 2 blocks, 64 warps,
 * occupancy 1; shared memory allows 32 of 32 blocks. */
static void test_transpose_bank_conflicts(void) {
    featured x;
    if (featurize(&x, TRANSPOSE,
                  "schedule transpose;\nout: root [x=32x1 y=32x1];\nf: block of out [x=32 y=32];\n")) {
        EXPECT(&x, "out", "shared_mem_loads_per_regular_warp", 32);
        EXPECT(&x, "out", "num_shared_mem_loads_per_block", 1024);
        EXPECT(&x, "out", "shared_mem_load_efficiency", 1.0 / 32);
        EXPECT(&x, "out", "load_func_transpose", 1);
        EXPECT(&x, "f", "num_shared_mem_stores_per_block", 32);
        EXPECT(&x, "f", "shared_mem_store_efficiency", 1);
        EXPECT(&x, "f", "num_global_mem_loads_per_block", 128);
        EXPECT(&x, "out", "registers_per_thread", 17);
        EXPECT(&x, "out", "max_warp_occupancy", 1);
        EXPECT(&x, "out", "max_block_occupancy", 2.0 / 32);
        EXPECT(&x, "out", "shared_mem_block_limit_factor", 1);
    }
    featured_free(&x);
    /* the same without the transpose: out's lane l reads f(l, r), one
     * transaction per warp */
    const char *copy = "pipeline c2;\ninput f32 in(64, 64);\nf(x, y) = in(x, y) * 2.0;\n"
                       "out(x, y) = f(x, y);\noutput out(64, 64);\n";
    if (featurize(&x, copy, "schedule c2;\nout: root [x=32x1 y=32x1];\nf: block of out [x=32 y=32];\n")) {
        EXPECT(&x, "out", "shared_mem_loads_per_regular_warp", 1);
        EXPECT(&x, "out", "shared_mem_load_efficiency", 1);
    }
    featured_free(&x);
}

static const char *TALL =
    "pipeline tall;\n"
    "input f32 in(64, 512);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(x, y) + 1.0;\n"
    "output out(64, 512);\n";

/* Occupancy limited by shared memory: out 32x8 threads of 1x32 points, a
 * block covering 32 x 256; f at its block level over 32 x 256 = 8192
 * floats = 32768 bytes.  256 threads = 8 warps.  Shared: 32768 + 1024 =
 * 33792 (a multiple of 128); 167936 / 33792 = 4.97 -> 4 blocks.
 * Registers: 16 + 32 serial points = 48 -> 1536 per warp; 65536 / 1536 =
 * 42.7 -> 42 -> 40 warps -> 5 blocks.  Warps: 64 / 8 = 8.  So 4 blocks,
 * 32 warps: occupancy 0.5, 4 / 32 blocks; shared memory alone allows 4 of
 * 32 (0.125); 32768 / 49152 of the per-block limit. */
static void test_occupancy_shared(void) {
    featured x;
    if (featurize(&x, TALL, "schedule tall;\nout: root [x=32x1 y=8x32];\nf: block of out [x=32 y=8];\n")) {
        EXPECT(&x, "out", "registers_per_thread", 48);
        EXPECT(&x, "out", "shared_mem_occupancy", 32768.0 / 49152);
        EXPECT(&x, "out", "shared_mem_block_limit_factor", 4.0 / 32);
        EXPECT(&x, "out", "max_warp_occupancy", 0.5);
        EXPECT(&x, "out", "max_block_occupancy", 4.0 / 32);
        EXPECT(&x, "f", "max_warp_occupancy", 0.5);
        EXPECT(&x, "f", "bytes_at_realization", 32768);
    }
    featured_free(&x);
}

static const char *WIDE =
    "pipeline wide;\n"
    "input f32 in(256, 64);\n"
    "f(x, y) = in(x, y) * 2.0;\n"
    "out(x, y) = f(x, y) + 1.0;\n"
    "output out(256, 64);\n";

/* Occupancy limited by registers: out 32x4 threads of 8x8 points (128
 * threads = 4 warps), f at its thread level: 8 x 8 = 64 elements per
 * thread.  Registers: 16 + 64 (f) + 64 serial points = 144 -> 4608 per
 * warp; 65536 / 4608 = 14.2 -> 14 -> 12 warps -> 3 blocks.  Warps: 64 / 4
 * = 16 blocks; shared (0 + 1024): 164.  So 3 blocks, 12 warps: occupancy
 * 12 / 64 = 0.1875.  f's working set at the thread level is 64 x 4 = 256
 * bytes, and out's too (f lives in its threads). */
static void test_occupancy_registers(void) {
    featured x;
    if (featurize(&x, WIDE, "schedule wide;\nout: root [x=32x8 y=4x8];\nf: thread of out;\n")) {
        EXPECT(&x, "out", "registers_per_thread", 144);
        EXPECT(&x, "out", "max_warp_occupancy", 0.1875);
        EXPECT(&x, "out", "max_block_occupancy", 3.0 / 32);
        EXPECT(&x, "out", "shared_mem_block_limit_factor", 1);
        EXPECT(&x, "f", "bytes_at_realization", 256);
        EXPECT(&x, "f", "working_set_at_thread", 256);
        EXPECT(&x, "out", "working_set_at_thread", 256);
        /* f is realized once per thread: 256 / 256 x 64 / 32 = 2 blocks of
         * 128 threads */
        EXPECT(&x, "f", "num_realizations", 256);
        EXPECT(&x, "out", "unique_register_bytes_read_per_thread", 256);
    }
    featured_free(&x);
}

/* Every name is unique, found by feat_index, with a unit and a doc. */
static void test_schema(void) {
    CHECK(FEAT_COUNT == FEAT_HIST_COUNT + FEAT_LIST_COUNT);
    for (int i = 0; i < FEAT_COUNT; i++) {
        CHECK(feat_index(feat_name(i)) == i);
        CHECK(strlen(feat_unit(i)) > 0 && strlen(feat_doc(i)) > 0);
    }
    CHECK(feat_index("num_blocks") == FEAT_AT(FEAT_num_blocks));
    CHECK(feat_kind_of(FEAT_AT(FEAT_num_blocks)) == FEAT_SCHED);
    CHECK(feat_kind_of(0) == FEAT_ALGO && !strcmp(feat_name(0), "op_const_bool"));
    CHECK(feat_index("no_such_feature") == -1);
}

/* The first k decisions of s, consumers first. */
static sched_state *first_decisions(ir_arena *a, const sc_pipeline *p, const sched_state *s, int k) {
    sched_state *part = sched_state_new(a, p);
    for (int i = 0; i < k; i++) {
        int f = space_next(p, part, NULL);
        if (f < 0) break;
        part->f[f] = s->f[f];
    }
    return part;
}

static bool all_sane(const feat_result *r) {
    for (int k = 0; k < r->n; k++)
        for (int i = 0; i < FEAT_COUNT; i++)
            if (!isfinite(r->rows[k].v[i]) || r->rows[k].v[i] < 0) {
                fprintf(stderr, "  row %d: %s = %g\n", k, feat_name(i), r->rows[k].v[i]);
                return false;
            }
    return true;
}

/* Every app, a random complete schedule (seed 1) and its first half of
 * decisions: every feature finite and >= 0, one row per decided non-inline
 * stage, and a partial state never has more rows than the complete one. */
static void test_apps(void) {
    char **names, err[1024];
    int n = apps_list("apps", &names, err, sizeof err);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        app_case c;
        if (app_load("apps", names[i], true, 1, &c, err, sizeof err) != 0) {
            check_report(false, "features %s (%s)", names[i], err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        space_opts so = { &A100, false, false };
        sched_state *s = space_random(a, c.p, c.b, &so, 1, err, sizeof err);
        bool ok = s != NULL;
        feat_result full = { 0 }, part = { 0 };
        if (ok) ok = feat_compute(c.p, c.b, s, &A100, &full, err, sizeof err) == 0;
        int rows = 0;
        for (int f = 0; ok && f < c.p->funcs.n; f++) {
            const sc_func *fn = c.p->funcs.items[f];
            if (fn->kind == FUNC_DEFINED && s->f[f]->loc != SCHED_INLINE) rows += fn->nstages;
        }
        ok = ok && full.n == rows && all_sane(&full);
        int ndec = 0;
        for (int f = 0; f < c.p->funcs.n; f++) ndec += ((const sc_func *)c.p->funcs.items[f])->kind == FUNC_DEFINED;
        if (ok) {
            sched_state *h = first_decisions(a, c.p, s, ndec / 2);
            ok = feat_compute(c.p, c.b, h, &A100, &part, err, sizeof err) == 0 && all_sane(&part) &&
                 part.n <= full.n && (ndec / 2 == 0 || part.n >= 1);
        }
        if (!ok && err[0]) fprintf(stderr, "  %s: %s\n", names[i], err);
        check_report(ok, "features %s (%d rows, %d of them after %d of %d decisions)", names[i], full.n, part.n,
                     ndec / 2, ndec);
        feat_free(&full);
        feat_free(&part);
        ir_arena_free(a);
        app_free(&c);
    }
    apps_free_names(names, n);
}


/* Whether two results hold the same rows, bit for bit. */
static bool same_rows(const feat_result *a, const feat_result *b) {
    if (a->n != b->n) return false;
    for (int k = 0; k < a->n; k++)
        if (a->rows[k].func != b->rows[k].func || a->rows[k].stage != b->rows[k].stage ||
            a->rows[k].loc != b->rows[k].loc || memcmp(a->rows[k].v, b->rows[k].v, sizeof a->rows[k].v))
            return false;
    return true;
}

/* The cached path: along random walks (every prefix, in order, as a search
 * extends a state), one nest_ctx and one feat_ctx for the whole app give
 * rows bit-identical to a fresh feat_ctx's; so do a ctx at a tiny memory
 * limit (flushed at every call, so bounded) and a ctx flushed by hand half
 * way; a switch of target mid-walk (h100 every third state) is honoured;
 * and the cache is used (rows and warps reused). */
static void test_cache_identical(void) {
    static const char *apps[] = { "stencil_chain", "camera_pipe", "local_laplacian", "bgu", "unsharp" };
    target h100;
    char err[1024];
    CHECK(target_by_name("h100", NULL, &h100, err, sizeof err) == 0);
    for (size_t ai = 0; ai < sizeof apps / sizeof apps[0]; ai++) {
        app_case c;
        if (app_load("apps", apps[ai], true, 1, &c, err, sizeof err) != 0) {
            check_report(false, "cache %s (%s)", apps[ai], err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        nest_ctx *nx = nest_ctx_new(c.p, c.b);
        feat_ctx *hot = feat_ctx_new(c.p, c.b), *tiny = feat_ctx_new(c.p, c.b);
        feat_ctx_set_limit(tiny, 1);
        space_opts so = { &A100, true, false };
        int states = 0, bad = 0, ndec = 0;
        for (int f = 0; f < c.p->funcs.n; f++) ndec += ((const sc_func *)c.p->funcs.items[f])->kind == FUNC_DEFINED;
        size_t peak_tiny = 0;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            sched_state *s = space_random(a, c.p, c.b, &so, seed, err, sizeof err);
            if (!s) continue;
            for (int k = 1; k <= ndec; k++) {
                sched_state *q = first_decisions(a, c.p, s, k);
                nest *m = nest_build(nx, q, err, sizeof err);
                if (!m) continue;   /* a rule the model does not cover yet */
                const target *t = states % 3 == 2 ? &h100 : &A100;
                feat_result fresh = { 0 }, r1 = { 0 }, r2 = { 0 };
                bool ok = feat_compute_model(c.p, c.b, q, m, t, &fresh, err, sizeof err) == 0 &&
                          feat_compute_ctx(hot, q, m, t, &r1, err, sizeof err) == 0 &&
                          feat_compute_ctx(tiny, q, m, t, &r2, err, sizeof err) == 0 && same_rows(&fresh, &r1) &&
                          same_rows(&fresh, &r2);
                if (!ok && bad++ < 3) fprintf(stderr, "  %s seed %d, %d decisions: rows differ %s\n", apps[ai],
                                              (int)seed, k, err);
                size_t held = feat_ctx_stats(tiny).bytes;
                if (held > peak_tiny) peak_tiny = held;
                feat_free(&fresh);
                feat_free(&r1);
                feat_free(&r2);
                nest_free(m);
                states++;
            }
            if (seed == 2) feat_ctx_flush(hot);
        }
        feat_cache_stats hs = feat_ctx_stats(hot), ts = feat_ctx_stats(tiny);
        /* the tiny ctx holds at most one call's entries: far less than the hot one */
        bool ok = states > 10 && !bad && hs.row_hits > 0 && hs.row_misses > 0 && ts.flushes >= states - 1 &&
                  peak_tiny < hs.bytes;
        check_report(ok, "cache %s (%d states; hot: %lld rows reused, %lld made, %lld uncached, %zu bytes; "
                     "tiny: %lld flushes, peak %zu bytes)", apps[ai], states, (long long)hs.row_hits,
                     (long long)hs.row_misses, (long long)hs.uncached, hs.bytes, (long long)ts.flushes, peak_tiny);
        feat_ctx_free(hot);
        feat_ctx_free(tiny);
        nest_ctx_free(nx);
        ir_arena_free(a);
        app_free(&c);
    }
}

static bool same_form(const feat_form *a, const feat_form *b, int nloops) {
    return a->ok == b->ok && a->lipschitz == b->lipschitz && !memcmp(&a->off, &b->off, sizeof a->off) &&
           !memcmp(a->c, b->c, sizeof(double) * (size_t)nloops);
}

/* Memoized inline expansion records exactly the calls (same order, same
 * forms), inline-call counts and Strahler numbers as expanding every
 * call, for every stage of every app under the inline choices of random
 * walks (every third prefix). */
static void test_access_memo(void) {
    char **names, err[1024];
    int napps = apps_list("apps", &names, err, sizeof err);
    CHECK(napps > 0);
    for (int ai = 0; ai < napps; ai++) {
        app_case c;
        if (app_load("apps", names[ai], true, 1, &c, err, sizeof err) != 0) {
            check_report(false, "memo %s (%s)", names[ai], err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        space_opts so = { &A100, true, false };
        int ndec = 0, stages = 0, bad = 0;
        int64_t inlined = 0;
        for (int f = 0; f < c.p->funcs.n; f++) ndec += ((const sc_func *)c.p->funcs.items[f])->kind == FUNC_DEFINED;
        for (uint64_t seed = 1; seed <= 2; seed++) {
            sched_state *s = space_random(a, c.p, c.b, &so, seed, err, sizeof err);
            for (int k = 1; s && k <= ndec; k += 3) {
                sched_state *q = first_decisions(a, c.p, s, k);
                for (int fi = 0; fi < c.p->funcs.n; fi++) {
                    const sc_func *f = c.p->funcs.items[fi];
                    if (f->kind != FUNC_DEFINED) continue;
                    for (int st = 0; st < f->nstages; st++) {
                        feat_stage_access x, y;
                        if (feat_stage_accesses_by(c.p, q, f, st, true, &x) ||
                            feat_stage_accesses_by(c.p, q, f, st, false, &y)) {
                            bad++;
                            continue;
                        }
                        bool ok = x.n == y.n && x.inlined_calls == y.inlined_calls &&
                                  x.inlined_calls_all == y.inlined_calls_all && x.inlined_calls <= x.inlined_calls_all &&
                                  x.strahler == y.strahler && x.nstore == y.nstore;
                        for (int i = 0; ok && i < x.n; i++) {
                            ok = x.calls[i].prod == y.calls[i].prod && x.calls[i].ndims == y.calls[i].ndims;
                            for (int d = 0; ok && d < x.calls[i].ndims; d++)
                                ok = same_form(&x.calls[i].dim[d], &y.calls[i].dim[d], x.nloops);
                        }
                        for (int d = 0; ok && d < x.nstore; d++) ok = same_form(&x.store[d], &y.store[d], x.nloops);
                        /* the calls of each inline Func: the same, adding up to the total,
                         * each of a Func the state inlines */
                        int64_t sum = 0;
                        ok = ok && x.ninl == y.ninl;
                        for (int i = 0; ok && i < x.ninl; i++) {
                            ok = x.inl[i] == y.inl[i] && x.inl_calls[i] == y.inl_calls[i] && x.inl_calls[i] > 0 &&
                                 q->f[x.inl[i]->id] && q->f[x.inl[i]->id]->loc == SCHED_INLINE;
                            sum += x.inl_calls[i];
                        }
                        ok = ok && sum == x.inlined_calls;
                        if (!ok && bad++ < 3) fprintf(stderr, "  %s: %s stage %d differs (calls %d/%d, inline %lld/%lld, strahler %d/%d)\n", names[ai], f->name, st, x.n, y.n, (long long)x.inlined_calls, (long long)y.inlined_calls, x.strahler, y.strahler);
                        inlined += x.inlined_calls;
                        stages++;
                        feat_stage_access_free(&x);
                        feat_stage_access_free(&y);
                    }
                }
            }
        }
        check_report(stages > 0 && !bad, "memo %s (%d stage walks, %lld inline calls)", names[ai], stages,
                     (long long)inlined);
        ir_arena_free(a);
        app_free(&c);
    }
    apps_free_names(names, napps);
}

/* An inline Func's operations count in its consumer's, as many times per
 * point as it is called distinctly: g = in * 2 + 1 (one f32 multiply, one
 * add) called twice per point of out = g(x) + g(x + 1) (one add): with g
 * inline, out's histogram is its own plus twice g's (2 multiplies, 3
 * adds), its loads the two taps of in; with g at root, out's own (no
 * multiply, 1 add). */
static void test_inline_ops(void) {
    const char *src =
        "pipeline inl;\n"
        "input f32 in(130, 64);\n"
        "g(x, y) = in(x, y) * 2.0 + 1.0;\n"
        "out(x, y) = g(x, y) + g(x + 1, y);\n"
        "output out(128, 64);\n";
    featured in, root;
    bool a = featurize(&in, src, "schedule inl;\nout: root [x=32x1 y=1x1];\ng: inline;\n");
    bool b = featurize(&root, src, "schedule inl;\nout: root [x=32x1 y=1x1];\ng: root [x=32x1 y=1x1];\n");
    CHECK(a && b);
    if (a && b) {
        EXPECT(&in, "out", "op_mul_f32", 2);
        EXPECT(&in, "out", "op_add_f32", 3);
        EXPECT(&root, "out", "op_mul_f32", 0);
        EXPECT(&root, "out", "op_add_f32", 1);
        EXPECT(&in, "out", "inlined_calls", 2);
        /* loads are the accesses that remain: in at two taps, no call of
         * g (the tree's two calls of g are not loads once it is inline) */
        EXPECT(&in, "out", "op_load_input_f32", 2);
        EXPECT(&in, "out", "op_load_func_f32", 0);
        int bad = 0;
        for (int i = 0; i < FEAT_HIST_COUNT; i++) {
            if (strstr(feat_name(i), "op_load_")) continue;
            double want = fv(&root, "out", feat_name(i)) + 2 * fv(&root, "g", feat_name(i));
            if (fv(&in, "out", feat_name(i)) != want && bad++ < 3)
                fprintf(stderr, "  %s: %g, expected %g\n", feat_name(i), fv(&in, "out", feat_name(i)), want);
        }
        CHECK(bad == 0);
    }
    featured_free(&in);
    featured_free(&root);
    /* a repeated call is computed once: h = in(x) + in(x + 1) called at
     * x, x (again) and x + 1 per point of out makes 2 distinct calls of h
     * (2 adds), 3 distinct loads of in (not the tree's 6), and out's own 2
     * adds */
    const char *rep =
        "pipeline rep;\n"
        "input f32 in(131, 64);\n"
        "h(x, y) = in(x, y) + in(x + 1, y);\n"
        "out(x, y) = h(x, y) + h(x, y) + h(x + 1, y);\n"
        "output out(128, 64);\n";
    a = featurize(&in, rep, "schedule rep;\nout: root [x=32x1 y=1x1];\nh: inline;\n");
    CHECK(a);
    if (a) {
        EXPECT(&in, "out", "inlined_calls", 2);
        EXPECT(&in, "out", "op_add_f32", 4);
        EXPECT(&in, "out", "op_load_input_f32", 3);
        EXPECT(&in, "out", "op_load_func_f32", 0);
        /* the walk's counts: 2 distinct calls of h, 3 in the tree */
        feat_stage_access acc;
        const sc_func *out = in.p->funcs.items[in.p->funcs.n - 1];
        CHECK(feat_stage_accesses(in.p, in.s, out, 0, &acc) == 0);
        CHECK(acc.n == 3 && acc.inlined_calls == 2 && acc.inlined_calls_all == 3);
        feat_stage_access_free(&acc);
    }
    featured_free(&in);
}

/* A CPU's warp (target kind cpu: feat_warp.h) counts the distinct sectors
 * it touches over its iterations and calls.  The copy with 32x8 threads:
 * lane l reads in(8l .. 8l + 7, y); on the GPU each of the 8 unrolled
 * instructions has its 32 lanes 32 bytes apart, 32 sectors for 4 useful
 * bytes each (256 a warp, efficiency 1/8); on the CPU the warp's 256
 * floats are 1024 bytes, 32 sectors, every byte used.  A 3-tap row
 * stencil with 32x1 threads: the GPU counts 4 + 5 + 5 = 14 sectors (the
 * taps at +4 and +8 bytes straddle one more), the CPU the 136 bytes of
 * x .. x + 33 once: 5 sectors, 34 floats of 160 bytes used. */
static const char *HSTENCIL =
    "pipeline hstencil;\n"
    "input f32 in(258, 64);\n"
    "out(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y);\n"
    "output out(256, 64);\n";

/* vector_gathers_per_point: the calls whose lanes along the first thread
 * loop are neither one element nor consecutive ones.  HSTENCIL with one
 * point a thread: none; with 2 points a thread along x, lane l reads
 * in(2l + k, y): the three loads and the store are gathers; 2 points a
 * thread along y leaves x's lanes consecutive.  A row read of a transpose
 * (in(y, x) with threads along x) is a gather; a broadcast (a column
 * coordinate only: in(0, y)) is not. */
static void test_vector_gathers(void) {
    featured x;
    struct { const char *src, *sched; double want; } cases[] = {
        { HSTENCIL, "schedule hstencil;\nout: root [x=32x1 y=1x1];\n", 0 },
        { HSTENCIL, "schedule hstencil;\nout: root [x=32x2 y=1x1];\n", 4 },
        { HSTENCIL, "schedule hstencil;\nout: root [x=32x1 y=1x2];\n", 0 },
        { "pipeline tr;\ninput f32 in(64, 64);\nout(x, y) = in(y, x) + in(0, y);\noutput out(64, 64);\n",
          "schedule tr;\nout: root [x=32x1 y=1x1];\n", 1 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (featurize(&x, cases[c].src, cases[c].sched)) EXPECT(&x, "out", "vector_gathers_per_point", cases[c].want);
        featured_free(&x);
    }
}

/* Data-dependent coordinates: a gather written twice at the same
 * coordinate is one access (the generated code loads it once), as a
 * regular one is.  A lerp's first operand appears twice in its expansion
 * (a + (b - a) t), so bilateral_grid's slice, three nested lerps of 8
 * grid cells at a data-dependent z, counted 27 gathers before; the 2-D
 * slice here has 4 cells, not 9.  Cells at different data-dependent
 * coordinates (z and z + 1) stay distinct. */
static const char *GRID_SLICE =
    "pipeline gs;\n"
    "input f32 in(256, 64);\n"
    "g(x, y, z) = in(x, y) + f32(z);\n"
    "zv(x, y) = clamp(in(x, y), 0, 1) * 8.0;\n"
    "l2(x, y) = lerp(lerp(g(x / 8, y / 8, i32(zv(x, y))), g(x / 8 + 1, y / 8, i32(zv(x, y))), 0.5),\n"
    "                lerp(g(x / 8, y / 8 + 1, i32(zv(x, y))), g(x / 8 + 1, y / 8 + 1, i32(zv(x, y))), 0.5), 0.25);\n"
    "zz(x, y) = g(x / 8, y / 8, i32(zv(x, y))) + g(x / 8, y / 8, i32(zv(x, y)) + 1) + g(x / 8, y / 8, i32(zv(x, y)));\n"
    "out(x, y) = l2(x, y) + zz(x, y);\n"
    "output out(240, 56);\n";

static void test_data_dependent_gathers(void) {
    featured x;
    const char *sched = "schedule gs;\nout: root [x=32x1 y=1x1];\nl2: root [x=32x1 y=1x1];\n"
                        "zz: root [x=32x1 y=1x1];\nzv: inline;\ng: root [x=32x1 y=1x1 z=1x1];\n";
    if (featurize(&x, GRID_SLICE, sched)) {
        EXPECT(&x, "l2", "vector_gathers_per_point", 4);
        EXPECT(&x, "zz", "vector_gathers_per_point", 2);
        EXPECT(&x, "l2", "op_load_func_f32", 4);
    }
    featured_free(&x);
}

static void test_cpu_cached_warp(void) {
    target cpu = A100;
    cpu.cpu = true;
    featured x;
    const char *serial8 = "schedule copy;\nout: root [x=32x8 y=1x1];\n";
    if (featurize(&x, COPY, serial8)) {
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 256);
        EXPECT(&x, "out", "global_mem_load_efficiency", 0.125);
        EXPECT(&x, "out", "global_mem_store_efficiency", 0.125);
    }
    featured_free(&x);
    if (featurize_for(&x, COPY, serial8, &cpu)) {
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 32);
        EXPECT(&x, "out", "num_global_mem_loads_per_block", 32);
        EXPECT(&x, "out", "num_global_mem_stores_per_block", 32);
        EXPECT(&x, "out", "global_mem_load_efficiency", 1);
        EXPECT(&x, "out", "global_mem_store_efficiency", 1);
        /* the points are cyclic on a CPU (nest_ctx_set_cyclic): lane l
         * reads in(l + 32 u, y), its neighbours' elements, 1 line an
         * access (8 with consecutive points: lanes 32 bytes apart) */
        EXPECT(&x, "out", "global_lines_per_warp_access", 1);
    }
    featured_free(&x);
    /* one point a thread: the same figures as the GPU's */
    if (featurize_for(&x, COPY, "schedule copy;\nout: root [x=32x1 y=1x1];\n", &cpu)) {
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 4);
        EXPECT(&x, "out", "global_mem_load_efficiency", 1);
    }
    featured_free(&x);
    const char *row = "schedule hstencil;\nout: root [x=32x1 y=1x1];\n";
    if (featurize(&x, HSTENCIL, row)) EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 14);
    featured_free(&x);
    if (featurize_for(&x, HSTENCIL, row, &cpu)) {
        EXPECT(&x, "out", "global_mem_loads_per_regular_warp", 5);
        EXPECT(&x, "out", "global_mem_load_efficiency", 34.0 * 4 / 160);
    }
    featured_free(&x);
    /* a serial loop past FEAT_WARP_CACHED_ITERS: 16 of 64 iterations
     * enumerated (lane l's 16 floats from 64l: 2 sectors) and scaled by 4 */
    if (featurize_for(&x, COPY, "schedule copy;\nout: root [x=4x64 y=1x1];\n", &cpu)) {
        EXPECT(&x, "out", "num_threads_per_block", 4);
        EXPECT(&x, "out", "global_mem_loads_per_tail_warp", 4 * 4 * 2);
        EXPECT(&x, "out", "global_mem_load_efficiency", 1);
    }
    featured_free(&x);
}

/* A matrix product's update whose reduction runs around its unrolled
 * 2x2 tile (nest_reduction_around_tile): at each reduction step A(i, r)
 * is loaded once per i of the tile and B(r, j) once per j, 4 loads for 4
 * points, and the running values stay in registers; the innermost loop
 * that iterates is the tile's i.  With one point a thread the reduction
 * is innermost and every point loads A, B and itself. */
static void test_reduction_tile_loads(void) {
    const char *src = "pipeline mm;\ninput f32 A(64, 64);\ninput f32 B(64, 64);\nrdom r(0, 64);\n"
                      "prod(i, j) = 0.0;\nprod(i, j) += A(i, r) * B(r, j);\noutput prod(64, 64);\n";
    featured tile, one;
    bool a = featurize(&tile, src, "schedule mm;\nprod: root [i=16x1 j=4x1] [i=16x2 j=4x2];\n");
    bool b = featurize(&one, src, "schedule mm;\nprod: root [i=16x1 j=4x1] [i=16x1 j=4x1];\n");
    CHECK(a && b);
    if (a && b) {
        CHECK(fv_stage(&tile, "prod", 1, "op_load_input_f32") == 1);
        CHECK(fv_stage(&tile, "prod", 1, "op_load_self_f32") == 0);
        CHECK(fv_stage(&tile, "prod", 1, "innermost_loop_extent") == 2);
        CHECK(fv_stage(&one, "prod", 1, "op_load_input_f32") == 2);
        CHECK(fv_stage(&one, "prod", 1, "op_load_self_f32") == 1);
        CHECK(fv_stage(&one, "prod", 1, "innermost_loop_extent") == 64);
        CHECK(fv_stage(&tile, "prod", 1, "op_mul_f32") == 1);
    }
    featured_free(&tile);
    featured_free(&one);
}

/* unrolled_loop_extent as lowering unrolls: a 4 x 3 x 3 reduction of one
 * point a thread is 36 points of straight-line code (each loop short
 * enough, though their product is over the limit of 16); with 2 points a
 * thread, 72 (8 and 6 under 16); with 8, the 4-long loop times 8 points
 * reaches 32 and stays rolled on a GPU: 1; on a CPU the reduction runs
 * around the unrolled tile and the whole, 288 points, is under
 * NEST_UNROLL_AROUND_LIMIT (512; code generation 24): 288; with 14, 504;
 * with 15, 540 is over 512 and each loop alone too long: rolled, 1. */
static void test_unrolled_reduction_loops(void) {
    const char *src = "pipeline conv;\ninput f32 in(68, 52, 4);\ninput f32 w(4, 3, 3);\nrdom r(0, 4, 0, 3, 0, 3);\n"
                      "out(x, y) = 0.0;\nout(x, y) += w(r.x, r.y, r.z) * in(x + r.y, y + r.z, r.x);\n"
                      "output out(64, 48);\n";
    static const struct { const char *tile; double gpu, cpu; } cases[] = {
        { "x=16x1 y=4x1", 36, 36 }, { "x=16x2 y=4x1", 72, 72 }, { "x=16x8 y=4x1", 1, 288 },
        { "x=16x14 y=4x1", 1, 504 }, { "x=16x15 y=4x1", 1, 1 },
    };
    target cpu = A100;
    cpu.cpu = true;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int on_cpu = 0; on_cpu < 2; on_cpu++) {
            char sched[256];
            snprintf(sched, sizeof sched, "schedule conv;\nout: root [x=16x1 y=4x1] [%s];\n", cases[i].tile);
            featured x;
            bool ok = featurize_for(&x, src, sched, on_cpu ? &cpu : &A100);
            CHECK(ok);
            double want = on_cpu ? cases[i].cpu : cases[i].gpu;
            if (ok) {
                double got = fv_stage(&x, "out", 1, "unrolled_loop_extent");
                if (got != want) fprintf(stderr, "  [%s] %s: %g, expected %g\n", cases[i].tile, on_cpu ? "CPU" : "GPU", got, want);
                CHECK(got == want);
            }
            featured_free(&x);
        }
}

/* Footprints of irregular and mixed accesses: over the whole output, a
 * clamped data-dependent row reads at most the clamp's 8 rows and a row
 * modulo 4 at most 4 rows (before bounded forms, each was the whole
 * input: feat_access.h); per thread, each call reads one element per
 * point, however wide its box (the cap on footprints). */
static void test_bounded_footprints(void) {
    static const char *const src[3] = {
        "pipeline bfp;\ninput f32 in(256, 64);\ninput u8 idx(256, 64);\n"
        "out(x, y) = in(x, clamp(i32(idx(x, y)), 0, 7));\noutput out(256, 64);\n",
        "pipeline bfp;\ninput f32 in(256, 64);\nout(x, y) = in(x, y % 4);\noutput out(256, 64);\n",
        "pipeline bfp;\ninput f32 in(64, 64);\nout(x, y) = in(x, y) + in(y, x);\noutput out(64, 64);\n",
    };
    /* a realization (the whole output) reads the boxes: 8 rows of in and
     * every idx byte; 4 rows; all of in */
    static const double whole[3] = { 256 * 8 * 4 + 256 * 64, 256 * 4 * 4, 64 * 64 * 4 };
    /* a thread of one point reads one element per call, however wide the
     * box of its residual: 4 bytes of in and the u8 index; 4; two floats */
    static const double thread[3] = { 4 + 1, 4, 2 * 4 };
    for (int i = 0; i < 3; i++) {
        featured x;
        if (featurize(&x, src[i], "schedule bfp;\nout: root [x=32x1 y=1x1];\n")) {
            EXPECT(&x, "out", "unique_global_bytes_read_per_realization", whole[i]);
            EXPECT(&x, "out", "unique_global_bytes_read_per_thread", thread[i]);
        } else {
            CHECK(false);
        }
        featured_free(&x);
    }
    /* a 2x2 tile per thread: in(x, y) and in(y, x) each read a 2x2 block,
     * 8 floats, where the box of the summed spans is 4x4 */
    featured x;
    if (featurize(&x, src[2], "schedule bfp;\nout: root [x=32x2 y=1x2];\n"))
        EXPECT(&x, "out", "unique_global_bytes_read_per_thread", 2 * 2 * 2 * 4);
    else
        CHECK(false);
    featured_free(&x);
}

/* A warp reads an upsampling tap, x/2 - 1 + 2*(x % 2) (clamped: a bounded
 * form clamped by constants keeps its form), as the regular
 * x/2 at the middle of its residual (at most 2 elements from each lane's
 * real address): the transactions of in(x/2, y), not a sector per lane
 * as a gather (WARP_NARROW_RESIDUAL in features.c). */
static void test_narrow_residual_warp(void) {
    static const char *const src[2] = {
        "pipeline up;\ninput f32 in(128, 64);\nout(x, y) = in(clamp(x / 2 - 1 + 2 * (x % 2), 0, 127), y);\n"
        "output out(256, 64);\n",
        "pipeline up;\ninput f32 in(128, 64);\nout(x, y) = in(x / 2, y);\noutput out(256, 64);\n",
    };
    double loads[2] = { NAN, NAN }, lines[2] = { NAN, NAN };
    for (int i = 0; i < 2; i++) {
        featured x;
        if (featurize(&x, src[i], "schedule up;\nout: root [x=32x1 y=1x1];\n")) {
            loads[i] = fv(&x, "out", "global_mem_loads_per_regular_warp");
            lines[i] = fv(&x, "out", "global_lines_per_warp_access");
        }
        featured_free(&x);
    }
    printf("  upsampling tap: %g transactions, %g lines per warp access (x/2: %g, %g)\n", loads[0], lines[0],
           loads[1], lines[1]);
    CHECK(loads[0] == loads[1] && lines[0] == lines[1]);
    CHECK(loads[0] <= 3);                     /* 16 floats: 2 sectors, 3 when unaligned */
}

int main(void) {
    char err[512];
    if (target_by_name("a100", NULL, &A100, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    RUN(test_schema);
    RUN(test_copy_coalesced);
    RUN(test_copy_uncoalesced);
    RUN(test_tail_warp);
    RUN(test_stencil_block_fusion);
    RUN(test_unrolled_reuse);
    RUN(test_transpose_bank_conflicts);
    RUN(test_occupancy_shared);
    RUN(test_occupancy_registers);
    RUN(test_apps);
    RUN(test_cache_identical);
    RUN(test_access_memo);
    RUN(test_inline_ops);
    RUN(test_cpu_cached_warp);
    RUN(test_vector_gathers);
    RUN(test_data_dependent_gathers);
    RUN(test_reduction_tile_loads);
    RUN(test_unrolled_reduction_loops);
    RUN(test_bounded_footprints);
    RUN(test_narrow_residual_warp);
    CHECK_EXIT();
}
