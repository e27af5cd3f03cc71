/*
 * ir.h - the pipeline IR: expressions, Funcs, stages, reduction domains.
 *
 * Memory policy.  Everything in this header lives in the arena of its
 * sc_pipeline and is freed at once by sc_pipeline_free: nodes are never
 * freed one by one, and may be shared between expressions (an expression
 * is a DAG; no node is ever mutated after its builder returns).  Analyses
 * (bounds, ops, evaluator) allocate their own results with malloc and give
 * them a destroy function; nothing they return points into another
 * analysis' memory.
 *
 * Stages.  A Func has one pure definition (stage 0) and zero or more update
 * definitions (stages 1..n), evaluated in order.  A stage's loop variables
 * are its pure variables (those of the Func's pure definition that appear
 * in the stage, in dimension order) followed by the dimensions of its
 * reduction domain (dim 0 innermost).  Pure variables of an update appear
 * unmodified at their own argument position on the left and in every
 * self-reference, so distinct pure points never interact: a stage may run
 * its pure points in any order or in parallel, and only the reduction
 * domain is ordered (lexicographically, last dimension outermost).
 */
#ifndef SC_IR_H
#define SC_IR_H

#include <stdbool.h>
#include <stdint.h>
#include "stagecraft.h"

/* ---- arena ---- */
typedef struct ir_arena ir_arena;
ir_arena *ir_arena_new(void);
void ir_arena_free(ir_arena *a);
/* Drops everything allocated in a, keeping its memory for what is
 * allocated next (a scratch arena used again and again touches no new
 * memory). */
void ir_arena_reset(ir_arena *a);
void *ir_alloc(ir_arena *a, size_t n);          /* zeroed */
/* Not zeroed, and NULL (not an abort) when out of memory: for caches that
 * handle running out. */
void *ir_alloc_try(ir_arena *a, size_t n);
char *ir_strdup(ir_arena *a, const char *s);

typedef struct { const char *file; int line, col; } sc_loc;

typedef enum {
    E_CONST,   /* c.i (integer types, bool) or c.f (f32) */
    E_VAR,     /* name: pure variable */
    E_RVAR,    /* rdom, dim */
    E_PARAM,   /* param */
    E_BINARY,  /* op (sc_binop), args[0..1] */
    E_UNARY,   /* op (sc_unop), args[0] */
    E_CAST,    /* type, args[0] */
    E_SELECT,  /* args[0] cond, args[1] true, args[2] false */
    E_CALL,    /* func, args[0..nargs) */
    E_MATH,    /* op (sc_mathfn), args */
    E_KIND_COUNT
} ir_kind;

struct sc_expr {
    ir_kind kind;
    sc_type type;
    bool weak;              /* an untyped literal not yet combined */
    int op;
    union { int64_t i; double f; } c;
    const char *name;       /* E_VAR */
    sc_rdom *rdom;          /* E_RVAR */
    int dim;                /* E_RVAR */
    sc_param *param;        /* E_PARAM */
    sc_func *func;          /* E_CALL */
    int nargs;
    sc_expr **args;
    sc_loc loc;
};

struct sc_rdom {
    const char *name;
    int id;
    int ndims;
    int min[SC_MAX_DIMS];
    int extent[SC_MAX_DIMS];
    sc_loc loc;
};

struct sc_param {
    const char *name;
    int id;
    sc_type type;
    double value;
    sc_loc loc;
};

typedef struct {
    int nargs;
    sc_expr **args;         /* left-hand side; stage 0: E_VAR per dim */
    sc_expr *value;
    sc_rdom *rdom;          /* NULL for pure stages and pure updates */
    sc_loc loc;
} ir_stage;

typedef enum { FUNC_INPUT, FUNC_DEFINED } ir_func_kind;

struct sc_func {
    const char *name;
    int id;                 /* index in pipeline->funcs */
    ir_func_kind kind;
    sc_type type;
    int ndims;
    const char *vars[SC_MAX_DIMS];    /* pure variable names (FUNC_DEFINED) */
    int extent[SC_MAX_DIMS];          /* inputs: their size */
    int nstages;                      /* 0 until defined */
    ir_stage *stages;
    int cap_stages;
    int is_output;                    /* index+1 in outputs, or 0 */
    int out_extent[SC_MAX_DIMS];
    int input_index;                  /* inputs: index+1 among inputs, or 0 */
    int order;                        /* position in topological order */
    bool helper;                      /* made by sc_reduce or a boundary helper */
    sc_loc loc;
};

/* Growable array of pointers in the arena. */
typedef struct { void **items; int n, cap; } ir_vec;
void ir_vec_push(ir_arena *a, ir_vec *v, void *item);

struct sc_pipeline {
    ir_arena *arena;
    const char *name;
    ir_vec funcs;           /* sc_func*, inputs and Funcs, in creation order */
    ir_vec inputs;          /* sc_func*, declaration order */
    ir_vec outputs;         /* sc_func*, declaration order */
    ir_vec rdoms;           /* sc_rdom* */
    ir_vec params;          /* sc_param* */
    ir_vec errors;          /* char* (malloc'd copies live in the arena) */
    ir_vec order;           /* sc_func*, topological (producers first), after finalize */
    sc_loc loc;             /* current location */
    bool finalized;
    int uniq;               /* counter for helper names */
};

/* ---- helpers shared by all analyses ---- */

/* Visits every node of e once per occurrence (pre-order). */
typedef void (*ir_visit_fn)(const sc_expr *e, void *user);
void ir_visit(const sc_expr *e, ir_visit_fn fn, void *user);

/* Stage loop variables, see the header comment.  Returns the count and
 * fills which[i]: the Func dimension a pure loop indexes (>= 0), or
 * -1 - d for dimension d of the reduction domain. */
int ir_stage_loops(const sc_func *f, int stage, int *which);

/* Whether update stage `stage` of f accumulates in place: it has a
 * reduction domain, writes each point at its own pure variables (f(x, y)
 * = ..., no coordinate computed from the domain) and reads f only at that
 * same point (sgemm, convolutions, maxima; not scans, f(x, r) = f(x, r -
 * 1) ..., nor scatters, h(v(r)) += 1).  Such a stage keeps a running value
 * per point, which an unrolled tile holds in registers (features.c). */
bool ir_stage_accumulates(const sc_func *f, int stage);

/* Whether update stage `stage` of f scatters: a coordinate it writes is
 * computed from values it loads (h(clamp(i32(v(r)), 0, 255)) += 1,
 * bilateral_grid's histogram(x, y, zi(x, y, r), c)), so that where each
 * step writes is known only at run time. */
bool ir_stage_scatters(const sc_func *f, int stage);

/* Whether lowering runs the reduction loops of update `stage` of f around
 * a thread's serial tile when the tile has more than one point: an update
 * with a reduction domain that does not scatter (nest_reduction_around_tile
 * adds the tile; the Halide export follows it). */
bool ir_stage_reduction_around(const sc_func *f, int stage);

/* Whether e is pow(a, 2.0), a square: every back end computes it as a * a
 * (a once), which is pow's value bit for bit (a float's square is exact
 * in double, so the reference's pow in double returns it exactly and
 * rounds it to f32 once, as the product does), and the operation counts
 * count it as one multiplication (analysis.h). */
bool ir_expr_is_square(const sc_expr *e);

/* Expression printing in .pipe syntax (fully explicit); returns a malloc'd
 * string. */
char *ir_expr_to_string(const sc_expr *e);

/* Whether two expressions are structurally equal. */
bool ir_expr_equal(const sc_expr *a, const sc_expr *b);
/* A structural hash: equal expressions hash alike (to compare hashes
 * before calling ir_expr_equal). */
uint64_t ir_expr_hash(const sc_expr *e);
/* Its parts, for a hash of a tree that is not built (a substitution's):
 * ir_expr_hash(e) folds, with ir_hash_mix, ir_expr_node_hash(e) (the node
 * without its arguments) and each argument's ir_expr_hash in order. */
uint64_t ir_expr_node_hash(const sc_expr *e);
uint64_t ir_hash_mix(uint64_t h, uint64_t v);

/* A substitution of pure variables by name (names[i] -> vals[i]) and of
 * the dimensions of one reduction domain (rvar d of rdom -> rvals[d]; NULL
 * rdom or rvals[d]: left alone). */
typedef struct {
    int n;
    const char *names[2 * SC_MAX_DIMS];
    sc_expr *vals[2 * SC_MAX_DIMS];
    const sc_rdom *rdom;
    sc_expr *rvals[SC_MAX_DIMS];
} ir_subst_map;

/* e with the substitution applied; unchanged subtrees are shared, changed
 * nodes are new nodes in arena (e itself is never written). */
sc_expr *ir_subst(ir_arena *arena, sc_expr *e, const ir_subst_map *m);

/* A shallow copy of e in arena with its own argument array, to change
 * (copy-on-write rewriting). */
sc_expr *ir_copy_node(ir_arena *arena, const sc_expr *e);

/* The i-th Func in topological order (after finalize). */
static inline sc_func *ir_order_at(const sc_pipeline *p, int i) {
    return (sc_func *)p->order.items[i];
}

const char *ir_binop_name(sc_binop op);     /* "+", "min", "<=" ... */
const char *ir_unop_name(sc_unop op);
const char *ir_math_name(sc_mathfn fn);     /* "sqrt" ... */

#endif
