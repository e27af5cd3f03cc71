/*
 * footprint.h - the box of a producer that a tile of its consumer reads.
 *
 * One algebra used by lowering (which needs the box's origin as an
 * expression to put in the code) and by the loop-nest model (which needs
 * only its extents, thousands of times a second, and so builds nothing).
 *
 * A tile of a consumer stage is a box over its pure loop variables:
 * variable i covers sym_i + [lo_i, hi_i], sym_i an opaque symbol (in
 * lowering, the variable holding the tile's base) or none (a constant
 * tile).  The range of one call argument over the tile is found as
 * `sym + [lo, hi]` with sym built from the tile's symbols: sums, constant
 * multiples and floor divisions by constants stay exact up to a unit;
 * min/max/clamp against constants are 1-Lipschitz, so clamp(S + o) lies in
 * clamp(S) + [min(lo, 0), max(hi, 0)], which lets the taps of a clamped
 * stencil share one symbol.  Per producer dimension the calls are united
 * when their symbols agree; anything else falls back to the constant
 * interval bounds inference gives over the consumer's whole region.  The
 * box is finally clipped into the producer's own region (so computing all
 * of it never reads out of bounds):
 *     ext' = min(ext, region extent)
 *     min' = max(min(sym + lo, region max - ext' + 1), region min).
 *
 * Symbols carry a 64-bit structural hash, so that equality is decided the
 * same way whether or not expressions are built: with an arena the
 * functions build sc_expr symbols (lowering), without one they only hash
 * (the model).  Tile symbols must have distinct non-zero hashes.
 */
#ifndef SC_FOOTPRINT_H
#define SC_FOOTPRINT_H

#include <stdbool.h>
#include <stdint.h>
#include "bounds.h"
#include "ir.h"

typedef struct {
    int n;
    const char *names[2 * SC_MAX_DIMS];   /* the consumer's pure variables */
    sc_expr *sym[2 * SC_MAX_DIMS];        /* lowering: the symbol, or NULL */
    uint64_t h[2 * SC_MAX_DIMS];          /* its hash; 0: constant tile */
    int64_t lo[2 * SC_MAX_DIMS], hi[2 * SC_MAX_DIMS];
    const sc_func *f;                     /* the consumer, for the fallback */
    int stage;
} fp_box;

/* sym + [lo, hi]; h == 0 means no symbol (a constant range).  affine: the
 * symbol is a sum of constant multiples of tile symbols (no min, max or
 * division), so a call's offset from the origin is a constant once the
 * tile's loops are unrolled (register staging needs that). */
typedef struct {
    bool ok, affine;
    sc_expr *sym;
    uint64_t h;
    int64_t lo, hi;
} fp_span;

/* The range of one coordinate expression over the box.  arena: where
 * symbols are built (lowering), or NULL (hashes only). */
fp_span fp_arg(ir_arena *arena, const sc_expr *e, const fp_box *box);

/* The range bounds inference gives e over the whole region of box->f:
 * the always-correct fallback.  !ok when e cannot be bounded. */
fp_span fp_fallback(const bounds_result *b, const sc_expr *e, const fp_box *box);

/* Shortcuts a caller that has seen the calls before may give (NULL: none):
 * arg(user, i, d) == fp_arg(NULL, calls[i]->args[d], boxes[i]) and
 * fallback(user, i, d) == fp_fallback(b, calls[i]->args[d], boxes[i]),
 * remembered or computed faster (the model; lowering gives none). */
typedef struct {
    fp_span (*arg)(void *user, int i, int d);
    fp_span (*fallback)(void *user, int i, int d);
    void *user;
} fp_hooks;

/* The union box of prod over calls[0..n) (calls[i] evaluated in
 * boxes[i]; several boxes for a Func fused into several consumers),
 * unclipped, per producer dimension.  0, or -1 with a message. */
int fp_union(ir_arena *arena, const bounds_result *b, const sc_func *prod, int n,
             const sc_expr *const *calls, const fp_box *const *boxes, fp_span *dims,
             const fp_hooks *hooks, char *err, size_t errlen);

/* The union of calls when every coordinate shares one affine symbol per
 * dimension (register staging); false otherwise.  Not clipped. */
bool fp_affine_union(ir_arena *arena, const sc_func *prod, int n, const sc_expr *const *calls,
                     const fp_box *box, fp_span *dims, const fp_hooks *hooks);

/* The clipped extent of span s in dimension d of prod's region (inline:
 * the model asks it for every access of every box). */
static inline int64_t fp_clip_extent(const bounds_result *b, const sc_func *prod, int d, const fp_span *s) {
    int64_t rext = b->funcs[prod->id].extent[d];
    int64_t e = s->hi - s->lo + 1;
    if (e > rext) e = rext;
    if (e < 1) e = 1;
    return e;
}
/* The clipped origin: an expression (arena given; a constant node when s
 * has no symbol) or, without arena, NULL with *value set when constant. */
sc_expr *fp_clip_origin(ir_arena *arena, const bounds_result *b, const sc_func *prod, int d,
                        const fp_span *s, int64_t ext, int64_t *value);

/* A coordinate compiled for a stage's boxes (the model evaluates the same
 * call arguments over many boxes): fp_run(p, e, box) == fp_arg(NULL, e,
 * box) for any box whose names are the `names` compiled against, in the
 * same order.  Programs too long or deep fall back to fp_arg. */
#define FP_PROG_MAX 64
#define FP_STACK_MAX 16
typedef struct { int kind, op; int64_t a, b; } fp_instr;
typedef struct { int n; fp_instr *code; } fp_prog;
fp_prog fp_compile(ir_arena *arena, const sc_expr *e, int nnames, const char *const *names);
fp_span fp_run(const fp_prog *p, const sc_expr *e, const fp_box *box);

/* Integer expression nodes with the folding lowering relies on (x + 0,
 * x * 1, x - 0 and constant operands fold). */
sc_expr *fp_int(ir_arena *arena, int64_t v);
sc_expr *fp_bin(ir_arena *arena, sc_binop op, sc_expr *a, sc_expr *b);

/* Dimension d of the union of several consumer boxes' spans of prod
 * (sp[i * stride], i < nb; a Func fused into several consumers).  When
 * every span has the same symbol: true, *u their union.  Otherwise false,
 * and lo[i], hi[i] (arena) the bounds of span i clamped into prod's
 * region, *least the least of the lo[i]: the caller finds the hull's
 * largest extent e over its tiles and takes fp_hull_span. */
bool fp_same_union(ir_arena *arena, const bounds_result *b, const sc_func *prod, int d, int nb,
                   const fp_span *sp, int stride, fp_span *u, sc_expr **lo, sc_expr **hi, sc_expr **least);
/* The hull's span: origin least, extent e; the whole region when e < 1
 * (the extent could not be found). */
fp_span fp_hull_span(const bounds_result *b, const sc_func *prod, int d, sc_expr *least, int64_t e);

/* Evaluates an integer index expression (constants, variables, + - * min
 * max, floor division and Euclidean modulo with x / 0 = 0, the pipeline's
 * semantics): var gives a variable's value.  false when something cannot
 * be evaluated (a float, an unknown variable, another operation). */
typedef bool (*fp_var_fn)(void *user, const sc_expr *var, int64_t *out);
bool fp_ieval(const sc_expr *e, fp_var_fn var, void *user, int64_t *out);

/* Hash helpers for tile symbols: a distinct non-zero hash per key. */
uint64_t fp_hash_leaf(uint64_t key);

#endif
