/*
 * inlined.h - a pipeline's stages after inlining, for the loop-nest model
 * (nest.h): per Func and set of inline Funcs, each stage's distinct calls
 * (composed from the inline Funcs' own call lists, deduplicated by
 * structural hashing, never by walking the inlined tree), its accesses
 * (calls grouped by value, with their Jacobians) and each coordinate
 * either recognised as "pure loop variable + constant" or compiled to a
 * small program (footprint.h's fp_compile), all computed once per set of
 * inline Funcs a stage expands (an inline Func's own entry serves every
 * Func that inlines it).
 *
 * Memory: an inlined_cache (explicit create/destroy) keeps everything in
 * its arena; entries live until it is freed.  One cache per thread.
 */
#ifndef SC_INLINED_H
#define SC_INLINED_H

#include <stdbool.h>
#include <stdint.h>
#include "bounds.h"
#include "footprint.h"
#include "ir.h"
#include "sched.h"

/* A stage's loops (ir_stage_loops), computed once. */
typedef struct { int nloops, npure; int dims[SC_MAX_DIMS], li[SC_MAX_DIMS]; } inlined_loops;

/* A Func's stages after inlining, for one set of inline Funcs (the
 * arrays live in the cache's arena; fb and fb_done are made and filled
 * as inlined_fallback is asked). */
typedef struct inlined_stages {
    struct inlined_stages *next;
    int fid;
    int nsig;
    int *sig;                      /* the inline Funcs it expands, DFS order */
    uint64_t h;
    double size;                   /* largest stage, in tree nodes */
    bool fits;                     /* size <= NEST_MAX_INLINED */
    sc_expr *val0;                 /* stage 0's value, inlined (made on demand) */
    bool *uses;                    /* [d]: stage 0's inlined value uses variable d */
    int *ncalls;                   /* [stage] distinct calls, first seen first */
    const sc_expr ***calls;
    const sc_func ***callee;       /* [stage][call] its producer (calls[..]->func, side by side) */
    fp_span **fb;                  /* [stage][call * SC_MAX_DIMS + d] fallback spans */
    signed char **lin_k;           /* [stage][call * SC_MAX_DIMS + d]: the coordinate is
                                      pure loop k's variable + lin_c, or -1 */
    int64_t **lin_c;
    fp_prog **prog;                /* [stage][call * SC_MAX_DIMS + d]: the others compiled */
    unsigned char **fb_done;
    int *nacc;                     /* [stage] accesses: calls distinct by value */
    struct inlined_access **acc;
} inlined_stages;

/* One access: a call standing for `count` structurally distinct calls
 * with the same producer and the same affine, unclamped Jacobian rows and
 * offsets (x - 2 - 2 and x - 4), with its Jacobian (a pure function of
 * the expression, so computed once). */
typedef struct inlined_access {
    const sc_expr *call;
    const sc_func *producer;       /* call->func */
    int index;                     /* in the stage's calls */
    int count;
    bool affine, plain;            /* plain: affine and unclamped */
    double *coef;                  /* [d * nloops + l] */
    double *off;                   /* [d] */
} inlined_access;

typedef struct inlined_cache inlined_cache;

inlined_cache *inlined_cache_new(const sc_pipeline *p);
void inlined_cache_free(inlined_cache *c);

/* Stage st of Func fid's loops (ir_stage_loops: their count, and the pure
 * ones' dimensions and loop indices). */
const inlined_loops *inlined_loops_of(const inlined_cache *c, int fid, int st);

/* The stages of Func fid (decided, not inline) under s's inline
 * decisions, with their calls and accesses (when they fit:
 * size <= NEST_MAX_INLINED).  Cached; the model may fill its fallbacks. */
inlined_stages *inlined_stages_of(inlined_cache *c, const sched_state *s, int fid);

/* fp_fallback (footprint.h) of coordinate d of call `call` of stage
 * box->stage of e over box: it depends on the expression and the
 * consumer's region only, so it is computed once and kept in e. */
fp_span inlined_fallback(inlined_cache *c, const bounds_result *b, const inlined_stages *e, const fp_box *box,
                         int call, int d);

/* Lookups since the cache was made: found, and built. */
void inlined_cache_stats(const inlined_cache *c, int64_t *hits, int64_t *misses);

#endif
