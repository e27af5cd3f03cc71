/*
 * bounds.c - bounds inference by interval arithmetic.
 *
 * Two passes over the pipeline DAG:
 *   1. value bounds, producers first: the range of values every Func can
 *      hold, from its definitions with every pure variable unbounded (the
 *      coordinates it is called at are not known yet).  A gather such as
 *      lut(f(x)) is bounded through these.
 *   2. regions, consumers first: a Func must be computed over what the
 *      outputs need of it, what its consumers read of it, what its own
 *      updates write and what they read of it.  When a Func is reached all
 *      its consumers are done, so its region is final; its stages then push
 *      what they read onto their producers.
 *
 * Intervals are closed intervals of doubles, with -inf / +inf for "no
 * bound".  Doubles hold every integer a coordinate can be exactly (the
 * extents that matter are < 2^28).  32-bit integer types are treated as
 * unbounded when their value is unknown or may wrap: a coordinate ranging
 * over the whole i32 range is as useless as one with no bound at all.
 *
 * The regions and loop extents are what the evaluator allocates and runs,
 * and what the schedule space, lowering and the featurizer (the per-stage
 * point counts of Anderson et al. 2021 §7 and its Appendix A) start from.
 *
 * Every interval an expression evaluates to is memoised per node for one
 * variable environment, since expressions are DAGs (lets share nodes) and
 * a plain recursion can be exponential in them.
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "bounds.h"

/* Beyond this many points in a dimension an access is "unbounded": no
 * image pipeline means it, and buffers that large would not fit anyway. */
#define BOUNDS_MAX_EXTENT ((double)(1 << 28))

/* Rounds of the update fixpoint before a region is declared divergent. */
#define BOUNDS_MAX_ROUNDS 32

typedef bounds_interval ival;

/* ---- intervals -------------------------------------------------------- */

static ival iv(double lo, double hi) { ival r = { lo, hi }; return r; }
static ival iv_all(void) { return iv(-HUGE_VAL, HUGE_VAL); }
static ival iv_empty(void) { return iv(HUGE_VAL, -HUGE_VAL); }
static ival iv_point(double v) { return iv(v, v); }
static bool iv_is_empty(ival a) { return a.lo > a.hi; }
static bool iv_finite(ival a) { return isfinite(a.lo) && isfinite(a.hi); }
static bool iv_is_point(ival a, double v) { return a.lo == v && a.hi == v; }
static bool iv_const(ival a) { return a.lo == a.hi && isfinite(a.lo); }

static ival iv_union(ival a, ival b) {
    if (iv_is_empty(a)) return b;
    if (iv_is_empty(b)) return a;
    return iv(fmin(a.lo, b.lo), fmax(a.hi, b.hi));
}

/* NaN can only come from inf - inf or inf * 0 style corner cases; it means
 * "anything" on that side. */
static ival iv_fix(ival a) {
    if (isnan(a.lo)) a.lo = -HUGE_VAL;
    if (isnan(a.hi)) a.hi = HUGE_VAL;
    return a;
}

/* Products where 0 * inf is 0: a zero factor really is zero. */
static double mul_d(double a, double b) { return (a == 0 || b == 0) ? 0 : a * b; }

static ival iv_from4(double a, double b, double c, double d) {
    return iv_fix(iv(fmin(fmin(a, b), fmin(c, d)), fmax(fmax(a, b), fmax(c, d))));
}

static ival iv_mul(ival a, ival b) {
    return iv_from4(mul_d(a.lo, b.lo), mul_d(a.lo, b.hi), mul_d(a.hi, b.lo),
                    mul_d(a.hi, b.hi));
}

/* Exact limits of an integer type (bool is 0..1). */
static ival type_limits(sc_type t) {
    switch (t) {
    case SC_BOOL: return iv(0, 1);
    case SC_U8: return iv(0, UINT8_MAX);
    case SC_U16: return iv(0, UINT16_MAX);
    case SC_U32: return iv(0, UINT32_MAX);
    case SC_I8: return iv(INT8_MIN, INT8_MAX);
    case SC_I16: return iv(INT16_MIN, INT16_MAX);
    case SC_I32: return iv(INT32_MIN, INT32_MAX);
    default: return iv_all();
    }
}

/* What a value of type t may be when nothing else is known: narrow types
 * their range, 32-bit types unbounded (see the header comment). */
static ival type_range(sc_type t) {
    if (t == SC_U32) return iv(0, HUGE_VAL);
    if (t == SC_I32 || t == SC_F32) return iv_all();
    return type_limits(t);
}

/* The result of an integer operation of type t whose exact result lies in
 * a: integer operations wrap, so a result outside the type can be anything
 * of the type. */
static ival fit(sc_type t, ival a) {
    if (t == SC_F32 || iv_is_empty(a)) return iv_fix(a);
    a = iv_fix(a);
    a.lo = floor(a.lo);
    a.hi = ceil(a.hi);
    ival lim = type_limits(t);
    if (a.lo < lim.lo || a.hi > lim.hi) return type_range(t);
    return a;
}

/* Float arithmetic rounds; before a float is truncated to an integer the
 * interval is widened by a few ulps so that a value the real arithmetic
 * puts just below an integer cannot be rounded onto it unseen. */
static ival widen_f(ival a) {
    double eps = 1.0 / (1 << 20);
    return iv(a.lo - fabs(a.lo) * eps - 1e-30, a.hi + fabs(a.hi) * eps + 1e-30);
}

static ival iv_bool(bool can_false, bool can_true) {
    return iv(can_false ? 0 : 1, can_true ? 1 : 0);
}

/* The smallest power of two P with [-P, P-1] holding a and b, or inf. */
static double pow2_span(ival a, ival b) {
    double P = 1;
    while (P <= 0x1p62 && (-P > fmin(a.lo, b.lo) || P - 1 < fmax(a.hi, b.hi))) P *= 2;
    return P > 0x1p62 ? HUGE_VAL : P;
}

/* ---- the evaluation context ---------------------------------------------- */

typedef struct {
    const sc_expr *key;
    ival val;
    bool has_val, walked;
} memo_entry;

/* Open-addressing map from node to interval, for one environment. */
typedef struct { memo_entry *slots; size_t cap, n; } memo;

static void memo_free(memo *m) { free(m->slots); m->slots = NULL; m->cap = m->n = 0; }

static size_t memo_hash(const sc_expr *e, size_t cap) {
    uintptr_t h = (uintptr_t)e;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

/* The entry of e, inserted empty if absent.  Valid until the next call. */
static memo_entry *memo_get(memo *m, const sc_expr *e) {
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        memo_entry *old = m->slots;
        size_t oldcap = m->cap;
        m->slots = base_calloc(cap, sizeof *m->slots);
        m->cap = cap;
        for (size_t i = 0; i < oldcap; i++) {
            if (!old[i].key) continue;
            size_t j = memo_hash(old[i].key, cap);
            while (m->slots[j].key) j = (j + 1) & (cap - 1);
            m->slots[j] = old[i];
        }
        free(old);
    }
    size_t j = memo_hash(e, m->cap);
    while (m->slots[j].key && m->slots[j].key != e) j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].key) { m->slots[j].key = e; m->n++; }
    return &m->slots[j];
}

enum { VB_NONE, VB_BUSY, VB_DONE };

typedef struct {
    /* value bounds of Funcs by id, filled on demand */
    int nvb;
    ival *vb;
    unsigned char *vb_state;
    /* the environment: pure variables by name; rvars range over their
     * domains */
    int nvars;
    const char *const *vars;
    const ival *var_iv;
    memo *m;
} bctx;

static ival eval(bctx *c, const sc_expr *e);

static void vb_reserve(bctx *c, int id) {
    if (id < c->nvb) return;
    int n = c->nvb ? c->nvb : 16;
    while (n <= id) n *= 2;
    c->vb = realloc(c->vb, sizeof(ival) * (size_t)n);
    c->vb_state = realloc(c->vb_state, (size_t)n);
    if (!c->vb || !c->vb_state) abort();
    memset(c->vb_state + c->nvb, VB_NONE, (size_t)(n - c->nvb));
    c->nvb = n;
}

/* The values f can hold: the union over its stages with pure variables
 * unbounded, within its type.  A Func met again while its own bounds are
 * being computed (a self-reference in an update) counts as its type range:
 * an accumulation can climb anywhere. */
static ival value_bounds(bctx *c, const sc_func *f) {
    vb_reserve(c, f->id);
    if (c->vb_state[f->id] == VB_DONE) return c->vb[f->id];
    if (c->vb_state[f->id] == VB_BUSY || f->kind == FUNC_INPUT || f->nstages == 0)
        return type_range(f->type);
    c->vb_state[f->id] = VB_BUSY;
    bctx saved = *c;
    memo m = {0};
    c->nvars = 0;
    c->vars = NULL;
    c->var_iv = NULL;
    c->m = &m;
    ival r = iv_empty();
    for (int s = 0; s < f->nstages; s++) r = iv_union(r, eval(c, f->stages[s].value));
    memo_free(&m);
    c->nvars = saved.nvars;
    c->vars = saved.vars;
    c->var_iv = saved.var_iv;
    c->m = saved.m;
    ival t = type_range(f->type);
    r = iv(fmax(r.lo, t.lo), fmin(r.hi, t.hi));
    if (iv_is_empty(r)) r = t;
    c->vb[f->id] = r;
    c->vb_state[f->id] = VB_DONE;
    return r;
}

/* ---- interval of each node kind -------------------------------------------- */

/* Integer division and modulo are Euclidean (as in the evaluator): the
 * remainder is in [0, |b|), so a / b rounds down for b > 0 and up for
 * b < 0; x / 0 == 0 and x % 0 == 0. */
static ival int_div(ival a, ival b) {
    if (iv_is_point(b, 0)) return iv_point(0);
    /* |a / b| <= |a| whenever b is a nonzero integer, and x / 0 is 0. */
    double M = fmax(fabs(a.lo), fabs(a.hi));
    ival r = (a.lo >= 0 && b.lo >= 0) ? iv(0, a.hi) : iv(-M, M);
    if (b.lo > 0 || b.hi < 0) {
        /* The real quotient is monotone between the corners, and so is
         * its rounding. */
        ival q = iv_from4(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi);
        ival qr = b.lo > 0 ? iv(floor(q.lo), floor(q.hi)) : iv(ceil(q.lo), ceil(q.hi));
        r = iv(fmax(r.lo, qr.lo), fmin(r.hi, qr.hi));
    }
    return r;
}

static ival int_mod(ival a, ival b) {
    if (iv_is_point(b, 0)) return iv_point(0);
    if (iv_const(b)) {
        double c = fabs(b.lo);      /* a mod b == a mod |b| */
        /* No wrap inside a: the remainder follows a exactly. */
        if (iv_finite(a) && floor(a.lo / c) == floor(a.hi / c)) {
            double k = floor(a.lo / c) * c;
            return iv(a.lo - k, a.hi - k);
        }
        return iv(0, c - 1);
    }
    ival r = iv(0, fmax(0, fmax(fabs(b.lo), fabs(b.hi)) - 1));
    if (a.lo >= 0) r.hi = fmin(r.hi, a.hi);
    return r;
}

static ival cmp_lt(ival a, ival b) { return iv_bool(!(a.hi < b.lo), !(a.lo >= b.hi)); }
static ival cmp_le(ival a, ival b) { return iv_bool(!(a.hi <= b.lo), !(a.lo > b.hi)); }
static ival cmp_eq(ival a, ival b) {
    bool disjoint = a.hi < b.lo || b.hi < a.lo;
    bool same_point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
    return iv_bool(!same_point, !disjoint);
}

static ival bitwise(sc_binop op, ival a, ival b) {
    if (op == SC_BITAND) {
        /* x & m with m >= 0 keeps only bits of m: 0 <= x & m <= m. */
        if (a.lo >= 0 && b.lo >= 0) return iv(0, fmin(a.hi, b.hi));
        if (a.lo >= 0) return iv(0, a.hi);
        if (b.lo >= 0) return iv(0, b.hi);
    }
    double P = pow2_span(a, b);
    if (!isfinite(P)) return iv_all();
    if (a.lo >= 0 && b.lo >= 0)
        return iv(op == SC_BITOR ? fmax(a.lo, b.lo) : 0, P - 1);
    /* Both fit in a (k+1)-bit two's complement number; so does the result. */
    return iv(-P, P - 1);
}

static ival shift(sc_binop op, sc_type t, ival a, ival b) {
    if (b.lo < 0) return type_range(t);     /* a negative shift goes the other way */
    if (op == SC_SHL) {
        if (!(b.hi < sc_type_bits(t))) return type_range(t);
        return iv_mul(a, iv(ldexp(1, (int)b.lo), ldexp(1, (int)b.hi)));
    }
    /* An arithmetic right shift is a floor division by 2^b, so it stays
     * between a and 0 whatever the amount. */
    ival r = iv(fmin(a.lo, 0), fmax(a.hi, 0));
    if (b.hi < sc_type_bits(t)) {
        double lo = ldexp(1, (int)b.lo), hi = ldexp(1, (int)b.hi);
        ival q = iv_from4(floor(a.lo / lo), floor(a.lo / hi), floor(a.hi / lo), floor(a.hi / hi));
        r = iv(fmax(r.lo, q.lo), fmin(r.hi, q.hi));
    }
    return r;
}

static ival eval_binary(bctx *c, const sc_expr *e) {
    ival a = eval(c, e->args[0]), b = eval(c, e->args[1]);
    sc_type t = e->type, ot = e->args[0]->type;
    bool is_float = ot == SC_F32;
    ival r;
    switch ((sc_binop)e->op) {
    case SC_ADD: r = iv(a.lo + b.lo, a.hi + b.hi); break;
    case SC_SUB: r = iv(a.lo - b.hi, a.hi - b.lo); break;
    case SC_MUL:
        r = iv_mul(a, b);
        /* x * x is a square even though the two factors' intervals do not
         * know it (gradient magnitudes, distances). */
        if (ir_expr_equal(e->args[0], e->args[1]) && !iv_is_empty(a))
            r = iv(a.lo <= 0 && a.hi >= 0 ? 0 : fmin(a.lo * a.lo, a.hi * a.hi), r.hi);
        break;
    case SC_DIV:
        if (!is_float) { r = int_div(a, b); break; }
        if (b.lo > 0 || b.hi < 0) r = iv_from4(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi);
        else r = iv_all();
        break;
    case SC_MOD:
        if (!is_float) { r = int_mod(a, b); break; }
        /* a - b * floor(a / b) has the divisor's sign in exact
         * arithmetic, but in f32 a / b may round up to the next integer
         * and b * q is off by up to an ulp of a: |r| <= |b| + ulps(a).  A
         * divisor that may be 0 gives NaN, which min and max would turn
         * into their other operand, so it must mean "anything". */
        if ((b.lo > 0 || b.hi < 0) && iv_finite(a)) {
            double B = fmax(fabs(b.lo), fabs(b.hi));
            double slop = fmax(fabs(a.lo), fabs(a.hi)) * 0x1p-22;
            r = iv(-B - slop, B + slop);
        } else {
            r = iv_all();
        }
        break;
    case SC_MIN: case SC_MAX:
        r = e->op == SC_MIN ? iv(fmin(a.lo, b.lo), fmin(a.hi, b.hi)) : iv(fmax(a.lo, b.lo), fmax(a.hi, b.hi));
        /* min and max return one of their operands, so they never wrap:
         * an unbounded 32-bit operand (its type range) still holds only
         * values of the type, and clamp(i32(v), 0, 255) is [0, 255]
         * whatever v is.  Without this, fit() would take the open end for
         * a wrap and give the whole range back. */
        if (t != SC_F32) {
            ival lim = type_limits(t);
            r = iv(fmax(r.lo, lim.lo), fmin(r.hi, lim.hi));
        }
        break;
    case SC_EQ: return cmp_eq(a, b);
    case SC_NE: { ival q = cmp_eq(a, b); return iv(1 - q.hi, 1 - q.lo); }
    case SC_LT: return cmp_lt(a, b);
    case SC_LE: return cmp_le(a, b);
    case SC_GT: return cmp_lt(b, a);
    case SC_GE: return cmp_le(b, a);
    case SC_AND: return iv(fmin(a.lo, b.lo), fmin(a.hi, b.hi));
    case SC_OR: return iv(fmax(a.lo, b.lo), fmax(a.hi, b.hi));
    case SC_BITAND: case SC_BITOR: case SC_BITXOR:
        if (iv_is_empty(a) || iv_is_empty(b)) return iv_empty();
        r = bitwise(e->op, a, b);
        break;
    case SC_SHL: case SC_SHR: r = shift(e->op, t, a, b); break;
    default: assert(!"unknown binary operator"); return iv_all();
    }
    return fit(t, iv_fix(r));
}

static ival eval_unary(bctx *c, const sc_expr *e) {
    ival a = eval(c, e->args[0]);
    switch ((sc_unop)e->op) {
    case SC_NEG: return fit(e->type, iv(-a.hi, -a.lo));
    case SC_NOT: return iv(1 - a.hi, 1 - a.lo);
    case SC_BITNOT:
        if (sc_type_is_signed(e->type)) return fit(e->type, iv(-a.hi - 1, -a.lo - 1));
        { double m = type_limits(e->type).hi; return fit(e->type, iv(m - a.hi, m - a.lo)); }
    default: assert(!"unknown unary operator"); return iv_all();
    }
}

static ival eval_cast(bctx *c, const sc_expr *e) {
    ival a = eval(c, e->args[0]);
    sc_type t = e->type, s = e->args[0]->type;
    if (iv_is_empty(a)) return a;
    if (t == SC_F32) return a;
    if (t == SC_BOOL) return iv_bool(a.lo <= 0 && a.hi >= 0, !iv_is_point(a, 0));
    if (s != SC_F32) return fit(t, a);
    /* float -> int truncates toward zero and saturates at the type's
     * limits; for 32-bit types a saturated end means "unbounded". */
    a = widen_f(a);
    ival lim = type_limits(t), tr = type_range(t);
    ival r = iv(trunc(a.lo), trunc(a.hi));
    if (!(r.lo >= lim.lo)) r.lo = tr.lo;
    if (!(r.hi <= lim.hi)) r.hi = tr.hi;
    if (r.lo > lim.hi) r.lo = lim.hi;
    if (r.hi < lim.lo) r.hi = lim.lo;
    return r;
}

static ival eval_math(bctx *c, const sc_expr *e) {
    ival a = eval(c, e->args[0]);
    /* An interval cannot hold NaN, so an operand that may make one (sqrt
     * or log of a negative) makes the result unbounded: a float -> int
     * cast turns NaN into 0, which a finite interval might not contain. */
    switch ((sc_mathfn)e->op) {
    case SC_SQRT: return a.lo < 0 ? iv_all() : iv(sqrt(a.lo), sqrt(a.hi));
    case SC_EXP: return iv(exp(a.lo), exp(a.hi));
    case SC_LOG: return a.lo < 0 ? iv_all() : iv(log(a.lo), log(a.hi));
    case SC_FLOOR: a = widen_f(a); return iv(floor(a.lo), floor(a.hi));
    case SC_CEIL: a = widen_f(a); return iv(ceil(a.lo), ceil(a.hi));
    case SC_ROUND: a = widen_f(a); return iv(round(a.lo), round(a.hi));
    case SC_TANH: return iv(tanh(a.lo), tanh(a.hi));
    case SC_SIN: case SC_COS: return iv(-1, 1);
    case SC_ATAN2: return iv(-M_PI, M_PI);
    case SC_POW: {
        ival b = eval(c, e->args[1]);
        /* For a base >= 0, a^b is monotone in each argument separately, so
         * the extremes sit at the corners (0^negative is +inf). */
        if (a.lo >= 0 && (a.lo > 0 || b.lo >= 0) && !iv_is_empty(b))
            return iv_from4(pow(a.lo, b.lo), pow(a.lo, b.hi), pow(a.hi, b.lo), pow(a.hi, b.hi));
        return iv_all();
    }
    case SC_ABS: {
        double lo = a.lo >= 0 ? a.lo : a.hi <= 0 ? -a.hi : 0;
        return fit(e->type, iv(lo, fmax(fabs(a.lo), fabs(a.hi))));
    }
    default: assert(!"unknown math function"); return iv_all();
    }
}

/* f32 values may be NaN (0 / 0, sqrt(-1), x % 0, or an input's data),
 * which no interval holds.  The convention: only the unbounded interval
 * may hold NaN, so an f32 operation with an unbounded operand is unbounded
 * too (sin of NaN is not in [-1, 1], nor 0 * NaN in [0, 0]).  min and max
 * are the exception that makes clamp work: with a NaN operand they return
 * the other one, which their interval already contains.  A cast to an
 * integer turns NaN into 0, inside any unbounded result.  f32 overflow to
 * infinity is not modelled. */
static bool maybe_nan(bctx *c, const sc_expr *e) {
    if (e->type != SC_F32 || (e->kind != E_BINARY && e->kind != E_UNARY && e->kind != E_MATH))
        return false;
    if (e->kind == E_BINARY && (e->op == SC_MIN || e->op == SC_MAX)) return false;
    for (int i = 0; i < e->nargs; i++) {
        ival a = eval(c, e->args[i]);
        if (a.lo == -HUGE_VAL && a.hi == HUGE_VAL) return true;
    }
    return false;
}

static ival eval_node(bctx *c, const sc_expr *e) {
    if (maybe_nan(c, e)) return iv_all();
    switch (e->kind) {
    case E_CONST:
        return iv_point(e->type == SC_F32 ? e->c.f : (double)e->c.i);
    case E_VAR:
        for (int i = 0; i < c->nvars; i++)
            if (!strcmp(c->vars[i], e->name)) return c->var_iv[i];
        return iv_all();
    case E_RVAR:
        return iv(e->rdom->min[e->dim], (double)e->rdom->min[e->dim] + e->rdom->extent[e->dim] - 1);
    case E_PARAM:
        /* A parameter may change between runs; only its type bounds it. */
        return type_range(e->type);
    case E_BINARY: return eval_binary(c, e);
    case E_UNARY: return eval_unary(c, e);
    case E_CAST: return eval_cast(c, e);
    case E_SELECT: {
        ival cond = eval(c, e->args[0]);
        ival t = eval(c, e->args[1]), f = eval(c, e->args[2]);
        if (iv_is_point(cond, 1)) return t;
        if (iv_is_point(cond, 0)) return f;
        return iv_union(t, f);
    }
    case E_CALL: return value_bounds(c, e->func);
    case E_MATH: return iv_fix(eval_math(c, e));
    default: assert(!"unknown expression kind"); return iv_all();
    }
}

static ival eval(bctx *c, const sc_expr *e) {
    memo_entry *me = memo_get(c->m, e);
    if (me->has_val) return me->val;
    ival r = eval_node(c, e);
    me = memo_get(c->m, e);   /* the recursion may have moved it */
    me->val = r;
    me->has_val = true;
    return r;
}

/* The deepest subexpression without a finite bound whose operands all
 * have one: what the user should clamp. */
static const sc_expr *culprit(bctx *c, const sc_expr *e) {
    if (e->kind == E_CALL) return e;
    for (int i = 0; i < e->nargs; i++) {
        if (e->kind == E_SELECT && i == 0) continue;
        if (!iv_finite(eval(c, e->args[i]))) return culprit(c, e->args[i]);
    }
    return e;
}

bounds_interval bounds_of_expr(const sc_expr *e, int nvars,
                               const char *const *vars,
                               const bounds_interval *var_iv, bool *ok) {
    return bounds_of_expr_in(NULL, e, nvars, vars, var_iv, ok);
}

bounds_interval bounds_of_expr_in(const bounds_result *b, const sc_expr *e,
                                  int nvars, const char *const *vars,
                                  const bounds_interval *var_iv, bool *ok) {
    memo m = {0};
    bctx c = { 0, NULL, NULL, nvars, vars, var_iv, &m };
    if (b && b->values && b->nfuncs > 0) {
        vb_reserve(&c, b->nfuncs - 1);
        memcpy(c.vb, b->values, sizeof(ival) * (size_t)b->nfuncs);
        memset(c.vb_state, VB_DONE, (size_t)b->nfuncs);
    }
    ival r = eval(&c, e);
    memo_free(&m);
    free(c.vb);
    free(c.vb_state);
    if (ok) *ok = iv_finite(r);
    return r;
}

/* ---- regions ------------------------------------------------------------- */

typedef struct {
    sc_pipeline *p;
    bctx c;
    ival *region;             /* [func id * SC_MAX_DIMS + dim] */
    bool *needed;             /* by func id: an output or read by a needed Func */
    int errors;
    /* the stage being walked */
    const sc_func *f;
    int stage;
    bool final;               /* false: fixpoint round, self-accesses only */
    bool grew;
} infer;

static ival *region_of(infer *in, const sc_func *f) { return &in->region[f->id * SC_MAX_DIMS]; }

static void grow(infer *in, const sc_func *f, int d, ival a) {
    ival *r = &region_of(in, f)[d];
    ival u = iv_union(*r, a);
    if (u.lo != r->lo || u.hi != r->hi) { *r = u; in->grew = true; }
}

static void bounds_error_at(infer *in, sc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records a user error at loc, keeping the pipeline's current location. */
static void bounds_error_at(infer *in, sc_loc loc, const char *fmt, ...) {
    char msg[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sc_loc saved = in->p->loc;
    sc_pipeline_set_loc(in->p, loc.file ? loc.file : "<api>", loc.line, loc.col);
    sc_error(in->p, "%s", msg);
    in->p->loc = saved;
    in->errors++;
}

static const char *stage_desc(const infer *in, char *buf, size_t n) {
    if (in->stage == 0) snprintf(buf, n, "%s", in->f->name);
    else snprintf(buf, n, "update %d of %s", in->stage, in->f->name);
    return buf;
}

/* e as text for a message, cut to keep the message readable (and within
 * sc_error's buffer).  Caller frees. */
static char *expr_text(const sc_expr *e) {
    char *s = ir_expr_to_string(e);
    if (strlen(s) > 200) strcpy(s + 190, " ...");
    return s;
}

/* "lut(f(x)) in g", or "the left-hand side of update 1 of g" when call is
 * NULL.  Built only for messages. */
static void access_desc(const infer *in, const sc_expr *call, char *buf, size_t n) {
    char where[300];
    stage_desc(in, where, sizeof where);
    if (!call) {
        snprintf(buf, n, "the left-hand side of %s", where);
        return;
    }
    char *s = expr_text(call);
    snprintf(buf, n, "%s in %s", s, where);
    free(s);
}

/* Whether coordinate d (expression coord, interval a) of an access is
 * bounded, and not absurdly large; in the final pass reports it otherwise. */
static bool coordinate_ok(infer *in, const sc_expr *call, const sc_expr *coord, int d, ival a) {
    if (iv_finite(a) && a.hi - a.lo + 1 <= BOUNDS_MAX_EXTENT) return true;
    if (!in->final) return false;
    char what[1000];
    access_desc(in, call, what, sizeof what);
    if (!iv_finite(a)) {
        char *cs = expr_text(culprit(&in->c, coord));
        bounds_error_at(in, coord->loc, "cannot bound coordinate %d of %s: the value of %s is unbounded (clamp it)",
                        d, what, cs);
        free(cs);
    } else {
        bounds_error_at(in, coord->loc, "cannot bound coordinate %d of %s: it spans [%.0f, %.0f], more than 2^28 points (clamp it)",
                        d, what, a.lo + 0.0, a.hi + 0.0);
    }
    return false;
}

/* One call site met while walking a stage.  In a fixpoint round only
 * self-references matter (they grow the Func itself); in the final pass
 * every other callee grows by what is read of it, and self-references are
 * only checked (the fixpoint has already counted them). */
static void visit_call(infer *in, const sc_expr *e) {
    const sc_func *h = e->func;
    bool self = h == in->f;
    if (!in->final && !self) return;
    if (in->final && !self) in->needed[h->id] = true;
    for (int d = 0; d < e->nargs; d++) {
        ival a = eval(&in->c, e->args[d]);
        if (!coordinate_ok(in, e, e->args[d], d, a)) continue;
        if (h->kind == FUNC_INPUT) {
            if (a.lo >= 0 && a.hi <= h->extent[d] - 1) continue;
            char what[1000];
            access_desc(in, e, what, sizeof what);
            bounds_error_at(in, e->loc, "access %s reads %s over [%.0f, %.0f] in dimension %d, but %s is defined over [0, %d]",
                            what, h->name, a.lo + 0.0, a.hi + 0.0, d, h->name, h->extent[d] - 1);
        } else if (self != in->final) {
            grow(in, h, d, a);
        }
    }
}

static void walk(infer *in, const sc_expr *e) {
    memo_entry *me = memo_get(in->c.m, e);
    if (me->walked) return;
    me->walked = true;
    if (e->kind == E_CALL) visit_call(in, e);
    for (int i = 0; i < e->nargs; i++) walk(in, e->args[i]);
}

/* Walks stage s of f with its loops over f's current region: in a
 * fixpoint round, grows f by what the stage writes and reads of itself;
 * in the final pass, pushes every read onto its producer and reports
 * unbounded or out-of-bounds accesses. */
static void walk_stage(infer *in, const sc_func *f, int s, bool final) {
    const ir_stage *st = &f->stages[s];
    ival env[SC_MAX_DIMS];
    memo m = {0};
    for (int d = 0; d < f->ndims; d++) env[d] = region_of(in, f)[d];
    in->c.nvars = f->ndims;
    in->c.vars = (const char *const *)f->vars;
    in->c.var_iv = env;
    in->c.m = &m;
    in->f = f;
    in->stage = s;
    in->final = final;
    for (int d = 0; s > 0 && d < st->nargs; d++) {
        if (st->args[d]->kind == E_VAR) continue;       /* a pure loop: the region itself */
        ival a = eval(&in->c, st->args[d]);
        if (coordinate_ok(in, NULL, st->args[d], d, a) && !final) grow(in, f, d, a);
    }
    for (int d = 0; d < st->nargs; d++) walk(in, st->args[d]);
    walk(in, st->value);
    memo_free(&m);
    in->c.m = NULL;
}

static void fill_stages(const sc_func *f, bounds_func *bf, bool used) {
    bf->nstages = f->nstages;
    bf->stages = base_calloc((size_t)f->nstages, sizeof(bounds_stage));
    for (int s = 0; s < f->nstages; s++) {
        bounds_stage *bs = &bf->stages[s];
        const sc_rdom *r = f->stages[s].rdom;
        bs->nloops = ir_stage_loops(f, s, bs->which);
        for (int i = 0; used && i < bs->nloops; i++) {
            int w = bs->which[i];
            bs->min[i] = w >= 0 ? bf->min[w] : r->min[-1 - w];
            bs->extent[i] = w >= 0 ? bf->extent[w] : r->extent[-1 - w];
        }
    }
}

/* Settles f's region against its own updates, checks its size, then
 * pushes what its stages read onto their producers. */
static void infer_func(infer *in, const sc_func *f) {
    /* Updates may extend the region (a scatter writes where its
     * coordinates say; a recurrence reads its previous row).  What they
     * write and read of f depends on the region only through the pure
     * loops, which keep their own position, so this settles in a round or
     * two. */
    int round = 0;
    do {
        in->grew = false;
        for (int s = 1; s < f->nstages; s++) walk_stage(in, f, s, false);
    } while (in->grew && ++round < BOUNDS_MAX_ROUNDS);
    if (in->grew) {
        bounds_error_at(in, f->loc, "cannot bound the region of %s: its update definitions keep extending it",
                        f->name);
        return;
    }
    for (int d = 0; d < f->ndims; d++) {
        ival r = region_of(in, f)[d];
        if (r.hi - r.lo + 1 > BOUNDS_MAX_EXTENT) {
            bounds_error_at(in, f->loc, "cannot bound the region of %s: dimension %d spans [%.0f, %.0f], more than 2^28 points",
                            f->name, d, r.lo + 0.0, r.hi + 0.0);
            return;
        }
    }
    for (int s = 0; s < f->nstages; s++) walk_stage(in, f, s, true);
}

/*
 * A Func no output needs (nothing needed reads it) is "unused": its region
 * has min 0 and extent 0 in every dimension and every loop of its stages
 * has extent 0, so an evaluator or a schedule may skip it.  Inputs keep
 * their declared region [0, extent).
 */
bounds_result *bounds_infer(sc_pipeline *p) {
    int n = p->funcs.n;
    infer in = { .p = p };
    in.region = base_calloc((size_t)n * SC_MAX_DIMS, sizeof(ival));
    for (int i = 0; i < n * SC_MAX_DIMS; i++) in.region[i] = iv_empty();
    in.needed = base_calloc((size_t)n, sizeof(bool));

    /* 1. value bounds, producers first */
    for (int i = 0; i < p->order.n; i++) value_bounds(&in.c, ir_order_at(p, i));

    /* 2. regions, consumers first: when f is reached every consumer has
     * pushed its reads, so f's region is final after its own updates. */
    for (int i = 0; i < p->outputs.n; i++) {
        const sc_func *f = p->outputs.items[i];
        in.needed[f->id] = true;
        for (int d = 0; d < f->ndims; d++) grow(&in, f, d, iv(0, f->out_extent[d] - 1));
    }
    for (int i = p->order.n - 1; i >= 0; i--) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT || !in.needed[f->id]) continue;
        bool empty = false;
        for (int d = 0; d < f->ndims; d++) empty |= iv_is_empty(region_of(&in, f)[d]);
        if (empty) continue;        /* only after an error in a consumer */
        infer_func(&in, f);
    }

    bounds_result *b = NULL;
    if (!in.errors) {
        b = base_calloc(1, sizeof *b);
        b->nfuncs = n;
        b->funcs = base_calloc((size_t)n, sizeof(bounds_func));
        b->values = base_calloc((size_t)n, sizeof(ival));
        for (int i = 0; i < n; i++) {
            const sc_func *f = p->funcs.items[i];
            b->values[i] = value_bounds(&in.c, f);
            bounds_func *bf = &b->funcs[i];
            bf->ndims = f->ndims;
            for (int d = 0; d < f->ndims; d++) {
                if (f->kind == FUNC_INPUT) {
                    bf->extent[d] = f->extent[d];
                } else if (in.needed[i]) {
                    ival r = region_of(&in, f)[d];
                    bf->min[d] = (int64_t)r.lo;
                    bf->extent[d] = (int64_t)(r.hi - r.lo + 1);
                }
            }
            if (f->kind == FUNC_DEFINED) fill_stages(f, bf, in.needed[i]);
        }
    }
    free(in.region);
    free(in.needed);
    free(in.c.vb);
    free(in.c.vb_state);
    return b;
}

void bounds_free(bounds_result *b) {
    if (!b) return;
    for (int i = 0; i < b->nfuncs; i++) free(b->funcs[i].stages);
    free(b->funcs);
    free(b->values);
    free(b);
}

/* ---- printing ---------------------------------------------------------------- */

static void print_loop_name(FILE *out, const sc_func *f, int s, int which) {
    if (which >= 0) fprintf(out, "%s", f->vars[which]);
    else fprintf(out, "%s.%c", f->stages[s].rdom->name, "xyzw"[-1 - which]);
}

/*
 * One line per Func in topological order:
 *   blur_x  u16  [-1, 1537] x [0, 1023]  stages: 0: x[-1..1537] y[0..1023]
 * Inputs end in "input", Funcs nothing needs in "unused".
 */
void bounds_print(FILE *out, const sc_pipeline *p, const bounds_result *b) {
    int w = 0;
    for (int i = 0; i < p->order.n; i++) {
        int l = (int)strlen(ir_order_at(p, i)->name);
        if (l > w) w = l;
    }
    for (int i = 0; i < p->order.n; i++) {
        const sc_func *f = ir_order_at(p, i);
        const bounds_func *bf = &b->funcs[f->id];
        fprintf(out, "%-*s  %-4s ", w, f->name, sc_type_name(f->type));
        if (f->kind == FUNC_DEFINED && f->ndims > 0 && bf->extent[0] == 0) {
            fprintf(out, " unused\n");
            continue;
        }
        if (f->ndims == 0) fprintf(out, " scalar");
        for (int d = 0; d < bf->ndims; d++)
            fprintf(out, "%s[%lld, %lld]", d ? " x " : " ", (long long)bf->min[d],
                    (long long)(bf->min[d] + bf->extent[d] - 1));
        if (f->kind == FUNC_INPUT) { fprintf(out, "  input\n"); continue; }
        fprintf(out, "  stages:");
        for (int s = 0; s < bf->nstages; s++) {
            const bounds_stage *bs = &bf->stages[s];
            fprintf(out, " %d:", s);
            for (int l = 0; l < bs->nloops; l++) {
                fprintf(out, " ");
                print_loop_name(out, f, s, bs->which[l]);
                fprintf(out, "[%lld..%lld]", (long long)bs->min[l],
                        (long long)(bs->min[l] + bs->extent[l] - 1));
            }
        }
        fprintf(out, "\n");
    }
}
