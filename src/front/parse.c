/*
 * parse.c - the .pipe parser.  It builds the IR through the public API of
 * include/stagecraft.h and evaluates everything compile-time on the way:
 * sizes, `let`, `for`, `if`, templates and indexed names.
 *
 * Grammar (docs/language.md has the full description):
 *
 *   file      = { stmt }
 *   stmt      = "pipeline" NAME ";"
 *             | "size" NAME "=" cexpr [ "small" cexpr ] ";"
 *             | "param" TYPE NAME "=" cexpr ";"
 *             | "let" NAME "=" cexpr ";"
 *             | "input" TYPE fname "(" cexpr { "," cexpr } ")" ";"
 *             | "rdom" fname "(" cexpr "," cexpr { "," cexpr "," cexpr } ")" ";"
 *             | "output" fname "(" cexpr { "," cexpr } ")" ";"
 *             | "template" NAME "(" [ NAME { "," NAME } ] ")" "{" { stmt } "}"
 *             | "for" NAME "in" cexpr ".." cexpr "{" { stmt } "}"
 *             | "if" cexpr "{" { stmt } "}" [ "else" ( "{" { stmt } "}" | if-stmt ) ]
 *             | fname "=" NAME "(" [ arg { "," arg } ] ")" ";"     (template, boundary)
 *             | fname "(" [ expr { "," expr } ] ")" assign expr ";" (definition)
 *   fname     = NAME [ "[" cexpr "]" ]           (g[3] is the Func g_3)
 *   assign    = "=" | "+=" | "-=" | "*=" | "/="
 *   expr      = C precedence over || && | ^ & == != < <= > >= << >> + - * / %
 *               and unary - ! ~, with calls, casts u8(e) ... f32(e), builtins.
 *
 * Errors name file:line:column.  After a syntax error the parser skips to
 * the end of the statement and goes on, so one run reports many errors.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"
#include "scmath.h"
#include "lex.h"

#define MAX_DEPTH 200          /* expression and statement nesting */
#define MAX_ERRORS 30
#define MAX_UNROLL 100000      /* compile-time loop iterations in all */

typedef enum { B_INT, B_FLOAT, B_FUNC, B_BARRIER } bind_kind;

/* A compile-time binding: `size`, `let`, a loop variable, or a template
 * argument.  Template instances push a barrier: their bodies see only
 * their own bindings and the global ones. */
typedef struct {
    const char *name;      /* points into the source text (len) or arena */
    int len;
    bind_kind kind;
    int64_t ival;
    double fval;
    sc_func *func;
    bool local;            /* made inside a for, if or template block */
} binding;

typedef struct {
    const char *name;      /* template name */
    int nparams;
    const token *params[16];
    int body_start, body_end;   /* token range of the body */
} template_def;

/* Template-local names: a Func or rdom defined inside an instance is "<result>_<local>". */
typedef struct {
    const char *tname;     /* template name, which stands for the result */
    const char *result;    /* the result's full name */
    int nlocals;
    const char *local[64];
    const char *mangled[64];
} instance;

typedef struct {
    sc_pipeline *p;
    const char *file;
    tok_array ts;
    int pos, end;
    const sc_parse_options *opt;
    bool *set_used;
    binding *binds;
    int nbinds, capbinds;
    template_def templates[64];
    int ntemplates;
    instance inst[32];
    int ninst;
    /* The definition being parsed: local pure variable names and what they
     * stand for in the Func. */
    const char *vars[SC_MAX_DIMS];
    const char *var_as[SC_MAX_DIMS];
    int nvars;
    const char *defining;  /* name of the Func being defined */
    int depth;
    int unrolled;
    bool panic;            /* a syntax error: skip to the statement's end */
    ir_vec failed;         /* names whose declaration failed (see has_failed) */
    bool stop;             /* too many errors, or nesting too deep */
} parser;

static const token *peek(parser *ps) { return &ps->ts.toks[ps->pos < ps->end ? ps->pos : ps->end]; }
static const token *peek_at(parser *ps, int k) {
    int i = ps->pos + k;
    return &ps->ts.toks[i < ps->end ? i : ps->end];
}
static const token *next(parser *ps) {
    const token *t = peek(ps);
    if (ps->pos < ps->end) ps->pos++;
    return t;
}
static bool at_end(parser *ps) { return ps->pos >= ps->end || peek(ps)->kind == T_EOF; }

static void locate(parser *ps, const token *t) {
    sc_pipeline_set_loc(ps->p, ps->file, t->line, t->col);
}

static void check_error_limit(parser *ps) {
    if (sc_error_count(ps->p) >= MAX_ERRORS && !ps->stop) {
        sc_error(ps->p, "too many errors; stopping");
        ps->stop = true;
    }
}

static void errorf(parser *ps, const token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void errorf(parser *ps, const token *t, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    locate(ps, t);
    sc_error(ps->p, "%s", msg);
    ps->panic = true;
    check_error_limit(ps);
}

/* "'foo'" for names, the kind for punctuation. */
static const char *describe(const token *t, char *buf, size_t n) {
    if (t->kind == T_IDENT || t->kind == T_INT || t->kind == T_FLOAT)
        snprintf(buf, n, "'%.*s'", t->len > 40 ? 40 : t->len, t->start);
    else if (t->kind == T_BAD) {
        unsigned char c = (unsigned char)t->start[0];
        if (c >= 32 && c < 127) snprintf(buf, n, "invalid character '%c'", c);
        else snprintf(buf, n, "invalid byte 0x%02x", c);
    } else
        snprintf(buf, n, "%s", lex_kind_name(t->kind));
    return buf;
}

static bool expect(parser *ps, tok_kind k, const char *context) {
    if (ps->panic) return false;
    if (peek(ps)->kind == k) { next(ps); return true; }
    char buf[64];
    errorf(ps, peek(ps), "expected %s %s, found %s", lex_kind_name(k), context,
           describe(peek(ps), buf, sizeof buf));
    return false;
}

static bool tok_is(const token *t, const char *word) {
    return t->kind == T_IDENT && (int)strlen(word) == t->len && !memcmp(t->start, word, (size_t)t->len);
}

static char *tok_str(parser *ps, const token *t) {
    char *s = ir_alloc(ps->p->arena, (size_t)t->len + 1);
    memcpy(s, t->start, (size_t)t->len);
    return s;
}

static const char *keywords[] = {
    "pipeline", "size", "param", "let", "input", "rdom", "output", "template",
    "for", "if", "else", "select", "min", "max", "clamp", "lerp", "sum", "maximum",
    "minimum", "repeat_edge", "constant_exterior", "bool", "u8", "u16", "u32", "i8",
    "i16", "i32", "f32", "sqrt", "exp", "log", "pow", "floor", "ceil", "round", "sin",
    "cos", "tanh", "atan2", "abs", NULL
};

static bool is_keyword(const token *t) {
    for (int i = 0; keywords[i]; i++) if (tok_is(t, keywords[i])) return true;
    return false;
}

static int type_of_token(const token *t) {
    static const char *names[] = { "bool", "u8", "u16", "u32", "i8", "i16", "i32", "f32" };
    for (int i = 0; i < SC_TYPE_COUNT; i++) if (tok_is(t, names[i])) return i;
    return -1;
}

static int math_of_token(const token *t) {
    for (int i = 0; i < SC_MATH_COUNT; i++) if (tok_is(t, ir_math_name(i))) return i;
    return -1;
}

/* ---- compile-time bindings ------------------------------------------- */

static binding *bind(parser *ps, const char *name, int len, bind_kind kind) {
    if (ps->nbinds == ps->capbinds) {
        ps->capbinds = ps->capbinds ? ps->capbinds * 2 : 64;
        ps->binds = realloc(ps->binds, sizeof(binding) * (size_t)ps->capbinds);
        if (!ps->binds) abort();
    }
    binding *b = &ps->binds[ps->nbinds++];
    memset(b, 0, sizeof *b);
    b->name = name;
    b->len = len;
    b->kind = kind;
    b->local = ps->depth > 0;   /* statements at top level run at depth 0 */
    return b;
}

/* Innermost binding of a name visible from here: up to the nearest
 * template barrier, then the global ones (below the first barrier). */
static binding *lookup(parser *ps, const char *name, int len) {
    int first_barrier = ps->nbinds;
    for (int i = 0; i < ps->nbinds; i++)
        if (ps->binds[i].kind == B_BARRIER) { first_barrier = i; break; }
    bool crossed = false;
    for (int i = ps->nbinds - 1; i >= 0; i--) {
        binding *b = &ps->binds[i];
        if (b->kind == B_BARRIER) { crossed = true; continue; }
        /* Past a barrier only top-level names count: not the loop
         * variables of the caller, even a loop at top level. */
        if (crossed && (i >= first_barrier || b->local)) continue;
        if (b->len == len && !memcmp(b->name, name, (size_t)len)) return b;
    }
    return NULL;
}

static binding *lookup_tok(parser *ps, const token *t) { return lookup(ps, t->start, t->len); }

/* Whether the declaration of name failed, with an error already reported:
 * its uses then fail silently (one mistake, one message).  Sets panic so
 * that the statement using it is skipped. */
static bool has_failed(parser *ps, const char *name) {
    for (int i = 0; i < ps->failed.n; i++)
        if (!strcmp(ps->failed.items[i], name)) { ps->panic = true; return true; }
    return false;
}

/* ---- names of Funcs -------------------------------------------------- */

static int64_t parse_cint(parser *ps, const char *what);

/* Parses NAME [ "[" cexpr "]" ] and returns the full Func / rdom name,
 * with template locals and the template's own name resolved.  When
 * `defining` is set, a new name inside a template becomes a local. */
static const char *parse_fname(parser *ps, bool defining, const token **name_tok) {
    const token *t = next(ps);
    if (name_tok) *name_tok = t;
    if (t->kind != T_IDENT) {
        char buf[64];
        errorf(ps, t, "expected a name, found %s", describe(t, buf, sizeof buf));
        return NULL;
    }
    if (is_keyword(t)) {
        errorf(ps, t, "'%.*s' is a reserved word and cannot name a Func", t->len, t->start);
        return NULL;
    }
    char *base = tok_str(ps, t);
    if (ps->ninst) {
        instance *in = &ps->inst[ps->ninst - 1];
        bool found = false;
        if (!strcmp(base, in->tname)) { base = (char *)in->result; found = true; }
        for (int i = 0; i < in->nlocals && !found; i++)
            if (!strcmp(in->local[i], base)) { base = (char *)in->mangled[i]; found = true; }
        /* A name defined in the body is local even when a global Func has
         * it (the global is not redefined); template parameters are not. */
        if (!found && defining && !lookup_tok(ps, t)) {
            if (in->nlocals == 64) {
                errorf(ps, t, "more than 64 local names in one template");
                return NULL;
            }
            size_t cap = strlen(in->result) + strlen(base) + 2;
            char *full = ir_alloc(ps->p->arena, cap);
            snprintf(full, cap, "%s_%s", in->result, base);
            in->local[in->nlocals] = base;
            in->mangled[in->nlocals++] = full;
            base = (char *)in->mangled[in->nlocals - 1];
        }
    }
    if (peek(ps)->kind != T_LBRACK) return base;
    next(ps);
    int64_t idx = parse_cint(ps, "an index");
    if (!expect(ps, T_RBRACK, "after the index")) return NULL;
    if (ps->panic) return NULL;
    if (idx < 0) {
        errorf(ps, t, "index of %s must be >= 0, got %lld", base, (long long)idx);
        return NULL;
    }
    size_t cap = strlen(base) + 24;
    char *full = ir_alloc(ps->p->arena, cap);
    snprintf(full, cap, "%s_%lld", base, (long long)idx);
    return full;
}

/* ---- expressions -------------------------------------------------------- */

static sc_expr *parse_expr(parser *ps);

static bool enter(parser *ps, const token *t) {
    if (++ps->depth > MAX_DEPTH) {
        if (!ps->stop) errorf(ps, t, "nesting deeper than %d levels", MAX_DEPTH);
        ps->stop = true;
        return false;
    }
    return true;
}

/* "(" expr { "," expr } ")" into args; returns the count or -1. */
static int parse_args(parser *ps, sc_expr **args, int max, const char *what) {
    if (!expect(ps, T_LPAREN, what)) return -1;
    int n = 0;
    if (peek(ps)->kind != T_RPAREN) {
        for (;;) {
            if (n == max) {
                errorf(ps, peek(ps), "too many arguments %s (at most %d)", what, max);
                return -1;
            }
            args[n++] = parse_expr(ps);
            if (ps->panic || ps->stop) return -1;
            if (peek(ps)->kind != T_COMMA) break;
            next(ps);
        }
    }
    if (!expect(ps, T_RPAREN, what)) return -1;
    return n;
}

static int want_args(parser *ps, const token *t, int n, int want) {
    if (n >= 0 && n != want) {
        errorf(ps, t, "%.*s takes %d argument%s, got %d", t->len, t->start, want,
               want == 1 ? "" : "s", n);
        return -1;
    }
    return n;
}

/* A builtin call: casts, select, min, max, clamp, lerp, math, reductions. */
static sc_expr *parse_builtin(parser *ps, const token *t, bool *handled) {
    sc_pipeline *p = ps->p;
    sc_expr *a[8];
    int ty = type_of_token(t), fn = math_of_token(t);
    *handled = true;
    if (ty >= 0) {
        next(ps);
        if (want_args(ps, t, parse_args(ps, a, 8, "of a cast"), 1) < 0) return NULL;
        if (ty == SC_BOOL) { errorf(ps, t, "cannot cast to bool; compare instead (x != 0)"); return NULL; }
        locate(ps, t);
        return sc_cast(p, (sc_type)ty, a[0]);
    }
    if (fn >= 0) {
        next(ps);
        int n = parse_args(ps, a, 8, "of a math function");
        if (n < 0) return NULL;
        locate(ps, t);
        return sc_math(p, (sc_mathfn)fn, n, a);
    }
    struct { const char *name; int nargs; } fixed[] = {
        {"select", 3}, {"min", 2}, {"max", 2}, {"clamp", 3}, {"lerp", 3},
        {"sum", 1}, {"maximum", 1}, {"minimum", 1},
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
        if (!tok_is(t, fixed[k].name)) continue;
        next(ps);
        if (want_args(ps, t, parse_args(ps, a, 8, "of a builtin"), fixed[k].nargs) < 0)
            return NULL;
        locate(ps, t);
        switch (k) {
        case 0: return sc_select(p, a[0], a[1], a[2]);
        case 1: return sc_binary(p, SC_MIN, a[0], a[1]);
        case 2: return sc_binary(p, SC_MAX, a[0], a[1]);
        case 3: return sc_clamp(p, a[0], a[1], a[2]);
        case 4: return sc_lerp(p, a[0], a[1], a[2]);
        default:
            return sc_reduce(p, k == 5 ? SC_SUM : k == 6 ? SC_MAXIMUM : SC_MINIMUM,
                             ps->defining, a[0]);
        }
    }
    *handled = false;
    return NULL;
}

/* A name in an expression: variable, compile-time constant, parameter,
 * reduction variable, or a call of a Func or input. */
static sc_expr *parse_name(parser *ps) {
    sc_pipeline *p = ps->p;
    const token *t = peek(ps);
    bool handled;
    sc_expr *e = parse_builtin(ps, t, &handled);
    if (handled) return e;
    if (is_keyword(t)) {
        errorf(ps, t, "'%.*s' is a reserved word and cannot be used here", t->len, t->start);
        return NULL;
    }
    bool indexed = peek_at(ps, 1)->kind == T_LBRACK;
    if (!indexed) {
        for (int i = 0; i < ps->nvars; i++)
            if ((int)strlen(ps->vars[i]) == t->len && !memcmp(ps->vars[i], t->start, (size_t)t->len)) {
                next(ps);
                locate(ps, t);
                return sc_var(p, ps->var_as[i]);
            }
        binding *b = lookup_tok(ps, t);
        if (b && b->kind == B_INT) { next(ps); locate(ps, t); return sc_int(p, b->ival); }
        if (b && b->kind == B_FLOAT) { next(ps); locate(ps, t); return sc_float(p, b->fval); }
        if (b && b->kind == B_FUNC) {
            next(ps);
            sc_expr *args[SC_MAX_DIMS];
            int n = parse_args(ps, args, SC_MAX_DIMS, "of a call");
            if (n < 0) return NULL;
            locate(ps, t);
            return sc_call(p, b->func, n, args);
        }
        char *name = tok_str(ps, t);
        sc_param *q = sc_param_lookup(p, name);
        if (q) { next(ps); locate(ps, t); return sc_param_ref(p, q); }
    }
    /* rdoms, Funcs and inputs, possibly template-local or indexed */
    int save = ps->pos;
    const char *full = parse_fname(ps, false, NULL);
    if (!full) return NULL;
    for (int i = 0; i < p->rdoms.n; i++) {
        sc_rdom *r = p->rdoms.items[i];
        if (strcmp(r->name, full)) continue;
        if (peek(ps)->kind == T_LPAREN) {
            errorf(ps, t, "%s is a reduction domain, not a Func; use its variables (%s.x ...) without arguments",
                   full, full);
            return NULL;
        }
        if (peek(ps)->kind != T_DOT) {
            if (r->ndims != 1) {
                errorf(ps, t, "reduction domain %s has %d dimensions; name one as %s.x, %s.y ...",
                       full, r->ndims, full, full);
                return NULL;
            }
            locate(ps, t);
            return sc_rvar(p, r, 0);
        }
        next(ps);
        const token *d = next(ps);
        static const char *dims[] = { "x", "y", "z", "w" };
        for (int k = 0; k < 4; k++)
            if (tok_is(d, dims[k])) { locate(ps, d); return sc_rvar(p, r, k); }
        errorf(ps, d, "expected x, y, z or w after '%s.'", full);
        return NULL;
    }
    sc_func *f = sc_func_lookup(p, full);
    if (!f) {
        ps->pos = save;
        if (has_failed(ps, full)) return NULL;
        if (ps->defining && !strcmp(full, ps->defining))
            errorf(ps, t, "%s refers to itself in its pure definition (a cycle); use an update definition for recurrences",
                   full);
        else
            errorf(ps, t, "unknown name '%s'", full);
        return NULL;
    }
    if (f->kind == FUNC_DEFINED && f->nstages == 0 && has_failed(ps, full)) return NULL;
    if (peek(ps)->kind != T_LPAREN) {
        errorf(ps, t, f->ndims ? "%s is a Func; call it with coordinates, as %s(...)"
                               : "%s is a 0-D Func (a scalar); call it as %s()", full, full);
        return NULL;
    }
    sc_expr *args[SC_MAX_DIMS + 1];
    int n = parse_args(ps, args, SC_MAX_DIMS + 1, "of a call");
    if (n < 0) return NULL;
    locate(ps, t);
    return sc_call(p, f, n, args);
}

static sc_expr *parse_primary(parser *ps) {
    const token *t = peek(ps);
    char buf[64];
    switch (t->kind) {
    case T_INT:
        next(ps);
        if (t->overflow || t->ival > (uint64_t)INT32_MAX + 1) {
            errorf(ps, t, "integer literal %.*s is too large (the largest is 2147483647)",
                   t->len > 40 ? 40 : t->len, t->start);
            return NULL;
        }
        locate(ps, t);
        if (t->ival == (uint64_t)INT32_MAX + 1) {   /* -2147483648 is parse_unary's */
            errorf(ps, t, "integer literal %.*s is too large (the largest is 2147483647)",
                   t->len, t->start);
            return NULL;
        }
        return sc_int(ps->p, (int64_t)t->ival);
    case T_FLOAT:
        next(ps);
        locate(ps, t);
        /* In range when it rounds to a finite f32: up to FLT_MAX plus half
         * an ulp (the IR printer writes -FLT_MAX as -3.40282347e+38). */
        if (!isfinite(t->fval) || fabs(t->fval) >= 0x1.ffffffp+127) {
            errorf(ps, t, "number %.*s is out of the range of f32", t->len > 40 ? 40 : t->len, t->start);
            return NULL;
        }
        return sc_float(ps->p, t->fval);
    case T_LPAREN: {
        next(ps);
        sc_expr *e = parse_expr(ps);
        if (!expect(ps, T_RPAREN, "to close '('")) return NULL;
        return e;
    }
    case T_IDENT:
        return parse_name(ps);
    default:
        errorf(ps, t, "expected an expression, found %s", describe(t, buf, sizeof buf));
        return NULL;
    }
}

/* Only operators nest here (a parenthesis nests through parse_expr), so
 * each level of nesting counts once against MAX_DEPTH. */
static sc_expr *parse_unary(parser *ps) {
    const token *t = peek(ps);
    if (t->kind != T_MINUS && t->kind != T_BANG && t->kind != T_TILDE) return parse_primary(ps);
    const token *lit = peek_at(ps, 1);
    if (t->kind == T_MINUS && lit->kind == T_INT && !lit->overflow &&
        lit->ival == (uint64_t)INT32_MAX + 1) {   /* the least i32, as the IR prints it */
        next(ps);
        next(ps);
        locate(ps, t);
        return sc_int(ps->p, INT32_MIN);
    }
    if (!enter(ps, t)) return NULL;
    next(ps);
    sc_expr *a = parse_unary(ps);
    locate(ps, t);
    sc_expr *e = a ? sc_unary(ps->p, t->kind == T_MINUS ? SC_NEG : t->kind == T_BANG ? SC_NOT : SC_BITNOT, a)
                   : NULL;
    ps->depth--;
    return e;
}

/* Binary operators by precedence level, lowest first. */
static const struct { tok_kind tok; sc_binop op; int level; } binops[] = {
    {T_OROR, SC_OR, 0}, {T_ANDAND, SC_AND, 1}, {T_PIPE, SC_BITOR, 2},
    {T_CARET, SC_BITXOR, 3}, {T_AMP, SC_BITAND, 4},
    {T_EQ, SC_EQ, 5}, {T_NE, SC_NE, 5},
    {T_LT, SC_LT, 6}, {T_LE, SC_LE, 6}, {T_GT, SC_GT, 6}, {T_GE, SC_GE, 6},
    {T_SHL, SC_SHL, 7}, {T_SHR, SC_SHR, 7},
    {T_PLUS, SC_ADD, 8}, {T_MINUS, SC_SUB, 8},
    {T_STAR, SC_MUL, 9}, {T_SLASH, SC_DIV, 9}, {T_PERCENT, SC_MOD, 9},
};
#define NLEVELS 10

static sc_expr *parse_level(parser *ps, int level) {
    if (level == NLEVELS) return parse_unary(ps);
    sc_expr *lhs = parse_level(ps, level + 1);
    for (;;) {
        if (ps->panic || ps->stop) return NULL;
        const token *t = peek(ps);
        int k = -1;
        for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
            if (binops[i].tok == t->kind && binops[i].level == level) k = (int)i;
        if (k < 0) return lhs;
        next(ps);
        sc_expr *rhs = parse_level(ps, level + 1);
        locate(ps, t);
        lhs = (lhs && rhs) ? sc_binary(ps->p, binops[k].op, lhs, rhs) : NULL;
    }
}

static sc_expr *parse_expr(parser *ps) {
    const token *t = peek(ps);
    if (!enter(ps, t)) return NULL;
    sc_expr *e = parse_level(ps, 0);
    ps->depth--;
    return e;
}

/* ---- compile-time expressions ------------------------------------------ */

/* v wrapped to integer type t (two's complement), as the evaluator does. */
static int64_t ct_wrap(sc_type t, int64_t v) {
    int bits = sc_type_bits(t);
    if (t == SC_BOOL) return v != 0;
    uint64_t u = (uint64_t)v & (bits == 32 ? 0xffffffffu : ((uint64_t)1 << bits) - 1);
    if (sc_type_is_signed(t) && (u >> (bits - 1))) return (int64_t)u - ((int64_t)1 << bits);
    return (int64_t)u;
}

/* A shift by s >= 0 of a `bits`-wide value, as docs/language.md says. */
static int64_t ct_shift(int64_t a, int64_t s, int bits, bool left) {
    if (s >= bits) return left || a >= 0 ? 0 : -1;
    if (left) return (int64_t)(((uint64_t)a << s) & 0xffffffffu);
    return a < 0 ? ~(~a >> s) : a >> s;
}

/* Integer operator op on values of type t (already wrapped to t). */
static int64_t ct_int_binop(int op, sc_type t, int64_t a, int64_t b) {
    int bits = sc_type_bits(t);
    switch (op) {
    case SC_ADD: return a + b;
    case SC_SUB: return a - b;
    case SC_MUL: return (int64_t)(((uint64_t)a * (uint64_t)b) & 0xffffffffu);
    case SC_DIV:
        if (b == 0) return 0;
        return a / b - (a % b < 0 ? (b > 0 ? 1 : -1) : 0);
    case SC_MOD:
        if (b == 0) return 0;
        return a % b + (a % b < 0 ? (b > 0 ? b : -b) : 0);
    case SC_MIN: return a < b ? a : b;
    case SC_MAX: return a > b ? a : b;
    case SC_BITAND: return a & b;
    case SC_BITOR: return a | b;
    case SC_BITXOR: return a ^ b;
    case SC_SHL: return b >= 0 ? ct_shift(a, b, bits, true) : ct_shift(a, -b, bits, false);
    default: return b >= 0 ? ct_shift(a, b, bits, false) : ct_shift(a, -b, bits, true);
    }
}

/* Evaluates an expression of constants with the evaluator's semantics:
 * integers wrap to their type, float-to-integer casts truncate and
 * saturate, f32 values are rounded to float after every operation and
 * math uses the float functions, as the evaluator does. */
static bool const_value(const sc_expr *e, double *v, bool *is_int) {
    double a, b, c;
    bool ia, ib, ic;
    *is_int = e->type != SC_F32;
    switch (e->kind) {
    case E_CONST:
        *v = e->type == SC_F32 ? e->c.f : (double)e->c.i;
        return true;
    case E_CAST:
        if (!const_value(e->args[0], &a, &ia)) return false;
        if (e->type == SC_F32) *v = (float)a;
        else if (ia) *v = (double)ct_wrap(e->type, (int64_t)a);
        else {
            double lo = e->type == SC_BOOL ? 0 : -ldexp(1, sc_type_bits(e->type) - 1);
            double hi = e->type == SC_BOOL ? 1 : ldexp(1, sc_type_bits(e->type) - 1) - 1;
            if (!sc_type_is_signed(e->type)) { lo = 0; hi = 2 * hi + 1; }
            *v = isnan(a) ? 0 : a <= lo ? lo : a >= hi ? hi : trunc(a);
        }
        return true;
    case E_UNARY:
        if (!const_value(e->args[0], &a, &ia)) return false;
        if (e->op == SC_NOT) *v = !a;
        else if (e->type == SC_F32) *v = (float)-a;
        else *v = (double)ct_wrap(e->type, e->op == SC_NEG ? -(int64_t)a : ~(int64_t)a);
        return true;
    case E_SELECT:
        if (!const_value(e->args[0], &a, &ia) || !const_value(e->args[1], &b, &ib) ||
            !const_value(e->args[2], &c, &ic)) return false;
        *v = a ? b : c;
        return true;
    case E_MATH: {
        if (!const_value(e->args[0], &a, &ia)) return false;
        b = 0;
        if (e->nargs > 1 && !const_value(e->args[1], &b, &ib)) return false;
        if (*is_int) {   /* abs of an integer wraps: abs(i8(-128)) = -128 */
            *v = (double)ct_wrap(e->type, a < 0 ? -(int64_t)a : (int64_t)a);
            return true;
        }
        static float (*const f1[])(float) = { sqrtf, sc_expf, sc_logf, NULL, floorf, ceilf, rintf,
                                              sc_sinf, sc_cosf, sc_tanhf, NULL, fabsf };
        float fa = (float)a, fb = (float)b;
        *v = e->op == SC_POW ? sc_powf(fa, fb) : e->op == SC_ATAN2 ? sc_atan2f(fa, fb) : f1[e->op](fa);
        return true;
    }
    case E_BINARY:
        if (!const_value(e->args[0], &a, &ia) || !const_value(e->args[1], &b, &ib)) return false;
        switch (e->op) {
        case SC_EQ: *v = a == b; return true;
        case SC_NE: *v = a != b; return true;
        case SC_LT: *v = a < b; return true;
        case SC_LE: *v = a <= b; return true;
        case SC_GT: *v = a > b; return true;
        case SC_GE: *v = a >= b; return true;
        case SC_AND: *v = a && b; return true;
        case SC_OR: *v = a || b; return true;
        default: break;
        }
        if (*is_int) {
            *v = (double)ct_wrap(e->type, ct_int_binop(e->op, e->type, (int64_t)a, (int64_t)b));
            return true;
        }
        switch (e->op) {
        case SC_ADD: *v = a + b; break;
        case SC_SUB: *v = a - b; break;
        case SC_MUL: *v = a * b; break;
        case SC_DIV: *v = a / b; break;
        case SC_MOD: {
            float fa = (float)a, fb = (float)b, q = floorf(fa / fb), m = fb * q;
            *v = fa - m;
            break;
        }
        case SC_MIN: *v = a < b ? a : b; break;
        case SC_MAX: *v = a > b ? a : b; break;
        default: return false;
        }
        *v = (float)*v;
        return true;
    default:
        return false;
    }
}

/* A compile-time number; *is_int tells which kind. */
static bool parse_const(parser *ps, const char *what, double *v, bool *is_int) {
    const token *t = peek(ps);
    int saved_nvars = ps->nvars;
    ps->nvars = 0;
    sc_expr *e = parse_expr(ps);
    ps->nvars = saved_nvars;
    if (!e) {
        if (!ps->panic && !ps->stop) ps->panic = true;
        return false;
    }
    if (!const_value(e, v, is_int)) {
        errorf(ps, t, "expected a compile-time constant for %s", what);
        return false;
    }
    if (!isfinite(*v)) {
        errorf(ps, t, "%s is not a finite number", what);
        return false;
    }
    return true;
}

static int64_t parse_cint(parser *ps, const char *what) {
    const token *t = peek(ps);
    double v;
    bool is_int;
    if (!parse_const(ps, what, &v, &is_int)) return 0;
    if (!is_int) {
        errorf(ps, t, "expected an integer for %s, got %g", what, v);
        return 0;
    }
    if (v > INT32_MAX || v < INT32_MIN) {
        errorf(ps, t, "%s = %.0f does not fit a 32-bit integer", what, v);
        return 0;
    }
    return (int64_t)v;
}

/* "(" [ cint { "," cint } ] ")" -- empty for a 0-D output; the IR
 * refuses an input or rdom without sizes. */
static int parse_sizes(parser *ps, int *out, int max, const char *what) {
    if (!expect(ps, T_LPAREN, what)) return -1;
    int n = 0;
    if (peek(ps)->kind == T_RPAREN) { next(ps); return 0; }
    for (;;) {
        if (n == max) {
            errorf(ps, peek(ps), "too many sizes %s (at most %d)", what, max);
            return -1;
        }
        out[n++] = (int)parse_cint(ps, "a size");
        if (ps->panic) return -1;
        if (peek(ps)->kind != T_COMMA) break;
        next(ps);
    }
    if (!expect(ps, T_RPAREN, what)) return -1;
    return n;
}

/* ---- statements ------------------------------------------------------------ */

static void parse_stmt(parser *ps);

/* Skips to the end of the current statement after a syntax error. */
static void sync(parser *ps) {
    int depth = 0;
    while (!at_end(ps)) {
        const token *t = next(ps);
        if (t->kind == T_LBRACE) depth++;
        else if (t->kind == T_RBRACE) { if (--depth <= 0) break; }
        else if (t->kind == T_SEMI && depth == 0) break;
    }
    ps->panic = false;
}

/* Parses the statements of token range [start, end). */
static void parse_range(parser *ps, int start, int end) {
    int save_pos = ps->pos, save_end = ps->end;
    ps->pos = start;
    ps->end = end;
    while (!at_end(ps) && !ps->stop) {
        parse_stmt(ps);
        /* An error found after the statement's closing ';' or '}' (a
         * duplicate name, a value out of range) must not skip the next one. */
        tok_kind last = ps->pos > start ? ps->ts.toks[ps->pos - 1].kind : T_EOF;
        if (ps->panic && (last == T_SEMI || last == T_RBRACE)) ps->panic = false;
        if (ps->panic) sync(ps);
    }
    ps->pos = save_pos;
    ps->end = save_end;
}

/* "{" ... "}": returns the body's token range and moves past it. */
static bool skip_block(parser *ps, int *start, int *end) {
    if (!expect(ps, T_LBRACE, "to open a block")) return false;
    *start = ps->pos;
    int depth = 1;
    while (!at_end(ps)) {
        const token *t = next(ps);
        if (t->kind == T_LBRACE) depth++;
        else if (t->kind == T_RBRACE && --depth == 0) { *end = ps->pos - 1; return true; }
    }
    const token *open = &ps->ts.toks[*start - 1];
    errorf(ps, peek(ps), "missing '}' to close the block opened at line %d, column %d",
           open->line, open->col);
    return false;
}

static bool new_name_ok(parser *ps, const token *t) {
    if (t->kind != T_IDENT) {
        char buf[64];
        errorf(ps, t, "expected a name, found %s", describe(t, buf, sizeof buf));
        return false;
    }
    if (is_keyword(t)) {
        errorf(ps, t, "'%.*s' is a reserved word", t->len, t->start);
        return false;
    }
    return true;
}

/* Whether --set gives NAME a value; marks it used. */
static bool setting(parser *ps, const token *t, double *v) {
    const sc_parse_options *o = ps->opt;
    if (!o) return false;
    for (int i = 0; i < o->nsets; i++)
        if ((int)strlen(o->set_names[i]) == t->len && !memcmp(o->set_names[i], t->start, (size_t)t->len)) {
            ps->set_used[i] = true;
            *v = o->set_values[i];
            return true;
        }
    return false;
}

static void stmt_size(parser *ps) {
    const token *name = next(ps);
    if (!new_name_ok(ps, name)) return;
    if (!expect(ps, T_ASSIGN, "after the size's name")) return;
    int64_t v = parse_cint(ps, "a size");
    if (tok_is(peek(ps), "small")) {
        next(ps);
        int64_t s = parse_cint(ps, "the small size");
        if (ps->opt && ps->opt->small) v = s;
    }
    if (!expect(ps, T_SEMI, "after a size declaration")) return;
    double set;
    if (setting(ps, name, &set)) {
        if (set != trunc(set) || set > INT32_MAX || set < INT32_MIN) {
            errorf(ps, name, "--set %.*s=%g: a size must be an integer", name->len, name->start, set);
            return;
        }
        v = (int64_t)set;
    }
    if (lookup_tok(ps, name)) {
        errorf(ps, name, "'%.*s' is already defined", name->len, name->start);
        return;
    }
    bind(ps, name->start, name->len, B_INT)->ival = v;
}

static void stmt_let(parser *ps) {
    const token *name = next(ps);
    if (!new_name_ok(ps, name)) return;
    if (!expect(ps, T_ASSIGN, "after the name in let")) return;
    double v;
    bool is_int;
    if (!parse_const(ps, "let", &v, &is_int)) return;
    if (!expect(ps, T_SEMI, "after let")) return;
    if (is_int && (v > INT32_MAX || v < INT32_MIN)) {
        errorf(ps, name, "let %.*s = %.0f does not fit a 32-bit integer", name->len, name->start, v);
        return;
    }
    binding *b = bind(ps, name->start, name->len, is_int ? B_INT : B_FLOAT);
    b->ival = (int64_t)v;
    b->fval = v;
}

static int parse_type(parser *ps) {
    const token *t = next(ps);
    int ty = type_of_token(t);
    if (ty < 0 || ty == SC_BOOL) {
        char buf[64];
        errorf(ps, t, "expected a type (u8 u16 u32 i8 i16 i32 f32), found %s", describe(t, buf, sizeof buf));
        return -1;
    }
    return ty;
}

static void stmt_param(parser *ps) {
    int ty = parse_type(ps);
    if (ty < 0) return;
    const token *name = next(ps);
    if (!new_name_ok(ps, name)) return;
    if (!expect(ps, T_ASSIGN, "after the parameter's name")) return;
    double v;
    bool is_int;
    if (!parse_const(ps, "a parameter's value", &v, &is_int)) return;
    if (!expect(ps, T_SEMI, "after a parameter")) return;
    setting(ps, name, &v);
    locate(ps, name);
    sc_param_new(ps->p, tok_str(ps, name), (sc_type)ty, v);
}

static void stmt_input(parser *ps) {
    int ty = parse_type(ps);
    if (ty < 0) return;
    const token *t;
    const char *name = parse_fname(ps, true, &t);
    if (!name) return;
    int sizes[SC_MAX_DIMS];
    int n = parse_sizes(ps, sizes, 4, "of an input");
    if (n < 0 || !expect(ps, T_SEMI, "after an input")) return;
    locate(ps, t);
    sc_input(ps->p, name, (sc_type)ty, n, sizes);
}

static void stmt_rdom(parser *ps) {
    const token *t;
    const char *name = parse_fname(ps, true, &t);
    if (!name) return;
    int v[8];
    int n = parse_sizes(ps, v, 8, "of a reduction domain (min, extent pairs)");
    if (n < 0 || !expect(ps, T_SEMI, "after rdom")) return;
    if (n % 2) {
        errorf(ps, t, "rdom %s needs (min, extent) pairs, got %d numbers", name, n);
        return;
    }
    int mins[4], exts[4];
    for (int i = 0; i < n / 2; i++) { mins[i] = v[2 * i]; exts[i] = v[2 * i + 1]; }
    locate(ps, t);
    sc_rdom_new(ps->p, name, n / 2, mins, exts);
}

static void stmt_output(parser *ps) {
    const token *t;
    const char *name = parse_fname(ps, false, &t);
    if (!name) return;
    int sizes[SC_MAX_DIMS + 1];
    int n = parse_sizes(ps, sizes, SC_MAX_DIMS + 1, "of an output");
    if (n < 0 || !expect(ps, T_SEMI, "after output")) return;
    locate(ps, t);
    sc_func *f = sc_func_lookup(ps->p, name);
    if ((!f || (f->kind == FUNC_DEFINED && f->nstages == 0)) && has_failed(ps, name)) return;
    if (!f) { errorf(ps, t, "unknown Func '%s'", name); return; }
    sc_output(ps->p, f, n, sizes);
}

static void stmt_template(parser *ps) {
    const token *name = next(ps);
    if (!new_name_ok(ps, name)) return;
    if (ps->ntemplates == 64) { errorf(ps, name, "more than 64 templates"); return; }
    template_def *td = &ps->templates[ps->ntemplates];
    memset(td, 0, sizeof *td);
    td->name = tok_str(ps, name);
    for (int i = 0; i < ps->ntemplates; i++)
        if (!strcmp(ps->templates[i].name, td->name)) {
            errorf(ps, name, "template %s is already defined", td->name);
            return;
        }
    if (!expect(ps, T_LPAREN, "after the template's name")) return;
    while (peek(ps)->kind != T_RPAREN) {
        const token *pt = next(ps);
        if (!new_name_ok(ps, pt)) return;
        if (td->nparams == 16) { errorf(ps, pt, "a template takes at most 16 parameters"); return; }
        td->params[td->nparams++] = pt;
        if (peek(ps)->kind != T_COMMA) break;
        next(ps);
    }
    if (!expect(ps, T_RPAREN, "after the template's parameters")) return;
    if (!skip_block(ps, &td->body_start, &td->body_end)) return;
    ps->ntemplates++;
}

static bool count_unroll(parser *ps, const token *t) {
    if (++ps->unrolled > MAX_UNROLL) {
        errorf(ps, t, "compile-time loops run more than %d times in all", MAX_UNROLL);
        ps->stop = true;
        return false;
    }
    return true;
}

static void stmt_for(parser *ps, const token *kw) {
    const token *var = next(ps);
    if (!new_name_ok(ps, var)) return;
    if (!tok_is(peek(ps), "in")) {
        char buf[64];
        errorf(ps, peek(ps), "expected 'in' after the loop variable, found %s", describe(peek(ps), buf, sizeof buf));
        return;
    }
    next(ps);
    int64_t lo = parse_cint(ps, "the loop's start");
    if (!expect(ps, T_DOTDOT, "between the loop's bounds")) return;
    int64_t hi = parse_cint(ps, "the loop's end");
    int start, end;
    if (ps->panic || !skip_block(ps, &start, &end)) return;
    if (!enter(ps, kw)) return;
    for (int64_t i = lo; i < hi && !ps->stop; i++) {
        if (!count_unroll(ps, kw)) break;
        int mark = ps->nbinds;
        bind(ps, var->start, var->len, B_INT)->ival = i;
        parse_range(ps, start, end);
        ps->nbinds = mark;
    }
    ps->depth--;
}

/* if / else if / else: every condition is a compile-time constant, and
 * only the first block whose condition holds is parsed. */
static void stmt_if(parser *ps, const token *kw) {
    int chosen_s = -1, chosen_e = -1;
    bool has_cond = true;
    for (;;) {
        double c = 1;
        bool is_int;
        if (has_cond && !parse_const(ps, "the condition of if", &c, &is_int)) return;
        int s, e;
        if (!skip_block(ps, &s, &e)) return;
        if (c && chosen_s < 0) { chosen_s = s; chosen_e = e; }
        if (!has_cond || !tok_is(peek(ps), "else")) break;
        next(ps);
        has_cond = tok_is(peek(ps), "if");
        if (has_cond) next(ps);
    }
    if (chosen_s < 0 || !enter(ps, kw)) return;
    int mark = ps->nbinds;
    parse_range(ps, chosen_s, chosen_e);
    ps->nbinds = mark;
    ps->depth--;
}

/* target = template(args) | repeat_edge(F [, sizes]) | constant_exterior(F, v [, sizes]) */
static void stmt_alias(parser *ps, const char *target, const token *target_tok) {
    sc_pipeline *p = ps->p;
    next(ps);   /* '=' */
    const token *t = next(ps);
    bool re = tok_is(t, "repeat_edge"), ce = tok_is(t, "constant_exterior");
    if (re || ce) {
        if (!expect(ps, T_LPAREN, "after the boundary helper")) return;
        const token *st;
        const char *src_name = parse_fname(ps, false, &st);
        if (!src_name) return;
        sc_func *src = sc_func_lookup(p, src_name);
        binding *b = lookup_tok(ps, st);
        if (b && b->kind == B_FUNC) src = b->func;
        if (!src && has_failed(ps, src_name)) return;
        if (!src) { errorf(ps, st, "unknown Func or input '%s'", src_name); return; }
        sc_expr *value = NULL;
        if (ce) {
            if (!expect(ps, T_COMMA, "before the exterior value")) return;
            value = parse_expr(ps);
            if (!value) return;
        }
        int ext[SC_MAX_DIMS], n = 0;
        while (peek(ps)->kind == T_COMMA && !ps->panic) {
            next(ps);
            if (n == SC_MAX_DIMS) { errorf(ps, peek(ps), "too many extents"); return; }
            ext[n++] = (int)parse_cint(ps, "an extent");
        }
        if (!expect(ps, T_RPAREN, "after the boundary helper's arguments") ||
            !expect(ps, T_SEMI, "after the statement")) return;
        if (n && n != src->ndims && src->ndims) {
            errorf(ps, t, "%s of %s needs %d extents, got %d", re ? "repeat_edge" : "constant_exterior",
                   src->name, src->ndims, n);
            return;
        }
        locate(ps, target_tok);
        if (re) sc_repeat_edge(p, target, src, n ? ext : NULL);
        else sc_constant_exterior(p, target, src, value, n ? ext : NULL);
        return;
    }
    template_def *td = NULL;
    for (int i = 0; i < ps->ntemplates; i++)
        if (tok_is(t, ps->templates[i].name)) td = &ps->templates[i];
    if (!td) {
        char buf[64];
        errorf(ps, t, "expected a template, repeat_edge or constant_exterior after '=', found %s",
               describe(t, buf, sizeof buf));
        return;
    }
    if (!expect(ps, T_LPAREN, "after the template's name")) return;
    /* Arguments: a Func name (possibly indexed) or a compile-time number. */
    binding args[16];
    int n = 0;
    while (peek(ps)->kind != T_RPAREN && !ps->panic) {
        if (n == td->nparams) {
            errorf(ps, peek(ps), "template %s takes %d argument%s", td->name, td->nparams,
                   td->nparams == 1 ? "" : "s");
            return;
        }
        binding *a = &args[n];
        memset(a, 0, sizeof *a);
        a->name = td->params[n]->start;
        a->len = td->params[n]->len;
        const token *at = peek(ps);
        const token *after = peek_at(ps, 1);
        sc_func *f = NULL;
        if (at->kind == T_IDENT && !is_keyword(at) &&
            (after->kind == T_COMMA || after->kind == T_RPAREN || after->kind == T_LBRACK)) {
            int save = ps->pos;
            binding *b = after->kind == T_LBRACK ? NULL : lookup_tok(ps, at);
            if (b && b->kind == B_FUNC) { next(ps); f = b->func; }
            else if (!b) {
                const char *fn = parse_fname(ps, false, NULL);
                f = fn ? sc_func_lookup(ps->p, fn) : NULL;
                if (!f) { ps->pos = save; ps->panic = false; }
            }
        }
        if (f) {
            a->kind = B_FUNC;
            a->func = f;
        } else {
            double v;
            bool is_int;
            if (!parse_const(ps, "a template argument (a Func or a number)", &v, &is_int)) return;
            a->kind = is_int ? B_INT : B_FLOAT;
            a->ival = (int64_t)v;
            a->fval = v;
        }
        n++;
        if (peek(ps)->kind != T_COMMA) break;
        next(ps);
    }
    if (!expect(ps, T_RPAREN, "after the template's arguments") || !expect(ps, T_SEMI, "after the statement"))
        return;
    if (n != td->nparams) {
        errorf(ps, t, "template %s takes %d argument%s, got %d", td->name, td->nparams,
               td->nparams == 1 ? "" : "s", n);
        return;
    }
    if (sc_func_lookup(p, target)) {
        errorf(ps, target_tok, "'%s' is already defined", target);
        return;
    }
    if (ps->ninst == 32) {
        errorf(ps, t, "templates instantiated more than 32 deep (a template that instantiates itself?)");
        ps->stop = true;
        return;
    }
    if (!enter(ps, t)) return;
    int mark = ps->nbinds;
    bind(ps, "", 0, B_BARRIER);
    for (int i = 0; i < n; i++) *bind(ps, args[i].name, args[i].len, args[i].kind) = args[i];
    instance *in = &ps->inst[ps->ninst++];
    memset(in, 0, sizeof *in);
    in->tname = td->name;
    in->result = target;
    const char *saved_defining = ps->defining;
    parse_range(ps, td->body_start, td->body_end);
    ps->defining = saved_defining;
    ps->ninst--;
    ps->nbinds = mark;
    ps->depth--;
    sc_func *f = sc_func_lookup(p, target);
    if (!ps->stop && (!f || f->nstages == 0) && sc_error_count(p) == 0) {
        locate(ps, target_tok);
        sc_error(p, "template %s did not define its result (a definition of %s(...) inside it)",
                 td->name, td->name);
    }
}

/* Whether token t is a bare name that can be a pure variable here. */
static bool is_free_name(parser *ps, const token *t) {
    if (t->kind != T_IDENT || is_keyword(t)) return false;
    if (lookup_tok(ps, t)) return false;
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", t->len, t->start);
    if (sc_param_lookup(ps->p, buf) || sc_func_lookup(ps->p, buf)) return false;
    /* Inside a template, its own name and its locals (an rdom ry stored
     * as result_ry) are taken too. */
    if (ps->ninst) {
        const instance *in = &ps->inst[ps->ninst - 1];
        if (!strcmp(buf, in->tname)) return false;
        for (int i = 0; i < in->nlocals; i++)
            if (!strcmp(in->local[i], buf)) return false;
    }
    for (int i = 0; i < ps->p->rdoms.n; i++)
        if (!strcmp(((sc_rdom *)ps->p->rdoms.items[i])->name, buf)) return false;
    return true;
}

typedef struct { const sc_func *f; bool found; } self_use;

static void find_self_or_rvar(const sc_expr *e, void *user) {
    self_use *u = user;
    if ((e->kind == E_CALL && e->func == u->f) || e->kind == E_RVAR) u->found = true;
}

/* An update of f with n arguments (-1: too many, counting stopped). */
static void update_arity_error(parser *ps, const token *t, const sc_func *f, int n) {
    char got[32] = "";
    if (n >= 0) snprintf(got, sizeof got, ", got %d", n);
    if (f->ndims) errorf(ps, t, "%s takes %d argument%s%s", f->name, f->ndims, f->ndims == 1 ? "" : "s", got);
    else errorf(ps, t, "%s is 0-D (a scalar); its updates take no arguments%s: %s() = ...", f->name, got, f->name);
}

/* NAME(args) op expr ; -- a pure definition or an update. */
static void stmt_define(parser *ps, const char *name, const token *name_tok) {
    sc_pipeline *p = ps->p;
    sc_func *f = sc_func_lookup(p, name);
    binding *b = lookup_tok(ps, name_tok);
    if (b && b->kind == B_FUNC) f = b->func;
    else if (b) {
        errorf(ps, name_tok, "'%s' is a compile-time constant, not a Func", name);
        return;
    }
    bool pure = !f;
    if (f && f->kind == FUNC_INPUT) {
        errorf(ps, name_tok, "%s is an input and cannot be defined", name);
        return;
    }
    next(ps);   /* '(' */
    /* Left side.  Bare free names are pure variables: in a pure definition
     * they name the Func's dimensions; in an update, the name at position d
     * stands for the Func's variable d. */
    ps->nvars = 0;
    sc_expr *lhs[SC_MAX_DIMS + 1];
    const char *names[SC_MAX_DIMS + 1];
    int n = 0;
    ps->defining = name;
    /* In an update, an argument may use a pure variable that is named bare
     * further right (hist(clamp(v(r, y)), y) += 1), so the bare names are
     * bound before any argument is parsed. */
    bool prebound[SC_MAX_DIMS + 1] = { false };
    if (!pure) {
        int depth = 0, arg = 0;
        bool arg_start = true;
        for (int i = 0; ps->pos + i < ps->end; i++) {
            const token *t = peek_at(ps, i), *after = peek_at(ps, i + 1);
            if (t->kind == T_SEMI || t->kind == T_EOF) break;
            if (arg_start && depth == 0 && arg < f->ndims && arg <= SC_MAX_DIMS &&
                ps->nvars < SC_MAX_DIMS && is_free_name(ps, t) &&
                (after->kind == T_COMMA || after->kind == T_RPAREN)) {
                ps->vars[ps->nvars] = tok_str(ps, t);
                ps->var_as[ps->nvars++] = f->vars[arg];
                prebound[arg] = true;
            }
            arg_start = false;
            if (t->kind == T_LPAREN || t->kind == T_LBRACK) depth++;
            else if (t->kind == T_RPAREN || t->kind == T_RBRACK) { if (depth-- == 0) break; }
            else if (t->kind == T_COMMA && depth == 0) { arg++; arg_start = true; }
        }
    }
    while (peek(ps)->kind != T_RPAREN && !ps->panic) {
        if (n == SC_MAX_DIMS + 1) {
            errorf(ps, peek(ps), "a Func has at most %d dimensions", SC_MAX_DIMS);
            return;
        }
        const token *t = peek(ps), *after = peek_at(ps, 1);
        /* A pure definition's variables may shadow Funcs, params and rdoms
         * (declared before or after: the IR text prints those first). */
        bool name_ok = pure ? t->kind == T_IDENT && !is_keyword(t) && !lookup_tok(ps, t)
                            : is_free_name(ps, t);
        bool bare = name_ok && (after->kind == T_COMMA || after->kind == T_RPAREN);
        if (pure) {
            if (!bare) {
                char buf[64];
                errorf(ps, t, "the pure definition of %s needs variable names as arguments, found %s",
                       name, describe(t, buf, sizeof buf));
                return;
            }
            next(ps);
            names[n] = tok_str(ps, t);
            lhs[n] = NULL;
        } else if (bare) {
            next(ps);
            if (prebound[n]) {
                locate(ps, t);
                lhs[n] = sc_var(p, f->vars[n]);
            } else if (n < f->ndims && ps->nvars < SC_MAX_DIMS) {
                ps->vars[ps->nvars] = tok_str(ps, t);
                ps->var_as[ps->nvars++] = f->vars[n];
                locate(ps, t);
                lhs[n] = sc_var(p, f->vars[n]);
            } else {
                lhs[n] = NULL;
                update_arity_error(ps, t, f, -1);
                return;
            }
        } else {
            lhs[n] = parse_expr(ps);
            if (!lhs[n] && !ps->panic) ps->panic = true;
        }
        n++;
        if (peek(ps)->kind != T_COMMA) break;
        next(ps);
    }
    if (!expect(ps, T_RPAREN, "after the left side's arguments")) return;
    if (!pure && n != f->ndims) {   /* before the sugar below makes it a call */
        update_arity_error(ps, name_tok, f, n);
        return;
    }
    const token *op = next(ps);
    if (op->kind != T_ASSIGN && op->kind != T_PLUSEQ && op->kind != T_MINUSEQ &&
        op->kind != T_STAREQ && op->kind != T_SLASHEQ) {
        char buf[64];
        errorf(ps, op, "expected '=', '+=', '-=', '*=' or '/=' after %s(...), found %s", name,
               describe(op, buf, sizeof buf));
        return;
    }
    if (pure) {
        if (op->kind != T_ASSIGN) {
            errorf(ps, op, "%s has no pure definition yet, so it cannot be updated with %.*s",
                   name, op->len, op->start);
            return;
        }
        if (n > SC_MAX_DIMS) {
            errorf(ps, name_tok, "a Func has at most %d dimensions, got %d", SC_MAX_DIMS, n);
            return;
        }
        for (int i = 0; i < n; i++) { ps->vars[i] = names[i]; ps->var_as[i] = names[i]; }
        ps->nvars = n;
    }
    sc_expr *value = parse_expr(ps);
    if (!expect(ps, T_SEMI, "after the definition")) { ps->nvars = 0; return; }
    ps->nvars = 0;
    if (!value) return;
    locate(ps, name_tok);
    if (pure) {
        f = sc_func_new(p, name);
        if (f) sc_define(p, f, n, names, value);
        return;
    }
    /* A second f(x) = ... that neither reads f nor uses a reduction
     * domain would only replace the first: a name defined twice. */
    bool bare = op->kind == T_ASSIGN && n == f->ndims;
    for (int i = 0; i < n && bare; i++) bare = lhs[i] && lhs[i]->kind == E_VAR;
    self_use u = { f, false };
    if (bare) ir_visit(value, find_self_or_rvar, &u);
    if (bare && !u.found) {
        errorf(ps, name_tok, "%s is already defined (line %d); a second definition is an update and must read %s or use a reduction domain",
               name, f->loc.line, name);
        return;
    }
    if (op->kind != T_ASSIGN) {
        sc_binop bop = op->kind == T_PLUSEQ ? SC_ADD : op->kind == T_MINUSEQ ? SC_SUB :
                       op->kind == T_STAREQ ? SC_MUL : SC_DIV;
        for (int i = 0; i < n; i++) if (!lhs[i]) return;
        locate(ps, op);
        value = sc_binary(p, bop, sc_call(p, f, n, lhs), value);
        if (!value) return;
        locate(ps, name_tok);
    }
    sc_update(p, f, n, lhs, value);
}

static void stmt_dispatch(parser *ps) {
    const token *t = peek(ps);
    ps->defining = NULL;
    ps->nvars = 0;
    if (t->kind == T_SEMI) { next(ps); return; }
    if (t->kind != T_IDENT) {
        char buf[64];
        errorf(ps, t, "expected a statement (a definition or one of pipeline, size, param, let, input, rdom, output, template, for, if), found %s",
               describe(t, buf, sizeof buf));
        next(ps);
        return;
    }
    if (tok_is(t, "pipeline")) {
        next(ps);
        const token *n = next(ps);
        if (!new_name_ok(ps, n) || !expect(ps, T_SEMI, "after the pipeline's name")) return;
        ps->p->name = tok_str(ps, n);
        return;
    }
    if (tok_is(t, "size")) { next(ps); stmt_size(ps); return; }
    if (tok_is(t, "let")) { next(ps); stmt_let(ps); return; }
    if (tok_is(t, "param")) { next(ps); stmt_param(ps); return; }
    if (tok_is(t, "input")) { next(ps); stmt_input(ps); return; }
    if (tok_is(t, "rdom")) { next(ps); stmt_rdom(ps); return; }
    if (tok_is(t, "output")) { next(ps); stmt_output(ps); return; }
    if (tok_is(t, "template")) {
        next(ps);
        if (ps->ninst) { errorf(ps, t, "templates cannot be defined inside templates"); return; }
        stmt_template(ps);
        return;
    }
    if (tok_is(t, "for")) { next(ps); stmt_for(ps, t); return; }
    if (tok_is(t, "if")) { next(ps); stmt_if(ps, t); return; }
    const token *nt;
    int save = ps->pos;
    /* Peek past an optional index to tell a definition from an alias. */
    const char *name = parse_fname(ps, false, &nt);
    if (!name) return;
    bool alias = peek(ps)->kind == T_ASSIGN;
    if (!alias && peek(ps)->kind != T_LPAREN) {
        char buf[64];
        errorf(ps, peek(ps), "expected '(' or '=' after %s, found %s", name, describe(peek(ps), buf, sizeof buf));
        return;
    }
    ps->pos = save;
    name = parse_fname(ps, true, &nt);
    if (!name) return;
    int nerr = sc_error_count(ps->p);
    if (alias) stmt_alias(ps, name, nt);
    else stmt_define(ps, name, nt);
    sc_func *f = sc_func_lookup(ps->p, name);
    /* panic without a new error: it failed silently on a failed name */
    if ((sc_error_count(ps->p) != nerr || ps->panic) && (!f || f->nstages == 0))
        ir_vec_push(ps->p->arena, &ps->failed, (void *)name);
}

/* A statement; a declaration that fails leaves its name in ps->failed. */
static void parse_stmt(parser *ps) {
    const token *t = peek(ps), *decl = NULL;
    if (tok_is(t, "size") || tok_is(t, "let") || tok_is(t, "rdom")) decl = peek_at(ps, 1);
    if (tok_is(t, "input") || tok_is(t, "param")) decl = peek_at(ps, 2);
    int nerr = sc_error_count(ps->p);
    stmt_dispatch(ps);
    if (decl && decl->kind == T_IDENT && (sc_error_count(ps->p) != nerr || ps->panic))
        ir_vec_push(ps->p->arena, &ps->failed, tok_str(ps, decl));
}

/* ---- entry points ---------------------------------------------------- */

/* The default pipeline name: the file's base name made a valid name that
 * the IR text can print (`pipeline NAME;`) and parse back: "3x3.pipe" gives
 * _3x3, "for.pipe" gives _for. */
static const char *base_name(const char *path, char *buf, size_t n) {
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    snprintf(buf, n, "_%s", s);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf + 1) *dot = 0;
    for (char *c = buf; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
    bool reserved = false;
    for (int i = 0; keywords[i]; i++) reserved |= !strcmp(buf + 1, keywords[i]);
    return (buf[1] >= '0' && buf[1] <= '9') || !buf[1] || reserved ? buf : buf + 1;
}

sc_pipeline *sc_parse_string(const char *filename, const char *text, size_t len,
                             const sc_parse_options *opt) {
    char name[256];
    if (!filename) filename = "<string>";
    sc_pipeline *p = sc_pipeline_new(base_name(filename, name, sizeof name));
    parser ps = {0};
    ps.p = p;
    ps.file = filename;
    ps.opt = opt;
    ps.set_used = calloc(opt && opt->nsets ? (size_t)opt->nsets : 1, sizeof(bool));
    if (!ps.set_used) abort();
    ps.ts = lex_tokenize(text, len);
    ps.end = ps.ts.n - 1;
    sc_pipeline_set_loc(p, filename, 1, 1);
    if (memchr(text, 0, len)) {
        sc_error(p, "the file contains NUL bytes; a .pipe file is text");
    } else if (ps.ts.n == 1) {
        sc_error(p, "the file is empty; expected declarations and at least one 'output'");
    } else {
        parse_range(&ps, 0, ps.end);
        for (int i = 0; opt && i < opt->nsets; i++)
            if (!ps.set_used[i]) {
                sc_pipeline_set_loc(p, filename, 0, 0);
                sc_error(p, "--set %s: there is no size or param named %s", opt->set_names[i],
                         opt->set_names[i]);
            }
        if (sc_error_count(p) == 0) {
            sc_pipeline_set_loc(p, filename, 0, 0);
            sc_pipeline_finalize(p);
        }
    }
    lex_free(&ps.ts);
    free(ps.binds);
    free(ps.set_used);
    return p;
}

sc_pipeline *sc_parse_file(const char *path, const sc_parse_options *opt) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        sc_pipeline *p = sc_pipeline_new("pipeline");
        sc_pipeline_set_loc(p, path, 0, 0);
        sc_error(p, "cannot open: %s", strerror(errno));
        return p;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            if (cap > ((size_t)64 << 20)) break;
            buf = realloc(buf, cap + 1);
            if (!buf) abort();
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        if (r == 0) break;
        len += r;
    }
    bool too_big = !feof(f);
    fclose(f);
    sc_pipeline *p;
    if (too_big) {
        p = sc_pipeline_new("pipeline");
        sc_pipeline_set_loc(p, path, 0, 0);
        sc_error(p, "file larger than 64 MiB; not a .pipe file?");
    } else {
        p = sc_parse_string(path, buf ? buf : "", len, opt);
    }
    free(buf);
    return p;
}
