/*
 * stagecraft.h - the public C API of stagecraft.
 *
 * A pipeline is a DAG of Funcs over integer coordinates, in the style of
 * Halide.  Everything the .pipe language can say can be built here; the
 * parser (src/front/parse.c) is itself a client of this API.
 *
 * Memory: an sc_pipeline owns every expression, Func, reduction domain and
 * parameter built on it (one arena, freed by sc_pipeline_free).  Buffers
 * (sc_buffer) are created and destroyed explicitly by their user.
 *
 * Errors: builders never exit.  A builder that meets bad input records an
 * error message on the pipeline (with the current source location, see
 * sc_pipeline_set_loc) and returns NULL (or -1).  Every builder accepts NULL
 * operands and then returns NULL without recording a second error, so a
 * client may build a whole expression and check once.
 */
#ifndef STAGECRAFT_H
#define STAGECRAFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SC_MAX_DIMS 6

/* Scalar types.  SC_BOOL is the type of comparisons; it is not storable. */
typedef enum {
    SC_BOOL, SC_U8, SC_U16, SC_U32, SC_I8, SC_I16, SC_I32, SC_F32,
    SC_TYPE_COUNT
} sc_type;

const char *sc_type_name(sc_type t);          /* "u8", "f32", "bool" ... */
int sc_type_bits(sc_type t);                  /* 1, 8, 16, 32 */
int sc_type_is_float(sc_type t);
int sc_type_is_signed(sc_type t);             /* i8..i32 and f32 */
size_t sc_type_size(sc_type t);               /* bytes in storage */

typedef struct sc_pipeline sc_pipeline;
typedef struct sc_func sc_func;
typedef struct sc_expr sc_expr;
typedef struct sc_rdom sc_rdom;
typedef struct sc_param sc_param;

/* Binary operators.  Integer division and modulo are Euclidean: the
 * remainder is always in [0, |b|) (so division rounds toward minus infinity
 * for a positive divisor); x / 0 == 0 and x % 0 == 0.  Integer results wrap
 * to their type. */
typedef enum {
    SC_ADD, SC_SUB, SC_MUL, SC_DIV, SC_MOD, SC_MIN, SC_MAX,
    SC_EQ, SC_NE, SC_LT, SC_LE, SC_GT, SC_GE,
    SC_AND, SC_OR,                             /* bool operands */
    SC_BITAND, SC_BITOR, SC_BITXOR, SC_SHL, SC_SHR,
    SC_BINOP_COUNT
} sc_binop;

typedef enum { SC_NEG, SC_NOT, SC_BITNOT, SC_UNOP_COUNT } sc_unop;

/* Math functions (f32 in, f32 out, except abs which keeps its type). */
typedef enum {
    SC_SQRT, SC_EXP, SC_LOG, SC_POW, SC_FLOOR, SC_CEIL, SC_ROUND,
    SC_SIN, SC_COS, SC_TANH, SC_ATAN2, SC_ABS,
    SC_MATH_COUNT
} sc_mathfn;

typedef enum { SC_SUM, SC_MAXIMUM, SC_MINIMUM, SC_REDUCE_COUNT } sc_reduce_kind;

/* ---- pipelines ---------------------------------------------------------- */

sc_pipeline *sc_pipeline_new(const char *name);
void sc_pipeline_free(sc_pipeline *p);
const char *sc_pipeline_name(const sc_pipeline *p);

/* Source location attached to everything built (and every error recorded)
 * from now on.  file is copied.  The C API default is ("<api>", 0, 0). */
void sc_pipeline_set_loc(sc_pipeline *p, const char *file, int line, int col);

/* Record a user error at the current location (used by front ends). */
void sc_error(sc_pipeline *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int sc_error_count(const sc_pipeline *p);
/* "file:line:col: error: message" */
const char *sc_error_message(const sc_pipeline *p, int i);

/* ---- expressions -------------------------------------------------------- */

/* An integer literal: i32, but "weak": combined with an operand of another
 * type it takes that type (as Halide's integer constants do). */
sc_expr *sc_int(sc_pipeline *p, int64_t v);
/* A float literal: f32, weak against nothing (ints combined with it become f32). */
sc_expr *sc_float(sc_pipeline *p, double v);
/* A constant of a given type (not weak). */
sc_expr *sc_const(sc_pipeline *p, sc_type t, double v);
/* A pure variable (by name, i32). */
sc_expr *sc_var(sc_pipeline *p, const char *name);
/* Dimension dim of a reduction domain (i32). */
sc_expr *sc_rvar(sc_pipeline *p, sc_rdom *r, int dim);
sc_expr *sc_param_ref(sc_pipeline *p, sc_param *param);
sc_expr *sc_binary(sc_pipeline *p, sc_binop op, sc_expr *a, sc_expr *b);
sc_expr *sc_unary(sc_pipeline *p, sc_unop op, sc_expr *a);
sc_expr *sc_cast(sc_pipeline *p, sc_type t, sc_expr *a);
sc_expr *sc_select(sc_pipeline *p, sc_expr *cond, sc_expr *t, sc_expr *f);
sc_expr *sc_math(sc_pipeline *p, sc_mathfn fn, int nargs, sc_expr **args);
/* Sugar, built from the nodes above. */
sc_expr *sc_clamp(sc_pipeline *p, sc_expr *x, sc_expr *lo, sc_expr *hi);
sc_expr *sc_lerp(sc_pipeline *p, sc_expr *a, sc_expr *b, sc_expr *w);
/* A call of a Func or input at integer coordinates. */
sc_expr *sc_call(sc_pipeline *p, sc_func *f, int nargs, sc_expr **args);
/* An inline reduction over the (single) reduction domain used in body.
 * Builds a new Func named after `name` (made unique) whose pure variables
 * are the free pure variables of body, and returns a call of it. */
sc_expr *sc_reduce(sc_pipeline *p, sc_reduce_kind kind, const char *name,
                   sc_expr *body);

sc_type sc_expr_type(const sc_expr *e);

/* ---- Funcs, inputs, domains, parameters --------------------------------- */

/* A typed input of 1..4 dimensions, coordinates [0, extent) in each. */
sc_func *sc_input(sc_pipeline *p, const char *name, sc_type t, int ndims,
                  const int *extents);
/* A Func with no definition yet; define it before calling it. */
sc_func *sc_func_new(sc_pipeline *p, const char *name);
sc_func *sc_func_lookup(const sc_pipeline *p, const char *name);
const char *sc_func_name(const sc_func *f);
int sc_func_dims(const sc_func *f);
sc_type sc_func_type(const sc_func *f);

/* The pure definition f(vars...) = value; nvars 0 (vars may be NULL)
 * makes f a 0-D Func, a scalar called with no arguments.  Returns 0, or
 * -1 on error. */
int sc_define(sc_pipeline *p, sc_func *f, int nvars, const char **vars,
              sc_expr *value);
/* An update definition f(lhs...) = value.  The reduction domain (at most
 * one) is the one whose variables appear in lhs or value.  value is
 * converted to f's type only if it is a weak literal. */
int sc_update(sc_pipeline *p, sc_func *f, int nargs, sc_expr **lhs,
              sc_expr *value);

sc_rdom *sc_rdom_new(sc_pipeline *p, const char *name, int ndims,
                     const int *mins, const int *extents);
/* A scalar parameter with a value (runtime value, fixed for evaluation). */
sc_param *sc_param_new(sc_pipeline *p, const char *name, sc_type t,
                       double value);
sc_param *sc_param_lookup(const sc_pipeline *p, const char *name);
int sc_param_set(sc_param *param, double value);

/* Boundary conditions: a new Func `name` equal to src inside [0, extent)
 * and, outside, the nearest edge value (repeat_edge) or `value`
 * (constant_exterior).  For an input, extents may be NULL (its own). */
sc_func *sc_repeat_edge(sc_pipeline *p, const char *name, sc_func *src,
                        const int *extents);
sc_func *sc_constant_exterior(sc_pipeline *p, const char *name, sc_func *src,
                              sc_expr *value, const int *extents);

/* Mark f as an output computed over [0, extents[d]) in each dimension
 * (a 0-D f: ndims 0, extents may be NULL; its output is one element). */
int sc_output(sc_pipeline *p, sc_func *f, int ndims, const int *extents);

/* Checks the whole pipeline (outputs exist, no cycles, every access
 * bounded for the output sizes) and orders it.  Returns the number of
 * errors recorded in all (0 = ready to analyse and run). */
int sc_pipeline_finalize(sc_pipeline *p);

/* ---- buffers -------------------------------------------------------------- */

typedef struct {
    sc_type type;
    int ndims;
    int min[SC_MAX_DIMS];
    int extent[SC_MAX_DIMS];
    int64_t stride[SC_MAX_DIMS];   /* in elements; dim 0 is densest */
    void *data;                    /* owned by the buffer */
} sc_buffer;

sc_buffer *sc_buffer_new(sc_type t, int ndims, const int *min, const int *extent);
void sc_buffer_free(sc_buffer *b);
int64_t sc_buffer_count(const sc_buffer *b);
/* Element at coordinates as double (for tests and comparisons). */
double sc_buffer_get(const sc_buffer *b, const int *coords);
void sc_buffer_set(sc_buffer *b, const int *coords, double v);
/* Fills with a deterministic pseudo-random pattern from seed: integers
 * over their whole range (u8, u16...), i32/u32 in [0, 1024), f32 in [0, 1). */
void sc_buffer_fill_random(sc_buffer *b, uint64_t seed);

/* ---- running: the reference evaluator ------------------------------------ */

/* Evaluates a finalized pipeline.  inputs[i] is the buffer for the i-th
 * input in declaration order (NULL = seeded random fill from seed);
 * outputs[i] receives a new buffer for the i-th output.  Returns 0, or -1
 * with an error recorded on p. */
int sc_evaluate(sc_pipeline *p, sc_buffer **inputs, uint64_t seed,
                sc_buffer **outputs);

/* A new buffer for the i-th input of a finalized pipeline, filled as
 * sc_evaluate fills it for seed (each input its own stream).  NULL if it
 * cannot be allocated. */
sc_buffer *sc_input_random(const sc_pipeline *p, int i, uint64_t seed);

int sc_input_count(const sc_pipeline *p);
sc_func *sc_input_at(const sc_pipeline *p, int i);
int sc_output_count(const sc_pipeline *p);
sc_func *sc_output_at(const sc_pipeline *p, int i);

/* ---- the .pipe language ---------------------------------------------------- */

/* Settings: NAME=VALUE overrides of `size` and `param` declarations, and
 * whether the `small` sizes are used. */
typedef struct {
    int small;
    int nsets;
    const char *const *set_names;
    const double *set_values;
} sc_parse_options;

/* Parses .pipe text into a new pipeline and finalizes it.  Always returns a
 * pipeline; check sc_error_count. */
sc_pipeline *sc_parse_string(const char *filename, const char *text,
                             size_t len, const sc_parse_options *opt);
sc_pipeline *sc_parse_file(const char *path, const sc_parse_options *opt);

/* The IR as .pipe text (no templates, loops or sugar; explicit types).
 * Parsing it gives the same IR.  Caller frees. */
char *sc_pipeline_to_text(const sc_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif
