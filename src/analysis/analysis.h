/*
 * analysis.h - dependences and operation counts of a pipeline.
 *
 * deps: for every call of a producer in a consumer stage (one entry per
 * call site), the access Jacobian: the coefficient of each of the stage's
 * loop variables (ir_stage_loops order) in each producer coordinate, as a
 * rational, or "not affine" for a coordinate that is not an affine function
 * of the loop variables (data-dependent, select, ...).  Integer division
 * by a constant c counts as a coefficient of 1/c (as Anderson et al. 2021 §7
 * do for down-sampling).  min/max against a constant, hence clamp and the
 * boundary helpers (repeat_edge expands to clamps), are 1-Lipschitz: the
 * row keeps the coefficients of the clamped expression and is flagged
 * `clamped` (exact away from the edges, where the stride is what counts).
 *
 * ops: the algorithm features of Anderson et al. 2021 §7: per stage, a
 * histogram of the operations evaluated per point, by kind and scalar type.
 */
#ifndef SC_ANALYSIS_H
#define SC_ANALYSIS_H

#include <stdio.h>
#include "ir.h"

typedef struct { int64_t num, den; } deps_ratio;   /* den > 0, reduced */

typedef struct {
    int consumer;                     /* func id */
    int stage;                        /* consumer stage */
    int producer;                     /* func id (may equal consumer) */
    int rows;                         /* producer dims */
    int cols;                         /* consumer stage loops */
    bool affine[SC_MAX_DIMS];         /* per row */
    bool clamped[SC_MAX_DIMS];        /* per row: affine through a clamp */
    deps_ratio coef[SC_MAX_DIMS][2 * SC_MAX_DIMS];
    deps_ratio offset[SC_MAX_DIMS];   /* constant term, when affine */
    const sc_expr *call;
} deps_access;

typedef struct {
    int n;
    deps_access *items;
} deps_result;

deps_result *deps_analyse(const sc_pipeline *p);
/* The Jacobian row of one coordinate expression e of stage `stage` of f:
 * coef[i] per stage loop (ir_stage_loops order); false when not affine. */
bool deps_linearise(const sc_func *f, int stage, const sc_expr *e, deps_ratio *coef,
                    deps_ratio *offset, bool *clamped);
void deps_free(deps_result *d);
void deps_print(FILE *out, const sc_pipeline *p, const deps_result *d);

typedef enum {
    OPS_CONST, OPS_CAST, OPS_VAR, OPS_PARAM,
    OPS_ADD, OPS_SUB, OPS_MUL, OPS_DIV, OPS_MOD, OPS_MIN, OPS_MAX,
    OPS_EQ, OPS_NE, OPS_LT, OPS_LE, OPS_AND, OPS_OR, OPS_NOT,
    OPS_BITWISE, OPS_SHIFT, OPS_NEG, OPS_SELECT, OPS_MATH,
    OPS_LOAD_INPUT, OPS_LOAD_FUNC, OPS_LOAD_SELF, OPS_STORE,
    OPS_KIND_COUNT
} ops_kind;

const char *ops_kind_name(ops_kind k);

/* The load a call of producer makes in a stage of f: of f itself, of an
 * input, or of another Func. */
static inline ops_kind ops_load_kind(const sc_func *f, const sc_func *producer) {
    return producer == f ? OPS_LOAD_SELF : producer->kind == FUNC_INPUT ? OPS_LOAD_INPUT : OPS_LOAD_FUNC;
}

typedef struct {
    int func, stage;
    int64_t count[OPS_KIND_COUNT][SC_TYPE_COUNT];   /* per point */
} ops_stage;

typedef struct {
    int n;
    ops_stage *items;                 /* every stage of every defined Func */
} ops_result;

ops_result *ops_count(const sc_pipeline *p);
void ops_free(ops_result *o);
void ops_print(FILE *out, const sc_pipeline *p, const ops_result *o);

#endif
