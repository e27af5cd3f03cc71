/*
 * print.c - the text form of the pipeline IR.
 *
 * The IR prints as .pipe text with nothing implicit left: no templates,
 * loops, compile-time names or sugar, every non-i32 constant with its type.
 * Parsing that text gives the same IR again (tests/test_roundtrip.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct { char *buf; size_t len, cap; } strbuf;

static void sb_printf(strbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(strbuf *s, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        size_t room = s->cap - s->len;
        va_start(ap, fmt);
        int n = vsnprintf(s->buf ? s->buf + s->len : NULL, s->buf ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) abort();
        if (s->buf && (size_t)n < room) { s->len += (size_t)n; return; }
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + (size_t)n + 1) cap *= 2;
        s->buf = realloc(s->buf, cap);
        if (!s->buf) abort();
        s->cap = cap;
    }
}

/* C-like precedence of the infix operators; function-call forms are 100. */
static int prec_of(const sc_expr *e) {
    if (e->kind == E_UNARY) return 11;
    if (e->kind != E_BINARY) return 100;
    switch (e->op) {
    case SC_OR: return 1;
    case SC_AND: return 2;
    case SC_BITOR: return 3;
    case SC_BITXOR: return 4;
    case SC_BITAND: return 5;
    case SC_EQ: case SC_NE: return 6;
    case SC_LT: case SC_LE: case SC_GT: case SC_GE: return 7;
    case SC_SHL: case SC_SHR: return 8;
    case SC_ADD: case SC_SUB: return 9;
    case SC_MUL: case SC_DIV: case SC_MOD: return 10;
    default: return 100;   /* min, max */
    }
}

static void print_float(strbuf *s, double v) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.9g", v);
    if (!strpbrk(tmp, ".eEni")) strcat(tmp, ".0");
    sb_printf(s, "%s", tmp);
}

static const char *rvar_dim_names = "xyzw";

static void print_expr(strbuf *s, const sc_expr *e);

static bool is_i32_const(const sc_expr *e) { return e->kind == E_CONST && e->type == SC_I32; }

/* An operator on i32 constants only (i32(3) + i32(4), -i32(7)) was built
 * from typed constants; printed bare it would fold when parsed back, so its
 * first operand keeps its type: i32(3) + 4. */
static bool keeps_type(const sc_expr *e) {
    if (e->kind == E_UNARY) return is_i32_const(e->args[0]);
    return e->kind == E_BINARY && is_i32_const(e->args[0]) && is_i32_const(e->args[1]);
}

/* An operand; typed: an i32 constant printed with its type (keeps_type). */
static void print_child(strbuf *s, const sc_expr *c, int parent_prec, bool right, bool typed) {
    if (typed) {
        sb_printf(s, "i32(%lld)", (long long)c->c.i);
        return;
    }
    int pc = prec_of(c);
    bool neg_const = c->kind == E_CONST && (c->type == SC_F32 ? c->c.f < 0 : c->c.i < 0);
    bool paren = pc < parent_prec || (right && pc == parent_prec) ||
                 (neg_const && parent_prec >= 9);
    if (paren) sb_printf(s, "(");
    print_expr(s, c);
    if (paren) sb_printf(s, ")");
}

static void print_args(strbuf *s, const sc_expr *e) {
    for (int i = 0; i < e->nargs; i++) {
        if (i) sb_printf(s, ", ");
        print_expr(s, e->args[i]);
    }
}

static void print_expr(strbuf *s, const sc_expr *e) {
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32) print_float(s, e->c.f);
        else if (e->type == SC_I32) sb_printf(s, "%lld", (long long)e->c.i);
        else if (e->type == SC_BOOL) sb_printf(s, "(%s)", e->c.i ? "0 == 0" : "0 != 0");
        /* A literal is at most 2147483647: larger u32 values print as the
         * negative number the cast wraps back to them. */
        else if (e->type == SC_U32 && e->c.i > INT32_MAX)
            sb_printf(s, "u32(%lld)", (long long)(e->c.i - 4294967296LL));
        else sb_printf(s, "%s(%lld)", sc_type_name(e->type), (long long)e->c.i);
        break;
    case E_VAR: sb_printf(s, "%s", e->name); break;
    case E_RVAR: sb_printf(s, "%s.%c", e->rdom->name, rvar_dim_names[e->dim]); break;
    case E_PARAM: sb_printf(s, "%s", e->param->name); break;
    case E_CAST:
        sb_printf(s, "%s(", sc_type_name(e->type));
        print_expr(s, e->args[0]);
        sb_printf(s, ")");
        break;
    case E_SELECT: sb_printf(s, "select("); print_args(s, e); sb_printf(s, ")"); break;
    case E_CALL: sb_printf(s, "%s(", e->func->name); print_args(s, e); sb_printf(s, ")"); break;
    case E_MATH:
        sb_printf(s, "%s(", ir_math_name(e->op)); print_args(s, e); sb_printf(s, ")");
        break;
    case E_UNARY:
        sb_printf(s, "%s", ir_unop_name(e->op));
        print_child(s, e->args[0], 12, false, keeps_type(e));
        break;
    case E_BINARY:
        if (e->op == SC_MIN || e->op == SC_MAX) {
            sb_printf(s, "%s(", ir_binop_name(e->op));
            print_child(s, e->args[0], 0, false, keeps_type(e));
            sb_printf(s, ", ");
            print_expr(s, e->args[1]);
            sb_printf(s, ")");
        } else {
            int pp = prec_of(e);
            print_child(s, e->args[0], pp, false, keeps_type(e));
            sb_printf(s, " %s ", ir_binop_name(e->op));
            print_child(s, e->args[1], pp, true, false);
        }
        break;
    default:
        sb_printf(s, "<?>");
    }
}

char *ir_expr_to_string(const sc_expr *e) {
    strbuf s = {0};
    if (e) print_expr(&s, e);
    else sb_printf(&s, "<null>");
    return s.buf;
}

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static uint64_t hmix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

uint64_t ir_hash_mix(uint64_t h, uint64_t v) { return hmix(h, v); }

uint64_t ir_expr_node_hash(const sc_expr *e) {
    uint64_t h = hmix((uint64_t)e->kind * 131 + (uint64_t)e->type, (uint64_t)e->nargs);
    switch (e->kind) {
    case E_CONST: {
        uint64_t v;
        if (e->type == SC_F32) memcpy(&v, &e->c.f, sizeof v);
        else v = (uint64_t)e->c.i;
        return hmix(h, v);
    }
    case E_VAR: return hmix(h, str_hash(e->name));
    case E_RVAR: return hmix(hmix(h, str_hash(e->rdom->name)), (uint64_t)e->dim);
    case E_PARAM: return hmix(h, str_hash(e->param->name));
    case E_CALL: return hmix(h, str_hash(e->func->name));
    case E_BINARY: case E_UNARY: case E_MATH: return hmix(h, (uint64_t)e->op);
    default: return h;
    }
}

uint64_t ir_expr_hash(const sc_expr *e) {
    uint64_t h = ir_expr_node_hash(e);
    for (int i = 0; i < e->nargs; i++) h = hmix(h, ir_expr_hash(e->args[i]));
    return h;
}

bool ir_expr_equal(const sc_expr *a, const sc_expr *b) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || a->type != b->type || a->nargs != b->nargs)
        return false;
    switch (a->kind) {
    case E_CONST:
        if (a->type == SC_F32 ? a->c.f != b->c.f : a->c.i != b->c.i) return false;
        break;
    case E_VAR: if (strcmp(a->name, b->name)) return false; break;
    case E_RVAR:
        if (strcmp(a->rdom->name, b->rdom->name) || a->dim != b->dim) return false;
        break;
    case E_PARAM: if (strcmp(a->param->name, b->param->name)) return false; break;
    case E_CALL: if (strcmp(a->func->name, b->func->name)) return false; break;
    case E_BINARY: case E_UNARY: case E_MATH:
        if (a->op != b->op) return false;
        break;
    default: break;
    }
    for (int i = 0; i < a->nargs; i++)
        if (!ir_expr_equal(a->args[i], b->args[i])) return false;
    return true;
}

static void print_ints(strbuf *s, const int *v, int n) {
    for (int i = 0; i < n; i++) sb_printf(s, "%s%d", i ? ", " : "", v[i]);
}

char *sc_pipeline_to_text(const sc_pipeline *p) {
    strbuf s = {0};
    sb_printf(&s, "# the IR of pipeline %s, as stagecraft prints it\n", p->name);
    sb_printf(&s, "pipeline %s;\n", p->name);
    for (int i = 0; i < p->params.n; i++) {
        const sc_param *q = p->params.items[i];
        sb_printf(&s, "param %s %s = ", sc_type_name(q->type), q->name);
        if (q->type == SC_F32) print_float(&s, q->value);
        else sb_printf(&s, "%lld", (long long)q->value);
        sb_printf(&s, ";\n");
    }
    for (int i = 0; i < p->inputs.n; i++) {
        const sc_func *f = p->inputs.items[i];
        sb_printf(&s, "input %s %s(", sc_type_name(f->type), f->name);
        print_ints(&s, f->extent, f->ndims);
        sb_printf(&s, ");\n");
    }
    for (int i = 0; i < p->rdoms.n; i++) {
        const sc_rdom *r = p->rdoms.items[i];
        sb_printf(&s, "rdom %s(", r->name);
        for (int d = 0; d < r->ndims; d++)
            sb_printf(&s, "%s%d, %d", d ? ", " : "", r->min[d], r->extent[d]);
        sb_printf(&s, ");\n");
    }
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (f->kind == FUNC_INPUT) continue;
        for (int k = 0; k < f->nstages; k++) {
            const ir_stage *st = &f->stages[k];
            sb_printf(&s, "%s(", f->name);
            for (int d = 0; d < st->nargs; d++) {
                if (d) sb_printf(&s, ", ");
                print_expr(&s, st->args[d]);
            }
            sb_printf(&s, ") = ");
            print_expr(&s, st->value);
            sb_printf(&s, ";\n");
        }
    }
    for (int i = 0; i < p->outputs.n; i++) {
        const sc_func *f = p->outputs.items[i];
        sb_printf(&s, "output %s(", f->name);
        print_ints(&s, f->out_extent, f->ndims);
        sb_printf(&s, ");\n");
    }
    return s.buf;
}
