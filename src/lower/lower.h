/*
 * lower.h - lowering a complete schedule to the kernel IR, and the kernel
 * IR itself: what the code generators print (they decide nothing).
 *
 * A program is a list of kernels run in order over global buffers (one per
 * input and per root Func, each over the Func's region from bounds
 * inference).  A kernel runs `nblocks` blocks of `nthreads` threads (1-D;
 * the kernel decomposes the indices).  Its body is:
 *
 *   block_setup          statements run once per block, before anything,
 *                        with the variable `bid` (i32 block index) in scope
 *   shared allocations   arrays in shared memory, one per BLOCK-level Func
 *   phases[0..n)         each run by every thread of the block, with the
 *                        variable `tid` (i32 thread index) in scope, and
 *                        separated by barriers; variables LET in block_setup
 *                        are visible in all phases, those LET in a phase
 *                        only in that phase
 *
 * A C back end runs each phase as a loop over tid, and may keep block_setup
 * variables as ordinary locals; a GPU back end computes block_setup in every
 * thread (it is cheap integer arithmetic).
 *
 * Expressions are sc_expr nodes (pipeline arena):
 *  - E_VAR names a variable bound by `bid`, `tid`, a KS_LET or a KS_FOR;
 *    always i32 unless bound by a KS_LET of another type.
 *  - E_CALL of a Func or input reads its storage in this kernel:
 *    kernel->storage[func id]; element (c0, c1, ...) of an allocation is at
 *    flat index sum_d (c_d - min_d) * stride_d.  There are no E_RVAR nodes
 *    and no calls of inline Funcs left.
 *  - Register staging (Anderson et al. 2021 §6.7): where a thread's
 *    unrolled serial tile reads a global producer at overlapping points
 *    (a stencil), the points are first loaded into a MEM_LOCAL array, and
 *    the stage reads that instead.  The array belongs to a stand-in
 *    sc_func made by lowering: a copy of the producer with id
 *    p->funcs.n + i (i < LOWER_MAX_STAGED), so E_CALLs of the copy read
 *    storage[that id]; the load loops call the producer itself.
 *  - E_PARAM is a scalar kernel argument.
 *  - Integer division and modulo keep the pipeline's semantics (Euclidean;
 *    x / 0 = 0): generated code uses helper functions for them, and for
 *    float-to-integer casts (truncating, saturating, NaN -> 0).
 */
#ifndef SC_LOWER_H
#define SC_LOWER_H

#include <stdio.h>
#include "bounds.h"
#include "ir.h"
#include "nest.h"
#include "sched.h"

typedef enum { MEM_GLOBAL, MEM_SHARED, MEM_LOCAL } lower_mem;

/* Register staging limits: staged copies per kernel, and elements per
 * staged copy. */
#define LOWER_MAX_STAGED NEST_MAX_STAGED       /* one limit for lowering and the model */
#define LOWER_STAGE_ELEMS NEST_STAGE_ELEMS

typedef struct {
    const sc_func *func;
    lower_mem mem;
    const char *name;             /* identifier in generated code */
    int ndims;
    sc_expr *min[SC_MAX_DIMS];    /* GLOBAL: constants; else expressions of
                                     variables in scope where it is used */
    int64_t extent[SC_MAX_DIMS];
    int64_t stride[SC_MAX_DIMS];  /* dense, dimension 0 fastest */
    int64_t count;                /* elements */
} lower_alloc;

typedef enum {
    KS_SEQ,      /* items[0..n) */
    KS_FOR,      /* for (var = min; var < min + extent; var++) body; unroll hint */
    KS_IF,       /* if (cond) body */
    KS_LET,      /* type var = value; */
    KS_ALLOC,    /* a MEM_LOCAL array, alive until the end of the enclosing SEQ */
    KS_STORE     /* storage of func at coords = value */
} kstmt_kind;

typedef struct kstmt kstmt;
struct kstmt {
    kstmt_kind kind;
    int n;                        /* KS_SEQ */
    kstmt **items;
    const char *var;              /* KS_FOR, KS_LET */
    sc_expr *min;                 /* KS_FOR */
    int64_t extent;               /* KS_FOR */
    bool unroll;                  /* KS_FOR */
    bool unroll_whole;            /* KS_FOR: a loop of a reduction unrolled whole
                                   * around an unrolled tile
                                   * (nest_reduction_unrolls_whole): the back
                                   * end's node cap is CG_UNROLL_NODES_WHOLE */
    sc_expr *cond;                /* KS_IF */
    kstmt *body;                  /* KS_FOR, KS_IF */
    sc_expr *value;               /* KS_LET, KS_STORE */
    lower_alloc *alloc;           /* KS_ALLOC, KS_STORE (destination) */
    sc_expr *coords[SC_MAX_DIMS]; /* KS_STORE: absolute Func coordinates */
};

/* The names lowering gives the thread indices, which no Func variable or
 * let takes: the root phase's per-loop indices (lower_kernel.tdim). */
extern const char *const lower_tid_names[3];
/* 0, 1, 2 for tid0, tid1, tid2; -1 for any other name. */
int lower_tid_index(const char *name);
/* Whether name is one of a kernel's own thread variables: bid, tid or
 * tid0..2. */
bool lower_thread_var(const char *name);

typedef struct {
    const char *name;             /* e.g. "blur_y_s0" */
    int64_t nblocks;
    int nthreads;
    kstmt *block_setup;
    int nshared;
    lower_alloc **shared;
    int nphases;
    kstmt **phases;
    int nargs;                    /* global buffers used, in argument order */
    lower_alloc **args;
    int nparams;                  /* then scalar parameters */
    sc_param **params;
    lower_alloc **storage;        /* [func id] -> storage in this kernel, or NULL;
                                     ids from p->funcs.n up are staged copies */
    const sc_func *root;          /* the root Func and stage it computes */
    int stage;
    /* The root phase's threads by loop: where at most three of its pure
     * loops have threads of their own, it reads each one's thread index as
     * the variable tid0, tid1, tid2 (in loop order), with tid = tid0 +
     * tdim[0] * (tid1 + tdim[1] * tid2) (an OpenCL work-group of shape
     * tdim; CUDA and C derive them from tid).  With more threaded loops
     * (merged_tdim), tdim[2] is the product of the third and later ones'
     * threads, and their indices are digits of tid2 (before code
     * generation 15: tdim was {nthreads, 1, 1}, and every phase read tid
     * alone, whose digits PoCL does not vectorize over). */
    int tdim[3];
    bool merged_tdim;
    /* The block's tile base in each pure loop of the root stage that has
     * more than one block: the variable LET in block_setup takes the
     * values min + step * j, j in [0, count) (the code generator's
     * interior blocks, docs/backends.md). */
    int nbases;
    struct {
        const char *var;
        int64_t min, step, count;
    } bases[SC_MAX_DIMS];
    int nstaged;                  /* staged copies (register staging) */
    int64_t staged_elems;         /* their elements, summed */
    const char *comment;          /* the schedule of the Func, one line */
} lower_kernel;

typedef struct {
    const sc_pipeline *p;
    int nkernels;
    lower_kernel **kernels;       /* launch order */
    int nbuffers;
    lower_alloc **buffers;        /* every input and root Func (MEM_GLOBAL) */
    const char *schedule_text;    /* the whole schedule, for a comment */
    bool cpu;                     /* lowered for a CPU target (lower_schedule_for):
                                     OpenCL code launches interior blocks apart
                                     (codegen.h, cg_generate_launches) */
} lower_program;

/* Lowers a complete, checked schedule.  Everything it makes (the program,
 * its statements and expressions) is allocated in `arena`, which must
 * outlive the program; the pipeline is not changed.  NULL with a message
 * in err if the schedule breaks a rule (see sched.h).
 *
 * Lowering writes out the loop-nest model of s (nest.h): the kernels and
 * their order, every stage's block, thread and serial extents, the
 * allocations and footprint extents of fused Funcs, unrolling and register
 * staging are the model's; lowering adds the inlined expressions and the
 * tile and footprint origins as expressions.  lower_schedule builds the
 * model in a nest_ctx of its own; a caller that lowers many states of one
 * pipeline passes its ctx (lower_schedule_ctx: stage expressions and
 * kernels built for earlier states are reused), or the model it already
 * has of s (lower_schedule_nest; it must be the model of s, built from b). */
lower_program *lower_schedule(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                              const sched_state *s, char *err, size_t errlen);
/* The same for a target that is a CPU when cpu (target.cpu): no register
 * staging (nest_ctx_set_staging) and cyclic points along a stage's first
 * loop (nest_ctx_set_cyclic).  lower_schedule is cpu false. */
lower_program *lower_schedule_for(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                                  const sched_state *s, bool cpu, char *err, size_t errlen);
/* lower_schedule_for with the thread mapping apart: cyclic points only
 * where cyclic (the code a CPU got before code generation 20 had none:
 * cg_code_changed_since lowers an older sample's schedule so). */
lower_program *lower_schedule_mapped(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                                     const sched_state *s, bool cpu, bool cyclic, char *err, size_t errlen);
lower_program *lower_schedule_ctx(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                                  const sched_state *s, nest_ctx *x, char *err, size_t errlen);
lower_program *lower_schedule_nest(ir_arena *arena, sc_pipeline *p, const bounds_result *b,
                                   const sched_state *s, const nest *model, char *err, size_t errlen);


/* --dump=kernels: the kernel IR as text. */
void lower_print(FILE *out, const lower_program *prog);

#endif
