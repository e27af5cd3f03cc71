/*
 * cg_expr.c - expressions for codegen.c: each statement's expressions
 * hash-consed into a DAG (with value ranges from cg_range.c), printed
 * exactly; the temporaries of shared subexpressions.
 *
 * Exact arithmetic.  Generated code must agree bit for bit with the
 * reference evaluator (eval.c) on integers.  Every integer expression is
 * printed so that its C value equals the pipeline's value and its C type
 * is the IR type (or int, by promotion, for the 8- and 16-bit types):
 *  - + - * and negation that may leave their type's range are computed in
 *    32-bit unsigned arithmetic and converted back ((int32_t)((uint32_t)a
 *    + (uint32_t)b); (uint8_t)(a + b)), so nothing overflows a signed int;
 *    those that provably stay in range (cg_range.c) are printed plainly,
 *    which keeps index arithmetic readable: x + 1, tid % 32; constants
 *    are folded;
 *  - division and modulo (Euclidean, x / 0 == 0), shifts (out-of-range
 *    and negative amounts), min, max, integer abs, f32 % and saturating
 *    f32 -> integer casts call small helper functions (codegen.c), printed
 *    once per file for the types actually used.
 *
 * Common subexpressions.  Lowering substitutes inline Funcs, so a
 * statement's expressions are DAGs whose trees can be exponentially large.
 * Each statement's expressions are hash-consed (structurally equal nodes
 * become one); a node used more than once becomes a `const` temporary
 * (sc_tN) printed just before the statement.  This is exact because
 * expressions have no side effects and, as in the evaluator, every operand
 * of a select is in bounds.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "cg_backend.h"

/* ---- hash-consing ------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* Pointer table: expression node -> DAG node (several pointers may map to
 * one node).  Structural table: hash -> DAG node.  Open addressing, at
 * most half full. */
static size_t slot_of(uint64_t h, size_t cap) { return (size_t)h & (cap - 1); }

static int ptr_find(const cg_ctx *g, const sc_expr *e)
{
    for (size_t i = slot_of(mix(0, (uint64_t)(uintptr_t)e), g->pcap);; i = (i + 1) & (g->pcap - 1)) {
        if (!g->pkey[i])
            return -1;
        if (g->pkey[i] == e)
            return g->pval[i];
    }
}

static void ptr_put_raw(cg_ctx *g, const sc_expr *e, int id)
{
    size_t i = slot_of(mix(0, (uint64_t)(uintptr_t)e), g->pcap);
    while (g->pkey[i])
        i = (i + 1) & (g->pcap - 1);
    g->pkey[i] = e;
    g->pval[i] = id;
}

static void ptr_put(cg_ctx *g, const sc_expr *e, int id)
{
    if (2 * (g->pn + 1) > g->pcap) {
        const sc_expr **key = g->pkey;
        int *val = g->pval;
        size_t cap = g->pcap;
        g->pcap *= 2;
        g->pkey = cg_grow(NULL, g->pcap * sizeof *g->pkey);
        g->pval = cg_grow(NULL, g->pcap * sizeof *g->pval);
        memset(g->pkey, 0, g->pcap * sizeof *g->pkey);
        for (size_t i = 0; i < cap; i++)
            if (key[i])
                ptr_put_raw(g, key[i], val[i]);
        free(key);
        free(val);
    }
    ptr_put_raw(g, e, id);
    g->pn++;
}

static void stab_put_raw(cg_ctx *g, int id)
{
    size_t i = slot_of(g->node[id].hash, g->scap);
    while (g->stab[i] >= 0)
        i = (i + 1) & (g->scap - 1);
    g->stab[i] = id;
}

static void stab_put(cg_ctx *g, int id)
{
    if (2 * ((size_t)id + 1) > g->scap) {
        g->scap *= 2;
        g->stab = cg_grow(g->stab, g->scap * sizeof *g->stab);
        memset(g->stab, 0xff, g->scap * sizeof *g->stab);
        for (int i = 0; i < id; i++)
            stab_put_raw(g, i);
    }
    stab_put_raw(g, id);
}

/* Empties both tables (and shrinks them after a huge statement). */
static void tables_reset(cg_ctx *g)
{
    if (!g->pcap || g->pcap > 4096) {
        free(g->pkey);
        free(g->pval);
        free(g->stab);
        g->pcap = g->scap = 256;
        g->pkey = cg_grow(NULL, g->pcap * sizeof *g->pkey);
        g->pval = cg_grow(NULL, g->pcap * sizeof *g->pval);
        g->stab = cg_grow(NULL, g->scap * sizeof *g->stab);
    }
    memset(g->pkey, 0, g->pcap * sizeof *g->pkey);
    memset(g->stab, 0xff, g->scap * sizeof *g->stab);
    g->pn = 0;
}

static bool same_node(const cg_node *a, const cg_node *b)
{
    const sc_expr *x = a->e, *y = b->e;
    if (a->hash != b->hash || x->kind != y->kind || x->type != y->type ||
        x->op != y->op || a->nkid != b->nkid)
        return false;
    for (int i = 0; i < a->nkid; i++)
        if (a->kid[i] != b->kid[i])
            return false;
    switch (x->kind) {
    case E_CONST: return x->type == SC_F32 ? x->c.f == y->c.f && signbit(x->c.f) == signbit(y->c.f)
                                           : cg_wrap(x->c.i, x->type) == cg_wrap(y->c.i, y->type);
    case E_VAR:   return !strcmp(x->name, y->name);
    case E_PARAM: return x->param == y->param;
    case E_CALL:  return x->func == y->func;
    default:      return true;
    }
}

static const lower_alloc *storage_of(cg_ctx *g, const sc_func *f)
{
    const lower_alloc *a = g->k->storage ? g->k->storage[f->id] : NULL;
    if (!a)
        cg_bug("no storage in this kernel for", f->name);
    return a;
}

/* The node of e in the current statement's DAG. */
static int canon(cg_ctx *g, const sc_expr *e)
{
    int id = ptr_find(g, e);
    if (id >= 0)
        return id;
    cg_node n;
    memset(&n, 0, sizeof n);
    n.e = e;
    n.tmp = -1;
    if (e->kind == E_RVAR)
        cg_bug("reduction variable left after lowering:", e->rdom->name);
    if (e->kind == E_CALL && e->func->kind == FUNC_DEFINED &&
        e->nargs != e->func->ndims)
        cg_bug("call with the wrong arity of", e->func->name);
    if (e->nargs > 2 * SC_MAX_DIMS)
        cg_bug("too many operands", NULL);
    for (int i = 0; i < e->nargs; i++)
        n.kid[n.nkid++] = canon(g, e->args[i]);
    if (e->kind == E_CALL) {
        const lower_alloc *a = storage_of(g, e->func);
        for (int d = 0; d < a->ndims; d++) {
            if (!a->min[d])
                cg_bug("allocation without a min:", a->name);
            n.kid[n.nkid++] = canon(g, a->min[d]);
        }
    }
    uint64_t h = mix(mix(mix((uint64_t)e->kind, (uint64_t)e->type), (uint64_t)e->op), (uint64_t)n.nkid);
    if (e->kind == E_CONST && e->type == SC_F32) {
        double f = e->c.f + 0.0;
        uint64_t bits;
        memcpy(&bits, &f, sizeof bits);
        h = mix(h, bits);
    } else if (e->kind == E_CONST) {
        h = mix(h, (uint64_t)cg_wrap(e->c.i, e->type));
    } else if (e->kind == E_VAR) {
        h = mix(h, str_hash(e->name));
    } else if (e->kind == E_PARAM || e->kind == E_CALL) {
        h = mix(h, (uint64_t)(uintptr_t)(e->kind == E_PARAM ? (void *)e->param : (void *)e->func));
    }
    for (int i = 0; i < n.nkid; i++)
        h = mix(h, (uint64_t)n.kid[i]);
    n.hash = h;
    for (size_t i = slot_of(h, g->scap); g->stab[i] >= 0; i = (i + 1) & (g->scap - 1))
        if (same_node(&g->node[g->stab[i]], &n)) {
            ptr_put(g, e, g->stab[i]);
            return g->stab[i];
        }
    if (g->nnode == g->capnode) {
        g->capnode = 2 * g->capnode + 64;
        g->node = cg_grow(g->node, sizeof *g->node * (size_t)g->capnode);
    }
    id = g->nnode++;
    g->node[id] = n;
    cg_node_range(g, id);
    stab_put(g, id);
    ptr_put(g, e, id);
    return id;
}

/* ---- expressions ---------------------------------------------------------------- */

/* The operand that is printed instead of node n, or -1: the other side of
 * a && 1 or a || 0, the chosen side of a select on a constant. */
static int stands_for(const cg_ctx *g, const cg_node *n)
{
    const sc_expr *e = n->e;
    if (e->kind == E_SELECT && cg_folds(&g->node[n->kid[0]]))
        return n->kid[g->node[n->kid[0]].lo ? 1 : 2];
    /* an integer min or max that its operands' ranges decide */
    if (e->kind == E_BINARY && (e->op == SC_MIN || e->op == SC_MAX) && e->type != SC_F32) {
        const cg_node *a = &g->node[n->kid[0]], *b = &g->node[n->kid[1]];
        bool min = e->op == SC_MIN;
        if (min ? a->hi <= b->lo : a->lo >= b->hi)
            return n->kid[0];
        if (min ? b->hi <= a->lo : b->lo >= a->hi)
            return n->kid[1];
    }
    if (e->kind == E_BINARY && (e->op == SC_AND || e->op == SC_OR)) {
        int64_t neutral = e->op == SC_AND;
        for (int i = 0; i < 2; i++) {
            const cg_node *k = &g->node[n->kid[i]];
            if (cg_folds(k) && k->lo == neutral)
                return n->kid[1 - i];
        }
    }
    return -1;
}

/* The node printed for id (see stands_for). */
static int resolve(const cg_ctx *g, int id)
{
    for (int k; (k = stands_for(g, &g->node[id])) >= 0;)
        id = k;
    return id;
}

void cg_int(cg_ctx *g, sc_type t, int64_t v)
{
    v = cg_wrap(v, t);
    if (t == SC_U32)
        cg_printf(g, "%" PRId64 "u", v);
    else if (v == INT32_MIN)
        cg_printf(g, "(-2147483647-1)");
    else
        cg_printf(g, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
}

static void pr_float(cg_ctx *g, double v)
{
    float f = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
    char s[64];
    if (isnan(f)) {
        cg_printf(g, "%s", g->t->nan);
        return;
    }
    if (isinf(f)) {
        cg_printf(g, f > 0 ? "%s" : "(-%s)", g->t->inf);
        return;
    }
    snprintf(s, sizeof s, "%.9g", (double)f);
    if (!strpbrk(s, ".e"))
        strcat(s, ".0");
    cg_printf(g, signbit(f) ? "(%sf)" : "%sf", s);
}

static void pr_u32_op(cg_ctx *g, const cg_node *n);

/* An operand as a 32-bit unsigned value, for wrapping i32 arithmetic; a
 * wrapping i32 + - * operand stays unsigned rather than going through
 * int32_t and back. */
static void pr_u32(cg_ctx *g, int id)
{
    const cg_node *n = &g->node[id];
    const sc_expr *e = n->e;
    if (cg_folds(n) && n->tmp < 0) {
        cg_printf(g, "%" PRIu32 "u", (uint32_t)cg_wrap(n->lo, SC_U32));
    } else if (n->tmp < 0 && n->wraps && e->type == SC_I32 && e->kind == E_BINARY) {
        cg_printf(g, "(");
        pr_u32_op(g, n);
        cg_printf(g, ")");
    } else {
        cg_printf(g, "(%s)", g->t->type[SC_U32]);
        cg_expr(g, id, false);
    }
}

/* (uint32_t)a op (uint32_t)b; a negative constant b turns + into - */
static void pr_u32_op(cg_ctx *g, const cg_node *n)
{
    const cg_node *nb = &g->node[n->kid[1]];
    int op = n->e->op;
    pr_u32(g, n->kid[0]);
    int64_t v = cg_folds(nb) && nb->tmp < 0 ? nb->lo : 0;
    if (op != SC_MUL && v < 0 && v != INT32_MIN) {
        cg_printf(g, " %s %" PRId64 "u", op == SC_ADD ? "-" : "+", -v);
    } else {
        cg_printf(g, " %s ", op == SC_ADD ? "+" : op == SC_SUB ? "-" : "*");
        pr_u32(g, n->kid[1]);
    }
}

static void helper_call(cg_ctx *g, int h, sc_type t, const char *name, int a, int b)
{
    g->used[h][t] = true;
    cg_printf(g, "sc_%s_%s(", name, sc_type_name(t));
    cg_expr(g, a, true);
    if (b >= 0) {
        cg_printf(g, ", ");
        cg_expr(g, b, true);
    }
    cg_printf(g, ")");
}

static void pr_infix(cg_ctx *g, const char *op, int a, int b, bool top)
{
    const cg_node *nb = &g->node[b];
    bool sum = !strcmp(op, "+") || !strcmp(op, "-");
    cg_printf(g, top ? "" : "(");
    cg_expr(g, a, false);
    if (sum && nb->tmp < 0 && cg_folds(nb) && nb->lo < 0 && cg_fits(nb->e->type, -nb->lo, -nb->lo)) {
        /* a + -3 as a - 3: the same value in exact (non-wrapping) arithmetic */
        cg_printf(g, " %s ", op[0] == '+' ? "-" : "+");
        cg_int(g, nb->e->type, -nb->lo);
    } else if (sum && nb->tmp < 0 && nb->fconst && signbit(nb->fval) && !isnan(nb->fval)) {
        /* and x + -0.5f as x - 0.5f, which IEEE defines as that sum */
        cg_printf(g, " %s ", op[0] == '+' ? "-" : "+");
        pr_float(g, -nb->fval);
    } else {
        cg_printf(g, " %s ", op);
        cg_expr(g, b, false);
    }
    cg_printf(g, top ? "" : ")");
}

static const char *const c_ops[SC_BINOP_COUNT] = {
    [SC_ADD] = "+", [SC_SUB] = "-", [SC_MUL] = "*", [SC_DIV] = "/", [SC_MOD] = "%",
    [SC_EQ] = "==", [SC_NE] = "!=", [SC_LT] = "<", [SC_LE] = "<=", [SC_GT] = ">",
    [SC_GE] = ">=", [SC_AND] = "&&", [SC_OR] = "||", [SC_BITAND] = "&",
    [SC_BITOR] = "|", [SC_BITXOR] = "^",
};

/* + - * of an integer type (see the top of the file). */
static void pr_arith(cg_ctx *g, const cg_node *n, bool top)
{
    const sc_expr *e = n->e;
    sc_type t = e->type;
    int a = n->kid[0], b = n->kid[1], op = e->op;
    const char *T = g->t->type[t];
    if (!n->wraps || t == SC_U32) {
        pr_infix(g, c_ops[op], a, b, top);
    } else if (t == SC_I32) {
        cg_printf(g, "((%s)(", T);
        pr_u32_op(g, n);
        cg_printf(g, "))");
    } else if (t == SC_U16 && op == SC_MUL) {
        cg_printf(g, "((%s)(", T);
        pr_u32(g, a);
        cg_printf(g, " * ");
        pr_u32(g, b);
        cg_printf(g, "))");
    } else {
        cg_printf(g, "((%s)", T);
        pr_infix(g, c_ops[op], a, b, false);
        cg_printf(g, ")");
    }
}

/* Floor division and modulo by 2^k (k >= 1) of an integer that may be
 * negative: an arithmetic shift right and a mask, the language's floor
 * semantics for every sign (every back end shifts a negative signed
 * value arithmetically).  The helpers' branches kept PoCL from
 * vectorizing larger kernels (camera_pipe's out: codegen.h, generation
 * 9). */
static void pr_pow2(cg_ctx *g, const cg_node *n, int op, int a, int k)
{
    const char *T = g->t->type[n->e->type];
    g->pow2_shifts++;
    cg_printf(g, "((%s)((", T);
    cg_expr(g, a, true);
    if (op == SC_DIV)
        cg_printf(g, ") >> %d))", k);
    else
        cg_printf(g, ") & %lld))", (long long)((1LL << k) - 1));
}

static void pr_binary(cg_ctx *g, const cg_node *n, bool top)
{
    const sc_expr *e = n->e;
    sc_type at = e->args[0]->type, t = e->type;
    int a = n->kid[0], b = n->kid[1], op = e->op;
    const cg_node *na = &g->node[a], *nb = &g->node[b];
    if (op >= SC_EQ && op <= SC_OR) {
        pr_infix(g, c_ops[op], a, b, top);
        return;
    }
    if (at == SC_F32) {
        if (op == SC_MOD)
            helper_call(g, H_MOD, SC_F32, "mod", a, b);
        else if (op == SC_MIN || op == SC_MAX) {
            const char *fn = op == SC_MIN ? g->t->fmin : g->t->fmax;
            const char *cpu_fn = op == SC_MIN ? g->t->cpu_fmin : g->t->cpu_fmax;
            cg_printf(g, "%s(", g->prog && g->prog->cpu && cpu_fn ? cpu_fn : fn);
            cg_expr(g, a, true);
            cg_printf(g, ", ");
            cg_expr(g, b, true);
            cg_printf(g, ")");
        } else
            pr_infix(g, c_ops[op], a, b, top);
        return;
    }
    switch (op) {
    case SC_ADD: case SC_SUB: case SC_MUL:
        pr_arith(g, n, top);
        break;
    case SC_DIV: case SC_MOD:
        /* plain C division where it is floor division and cannot trap */
        if (na->lo >= 0 && nb->lo > 0 && nb->lo == nb->hi)
            pr_infix(g, c_ops[op], a, b, top);
        else if (nb->lo == nb->hi && base_log2_exact(nb->lo) > 0)
            pr_pow2(g, n, op, a, base_log2_exact(nb->lo));
        else
            helper_call(g, op == SC_DIV ? H_DIV : H_MOD, t, op == SC_DIV ? "div" : "mod", a, b);
        break;
    case SC_MIN: g->undecided++; helper_call(g, H_MIN, t, "min", a, b); break;
    case SC_MAX: g->undecided++; helper_call(g, H_MAX, t, "max", a, b); break;
    case SC_SHL: helper_call(g, H_SHL, t, "shl", a, b); break;
    case SC_SHR: helper_call(g, H_SHR, t, "shr", a, b); break;
    default:
        /* & | ^: operands in range give a result in range */
        pr_infix(g, c_ops[op], a, b, top);
        break;
    }
}

static void pr_cast(cg_ctx *g, const cg_node *n)
{
    sc_type to = n->e->type, from = n->e->args[0]->type;
    int a = n->kid[0];
    if (to == from) {
        cg_expr(g, a, false);
    } else if (to == SC_BOOL) {
        cg_printf(g, "(");
        cg_expr(g, a, false);
        cg_printf(g, from == SC_F32 ? " != 0.0f)" : " != 0)");
    } else if (from == SC_F32 && to != SC_F32) {
        g->used[H_FTOI][to] = true;
        cg_printf(g, "sc_f32_to_%s(", sc_type_name(to));
        cg_expr(g, a, true);
        cg_printf(g, ")");
    } else {
        cg_printf(g, "((%s)", g->t->type[to]);
        cg_expr(g, a, false);
        cg_printf(g, ")");
    }
}

static void pr_unary(cg_ctx *g, const cg_node *n)
{
    sc_type t = n->e->type;
    int a = n->kid[0];
    const char *T = g->t->type[t];
    if (n->e->op == SC_NOT) {
        cg_printf(g, "(!");
        cg_expr(g, a, false);
        cg_printf(g, ")");
    } else if (n->e->op == SC_BITNOT) {
        cg_printf(g, t == SC_U8 || t == SC_U16 ? "((%s)(~" : "(~", T);
        cg_expr(g, a, false);
        cg_printf(g, t == SC_U8 || t == SC_U16 ? "))" : ")");
    } else if (t == SC_F32 || !n->wraps) {
        cg_printf(g, "(-");
        cg_expr(g, a, false);
        cg_printf(g, ")");
    } else if (t == SC_I32) {
        cg_printf(g, "((%s)(0u - ", T);
        pr_u32(g, a);
        cg_printf(g, "))");
    } else if (t == SC_U32) {
        cg_printf(g, "(0u - ");
        cg_expr(g, a, false);
        cg_printf(g, ")");
    } else {
        cg_printf(g, "((%s)(-", T);
        cg_expr(g, a, false);
        cg_printf(g, "))");
    }
}

static void pr_math(cg_ctx *g, const cg_node *n)
{
    const sc_expr *e = n->e;
    if (e->op == SC_ABS && e->type != SC_F32) {
        if (sc_type_is_signed(e->type))
            helper_call(g, H_ABS, e->type, "abs", n->kid[0], -1);
        else
            cg_expr(g, n->kid[0], false);
        return;
    }
    if (ir_expr_is_square(e)) {
        /* its operand a temporary (count_uses counts it twice) */
        cg_printf(g, "(");
        cg_expr(g, n->kid[0], false);
        cg_printf(g, " * ");
        cg_expr(g, n->kid[0], false);
        cg_printf(g, ")");
        return;
    }
    cg_printf(g, "%s(", cg_math_fn(g, (sc_mathfn)e->op));
    for (int i = 0; i < n->nkid; i++) {
        cg_printf(g, i ? ", " : "");
        cg_expr(g, n->kid[i], true);
    }
    cg_printf(g, ")");
}

/* ---- private arrays' indices as sums of loop counters ---- */

/* An i32 value as the sum of coef[i] * term[i] plus k, a term being a
 * variable or (counter) the counter v_u_ of a loop printed counted; ok
 * false where it is not one (a division, a call, too many terms). */
enum { CG_LIN_TERMS = 24, CG_LIN_TEMPS = 3 };
struct cg_lin {
    int n;
    const char *var[CG_LIN_TERMS];
    bool counter[CG_LIN_TERMS];
    int64_t coef[CG_LIN_TERMS];
    int64_t k;
    bool ok;
    bool capped;        /* a clamped min taken as its operand inside a guard (guard_caps) */
    /* With temps_ok (a private array's index for print_private_pick): the
     * temporaries (nodes printed sc_tN) of a few values that are not
     * linear forms, each a term of its own (lin_temp), ntemp of them. */
    bool temps_ok;
    int ntemp;
    int temp[CG_LIN_TEMPS];
    int64_t tcoef[CG_LIN_TEMPS];
};

static void lin_term(cg_lin *l, const char *v, bool counter, int64_t c)
{
    for (int i = 0; i < l->n; i++)
        if (l->counter[i] == counter && !strcmp(l->var[i], v)) {
            l->coef[i] += c;
            return;
        }
    if (l->n == CG_LIN_TERMS) {
        l->ok = false;
        return;
    }
    l->var[l->n] = v;
    l->counter[l->n] = counter;
    l->coef[l->n++] = c;
}

static const cg_var *in_scope(const cg_ctx *g, const char *name)
{
    for (int i = g->nenv - 1; i >= 0; i--)
        if (!strcmp(g->env[i].name, name)) return &g->env[i];
    return NULL;
}

/* l += scale * sub's terms and constant. */
static void lin_add_form(cg_lin *l, const cg_lin *sub, int64_t scale)
{
    for (int i = 0; i < sub->n; i++) lin_term(l, sub->var[i], sub->counter[i], scale * sub->coef[i]);
    l->k += scale * sub->k;
    l->capped |= sub->capped;
}

/* Whether a guard in scope keeps the linear form a at most k: a variable
 * whose hi the guard narrowed (narrow_env) has the linear form a + d
 * plus unrolled loops' counters with coefficients of at least 0 (each
 * counter is at least 0), so a <= hi - d, and hi - d <= k.  Inside a
 * partial tile's guard, `x < 4`, the clamp min(x_t, 3) that keeps a
 * ragged tile's last work-items' producers in range is x_t itself. */
static bool guard_caps(const cg_ctx *g, const cg_lin *a, int64_t k)
{
    for (int i = g->nenv - 1; i >= 0; i--) {
        const cg_var *v = &g->env[i];
        if (!v->narrowed || v->lin < 0) continue;
        cg_lin f = g->lins[v->lin];
        if (v->counted) lin_term(&f, v->name, true, 1);
        lin_add_form(&f, a, -1);
        bool fits = f.ok && v->hi - f.k <= k;
        for (int t = 0; t < f.n && fits; t++)
            fits = f.coef[t] == 0 || (f.counter[t] && f.coef[t] > 0);
        if (fits) return true;
    }
    return false;
}

void cg_clamped_min_of(cg_ctx *g, int id, cg_var *v)
{
    const cg_node *n = &g->node[resolve(g, id)];
    const sc_expr *e = n->e;
    if (!g->t->unroll_counted || e->type != SC_I32 || e->kind != E_BINARY || e->op != SC_MIN) return;
    int a = n->kid[0], k = n->kid[1];
    if (cg_folds(&g->node[resolve(g, a)])) {
        a = n->kid[1];
        k = n->kid[0];
    }
    if (!cg_folds(&g->node[resolve(g, k)])) return;
    int64_t kv = g->node[resolve(g, k)].lo;
    int lin = cg_lin_of(g, a);
    if (lin < 0) return;
    v->cmin_lin = lin;
    v->cmin_k = kv;
}

enum { PRIVATE_PICK_CASES = 8, PRIVATE_PICK_TERMS = 3 };

/* l += scale * temporary t (a node printed sc_tN) where l takes them and t
 * has at most PRIVATE_PICK_CASES values: a data-dependent index, as
 * local_laplacian's level k = clamp(int(gray * 7), 0, 6).  False where it
 * cannot be a term. */
static bool lin_temp(const cg_ctx *g, cg_lin *l, int t, int64_t scale)
{
    const cg_node *n = &g->node[t];
    if (!l->temps_ok || n->tmp < 0 || n->e->type != SC_I32 || n->hi < n->lo || n->hi - n->lo >= PRIVATE_PICK_CASES)
        return false;
    for (int i = 0; i < l->ntemp; i++)
        if (l->temp[i] == t) {
            l->tcoef[i] += scale;
            return true;
        }
    if (l->ntemp == CG_LIN_TEMPS) return false;
    l->temp[l->ntemp] = t;
    l->tcoef[l->ntemp++] = scale;
    return true;
}

/* l += scale * node id as printed (resolve): a variable with a linear
 * form taken through it (plus its counter for a counted loop's), a
 * clamped min inside a guard that leaves it its operand (guard_caps)
 * as that operand, any other variable as itself. */
static void lin_add(const cg_ctx *g, int id, int64_t scale, cg_lin *l)
{
    if (!l->ok) return;
    int r = resolve(g, id);
    const cg_node *n = &g->node[r];
    const sc_expr *e = n->e;
    if (e->type != SC_I32) {
        l->ok = false;
    } else if (cg_folds(n)) {
        l->k += scale * n->lo;
    } else if (e->kind == E_VAR) {
        const cg_var *v = in_scope(g, e->name);
        if (v && v->lin < 0 && v->cmin_lin >= 0 && guard_caps(g, &g->lins[v->cmin_lin], v->cmin_k)) {
            lin_add_form(l, &g->lins[v->cmin_lin], scale);
            l->capped = true;
            return;
        }
        if (!v || v->lin < 0) {
            lin_term(l, e->name, false, scale);
            return;
        }
        lin_add_form(l, &g->lins[v->lin], scale);
        if (v->counted) lin_term(l, e->name, true, scale);
    } else if (e->kind == E_BINARY && (e->op == SC_ADD || e->op == SC_SUB)) {
        lin_add(g, n->kid[0], scale, l);
        lin_add(g, n->kid[1], e->op == SC_ADD ? scale : -scale, l);
    } else if (e->kind == E_BINARY && e->op == SC_MUL && cg_folds(&g->node[resolve(g, n->kid[1])])) {
        lin_add(g, n->kid[0], scale * g->node[resolve(g, n->kid[1])].lo, l);
    } else if (e->kind == E_BINARY && e->op == SC_MUL && cg_folds(&g->node[resolve(g, n->kid[0])])) {
        lin_add(g, n->kid[1], scale * g->node[resolve(g, n->kid[0])].lo, l);
    } else if (!lin_temp(g, l, g->node[id].tmp >= 0 ? id : r, scale)) {
        l->ok = false;
    }
}

int cg_lin_of(cg_ctx *g, int id)
{
    cg_lin l = { .ok = true };
    lin_add(g, id, 1, &l);
    if (!l.ok) return -1;
    if (g->nlins == g->caplins) {
        g->caplins = 2 * g->caplins + 16;
        g->lins = cg_grow(g->lins, sizeof *g->lins * (size_t)g->caplins);
    }
    g->lins[g->nlins] = l;
    return g->nlins++;
}

/* Prints the counters' terms of l and the constant k: a private array's
 * flat index (print_linear_index, print_private_pick). */
static void print_counter_sum(cg_ctx *g, const cg_lin *l, int64_t k)
{
    bool any = false;
    for (int i = 0; i < l->n; i++) {
        int64_t c = l->coef[i];
        if (c == 0 || !l->counter[i]) continue;
        cg_printf(g, any ? (c < 0 ? " - " : " + ") : (c < 0 ? "-" : ""));
        cg_printf(g, "%s_u_", cg_name(g, l->var[i]));
        if (c != 1 && c != -1)
            cg_printf(g, " * %" PRId64, c < 0 ? -c : c);
        any = true;
    }
    if (!any)
        cg_printf(g, "%" PRId64, k);
    else if (k)
        cg_printf(g, " %s %" PRId64, k < 0 ? "-" : "+", k < 0 ? -k : k);
}

/* The flat index of (coord) in private array a less its mins, as a
 * linear form (ok false where it is none). */
static cg_lin private_index(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min, bool temps)
{
    cg_lin l = { .ok = true, .temps_ok = temps };
    for (int d = 0; d < a->ndims && l.ok; d++) {
        lin_add(g, coord[d], a->stride[d], &l);
        lin_add(g, min[d], -a->stride[d], &l);
    }
    return l;
}

/* A private array's flat index as a sum of unrolled loops' counters and a
 * constant, where the coordinates and mins taken through their variables'
 * linear forms leave nothing else: within a thread's tile the tile's base
 * cancels (blur_x_r[out_y_u_ + 2], not blur_x_r[(out_x - blur_x_x_min) +
 * ((out_y + 1) - blur_x_y_min)]).  PoCL keeps an array whose indices it
 * does not see to be constants in memory: box_blur's out over 16 rows a
 * work-item ran 1.3 ms with the long form, 0.47 ms with this one.  False
 * (nothing printed) where the index is not such a sum (only OpenCL prints
 * loops counted: cg_target.unroll_counted). */
static bool print_linear_index(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min)
{
    cg_lin l = private_index(g, a, coord, min, false);
    if (!l.ok) return false;
    for (int i = 0; i < l.n; i++)
        if (l.coef[i] != 0 && !l.counter[i]) return false;
    g->guarded_mins += l.capped && !g->probing;
    print_counter_sum(g, &l, l.k);
    return true;
}

/* ---- private arrays read at one of a few values of other variables ---- */

/* A pick's case: its terms equal to their values (print_private_pick). */
static void pick_case(cg_ctx *g, const cg_lin *l, const int *var, const int *tmp, int nterm, const int64_t *value)
{
    for (int t = 0; t < nterm; t++) {
        cg_printf(g, t ? " && " : "");
        if (tmp[t] >= 0)
            cg_printf(g, "sc_t%d", tmp[t]);
        else
            cg_printf(g, "%s", cg_name(g, l->var[var[t]]));
        cg_printf(g, " == %" PRId64, value[t]);
    }
}

/* A pick's element: the array at l's counters plus the constant k. */
static void pick_element(cg_ctx *g, const lower_alloc *a, const cg_lin *l, int64_t k)
{
    cg_printf(g, "%s[", cg_name(g, a->name));
    print_counter_sum(g, l, k);
    cg_printf(g, "]");
}

/* A private array's read (OpenCL: loops printed counted) whose flat index
 * is a sum of unrolled loops' counters, a constant and up to
 * PRIVATE_PICK_TERMS other variables or temporaries of at most
 * PRIVATE_PICK_CASES values together (their ranges): a block's coordinate
 * that the tile of a Func in its threads spans whole, as interpolate's
 * out, one channel c a block, reads channels c and 3 of interp_0 computed
 * for all four; or a value computed from data, as local_laplacian's out
 * reads lp_0, computed in its threads for all 8 levels, at levels k and
 * k + 1 of the pixel's gray value (a temporary, k in [0, 6]).  It is
 * printed as a select over those values whose sides index the array by
 * counters and constants alone, (c == 0 ? r[u + 0] : c == 1 ? r[u + 2] :
 * r[u + 4]): PoCL keeps an array in memory, and its work-item loop
 * scalar, where an index into it is not plainly a constant (codegen.h,
 * generations 19 and 25).  Values whose constant is past the array's end,
 * with no counter counting down, never occur and are left out; the last
 * value left is the select's default.  False (nothing printed) for
 * anything else. */
static bool print_private_pick(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min)
{
    if (!g->t->unroll_counted || a->mem != MEM_LOCAL || a->count > INT32_MAX)
        return false;
    cg_lin l = private_index(g, a, coord, min, true);
    if (!l.ok) return false;
    /* the terms: variables (var >= 0) and temporaries (tmp >= 0) */
    int var[PRIVATE_PICK_TERMS], tmp[PRIVATE_PICK_TERMS], nterm = 0;
    int64_t lo[PRIVATE_PICK_TERMS], span[PRIVATE_PICK_TERMS], coef[PRIVATE_PICK_TERMS];
    bool down = false;
    int64_t cases = 1;
    for (int i = 0; i < l.n + l.ntemp; i++) {
        int64_t c = i < l.n ? l.coef[i] : l.tcoef[i - l.n], vlo, vhi;
        if (c == 0) continue;
        if (i < l.n && l.counter[i]) {
            down |= c < 0;
            continue;
        }
        if (i < l.n) {
            const cg_var *v = in_scope(g, l.var[i]);
            if (!v) return false;
            vlo = v->lo;
            vhi = v->hi;
        } else {
            vlo = g->node[l.temp[i - l.n]].lo;
            vhi = g->node[l.temp[i - l.n]].hi;
        }
        if (nterm == PRIVATE_PICK_TERMS || vhi < vlo || vhi - vlo >= PRIVATE_PICK_CASES)
            return false;
        cases *= vhi - vlo + 1;
        if (cases > PRIVATE_PICK_CASES) return false;
        var[nterm] = i < l.n ? i : -1;
        tmp[nterm] = i < l.n ? -1 : g->node[l.temp[i - l.n]].tmp;
        lo[nterm] = vlo;
        span[nterm] = vhi - vlo + 1;
        coef[nterm++] = c;
    }
    if (nterm == 0) return false;
    bool data = false;
    for (int t = 0; t < nterm; t++) data |= tmp[t] >= 0;
    if (data && !g->t->lane_select) return false;
    /* select() reads every case's element, so (data) each case's indices
     * over the counters' ranges must lie in the array or out of it whole
     * (a case that never occurs); ?: reads only the case that occurs */
    int64_t umin = 0, umax = 0;
    for (int i = 0; data && i < l.n; i++) {
        if (!l.counter[i] || !l.coef[i]) continue;
        const cg_var *v = in_scope(g, l.var[i]);
        if (!v || !v->counted || v->extent < 1) return false;
        int64_t span_u = l.coef[i] * (v->extent - 1);
        umin += span_u < 0 ? span_u : 0;
        umax += span_u > 0 ? span_u : 0;
    }
    /* the cases that may occur, each its terms' values (digits) */
    int64_t value[PRIVATE_PICK_CASES][PRIVATE_PICK_TERMS], konst[PRIVATE_PICK_CASES];
    int n = 0;
    for (int64_t c = 0; c < cases; c++) {
        int64_t rest = c, k = l.k;
        for (int t = 0; t < nterm; t++) {
            value[n][t] = lo[t] + rest % span[t];
            rest /= span[t];
            k += coef[t] * value[n][t];
        }
        if (data) {
            if (k + umax < 0 || k + umin >= a->count) continue;
            if (k + umin < 0 || k + umax >= a->count) return false;
        } else if (!down && k >= a->count) {
            continue;
        }
        konst[n++] = k;
    }
    if (n == 0) return false;
    if (!g->probing) {
        g->private_picks += !data;
        g->data_picks += data;
        g->guarded_mins += l.capped;
    }
    if (!data) {
        /* (c == 0 ? r[u] : c == 1 ? r[u + 2] : r[u + 4]): the same case in
         * every lane, a branch the compiler takes out of the work-item loop */
        cg_printf(g, "(");
        for (int c = 0; c < n; c++) {
            if (c + 1 < n) {
                pick_case(g, &l, var, tmp, nterm, value[c]);
                cg_printf(g, " ? ");
            }
            pick_element(g, a, &l, konst[c]);
            cg_printf(g, "%s", c + 1 < n ? " : " : "");
        }
        cg_printf(g, ")");
        return true;
    }
    /* select(select(r[u + 6], r[u + 5], (int)(k == 5)), ..., r[u], (int)(k == 0)):
     * lanes that differ in k, and a chain of branches on k, which LLVM
     * makes a switch, left PoCL's work-item loop scalar (the cases are
     * disjoint, so their order does not matter) */
    int bits = sc_type_bits(a->func->type);   /* bool (1 bit) is an int in the generated code */
    const char *cond = bits == 8 ? "char" : bits == 16 ? "short" : "int";
    for (int c = 0; c + 1 < n; c++) cg_printf(g, "%s(", g->t->lane_select);
    pick_element(g, a, &l, konst[n - 1]);
    for (int c = n - 2; c >= 0; c--) {
        cg_printf(g, ", ");
        pick_element(g, a, &l, konst[c]);
        cg_printf(g, ", (%s)(", cond);
        pick_case(g, &l, var, tmp, nterm, value[c]);
        cg_printf(g, "))");
    }
    return true;
}

/* Flat element index of (coords) in a, the coordinates and mins being
 * nodes: the sum of (c - min) * stride, with constant offsets folded into
 * the terms (x + 1 - 0 is x + 1) and constant terms into one number; a
 * private array's (MEM_LOCAL) as print_linear_index's sum where it is
 * one. */
static void print_index_dims(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min, int dlo, int dhi)
{
    bool wide = a->count > INT32_MAX, any = false;
    int64_t konst = 0;
    for (int d = dlo; d < dhi; d++) {
        const cg_node *c = &g->node[coord[d]], *m = &g->node[min[d]];
        if (cg_folds(c) && cg_folds(m)) {
            konst += (c->lo - m->lo) * a->stride[d];
            continue;
        }
        bool bare = dhi - dlo == 1 && a->stride[d] == 1 && !wide;   /* alone in [] */
        cg_printf(g, any ? " + " : "");
        any = true;
        if (wide)
            cg_printf(g, "(%s)", g->t->i64);
        if (cg_folds(m)) {
            int64_t off = -m->lo;
            int base = coord[d];
            const sc_expr *ce = c->e;
            if (c->tmp < 0 && ce->kind == E_BINARY && ce->type == SC_I32 && !c->wraps &&
                (ce->op == SC_ADD || ce->op == SC_SUB) && cg_folds(&g->node[c->kid[1]])) {
                int64_t k = g->node[c->kid[1]].lo;
                off += ce->op == SC_ADD ? k : -k;
                base = c->kid[0];
            }
            if (off == 0) {
                cg_expr(g, base, bare);
            } else {
                cg_printf(g, bare ? "" : "(");
                cg_expr(g, base, false);
                cg_printf(g, " %s %" PRId64 "%s", off < 0 ? "-" : "+", off < 0 ? -off : off,
                          bare ? "" : ")");
            }
        } else {
            cg_printf(g, "(");
            cg_expr(g, coord[d], false);
            cg_printf(g, " - ");
            cg_expr(g, min[d], false);
            cg_printf(g, ")");
        }
        if (a->stride[d] != 1)
            cg_printf(g, " * %" PRId64, a->stride[d]);
    }
    if (!any)
        cg_printf(g, "%" PRId64, konst);
    else if (konst)
        cg_printf(g, " %s %" PRId64, konst < 0 ? "-" : "+", konst < 0 ? -konst : konst);
}

void cg_index(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min)
{
    if (a->mem == MEM_LOCAL && a->count <= INT32_MAX && print_linear_index(g, a, coord, min))
        return;
    print_index_dims(g, a, coord, min, 0, a->ndims);
}

/* Whether node id, as printed, loads a value (a data-dependent index). */
static bool loads(const cg_ctx *g, int id)
{
    const cg_node *n = &g->node[resolve(g, id)];
    if (n->e->kind == E_CALL)
        return true;
    for (int i = 0; i < n->nkid; i++)
        if (loads(g, n->kid[i])) return true;
    return false;
}

/* Whether an access to a at coord takes its row apart (cg_access): OpenCL
 * for a CPU, a global or shared array of two or more dimensions whose
 * first coordinate varies and whose other coordinates are not all linear
 * forms but load nothing (a clamped row at an image's edge, a row y / 2).
 * PoCL left the work-item loop of `a[x + clamp(y) * W]` scalar and
 * vectorized that of `(a + clamp(y) * W)[x]`
 * (docs/backends.md, "Generation 16").  A data-dependent row differs from
 * work-item to work-item, a gather either way: it is left as it was. */
static bool row_apart(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min)
{
    if (!g->t->row_apart_on_cpu || !g->prog->cpu || a->mem == MEM_LOCAL || a->ndims < 2 || a->count > INT32_MAX ||
        cg_folds(&g->node[coord[0]]))
        return false;
    cg_lin l = { .ok = true };
    for (int d = 1; d < a->ndims && l.ok; d++) {
        lin_add(g, coord[d], a->stride[d], &l);
        lin_add(g, min[d], -a->stride[d], &l);
    }
    if (l.ok)
        return false;
    for (int d = 1; d < a->ndims; d++)
        if (loads(g, coord[d]) || loads(g, min[d])) return false;
    return true;
}

void cg_access(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min)
{
    if (row_apart(g, a, coord, min)) {
        g->rows_apart += !g->probing;
        g->rows_apart_edge += !g->probing && g->edge_copy;
        cg_printf(g, "(%s + (", cg_name(g, a->name));
        print_index_dims(g, a, coord, min, 1, a->ndims);
        cg_printf(g, "))[");
        print_index_dims(g, a, coord, min, 0, 1);
    } else {
        cg_printf(g, "%s[", cg_name(g, a->name));
        cg_index(g, a, coord, min);
    }
    cg_printf(g, "]");
}

/* The answer for node n, its operands' answers memoized (a statement's
 * DAG shares nodes; the variables in scope do not change within it). */
static bool lane_varying_node(cg_ctx *g, cg_node *n)
{
    if (cg_folds(n) || n->fconst)
        return false;
    switch (n->e->kind) {
    case E_CONST:
    case E_PARAM:
        return false;
    case E_VAR: {
        const cg_var *v = in_scope(g, n->e->name);
        return !v || v->lane;
    }
    case E_CALL:
        return true;
    default:
        for (int i = 0; i < n->nkid; i++)
            if (cg_lane_varying(g, n->kid[i])) return true;
        return false;
    }
}

bool cg_lane_varying(cg_ctx *g, int id)
{
    cg_node *n = &g->node[resolve(g, id)];
    if (!n->lane)
        n->lane = lane_varying_node(g, n) ? 2 : 1;
    return n->lane == 2;
}

/* ---- selects between loads: one load through the selected pointer ---- */

/* A load under a select (pointer_select): its storage, its coordinates'
 * and mins' nodes, and its column (the first coordinate less its min,
 * times its stride) as a linear form. */
typedef struct {
    const lower_alloc *a;
    const int *coord, *min;
    cg_lin col;
} select_leaf;

enum { SELECT_LEAVES = 16 };

/* Whether every term of linear form a (not its constant) is in b. */
static bool terms_in(const cg_lin *a, const cg_lin *b)
{
    for (int i = 0; i < a->n; i++) {
        if (a->coef[i] == 0) continue;
        bool found = false;
        for (int j = 0; j < b->n && !found; j++)
            found = b->counter[j] == a->counter[i] && b->coef[j] == a->coef[i] && !strcmp(b->var[j], a->var[i]);
        if (!found) return false;
    }
    return true;
}

/* The loads that node id selects between, where it is a load, or a
 * select whose condition is the same in every lane and whose sides are
 * such (recursively); false for anything else, for a value printed as a
 * temporary (loaded already), for a private array, and for a load whose
 * row (the other coordinates) differs from lane to lane or whose column
 * is not a linear form. */
static bool select_leaves(cg_ctx *g, int id, select_leaf *leaf, int *n)
{
    const cg_node *nd = &g->node[resolve(g, id)];
    const sc_expr *e = nd->e;
    if (nd->tmp >= 0)
        return false;
    if (e->kind == E_SELECT)
        return !cg_lane_varying(g, nd->kid[0]) && select_leaves(g, nd->kid[1], leaf, n) &&
               select_leaves(g, nd->kid[2], leaf, n);
    if (e->kind != E_CALL || *n == SELECT_LEAVES)
        return false;
    const lower_alloc *a = storage_of(g, e->func);
    if (a->mem == MEM_LOCAL || a->count > INT32_MAX)
        return false;
    const int *coord = nd->kid, *min = nd->kid + e->nargs;
    for (int d = 1; d < a->ndims; d++)
        if (cg_lane_varying(g, coord[d]) || cg_lane_varying(g, min[d])) return false;
    select_leaf *l = &leaf[(*n)++];
    *l = (select_leaf){ a, coord, min, { .ok = true } };
    lin_add(g, coord[0], a->stride[0], &l->col);
    lin_add(g, min[0], -a->stride[0], &l->col);
    return l->col.ok;
}

/* Whether select node id is printed as one load through a selected
 * pointer: OpenCL for a CPU, a select between loads of one element type
 * and memory (select_leaves) whose columns differ by constants.  PoCL
 * left the work-item loop of `c ? a[x + ra] : b[x + rb]` scalar (the
 * loads are not safe to speculate), and vectorizes `(c ? a + ra : b +
 * rb)[x]`, whose pointer is the same in every lane (docs/backends.md,
 * "Generation 17"). */
static bool pointer_select(cg_ctx *g, int id, select_leaf *leaf, int *n)
{
    *n = 0;
    if (!cg_tracks_lanes(g) || !select_leaves(g, id, leaf, n))
        return false;
    for (int i = 1; i < *n; i++)
        if (cg_alloc_type(leaf[i].a) != cg_alloc_type(leaf[0].a) || leaf[i].a->mem != leaf[0].a->mem ||
            !terms_in(&leaf[i].col, &leaf[0].col) ||
            !terms_in(&leaf[0].col, &leaf[i].col))
            return false;
    return true;
}

/* The pointer of select node id's load (pointer_select): a select of the
 * leaves' arrays plus their rows and their columns' constants less the
 * printed column's (k0); *next counts the leaves printed. */
static void print_select_pointer(cg_ctx *g, int id, const select_leaf *leaf, int *next, int64_t k0)
{
    const cg_node *nd = &g->node[resolve(g, id)];
    if (nd->e->kind == E_SELECT) {
        cg_printf(g, "(");
        cg_expr(g, nd->kid[0], false);
        cg_printf(g, " ? ");
        print_select_pointer(g, nd->kid[1], leaf, next, k0);
        cg_printf(g, " : ");
        print_select_pointer(g, nd->kid[2], leaf, next, k0);
        cg_printf(g, ")");
        return;
    }
    const select_leaf *l = &leaf[(*next)++];
    int64_t delta = l->col.k - k0;
    cg_printf(g, "(%s", cg_name(g, l->a->name));
    if (l->a->ndims > 1) {
        cg_printf(g, " + (");
        print_index_dims(g, l->a, l->coord, l->min, 1, l->a->ndims);
        cg_printf(g, ")");
    }
    if (delta)
        cg_printf(g, " %s %" PRId64, delta < 0 ? "-" : "+", delta < 0 ? -delta : delta);
    cg_printf(g, ")");
    cg_mark(g, l->a);
}

static void print_pointer_select(cg_ctx *g, int id, const select_leaf *leaf)
{
    g->pointer_selects += !g->probing;
    int next = 0;
    cg_printf(g, "(");
    print_select_pointer(g, id, leaf, &next, leaf[0].col.k);
    cg_printf(g, ")[");
    print_index_dims(g, leaf[0].a, leaf[0].coord, leaf[0].min, 0, 1);
    cg_printf(g, "]");
}

/* Prints node id; `top` drops the outer parentheses of an infix form. */
void cg_expr(cg_ctx *g, int id, bool top)
{
    const cg_node *n = &g->node[id];
    const sc_expr *e = n->e;
    if (n->tmp >= 0) {
        cg_printf(g, "sc_t%d", n->tmp);
        return;
    }
    if (cg_folds(n)) {
        cg_int(g, e->type, n->lo);
        return;
    }
    if (n->fconst) {
        pr_float(g, n->fval);
        return;
    }
    if (stands_for(g, n) >= 0) {
        cg_expr(g, resolve(g, id), top);
        return;
    }
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32)
            pr_float(g, e->c.f);
        else
            cg_int(g, e->type, e->c.i);
        break;
    case E_VAR:
        g->printed_bid |= !strcmp(e->name, "bid");
        g->printed_tid |= !strcmp(e->name, "tid");
        for (int d = 0; d < 3; d++) g->printed_tidn[d] |= !strcmp(e->name, lower_tid_names[d]);
        cg_printf(g, "%s", cg_name(g, e->name));
        break;
    case E_PARAM:
        cg_mark(g, e->param);
        if (e->type == cg_param_abi_type(e->param))
            cg_printf(g, "%s", cg_name(g, e->param->name));
        else
            cg_printf(g, "((%s)%s)", g->t->type[e->type], cg_name(g, e->param->name));
        break;
    case E_CALL: {
        const lower_alloc *a = storage_of(g, e->func);
        cg_mark(g, a);
        if (!print_private_pick(g, a, n->kid, n->kid + e->nargs))
            cg_access(g, a, n->kid, n->kid + e->nargs);
        break;
    }
    case E_CAST:   pr_cast(g, n); break;
    case E_UNARY:  pr_unary(g, n); break;
    case E_BINARY: pr_binary(g, n, top); break;
    case E_MATH:   pr_math(g, n); break;
    case E_SELECT: {
        g->undecided++;
        select_leaf leaf[SELECT_LEAVES];
        int nleaf;
        if (pointer_select(g, id, leaf, &nleaf)) {
            print_pointer_select(g, id, leaf);
            break;
        }
        cg_printf(g, top ? "" : "(");
        cg_expr(g, n->kid[0], false);
        cg_printf(g, " ? ");
        cg_expr(g, n->kid[1], false);
        cg_printf(g, " : ");
        cg_expr(g, n->kid[2], false);
        cg_printf(g, top ? "" : ")");
        break;
    }
    default:
        cg_bug("unknown expression kind", NULL);
    }
}

/* ---- statements -------------------------------------------------------------------- */

void cg_st_begin(cg_ctx *g)
{
    g->nnode = 0;
    tables_reset(g);
}

/* Printed as a name or a literal, without its operands. */
static bool trivial(const cg_node *n)
{
    return n->e->kind == E_CONST || n->e->kind == E_VAR || n->e->kind == E_PARAM ||
           cg_folds(n) || n->fconst;
}

/* Counts the uses of each node in what will be printed (operands of
 * constants are not printed). */
static void count_uses(cg_ctx *g, int id)
{
    if (g->node[id].counted)
        return;
    g->node[id].counted = true;
    if (trivial(&g->node[id]))
        return;
    /* a square prints its operand twice (pr_math) */
    int square = ir_expr_is_square(g->node[id].e);
    for (int i = 0; i < g->node[id].nkid; i++) {
        int k = resolve(g, g->node[id].kid[i]);
        g->node[k].nref += i == 0 && square ? 2 : 1;
        count_uses(g, k);
    }
}

int cg_st_root(cg_ctx *g, const sc_expr *e, int uses)
{
    if (!e)
        cg_bug("statement without an expression", NULL);
    int id = resolve(g, canon(g, e));
    g->node[id].nref += uses;
    count_uses(g, id);
    return id;
}

/* Prints the temporaries that node id needs (operands first). */
void cg_st_hoist(cg_ctx *g, int id)
{
    if (g->node[id].visited)
        return;
    g->node[id].visited = true;
    if (trivial(&g->node[id]))
        return;
    for (int i = 0; i < g->node[id].nkid; i++)
        cg_st_hoist(g, resolve(g, g->node[id].kid[i]));
    if (g->node[id].nref >= 2) {
        cg_put_indent(g);
        cg_printf(g, "const %s sc_t%d = ", g->t->type[g->node[id].e->type], g->ntmp);
        cg_expr(g, id, true);
        cg_printf(g, ";\n");
        g->node[id].tmp = g->ntmp++;
    }
}

void cg_env_push(cg_ctx *g, const char *name, int64_t lo, int64_t hi)
{
    if (g->nenv == g->capenv) {
        g->capenv = 2 * g->capenv + 16;
        g->env = cg_grow(g->env, sizeof *g->env * (size_t)g->capenv);
    }
    if (!cg_fits(SC_I32, lo, hi))
        cg_type_range(SC_I32, &lo, &hi);
    g->env[g->nenv++] = (cg_var){ name, lo, hi, -1, false, false, -1, 0, false, 0 };
}
