/*
 * nest.h - the loop-nest model of a partial or complete schedule: what
 * lowering would make of it, computed without lowering, for the searches
 * and cost models that ask it thousands of times a second (DESIGN.md, "The
 * loop-nest model"; docs/nest.md).
 *
 * For every stage of every modelled Func: the kernel it runs in, its block
 * / thread / serial loop extents, how many times it is realized, the points
 * it computes (the redundant recompute of fused stencils included), its
 * allocation, and per access (a call of a Func or input after inlining)
 * the footprint per point, per thread, per block and per realization and
 * the stride per loop level.  The extents are exactly lowering's (one
 * footprint algebra, footprint.h); tests/test_nest.c holds them equal to
 * the kernel IR.
 *
 * Undecided Funcs.  Only decided Funcs are modelled, as Anderson et al.
 * 2021 (and Adams et al. 2019) featurize only the stages already
 * scheduled: an undecided Func has no records and no kernel, its calls
 * stay calls (it is not inlined), and a decided Func's reads of it are
 * global reads of a root Func over its bounds region (the place it would
 * be computed at if nothing else were decided).  Decisions are made
 * consumers first, so a decided Func never depends on an undecided one's
 * placement.  A fused Func whose chain of consumers reaches an undecided
 * Func is not modelled either.
 *
 * Memory.  A nest_ctx (explicit create/destroy) holds what depends on the
 * pipeline only and caches: stage expressions after inlining, keyed by the
 * set of inline Funcs they expand, and whole kernels, keyed by the
 * decisions (sched_func contents: location, consumer, tiles) of their
 * Funcs, so extending a state by one decision rebuilds only the kernel
 * that decision changes (and a state seen before costs no rebuild).
 * Everything cached lives in the ctx's arenas; a nest returned by
 * nest_build is malloc'd (nest_free) and points into the ctx, which must
 * outlive it (and must not be flushed while it lives).  With the kernel
 * cache off, a nest's records live in an arena of its own.  No static
 * buffers: one ctx per thread.
 */
#ifndef SC_NEST_H
#define SC_NEST_H

#include <stdbool.h>
#include <stdint.h>
#include "bounds.h"
#include "fusion.h"
#include "ir.h"
#include "sched.h"

/* Lowering refuses a schedule whose inlined expressions pass this many
 * nodes (lower.h's LOWER_MAX_INLINED is this); the model refuses the same. */
#define NEST_MAX_INLINED FUSION_MAX_INLINED
/* Register staging (lower.h's limits are these): staged copies per
 * kernel, elements each. */
#define NEST_MAX_STAGED 32
#define NEST_STAGE_ELEMS 32
/* Staged elements per kernel, all copies together: the registers the
 * legality module's register estimate sets aside for staging (legal.h's
 * LEGAL_STAGED_REGISTERS is this). */
#define NEST_STAGED_REGISTERS 64
/* A Func fused into several consumers gets the hull of their boxes; its
 * extent is found by evaluating every combination of the tile indices
 * its boxes depend on (one dimension at a time), or else every block (and
 * thread, at thread level) of the kernel, up to this many cases, else the
 * whole region is taken (lowering and the model alike: hull.h). */
#define NEST_HULL_POSITIONS (1 << 18)

typedef enum { NEST_GLOBAL, NEST_SHARED, NEST_REGISTER } nest_mem;

const char *nest_mem_name(nest_mem m);

typedef struct {
    const sc_func *root;
    int stage;
    int64_t nblocks;
    int nthreads;
    int nshared;                   /* BLOCK-level Funcs */
    int64_t shared_bytes;
    int nregister;                 /* THREAD-level Funcs */
    int64_t register_elems;        /* their elements per thread, summed */
    int nstaged;                   /* register-staged copies */
    int64_t staged_elems;
    int unstaged;                  /* copies the GPU rule stages and this ctx does not
                                    * (nest_ctx_set_staging) */
} nest_kernel;

/* One access: a call in a stage after inlining; calls with the same
 * producer and the same affine Jacobian rows and offsets (x - 2 - 2 and
 * x - 4) are one access. */
typedef struct {
    const sc_func *producer;       /* a Func or an input */
    const sc_expr *call;           /* after inlining (ctx arena) */
    int calls;                     /* structurally distinct calls it stands for */
    nest_mem mem;                  /* where it reads: the producer's storage */
    bool staged;                   /* lowering stages it in registers (§6.7) */
    bool affine;                   /* every coordinate has a Jacobian row */
    bool clamped;                  /* some row only through a clamp (1-Lipschitz) */
    int ndims;
    /* Box extents of what it reads, per producer dimension, clipped into
     * the producer's region: at one point of the stage's pure loops (its
     * reduction loops whole), in one thread's serial tile, in one block
     * (root: the block's tile; block level: its realization; thread
     * level: what one block computes of it, the union of its
     * realizations there, or with several consumers the hull of theirs
     * as lowering allocates it at block level), in one realization of
     * the stage. */
    int64_t fp_point[SC_MAX_DIMS], fp_thread[SC_MAX_DIMS];
    int64_t fp_block[SC_MAX_DIMS], fp_realization[SC_MAX_DIMS];
    int64_t bytes_point, bytes_thread, bytes_block, bytes_realization;
    /* d(flat address in elements)/d(loop index), from the Jacobian and the
     * storage it reads (global: the producer's region, dense, dimension 0
     * fastest; shared/register: the allocation; staged: the staged copy).
     * serial[l] per stage loop l (ir_stage_loops order); thread[k] and
     * block[k] per pure loop k, for a step of one thread / one block
     * (block: root stages only, else 0).  NAN where not affine. */
    double stride_serial[2 * SC_MAX_DIMS];
    double stride_thread[SC_MAX_DIMS], stride_block[SC_MAX_DIMS];
} nest_access;

typedef struct {
    const sc_func *func;
    int stage;
    const nest_kernel *kernel;     /* its kernel, one of nest.kernels */
    int npure;                     /* pure loops, k-th in ir_stage_loops order */
    int64_t extent[SC_MAX_DIMS];   /* points per pure loop in one realization */
    int64_t blocks[SC_MAX_DIMS];   /* ROOT: blocks per pure loop; else 1 */
    int threads[SC_MAX_DIMS];      /* threads per pure loop (1 for THREAD) */
    int64_t serial[SC_MAX_DIMS];   /* points per thread per pure loop */
    int nred;
    int64_t red[SC_MAX_DIMS];      /* reduction loops, serial inside */
    int64_t threads_used;          /* product of threads */
    bool unrolled;                 /* lowering unrolls its serial loops */
    bool cyclic;                   /* a thread's points along pure loop 0 are
                                    * threads[0] apart (nest_ctx_set_cyclic) */
    int unroll_limit;              /* loops unrolled below this many points
                                    * (nest_unroll_limit) */
    bool unroll_whole_ok;          /* a reduction around an unrolled tile may
                                    * unroll whole (nest_reduction_unrolls_whole):
                                    * a CPU's context, which stages nothing */
    int nstaged;                   /* producers staged in registers here */
    int64_t staged_elems;
    int64_t realizations_per_block;   /* per block of its kernel */
    int64_t realizations;             /* in total */
    int64_t points_per_realization;   /* pure points x reduction points */
    int64_t points_total;             /* recompute included */
    int naccess;
    nest_access *access;
} nest_stage;

typedef struct {
    const sc_func *func;
    sched_loc loc;                 /* ROOT, BLOCK or THREAD */
    int at;                        /* consumer (BLOCK, THREAD), else -1 */
    int at_stage;                  /* the consumer's stage that calls it */
    int owner, owner_stage;        /* fused: the stage that computes its group (nest_owner) */
    nest_mem mem;                  /* its allocation */
    int ndims;
    int64_t extent[SC_MAX_DIMS];   /* ROOT: its region; fused: per realization */
    unsigned hull_whole;           /* fused into several consumers: bit d set where
                                    * the hull of their boxes in dimension d is the
                                    * whole region (hull_extent gave up) */
    int64_t elems, bytes;
    int nstages;
    const nest_stage **stages;
} nest_func;


typedef struct {
    int nfuncs;                    /* == pipeline funcs.n */
    const nest_func **funcs;       /* [func id]; NULL: not modelled */
    int nkernels;
    const nest_kernel **kernels;   /* launch order, as lowering makes them */
    int nmodelled;                 /* Funcs with records */
    void *own_roots, *own_stages;  /* blocks the nest owns (nest_free) */
    ir_arena *own_arena;           /* its records when kernels are not cached */
} nest;

typedef struct nest_ctx nest_ctx;

/* The grid of the kernel of stage st of root Func r tiled by t, np being
 * the stage's pure loop count: per pure loop k its extent, minimum, block
 * size (threads x serial) and block count, and the kernel's blocks and
 * threads per block.  1 when made, 0 when the stage computes nothing (a
 * loop of extent 0), -1 with a message in err for a tiling that does not
 * fit the stage.  Lowering and the model both lay kernels out by it. */
typedef struct {
    int64_t ext[SC_MAX_DIMS], min[SC_MAX_DIMS], blk[SC_MAX_DIMS], nb[SC_MAX_DIMS];
    int64_t nblocks, nthreads;
} nest_grid;
int nest_grid_of(const bounds_result *b, const sc_func *r, int st, const sched_tile *t, int np,
                 nest_grid *g, char *err, size_t errlen);

/* b must outlive the ctx. */
nest_ctx *nest_ctx_new(const sc_pipeline *p, const bounds_result *b);
void nest_ctx_free(nest_ctx *x);

/* The model of s (partial or complete).  NULL with a message naming the
 * Func and the rule when s breaks one of the rules lowering enforces. */
nest *nest_build(nest_ctx *x, const sched_state *s, char *err, size_t errlen);
void nest_free(nest *n);

/* Whether lowering stages producers in registers (§6.7; default on).  A
 * CPU target turns it off: PoCL keeps a work-item's private array in
 * memory, one copy per work-item, so a staged stencil ran 6x slower than
 * the same tile reading global memory (docs/backends.md): callers pass
 * target_stages_registers(t).  Drops the cached kernels when it changes:
 * nests built before must be freed first. */
void nest_ctx_set_staging(nest_ctx *x, bool on);
/* Whether a thread's points along a stage's first pure loop are strided
 * by the loop's thread count (point u of thread t at t + u * threads)
 * rather than consecutive (t * serial + u; the default, a GPU's, off).  A
 * CPU turns it on (target_cyclic_points): PoCL vectorizes a work-group's
 * loop over neighbouring work-items, whose consecutive points were then a
 * gather, 3-5x slower than a contiguous load (docs/backends.md,
 * "Generation 20").  It applies to a ROOT or BLOCK stage with more than
 * one thread and more than one point along that loop, whose serial tile
 * lowering unrolls (under NEST_UNROLL_LIMIT points: a looped tile's
 * innermost loop over consecutive points is what the compiler vectorizes
 * then, 1.5-2 ms against 26-29 ms cyclic), with no Func computed in its
 * threads (whose footprints are a thread's contiguous tile), where
 * nothing is staged.  The record says where it applied (nest_stage.cyclic)
 * and lowering follows it.  Drops the cached kernels when it changes. */
void nest_ctx_set_cyclic(nest_ctx *x, bool on);
/* Whether some stage of n has cyclic points (nest_stage.cyclic). */
bool nest_any_cyclic(const nest *n);

/* Whether some kernel of n has copies the GPU rule would have staged
 * that n's ctx did not (its code differs from code made with staging). */
bool nest_would_stage(const nest *n);

/* Whether built kernels are kept for reuse (default on; off to measure
 * or check a build from scratch).  Stage expressions are always kept. */
void nest_ctx_cache_kernels(nest_ctx *x, bool on);

/* Drops the cached kernels (their memory grows with every new kernel a
 * search builds): nests built before must be freed first. */
void nest_ctx_flush(nest_ctx *x);

/* Cache statistics since the ctx was made. */
typedef struct { int64_t kernel_hits, kernel_misses, expr_hits, expr_misses; } nest_stats;
nest_stats nest_ctx_stats(const nest_ctx *x);

/* The footprint extents of a BLOCK or THREAD Func (per block or per
 * thread of its consumer), as lowering allocates them, without lowering.
 * 0, or -1 with err. */
int nest_fused_extents(const sc_pipeline *p, const bounds_result *b, const sched_state *s,
                       int func_id, int64_t *extent, char *err, size_t errlen);

/* Whether thread loop k of a stage's np pure loops (threads[q] threads
 * each, loop 0 fastest in the flat thread index) takes its digit of the
 * index modulo threads[k]: only when a later loop has threads of its own.
 * Otherwise (tid / below) is below threads[k] already, and the modulo is
 * left out: PoCL's compiler cannot vectorize x = base + tid % 64 over its
 * work-items, and a stencil so written ran 9x slower (docs/backends.md). */
static inline bool nest_thread_digit_wraps(const int *threads, int np, int k) {
    for (int q = k + 1; q < np; q++)
        if (threads[q] > 1) return true;
    return false;
}

/* How far apart neighbouring threads start along pure loop k of a stage
 * with serial[k] points a thread: one point along loop 0 where the points
 * are cyclic (nest_stage.cyclic), else a whole tile. */
static inline int64_t nest_thread_step(bool cyclic, int k, int64_t serial) { return cyclic && k == 0 ? 1 : serial; }

/* --dump style text of the model. */
void nest_print(FILE *out, const sc_pipeline *p, const nest *n);

#endif
