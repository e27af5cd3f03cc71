/*
 * eval.h - the reference evaluator: the oracle for all generated code.
 *
 * Computes every Func straight from its definitions over the region bounds
 * inference gives it, in topological order, stage by stage, with no
 * schedule.  Expressions are interpreted over batches of points (a run of
 * consecutive points of the stage's pure loops), not one call per point;
 * reduction domains run in order, one point at a time, each over the batch
 * of pure points.  Semantics (wrapping, rounding of division, casts) are
 * those documented in docs/language.md.
 */
#ifndef SC_EVAL_H
#define SC_EVAL_H

#include "bounds.h"

/* inputs[i]: buffer of the i-th input (extents must match the
 * declaration).  outputs[i] is set to a new buffer over [0, out_extent).
 * Returns 0, or -1 with an error recorded on p. */
int eval_pipeline(sc_pipeline *p, const bounds_result *b,
                  sc_buffer *const *inputs, sc_buffer **outputs);

#endif
