/*
 * fusion.h - the consumer graph of a pipeline and the fusion rules: who
 * calls whom (looking through the Funcs a state inlines), where a Func may
 * be fused (sched.h: at BLOCK or THREAD of a Func A when every consumer
 * is A itself or is computed inside A through fused Funcs of the same
 * level; the lowest such A is the lowest common ancestor of the
 * consumers), and the pure loops of a stage.
 *
 * It sits below the loop-nest model (nest/), which builds its kernels'
 * groups of fused Funcs from it, and below the legality module (legal.h),
 * which adds the target's limits and the search's pruning on top of the
 * model; lowering asks the same functions through legal.h.
 *
 * Memory: a fusion_graph is malloc'd (fusion_graph_new / _free); its walks
 * use scratch inside it, so one graph serves one thread.
 */
#ifndef SC_FUSION_H
#define SC_FUSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bounds.h"
#include "ir.h"
#include "sched.h"

/* Inlining can grow expressions exponentially (a pyramid of inline
 * levels): lowering and the model refuse a stage over this many nodes. */
#define FUSION_MAX_INLINED 200000

typedef struct fusion_graph fusion_graph;

/* A consumer: a stage of a Func that calls the Func asked about. */
typedef struct { int func, stage; } fusion_use;

/* The call graph of p (finalized). */
fusion_graph *fusion_graph_new(const sc_pipeline *p);
void fusion_graph_free(fusion_graph *g);

/* The pure loops of stage st of f (ir_stage_loops order): dims[k] is the
 * Func dimension of the k-th pure loop.  Returns their count. */
int fusion_pure_dims(const sc_func *f, int st, int *dims);
/* The extents of those loops over the stage's whole region (>= 1). */
int fusion_pure_extents(const bounds_result *b, const sc_func *f, int st, int64_t *ext);
/* Whether f's updates write only at their pure point (fusion needs it). */
bool fusion_pure_updates(const sc_func *f);

/* The consumers of fid in s once the Funcs s inlines are looked through (a
 * call inside an inline Func counts as a call by each of its callers;
 * self-references of updates do not count), distinct, in (func, stage)
 * order.  out has room for fusion_max_uses(g) entries.  Returns the count. */
int fusion_consumers(fusion_graph *g, const sched_state *s, int fid, fusion_use *out);
int fusion_max_uses(const fusion_graph *g);

/* May fid be computed at loc (SCHED_BLOCK or SCHED_THREAD) of `at` in s
 * (its consumers decided)?  0 with the stage of `at` it is computed in
 * (*stage, may be NULL), or -1 with a message naming fid and the rule
 * (err may be NULL). */
int fusion_check(fusion_graph *g, const sched_state *s, int fid, sched_loc loc, int at, int *stage,
                 char *err, size_t errlen);
/* The lowest Func fid may be fused into at loc in s, or -1. */
int fusion_lca(fusion_graph *g, const sched_state *s, int fid, sched_loc loc);
/* The stage of s->f[fid]->at that the fused Func fid is computed in, or
 * -1 when its placement breaks the rules. */
int fusion_stage_at(fusion_graph *g, const sched_state *s, int fid);

/* How many times fid's value is evaluated per point of its region once
 * the inline Funcs of s are substituted into their callers (undecided
 * Funcs count as not inline): the call sites of every non-inline stage
 * that reaches fid through inline Funcs, times that stage's points over
 * its whole region (reduction loops included), over fid's region.  1
 * when fid is not inline. */
double fusion_inline_evaluations(fusion_graph *g, const bounds_result *b, const sched_state *s, int fid);
/* The arithmetic operations of f's definitions outside call arguments:
 * what an inline expansion of f computes again at every evaluation (0 for
 * a Func that only reads another, a boundary condition). */
int fusion_value_ops(const sc_func *f);

/* Tree size of e once the inline Funcs of s are substituted: each
 * occurrence of an inline call costs its Func's size (func_size: the size
 * of its value, itself inlined) plus its arguments once per use.  The
 * one measure lowering's limit (FUSION_MAX_INLINED), the model and the
 * search's pruning use. */
typedef double (*fusion_size_fn)(void *user, const sc_func *g);
double fusion_inlined_size(const sched_state *s, const sc_expr *e, fusion_size_fn func_size, void *user);
/* The largest stage expression of a non-inline Func of s so measured
 * (undecided Funcs count as not inline); *worst gets that Func (may be
 * NULL). */
double fusion_max_inlined_size(const sc_pipeline *p, const sched_state *s, int *worst);

#endif
