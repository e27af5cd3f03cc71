/*
 * bounds.h - bounds inference by interval arithmetic.
 *
 * For the output sizes declared on a pipeline, computes the region of every
 * Func (the box it must be computed over: the union of what its consumers
 * read, what its update definitions write, and what they read of the Func
 * itself) and the extent of every loop of every stage.  Exact for affine
 * accesses; data-dependent coordinates are bounded through the value range
 * of their type and through clamp / min / max / select.  An access that
 * cannot be bounded is a user error naming the Func and the expression.
 */
#ifndef SC_BOUNDS_H
#define SC_BOUNDS_H

#include <stdio.h>
#include "ir.h"

/* Closed interval of doubles; lo = -inf or hi = +inf means unbounded. */
typedef struct { double lo, hi; } bounds_interval;

typedef struct {
    int nloops;                       /* see ir_stage_loops */
    int which[2 * SC_MAX_DIMS];       /* func dim >= 0, or -1 - rdom dim */
    int64_t min[2 * SC_MAX_DIMS];
    int64_t extent[2 * SC_MAX_DIMS];
} bounds_stage;

typedef struct {
    int ndims;
    int64_t min[SC_MAX_DIMS];         /* region computed and stored */
    int64_t extent[SC_MAX_DIMS];
    int nstages;
    bounds_stage *stages;
} bounds_func;

typedef struct {
    int nfuncs;                       /* == pipeline funcs.n */
    bounds_func *funcs;               /* indexed by sc_func.id */
    /* The values every Func can hold (its definitions with all pure
     * variables unbounded, within its type), by sc_func.id. */
    bounds_interval *values;
} bounds_result;

/* NULL on error (recorded on p).  p must be structurally finalized
 * (p->order filled). */
bounds_result *bounds_infer(sc_pipeline *p);
void bounds_free(bounds_result *b);
void bounds_print(FILE *out, const sc_pipeline *p, const bounds_result *b);

/* Interval of e when every pure variable name vars[i] ranges over
 * var_iv[i] and rvars over their domains; sets *ok = false when e has no
 * finite bound.  Exposed for the tests and for later cost models. */
bounds_interval bounds_of_expr(const sc_expr *e, int nvars,
                               const char *const *vars,
                               const bounds_interval *var_iv, bool *ok);
/* The same, with the value ranges of loads taken from b instead of being
 * recomputed from the callees' definitions (faster in loops). */
bounds_interval bounds_of_expr_in(const bounds_result *b, const sc_expr *e,
                                  int nvars, const char *const *vars,
                                  const bounds_interval *var_iv, bool *ok);

#endif
