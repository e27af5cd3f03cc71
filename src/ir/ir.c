/*
 * ir.c - building the pipeline IR: the arena, expressions with Halide's
 * type rules, Funcs and their definitions, reduction domains, parameters,
 * boundary helpers and inline reductions.
 *
 * Every builder checks its operands and records a user error (with the
 * pipeline's current location) instead of failing; a NULL operand means an
 * error was already recorded, and is passed through silently.
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

/* ---- arena ------------------------------------------------------------ */

typedef struct ir_block { struct ir_block *next; size_t used, cap; } ir_block;
struct ir_arena { ir_block *head, *spare; };   /* spare: blocks kept by ir_arena_reset */

ir_arena *ir_arena_new(void) {
    ir_arena *a = calloc(1, sizeof *a);
    if (!a) abort();
    return a;
}

void ir_arena_free(ir_arena *a) {
    if (!a) return;
    for (ir_block *b = a->head, *n; b; b = n) { n = b->next; free(b); }
    for (ir_block *b = a->spare, *n; b; b = n) { n = b->next; free(b); }
    free(a);
}

void ir_arena_reset(ir_arena *a) {
    for (ir_block *b = a->head, *n; b; b = n) {
        n = b->next;
        b->next = a->spare;
        a->spare = b;
    }
    a->head = NULL;
}

void *ir_alloc_try(ir_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    ir_block *b = a->head;
    if (!b || b->used + n > b->cap) {
        if (a->spare && a->spare->cap >= n) {
            b = a->spare;
            a->spare = b->next;
        } else {
            size_t cap = n > 65536 ? n : 65536;
            b = malloc(sizeof(ir_block) + 16 + cap);
            if (!b) return NULL;
            b->cap = cap;
        }
        b->used = 0; b->next = a->head; a->head = b;
    }
    char *base = (char *)(b + 1);
    base += (16 - ((uintptr_t)base & 15)) & 15;
    void *r = base + b->used;
    b->used += n;
    return r;
}

void *ir_alloc(ir_arena *a, size_t n) {
    void *r = ir_alloc_try(a, n);
    if (!r) abort();
    memset(r, 0, n);
    return r;
}

char *ir_strdup(ir_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *r = ir_alloc(a, n);
    memcpy(r, s, n);
    return r;
}

void ir_vec_push(ir_arena *a, ir_vec *v, void *item) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = ir_alloc(a, sizeof(void *) * (size_t)cap);
        if (v->n) memcpy(items, v->items, sizeof(void *) * (size_t)v->n);
        v->items = items; v->cap = cap;
    }
    v->items[v->n++] = item;
}

/* ---- pipelines and errors ---------------------------------------------- */

sc_pipeline *sc_pipeline_new(const char *name) {
    ir_arena *a = ir_arena_new();
    sc_pipeline *p = ir_alloc(a, sizeof *p);
    p->arena = a;
    p->name = ir_strdup(a, name && *name ? name : "pipeline");
    p->loc.file = "<api>";
    return p;
}

void sc_pipeline_free(sc_pipeline *p) {
    if (p) ir_arena_free(p->arena);
}

const char *sc_pipeline_name(const sc_pipeline *p) { return p->name; }

void sc_pipeline_set_loc(sc_pipeline *p, const char *file, int line, int col) {
    if (!p->loc.file || strcmp(p->loc.file, file) != 0)
        p->loc.file = ir_strdup(p->arena, file);
    p->loc.line = line;
    p->loc.col = col;
}

void sc_error(sc_pipeline *p, const char *fmt, ...) {
    char msg[1024], full[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->loc.line > 0)
        snprintf(full, sizeof full, "%s:%d:%d: error: %s", p->loc.file,
                 p->loc.line, p->loc.col, msg);
    else
        snprintf(full, sizeof full, "%s: error: %s", p->loc.file, msg);
    ir_vec_push(p->arena, &p->errors, ir_strdup(p->arena, full));
}

int sc_error_count(const sc_pipeline *p) { return p->errors.n; }

const char *sc_error_message(const sc_pipeline *p, int i) {
    return i >= 0 && i < p->errors.n ? p->errors.items[i] : NULL;
}

int sc_input_count(const sc_pipeline *p) { return p->inputs.n; }
sc_func *sc_input_at(const sc_pipeline *p, int i) { return p->inputs.items[i]; }
int sc_output_count(const sc_pipeline *p) { return p->outputs.n; }
sc_func *sc_output_at(const sc_pipeline *p, int i) { return p->outputs.items[i]; }

/* ---- names ------------------------------------------------------------- */

static const char *binop_names[SC_BINOP_COUNT] = {
    "+", "-", "*", "/", "%", "min", "max", "==", "!=", "<", "<=", ">", ">=",
    "&&", "||", "&", "|", "^", "<<", ">>"
};
static const char *unop_names[SC_UNOP_COUNT] = { "-", "!", "~" };
static const char *math_names[SC_MATH_COUNT] = {
    "sqrt", "exp", "log", "pow", "floor", "ceil", "round", "sin", "cos",
    "tanh", "atan2", "abs"
};

const char *ir_binop_name(sc_binop op) { return binop_names[op]; }
const char *ir_unop_name(sc_unop op) { return unop_names[op]; }
const char *ir_math_name(sc_mathfn fn) { return math_names[fn]; }

static bool valid_identifier(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

/* Funcs, inputs, parameters and reduction domains share one namespace. */
/* What already holds name ("a Func" ...), or NULL if it is free. */
static const char *name_taken(const sc_pipeline *p, const char *name) {
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (!strcmp(f->name, name)) return f->kind == FUNC_INPUT ? "an input" : "a Func";
    }
    for (int i = 0; i < p->params.n; i++)
        if (!strcmp(((sc_param *)p->params.items[i])->name, name)) return "a parameter";
    for (int i = 0; i < p->rdoms.n; i++)
        if (!strcmp(((sc_rdom *)p->rdoms.items[i])->name, name)) return "a reduction domain";
    return NULL;
}

static bool check_new_name(sc_pipeline *p, const char *what, const char *name) {
    if (!valid_identifier(name)) {
        sc_error(p, "invalid %s name '%s' (expected a letter or '_' then letters, digits, '_')",
                 what, name ? name : "");
        return false;
    }
    const char *holder = name_taken(p, name);
    if (holder) {
        sc_error(p, "'%s' is already defined (as %s); choose another name for this %s",
                 name, holder, what);
        return false;
    }
    return true;
}

/* ---- expressions ---------------------------------------------------------- */

static sc_expr *new_expr(sc_pipeline *p, ir_kind kind, sc_type t, int nargs) {
    sc_expr *e = ir_alloc(p->arena, sizeof *e);
    e->kind = kind;
    e->type = t;
    e->nargs = nargs;
    if (nargs) e->args = ir_alloc(p->arena, sizeof(sc_expr *) * (size_t)nargs);
    e->loc = p->loc;
    return e;
}

static int64_t int_min_of(sc_type t) {
    switch (t) {
    case SC_I8: return INT8_MIN;
    case SC_I16: return INT16_MIN;
    case SC_I32: return INT32_MIN;
    default: return 0;
    }
}

static int64_t int_max_of(sc_type t) {
    switch (t) {
    case SC_BOOL: return 1;
    case SC_U8: return UINT8_MAX;
    case SC_U16: return UINT16_MAX;
    case SC_U32: return UINT32_MAX;
    case SC_I8: return INT8_MAX;
    case SC_I16: return INT16_MAX;
    default: return INT32_MAX;
    }
}

/* Two's complement wrap of v into integer type t. */
static int64_t wrap_int(sc_type t, int64_t v) {
    switch (t) {
    case SC_BOOL: return v != 0;
    case SC_U8: return (uint8_t)v;
    case SC_U16: return (uint16_t)v;
    case SC_U32: return (uint32_t)v;
    case SC_I8: return (int8_t)(uint8_t)v;
    case SC_I16: return (int16_t)(uint16_t)v;
    default: return (int32_t)(uint32_t)v;
    }
}

sc_expr *sc_int(sc_pipeline *p, int64_t v) {
    if (v < INT32_MIN || v > INT32_MAX) {
        sc_error(p, "integer literal %lld does not fit i32", (long long)v);
        return NULL;
    }
    sc_expr *e = new_expr(p, E_CONST, SC_I32, 0);
    e->c.i = v;
    e->weak = true;
    return e;
}

sc_expr *sc_float(sc_pipeline *p, double v) {
    /* Anything that rounds to a finite f32 fits: FLT_MAX's shortest
     * 9-digit form, 3.40282347e+38, is a little above it. */
    if (!isfinite(v) || fabs(v) >= 0x1.ffffffp+127) {
        sc_error(p, "float literal %g does not fit f32", v);
        return NULL;
    }
    sc_expr *e = new_expr(p, E_CONST, SC_F32, 0);
    e->c.f = (float)v;
    return e;
}

/* A constant of type t with value v converted as a cast would. */
static sc_expr *typed_const(sc_pipeline *p, sc_type t, double v, bool is_float_src) {
    sc_expr *e = new_expr(p, E_CONST, t, 0);
    if (t == SC_F32) {
        e->c.f = (float)v;
    } else if (is_float_src) {
        double tv = isnan(v) ? 0 : trunc(v);
        if (tv < (double)int_min_of(t)) tv = (double)int_min_of(t);
        if (tv > (double)int_max_of(t)) tv = (double)int_max_of(t);
        e->c.i = t == SC_BOOL ? v != 0 : (int64_t)tv;
    } else {
        e->c.i = wrap_int(t, (int64_t)v);
    }
    return e;
}

sc_expr *sc_const(sc_pipeline *p, sc_type t, double v) {
    if (t < 0 || t >= SC_TYPE_COUNT) {
        sc_error(p, "unknown type %d", (int)t);
        return NULL;
    }
    return typed_const(p, t, v, true);
}

sc_expr *sc_var(sc_pipeline *p, const char *name) {
    if (!valid_identifier(name)) {
        sc_error(p, "invalid variable name '%s'", name ? name : "");
        return NULL;
    }
    sc_expr *e = new_expr(p, E_VAR, SC_I32, 0);
    e->name = ir_strdup(p->arena, name);
    return e;
}

sc_expr *sc_rvar(sc_pipeline *p, sc_rdom *r, int dim) {
    if (!r) return NULL;
    if (dim < 0 || dim >= r->ndims) {
        sc_error(p, "reduction domain %s has %d dimension%s; there is no dimension %d",
                 r->name, r->ndims, r->ndims == 1 ? "" : "s", dim);
        return NULL;
    }
    sc_expr *e = new_expr(p, E_RVAR, SC_I32, 0);
    e->rdom = r;
    e->dim = dim;
    return e;
}

sc_expr *sc_param_ref(sc_pipeline *p, sc_param *param) {
    if (!param) return NULL;
    sc_expr *e = new_expr(p, E_PARAM, param->type, 0);
    e->param = param;
    return e;
}

sc_type sc_expr_type(const sc_expr *e) { return e ? e->type : SC_I32; }

sc_expr *sc_cast(sc_pipeline *p, sc_type t, sc_expr *a) {
    if (!a) return NULL;
    if (t < 0 || t >= SC_TYPE_COUNT) {
        sc_error(p, "unknown type %d", (int)t);
        return NULL;
    }
    if (a->kind == E_CONST) {
        if (a->type == SC_F32) return typed_const(p, t, a->c.f, true);
        return typed_const(p, t, (double)a->c.i, false);
    }
    if (a->type == t) return a;
    sc_expr *e = new_expr(p, E_CAST, t, 1);
    e->args[0] = a;
    return e;
}

/* Converts weak literal a to type t, checking that its value fits. */
static sc_expr *coerce_weak(sc_pipeline *p, sc_expr *a, sc_type t) {
    if (t == SC_F32) return typed_const(p, t, (double)a->c.i, false);
    if (t == SC_BOOL) {
        sc_error(p, "cannot use the integer %lld as a bool (write a comparison)",
                 (long long)a->c.i);
        return NULL;
    }
    if (a->c.i < int_min_of(t) || a->c.i > int_max_of(t)) {
        sc_error(p, "integer literal %lld does not fit %s", (long long)a->c.i,
                 sc_type_name(t));
        return NULL;
    }
    return typed_const(p, t, (double)a->c.i, false);
}

/* The common type of two numeric operands, following Halide: a weak
 * literal takes the other side's type; a float side wins; two integers
 * of one signedness give the wider; mixed signedness gives a signed type
 * of the wider width. */
static sc_type common_type(sc_type a, sc_type b) {
    if (a == b) return a;
    if (a == SC_F32 || b == SC_F32) return SC_F32;
    int bits = sc_type_bits(a) > sc_type_bits(b) ? sc_type_bits(a) : sc_type_bits(b);
    bool sa = sc_type_is_signed(a), sb = sc_type_is_signed(b);
    if (sa || sb) return bits == 8 ? SC_I8 : bits == 16 ? SC_I16 : SC_I32;
    return bits == 8 ? SC_U8 : bits == 16 ? SC_U16 : SC_U32;
}

/* Brings a and b to one type; returns false (error recorded) on failure. */
static bool unify(sc_pipeline *p, const char *opname, sc_expr **a, sc_expr **b) {
    sc_expr *x = *a, *y = *b;
    if (x->weak && y->weak) return true;
    if (x->weak) { *a = coerce_weak(p, x, y->type); return *a != NULL; }
    if (y->weak) { *b = coerce_weak(p, y, x->type); return *b != NULL; }
    if (x->type == y->type) return true;
    if (x->type == SC_BOOL || y->type == SC_BOOL) {
        sc_error(p, "operator %s: cannot combine %s and %s", opname,
                 sc_type_name(x->type), sc_type_name(y->type));
        return false;
    }
    sc_type t = common_type(x->type, y->type);
    *a = sc_cast(p, t, x);
    *b = sc_cast(p, t, y);
    return true;
}

/* Folds an operation on two weak integer literals (compile-time math). */
static sc_expr *fold_weak(sc_pipeline *p, sc_binop op, int64_t a, int64_t b) {
    int64_t r;
    switch (op) {
    case SC_ADD: r = a + b; break;
    case SC_SUB: r = a - b; break;
    case SC_MUL: r = a * b; break;
    case SC_DIV:
        if (b == 0) r = 0;
        else { r = a / b; if ((a % b) != 0 && ((a % b < 0) != (b < 0)) && b > 0) r--;
               else if ((a % b) < 0 && b < 0) r++; }
        break;
    case SC_MOD:
        if (b == 0) r = 0;
        else { r = a % b; if (r < 0) r += b < 0 ? -b : b; }
        break;
    case SC_MIN: r = a < b ? a : b; break;
    case SC_MAX: r = a > b ? a : b; break;
    case SC_EQ: case SC_NE: case SC_LT: case SC_LE: case SC_GT: case SC_GE: {
        bool v = op == SC_EQ ? a == b : op == SC_NE ? a != b : op == SC_LT ? a < b :
                 op == SC_LE ? a <= b : op == SC_GT ? a > b : a >= b;
        sc_expr *e = new_expr(p, E_CONST, SC_BOOL, 0);
        e->c.i = v;
        return e;
    }
    default: return NULL;
    }
    return sc_int(p, r);
}

sc_expr *sc_binary(sc_pipeline *p, sc_binop op, sc_expr *a, sc_expr *b) {
    if (!a || !b) return NULL;
    if (op < 0 || op >= SC_BINOP_COUNT) {
        sc_error(p, "unknown binary operator %d", (int)op);
        return NULL;
    }
    const char *name = binop_names[op];
    if (a->weak && b->weak && a->kind == E_CONST && b->kind == E_CONST) {
        int nerr = p->errors.n;
        sc_expr *r = fold_weak(p, op, a->c.i, b->c.i);
        if (r || p->errors.n != nerr) return r;   /* folded, or overflowed i32 */
    }
    if (op == SC_AND || op == SC_OR) {
        if (a->type != SC_BOOL || b->type != SC_BOOL || a->weak || b->weak) {
            sc_error(p, "operator %s expects bool operands (comparisons), got %s and %s",
                     name, a->weak ? "integer literal" : sc_type_name(a->type),
                     b->weak ? "integer literal" : sc_type_name(b->type));
            return NULL;
        }
    } else {
        bool cmp_eq = op == SC_EQ || op == SC_NE;
        if (!cmp_eq && (a->type == SC_BOOL || b->type == SC_BOOL)) {
            sc_error(p, "operator %s expects numbers, got %s and %s (cast a bool with i32(...) or use select)",
                     name, sc_type_name(a->type), sc_type_name(b->type));
            return NULL;
        }
        if (op >= SC_BITAND && op <= SC_SHR &&
            (a->type == SC_F32 || b->type == SC_F32)) {
            sc_error(p, "operator %s expects integers, got %s and %s", name,
                     sc_type_name(a->type), sc_type_name(b->type));
            return NULL;
        }
        if (!unify(p, name, &a, &b)) return NULL;
    }
    sc_type t = (op >= SC_EQ && op <= SC_OR) ? SC_BOOL : a->type;
    sc_expr *e = new_expr(p, E_BINARY, t, 2);
    e->op = op;
    e->args[0] = a;
    e->args[1] = b;
    return e;
}

sc_expr *sc_unary(sc_pipeline *p, sc_unop op, sc_expr *a) {
    if (!a) return NULL;
    if (op == SC_NEG) {
        if (a->kind == E_CONST && a->weak) return sc_int(p, -a->c.i);
        if (a->kind == E_CONST && a->type == SC_F32) return sc_float(p, -a->c.f);
        if (a->type == SC_BOOL) {
            sc_error(p, "unary - expects a number, got bool");
            return NULL;
        }
    } else if (op == SC_NOT) {
        if (a->type != SC_BOOL || a->weak) {
            sc_error(p, "operator ! expects a bool (a comparison), got %s",
                     a->weak ? "integer literal" : sc_type_name(a->type));
            return NULL;
        }
    } else if (op == SC_BITNOT) {
        if (a->type == SC_F32 || a->type == SC_BOOL) {
            sc_error(p, "operator ~ expects an integer, got %s", sc_type_name(a->type));
            return NULL;
        }
    } else {
        sc_error(p, "unknown unary operator %d", (int)op);
        return NULL;
    }
    sc_expr *e = new_expr(p, E_UNARY, a->type, 1);
    e->op = op;
    e->weak = false;
    e->args[0] = a;
    return e;
}

sc_expr *sc_select(sc_pipeline *p, sc_expr *c, sc_expr *t, sc_expr *f) {
    if (!c || !t || !f) return NULL;
    if (c->type != SC_BOOL || c->weak) {
        sc_error(p, "select expects a bool condition (a comparison), got %s",
                 c->weak ? "integer literal" : sc_type_name(c->type));
        return NULL;
    }
    if (t->weak && f->weak) t = coerce_weak(p, t, SC_I32);
    if (!t || !unify(p, "select", &t, &f)) return NULL;
    sc_expr *e = new_expr(p, E_SELECT, t->type, 3);
    e->args[0] = c;
    e->args[1] = t;
    e->args[2] = f;
    return e;
}

sc_expr *sc_math(sc_pipeline *p, sc_mathfn fn, int nargs, sc_expr **args) {
    if (fn < 0 || fn >= SC_MATH_COUNT) {
        sc_error(p, "unknown math function %d", (int)fn);
        return NULL;
    }
    int want = (fn == SC_POW || fn == SC_ATAN2) ? 2 : 1;
    if (nargs != want) {
        sc_error(p, "%s takes %d argument%s, got %d", math_names[fn], want,
                 want == 1 ? "" : "s", nargs);
        return NULL;
    }
    for (int i = 0; i < nargs; i++) if (!args[i]) return NULL;
    sc_expr *e = new_expr(p, E_MATH, SC_F32, nargs);
    e->op = fn;
    for (int i = 0; i < nargs; i++) {
        sc_expr *a = args[i];
        if (a->type == SC_BOOL) {
            sc_error(p, "%s expects a number, got bool", math_names[fn]);
            return NULL;
        }
        if (fn == SC_ABS) {
            if (a->weak) a = coerce_weak(p, a, SC_I32);
            e->type = a->type;
        } else {
            a = sc_cast(p, SC_F32, a);
        }
        e->args[i] = a;
    }
    return e;
}

sc_expr *sc_clamp(sc_pipeline *p, sc_expr *x, sc_expr *lo, sc_expr *hi) {
    return sc_binary(p, SC_MAX, sc_binary(p, SC_MIN, x, hi), lo);
}

/* a + (b - a) * w, in f32 for integer operands. */
sc_expr *sc_lerp(sc_pipeline *p, sc_expr *a, sc_expr *b, sc_expr *w) {
    if (!a || !b || !w) return NULL;
    sc_type t = (a->type == SC_F32 || b->type == SC_F32 || w->type == SC_F32 ||
                 a->weak || b->weak) ? SC_F32 : a->type;
    if (t != SC_F32) {
        sc_expr *fa = sc_cast(p, SC_F32, a), *fb = sc_cast(p, SC_F32, b);
        sc_expr *r = sc_binary(p, SC_ADD, fa, sc_binary(p, SC_MUL, sc_binary(p, SC_SUB, fb, fa),
                                                        sc_cast(p, SC_F32, w)));
        return sc_cast(p, t, r);
    }
    a = sc_cast(p, SC_F32, a);
    b = sc_cast(p, SC_F32, b);
    return sc_binary(p, SC_ADD, a, sc_binary(p, SC_MUL, sc_binary(p, SC_SUB, b, a),
                                             sc_cast(p, SC_F32, w)));
}

/* A call or update of f with the wrong number of arguments. */
static void arity_error(sc_pipeline *p, const sc_func *f, int nargs) {
    if (f->ndims == 0)
        sc_error(p, "%s is 0-D (a scalar) and takes no arguments, got %d; write %s()", f->name, nargs, f->name);
    else
        sc_error(p, "%s takes %d argument%s, got %d", f->name, f->ndims, f->ndims == 1 ? "" : "s", nargs);
}

sc_expr *sc_call(sc_pipeline *p, sc_func *f, int nargs, sc_expr **args) {
    if (!f) return NULL;
    for (int i = 0; i < nargs; i++) if (!args[i]) return NULL;
    if (f->kind == FUNC_DEFINED && f->nstages == 0) {
        sc_error(p, "%s is called before it is defined", f->name);
        return NULL;
    }
    if (nargs != f->ndims) {
        arity_error(p, f, nargs);
        return NULL;
    }
    sc_expr *e = new_expr(p, E_CALL, f->type, nargs);
    e->func = f;
    for (int i = 0; i < nargs; i++) {
        sc_expr *a = args[i];
        if (a->type == SC_F32 || a->type == SC_BOOL) {
            sc_error(p, "coordinate %d of %s must be an integer, got %s (use i32(...))",
                     i, f->name, sc_type_name(a->type));
            return NULL;
        }
        if (a->weak) {           /* a strong copy: nodes are never mutated */
            sc_expr *k = new_expr(p, E_CONST, SC_I32, 0);
            k->c.i = a->c.i;
            k->loc = a->loc;
            e->args[i] = k;
        } else {
            e->args[i] = sc_cast(p, SC_I32, a);
        }
    }
    return e;
}

void ir_visit(const sc_expr *e, ir_visit_fn fn, void *user) {
    if (!e) return;
    fn(e, user);
    for (int i = 0; i < e->nargs; i++) ir_visit(e->args[i], fn, user);
}

/* ---- Funcs ---------------------------------------------------------------- */

static sc_func *new_func(sc_pipeline *p, const char *name, ir_func_kind kind) {
    sc_func *f = ir_alloc(p->arena, sizeof *f);
    f->name = ir_strdup(p->arena, name);
    f->id = p->funcs.n;
    f->kind = kind;
    f->loc = p->loc;
    ir_vec_push(p->arena, &p->funcs, f);
    return f;
}

sc_func *sc_input(sc_pipeline *p, const char *name, sc_type t, int ndims,
                  const int *extents) {
    if (!check_new_name(p, "input", name)) return NULL;
    if (t < 0 || t >= SC_TYPE_COUNT || t == SC_BOOL) {
        sc_error(p, "input %s: type must be one of u8 u16 u32 i8 i16 i32 f32", name);
        return NULL;
    }
    if (ndims < 1 || ndims > 4) {
        sc_error(p, "input %s: must have 1 to 4 dimensions, got %d", name, ndims);
        return NULL;
    }
    for (int d = 0; d < ndims; d++)
        if (extents[d] <= 0) {
            sc_error(p, "input %s: size %d of dimension %d must be positive", name,
                     extents[d], d);
            return NULL;
        }
    sc_func *f = new_func(p, name, FUNC_INPUT);
    f->type = t;
    f->ndims = ndims;
    memcpy(f->extent, extents, sizeof(int) * (size_t)ndims);
    ir_vec_push(p->arena, &p->inputs, f);
    f->input_index = p->inputs.n;
    return f;
}

sc_func *sc_func_new(sc_pipeline *p, const char *name) {
    if (!check_new_name(p, "Func", name)) return NULL;
    return new_func(p, name, FUNC_DEFINED);
}

sc_func *sc_func_lookup(const sc_pipeline *p, const char *name) {
    for (int i = 0; i < p->funcs.n; i++)
        if (!strcmp(((sc_func *)p->funcs.items[i])->name, name)) return p->funcs.items[i];
    return NULL;
}

const char *sc_func_name(const sc_func *f) { return f->name; }
int sc_func_dims(const sc_func *f) { return f->ndims; }
sc_type sc_func_type(const sc_func *f) { return f->type; }

static ir_stage *add_stage(sc_pipeline *p, sc_func *f) {
    if (f->nstages == f->cap_stages) {
        int cap = f->cap_stages ? f->cap_stages * 2 : 4;
        ir_stage *s = ir_alloc(p->arena, sizeof(ir_stage) * (size_t)cap);
        if (f->nstages) memcpy(s, f->stages, sizeof(ir_stage) * (size_t)f->nstages);
        f->stages = s;
        f->cap_stages = cap;
    }
    ir_stage *s = &f->stages[f->nstages++];
    memset(s, 0, sizeof *s);
    s->loc = p->loc;
    return s;
}

typedef struct {
    sc_pipeline *p;
    const sc_func *f;       /* the Func being defined */
    const char *const *vars;
    int nvars;
    sc_rdom *rdom;
    bool ok;
    bool pure_def;
} def_check;

static void check_def_node(const sc_expr *e, void *user) {
    def_check *c = user;
    if (!c->ok) return;
    if (e->kind == E_VAR) {
        for (int i = 0; i < c->nvars; i++)
            if (!strcmp(c->vars[i], e->name)) return;
        sc_error(c->p, "variable %s is not an argument of %s", e->name, c->f->name);
        c->ok = false;
    } else if (e->kind == E_RVAR) {
        if (c->pure_def) {
            sc_error(c->p, "reduction variable %s in the pure definition of %s (reductions need an update definition, or sum/maximum/minimum)",
                     e->rdom->name, c->f->name);
            c->ok = false;
        } else if (c->rdom && c->rdom != e->rdom) {
            sc_error(c->p, "update of %s uses two reduction domains, %s and %s (one at most)",
                     c->f->name, c->rdom->name, e->rdom->name);
            c->ok = false;
        } else {
            c->rdom = e->rdom;
        }
    }
}

int sc_define(sc_pipeline *p, sc_func *f, int nvars, const char **vars,
              sc_expr *value) {
    if (!f || !value) return -1;
    if (f->kind == FUNC_INPUT) {
        sc_error(p, "%s is an input and cannot be defined", f->name);
        return -1;
    }
    if (f->nstages > 0) {
        sc_error(p, "%s already has a pure definition (an update must use a reduction variable or change its left side)",
                 f->name);
        return -1;
    }
    if (nvars < 0 || nvars > SC_MAX_DIMS) {
        sc_error(p, "%s: a Func has at most %d dimensions, got %d", f->name, SC_MAX_DIMS, nvars);
        return -1;
    }
    for (int i = 0; i < nvars; i++) {
        if (!valid_identifier(vars[i])) {
            sc_error(p, "%s: argument %d must be a variable name", f->name, i);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(vars[i], vars[j])) {
                sc_error(p, "%s: variable %s appears twice on the left side", f->name, vars[i]);
                return -1;
            }
    }
    def_check c = { p, f, vars, nvars, NULL, true, true };
    ir_visit(value, check_def_node, &c);
    if (!c.ok) return -1;
    if (value->type == SC_BOOL) {
        sc_error(p, "%s would hold bool values; convert with select(cond, 1, 0) or u8(...)", f->name);
        return -1;
    }
    if (value->weak) value = coerce_weak(p, value, SC_I32);
    f->type = value->type;
    f->ndims = nvars;
    ir_stage *s = add_stage(p, f);
    s->nargs = nvars;
    s->args = ir_alloc(p->arena, sizeof(sc_expr *) * (size_t)(nvars ? nvars : 1));
    for (int i = 0; i < nvars; i++) {
        f->vars[i] = ir_strdup(p->arena, vars[i]);
        s->args[i] = sc_var(p, vars[i]);
    }
    s->value = value;
    return 0;
}

/* Self-references in an update must keep each pure variable at its own
 * position, so that distinct pure points never interact (see ir.h). */
typedef struct { sc_pipeline *p; const sc_func *f; bool used[SC_MAX_DIMS]; bool ok; } self_check;

static void check_self_call(const sc_expr *e, void *user) {
    self_check *c = user;
    if (!c->ok || e->kind != E_CALL || e->func != c->f) return;
    for (int d = 0; d < c->f->ndims; d++) {
        if (!c->used[d]) continue;
        const sc_expr *a = e->args[d];
        if (a->kind != E_VAR || strcmp(a->name, c->f->vars[d]) != 0) {
            char *s = ir_expr_to_string(e);
            sc_error(c->p, "self-reference %s in an update of %s must use %s unmodified as argument %d",
                     s, c->f->name, c->f->vars[d], d);
            free(s);
            c->ok = false;
            return;
        }
    }
}

int sc_update(sc_pipeline *p, sc_func *f, int nargs, sc_expr **lhs,
              sc_expr *value) {
    if (!f || !value) return -1;
    for (int i = 0; i < nargs; i++) if (!lhs[i]) return -1;
    if (f->kind == FUNC_INPUT) {
        sc_error(p, "%s is an input and cannot be updated", f->name);
        return -1;
    }
    if (f->nstages == 0) {
        sc_error(p, "update of %s before its pure definition", f->name);
        return -1;
    }
    if (nargs != f->ndims) {
        arity_error(p, f, nargs);
        return -1;
    }
    self_check sc = { p, f, {false}, true };
    def_check c = { p, f, (const char *const *)f->vars, f->ndims, NULL, true, false };
    sc_expr **args = ir_alloc(p->arena, sizeof(sc_expr *) * (size_t)(nargs ? nargs : 1));
    for (int d = 0; d < nargs; d++) {
        sc_expr *a = lhs[d];
        if (a->type == SC_F32 || a->type == SC_BOOL) {
            sc_error(p, "coordinate %d of %s must be an integer, got %s", d, f->name,
                     sc_type_name(a->type));
            return -1;
        }
        if (a->weak) a = coerce_weak(p, a, SC_I32);
        else a = sc_cast(p, SC_I32, a);
        if (a->kind == E_VAR) {
            if (strcmp(a->name, f->vars[d]) != 0) {
                sc_error(p, "update of %s: argument %d must be %s (the variable of that position), a reduction expression, or a constant; got %s",
                         f->name, d, f->vars[d], a->name);
                return -1;
            }
            sc.used[d] = true;
        } else {
            ir_visit(a, check_def_node, &c);
            if (!c.ok) return -1;
        }
        args[d] = a;
    }
    /* Walk lhs args (non-bare) and value: every pure variable used must be
     * bare at its own position on the left.  It may also appear inside
     * another left-side argument (hist_rows(bin(r, y), y) += 1, as in
     * Halide): the point written still has y at y's position, so distinct
     * pure points still never interact. */
    for (int d = 0; d <= nargs; d++) {
        const sc_expr *root = d < nargs ? args[d] : value;
        if (d < nargs && root->kind == E_VAR) continue;
        ir_vec stack = {0};
        ir_vec_push(p->arena, &stack, (void *)root);
        while (stack.n) {
            const sc_expr *e = stack.items[--stack.n];
            if (e->kind == E_VAR) {
                int pos = -1;
                for (int v = 0; v < f->ndims; v++)
                    if (!strcmp(f->vars[v], e->name)) pos = v;
                if (pos < 0) {
                    sc_error(p, "variable %s is not an argument of %s", e->name, f->name);
                    return -1;
                }
                if (!sc.used[pos]) {
                    sc_error(p, "update of %s uses pure variable %s, which must then appear unmodified as argument %d on the left side",
                             f->name, e->name, pos);
                    return -1;
                }
            }
            for (int i = 0; i < e->nargs; i++) ir_vec_push(p->arena, &stack, e->args[i]);
        }
    }
    ir_visit(value, check_def_node, &c);
    if (!c.ok) return -1;
    ir_visit(value, check_self_call, &sc);
    if (!sc.ok) return -1;
    if (value->weak) {
        value = coerce_weak(p, value, f->type);
        if (!value) return -1;
    } else if (value->type != f->type) {
        sc_error(p, "update of %s has type %s, but %s holds %s (cast it with %s(...))",
                 f->name, sc_type_name(value->type), f->name, sc_type_name(f->type),
                 sc_type_name(f->type));
        return -1;
    }
    ir_stage *s = add_stage(p, f);
    s->nargs = nargs;
    s->args = args;
    s->value = value;
    s->rdom = c.rdom;
    return 0;
}

int ir_stage_loops(const sc_func *f, int stage, int *which) {
    int n = 0;
    const ir_stage *s = &f->stages[stage];
    if (stage == 0) {
        for (int d = 0; d < f->ndims; d++) which[n++] = d;
        return n;
    }
    for (int d = 0; d < s->nargs; d++)
        if (s->args[d]->kind == E_VAR) which[n++] = d;
    if (s->rdom)
        for (int d = 0; d < s->rdom->ndims; d++) which[n++] = -1 - d;
    return n;
}

typedef struct {
    const sc_func *f;
    const ir_stage *s;
    bool ok;
} accum_walk;

static void accum_visit(const sc_expr *e, void *user) {
    accum_walk *w = user;
    if (e->kind != E_CALL || e->func != w->f) return;
    for (int d = 0; d < e->nargs && w->ok; d++)
        if (!ir_expr_equal(e->args[d], w->s->args[d])) w->ok = false;
}

bool ir_stage_accumulates(const sc_func *f, int stage) {
    if (stage <= 0 || stage >= f->nstages) return false;
    const ir_stage *s = &f->stages[stage];
    if (!s->rdom || s->nargs != f->ndims) return false;
    for (int d = 0; d < s->nargs; d++)
        if (s->args[d]->kind != E_VAR || strcmp(s->args[d]->name, f->vars[d])) return false;
    accum_walk w = { f, s, true };
    ir_visit(s->value, accum_visit, &w);
    return w.ok;
}

static void call_visit(const sc_expr *e, void *user) {
    if (e->kind == E_CALL) *(bool *)user = true;
}

bool ir_expr_is_square(const sc_expr *e) {
    return e->kind == E_MATH && e->op == SC_POW && e->nargs == 2 && e->args[1]->kind == E_CONST &&
           e->args[1]->type == SC_F32 && e->args[1]->c.f == 2.0;
}

bool ir_stage_scatters(const sc_func *f, int stage) {
    if (stage <= 0 || stage >= f->nstages) return false;
    const ir_stage *s = &f->stages[stage];
    bool calls = false;
    for (int d = 0; d < s->nargs && !calls; d++) ir_visit(s->args[d], call_visit, &calls);
    return calls;
}

bool ir_stage_reduction_around(const sc_func *f, int stage) {
    return stage > 0 && stage < f->nstages && f->stages[stage].rdom && !ir_stage_scatters(f, stage);
}

sc_rdom *sc_rdom_new(sc_pipeline *p, const char *name, int ndims,
                     const int *mins, const int *extents) {
    if (!check_new_name(p, "reduction domain", name)) return NULL;
    if (ndims < 1 || ndims > 4) {
        sc_error(p, "reduction domain %s must have 1 to 4 dimensions, got %d", name, ndims);
        return NULL;
    }
    for (int d = 0; d < ndims; d++)
        if (extents[d] <= 0) {
            sc_error(p, "reduction domain %s: extent %d of dimension %d must be positive",
                     name, extents[d], d);
            return NULL;
        }
    sc_rdom *r = ir_alloc(p->arena, sizeof *r);
    r->name = ir_strdup(p->arena, name);
    r->id = p->rdoms.n;
    r->ndims = ndims;
    memcpy(r->min, mins, sizeof(int) * (size_t)ndims);
    memcpy(r->extent, extents, sizeof(int) * (size_t)ndims);
    r->loc = p->loc;
    ir_vec_push(p->arena, &p->rdoms, r);
    return r;
}

sc_param *sc_param_new(sc_pipeline *p, const char *name, sc_type t, double value) {
    if (!check_new_name(p, "parameter", name)) return NULL;
    if (t < 0 || t >= SC_TYPE_COUNT || t == SC_BOOL) {
        sc_error(p, "parameter %s: type must be one of u8 u16 u32 i8 i16 i32 f32", name);
        return NULL;
    }
    sc_param *q = ir_alloc(p->arena, sizeof *q);
    q->name = ir_strdup(p->arena, name);
    q->id = p->params.n;
    q->type = t;
    q->loc = p->loc;
    ir_vec_push(p->arena, &p->params, q);
    if (sc_param_set(q, value) != 0) {
        sc_error(p, "parameter %s: value %g does not fit %s", name, value, sc_type_name(t));
        return NULL;
    }
    return q;
}

sc_param *sc_param_lookup(const sc_pipeline *p, const char *name) {
    for (int i = 0; i < p->params.n; i++)
        if (!strcmp(((sc_param *)p->params.items[i])->name, name)) return p->params.items[i];
    return NULL;
}

int sc_param_set(sc_param *q, double value) {
    if (!isfinite(value)) return -1;
    if (q->type == SC_F32) {
        if (fabs(value) >= 0x1.ffffffp+127) return -1;   /* rounds to inf */
        q->value = (float)value;
        return 0;
    }
    if (value != trunc(value) || value < (double)int_min_of(q->type) ||
        value > (double)int_max_of(q->type))
        return -1;
    q->value = value;
    return 0;
}

/* ---- boundary helpers and inline reductions -------------------------- */

static const char *dim_var_names[SC_MAX_DIMS] = { "x", "y", "z", "w", "v", "u" };

static bool boundary_extents(sc_pipeline *p, const char *helper, sc_func *src,
                             const int *extents, int *out) {
    if (src->ndims == 0) {
        sc_error(p, "%s of %s: %s is 0-D (a scalar) and has no boundary; call it as %s()", helper, src->name,
                 src->name, src->name);
        return false;
    }
    if (!extents && src->kind != FUNC_INPUT) {
        sc_error(p, "%s of %s needs the extents of the region to keep (only inputs know their own)",
                 helper, src->name);
        return false;
    }
    for (int d = 0; d < src->ndims; d++) {
        out[d] = extents ? extents[d] : src->extent[d];
        if (out[d] <= 0) {
            sc_error(p, "%s of %s: extent %d of dimension %d must be positive", helper,
                     src->name, out[d], d);
            return false;
        }
    }
    return true;
}

static sc_func *boundary(sc_pipeline *p, const char *helper, const char *name,
                         sc_func *src, sc_expr *value, const int *extents) {
    if (!src) return NULL;
    int ext[SC_MAX_DIMS];
    if (src->kind == FUNC_DEFINED && src->nstages == 0) {
        sc_error(p, "%s of %s, which is not defined yet", helper, src->name);
        return NULL;
    }
    if (!boundary_extents(p, helper, src, extents, ext)) return NULL;
    sc_func *f = sc_func_new(p, name);
    if (!f) return NULL;
    sc_expr *args[SC_MAX_DIMS], *inside = NULL;
    for (int d = 0; d < src->ndims; d++) {
        sc_expr *x = sc_var(p, dim_var_names[d]);
        args[d] = sc_clamp(p, x, sc_int(p, 0), sc_int(p, ext[d] - 1));
        if (value) {
            sc_expr *in = sc_binary(p, SC_AND, sc_binary(p, SC_GE, x, sc_int(p, 0)),
                                    sc_binary(p, SC_LT, x, sc_int(p, ext[d])));
            inside = inside ? sc_binary(p, SC_AND, inside, in) : in;
        }
    }
    sc_expr *body = sc_call(p, src, src->ndims, args);
    if (value && body) {
        if (value->weak) value = coerce_weak(p, value, src->type);
        else if (value && value->type != src->type) value = sc_cast(p, src->type, value);
        body = sc_select(p, inside, body, value);
    }
    if (sc_define(p, f, src->ndims, dim_var_names, body) != 0) return NULL;
    return f;
}

sc_func *sc_repeat_edge(sc_pipeline *p, const char *name, sc_func *src,
                        const int *extents) {
    return boundary(p, "repeat_edge", name, src, NULL, extents);
}

sc_func *sc_constant_exterior(sc_pipeline *p, const char *name, sc_func *src,
                              sc_expr *value, const int *extents) {
    if (!value) return NULL;
    return boundary(p, "constant_exterior", name, src, value, extents);
}

typedef struct { const char *names[SC_MAX_DIMS + 1]; int n; sc_rdom *rdom; bool two; } free_vars;

static void collect_free(const sc_expr *e, void *user) {
    free_vars *fv = user;
    if (e->kind == E_RVAR) {
        if (fv->rdom && fv->rdom != e->rdom) fv->two = true;
        fv->rdom = e->rdom;
    }
    if (e->kind != E_VAR) return;
    for (int i = 0; i < fv->n; i++)
        if (!strcmp(fv->names[i], e->name)) return;
    if (fv->n <= SC_MAX_DIMS) fv->names[fv->n++] = e->name;
}

sc_expr *sc_reduce(sc_pipeline *p, sc_reduce_kind kind, const char *name,
                   sc_expr *body) {
    static const char *kind_names[SC_REDUCE_COUNT] = { "sum", "maximum", "minimum" };
    if (!body) return NULL;
    if (kind < 0 || kind >= SC_REDUCE_COUNT) {
        sc_error(p, "unknown reduction %d", (int)kind);
        return NULL;
    }
    free_vars fv = {{0}, 0, NULL, false};
    ir_visit(body, collect_free, &fv);
    if (!fv.rdom) {
        sc_error(p, "%s(...) needs a reduction variable in its argument", kind_names[kind]);
        return NULL;
    }
    if (fv.two) {
        sc_error(p, "%s(...) uses two reduction domains (one only)", kind_names[kind]);
        return NULL;
    }
    if (fv.n > SC_MAX_DIMS) {
        sc_error(p, "%s(...) depends on more than %d variables", kind_names[kind], SC_MAX_DIMS);
        return NULL;
    }
    if (body->type == SC_BOOL) {
        sc_error(p, "%s(...) of a bool; convert it with select(cond, 1, 0)", kind_names[kind]);
        return NULL;
    }
    if (body->weak) body = coerce_weak(p, body, SC_I32);
    const char *base = name && *name ? name : kind_names[kind];
    size_t cap = strlen(base) + 32;   /* never truncated: truncation would repeat a name */
    char *buf = ir_alloc(p->arena, cap);
    do snprintf(buf, cap, "%s_%s%d", base, kind_names[kind], ++p->uniq);
    while (name_taken(p, buf));
    sc_func *f = sc_func_new(p, buf);
    if (!f) return NULL;
    f->helper = true;
    double init = 0;
    if (kind == SC_MAXIMUM)
        init = body->type == SC_F32 ? -FLT_MAX : (double)int_min_of(body->type);
    else if (kind == SC_MINIMUM)
        init = body->type == SC_F32 ? FLT_MAX : (double)int_max_of(body->type);
    if (sc_define(p, f, fv.n, fv.names, sc_const(p, body->type, init)) != 0) return NULL;
    sc_expr *vars[SC_MAX_DIMS];
    for (int i = 0; i < fv.n; i++) vars[i] = sc_var(p, fv.names[i]);
    sc_expr *self = sc_call(p, f, fv.n, vars);
    sc_binop op = kind == SC_SUM ? SC_ADD : kind == SC_MAXIMUM ? SC_MAX : SC_MIN;
    if (sc_update(p, f, fv.n, vars, sc_binary(p, op, self, body)) != 0) return NULL;
    return sc_call(p, f, fv.n, vars);
}

int sc_output(sc_pipeline *p, sc_func *f, int ndims, const int *extents) {
    if (!f) return -1;
    if (f->kind == FUNC_INPUT) {
        sc_error(p, "%s is an input; an output must be a Func", f->name);
        return -1;
    }
    if (f->nstages == 0) {
        sc_error(p, "output %s is not defined", f->name);
        return -1;
    }
    if (f->is_output) {
        sc_error(p, "%s is already an output", f->name);
        return -1;
    }
    if (ndims != f->ndims && f->ndims == 0) {
        sc_error(p, "output %s is 0-D (a scalar): declare it without sizes, as output %s(); got %d size%s",
                 f->name, f->name, ndims, ndims == 1 ? "" : "s");
        return -1;
    }
    if (ndims != f->ndims) {
        sc_error(p, "output %s has %d dimension%s, got %d sizes", f->name, f->ndims,
                 f->ndims == 1 ? "" : "s", ndims);
        return -1;
    }
    for (int d = 0; d < ndims; d++)
        if (extents[d] <= 0) {
            sc_error(p, "output %s: size %d of dimension %d must be positive", f->name,
                     extents[d], d);
            return -1;
        }
    if (ndims) memcpy(f->out_extent, extents, sizeof(int) * (size_t)ndims);
    ir_vec_push(p->arena, &p->outputs, f);
    f->is_output = p->outputs.n;
    return 0;
}

/* ---- substitution --------------------------------------------------- */

sc_expr *ir_copy_node(ir_arena *arena, const sc_expr *e) {
    sc_expr *r = ir_alloc(arena, sizeof *r);
    *r = *e;
    if (e->nargs) {
        r->args = ir_alloc(arena, sizeof(sc_expr *) * (size_t)e->nargs);
        memcpy(r->args, e->args, sizeof(sc_expr *) * (size_t)e->nargs);
    }
    return r;
}

sc_expr *ir_subst(ir_arena *arena, sc_expr *e, const ir_subst_map *m) {
    if (e->kind == E_VAR) {
        for (int i = 0; i < m->n; i++)
            if (!strcmp(m->names[i], e->name)) return m->vals[i];
        return e;
    }
    if (e->kind == E_RVAR) {
        if (m->rdom && m->rdom == e->rdom && m->rvals[e->dim]) return m->rvals[e->dim];
        return e;
    }
    if (!e->nargs) return e;
    sc_expr *r = NULL;
    for (int i = 0; i < e->nargs; i++) {
        sc_expr *a = ir_subst(arena, e->args[i], m);
        if (a != e->args[i] && !r) r = ir_copy_node(arena, e);
        if (r) r->args[i] = a;
    }
    return r ? r : e;
}
