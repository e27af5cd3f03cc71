/*
 * space.h - the schedule space of Anderson et al. 2021 §6.1-6.3: for a
 * state and the next Func (outputs first), every legal compute location,
 * then the tilings of its loops; the pruning rules of §6.6 as checks that
 * can be switched on; a seeded random walk through it; and two fixed
 * strategies that give baselines.
 */
#ifndef SC_SPACE_H
#define SC_SPACE_H

#include "sched.h"

typedef struct {
    const target *t;
    bool prune;                 /* Anderson §6.6 */
} space_opts;

/* A small deterministic generator (splitmix64). */
typedef struct { uint64_t s; } space_rng;
uint64_t space_rand(space_rng *r);
int space_rand_below(space_rng *r, int n);

/* The next Func to decide (reverse topological order: consumers first),
 * or -1 when the state is complete. */
int space_next(const sc_pipeline *p, const sched_state *s);

/* The one Func that consumes f once inline consumers are looked through
 * (its stage in *stage), -1 if none, -2 if several Funcs or stages. */
int space_consumer(const sc_pipeline *p, const sched_state *s, int fid, int *stage);

/* Whether every call of f is point-wise (each coordinate a bare variable). */
bool space_pointwise(const sc_pipeline *p, int fid);

/* Legal compute locations of f (tiles unset).  Returns the count. */
int space_locations(const sc_pipeline *p, const sched_state *s, int fid,
                    const space_opts *o, sched_func *out, int max);

/* Tilings of stage st of f at location loc (ROOT: threads x serial per pure
 * loop; BLOCK: threads).  extents: the stage's pure loop extents;
 * max_threads: the block's thread budget.  Returns the count (capped). */
int space_tilings(const sc_func *f, int st, sched_loc loc, const int64_t *extents,
                  int max_threads, const space_opts *o, sched_tile *out, int max);

/* Every child of s deciding the next Func (location x tilings), at most
 * max (sampled with rng when there are more).  Returns the count. */
int space_children(ir_arena *a, const sc_pipeline *p, const bounds_result *b,
                   const sched_state *s, const space_opts *o, space_rng *rng,
                   sched_state **out, int max);

/* Whether a partial state can still be completed within o->t's limits:
 * 0 when it can (or there is no target), -1 with the limit it breaks in
 * why.  The undecided Funcs are checked as root Funcs of a warp of
 * threads, which adds nothing to the decided Funcs' kernels. */
int space_fits(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const space_opts *o,
               char *why, size_t whylen);

/* A random complete schedule that passes sched_check.  Every decision
 * is checked with space_fits and redrawn (up to 16 times) when it breaks
 * a limit; a walk that gets stuck starts again (up to 100 walks).  NULL with err if none was found. */
sched_state *space_random(ir_arena *a, sc_pipeline *p, const bounds_result *b,
                          const space_opts *o, uint64_t seed, char *err, size_t errlen);
/* `root`: every Func at root except trivial re-indexing wrappers (boundary
 * helpers), which are inlined; one 1-D tiling of up to 64 threads. */
sched_state *space_root(ir_arena *a, const sc_pipeline *p, const bounds_result *b,
                        const target *t);
/* `baseline` (after Halide's Li2018 GPU autoscheduler): inline point-wise
 * single-stage Funcs, everything else at root, 1-D tiles of 64 threads on
 * the first pure loop of extent >= 64 (else the first). */
sched_state *space_baseline(ir_arena *a, const sc_pipeline *p, const bounds_result *b,
                            const target *t);

#endif
