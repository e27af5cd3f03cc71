/*
 * space.h - the schedule space of Anderson et al. 2021 §6: states are
 * extended one decision at a time, Funcs from the outputs to the inputs,
 * in two phases per Func:
 *   (a) its compute location: inline, root, or block / thread level of the
 *       lowest common ancestor of its consumers' compute chains (legal.h);
 *   (b) for a root or block-level Func, the tiling of each stage in turn
 *       (the Func's record has `pending` stages untiled meanwhile):
 *       root: per pure loop a serial size (1, 2, 4, 8 up to the extent,
 *       and 3, 5, 7 where the extent left is a warp multiple), then a
 *       thread count computed from the extent left after the serial split
 *       (16, 32, 64 and the warp size in the innermost loop - the first of
 *       extent >= 16 - and powers of two up to 16 elsewhere, each at most
 *       the extent left or the smallest that covers it); blocks take the
 *       rest.  On a CPU, an update whose reduction runs around its serial
 *       tile may also take 16, 32 or 64 serial points on 1 to 16 threads
 *       innermost (a loop the device compiler vectorizes, never pruned as
 *       not unrolled).  Block level: thread counts per loop only (powers of two up
 *       to 64 innermost and 16 elsewhere); the serial extent follows from
 *       the footprint.
 * Every child is produced (no cap, no sampling), in the same order every
 * time, and every child passes legal_fits; the §6.6 pruning is a switch.
 * The root location with the default tiling (legal_default_tile) is
 * always a legal child, so a state always has one until it is complete.
 */
#ifndef SC_SPACE_H
#define SC_SPACE_H

#include "legal.h"
#include "sched.h"

typedef struct {
    const target *t;
    bool prune;                 /* Anderson §6.6 (and warp-multiple blocks) */
    bool unroll_whole;          /* a root loop of extent 3 to 7 may also be unrolled whole (false) */
} space_opts;

/* A command's choice of space_opts.unroll_whole: SPACE_UNROLL_WHOLE_BY_TARGET
 * (the commands' default) offers it on a CPU target, where one-shot with it
 * beat the baseline on 15 of 18 apps in each of three runs against 14, 14
 * and 16 (two ties) without it (the eightieth run, docs/autosched_runs_5.md),
 * and not on a GPU, whose models never saw such schedules; 0 off, 1 on. */
#define SPACE_UNROLL_WHOLE_BY_TARGET (-1)
static inline bool space_unroll_whole_for(int choice, const target *t) {
    return choice == SPACE_UNROLL_WHOLE_BY_TARGET ? t->cpu : choice > 0;
}

/* A small deterministic generator (splitmix64). */
typedef struct { uint64_t s; } space_rng;
uint64_t space_rand(space_rng *r);
int space_rand_below(space_rng *r, int n);
int64_t space_rand_below64(space_rng *r, int64_t n);

/* The legality context the space asks, for o (warp multiples when
 * pruning).  legal_free it. */
legal_ctx *space_legal(const sc_pipeline *p, const bounds_result *b, const space_opts *o);

/* The Func the next decision is about: one whose stages are being tiled
 * (phase b), else the next undecided Func (reverse topological order,
 * phase a); -1 when the state is complete.  *tiling (may be NULL) tells
 * the phase. */
int space_next(const sc_pipeline *p, const sched_state *s, bool *tiling);

/* Whether every call of f is point-wise (each coordinate a bare variable). */
bool space_pointwise(const sc_pipeline *p, int fid);

/* An enumeration of the children of one state.  Reentrant: everything it
 * needs is in the struct. */
#define SPACE_MAX_OPTS 48
typedef struct {
    legal_ctx *x;
    const sc_pipeline *p;
    const bounds_result *b;
    const sched_state *s;
    const space_opts *o;
    int fid;                    /* the Func decided, -1 when s is complete */
    bool tiling;                /* phase b */
    /* phase a: the legal locations, in order inline, root, block, thread */
    int nlocs, iloc;
    sched_func *locs[4];        /* in the arena given to space_enum_begin */
    /* phase b: stage st at loc (at), a mixed-radix counter over the loops'
     * (serial, threads) options */
    int st, np;
    sched_loc loc;
    int at;
    int nopt[SC_MAX_DIMS], digit[SC_MAX_DIMS];
    int sopt[SC_MAX_DIMS][SPACE_MAX_OPTS], topt[SC_MAX_DIMS][SPACE_MAX_OPTS];
    bool started, done;
    int lanes;                  /* a CPU's vector lanes rule (enumerate.c, cpu_lanes): the
                                   least threads of the innermost loop, 0 where not in force */
    bool vector_tile;           /* a CPU's serial vector tiles (enumerate.c, cpu_vector_tile) */
    int ntilings;               /* tilings returned */
    sched_tile cur;
} space_enum;

/* Starts enumerating the children of s; the location records are made in
 * the arena (they are the children's records, so what x measured of them
 * stays valid).  Returns the Func they decide, or -1 when s is complete. */
int space_enum_begin(space_enum *e, ir_arena *a, legal_ctx *x, const sc_pipeline *p, const bounds_result *b,
                     const sched_state *s, const space_opts *o);
/* The next child (in the arena), or NULL after the last. */
sched_state *space_enum_next(space_enum *e, ir_arena *a);
/* Skips the next child; false after the last. */
bool space_enum_skip(space_enum *e);

/* The tilings of the stages of one pipeline, kept for a search that
 * enumerates the same stages' tilings again and again: a ROOT stage's
 * legal tilings depend on the stage alone, and a BLOCK stage's on one
 * limit that the state sets (legal_block_threads).  For p, b and the
 * options o (copied); the legality ctxs it is given must be
 * space_legal(p, b, o)'s.  Explicit create/destroy; one per thread. */
typedef struct space_tilings space_tilings;
space_tilings *space_tilings_new(const sc_pipeline *p, const bounds_result *b, const space_opts *o);
void space_tilings_free(space_tilings *c);
/* The tilings of stage fid of s (fid: the Func s tiles next, space_next),
 * exactly the ones space_enum_skip steps through, in its order.  *out
 * points into c, valid until the next call; returns their count. */
int space_tilings_of(space_tilings *c, legal_ctx *x, const sched_state *s, int fid, const sched_tile **out);

/* Every child of s, appended to out (states in the arena).  Returns how
 * many, 0 when s is complete. */
int space_children(ir_arena *a, legal_ctx *x, const sc_pipeline *p, const bounds_result *b,
                   const sched_state *s, const space_opts *o, ir_vec *out);

/* Whether a partial state can still be completed within o->t's limits:
 * 0 when it can (or there is no target), -1 with the limit it breaks in
 * why (legal_fits). */
int space_fits(const sc_pipeline *p, const bounds_result *b, const sched_state *s, const space_opts *o,
               char *why, size_t whylen);

/* A random complete schedule: from the empty state, each step draws one of
 * the enumerated children uniformly (every child is legal: there is no
 * redraw and no restart).  NULL with err only for a pipeline the space
 * cannot schedule at all. */
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
/* A re-tiling of base (its locations kept), for samples that tell the
 * cost model what a root stage's block shape does: seed's generator
 * draws a block shape (threads along the stage's first two pure loops of
 * extent 8 or more, 8 to 512 along the first and 1 to 16 along the
 * second, at most 1,024 in all, each at most the loop's extent) and
 * serial points a thread (1 to 4 along the first, 1 to 8 along the
 * second, none half the time), and gives it either to every root stage
 * of base or to one of them drawn at random (half the seeds each).  The
 * state may break the target's limits: callers check it (sched_check).
 * NULL where base has no root stage with such a loop. */
sched_state *space_retile(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const sched_state *base,
                          uint64_t seed);

/* The reference schedule, the one other schedules are timed against in
 * turn: the baseline, else root, the first that passes sched_check for t
 * (warp_multiple: as there); NULL when neither does.  fixed (may be NULL)
 * gets both, baseline and root, each NULL where it does not pass. */
sched_state *space_reference(ir_arena *a, const sc_pipeline *p, const bounds_result *b, const target *t,
                             bool warp_multiple, sched_state *fixed[2]);

#endif
