/*
 * feat_access.h - the accesses of one stage as affine forms of its loops,
 * for the featurizer (features.c).
 *
 * A stage's expression is walked with inline Funcs substituted (those the
 * state decides inline; none when the state is NULL), and every call of a
 * Func or input that remains is one access: per producer coordinate, the
 * coefficient of each of the stage's loops (ir_stage_loops order) and a
 * constant.  min / max / clamp against a constant, and select between two
 * forms with the same coefficients, are 1-Lipschitz: the form of the
 * clamped argument is kept (exact away from the edges, where a clamped
 * stencil reads).  Division by a positive constant c gives coefficients
 * 1/c.  A coordinate that is none of these (data-dependent, modulo, a
 * parameter) is irregular.  Calls with the same producer and the same
 * forms are one access (code generation computes a repeated tap once);
 * so are calls of an inline Func with the same argument forms: one
 * computation (inlined_calls; the whole tree's count is
 * inlined_calls_all).
 *
 * An irregular coordinate may still be bounded: an affine form plus a
 * residual in [rlo, rhi] (either end may be infinite), from a clamp or
 * min / max of an irregular value against constants (`clamp(1 << k(t),
 * 0, 52)`: [0, 52]), a modulo by a positive constant (`x % 2`: [0, 1]),
 * and sums and constant multiples of those; clamping a bounded form that
 * moves with the loops keeps it.  The footprints (features.c) use the
 * bound, and a warp prices a narrow residual at its middle
 * (WARP_NARROW_RESIDUAL); everything else treats the coordinate as
 * irregular, as before.
 */
#ifndef SC_FEAT_ACCESS_H
#define SC_FEAT_ACCESS_H

#include <stdbool.h>
#include <stdint.h>
#include "ir.h"
#include "sched.h"

#define FEAT_MAX_LOOPS (2 * SC_MAX_DIMS)

typedef struct {
    bool ok;                          /* false: irregular */
    bool lipschitz;                   /* went through a clamp, min, max or select */
    double c[FEAT_MAX_LOOPS];         /* per stage loop */
    double off;
    bool bounded;                     /* irregular, yet within c, off plus [rlo, rhi] */
    double rlo, rhi;                  /* the residual's bounds (0, 0 when ok) */
    uint64_t id;                      /* irregular: which value (equal ids, equal values), 0 unknown */
} feat_form;

typedef struct {
    const sc_func *prod;              /* a Func or an input, never inline */
    int ndims;
    feat_form dim[SC_MAX_DIMS];
} feat_call;

typedef struct {
    int nloops;                       /* ir_stage_loops of the stage */
    int which[FEAT_MAX_LOOPS];
    int n, cap;
    feat_call *calls;                 /* malloc'd */
    int nstore;                       /* the left-hand side, as forms */
    feat_form store[SC_MAX_DIMS];
    /* calls of inline Funcs per point: distinct ones, as code generation's
     * compiler computes them (a call is distinct by its Func and the
     * forms of its arguments; a call with an irregular argument is
     * distinct each time it is made), and all of them, as the expression
     * tree repeats them */
    int64_t inlined_calls;
    int64_t inlined_calls_all;
    /* the inline Funcs expanded, each once in order of first call, and
     * the distinct calls of each per point (malloc'd; counts add up to
     * inlined_calls): the featurizer adds their operations to the stage's */
    int ninl;
    const sc_func **inl;
    int64_t *inl_calls;
    int strahler;                     /* of the expression with inlining */
    /* the producers called, in order of first call, and calls[i]'s
     * producer as an index into them (malloc'd) */
    int nprods;
    const sc_func **prods;
    int *prod_of;
} feat_stage_access;

/* The accesses of stage st of f; inline Funcs are those s decides inline
 * (s may be NULL: nothing inline).  0, or -1 when out of memory. */
int feat_stage_accesses(const sc_pipeline *p, const sched_state *s, const sc_func *f, int st,
                        feat_stage_access *out);
void feat_stage_access_free(feat_stage_access *a);
/* The same, with inline expansions memoized (what feat_stage_accesses
 * does) or expanded at every call (memo false: to check the memo). */
int feat_stage_accesses_by(const sc_pipeline *p, const sched_state *s, const sc_func *f, int st, bool memo,
                           feat_stage_access *out);

/* Whether two forms have the same coefficients (both regular). */
static inline bool feat_form_same_coefs(const feat_form *a, const feat_form *b, int nloops) {
    if (!a->ok || !b->ok) return false;
    for (int j = 0; j < nloops; j++)
        if (a->c[j] != b->c[j]) return false;
    return true;
}

#endif
