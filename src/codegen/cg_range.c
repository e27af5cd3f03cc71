/*
 * cg_range.c - value ranges and constant folding for the code generator.
 *
 * Each node of a statement's DAG (cg_expr.c) gets an interval of the
 * values it can take, from its operands' intervals and from the ranges of
 * the variables in scope (loop variables from their bounds, lets from
 * their values, bid and tid from the launch).  The intervals are sound, so
 *  - + - * and negation whose exact result lies in its type's range are
 *    printed as plain C arithmetic (no wrap-around code), and division or
 *    modulo of a non-negative value by a positive constant as C's / and %;
 *  - a node whose interval is one value is that constant and is printed as
 *    a literal (operations on constants are evaluated exactly as eval.c
 *    does, wrap-around and Euclidean division included).
 * f32 nodes whose operands are constants are computed here, operation by
 * operation with the C library's functions, as the evaluator computes them.
 * Kernels therefore assume they are launched with their own nblocks and
 * nthreads (rt.h).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "base.h"
#include "scmath.h"
#include "cg_backend.h"

void cg_type_range(sc_type t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case SC_U8:  *lo = 0; *hi = UINT8_MAX; break;
    case SC_U16: *lo = 0; *hi = UINT16_MAX; break;
    case SC_U32: *lo = 0; *hi = UINT32_MAX; break;
    case SC_I8:  *lo = INT8_MIN; *hi = INT8_MAX; break;
    case SC_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case SC_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    default:     *lo = 0; *hi = 1; break;        /* bool; f32 unused */
    }
}

bool cg_fits(sc_type t, int64_t lo, int64_t hi)
{
    int64_t tlo, thi;
    cg_type_range(t, &tlo, &thi);
    return lo >= tlo && hi <= thi && lo <= hi;
}

/* An integer constant wrapped to its type, as the evaluator does. */
int64_t cg_wrap(int64_t v, sc_type t)
{
    switch (t) {
    case SC_BOOL: return v != 0;
    case SC_U8:   return v & 0xff;
    case SC_U16:  return v & 0xffff;
    case SC_U32:  return v & 0xffffffff;
    case SC_I8:   return ((v & 0xff) ^ 0x80) - 0x80;
    case SC_I16:  return ((v & 0xffff) ^ 0x8000) - 0x8000;
    default:      return ((v & 0xffffffff) ^ 0x80000000) - 0x80000000;
    }
}

static int64_t max_abs(int64_t lo, int64_t hi)
{
    lo = lo < 0 ? -lo : lo;
    hi = hi < 0 ? -hi : hi;
    return lo > hi ? lo : hi;
}


/* A float literal as the evaluator holds it (out of range: infinity). */
static float f32_of(double v)
{
    return v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
}

/*
 * Constant f32 nodes, computed here operation by operation exactly as the
 * evaluator does (the same C library functions, no contraction), so that
 * printing the value changes nothing.
 */
static void node_float(cg_ctx *g, cg_node *n)
{
    const sc_expr *e = n->e;
    const cg_node *a = n->nkid > 0 ? &g->node[n->kid[0]] : NULL;
    const cg_node *b = n->nkid > 1 ? &g->node[n->kid[1]] : NULL;
    bool ka = a && a->fconst, kb = b && b->fconst;
    float x = ka ? a->fval : 0, y = kb ? b->fval : 0, r;
    switch (e->kind) {
    case E_CONST:
        r = f32_of(e->c.f);
        break;
    case E_CAST:
        if (ka)
            r = x;
        else if (a->e->type != SC_F32 && cg_folds(a))
            r = (float)a->lo;
        else
            return;
        break;
    case E_UNARY:
        if (!ka || e->op != SC_NEG)
            return;
        r = -x;
        break;
    case E_SELECT:
        if (!cg_folds(a) || !g->node[n->kid[a->lo ? 1 : 2]].fconst)
            return;
        r = g->node[n->kid[a->lo ? 1 : 2]].fval;
        break;
    case E_BINARY:
        if (!ka || !kb)
            return;
        switch (e->op) {
        case SC_ADD: r = x + y; break;
        case SC_SUB: r = x - y; break;
        case SC_MUL: r = x * y; break;
        case SC_DIV: r = x / y; break;
        case SC_MOD: {
            float q = floorf(x / y), m = y * q;
            r = x - m;
            break;
        }
        case SC_MIN: r = fminf(x, y); break;
        case SC_MAX: r = fmaxf(x, y); break;
        default:     return;
        }
        break;
    case E_MATH:
        if (!ka || (b && !kb))
            return;
        switch (e->op) {
        case SC_SQRT:  r = sqrtf(x); break;
        case SC_EXP:   r = sc_expf(x); break;
        case SC_LOG:   r = sc_logf(x); break;
        case SC_POW:   r = sc_powf(x, y); break;
        case SC_FLOOR: r = floorf(x); break;
        case SC_CEIL:  r = ceilf(x); break;
        case SC_ROUND: r = rintf(x); break;
        case SC_SIN:   r = sc_sinf(x); break;
        case SC_COS:   r = sc_cosf(x); break;
        case SC_TANH:  r = sc_tanhf(x); break;
        case SC_ATAN2: r = sc_atan2f(x, y); break;
        case SC_ABS:   r = fabsf(x); break;
        default:       return;
        }
        break;
    default:
        return;
    }
    n->fconst = true;
    n->fval = r;
}

/* A comparison or logical operator known from its operands' ranges:
 * 1 or 0, or -1 when not known. */
static int bool_fold(int op, const cg_node *a, const cg_node *b)
{
    int64_t alo = a->lo, ahi = a->hi, blo = b->lo, bhi = b->hi;
    if (a->e->type == SC_F32) {
        if (!a->fconst || !b->fconst)
            return -1;
        float x = a->fval, y = b->fval;
        switch (op) {
        case SC_EQ: return x == y;
        case SC_NE: return x != y;
        case SC_LT: return x < y;
        case SC_LE: return x <= y;
        case SC_GT: return x > y;
        case SC_GE: return x >= y;
        default:    return -1;
        }
    }
    switch (op) {
    case SC_EQ: return alo == ahi && blo == bhi && alo == blo ? 1 : ahi < blo || bhi < alo ? 0 : -1;
    case SC_NE: return alo == ahi && blo == bhi && alo == blo ? 0 : ahi < blo || bhi < alo ? 1 : -1;
    case SC_LT: return ahi < blo ? 1 : alo >= bhi ? 0 : -1;
    case SC_LE: return ahi <= blo ? 1 : alo > bhi ? 0 : -1;
    case SC_GT: return alo > bhi ? 1 : ahi <= blo ? 0 : -1;
    case SC_GE: return alo >= bhi ? 1 : ahi < blo ? 0 : -1;
    case SC_AND: return ahi == 0 || bhi == 0 ? 0 : alo == 1 && blo == 1 ? 1 : -1;
    case SC_OR:  return alo == 1 || blo == 1 ? 1 : ahi == 0 && bhi == 0 ? 0 : -1;
    default:     return -1;
    }
}

/* f32 or double to [lo, hi] as the evaluator casts: truncate, saturate,
 * NaN -> 0. */
static int64_t sat_trunc(double v, int64_t lo, int64_t hi)
{
    if (isnan(v))
        return 0;
    return v <= (double)lo ? lo : v >= (double)hi ? hi : (int64_t)v;
}

/* Euclidean division and modulo, and shifts, as eval.c computes them
 * (operands within 32-bit ranges; the caller wraps). */
static int64_t div_euclid(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    int64_t q = a / b, r = a % b;
    return r < 0 ? q + (b > 0 ? -1 : 1) : q;
}

static int64_t mod_euclid(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    int64_t r = a % b;
    return r < 0 ? r + (b > 0 ? b : -b) : r;
}

static int64_t shift(int64_t a, int64_t s, int bits, bool left)
{
    if (s < 0) {
        s = -s;
        left = !left;
    }
    if (left)
        return s >= bits ? 0 : (int64_t)(((uint64_t)a << s) & 0xffffffffu);
    return s >= bits ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> s) : a >> s;
}

/* The value of an integer operation whose operands are constants; false
 * where there is nothing to compute. */
static bool fold_exact(const cg_node *n, const cg_node *a, const cg_node *b, int64_t *v)
{
    const sc_expr *e = n->e;
    sc_type t = e->type;
    if (!a || !cg_folds(a) || (b && !cg_folds(b)) || t == SC_BOOL)
        return false;
    int64_t x = a->lo, y = b ? b->lo : 0;
    if (e->kind == E_CAST && a->e->type != SC_F32)
        *v = x;
    else if (e->kind == E_MATH && e->op == SC_ABS)
        *v = x < 0 ? -x : x;
    else if (e->kind == E_UNARY && e->op != SC_NOT)
        *v = e->op == SC_NEG ? -x : ~x;
    else if (e->kind == E_BINARY && b) {
        switch (e->op) {
        case SC_ADD:    *v = x + y; break;
        case SC_SUB:    *v = x - y; break;
        case SC_MUL:    *v = (int64_t)(((uint64_t)x * (uint64_t)y) & 0xffffffffu); break;
        case SC_DIV:    *v = div_euclid(x, y); break;
        case SC_MOD:    *v = mod_euclid(x, y); break;
        case SC_MIN:    *v = x < y ? x : y; break;
        case SC_MAX:    *v = x > y ? x : y; break;
        case SC_BITAND: *v = x & y; break;
        case SC_BITOR:  *v = x | y; break;
        case SC_BITXOR: *v = x ^ y; break;
        case SC_SHL:    *v = shift(x, y, sc_type_bits(t), true); break;
        case SC_SHR:    *v = shift(x, y, sc_type_bits(t), false); break;
        default:        return false;
        }
    } else {
        return false;
    }
    *v = cg_wrap(*v, t);
    return true;
}

/*
 * Sets the value range of node id (integer and bool types) from its
 * operands', which are set; the range is sound, so a node whose range is
 * one value is that constant (cg_folds).  Operands are within their
 * types, so int64 sums cannot overflow; products are checked.
 */
void cg_node_range(cg_ctx *g, int id)
{
    cg_node *n = &g->node[id];
    const sc_expr *e = n->e;
    sc_type t = e->type;
    int64_t lo = 0, hi = 0, alo = 0, ahi = 0, blo = 0, bhi = 0;
    bool ok = false;
    cg_type_range(t, &n->lo, &n->hi);
    if (t == SC_F32) {
        node_float(g, n);
        return;
    }
    const cg_node *a = n->nkid > 0 ? &g->node[n->kid[0]] : NULL;
    const cg_node *b = n->nkid > 1 ? &g->node[n->kid[1]] : NULL;
    if (a) { alo = a->lo; ahi = a->hi; }
    if (b) { blo = b->lo; bhi = b->hi; }
    sc_type at = a ? a->e->type : t;
    if (fold_exact(n, a, b, &lo)) {
        n->lo = n->hi = lo;
        return;
    }
    switch (e->kind) {
    case E_CONST:
        lo = hi = cg_wrap(e->c.i, t);
        ok = true;
        break;
    case E_VAR:
        for (int i = g->nenv - 1; i >= 0; i--)
            if (!strcmp(g->env[i].name, e->name)) {
                lo = g->env[i].lo;
                hi = g->env[i].hi;
                ok = true;
                break;
            }
        break;
    case E_CAST:
        if (at == SC_F32 && a->fconst) {
            int64_t tlo, thi;
            cg_type_range(t, &tlo, &thi);
            lo = hi = t == SC_BOOL ? a->fval != 0 : sat_trunc(a->fval, tlo, thi);
            ok = true;
        } else if (at != SC_F32 && t == SC_BOOL) {
            lo = alo > 0 || ahi < 0 ? 1 : 0;
            hi = alo == 0 && ahi == 0 ? 0 : 1;
            ok = true;
        } else if (at != SC_F32) {
            lo = alo;                           /* out of t's range: wraps */
            hi = ahi;
            ok = true;
        }
        break;
    case E_UNARY:
        if (e->op == SC_NEG) {
            lo = -ahi;
            hi = -alo;
            ok = true;
            n->wraps = !cg_fits(t, lo, hi);
        } else if (e->op == SC_BITNOT && sc_type_is_signed(t)) {
            lo = ~ahi;
            hi = ~alo;
            ok = true;
        } else if (e->op == SC_NOT) {
            lo = 1 - ahi;
            hi = 1 - alo;
            ok = true;
        }
        break;
    case E_SELECT: {
        const cg_node *x = &g->node[n->kid[1]], *y = &g->node[n->kid[2]];
        if (cg_folds(a))
            x = y = a->lo ? x : y;
        lo = x->lo < y->lo ? x->lo : y->lo;
        hi = x->hi > y->hi ? x->hi : y->hi;
        ok = true;
        break;
    }
    case E_MATH:
        if (e->op == SC_ABS) {
            lo = alo >= 0 ? alo : ahi <= 0 ? -ahi : 0;
            hi = max_abs(alo, ahi);
            ok = true;
        }
        break;
    case E_BINARY:
        if (e->op >= SC_EQ && e->op <= SC_OR) {
            int v = bool_fold(e->op, a, b);
            if (v >= 0) {
                lo = hi = v;
                ok = true;
            }
            break;
        }
        switch (e->op) {
        case SC_ADD: lo = alo + blo; hi = ahi + bhi; ok = true; n->wraps = !cg_fits(t, lo, hi); break;
        case SC_SUB: lo = alo - bhi; hi = ahi - blo; ok = true; n->wraps = !cg_fits(t, lo, hi); break;
        case SC_MUL: {
            int64_t ma = max_abs(alo, ahi), mb = max_abs(blo, bhi);
            if (ma && mb > INT64_MAX / ma) {
                n->wraps = true;
                break;
            }
            int64_t c[4] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
            lo = hi = c[0];
            for (int i = 1; i < 4; i++) {
                lo = c[i] < lo ? c[i] : lo;
                hi = c[i] > hi ? c[i] : hi;
            }
            ok = true;
            n->wraps = !cg_fits(t, lo, hi);
            break;
        }
        case SC_DIV:                            /* Euclidean: see eval.c */
            if (blo == bhi && blo > 0) {
                lo = base_floor_div(alo, blo);
                hi = base_floor_div(ahi, blo);
            } else if (blo == bhi && blo < 0) {
                lo = -base_floor_div(ahi, -blo);
                hi = -base_floor_div(alo, -blo);
            } else {
                hi = max_abs(alo, ahi);         /* |a / b| <= |a|, and x / 0 == 0 */
                lo = -hi;
            }
            ok = true;
            break;
        case SC_MOD:                            /* in [0, |b|), and <= a when a >= 0 */
            lo = 0;
            hi = max_abs(blo, bhi) - 1;
            if (alo >= 0 && ahi < hi)
                hi = ahi;
            hi = hi < 0 ? 0 : hi;
            ok = true;
            break;
        case SC_MIN:
            lo = alo < blo ? alo : blo;
            hi = ahi < bhi ? ahi : bhi;
            ok = true;
            break;
        case SC_MAX:
            lo = alo > blo ? alo : blo;
            hi = ahi > bhi ? ahi : bhi;
            ok = true;
            break;
        case SC_BITAND:                         /* a & b <= b when b >= 0 */
            if (alo >= 0 || blo >= 0) {
                lo = 0;
                hi = alo >= 0 && blo >= 0 ? (ahi < bhi ? ahi : bhi) : alo >= 0 ? ahi : bhi;
                ok = true;
            }
            break;
        case SC_BITOR:
        case SC_BITXOR:
            if (alo >= 0 && blo >= 0) {
                int64_t m = ahi > bhi ? ahi : bhi, p = 1;
                while (p <= m)
                    p <<= 1;
                lo = 0;
                hi = p - 1;
                ok = true;
            }
            break;
        case SC_SHR:
            if (alo >= 0 && blo == bhi && blo >= 0 && blo < sc_type_bits(t)) {
                lo = alo >> blo;
                hi = ahi >> blo;
                ok = true;
            }
            break;
        default:
            break;
        }
        break;
    default:
        break;
    }
    if (ok && cg_fits(t, lo, hi)) {
        n->lo = lo;
        n->hi = hi;
    }
}
