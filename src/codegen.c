/*
 * codegen.c - prints the kernel IR (lower.h) as C-like source; the three
 * back ends (cg_c.c, cg_opencl.c, cg_cuda.c) only supply names and the
 * kernel frame (cg_backend.h).
 *
 * Exact arithmetic.  Generated code must agree bit for bit with the
 * reference evaluator (eval.c) on integers.  Every integer expression is
 * printed so that its C value equals the pipeline's value and its C type
 * is the IR type (or int, by promotion, for the 8- and 16-bit types):
 *  - + - * and negation that may leave their type's range are computed in
 *    32-bit unsigned arithmetic and converted back ((int32_t)((uint32_t)a
 *    + (uint32_t)b); (uint8_t)(a + b)), so nothing overflows a signed int;
 *    those that provably stay in range (an interval analysis over the
 *    values of loop variables, lets and constants) are printed plainly,
 *    which keeps index arithmetic readable: x + 1, tid % 32;
 *  - division and modulo (Euclidean, x / 0 == 0), shifts (out-of-range
 *    and negative amounts), min, max, integer abs, f32 % and saturating
 *    f32 -> integer casts call small helper functions, printed once per
 *    file for the types actually used.
 *
 * Common subexpressions.  Lowering substitutes inline Funcs, so a
 * statement's expressions are DAGs whose trees can be exponentially large.
 * Each statement's expressions are hash-consed (structurally equal nodes
 * become one); a node used more than once becomes a `const` temporary
 * (sc_tN) printed just before the statement.  This is exact because
 * expressions have no side effects and, as in the evaluator, every operand
 * of a select is in bounds.
 *
 * Out of memory aborts, as in the IR arena.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_backend.h"

/* ---- growing text and arrays ---------------------------------------------- */

typedef struct { char *s; size_t n, cap; } cg_buf;

static void *cg_grow(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("stagecraft: out of memory in the code generator\n", stderr);
        abort();
    }
    return q;
}

static void buf_vprintf(cg_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if (b->n + (size_t)n + 1 > b->cap) {
        b->cap = (b->n + (size_t)n + 1) * 2;
        b->s = cg_grow(b->s, b->cap);
    }
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}

/* ---- the context ----------------------------------------------------------- */

/* Helper functions, per type. */
enum { H_DIV, H_MOD, H_MIN, H_MAX, H_SHL, H_SHR, H_ABS, H_FTOI, H_COUNT };

/* One node of the current statement's hash-consed DAG. */
typedef struct {
    const sc_expr *e;                 /* a representative */
    int kid[2 * SC_MAX_DIMS];         /* operands; for calls, then storage mins */
    int nkid;
    uint64_t hash;
    int nref;                         /* uses by distinct parents and roots */
    int64_t lo, hi;                   /* value range (integer types) */
    bool wraps;                       /* + - * neg may leave the range */
    bool visited;
    int tmp;                          /* temporary number, or -1 */
} cg_node;

typedef struct { const char *name; int64_t lo, hi; } cg_var;

struct cg_ctx {
    const cg_target *t;
    const lower_program *prog;
    const lower_kernel *k;
    cg_buf *out;
    int indent;
    bool used[H_COUNT][SC_TYPE_COUNT];
    char **names;                     /* mangled: pairs (original, result) */
    int nnames, capnames;
    cg_var *env;                      /* variables in scope, innermost last */
    int nenv, capenv;
    cg_node *node;                    /* the statement's DAG */
    int nnode, capnode;
    const sc_expr **pkey;             /* pointer -> node */
    int *pval;
    size_t pcap, pn;
    int *stab;                        /* structural hash -> node */
    size_t scap;
    int ntmp;
};

static _Noreturn void cg_bug(const char *what, const char *name)
{
    fprintf(stderr, "stagecraft: internal error in the code generator: %s%s%s\n",
            what, name ? " " : "", name ? name : "");
    abort();
}

void cg_printf(cg_ctx *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(g->out, fmt, ap);
    va_end(ap);
}

static void put_indent(cg_ctx *g)
{
    cg_printf(g, "%*s", 4 * g->indent, "");
}

void cg_line(cg_ctx *g, const char *fmt, ...)
{
    va_list ap;
    put_indent(g);
    va_start(ap, fmt);
    buf_vprintf(g->out, fmt, ap);
    va_end(ap);
    cg_printf(g, "\n");
}

void cg_indent(cg_ctx *g, int delta) { g->indent += delta; }
const char *cg_type(cg_ctx *g, sc_type t) { return g->t->type[t]; }
sc_type cg_alloc_type(const lower_alloc *a) { return a->func->type; }

sc_type cg_param_abi_type(const sc_param *param)
{
    return param->type == SC_F32 ? SC_F32 : SC_I32;
}

/* ---- identifiers ------------------------------------------------------------- */

/* Keywords and builtins of C, C++ (CUDA), OpenCL C, and the library
 * functions and macros the generated code uses. */
static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do",
    "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline",
    "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned",
    "void", "volatile", "while", "bool", "true", "false", "and", "or", "not",
    "xor", "bitand", "bitor", "compl", "and_eq", "or_eq", "xor_eq", "not_eq",
    "class", "delete", "new", "this", "template", "typename", "namespace",
    "operator", "private", "protected", "public", "virtual", "friend", "try",
    "catch", "throw", "explicit", "export", "mutable", "using", "asm",
    "const_cast", "dynamic_cast", "reinterpret_cast", "static_cast", "typeid",
    "nullptr", "constexpr", "decltype", "noexcept", "static_assert",
    "thread_local", "alignas", "alignof", "concept", "requires", "consteval",
    "constinit", "co_await", "co_return", "co_yield", "char8_t", "wchar_t",
    "kernel", "global", "local", "constant", "read_only", "write_only",
    "read_write", "uniform", "pipe", "half", "uchar", "ushort", "uint",
    "ulong", "longlong", "ulonglong", "complex", "imaginary", "dim3",
    "blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "barrier",
    "get_group_id", "get_local_id", "get_global_id", "min", "max", "abs",
    "clamp", "select", "mix", "sqrt", "sqrtf", "exp", "expf", "log", "logf",
    "pow", "powf", "floor", "floorf", "ceil", "ceilf", "rint", "rintf", "sin",
    "sinf", "cos", "cosf", "tanh", "tanhf", "atan2", "atan2f", "fabs", "fabsf",
    "fmin", "fminf", "fmax", "fmaxf", "isnan", "isinf", "isfinite", "signbit",
    "malloc", "free", "abort", "main", "INFINITY", "NAN", "NULL", "HUGE_VAL",
    "HUGE_VALF", "bid", "tid",
};

static bool is_reserved(const char *s)
{
    static const char *const vec[] = {
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
        "longlong", "ulonglong", "float", "double", "half", "bool",
    };
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (!strcmp(s, reserved[i]))
            return true;
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++) {
        size_t n = strlen(vec[i]);
        if (!strncmp(s, vec[i], n) && s[n] >= '1' && s[n] <= '9' &&
            strspn(s + n, "0123456789") == strlen(s + n))
            return true;                    /* a vector type: float4, uchar16 */
    }
    size_t n = strlen(s);
    return !strncmp(s, "sc_", 3) || (n >= 2 && !strcmp(s + n - 2, "_t"));
}

const char *cg_name(cg_ctx *g, const char *name)
{
    if (!strcmp(name, "bid") || !strcmp(name, "tid"))
        return name;                        /* the kernel's own variables */
    bool ok = (name[0] < '0' || name[0] > '9') && name[0] != '_' && name[0] &&
              strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789_") == strlen(name);
    if (ok && !is_reserved(name))
        return name;
    for (int i = 0; i < g->nnames; i += 2)
        if (!strcmp(g->names[i], name))
            return g->names[i + 1];
    size_t n = strlen(name);
    char *m = cg_grow(NULL, n + 3), *o = m;
    if (!ok && !(name[0] >= 'a' && name[0] <= 'z') && !(name[0] >= 'A' && name[0] <= 'Z'))
        *o++ = 'v';
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool id = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_';
        *o++ = id ? c : '_';
    }
    *o = 0;
    if (is_reserved(m) || ok)
        strcat(m, "_");
    if (g->nnames + 2 > g->capnames) {
        g->capnames = 2 * g->capnames + 16;
        g->names = cg_grow(g->names, sizeof *g->names * (size_t)g->capnames);
    }
    size_t nl = strlen(name) + 1;
    g->names[g->nnames] = memcpy(cg_grow(NULL, nl), name, nl);
    g->names[g->nnames + 1] = m;
    g->nnames += 2;
    return m;
}

/* ---- kernel scans ----------------------------------------------------------- */

typedef bool (*expr_pred)(const sc_expr *e, const void *arg);
typedef bool (*stmt_pred)(const kstmt *s, const void *arg);

static bool any_expr(const sc_expr *e, expr_pred f, const void *arg)
{
    if (!e)
        return false;
    if (f(e, arg))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (any_expr(e->args[i], f, arg))
            return true;
    return false;
}

static bool any_stmt(const kstmt *s, expr_pred fe, stmt_pred fs, const void *arg)
{
    if (!s)
        return false;
    if (fs && fs(s, arg))
        return true;
    if (fe) {
        if (any_expr(s->min, fe, arg) || any_expr(s->cond, fe, arg) ||
            any_expr(s->value, fe, arg))
            return true;
        for (int d = 0; s->kind == KS_STORE && d < s->alloc->ndims; d++)
            if (any_expr(s->coords[d], fe, arg))
                return true;
        for (int d = 0; (s->kind == KS_STORE || s->kind == KS_ALLOC) && d < s->alloc->ndims; d++)
            if (any_expr(s->alloc->min[d], fe, arg))
                return true;
    }
    for (int i = 0; s->kind == KS_SEQ && i < s->n; i++)
        if (any_stmt(s->items[i], fe, fs, arg))
            return true;
    return any_stmt(s->body, fe, fs, arg);
}

static bool any_in_kernel(const lower_kernel *k, expr_pred fe, stmt_pred fs, const void *arg)
{
    if (any_stmt(k->block_setup, fe, fs, arg))
        return true;
    for (int i = 0; fe && i < k->nshared; i++)
        for (int d = 0; d < k->shared[i]->ndims; d++)
            if (any_expr(k->shared[i]->min[d], fe, arg))
                return true;
    for (int i = 0; i < k->nphases; i++)
        if (any_stmt(k->phases[i], fe, fs, arg))
            return true;
    return false;
}

static bool is_var_named(const sc_expr *e, const void *name)
{
    return e->kind == E_VAR && !strcmp(e->name, name);
}

static bool is_store_to(const kstmt *s, const void *alloc)
{
    return s->kind == KS_STORE && s->alloc == alloc;
}

bool cg_uses_var(const lower_kernel *k, const char *name)
{
    return any_in_kernel(k, is_var_named, NULL, name);
}

bool cg_stores_to(const lower_kernel *k, const lower_alloc *a)
{
    return any_in_kernel(k, NULL, is_store_to, a);
}

/* ---- value ranges ------------------------------------------------------------ */

static void type_range(sc_type t, int64_t *lo, int64_t *hi)
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

static bool fits(sc_type t, int64_t lo, int64_t hi)
{
    int64_t tlo, thi;
    type_range(t, &tlo, &thi);
    return lo >= tlo && hi <= thi && lo <= hi;
}

/* An integer constant wrapped to its type, as the evaluator does. */
static int64_t wrap_const(int64_t v, sc_type t)
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

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t max_abs(int64_t lo, int64_t hi)
{
    lo = lo < 0 ? -lo : lo;
    hi = hi < 0 ? -hi : hi;
    return lo > hi ? lo : hi;
}

static bool is_const(const cg_node *n) { return n->e->kind == E_CONST; }

/* Sets the range of node id from its operands' (already set). Values of
 * operands are within their types, so int64 sums cannot overflow; products
 * are checked. */
static void node_range(cg_ctx *g, int id)
{
    cg_node *n = &g->node[id];
    const sc_expr *e = n->e;
    sc_type t = e->type;
    int64_t lo, hi, alo = 0, ahi = 0, blo = 0, bhi = 0;
    bool ok = false;
    type_range(t, &n->lo, &n->hi);
    if (t == SC_F32)
        return;
    if (n->nkid > 0) { alo = g->node[n->kid[0]].lo; ahi = g->node[n->kid[0]].hi; }
    if (n->nkid > 1) { blo = g->node[n->kid[1]].lo; bhi = g->node[n->kid[1]].hi; }
    sc_type at = n->nkid > 0 ? e->args[0]->type : t;
    switch (e->kind) {
    case E_CONST:
        lo = hi = wrap_const(e->c.i, t);
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
        if (at != SC_F32 && at != SC_BOOL && t != SC_BOOL) {
            lo = alo;
            hi = ahi;
            ok = true;
        }
        break;
    case E_UNARY:
        if (e->op == SC_NEG) {
            lo = -ahi;
            hi = -alo;
            ok = true;
            n->wraps = !fits(t, lo, hi);
        } else if (e->op == SC_BITNOT && sc_type_is_signed(t)) {
            lo = ~ahi;
            hi = ~alo;
            ok = true;
        }
        break;
    case E_SELECT:
        lo = g->node[n->kid[1]].lo < g->node[n->kid[2]].lo ? g->node[n->kid[1]].lo : g->node[n->kid[2]].lo;
        hi = g->node[n->kid[1]].hi > g->node[n->kid[2]].hi ? g->node[n->kid[1]].hi : g->node[n->kid[2]].hi;
        ok = true;
        break;
    case E_MATH:
        if (e->op == SC_ABS) {
            lo = alo >= 0 ? alo : ahi <= 0 ? -ahi : 0;
            hi = max_abs(alo, ahi);
            ok = true;
        }
        break;
    case E_BINARY:
        if (at == SC_F32 || (e->op >= SC_EQ && e->op <= SC_OR))
            break;
        switch (e->op) {
        case SC_ADD: lo = alo + blo; hi = ahi + bhi; ok = true; n->wraps = !fits(t, lo, hi); break;
        case SC_SUB: lo = alo - bhi; hi = ahi - blo; ok = true; n->wraps = !fits(t, lo, hi); break;
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
            n->wraps = !fits(t, lo, hi);
            break;
        }
        case SC_DIV:
            if (blo == bhi && blo > 0) {
                lo = floordiv(alo, blo);
                hi = floordiv(ahi, blo);
            } else if (blo == bhi && blo < 0) {
                lo = -floordiv(ahi, -blo);
                hi = -floordiv(alo, -blo);
            } else {
                hi = max_abs(alo, ahi);
                lo = -hi;
            }
            ok = true;
            break;
        case SC_MOD:
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
        case SC_BITAND:
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
    if (ok && fits(t, lo, hi)) {
        n->lo = lo;
        n->hi = hi;
    }
}

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
                                           : wrap_const(x->c.i, x->type) == wrap_const(y->c.i, y->type);
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
        h = mix(h, (uint64_t)wrap_const(e->c.i, e->type));
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
    for (int i = 0; i < n.nkid; i++)
        g->node[n.kid[i]].nref++;
    node_range(g, id);
    stab_put(g, id);
    ptr_put(g, e, id);
    return id;
}

/* ---- expressions ---------------------------------------------------------------- */

static void pr(cg_ctx *g, int id, bool top);

static void pr_int(cg_ctx *g, sc_type t, int64_t v)
{
    v = wrap_const(v, t);
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
    if (is_const(n) && n->tmp < 0) {
        cg_printf(g, "%" PRIu32 "u", (uint32_t)wrap_const(e->c.i, SC_U32));
    } else if (n->tmp < 0 && n->wraps && e->type == SC_I32 && e->kind == E_BINARY) {
        cg_printf(g, "(");
        pr_u32_op(g, n);
        cg_printf(g, ")");
    } else {
        cg_printf(g, "(%s)", g->t->type[SC_U32]);
        pr(g, id, false);
    }
}

/* (uint32_t)a op (uint32_t)b; a negative constant b turns + into - */
static void pr_u32_op(cg_ctx *g, const cg_node *n)
{
    const cg_node *nb = &g->node[n->kid[1]];
    int op = n->e->op;
    pr_u32(g, n->kid[0]);
    int64_t v = is_const(nb) && nb->tmp < 0 ? wrap_const(nb->e->c.i, SC_I32) : 0;
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
    pr(g, a, true);
    if (b >= 0) {
        cg_printf(g, ", ");
        pr(g, b, true);
    }
    cg_printf(g, ")");
}

static void pr_infix(cg_ctx *g, const char *op, int a, int b, bool top)
{
    cg_printf(g, top ? "" : "(");
    pr(g, a, false);
    cg_printf(g, " %s ", op);
    pr(g, b, false);
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
            cg_printf(g, "%s(", op == SC_MIN ? g->t->fmin : g->t->fmax);
            pr(g, a, true);
            cg_printf(g, ", ");
            pr(g, b, true);
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
        else
            helper_call(g, op == SC_DIV ? H_DIV : H_MOD, t, op == SC_DIV ? "div" : "mod", a, b);
        break;
    case SC_MIN: helper_call(g, H_MIN, t, "min", a, b); break;
    case SC_MAX: helper_call(g, H_MAX, t, "max", a, b); break;
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
        pr(g, a, false);
    } else if (to == SC_BOOL) {
        cg_printf(g, "(");
        pr(g, a, false);
        cg_printf(g, from == SC_F32 ? " != 0.0f)" : " != 0)");
    } else if (from == SC_F32 && to != SC_F32) {
        g->used[H_FTOI][to] = true;
        cg_printf(g, "sc_f32_to_%s(", sc_type_name(to));
        pr(g, a, true);
        cg_printf(g, ")");
    } else {
        cg_printf(g, "((%s)", g->t->type[to]);
        pr(g, a, false);
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
        pr(g, a, false);
        cg_printf(g, ")");
    } else if (n->e->op == SC_BITNOT) {
        cg_printf(g, t == SC_U8 || t == SC_U16 ? "((%s)(~" : "(~", T);
        pr(g, a, false);
        cg_printf(g, t == SC_U8 || t == SC_U16 ? "))" : ")");
    } else if (t == SC_F32 || !n->wraps) {
        cg_printf(g, "(-");
        pr(g, a, false);
        cg_printf(g, ")");
    } else if (t == SC_I32) {
        cg_printf(g, "((%s)(0u - ", T);
        pr_u32(g, a);
        cg_printf(g, "))");
    } else if (t == SC_U32) {
        cg_printf(g, "(0u - ");
        pr(g, a, false);
        cg_printf(g, ")");
    } else {
        cg_printf(g, "((%s)(-", T);
        pr(g, a, false);
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
            pr(g, n->kid[0], false);
        return;
    }
    cg_printf(g, "%s(", g->t->math[e->op]);
    for (int i = 0; i < n->nkid; i++) {
        cg_printf(g, i ? ", " : "");
        pr(g, n->kid[i], true);
    }
    cg_printf(g, ")");
}

/* Flat element index of (coords) in a, the coordinates and mins being
 * nodes; (c - min) * stride summed, folding constant offsets. */
static void pr_index(cg_ctx *g, const lower_alloc *a, const int *coord, const int *min)
{
    bool wide = a->count > INT32_MAX;
    if (a->ndims == 0)
        cg_printf(g, "0");
    for (int d = 0; d < a->ndims; d++) {
        const cg_node *c = &g->node[coord[d]], *m = &g->node[min[d]];
        int base = coord[d];
        bool bare = a->ndims == 1 && a->stride[d] == 1 && !wide;   /* alone in [] */
        cg_printf(g, d ? " + " : "");
        if (wide)
            cg_printf(g, "(%s)", g->t->i64);
        if (is_const(m) && m->tmp < 0) {
            int64_t off = -wrap_const(m->e->c.i, SC_I32);
            const sc_expr *ce = c->e;
            if (c->tmp < 0 && ce->kind == E_BINARY && ce->type == SC_I32 && !c->wraps &&
                (ce->op == SC_ADD || ce->op == SC_SUB) && is_const(&g->node[c->kid[1]]) &&
                g->node[c->kid[1]].tmp < 0) {
                int64_t k = wrap_const(ce->args[1]->c.i, SC_I32);
                off += ce->op == SC_ADD ? k : -k;
                base = c->kid[0];
            }
            if (off == 0) {
                pr(g, base, bare);
            } else {
                cg_printf(g, bare ? "" : "(");
                pr(g, base, false);
                cg_printf(g, " %s %" PRId64 "%s", off < 0 ? "-" : "+", off < 0 ? -off : off,
                          bare ? "" : ")");
            }
        } else {
            cg_printf(g, "(");
            pr(g, coord[d], false);
            cg_printf(g, " - ");
            pr(g, min[d], false);
            cg_printf(g, ")");
        }
        if (a->stride[d] != 1)
            cg_printf(g, " * %" PRId64, a->stride[d]);
    }
}

/* Prints node id; `top` drops the outer parentheses of an infix form. */
static void pr(cg_ctx *g, int id, bool top)
{
    const cg_node *n = &g->node[id];
    const sc_expr *e = n->e;
    if (n->tmp >= 0) {
        cg_printf(g, "sc_t%d", n->tmp);
        return;
    }
    switch (e->kind) {
    case E_CONST:
        if (e->type == SC_F32)
            pr_float(g, e->c.f);
        else
            pr_int(g, e->type, e->c.i);
        break;
    case E_VAR:
        cg_printf(g, "%s", cg_name(g, e->name));
        break;
    case E_PARAM:
        if (e->type == cg_param_abi_type(e->param))
            cg_printf(g, "%s", cg_name(g, e->param->name));
        else
            cg_printf(g, "((%s)%s)", g->t->type[e->type], cg_name(g, e->param->name));
        break;
    case E_CALL: {
        const lower_alloc *a = storage_of(g, e->func);
        cg_printf(g, "%s[", cg_name(g, a->name));
        pr_index(g, a, n->kid, n->kid + e->nargs);
        cg_printf(g, "]");
        break;
    }
    case E_CAST:   pr_cast(g, n); break;
    case E_UNARY:  pr_unary(g, n); break;
    case E_BINARY: pr_binary(g, n, top); break;
    case E_MATH:   pr_math(g, n); break;
    case E_SELECT:
        cg_printf(g, top ? "" : "(");
        pr(g, n->kid[0], false);
        cg_printf(g, " ? ");
        pr(g, n->kid[1], false);
        cg_printf(g, " : ");
        pr(g, n->kid[2], false);
        cg_printf(g, top ? "" : ")");
        break;
    default:
        cg_bug("unknown expression kind", NULL);
    }
}

/* ---- statements -------------------------------------------------------------------- */

static void st_begin(cg_ctx *g)
{
    g->nnode = 0;
    tables_reset(g);
}

static int st_root(cg_ctx *g, const sc_expr *e, int uses)
{
    if (!e)
        cg_bug("statement without an expression", NULL);
    int id = canon(g, e);
    g->node[id].nref += uses;
    return id;
}

static bool trivial(const cg_node *n)
{
    return n->e->kind == E_CONST || n->e->kind == E_VAR || n->e->kind == E_PARAM;
}

/* Prints the temporaries that node id needs (operands first). */
static void st_hoist(cg_ctx *g, int id)
{
    if (g->node[id].visited)
        return;
    g->node[id].visited = true;
    for (int i = 0; i < g->node[id].nkid; i++)
        st_hoist(g, g->node[id].kid[i]);
    if (g->node[id].nref >= 2 && !trivial(&g->node[id])) {
        put_indent(g);
        cg_printf(g, "const %s sc_t%d = ", g->t->type[g->node[id].e->type], g->ntmp);
        pr(g, id, true);
        cg_printf(g, ";\n");
        g->node[id].tmp = g->ntmp++;
    }
}

static void env_push(cg_ctx *g, const char *name, int64_t lo, int64_t hi)
{
    if (g->nenv == g->capenv) {
        g->capenv = 2 * g->capenv + 16;
        g->env = cg_grow(g->env, sizeof *g->env * (size_t)g->capenv);
    }
    if (!fits(SC_I32, lo, hi))
        type_range(SC_I32, &lo, &hi);
    g->env[g->nenv++] = (cg_var){ name, lo, hi };
}

static void pr_stmt(cg_ctx *g, const kstmt *s, bool scope_top);

/* The statements of a scope whose braces the caller prints. */
static void pr_body(cg_ctx *g, const kstmt *s)
{
    int saved = g->nenv;
    cg_indent(g, 1);
    pr_stmt(g, s, true);
    cg_indent(g, -1);
    g->nenv = saved;
}

static void pr_for(cg_ctx *g, const kstmt *s)
{
    const char *v = cg_name(g, s->var), *I = g->t->type[SC_I32];
    st_begin(g);
    int m = st_root(g, s->min, 2);
    st_hoist(g, m);
    if (s->unroll && g->t->unroll) {
        put_indent(g);
        cg_printf(g, g->t->unroll, s->extent < 1 ? 1 : s->extent > 64 ? 64 : (int)s->extent);
        cg_printf(g, "\n");
    }
    put_indent(g);
    cg_printf(g, "for (%s %s = ", I, v);
    pr(g, m, true);
    cg_printf(g, "; %s < ", v);
    const cg_node *mn = &g->node[m];
    if (is_const(mn) && mn->tmp < 0)
        pr_int(g, SC_I32, wrap_const(mn->e->c.i, SC_I32) + s->extent);
    else {
        pr(g, m, false);
        cg_printf(g, " + %" PRId64, s->extent);
    }
    cg_printf(g, "; %s++) {\n", v);
    int saved = g->nenv;
    env_push(g, s->var, mn->lo, mn->hi + (s->extent > 0 ? s->extent - 1 : 0));
    pr_body(g, s->body);
    g->nenv = saved;
    cg_line(g, "}");
}

static void pr_store(cg_ctx *g, const kstmt *s)
{
    const lower_alloc *a = s->alloc;
    int coord[SC_MAX_DIMS], min[SC_MAX_DIMS];
    st_begin(g);
    for (int d = 0; d < a->ndims; d++) {
        if (!a->min[d])
            cg_bug("allocation without a min:", a->name);
        coord[d] = st_root(g, s->coords[d], 1);
        min[d] = st_root(g, a->min[d], 1);
    }
    int v = st_root(g, s->value, 1);
    for (int d = 0; d < a->ndims; d++) {
        st_hoist(g, coord[d]);
        st_hoist(g, min[d]);
    }
    st_hoist(g, v);
    put_indent(g);
    cg_printf(g, "%s[", cg_name(g, a->name));
    pr_index(g, a, coord, min);
    cg_printf(g, "] = ");
    pr(g, v, true);
    cg_printf(g, ";\n");
}

static void pr_stmt(cg_ctx *g, const kstmt *s, bool scope_top)
{
    if (!s)
        return;
    switch (s->kind) {
    case KS_SEQ:
        if (scope_top) {
            for (int i = 0; i < s->n; i++)
                pr_stmt(g, s->items[i], false);
        } else {
            cg_line(g, "{");
            pr_body(g, s);
            cg_line(g, "}");
        }
        break;
    case KS_FOR:
        pr_for(g, s);
        break;
    case KS_IF: {
        st_begin(g);
        int c = st_root(g, s->cond, 1);
        st_hoist(g, c);
        put_indent(g);
        cg_printf(g, "if (");
        pr(g, c, true);
        cg_printf(g, ") {\n");
        pr_body(g, s->body);
        cg_line(g, "}");
        break;
    }
    case KS_LET: {
        st_begin(g);
        int v = st_root(g, s->value, 1);
        st_hoist(g, v);
        put_indent(g);
        cg_printf(g, "const %s %s = ", g->t->type[s->value->type], cg_name(g, s->var));
        pr(g, v, true);
        cg_printf(g, ";\n");
        env_push(g, s->var, g->node[v].lo, g->node[v].hi);
        if (s->value->type == SC_F32)
            g->nenv--;                      /* no range for floats */
        break;
    }
    case KS_ALLOC:
        cg_line(g, "%s %s[%" PRId64 "];", g->t->type[cg_alloc_type(s->alloc)],
                cg_name(g, s->alloc->name), s->alloc->count > 0 ? s->alloc->count : 1);
        break;
    case KS_STORE:
        pr_store(g, s);
        break;
    default:
        cg_bug("unknown statement kind", NULL);
    }
}

/* ---- helper functions ----------------------------------------------------------- */

/* Prints the helpers used, for every type, in C that all back ends
 * accept (the type names and qualifiers are the back end's). */
static void pr_helpers(cg_ctx *g)
{
    const char *Q = g->t->fn_qual, *U = g->t->type[SC_U32], *I = g->t->type[SC_I32];
    const char *L = g->t->i64;
    for (int t = SC_U8; t <= SC_I32; t++) {
        const char *T = g->t->type[t], *n = sc_type_name(t);
        bool sg = sc_type_is_signed(t);
        int bits = sc_type_bits(t);
        if (g->used[H_DIV][t] && !sg)
            cg_printf(g, "%s %s sc_div_%s(%s a, %s b) { return b == 0 ? 0 : (%s)(a / b); }\n",
                      Q, T, n, T, T, T);
        if (g->used[H_MOD][t] && !sg)
            cg_printf(g, "%s %s sc_mod_%s(%s a, %s b) { return b == 0 ? 0 : (%s)(a %% b); }\n",
                      Q, T, n, T, T, T);
        if (g->used[H_DIV][t] && sg) {
            cg_printf(g, "%s %s sc_div_%s(%s a, %s b)\n{\n    if (b == 0) return 0;\n", Q, T, n, T, T);
            if (t == SC_I32)
                cg_printf(g, "    if (b == -1) return (%s)(0u - (%s)a);\n", I, U);
            cg_printf(g, "    %s q = a / b, r = a %% b;\n"
                         "    return (%s)(r < 0 ? (b > 0 ? q - 1 : q + 1) : q);\n}\n", I, T);
        }
        if (g->used[H_MOD][t] && sg)
            cg_printf(g, "%s %s sc_mod_%s(%s a, %s b)\n{\n    if (b == 0 || b == -1) return 0;\n"
                         "    %s r = a %% b;\n    return (%s)(r < 0 ? (b > 0 ? r + b : r - b) : r);\n}\n",
                      Q, T, n, T, T, I, T);
        if (g->used[H_MIN][t])
            cg_printf(g, "%s %s sc_min_%s(%s a, %s b) { return a < b ? a : b; }\n", Q, T, n, T, T);
        if (g->used[H_MAX][t])
            cg_printf(g, "%s %s sc_max_%s(%s a, %s b) { return a > b ? a : b; }\n", Q, T, n, T, T);
        if (g->used[H_ABS][t] && t == SC_I32)
            cg_printf(g, "%s %s sc_abs_i32(%s a) { return a < 0 ? (%s)(0u - (%s)a) : a; }\n",
                      Q, T, T, T, U);
        else if (g->used[H_ABS][t])
            cg_printf(g, "%s %s sc_abs_%s(%s a) { return (%s)(a < 0 ? -a : a); }\n", Q, T, n, T, T);
        /* shifts: amounts out of [0, bits) give 0 (or -1 for >> of a
         * negative value); a negative amount shifts the other way */
        const char *neg = sg ? "a < 0 ? -1 : 0" : "0";
        char sar[2][128];                   /* a >> s, a >> -s */
        for (int i = 0; i < 2; i++)
            if (sg)
                snprintf(sar[i], sizeof sar[i], "a < 0 ? ~(~a >> (%s)%s) : a >> (%s)%s",
                         I, i ? "-s" : "s", I, i ? "-s" : "s");
            else
                snprintf(sar[i], sizeof sar[i], "a >> (%s)%s", I, i ? "-s" : "s");
        if (g->used[H_SHL][t])
            cg_printf(g, "%s %s sc_shl_%s(%s a, %s s)\n{\n    if (s >= %d) return 0;\n"
                         "    if (s <= -%d) return %s;\n"
                         "    return s >= 0 ? (%s)((%s)a << (%s)s) : (%s)(%s);\n}\n",
                      Q, T, n, T, L, bits, bits, neg, T, U, I, T, sar[1]);
        if (g->used[H_SHR][t])
            cg_printf(g, "%s %s sc_shr_%s(%s a, %s s)\n{\n    if (s >= %d) return %s;\n"
                         "    if (s <= -%d) return 0;\n"
                         "    return s >= 0 ? (%s)(%s) : (%s)((%s)a << (%s)-s);\n}\n",
                      Q, T, n, T, L, bits, neg, bits, T, sar[0], T, U, I);
        if (g->used[H_FTOI][t]) {
            /* float bounds equivalent to the evaluator's double ones */
            static const char *const lo[] = { [SC_U8] = "0.0f", [SC_U16] = "0.0f", [SC_U32] = "0.0f",
                [SC_I8] = "-128.0f", [SC_I16] = "-32768.0f", [SC_I32] = "-2147483648.0f" };
            static const char *const hi[] = { [SC_U8] = "255.0f", [SC_U16] = "65535.0f",
                [SC_U32] = "4294967296.0f", [SC_I8] = "127.0f", [SC_I16] = "32767.0f",
                [SC_I32] = "2147483648.0f" };
            int64_t tlo, thi;
            type_range(t, &tlo, &thi);
            cg_printf(g, "%s %s sc_f32_to_%s(float x)\n{\n    if (x != x) return 0;\n"
                         "    if (x <= %s) return ", Q, T, n, lo[t]);
            pr_int(g, t, tlo);
            cg_printf(g, ";\n    if (x >= %s) return ", hi[t]);
            pr_int(g, t, thi);
            cg_printf(g, ";\n    return (%s)x;\n}\n", T);
        }
    }
    if (g->used[H_MOD][SC_F32])
        cg_printf(g, "%s float sc_mod_f32(float a, float b) { return a - b * %s(a / b); }\n",
                  Q, g->t->math[SC_FLOOR]);
}

/* ---- kernels and files -------------------------------------------------------------- */

/* Text inside a block comment: no comment terminator. */
static void pr_comment_text(cg_ctx *g, const char *s)
{
    for (; *s && *s != '\n'; s++)
        cg_printf(g, s[0] == '*' && s[1] == '/' ? "* " : "%c", *s);
}

static void pr_kernel(cg_ctx *g, const lower_kernel *k)
{
    g->k = k;
    g->nenv = 0;
    g->ntmp = 0;
    g->indent = 0;
    cg_printf(g, "\n/* %s: ", k->name);
    pr_comment_text(g, k->comment ? k->comment : "");
    cg_printf(g, "\n * %" PRId64 " block%s of %d thread%s, %d phase%s */\n", k->nblocks,
              k->nblocks == 1 ? "" : "s", k->nthreads, k->nthreads == 1 ? "" : "s",
              k->nphases, k->nphases == 1 ? "" : "s");
    env_push(g, "bid", 0, k->nblocks > 0 ? k->nblocks - 1 : 0);
    env_push(g, "tid", 0, k->nthreads > 0 ? k->nthreads - 1 : 0);
    g->t->kernel_open(g, k);
    pr_stmt(g, k->block_setup, true);
    int saved = g->nenv;
    for (int i = 0; i < k->nphases; i++) {
        g->t->phase_open(g, k, i);
        pr_stmt(g, k->phases[i], true);
        g->nenv = saved;
        g->t->phase_close(g, k, i);
    }
    g->t->kernel_close(g, k);
}

static void pr_file_comment(cg_ctx *g)
{
    const lower_program *p = g->prog;
    cg_printf(g, "/*\n * Generated by stagecraft from pipeline %s (%s back end).\n",
              p->p && p->p->name ? p->p->name : "?", g->t->name);
    if (p->schedule_text && *p->schedule_text) {
        cg_printf(g, " *\n * Schedule:\n");
        for (const char *s = p->schedule_text; *s;) {
            cg_printf(g, " *   ");
            pr_comment_text(g, s);
            cg_printf(g, "\n");
            s += strcspn(s, "\n");
            s += *s == '\n';
        }
    }
    cg_printf(g, " *\n * Kernels, in launch order:\n");
    for (int i = 0; i < p->nkernels; i++)
        cg_printf(g, " *   %s: %" PRId64 " x %d threads\n", p->kernels[i]->name,
                  p->kernels[i]->nblocks, p->kernels[i]->nthreads);
    cg_printf(g, " */\n");
}

char *cg_generate(const lower_program *prog, cg_backend backend)
{
    static const cg_target *const targets[] = {
        [CG_C] = &cg_target_c, [CG_OPENCL] = &cg_target_opencl, [CG_CUDA] = &cg_target_cuda,
    };
    if (!prog || (unsigned)backend > CG_CUDA)
        return NULL;
    cg_ctx g;
    cg_buf kernels = {0}, file = {0};
    memset(&g, 0, sizeof g);
    g.t = targets[backend];
    g.prog = prog;
    g.out = &kernels;
    for (int i = 0; i < prog->nkernels; i++)
        pr_kernel(&g, prog->kernels[i]);
    g.out = &file;
    g.indent = 0;
    pr_file_comment(&g);
    g.t->prologue(&g);
    bool any = false;
    for (int h = 0; h < H_COUNT; h++)
        for (int t = 0; t < SC_TYPE_COUNT; t++)
            any |= g.used[h][t];
    if (any) {
        cg_printf(&g, "\n/* Integer division and modulo (Euclidean, x / 0 == 0), shifts,\n"
                      " * min / max, abs, f32 %% and casts of the pipeline language. */\n");
        pr_helpers(&g);
    }
    cg_printf(&g, "%.*s", (int)kernels.n, kernels.s ? kernels.s : "");
    free(kernels.s);
    for (int i = 0; i < g.nnames; i++)
        free(g.names[i]);
    free(g.names);
    free(g.env);
    free(g.node);
    free(g.pkey);
    free(g.pval);
    free(g.stab);
    return file.s;
}

const char *cg_backend_name(cg_backend b)
{
    switch (b) {
    case CG_C:      return "c";
    case CG_OPENCL: return "opencl";
    case CG_CUDA:   return "cuda";
    default:        return "?";
    }
}

int cg_backend_parse(const char *name, cg_backend *out)
{
    for (int b = CG_C; b <= CG_CUDA; b++)
        if (name && !strcmp(name, cg_backend_name((cg_backend)b))) {
            *out = (cg_backend)b;
            return 0;
        }
    return -1;
}
