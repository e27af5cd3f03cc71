/*
 * cg_backend.h - the private interface of the code generator.  codegen.c
 * (statements, kernels, files, helper functions), cg_expr.c (expressions
 * with the pipeline's exact arithmetic, shared subexpressions) and
 * cg_range.c (value ranges, constant folding) print everything C-like that
 * the three back ends share; cg_c.c, cg_opencl.c and cg_cuda.c supply what
 * differs: type and math function names, the prologue, the kernel
 * signature and index variables, shared-memory declarations, phases and
 * barriers.
 *
 * A back end is a cg_target: strings where a string suffices, function
 * pointers for the kernel frame.  codegen.c prints a kernel as
 *     kernel_open      signature, arguments, bid/tid, shared arrays
 *     block_setup      statements (by codegen.c)
 *     for each phase:  phase_open, the phase's statements, phase_close
 *     kernel_close
 * Back ends print through the cg_ functions below, so indentation and
 * identifier mangling stay in one place.
 */
#ifndef SC_CG_BACKEND_H
#define SC_CG_BACKEND_H

#include <stdbool.h>
#include "codegen.h"

typedef struct cg_ctx cg_ctx;

typedef struct cg_target {
    const char *name;                     /* "C", "OpenCL", "CUDA" */
    const char *type[SC_TYPE_COUNT];      /* scalar types; bool is an int */
    const char *i64;                      /* 64-bit signed integer type */
    const char *fn_qual;                  /* qualifiers of helper functions */
    const char *math[SC_MATH_COUNT];      /* f32 math; [SC_ABS] is fabs */
    const char *fast_math[SC_MATH_COUNT]; /* CG_MATH_FAST: where it differs, else NULL */
    const char *fmin, *fmax;              /* f32 min / max (NaN-ignoring) */
    const char *cpu_fmin, *cpu_fmax;      /* the same for a CPU (lower_program.cpu)
                                             where it differs, else NULL (OpenCL:
                                             clang's builtins, codegen.h generation 12) */
    const char *inf, *nan;                /* f32 +infinity and a quiet NaN */
    const char *unroll;                   /* pragma line for an unrolled loop;
                                             "%d" (if present) is the trip count */
    bool unroll_counted;                  /* an unrolled loop counts from 0 and sets its
                                             variable in the body (OpenCL: below) */
    int64_t unroll_nodes;                 /* the pragma only on loops of at most this many
                                             expression nodes unrolled (0: any; OpenCL, C) */
    bool interior;                        /* kernels get interior copies (codegen.c);
                                             not C: gcc -O2 on the doubled bodies took
                                             test_schedules from 2 to 8 minutes */
    bool split_on_cpu;                    /* for a CPU (lower_program.cpu), the interior
                                             copy is a kernel of its own, launched over
                                             the interior blocks (OpenCL: codegen.c) */
    bool row_apart_on_cpu;                /* for a CPU, an access whose row is not a
                                             linear form is printed (a + row)[x]
                                             (OpenCL: cg_access) */
    bool select_pointer_on_cpu;           /* for a CPU, a select between loads whose
                                             condition is the same for every lane
                                             loads through the selected pointer
                                             (OpenCL: cg_expr, generation 17) */
    const char *lane_select;              /* a function select(a, b, c), c ? b : a with c an
                                             integer of a's width, that compiles to a select
                                             and not a branch: a private array's read at a
                                             temporary's values (OpenCL: cg_expr.c,
                                             generation 25); NULL where there is none */
    void (*prologue)(cg_ctx *g);          /* includes, typedefs, pragmas */
    void (*kernel_open)(cg_ctx *g, const lower_kernel *k);
    void (*phase_open)(cg_ctx *g, const lower_kernel *k, int phase);
    void (*phase_close)(cg_ctx *g, const lower_kernel *k, int phase);
    void (*kernel_close)(cg_ctx *g, const lower_kernel *k);
    void (*host)(cg_ctx *g);              /* the host entry point after the
                                             kernels (cg_host.c), or NULL */
    struct {                              /* GPU back ends: what cg_gpu_* print */
        const char *global_qual;          /* before a buffer argument: "__global " */
        const char *restrict_qual;        /* "restrict", "__restrict__" */
        const char *shared_qual;          /* "__local", "__shared__" */
        const char *index_type;           /* of bid and tid */
        const char *bid, *tid;            /* block and thread index expressions */
        const char *local_id;             /* "get_local_id": work-groups shaped by
                                             lower_kernel.tdim, tidN its dimension N;
                                             NULL: tid0..2 derived from tid */
        const char *barrier;              /* the statement between phases */
        const char *no_params;            /* parameter list of a kernel without any */
    } gpu;
} cg_target;

extern const cg_target cg_target_c;
extern const cg_target cg_target_opencl;
extern const cg_target cg_target_cuda;

/* ---- printing, for the back ends (codegen.c) ---- */

/* Appends formatted text, no indentation. */
void cg_printf(cg_ctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line at the current indentation, newline added. */
void cg_line(cg_ctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_indent(cg_ctx *g, int delta);
/* The identifier for a name from the IR: itself, or with a trailing '_'
 * where it would clash with a keyword, a builtin or a name of the
 * generated code (those start with sc_).  Valid until cg_generate returns. */
const char *cg_name(cg_ctx *g, const char *name);
const char *cg_type(cg_ctx *g, sc_type t);
/* The element type of an allocation. */
sc_type cg_alloc_type(const lower_alloc *a);
/* Whether the kernel's body, as printed, uses an allocation or a
 * parameter (constants fold away some uses), or the variable bid / tid.
 * Known in kernel_open (the body is printed first). */
bool cg_printed(const cg_ctx *g, const void *alloc_or_param);
bool cg_printed_var(const cg_ctx *g, const char *name);
/* The kernel's thread layout: its tdim, or {nthreads, 1, 1}. */
void cg_thread_layout(const lower_kernel *k, int *tdim);
/* Declares the printed ones of tid0..2 (all three with all, for a body
 * not printed yet) as digits of the flat index tid (an expression of type
 * `type`), for back ends whose blocks are flat. */
void cg_tid_defs(cg_ctx *g, const lower_kernel *k, const char *type, const char *tid, bool all);
/* Whether the kernel stores into the allocation (else it is read-only). */
bool cg_stores_to(const lower_kernel *k, const lower_alloc *a);
/* A scalar parameter's type in the kernel ABI: f32, or i32 for every
 * integer type (cast to the parameter's type where it is used). */
sc_type cg_param_abi_type(const sc_param *param);

/* Whether the code is generated with CG_MATH_FAST. */
bool cg_fast(const cg_ctx *g);
/* The name of f32 math function op in the code's math mode. */
const char *cg_math_fn(const cg_ctx *g, sc_mathfn op);
/* In CG_MATH_EXACT, the seven sc_ math functions (exp log pow sin cos tanh
 * atan2 computed in double, rounded once to f32), each declared with
 * qualifiers qual; in CG_MATH_FAST a comment that says the code is not
 * exact. */
void cg_math_prologue(cg_ctx *g, const char *qual);
/* GPU back ends: after the kernel's attributes, prints "NAME(arguments)",
 * opens the body and declares shared arrays, unused arguments, bid, tid
 * (from the target's gpu strings).  The phase and close functions suit
 * the cg_target fields directly: a phase is a braced block, phases are
 * separated by the barrier. */
void cg_gpu_kernel_frame(cg_ctx *g, const lower_kernel *k);
void cg_gpu_phase_open(cg_ctx *g, const lower_kernel *k, int phase);
void cg_gpu_phase_close(cg_ctx *g, const lower_kernel *k, int phase);
void cg_gpu_kernel_close(cg_ctx *g, const lower_kernel *k);

/* ---- the host entry point (cg_host.c), for cg_target.host ---- */

/* Whether the program's buffers cover every output and kernel argument
 * (programs made by lower_schedule do; hand-made ones in tests may not):
 * only then is there a host entry point. */
bool cg_host_possible(const lower_program *prog);
/* The i-th input (list 0) or output (list 1) of the program's pipeline. */
const sc_func *cg_host_func(const lower_program *prog, int list, int i);
/* The global buffer of an input or root Func, or NULL (an unread input). */
const lower_alloc *cg_host_buffer_of(const lower_program *prog, const sc_func *f);
/* "PIPELINE_run", and the host variable of a global buffer ("sc_NAME");
 * each stays valid until CG_SCRATCH_N more names are made. */
const char *cg_host_name(cg_ctx *g);
const char *cg_host_buf(cg_ctx *g, const lower_alloc *a);
/* The buffer's size in bytes (at least 1). */
int64_t cg_host_bytes(const lower_alloc *a);
/* Prints the comment (arrays, sizes, parameters, then `returns`) and the
 * signature "QUAL int NAME_run(inputs, params, outputs)", opens the body. */
void cg_host_open(cg_ctx *g, const char *qual, const char *returns);
void cg_host_close(cg_ctx *g);
/* Declares sc_p_NAME, each parameter a kernel reads in its kernel ABI
 * type, and marks the unread parameters and inputs (void). */
void cg_host_params(cg_ctx *g);
/* A kernel's arguments in ABI order, each after `prefix`. */
void cg_host_args(cg_ctx *g, const lower_kernel *k, const char *prefix);
/* Whether output f's buffer is exactly [0, extent) (no copy needed in C). */
bool cg_host_output_is_region(const sc_func *f, const lower_alloc *a);
/* Copies output f from buffer a into the user's array, with `copy`, a
 * statement format taking destination, source and byte count (%s each). */
void cg_host_copy_out(cg_ctx *g, const sc_func *f, const lower_alloc *a, const char *copy);

/* Shared arrays of at most this many bytes live on the stack in C. */
#define CG_C_STACK_BYTES 65536

/* ---- internals of codegen.c, cg_expr.c, cg_range.c (not for back ends) ---- */

typedef struct { char *s; size_t n, cap; } cg_buf;

/* Helper functions, per type. */
enum { H_DIV, H_MOD, H_MIN, H_MAX, H_SHL, H_SHR, H_ABS, H_FTOI, H_COUNT };

/* One node of the current statement's hash-consed DAG. */
typedef struct {
    const sc_expr *e;                 /* a representative */
    int kid[2 * SC_MAX_DIMS];         /* operands; for calls, then storage mins */
    int nkid;
    uint64_t hash;
    int nref;                         /* printed uses: by parents, by the statement */
    int64_t lo, hi;                   /* value range (integer types) */
    bool wraps;                       /* + - * neg may leave the range */
    bool fconst;                      /* f32 with the constant value fval */
    float fval;
    bool counted, visited;            /* by count_uses, cg_st_hoist */
    signed char lane;                 /* cg_lane_varying's answer: 0 not asked, 1 no, 2 yes */
    int tmp;                          /* temporary number, or -1 */
} cg_node;

/* A variable in scope: its range; `lin`, for an i32 KS_LET its value as a
 * linear form (cg_ctx.lins, -1 where it is none), and for the variable of
 * a loop printed counted (`for (v_u_ = 0; ...) { v = min + v_u_;`) min's,
 * with `counted` (the private arrays' indices are simplified through
 * them: cg_index). */
typedef struct {
    const char *name;
    int64_t lo, hi;
    int lin;
    bool counted;
    bool lane;                        /* may differ between work-items that differ in
                                         local id 0 alone (cg_lane_varying) */
    /* A LET of min(a, k), a linear and k a constant, with lin -1: a's
     * linear form (an index in lins) and k, for reads of private arrays
     * inside a guard that keeps a at most k (cg_expr.c, generation 23);
     * cmin_lin -1 otherwise. */
    int cmin_lin;
    int64_t cmin_k;
    bool narrowed;                    /* a copy whose hi a guard narrowed (narrow_env) */
    int64_t extent;                   /* a loop printed counted: its trip count (v_u_ < extent) */
} cg_var;
typedef struct cg_lin cg_lin;

enum { CG_SCRATCH_N = 4, CG_SCRATCH = 320 };

struct cg_ctx {
    const cg_target *t;
    cg_math math;
    const lower_program *prog;
    const lower_kernel *k;
    cg_buf *out;
    int indent;
    bool used[H_COUNT][SC_TYPE_COUNT];
    char **names;                     /* mangled: pairs (original, result) */
    int nnames, capnames;
    cg_var *env;                      /* variables in scope, innermost last */
    cg_lin *lins;                     /* the linear forms of cg_var.lin, per kernel */
    int nlins, caplins;
    int nenv, capenv;
    cg_node *node;                    /* the statement's DAG */
    int nnode, capnode;
    const sc_expr **pkey;             /* pointer -> node */
    int *pval;
    size_t pcap, pn;
    int *stab;                        /* structural hash -> node */
    size_t scap;
    int ntmp;
    const void **printed;             /* allocations and parameters printed */
    int nprinted, capprinted;
    bool printed_bid, printed_tid;
    bool printed_tidn[3];             /* tid0, tid1, tid2 (lower_kernel.tdim) */
    char scratch[CG_SCRATCH_N][CG_SCRATCH];   /* names made by cg_host_* */
    int nscratch;
    /* Interior blocks (codegen.c): LETs of these names get at most these
     * ranges, and the conditionals printed (integer min and max, selects,
     * ifs) that their ranges did not decide are counted. */
    struct { const char *var; int64_t lo, hi; } ovr[SC_MAX_DIMS];
    int novr;
    int64_t undecided;
    /* Split launches (cg_target.split_on_cpu): the kernel being printed
     * launched over some of its blocks, bid_map its bid (printed) from the
     * launch's group index, the variable bid_group; the interior copy's
     * name has name_suffix; the launches so far. */
    const char *bid_map, *bid_group;
    const char *name_suffix;
    cg_launch *launches;
    int nlaunches, caplaunches;
    int64_t pow2_shifts;          /* divisions and modulos by 2^k printed as shifts and masks */
    int64_t rows_apart;           /* accesses printed (a + row)[x] (cg_access) ... */
    int64_t rows_apart_edge;      /* ... of them in an edge copy (edge_copy) */
    int64_t pointer_selects;      /* selects printed as a load through a selected pointer */
    int64_t private_picks;        /* private arrays' reads printed as a select over variables (cg_expr.c) */
    int64_t data_picks;           /* ... over temporaries' values (cg_expr.c, generation 25) */
    int64_t guarded_mins;         /* private arrays' indices printed by counters through a
                                   * guarded min (cg_expr.c, generation 23) */
    bool edge_copy;               /* printing the edge blocks' copy of a kernel with an interior one */
    bool probing;                 /* printing into scratch, dropped (push_interior): not counted */
    bool whole_guards;            /* count an if as one conditional, its conjuncts decided or not
                                   * (the interior finder before CG_GENERATION_PARTIAL_GUARDS) */
    bool guards_probe;            /* only compare the two finders (cg_decides_guards_apart) ... */
    bool guards_apart;            /* ... which found other interior blocks for some kernel */
};

void *cg_grow(void *p, size_t n);          /* realloc, aborting when out of memory */
_Noreturn void cg_bug(const char *what, const char *name);
void cg_put_indent(cg_ctx *g);
/* The next of CG_SCRATCH_N rotating buffers of CG_SCRATCH bytes. */
char *cg_scratch(cg_ctx *g);
void cg_mark(cg_ctx *g, const void *alloc_or_param);
/* codegen.c: the helper functions used so far. */
void cg_helpers(cg_ctx *g);
/* Whether an integer or bool node is one constant (its value: lo). */
static inline bool cg_folds(const cg_node *n)
{
    return n->e->type != SC_F32 && n->lo == n->hi && n->e->kind != E_VAR;
}

/* cg_expr.c.  A statement's expressions: cg_st_begin, cg_st_root for
 * each (uses: how often the statement prints it), cg_st_hoist for each
 * (prints the temporaries it needs), then cg_expr to print them. */
void cg_st_begin(cg_ctx *g);
int cg_st_root(cg_ctx *g, const sc_expr *e, int uses);
void cg_st_hoist(cg_ctx *g, int id);
/* Prints node id; `top` drops the outer parentheses of an infix form. */
void cg_expr(cg_ctx *g, int id, bool top);
/* The flat element index of coordinates coord (nodes) in a, whose mins
 * are the nodes min. */
void cg_index(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min);
/* Prints the access a[index of coord] (cg_index), or, where
 * cg_target.row_apart_on_cpu asks for it, (a + rows)[x]: the first
 * coordinate's term alone in the brackets. */
void cg_access(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min);
void cg_int(cg_ctx *g, sc_type t, int64_t v);

/* A variable in scope with its value range (i32). */
void cg_env_push(cg_ctx *g, const char *name, int64_t lo, int64_t hi);
/* Whether node id, as printed, may differ between the work-items of a
 * group that differ in local id 0 alone, the lanes PoCL vectorizes over:
 * it reads tid or tid0, a variable defined from them (cg_var.lane) or
 * one not in scope, or loads. */
bool cg_lane_varying(cg_ctx *g, int id);
/* Whether the code printed asks which values vary between lanes (OpenCL
 * for a CPU: cg_target.select_pointer_on_cpu); elsewhere cg_var.lane
 * stays false, unread. */
static inline bool cg_tracks_lanes(const cg_ctx *g) { return g->t->select_pointer_on_cpu && g->prog->cpu; }
/* Node id's linear form (cg_var.lin) stored in g->lins: its index, or -1
 * where it is none. */
int cg_lin_of(cg_ctx *g, int id);
/* Where node id, as printed, is min(a, k) of i32 with a linear and k a
 * constant, and the back end prints loops counted (OpenCL): v->cmin_lin
 * and v->cmin_k for the LET v of it (cg_var.cmin_lin); else v unchanged. */
void cg_clamped_min_of(cg_ctx *g, int id, cg_var *v);

/* cg_range.c */
void cg_type_range(sc_type t, int64_t *lo, int64_t *hi);   /* bool: [0, 1] */
bool cg_fits(sc_type t, int64_t lo, int64_t hi);
/* Sets the range (or f32 constant) of node id from its operands'. */
void cg_node_range(cg_ctx *g, int id);
int64_t cg_wrap(int64_t v, sc_type t);        /* an integer wrapped to t */

/* codegen.c: generating for the queries of cg_changes.c. */
/* What cg_generate_probe prints: the file, or (a probe) only the kernels with
 * block bases that split_worthy takes (PROBE_SPLITS), or those of them
 * it takes for a guarded narrow store alone (PROBE_NARROW_SPLITS), or
 * of the kernels with block bases and a guard on a conjunction, only
 * whether generation 21's interior finder finds the same blocks
 * (PROBE_GUARDS: counts->guards_apart). */
typedef enum { PROBE_NONE, PROBE_SPLITS, PROBE_NARROW_SPLITS, PROBE_GUARDS } split_probe;
/* What a file's code prints, counted (cg_generate_probe). */
typedef struct {
    int64_t pow2_shifts;                 /* divisions and modulos by 2^k as shifts and masks */
    cg_opencl_forms opencl;              /* OpenCL's forms (cg_opencl_forms_of) */
    bool guards_apart;                   /* PROBE_GUARDS: the finders differ */
} code_counts;
/* The file for prog; *counts (may be NULL) gets what it prints counted,
 * *launches (may be NULL) the launches that run it (cg_launch, malloc'd).
 * With a probe, only its kernels are printed, up to the first split (or
 * difference), and no file: NULL, and the launches so far. */
char *cg_generate_probe(const lower_program *prog, cg_backend backend, cg_math math, code_counts *counts,
                        cg_launch **launches, int *nlaunches, split_probe probe);
/* Whether a CPU's OpenCL code launches kernel k's interior blocks apart
 * where it has them; *narrow (may be NULL): only for a guarded narrow store. */
bool cg_split_worthy(const lower_kernel *k, bool *narrow);

#endif
