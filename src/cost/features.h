/*
 * features.h - the features of every stage of a (partial) schedule: the
 * algorithm features of Adams et al. 2019 and the GPU schedule features of
 * Anderson et al. 2021 Appendix A, plus the unique cache lines per warp
 * access of Remmelg et al. 2020 (docs/features.md defines each one).
 *
 * ONE schema: the X-macro list below names every feature once, with its
 * kind, unit and a short doc; the featurizer, a cost model's input layout,
 * the sample store and `stagecraft features` all read it.  A feature
 * vector is
 *     [ op histogram: OPS_KIND_COUNT x SC_TYPE_COUNT counts, "op_add_f32" ... ]
 *     [ the FEAT_LIST entries, in order ]
 * so feature i has a name (feat_name), a kind and a unit whatever it is.
 *
 * Rows are made for the stages of decided Funcs that are not inline;
 * undecided Funcs have no row (their cost is left out, as Anderson et al.
 * leave the unscheduled part of a pipeline out) and a decided stage that
 * reads one reads it from global memory, where it will be unless it is
 * later fused.
 */
#ifndef SC_FEATURES_H
#define SC_FEATURES_H

#include <stdio.h>
#include "analysis.h"
#include "bounds.h"
#include "nest.h"
#include "sched.h"
#include "target.h"

typedef enum { FEAT_ALGO, FEAT_SCHED } feat_kind;

/* X(name, kind, unit, doc); the access classes come first (feat_ctx
 * keeps them per stage as FEAT_load_func_pointwise .. FEAT_store_slice). */
#define FEAT_LIST(X) \
    /* memory access patterns (Adams et al. 2019), per stage, no inlining */ \
    X(load_func_pointwise, FEAT_ALGO, "calls", "calls of Funcs whose Jacobian is the identity") \
    X(load_func_transpose, FEAT_ALGO, "calls", "calls of Funcs whose Jacobian permutes the loops") \
    X(load_func_broadcast, FEAT_ALGO, "calls", "calls of Funcs that do not vary along some loop") \
    X(load_func_slice, FEAT_ALGO, "calls", "calls of Funcs with a constant coordinate") \
    X(load_input_pointwise, FEAT_ALGO, "calls", "the same, of inputs") \
    X(load_input_transpose, FEAT_ALGO, "calls", "the same, of inputs") \
    X(load_input_broadcast, FEAT_ALGO, "calls", "the same, of inputs") \
    X(load_input_slice, FEAT_ALGO, "calls", "the same, of inputs") \
    X(load_self_pointwise, FEAT_ALGO, "calls", "the same, of the stage's own Func") \
    X(load_self_transpose, FEAT_ALGO, "calls", "the same, of the stage's own Func") \
    X(load_self_broadcast, FEAT_ALGO, "calls", "the same, of the stage's own Func") \
    X(load_self_slice, FEAT_ALGO, "calls", "the same, of the stage's own Func") \
    X(store_pointwise, FEAT_ALGO, "stores", "the store, when its coordinates are the pure loops") \
    X(store_transpose, FEAT_ALGO, "stores", "the store, permuted") \
    X(store_broadcast, FEAT_ALGO, "stores", "the store, not varying along some loop (a reduction)") \
    X(store_slice, FEAT_ALGO, "stores", "the store, with a constant coordinate") \
    /* basic schedule features (Adams et al. 2019) */ \
    X(num_realizations, FEAT_SCHED, "count", "times the Func's storage is allocated and filled") \
    X(num_productions, FEAT_SCHED, "count", "times the stage's loop nest runs") \
    X(points_computed_per_realization, FEAT_SCHED, "points", "points of the stage per realization") \
    X(points_computed_total, FEAT_SCHED, "points", "points computed, redundant recompute included") \
    X(points_computed_minimum, FEAT_SCHED, "points", "points the pipeline needs (the Func's region)") \
    X(inlined_calls, FEAT_SCHED, "calls", "calls of inline Funcs evaluated per point") \
    X(bytes_at_realization, FEAT_SCHED, "bytes", "the Func's allocation per realization") \
    X(bytes_at_production, FEAT_SCHED, "bytes", "bytes written per production") \
    X(bytes_at_root, FEAT_SCHED, "bytes", "the Func's whole region") \
    X(innermost_loop_extent, FEAT_SCHED, "iterations", "extent of the stage's innermost loop") \
    X(innermost_pure_loop_extent, FEAT_SCHED, "iterations", "extent of the innermost pure loop (region)") \
    X(unrolled_loop_extent, FEAT_SCHED, "iterations", "points of the serial loops unrolled (1: none)") \
    X(inner_parallelism, FEAT_SCHED, "threads", "threads per block running the stage") \
    X(outer_parallelism, FEAT_SCHED, "blocks", "blocks running the stage") \
    /* GPU features (Anderson et al. 2021 Appendix A) */ \
    X(num_scalars, FEAT_SCHED, "iterations", "product of the loop extents (guarded iterations included)") \
    X(points_computed_per_thread, FEAT_SCHED, "points", "product of the inner serial loops") \
    X(unique_global_bytes_read_per_realization, FEAT_SCHED, "bytes", "distinct bytes read from global memory per realization") \
    X(unique_shared_bytes_read_per_realization, FEAT_SCHED, "bytes", "the same, from shared memory") \
    X(unique_register_bytes_read_per_realization, FEAT_SCHED, "bytes", "the same, from registers") \
    X(unique_global_lines_read_per_realization, FEAT_SCHED, "lines", "contiguous lines read from global memory per realization") \
    X(unique_shared_lines_read_per_realization, FEAT_SCHED, "lines", "the same, from shared memory") \
    X(unique_register_lines_read_per_realization, FEAT_SCHED, "lines", "the same, from registers") \
    X(unique_global_bytes_read_per_thread, FEAT_SCHED, "bytes", "distinct bytes read from global memory per thread") \
    X(unique_shared_bytes_read_per_thread, FEAT_SCHED, "bytes", "the same, from shared memory") \
    X(unique_register_bytes_read_per_thread, FEAT_SCHED, "bytes", "the same, from registers") \
    X(unique_global_lines_read_per_thread, FEAT_SCHED, "lines", "contiguous lines read from global memory per thread") \
    X(unique_shared_lines_read_per_thread, FEAT_SCHED, "lines", "the same, from shared memory") \
    X(unique_register_lines_read_per_thread, FEAT_SCHED, "lines", "the same, from registers") \
    X(global_allocation_bytes_read_per_realization, FEAT_SCHED, "bytes", "sizes of the global allocations read") \
    X(shared_allocation_bytes_read_per_realization, FEAT_SCHED, "bytes", "sizes of the shared allocations read") \
    X(register_allocation_bytes_read_per_realization, FEAT_SCHED, "bytes", "sizes of the register allocations read") \
    X(global_bytes_at_task, FEAT_SCHED, "bytes", "bytes written to global memory per block") \
    X(shared_bytes_at_task, FEAT_SCHED, "bytes", "bytes written to shared memory per block") \
    X(register_bytes_at_task, FEAT_SCHED, "bytes", "bytes written to registers per block") \
    X(global_innermost_bytes_at_task, FEAT_SCHED, "bytes", "the same along the innermost storage dimension") \
    X(shared_innermost_bytes_at_task, FEAT_SCHED, "bytes", "the same along the innermost storage dimension") \
    X(register_innermost_bytes_at_task, FEAT_SCHED, "bytes", "the same along the innermost storage dimension") \
    X(num_blocks, FEAT_SCHED, "blocks", "blocks of the stage's kernel") \
    X(num_warps_per_block, FEAT_SCHED, "warps", "warps per block of the kernel") \
    X(num_active_warps_per_block, FEAT_SCHED, "warps", "warps with at least one thread of this stage") \
    X(num_threads_per_block, FEAT_SCHED, "threads", "threads per block computing this stage") \
    X(expr_branching, FEAT_SCHED, "registers", "Strahler number of the inlined expression") \
    X(block_occupancy, FEAT_SCHED, "ratio", "threads used / the hardware's threads per block") \
    X(warp_lane_utilization, FEAT_SCHED, "ratio", "threads used / (32 x active warps)") \
    X(idle_lane_wastage, FEAT_SCHED, "ratio", "idle threads of active warps / the hardware's threads per block") \
    X(num_shared_mem_loads_per_block, FEAT_SCHED, "transactions", "shared load transactions per block (bank conflicts counted)") \
    X(num_global_mem_loads_per_block, FEAT_SCHED, "transactions", "global load sectors per block (coalescing counted)") \
    X(num_shared_mem_stores_per_block, FEAT_SCHED, "transactions", "shared store transactions per block") \
    X(num_global_mem_stores_per_block, FEAT_SCHED, "transactions", "global store sectors per block") \
    X(shared_mem_loads_per_regular_warp, FEAT_SCHED, "transactions", "of a warp of 32 active lanes") \
    X(global_mem_loads_per_regular_warp, FEAT_SCHED, "transactions", "of a warp of 32 active lanes") \
    X(shared_mem_stores_per_regular_warp, FEAT_SCHED, "transactions", "of a warp of 32 active lanes") \
    X(global_mem_stores_per_regular_warp, FEAT_SCHED, "transactions", "of a warp of 32 active lanes") \
    X(shared_mem_loads_per_tail_warp, FEAT_SCHED, "transactions", "of the last, partial warp (0: none)") \
    X(global_mem_loads_per_tail_warp, FEAT_SCHED, "transactions", "of the last, partial warp (0: none)") \
    X(shared_mem_stores_per_tail_warp, FEAT_SCHED, "transactions", "of the last, partial warp (0: none)") \
    X(global_mem_stores_per_tail_warp, FEAT_SCHED, "transactions", "of the last, partial warp (0: none)") \
    X(shared_mem_store_efficiency, FEAT_SCHED, "ratio", "bytes stored / bytes moved by the shared store transactions") \
    X(shared_mem_load_efficiency, FEAT_SCHED, "ratio", "bytes needed / bytes moved by the shared load transactions") \
    X(global_mem_store_efficiency, FEAT_SCHED, "ratio", "bytes stored / bytes moved by the global store sectors") \
    X(global_mem_load_efficiency, FEAT_SCHED, "ratio", "bytes needed / bytes moved by the global load sectors") \
    X(global_lines_per_warp_access, FEAT_SCHED, "lines", "distinct 128-byte lines per warp per global access (LIFT)") \
    X(working_set_at_thread, FEAT_SCHED, "bytes", "allocations at this stage's thread level") \
    X(registers_per_thread, FEAT_SCHED, "registers", "estimated registers per thread of the kernel") \
    X(shared_mem_occupancy, FEAT_SCHED, "ratio", "shared memory of the kernel's block / the per-block limit") \
    X(shared_mem_block_limit_factor, FEAT_SCHED, "ratio", "blocks per SM shared memory allows / the hardware's") \
    X(max_warp_occupancy, FEAT_SCHED, "ratio", "active warps per SM / the hardware's") \
    X(max_block_occupancy, FEAT_SCHED, "ratio", "active blocks per SM / the hardware's") \
    X(vector_gathers_per_point, FEAT_SCHED, "calls", "loads and stores per point whose neighbouring threads' addresses are neither one element nor consecutive ones (a gather where a CPU vectorizes)")

enum {
#define FEAT_ENUM_(name, kind, unit, doc) FEAT_##name,
    FEAT_LIST(FEAT_ENUM_)
#undef FEAT_ENUM_
    FEAT_LIST_COUNT
};

#define FEAT_HIST_COUNT (OPS_KIND_COUNT * SC_TYPE_COUNT)
/* The vector index of op_KIND_TYPE, the count of operations of kind k
 * (ops_kind) and type ty (sc_type) per point. */
#define FEAT_OP(k, ty) ((k) * SC_TYPE_COUNT + (ty))
#define FEAT_COUNT (FEAT_HIST_COUNT + FEAT_LIST_COUNT)
/* The vector index of a FEAT_LIST entry: v[FEAT_AT(FEAT_num_blocks)]. */
#define FEAT_AT(e) (FEAT_HIST_COUNT + (e))

const char *feat_name(int i);
feat_kind feat_kind_of(int i);
const char *feat_unit(int i);
const char *feat_doc(int i);
/* The index of a feature by name, or -1. */
int feat_index(const char *name);

typedef struct {
    int func, stage;                  /* sc_func.id and stage */
    sched_loc loc;
    int kernel_func, kernel_stage;    /* the kernel that computes it: its root Func's id and stage */
    /* 0, or the name the feat_ctx gave this row's content when it cached
     * it: two rows of one feat_ctx with the same nonzero key are equal
     * (never reused, flushes included), so a consumer may remember what
     * it computed of a row by its key (cost_memo, costmodel.h). */
    uint64_t key;
    double v[FEAT_COUNT];
} feat_row;

typedef struct {
    int n;
    feat_row *rows;                   /* decided non-inline stages, outputs first */
} feat_result;

/* A featurizer for one pipeline: what depends on the pipeline only (the
 * operation counts, the access classes, the call graph) and two caches,
 * so that searches featurizing many states pay each piece once:
 *  - stage accesses keyed by the inline Funcs each stage expands (the walk
 *    of an inlined expression);
 *  - feature rows keyed by the content of the stage's kernel: the kernel's
 *    root stage and, for the root and every Func fused into it (into any
 *    stage of the root: a root stage's working set counts them all), its
 *    decision (location, consumer, tiles, pending stages) and the
 *    accesses of each of its stages after inlining (the entries of the
 *    first cache, which stand for the inline choices).  Everything a row
 *    reads lies inside its kernel (the loop-nest model keys its kernels
 *    on the same decisions); a kernel whose stage reads a shared or
 *    register Func of another kernel is not cached.  Rows are for one
 *    target: featurizing for another flushes them.
 * Extending a state by one decision therefore recomputes only the rows of
 * the kernels the decision changes; rows are bit-identical to a fresh
 * ctx's (tests/test_features.c holds them so).
 *
 * Memory: both caches together are held under a limit (default
 * FEAT_CACHE_LIMIT bytes, feat_ctx_set_limit); a call that finds them
 * over it flushes both first, so a long search's memory stays bounded.
 * feat_ctx_flush drops them at any time (nothing returned points into
 * them: rows are copied out).  Explicit create/destroy; b must outlive
 * the ctx; one per thread. */
#define FEAT_CACHE_LIMIT ((size_t)64 << 20)
typedef struct feat_ctx feat_ctx;
feat_ctx *feat_ctx_new(const sc_pipeline *p, const bounds_result *b);
void feat_ctx_free(feat_ctx *x);
void feat_ctx_flush(feat_ctx *x);
/* The cache limit in bytes (0: the default). */
void feat_ctx_set_limit(feat_ctx *x, size_t bytes);
/* Whether rows are cached (default on; off to measure or check a
 * featurization from scratch).  Accesses are always cached. */
void feat_ctx_cache_rows(feat_ctx *x, bool on);
typedef struct {
    int64_t row_hits, row_misses;     /* rows copied from / added to the cache */
    int64_t uncached;                 /* rows of kernels that cannot be cached */
    int64_t flushes;                  /* flushes at the limit */
    size_t bytes;                     /* held now */
} feat_cache_stats;
feat_cache_stats feat_ctx_stats(const feat_ctx *x);
/* The features of every stage of the Funcs the model of s describes, as
 * feat_compute_ctx gives them (below), but not copied: rows[i] points
 * at the row in x's cache, or in own for a row that could not be cached
 * (x's caches off, or a kernel whose rows read outside it).  They stay
 * valid until x is
 * flushed (feat_ctx_flush, a change of target, or the flush at the start
 * of a call over the limit, which feat_ctx_hold postpones) or freed, so
 * a search can featurize a whole step's states and cost them together
 * without copying a row.  Free with feat_refs_free. */
typedef struct {
    int n;
    const feat_row **rows;
    feat_row *own;
    int nown;
} feat_refs;
int feat_compute_refs(feat_ctx *x, const sched_state *s, const nest *model, const target *t, feat_refs *out,
                      char *err, size_t errlen);
void feat_refs_free(feat_refs *r);
/* While held, calls do not flush x when it is over its limit; the holder
 * calls feat_ctx_trim (a flush when over the limit; whether it flushed)
 * when no refs are in use. */
void feat_ctx_hold(feat_ctx *x, bool hold);
bool feat_ctx_trim(feat_ctx *x);
/* The features of every stage of the Funcs the model of s describes. */
int feat_compute_ctx(feat_ctx *x, const sched_state *s, const nest *model, const target *t, feat_result *out,
                     char *err, size_t errlen);

/* The features of every stage of the Funcs the loop-nest model of s
 * describes (nest.h: the decided, non-inline ones; s may be partial), for
 * target t.  0, or -1 with a message (out of memory). */
int feat_compute_model(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const nest *model,
                       const target *t, feat_result *out, char *err, size_t errlen);
/* The same, building the model first (a nest_ctx of its own): -1 with the
 * model's message when s breaks a rule of sched.h. */
int feat_compute(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const target *t,
                 feat_result *out, char *err, size_t errlen);
void feat_free(feat_result *r);

/* A table (a header line of names, then one line per stage) or JSON
 * ({"pipeline": ..., "target": ..., "stages": [{"func", "stage", "loc",
 * "features": {name: value}}]}). */
void feat_print_table(FILE *out, const sc_pipeline *p, const feat_result *r);
void feat_print_json(FILE *out, const sc_pipeline *p, const target *t, const feat_result *r);

#endif
