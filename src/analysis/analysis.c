/*
 * analysis.c - access Jacobians and operation counts of a pipeline.
 *
 * Both are algorithm-specific facts that do not depend on a schedule: the
 * featurizer (Anderson et al. 2021 §7, inheriting Adams et al. 2019) turns
 * them into memory-access and compute features once per pipeline, and the
 * analytic cost models read the Jacobians to find strides and reuse.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "analysis.h"

/* The Funcs to analyse, in topological order when the pipeline has one. */
static int func_count(const sc_pipeline *p) {
    return p->order.n ? p->order.n : p->funcs.n;
}

static const sc_func *func_at(const sc_pipeline *p, int i) {
    return p->order.n ? ir_order_at(p, i) : p->funcs.items[i];
}

/* ---- rationals ------------------------------------------------------------ */

static int64_t gcd64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) { int64_t t = a % b; a = b; b = t; }
    return a;
}

/* num / den reduced with den > 0; false on overflow or den == 0. */
static bool ratio_make(int64_t num, int64_t den, deps_ratio *r) {
    if (den == 0 || num == INT64_MIN || den == INT64_MIN) return false;
    if (den < 0) { num = -num; den = -den; }
    int64_t g = gcd64(num, den);
    if (g > 1) { num /= g; den /= g; }
    r->num = num;
    r->den = den;
    return true;
}

static deps_ratio ratio_int(int64_t v) { deps_ratio r = { v, 1 }; return r; }
static bool ratio_is_zero(deps_ratio r) { return r.num == 0; }

static bool ratio_add(deps_ratio a, deps_ratio b, deps_ratio *r) {
    int64_t x, y, d;
    if (__builtin_mul_overflow(a.num, b.den, &x) || __builtin_mul_overflow(b.num, a.den, &y) ||
        __builtin_add_overflow(x, y, &x) || __builtin_mul_overflow(a.den, b.den, &d))
        return false;
    return ratio_make(x, d, r);
}

static bool ratio_mul(deps_ratio a, deps_ratio b, deps_ratio *r) {
    int64_t n, d;
    if (__builtin_mul_overflow(a.num, b.num, &n) || __builtin_mul_overflow(a.den, b.den, &d))
        return false;
    return ratio_make(n, d, r);
}

/* ---- affine forms ------------------------------------------------------------ */

/* sum_i coef[i] * loop_i + off over the loops of one stage. */
typedef struct {
    bool ok;
    bool clamped;                 /* through min/max with a constant */
    deps_ratio coef[2 * SC_MAX_DIMS];
    deps_ratio off;
} affine;

typedef struct {
    const sc_func *f;
    const ir_stage *st;
    int nloops;
    int which[2 * SC_MAX_DIMS];
} stage_loops;

static affine aff_none(void) { affine a; memset(&a, 0, sizeof a); a.ok = false; return a; }

static affine aff_const(deps_ratio v, int n) {
    affine a;
    memset(&a, 0, sizeof a);
    a.ok = true;
    for (int i = 0; i < n; i++) a.coef[i] = ratio_int(0);
    a.off = v;
    return a;
}

static bool aff_is_const(const affine *a, int n) {
    for (int i = 0; i < n; i++) if (!ratio_is_zero(a->coef[i])) return false;
    return true;
}

/* a + s * b */
static affine aff_axpy(affine a, deps_ratio s, affine b, int n) {
    if (!a.ok || !b.ok) return aff_none();
    a.clamped |= b.clamped;
    deps_ratio t;
    for (int i = 0; i < n; i++)
        if (!ratio_mul(s, b.coef[i], &t) || !ratio_add(a.coef[i], t, &a.coef[i])) return aff_none();
    if (!ratio_mul(s, b.off, &t) || !ratio_add(a.off, t, &a.off)) return aff_none();
    return a;
}

static affine aff_scale(affine a, deps_ratio s, int n) {
    return aff_axpy(aff_const(ratio_int(0), n), s, a, n);
}

/*
 * The affine form of an integer coordinate expression, or not-ok.
 * Casts between integer types are transparent (a coordinate that wraps is
 * a bug the bounds check would have caught), multiplication and division
 * by constants scale (x / c gives 1/c, the down-sampling Jacobian of
 * Anderson et al. 2021 §7), shifts by constants likewise.  min or max of
 * an affine e and a constant (clamp, and the boundary helpers, which
 * expand to clamps) is 1-Lipschitz: it keeps e's form, flagged clamped,
 * since away from the edges it moves exactly as e does.  Anything else
 * data-dependent or piecewise (select, min/max of two varying operands,
 * calls, params, float arithmetic) is not affine.
 */
static affine linearise(const stage_loops *sl, const sc_expr *e) {
    int n = sl->nloops;
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32) return aff_none();
        return aff_const(ratio_int(e->c.i), n);
    case E_VAR:
    case E_RVAR:
        for (int i = 0; i < n; i++) {
            int w = sl->which[i];
            bool hit = e->kind == E_VAR ? w >= 0 && !strcmp(sl->f->vars[w], e->name)
                                        : w == -1 - e->dim && e->rdom == sl->st->rdom;
            if (hit) {
                affine a = aff_const(ratio_int(0), n);
                a.coef[i] = ratio_int(1);
                return a;
            }
        }
        return aff_none();
    case E_CAST:
        if (e->type == SC_F32 || e->args[0]->type == SC_F32) return aff_none();
        return linearise(sl, e->args[0]);
    case E_UNARY:
        if (e->op != SC_NEG) return aff_none();
        return aff_scale(linearise(sl, e->args[0]), ratio_int(-1), n);
    case E_BINARY: {
        if (e->type == SC_F32 || e->type == SC_BOOL) return aff_none();
        affine a = linearise(sl, e->args[0]);
        if (!a.ok) return a;
        /* Linearise b only when the operator can use it. */
        int op = e->op;
        if (op == SC_MIN || op == SC_MAX) {
            affine b = linearise(sl, e->args[1]);
            if (!b.ok) return b;
            bool ac = aff_is_const(&a, n), bc = aff_is_const(&b, n);
            if (ac && bc) {       /* both constant: the value itself */
                bool lt = a.off.num * b.off.den < b.off.num * a.off.den;
                affine r = (op == SC_MIN) == lt ? a : b;
                r.clamped = a.clamped || b.clamped;
                return r;
            }
            if (!ac && !bc) return aff_none();
            affine r = ac ? b : a;
            r.clamped = true;
            return r;
        }
        if (op != SC_ADD && op != SC_SUB && op != SC_MUL && op != SC_DIV &&
            op != SC_SHL && op != SC_SHR)
            return aff_none();
        affine b = linearise(sl, e->args[1]);
        if (!b.ok) return b;
        bool bc = aff_is_const(&b, n);
        deps_ratio s;
        switch (op) {
        case SC_ADD: return aff_axpy(a, ratio_int(1), b, n);
        case SC_SUB: return aff_axpy(a, ratio_int(-1), b, n);
        case SC_MUL:
            if (bc) return aff_scale(a, b.off, n);
            if (aff_is_const(&a, n)) return aff_scale(b, a.off, n);
            return aff_none();
        case SC_DIV:
            if (!bc || b.off.den != 1 || b.off.num == 0) return aff_none();
            if (!ratio_make(1, b.off.num, &s)) return aff_none();
            return aff_scale(a, s, n);
        default:    /* shifts by a constant amount in [0, 30] */
            if (!bc || b.off.den != 1 || b.off.num < 0 || b.off.num > 30) return aff_none();
            s = ratio_int((int64_t)1 << b.off.num);
            if (op == SC_SHR && !ratio_make(1, s.num, &s)) return aff_none();
            return aff_scale(a, s, n);
        }
    }
    default:
        return aff_none();
    }
}

bool deps_linearise(const sc_func *f, int stage, const sc_expr *e, deps_ratio *coef,
                    deps_ratio *offset, bool *clamped) {
    stage_loops sl = { f, &f->stages[stage], 0, {0} };
    sl.nloops = ir_stage_loops(f, stage, sl.which);
    affine a = linearise(&sl, e);
    if (!a.ok) return false;
    for (int i = 0; i < sl.nloops; i++) coef[i] = a.coef[i];
    if (offset) *offset = a.off;
    if (clamped) *clamped = a.clamped;
    return true;
}

/* ---- deps ------------------------------------------------------------------ */

typedef struct {
    deps_result *r;
    int cap;
    const stage_loops *sl;
} deps_walk;

static void deps_visit(const sc_expr *e, void *user) {
    deps_walk *w = user;
    if (e->kind != E_CALL) return;
    deps_result *r = w->r;
    if (r->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        r->items = base_realloc(r->items, sizeof(deps_access) * (size_t)w->cap);
    }
    deps_access *a = &r->items[r->n++];
    memset(a, 0, sizeof *a);
    a->consumer = w->sl->f->id;
    a->stage = (int)(w->sl->st - w->sl->f->stages);
    a->producer = e->func->id;
    a->rows = e->nargs;
    a->cols = w->sl->nloops;
    a->call = e;
    for (int d = 0; d < e->nargs; d++) {
        affine f = linearise(w->sl, e->args[d]);
        a->affine[d] = f.ok;
        a->clamped[d] = f.ok && f.clamped;
        for (int i = 0; i < a->cols; i++) a->coef[d][i] = f.ok ? f.coef[i] : ratio_int(0);
        a->offset[d] = f.ok ? f.off : ratio_int(0);
    }
}

/* One access per call site (per occurrence, as the evaluator runs them),
 * in topological order of consumers, stage by stage, left-hand side before
 * value, pre-order within an expression. */
deps_result *deps_analyse(const sc_pipeline *p) {
    deps_result *r = calloc(1, sizeof *r);
    if (!r) abort();
    deps_walk w = { r, 0, NULL };
    for (int i = 0; i < func_count(p); i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        for (int s = 0; s < f->nstages; s++) {
            stage_loops sl = { f, &f->stages[s], 0, {0} };
            sl.nloops = ir_stage_loops(f, s, sl.which);
            w.sl = &sl;
            for (int d = 0; d < sl.st->nargs; d++) ir_visit(sl.st->args[d], deps_visit, &w);
            ir_visit(sl.st->value, deps_visit, &w);
        }
    }
    return r;
}

void deps_free(deps_result *d) {
    if (!d) return;
    free(d->items);
    free(d);
}

static void print_ratio(FILE *out, deps_ratio r) {
    if (r.den == 1) fprintf(out, "%lld", (long long)r.num);
    else fprintf(out, "%lld/%lld", (long long)r.num, (long long)r.den);
}

static void print_loop(FILE *out, const sc_func *f, int s, int which) {
    if (which >= 0) fprintf(out, "%s", f->vars[which]);
    else fprintf(out, "%s.%c", f->stages[s].rdom->name, "xyzw"[-1 - which]);
}

/*
 * One block per access:
 *   blur_y.0 <- blur_x(x, y - 1)  loops: x y
 *     [1 0 | 0]
 *     [0 1 | -1]
 * a row per producer coordinate: the coefficient of each loop, then the
 * constant term; "clamped" after a row that is affine through a clamp,
 * "[not affine]" for a coordinate without an affine form.
 */
void deps_print(FILE *out, const sc_pipeline *p, const deps_result *d) {
    for (int k = 0; k < d->n; k++) {
        const deps_access *a = &d->items[k];
        const sc_func *f = p->funcs.items[a->consumer];
        int which[2 * SC_MAX_DIMS];
        int n = ir_stage_loops(f, a->stage, which);
        char *s = ir_expr_to_string(a->call);
        fprintf(out, "%s.%d <- %s  loops:", f->name, a->stage, s);
        free(s);
        for (int i = 0; i < n; i++) {
            fprintf(out, " ");
            print_loop(out, f, a->stage, which[i]);
        }
        fprintf(out, "\n");
        for (int r = 0; r < a->rows; r++) {
            if (!a->affine[r]) { fprintf(out, "  [not affine]\n"); continue; }
            fprintf(out, "  [");
            for (int c = 0; c < a->cols; c++) {
                print_ratio(out, a->coef[r][c]);
                fprintf(out, " ");
            }
            fprintf(out, "| ");
            print_ratio(out, a->offset[r]);
            fprintf(out, "]%s\n", a->clamped[r] ? " clamped" : "");
        }
    }
}

/* ---- operation counts -------------------------------------------------------- */

static const char *ops_names[OPS_KIND_COUNT] = {
    "const", "cast", "var", "param",
    "add", "sub", "mul", "div", "mod", "min", "max",
    "eq", "ne", "lt", "le", "and", "or", "not",
    "bitwise", "shift", "neg", "select", "math",
    "load_input", "load_func", "load_self", "store",
};

const char *ops_kind_name(ops_kind k) {
    return k >= 0 && k < OPS_KIND_COUNT ? ops_names[k] : "?";
}

typedef struct { ops_stage *st; const sc_func *f; } ops_walk;

static ops_kind binop_kind(sc_binop op) {
    switch (op) {
    case SC_ADD: return OPS_ADD;
    case SC_SUB: return OPS_SUB;
    case SC_MUL: return OPS_MUL;
    case SC_DIV: return OPS_DIV;
    case SC_MOD: return OPS_MOD;
    case SC_MIN: return OPS_MIN;
    case SC_MAX: return OPS_MAX;
    case SC_EQ: return OPS_EQ;
    case SC_NE: return OPS_NE;
    case SC_LT: case SC_GT: return OPS_LT;      /* a > b is b < a */
    case SC_LE: case SC_GE: return OPS_LE;
    case SC_AND: return OPS_AND;
    case SC_OR: return OPS_OR;
    case SC_BITAND: case SC_BITOR: case SC_BITXOR: return OPS_BITWISE;
    case SC_SHL: case SC_SHR: return OPS_SHIFT;
    default: assert(!"unknown binary operator"); return OPS_ADD;
    }
}

/* Counts one node.  Comparisons count by the type they compare, not by
 * their bool result: an f32 compare costs what an f32 op does. */
static void ops_visit(const sc_expr *e, void *user) {
    ops_walk *w = user;
    ops_kind k;
    sc_type t = e->type;
    switch (e->kind) {
    case E_CONST: k = OPS_CONST; break;
    case E_VAR: case E_RVAR: k = OPS_VAR; break;
    case E_PARAM: k = OPS_PARAM; break;
    case E_CAST: k = OPS_CAST; break;
    case E_SELECT: k = OPS_SELECT; break;
    case E_MATH: k = ir_expr_is_square(e) ? OPS_MUL : OPS_MATH; break;   /* pow(a, 2.0) is a * a */
    case E_UNARY:
        k = e->op == SC_NEG ? OPS_NEG : e->op == SC_NOT ? OPS_NOT : OPS_BITWISE;
        break;
    case E_BINARY:
        k = binop_kind(e->op);
        if (k == OPS_EQ || k == OPS_NE || k == OPS_LT || k == OPS_LE) t = e->args[0]->type;
        break;
    case E_CALL:
        k = ops_load_kind(w->f, e->func);
        break;
    default: assert(!"unknown expression kind"); return;
    }
    w->st->count[k][t]++;
}

/* Whether e is built of constants alone: the compilers fold it. */
static bool const_tree(const sc_expr *e) {
    if (e->kind == E_CONST) return true;
    if (e->kind == E_VAR || e->kind == E_RVAR || e->kind == E_PARAM || e->kind == E_CALL || e->nargs == 0)
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!const_tree(e->args[i])) return false;
    return true;
}

/* A division or remainder by a constant is counted as what the compilers
 * make of it: by a power of two, an integer division is one shift and a
 * remainder one mask, and an f32 division one multiplication (exact: the
 * reciprocal is a power of two too); by another positive integer
 * constant, a division is a multiply-high and a shift, a remainder those
 * and a multiply-subtract; by 1, nothing.  Returns false for the other
 * divisions (by a variable, a negative or zero integer, another f32
 * constant), which count as division.  The code generators emit integer
 * ones as C division, a shift or a mask (cg_expr.c), which the compilers
 * reduce this way. */
static bool ops_const_division(const sc_expr *e, ops_walk *w) {
    if (e->kind != E_BINARY || (e->op != SC_DIV && e->op != SC_MOD)) return false;
    const sc_expr *d = e->args[1];
    if (d->kind != E_CONST) return false;
    sc_type t = e->type;
    int64_t (*n)[SC_TYPE_COUNT] = w->st->count;
    if (t == SC_F32) {
        int ex;
        /* frexp's mantissa is +-0.5 for a power of two only (0 for 0) */
        if (e->op != SC_DIV || fabs(frexp(d->c.f, &ex)) != 0.5) return false;
        n[OPS_MUL][t]++;
        return true;
    }
    if (t == SC_BOOL || d->c.i <= 0) return false;
    if (d->c.i == 1) return true;
    if (base_log2_exact(d->c.i) > 0) {
        n[e->op == SC_DIV ? OPS_SHIFT : OPS_BITWISE][t]++;
        return true;
    }
    n[OPS_MUL][t]++;
    n[OPS_SHIFT][t]++;
    if (e->op == SC_MOD) {
        n[OPS_MUL][t]++;
        n[OPS_SUB][t]++;
    }
    return true;
}

/* Counts e's nodes; a subtree of constants alone is one constant of its
 * type (`-1.0 / 12` is a constant, not a division). */
static void ops_expr(const sc_expr *e, ops_walk *w) {
    if (e->kind != E_CONST && const_tree(e)) {
        w->st->count[OPS_CONST][e->type]++;
        return;
    }
    if (!ops_const_division(e, w)) ops_visit(e, w);
    for (int i = 0; i < e->nargs; i++) ops_expr(e->args[i], w);
}

/* Per stage, per point: every node of the left-hand side and the value
 * (each occurrence counts, as each is evaluated; a subtree of constants
 * counts as one constant), plus one store. */
ops_result *ops_count(const sc_pipeline *p) {
    ops_result *o = calloc(1, sizeof *o);
    if (!o) abort();
    int cap = 0;
    for (int i = 0; i < func_count(p); i++) {
        const sc_func *f = func_at(p, i);
        if (f->kind != FUNC_DEFINED) continue;
        for (int s = 0; s < f->nstages; s++) {
            if (o->n == cap) {
                cap = cap ? 2 * cap : 16;
                o->items = base_realloc(o->items, sizeof(ops_stage) * (size_t)cap);
            }
            ops_stage *st = &o->items[o->n++];
            memset(st, 0, sizeof *st);
            st->func = f->id;
            st->stage = s;
            ops_walk w = { st, f };
            const ir_stage *is = &f->stages[s];
            for (int d = 0; d < is->nargs; d++) ops_expr(is->args[d], &w);
            ops_expr(is->value, &w);
            st->count[OPS_STORE][f->type]++;
        }
    }
    return o;
}

void ops_free(ops_result *o) {
    if (!o) return;
    free(o->items);
    free(o);
}

/* One line per stage, nonzero entries only, in kind then type order:
 *   blur_x.0:  add.u16 2  var.i32 6  load_input.u16 3  store.u16 1 */
void ops_print(FILE *out, const sc_pipeline *p, const ops_result *o) {
    for (int i = 0; i < o->n; i++) {
        const ops_stage *st = &o->items[i];
        const sc_func *f = p->funcs.items[st->func];
        fprintf(out, "%s.%d:", f->name, st->stage);
        for (int k = 0; k < OPS_KIND_COUNT; k++)
            for (int t = 0; t < SC_TYPE_COUNT; t++)
                if (st->count[k][t])
                    fprintf(out, "  %s.%s %lld", ops_names[k], sc_type_name((sc_type)t),
                            (long long)st->count[k][t]);
        fprintf(out, "\n");
    }
}
