/*
 * codegen.c - prints the kernel IR (lower.h) as C-like source: statements,
 * kernels and files, with the expressions of cg_expr.c; the three back
 * ends (cg_c.c, cg_opencl.c, cg_cuda.c) only supply names and the kernel
 * frame (cg_backend.h).
 *
 * Out of memory aborts, as in the IR arena.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_backend.h"
#include "nest_query.h"

/* ---- growing text and arrays ---------------------------------------------- */

void *cg_grow(void *p, size_t n)
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

_Noreturn void cg_bug(const char *what, const char *name)
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

void cg_put_indent(cg_ctx *g)
{
    cg_printf(g, "%*s", 4 * g->indent, "");
}

void cg_line(cg_ctx *g, const char *fmt, ...)
{
    va_list ap;
    cg_put_indent(g);
    va_start(ap, fmt);
    buf_vprintf(g->out, fmt, ap);
    va_end(ap);
    cg_printf(g, "\n");
}

void cg_indent(cg_ctx *g, int delta) { g->indent += delta; }

char *cg_scratch(cg_ctx *g)
{
    return g->scratch[g->nscratch++ % CG_SCRATCH_N];
}
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
    "HUGE_VALF", "bid", "tid", "tid0", "tid1", "tid2",
    /* fast math */
    "native_exp", "native_log", "native_sin", "native_cos", "__expf", "__logf",
    "__sinf", "__cosf",
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
    if (lower_thread_var(name))
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

/* ---- what a kernel uses ------------------------------------------------------ */

static bool stores_to(const kstmt *s, const lower_alloc *a)
{
    if (!s)
        return false;
    if (s->kind == KS_STORE && s->alloc == a)
        return true;
    for (int i = 0; s->kind == KS_SEQ && i < s->n; i++)
        if (stores_to(s->items[i], a))
            return true;
    return stores_to(s->body, a);
}

bool cg_stores_to(const lower_kernel *k, const lower_alloc *a)
{
    if (stores_to(k->block_setup, a))
        return true;
    for (int i = 0; i < k->nphases; i++)
        if (stores_to(k->phases[i], a))
            return true;
    return false;
}

void cg_mark(cg_ctx *g, const void *what)
{
    for (int i = 0; i < g->nprinted; i++)
        if (g->printed[i] == what)
            return;
    if (g->nprinted == g->capprinted) {
        g->capprinted = 2 * g->capprinted + 16;
        g->printed = cg_grow(g->printed, sizeof *g->printed * (size_t)g->capprinted);
    }
    g->printed[g->nprinted++] = what;
}

bool cg_printed(const cg_ctx *g, const void *what)
{
    for (int i = 0; i < g->nprinted; i++)
        if (g->printed[i] == what)
            return true;
    return false;
}

bool cg_printed_var(const cg_ctx *g, const char *name)
{
    int d = lower_tid_index(name);
    if (d >= 0) return g->printed_tidn[d];
    return !strcmp(name, "bid") ? g->printed_bid : !strcmp(name, "tid") ? g->printed_tid : false;
}

void cg_thread_layout(const lower_kernel *k, int *tdim)
{
    bool set = k->tdim[0] > 0 && (int64_t)k->tdim[0] * k->tdim[1] * k->tdim[2] == k->nthreads;
    tdim[0] = set ? k->tdim[0] : k->nthreads;
    tdim[1] = set ? k->tdim[1] : 1;
    tdim[2] = set ? k->tdim[2] : 1;
}

void cg_tid_defs(cg_ctx *g, const lower_kernel *k, const char *type, const char *tid, bool all)
{
    int T[3];
    cg_thread_layout(k, T);
    for (int d = 0; d < 3; d++) {
        if (!all && !cg_printed_var(g, lower_tid_names[d])) continue;
        if (d == 0)
            cg_line(g, T[1] * T[2] > 1 ? "const %s tid0 = (%s)(%s %% %d);" : "const %s tid0 = (%s)(%s);", type, type,
                    tid, T[0]);
        else if (d == 1)
            cg_line(g, T[2] > 1 ? "const %s tid1 = (%s)((%s / %d) %% %d);" : "const %s tid1 = (%s)(%s / %d);", type,
                    type, tid, T[0], T[1]);
        else
            cg_line(g, "const %s tid2 = (%s)(%s / %d);", type, type, tid, T[0] * T[1]);
    }
}

/* ---- pieces the back ends share ---- */

bool cg_fast(const cg_ctx *g)
{
    return g->math == CG_MATH_FAST;
}

const char *cg_math_fn(const cg_ctx *g, sc_mathfn op)
{
    if (cg_fast(g) && g->t->fast_math[op])
        return g->t->fast_math[op];
    return g->t->math[op];
}

void cg_math_prologue(cg_ctx *g, const char *qual)
{
    static const struct { const char *name, *params, *value; } fn[] = {
        { "sc_expf", "float x", "exp((double)x)" },
        { "sc_logf", "float x", "log((double)x)" },
        { "sc_sinf", "float x", "sin((double)x)" },
        { "sc_cosf", "float x", "cos((double)x)" },
        { "sc_tanhf", "float x", "tanh((double)x)" },
        { "sc_powf", "float x, float y", "pow((double)x, (double)y)" },
        { "sc_atan2f", "float y, float x", "atan2((double)y, (double)x)" },
    };
    if (cg_fast(g)) {
        cg_printf(g, "/* Fast math: the device's f32 functions, contraction allowed; results\n"
                     " * differ from the reference evaluator's within a tolerance. */\n");
        return;
    }
    cg_printf(g, "/* exp log pow sin cos tanh atan2 in double, rounded once to f32: the\n"
                 " * same result on every back end and in the reference evaluator. */\n");
    for (size_t i = 0; i < sizeof fn / sizeof fn[0]; i++)
        cg_printf(g, "%s float %s(%s) { return (float)%s; }\n", qual, fn[i].name, fn[i].params, fn[i].value);
}

void cg_gpu_kernel_frame(cg_ctx *g, const lower_kernel *k)
{
    const cg_target *t = g->t;
    cg_printf(g, "%s%s(", cg_name(g, k->name), g->name_suffix ? g->name_suffix : "");
    for (int i = 0; i < k->nargs; i++) {
        const lower_alloc *a = k->args[i];
        cg_printf(g, "%s%s%s%s *%s %s", i ? ",\n        " : "", t->gpu.global_qual,
                  cg_stores_to(k, a) ? "" : "const ", cg_type(g, cg_alloc_type(a)), t->gpu.restrict_qual,
                  cg_name(g, a->name));
    }
    for (int i = 0; i < k->nparams; i++)
        cg_printf(g, "%sconst %s %s", k->nargs + i ? ",\n        " : "",
                  cg_type(g, cg_param_abi_type(k->params[i])), cg_name(g, k->params[i]->name));
    cg_printf(g, "%s)\n{\n", k->nargs + k->nparams ? "" : t->gpu.no_params);
    cg_indent(g, 1);
    for (int i = 0; i < k->nshared; i++)
        cg_line(g, "%s %s %s[%lld];", t->gpu.shared_qual, cg_type(g, cg_alloc_type(k->shared[i])),
                cg_name(g, k->shared[i]->name),
                (long long)(k->shared[i]->count > 0 ? k->shared[i]->count : 1));
    for (int i = 0; i < k->nargs + k->nparams; i++) {
        const void *x = i < k->nargs ? (const void *)k->args[i] : (const void *)k->params[i - k->nargs];
        if (!cg_printed(g, x))
            cg_line(g, "(void)%s;            /* unused here (its uses were constant) */",
                    cg_name(g, i < k->nargs ? k->args[i]->name : k->params[i - k->nargs]->name));
    }
    if (cg_printed_var(g, "bid") && g->bid_map) {
        cg_line(g, "const %s %s = (%s)%s;", t->gpu.index_type, g->bid_group, t->gpu.index_type, t->gpu.bid);
        cg_line(g, "const %s bid = %s;", t->gpu.index_type, g->bid_map);
    } else if (cg_printed_var(g, "bid"))
        cg_line(g, "const %s bid = (%s)%s;", t->gpu.index_type, t->gpu.index_type, t->gpu.bid);
    int T[3];
    cg_thread_layout(k, T);
    if (t->gpu.local_id) {
        /* a work-group of shape T: its dimensions are tid0..2, tid their
         * flat index (dimension 0 fastest) */
        for (int d = 0; d < 3; d++)
            if (cg_printed_var(g, lower_tid_names[d]))
                cg_line(g, "const %s tid%d = (%s)%s(%d);", t->gpu.index_type, d, t->gpu.index_type,
                        t->gpu.local_id, d);
        if (cg_printed_var(g, "tid")) {
            if (T[1] * T[2] == 1)
                cg_line(g, "const %s tid = (%s)%s(0);", t->gpu.index_type, t->gpu.index_type, t->gpu.local_id);
            else
                cg_line(g, "const %s tid = (%s)(%s(0) + %d * (%s(1) + %d * %s(2)));", t->gpu.index_type,
                        t->gpu.index_type, t->gpu.local_id, T[0], t->gpu.local_id, T[1], t->gpu.local_id);
        }
        return;
    }
    if (cg_printed_var(g, "tid") || g->printed_tidn[0] || g->printed_tidn[1] || g->printed_tidn[2])
        cg_line(g, "const %s tid = (%s)%s;", t->gpu.index_type, t->gpu.index_type, t->gpu.tid);
    cg_tid_defs(g, k, t->gpu.index_type, "tid", false);
}

void cg_gpu_phase_open(cg_ctx *g, const lower_kernel *k, int phase)
{
    (void)k;
    cg_line(g, "/* phase %d */", phase);
    cg_line(g, "{");
    cg_indent(g, 1);
}

void cg_gpu_phase_close(cg_ctx *g, const lower_kernel *k, int phase)
{
    cg_indent(g, -1);
    cg_line(g, "}");
    if (phase + 1 < k->nphases)
        cg_line(g, "%s", g->t->gpu.barrier);
}

void cg_gpu_kernel_close(cg_ctx *g, const lower_kernel *k)
{
    (void)k;
    cg_indent(g, -1);
    cg_line(g, "}");
}

static void pr_stmt(cg_ctx *g, const kstmt *s, bool scope_top);

/* Inside `if (cond)`: the variables that cond bounds by a constant
 * (v < c, v <= c, and the terms of &&) get the narrower range. */
static void narrow_env(cg_ctx *g, const sc_expr *cond)
{
    if (cond->kind != E_BINARY)
        return;
    if (cond->op == SC_AND) {
        narrow_env(g, cond->args[0]);
        narrow_env(g, cond->args[1]);
        return;
    }
    const sc_expr *v = cond->args[0], *c = cond->args[1];
    if ((cond->op != SC_LT && cond->op != SC_LE) || v->kind != E_VAR || c->kind != E_CONST || c->type == SC_F32)
        return;
    for (int i = g->nenv - 1; i >= 0; i--)
        if (!strcmp(g->env[i].name, v->name)) {
            int64_t hi = cond->op == SC_LT ? c->c.i - 1 : c->c.i;
            if (hi < g->env[i].hi) {
                cg_var was = g->env[i];             /* the copy keeps the rest: linear forms, lanes */
                cg_env_push(g, v->name, was.lo, hi < was.lo ? was.lo : hi);
                cg_var *now = &g->env[g->nenv - 1];
                was.lo = now->lo;
                was.hi = now->hi;
                was.narrowed = true;
                *now = was;
            }
            return;
        }
}

/* The statements of a scope whose braces the caller prints. */
static void pr_body(cg_ctx *g, const kstmt *s)
{
    int saved = g->nenv;
    cg_indent(g, 1);
    pr_stmt(g, s, true);
    cg_indent(g, -1);
    g->nenv = saved;
}

typedef struct { int64_t n, cap; } node_count;

/* The nodes of e's tree (a shared subtree counts at each use), up to
 * past c->cap. */
static void count_expr(const sc_expr *e, node_count *c)
{
    if (!e || c->n > c->cap)
        return;
    c->n++;
    for (int i = 0; i < e->nargs; i++)
        count_expr(e->args[i], c);
}

/* The expression nodes of s as unrolled: the body of a loop with the
 * unroll hint counts extent times.  Counting stops once past c->cap. */
static void count_unrolled(const kstmt *s, node_count *c)
{
    if (!s || c->n > c->cap)
        return;
    switch (s->kind) {
    case KS_SEQ:
        for (int i = 0; i < s->n; i++)
            count_unrolled(s->items[i], c);
        break;
    case KS_FOR: {
        node_count body = { 0, c->cap };
        count_unrolled(s->body, &body);
        count_expr(s->min, c);
        c->n += (s->unroll ? s->extent : 1) * body.n;
        break;
    }
    case KS_IF:
        count_expr(s->cond, c);
        count_unrolled(s->body, c);
        break;
    case KS_STORE:
        for (int d = 0; s->alloc && d < s->alloc->ndims; d++)
            count_expr(s->coords[d], c);
        count_expr(s->value, c);
        break;
    case KS_LET:
        count_expr(s->value, c);
        break;
    case KS_ALLOC:
        break;
    }
}

/* Whether some loop with the unroll hint in s (with whole, one of a
 * reduction unrolled whole) comes to more than lo and at most hi nodes
 * unrolled. */
static bool unrolls_between(const kstmt *s, int64_t lo, int64_t hi, bool whole)
{
    if (!s)
        return false;
    switch (s->kind) {
    case KS_SEQ:
        for (int i = 0; i < s->n; i++)
            if (unrolls_between(s->items[i], lo, hi, whole))
                return true;
        return false;
    case KS_FOR:
        if (s->unroll && (!whole || s->unroll_whole)) {
            node_count c = { 0, hi };
            count_unrolled(s, &c);
            if (c.n > lo && c.n <= hi)
                return true;
        }
        return unrolls_between(s->body, lo, hi, whole);
    case KS_IF:
        return unrolls_between(s->body, lo, hi, whole);
    default:
        return false;
    }
}

/* unrolls_between over every phase of every kernel of prog. */
static bool program_unrolls_between(const lower_program *prog, int64_t lo, int64_t hi, bool whole)
{
    for (int k = 0; k < prog->nkernels; k++)
        for (int ph = 0; ph < prog->kernels[k]->nphases; ph++)
            if (unrolls_between(prog->kernels[k]->phases[ph], lo, hi, whole))
                return true;
    return false;
}

bool cg_opencl_unrolls_past(const lower_program *prog, int64_t before)
{
    return program_unrolls_between(prog, before, cg_target_opencl.unroll_nodes, false);
}

bool cg_unrolls_whole_past(const lower_program *prog)
{
    return program_unrolls_between(prog, CG_OPENCL_UNROLL_NODES, CG_UNROLL_NODES_WHOLE, true);
}

/* Whether the loop s gets the back end's unroll pragma. */
static bool unroll_pragma(const cg_ctx *g, const kstmt *s)
{
    if (!s->unroll || !g->t->unroll)
        return false;
    if (!g->t->unroll_nodes)
        return true;
    int64_t cap = g->t->unroll_nodes;
    if (s->unroll_whole && cap < CG_UNROLL_NODES_WHOLE)
        cap = CG_UNROLL_NODES_WHOLE;
    node_count c = { 0, cap };
    count_unrolled(s, &c);
    return c.n <= c.cap;
}

static void pr_for(cg_ctx *g, const kstmt *s)
{
    const char *v = cg_name(g, s->var), *I = g->t->type[SC_I32];
    cg_st_begin(g);
    int m = cg_st_root(g, s->min, 2);
    cg_st_hoist(g, m);
    bool pragma = unroll_pragma(g, s);
    if (pragma) {
        cg_put_indent(g);
        cg_printf(g, g->t->unroll, s->extent < 1 ? 1 : s->extent > 64 ? 64 : (int)s->extent);
        cg_printf(g, "\n");
    }
    const cg_node *mn = &g->node[m];
    if (pragma && g->t->unroll_counted) {
        /* for (i = 0; i < extent; i++) { v = min + i; ... }: a start that
         * does not depend on the work-item (cg_opencl.c) */
        cg_put_indent(g);
        cg_printf(g, "for (%s %s_u_ = 0; %s_u_ < %" PRId64 "; %s_u_++) {\n", I, v, v, s->extent, v);
        cg_indent(g, 1);
        cg_put_indent(g);
        cg_printf(g, "const %s %s = ", I, v);
        cg_expr(g, m, false);
        cg_printf(g, " + %s_u_;\n", v);
        cg_indent(g, -1);
    } else {
        cg_put_indent(g);
        cg_printf(g, "for (%s %s = ", I, v);
        cg_expr(g, m, true);
        cg_printf(g, "; %s < ", v);
        if (cg_folds(mn))
            cg_int(g, SC_I32, mn->lo + s->extent);
        else {
            cg_expr(g, m, false);
            cg_printf(g, " + %" PRId64, s->extent);
        }
        cg_printf(g, "; %s++) {\n", v);
    }
    int saved = g->nenv;
    bool lane = cg_tracks_lanes(g) && cg_lane_varying(g, m);
    cg_env_push(g, s->var, mn->lo, mn->hi + (s->extent > 0 ? s->extent - 1 : 0));
    g->env[g->nenv - 1].lane = lane;
    if (pragma && g->t->unroll_counted) {
        g->env[g->nenv - 1].lin = cg_lin_of(g, m);
        g->env[g->nenv - 1].counted = true;
        g->env[g->nenv - 1].extent = s->extent;
    }
    pr_body(g, s->body);
    g->nenv = saved;
    cg_line(g, "}");
}

static void pr_store(cg_ctx *g, const kstmt *s)
{
    const lower_alloc *a = s->alloc;
    int coord[SC_MAX_DIMS], min[SC_MAX_DIMS];
    cg_st_begin(g);
    for (int d = 0; d < a->ndims; d++) {
        if (!a->min[d])
            cg_bug("allocation without a min:", a->name);
        coord[d] = cg_st_root(g, s->coords[d], 1);
        min[d] = cg_st_root(g, a->min[d], 1);
    }
    int v = cg_st_root(g, s->value, 1);
    for (int d = 0; d < a->ndims; d++) {
        cg_st_hoist(g, coord[d]);
        cg_st_hoist(g, min[d]);
    }
    cg_st_hoist(g, v);
    cg_put_indent(g);
    cg_mark(g, a);
    cg_access(g, a, coord, min);
    cg_printf(g, " = ");
    cg_expr(g, v, true);
    cg_printf(g, ";\n");
}

/* The conjuncts of condition node c (the operands of its &&s) that the
 * ranges leave undecided: a partial tile's guard `x < 2561 && c < 3` has
 * two, one in blocks away from x's last (generation 22). */
static int64_t undecided_conjuncts(const cg_ctx *g, int c)
{
    const cg_node *n = &g->node[c];
    if (n->e->kind == E_BINARY && n->e->op == SC_AND)
        return undecided_conjuncts(g, n->kid[0]) + undecided_conjuncts(g, n->kid[1]);
    return !cg_folds(n);
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
        cg_st_begin(g);
        int c = cg_st_root(g, s->cond, 1);
        if (cg_folds(&g->node[c])) {        /* decided by the ranges */
            if (g->node[c].lo) {
                cg_line(g, "{");
                pr_body(g, s->body);
                cg_line(g, "}");
            }
            break;
        }
        g->undecided += g->whole_guards ? 1 : undecided_conjuncts(g, c);
        cg_st_hoist(g, c);
        cg_put_indent(g);
        cg_printf(g, "if (");
        cg_expr(g, c, true);
        cg_printf(g, ") {\n");
        int saved = g->nenv;
        narrow_env(g, s->cond);
        pr_body(g, s->body);
        g->nenv = saved;
        cg_line(g, "}");
        break;
    }
    case KS_LET: {
        cg_st_begin(g);
        int v = cg_st_root(g, s->value, 1);
        cg_st_hoist(g, v);
        cg_put_indent(g);
        cg_printf(g, "const %s %s = ", g->t->type[s->value->type], cg_name(g, s->var));
        cg_expr(g, v, true);
        cg_printf(g, ";\n");
        int64_t lo = g->node[v].lo, hi = g->node[v].hi;
        for (int i = 0; i < g->novr; i++)
            if (!strcmp(g->ovr[i].var, s->var)) {
                lo = lo > g->ovr[i].lo ? lo : g->ovr[i].lo;
                hi = hi < g->ovr[i].hi ? hi : g->ovr[i].hi;
            }
        bool lane = cg_tracks_lanes(g) && cg_lane_varying(g, v);
        cg_env_push(g, s->var, lo, hi);
        g->env[g->nenv - 1].lin = s->value->type == SC_I32 ? cg_lin_of(g, v) : -1;
        g->env[g->nenv - 1].lane = lane;
        if (g->env[g->nenv - 1].lin < 0) cg_clamped_min_of(g, v, &g->env[g->nenv - 1]);
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
void cg_helpers(cg_ctx *g)
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
            cg_type_range(t, &tlo, &thi);
            /* one expression, no branches: PoCL kept the branches of an
             * if chain in its work-item loops (generation 21) */
            cg_printf(g, "%s %s sc_f32_to_%s(float x)\n{\n    return x != x ? (%s)0 : x <= %s ? (%s)", Q, T, n, T,
                      lo[t], T);
            cg_int(g, t, tlo);
            cg_printf(g, " : x >= %s ? (%s)", hi[t], T);
            cg_int(g, t, thi);
            cg_printf(g, " : (%s)x;\n}\n", T);
        }
    }
    if (g->used[H_MOD][SC_F32])
        cg_printf(g, "%s float sc_mod_f32(float a, float b) { return a - b * %s(a / b); }\n",
                  Q, cg_math_fn(g, SC_FLOOR));
}

/* ---- kernels and files -------------------------------------------------------------- */

/* Text inside a block comment: no comment terminator. */
static void pr_comment_text(cg_ctx *g, const char *s)
{
    for (; *s && *s != '\n'; s++)
        cg_printf(g, s[0] == '*' && s[1] == '/' ? "* " : "%c", *s);
}

/* The phases of k, after its block_setup. */
static void pr_phases(cg_ctx *g, const lower_kernel *k)
{
    int saved = g->nenv;
    for (int i = 0; i < k->nphases; i++) {
        g->t->phase_open(g, k, i);
        pr_stmt(g, k->phases[i], true);
        g->nenv = saved;
        g->t->phase_close(g, k, i);
    }
}

/* The value of k's block base b in its block j. */
static int64_t base_at(const lower_kernel *k, int b, int64_t j)
{
    return k->bases[b].min + k->bases[b].step * j;
}

/* The LETs of k's block bases get the ranges of the blocks jlo[b] ..
 * jhi[b] of each base when printed (cg_ctx.ovr) until g->novr is 0. */
static void set_interior_ranges(cg_ctx *g, const lower_kernel *k, const int64_t *jlo, const int64_t *jhi)
{
    g->novr = k->nbases;
    for (int b = 0; b < k->nbases; b++) {
        g->ovr[b].var = k->bases[b].var;
        g->ovr[b].lo = base_at(k, b, jlo[b]);
        g->ovr[b].hi = base_at(k, b, jhi[b]);
    }
}

/* Pushes block_setup's LETs again with the ranges of the blocks jlo[b] ..
 * jhi[b] of each base (cg_ctx.ovr), shadowing the printed ones: printed
 * into scratch and dropped.  With phases, the phases too (to count what
 * they leave undecided).  The caller pops the environment. */
static void push_interior(cg_ctx *g, const lower_kernel *k, const int64_t *jlo, const int64_t *jhi, bool phases)
{
    cg_buf scratch = {0}, *out = g->out;
    int indent = g->indent, ntmp = g->ntmp;
    set_interior_ranges(g, k, jlo, jhi);
    g->out = &scratch;
    g->probing = true;
    pr_stmt(g, k->block_setup, true);
    if (phases)
        pr_phases(g, k);
    g->probing = false;
    free(scratch.s);
    g->out = out;
    g->indent = indent;
    g->ntmp = ntmp;
    g->novr = 0;
}

/* The conditionals that the kernel's body (block_setup and phases) leaves
 * undecided when its blocks are those of jlo .. jhi. */
static int64_t undecided_in(cg_ctx *g, const lower_kernel *k, const int64_t *jlo, const int64_t *jhi)
{
    int nenv = g->nenv;
    g->undecided = 0;
    push_interior(g, k, jlo, jhi, true);
    g->nenv = nenv;
    return g->undecided;
}

/*
 * Interior blocks.  At an image's edges a stage clamps its coordinates
 * (repeat_edge's min and max), selects (a constant exterior) and guards a
 * partial tile; in the blocks away from the edges none of these can
 * change anything, and the code without them is plain affine loads that
 * a CPU's OpenCL vectorizes (a clamped address is a gather to it: one
 * u16 copy with repeat_edge ran 4-8x faster without).  The kernel's body
 * is printed twice, `if (the block bases are within the interior) {
 * body with the ranges of interior blocks } else { body }` (per phase):
 * the first
 * copy's min, max, select and if that the ranges decide are printed as
 * their result (stands_for, KS_IF).  The condition depends on the block
 * alone, so every thread of a block takes the same branch; it is tested
 * in each phase (pr_kernel_body says why).
 *
 * The interior is found from the middle blocks: with every base within
 * its middle three blocks the body has fewest undecided conditionals
 * (three, not one: a guard relative to another variable, `y <
 * y_min + 6`, is decided for one block but not for a range, and must
 * not shrink the interior to one block); each base's range of blocks
 * then grows, by bisection on each side, as long as no conditional more
 * is left undecided.  An if counts each of its conjuncts (since
 * generation 22): a partial tile's guard `x < 2561 && c < 3`, with three
 * channels in blocks of two, keeps `c < 3` in every block, and counted
 * as one it left no interior at all, where PoCL vectorizes the interior
 * copy guarded by `c < 3` alone (camera_pipe's curved: 37 ms, 6 now).
 * True when some conditional is decided there that is not in every
 * block; jlo, jhi: the interior's blocks per base.
 */
static bool interior_blocks(cg_ctx *g, const lower_kernel *k, int64_t *jlo, int64_t *jhi)
{
    int nb = k->nbases;
    if (nb == 0)
        return false;
    int64_t mlo[SC_MAX_DIMS], mhi[SC_MAX_DIMS];
    for (int b = 0; b < nb; b++) {
        jlo[b] = 0;
        jhi[b] = k->bases[b].count - 1;
        mlo[b] = jhi[b] / 2 - 1 > 0 ? jhi[b] / 2 - 1 : 0;
        mhi[b] = jhi[b] / 2 + 1 < jhi[b] ? jhi[b] / 2 + 1 : jhi[b];
    }
    int64_t all = undecided_in(g, k, jlo, jhi);
    if (all == 0)
        return false;
    int64_t best = undecided_in(g, k, mlo, mhi);
    if (best >= all)
        return false;
    for (int b = 0; b < nb; b++) {
        jlo[b] = mlo[b];
        jhi[b] = mhi[b];
    }
    for (int b = 0; b < nb; b++) {
        int64_t lo = 0, hi = mlo[b];        /* the lowest first block that keeps best */
        while (lo < hi) {
            jlo[b] = lo + (hi - lo) / 2;
            if (undecided_in(g, k, jlo, jhi) == best)
                hi = jlo[b];
            else
                lo = jlo[b] + 1;
        }
        jlo[b] = lo;
        lo = mhi[b];
        hi = k->bases[b].count - 1;         /* the highest last block */
        while (lo < hi) {
            jhi[b] = hi - (hi - lo) / 2;
            if (undecided_in(g, k, jlo, jhi) == best)
                lo = jhi[b];
            else
                hi = jhi[b] - 1;
        }
        jhi[b] = lo;
    }
    return true;
}

/* Which part of a kernel a function prints: the whole (with interior
 * copies in a branch), or, split for a CPU, the kernel's own function
 * (its interior blocks skip every phase) or its interior copy. */
typedef enum { PART_WHOLE, PART_EDGE, PART_INTERIOR } kernel_part;

typedef struct {
    kernel_part part;
    bool split;                          /* PART_EDGE found interior blocks */
    int64_t jlo[SC_MAX_DIMS], jhi[SC_MAX_DIMS];
    int64_t ninterior;                   /* the interior's blocks */
} kernel_split;

/* The condition that a block is in the interior jlo .. jhi, printed into
 * cond (empty when every block is); its length. */
static size_t interior_condition(cg_ctx *g, const lower_kernel *k, const int64_t *jlo, const int64_t *jhi,
                                 char *cond, size_t size)
{
    size_t n = 0;
    cond[0] = 0;
    for (int b = 0; b < k->nbases && n < size; b++) {
        const char *v = cg_name(g, k->bases[b].var);
        if (jlo[b] > 0)
            n += (size_t)snprintf(cond + n, size - n, "%s%s >= %" PRId64, n ? " && " : "", v,
                                  base_at(k, b, jlo[b]));
        if (jhi[b] < k->bases[b].count - 1 && n < size)
            n += (size_t)snprintf(cond + n, size - n, "%s%s <= %" PRId64, n ? " && " : "", v,
                                  base_at(k, b, jhi[b]));
    }
    if (n >= size)
        cg_bug("interior condition too long in", k->name);
    return n;
}

/* Whether the kernel's phases come to CG_SPLIT_NODES expression nodes or
 * more, unrolled loops counted as unrolled. */
static bool large_kernel(const lower_kernel *k)
{
    int64_t cap = CG_SPLIT_NODES;
    node_count c = { 0, cap };
    for (int i = 0; i < k->nphases && c.n < cap; i++)
        count_unrolled(k->phases[i], &c);
    return c.n >= cap;
}

/* Whether s stores an element narrower than 32 bits into a global array
 * under a condition (a partial tile's guard; guarded: inside one). */
static bool guards_narrow_store(const kstmt *s, bool guarded)
{
    if (!s)
        return false;
    switch (s->kind) {
    case KS_SEQ:
        for (int i = 0; i < s->n; i++)
            if (guards_narrow_store(s->items[i], guarded)) return true;
        return false;
    case KS_FOR:
        return guards_narrow_store(s->body, guarded);
    case KS_IF:
        return guards_narrow_store(s->body, true);
    case KS_STORE:
        return guarded && s->alloc && s->alloc->mem == MEM_GLOBAL && sc_type_size(cg_alloc_type(s->alloc)) < 4;
    default:
        return false;
    }
}

/* Whether a CPU's OpenCL code launches the kernel's interior blocks apart
 * where it has them: a large kernel (large_kernel), or one that guards a
 * store of 8 or 16 bits (generation 18).  With the interior copy and the
 * guarded one as two sides of a branch in the work-item loop, PoCL's
 * vectorizer must mask the guarded store; on a CPU with AVX2 and no
 * AVX-512 there is no masked store of 8 or 16 bits, and the whole loop
 * stayed scalar: stencil_chain's baseline (u16 stencils, 64 wide) ran
 * 760-820 ms, 73-112 ms with its kernels split (docs/backends.md,
 * "Generation 18"). */
bool cg_split_worthy(const lower_kernel *k, bool *narrow)
{
    bool n = false, large = large_kernel(k);
    for (int i = 0; i < k->nphases && !n; i++)
        n = guards_narrow_store(k->phases[i], false);
    if (narrow)
        *narrow = n && !large;
    return n || large;
}

/* Whether the kernel's blocks are exactly its bases' digits (lower.c:
 * bid's mixed radix, the first base fastest), so that an interior block's
 * index can be mapped to its bid. */
static bool blocks_are_bases(const lower_kernel *k)
{
    int64_t n = 1;
    for (int b = 0; b < k->nbases; b++)
        n *= k->bases[b].count;
    return k->nbases > 0 && n == k->nblocks;
}

/* The kernel's phases after block_setup (printed).  PART_WHOLE: in each,
 * the interior blocks' copy and the general one, or the general one
 * alone.  The branch is inside each phase, so that no barrier is inside a
 * branch: though the condition is the same for every thread of a block
 * (which OpenCL and CUDA allow), PoCL 3.1's loopvec method miscompiled
 * barriers in the two branches (random_41 of test_oneshot: 384 of 1152
 * points wrong; its loops and cbs methods were right).  PART_EDGE (a
 * target that splits, for a CPU): where the kernel is large and has
 * interior blocks, sp->split with the interior and the general copy
 * alone (the function runs over the edge blocks only), else as
 * PART_WHOLE; PART_INTERIOR: the interior copy of sp's blocks, with no
 * condition. */
static void pr_kernel_body(cg_ctx *g, const lower_kernel *k, kernel_split *sp)
{
    int saved = g->nenv;
    if (sp->part == PART_INTERIOR) {        /* block_setup was printed for the interior */
        pr_phases(g, k);
        return;
    }
    int64_t jlo[SC_MAX_DIMS], jhi[SC_MAX_DIMS];
    if (g->guards_probe) {                  /* the finder of generation 21 beside this one's */
        if (!g->t->interior)
            return;
        int64_t olo[SC_MAX_DIMS], ohi[SC_MAX_DIMS];
        size_t n = sizeof jlo[0] * (size_t)k->nbases;
        bool now = interior_blocks(g, k, jlo, jhi);
        g->whole_guards = true;
        bool before = interior_blocks(g, k, olo, ohi);
        g->whole_guards = false;
        g->guards_apart |= now != before || (now && (memcmp(jlo, olo, n) || memcmp(jhi, ohi, n)));
        return;
    }
    if (!g->t->interior || !interior_blocks(g, k, jlo, jhi)) {
        pr_phases(g, k);
        return;
    }
    char cond[1024];
    size_t n = interior_condition(g, k, jlo, jhi, cond, sizeof cond);
    if (sp->part == PART_EDGE && n > 0 && blocks_are_bases(k) && cg_split_worthy(k, NULL)) {
        sp->split = true;
        sp->ninterior = 1;
        for (int b = 0; b < k->nbases; b++) {
            sp->jlo[b] = jlo[b];
            sp->jhi[b] = jhi[b];
            sp->ninterior *= jhi[b] - jlo[b] + 1;
        }
        g->edge_copy = true;
        pr_phases(g, k);
        g->edge_copy = false;
        return;
    }
    for (int i = 0; i < k->nphases; i++) {
        g->t->phase_open(g, k, i);
        cg_line(g, "if (%s) {    /* interior blocks: no edge handling */", n ? cond : "1");
        cg_indent(g, 1);
        push_interior(g, k, jlo, jhi, false);
        pr_stmt(g, k->phases[i], true);
        g->nenv = saved;
        cg_indent(g, -1);
        cg_line(g, "} else {");
        cg_indent(g, 1);
        g->edge_copy = true;
        pr_stmt(g, k->phases[i], true);
        g->edge_copy = false;
        g->nenv = saved;
        cg_indent(g, -1);
        cg_line(g, "}");
        g->t->phase_close(g, k, i);
    }
}

/* The bid of block `index` (a printed expression) of the box lo .. hi of
 * the kernel's blocks, its blocks in the order of the kernel's (the first
 * base fastest), appended to out at *n. */
static void box_bid(const lower_kernel *k, const char *index, const int64_t *lo, const int64_t *hi, char *out,
                    size_t size, size_t *at)
{
    size_t n = *at;
    int64_t below = 1, below_interior = 1;
    bool first = true;
    for (int b = 0; b < k->nbases && n < size; b++) {
        int64_t c = hi[b] - lo[b] + 1;
        char digit[200], q[96], first_block[32] = "";
        if (c == 1)
            snprintf(digit, sizeof digit, "%" PRId64, lo[b]);
        else {
            if (below_interior > 1)
                snprintf(q, sizeof q, "%s / %" PRId64, index, below_interior);
            else
                snprintf(q, sizeof q, "%s", index);
            if (lo[b] > 0)
                snprintf(first_block, sizeof first_block, "%" PRId64 " + ", lo[b]);
            if (b < k->nbases - 1)
                snprintf(digit, sizeof digit, "%s(%s) %% %" PRId64, first_block, q, c);
            else
                snprintf(digit, sizeof digit, "%s%s", first_block, q);
        }
        if (below > 1)
            n += (size_t)snprintf(out + n, size - n, "%s(%s) * %" PRId64, first ? "" : " + ", digit, below);
        else
            n += (size_t)snprintf(out + n, size - n, "%s(%s)", first ? "" : " + ", digit);
        first = false;
        below *= k->bases[b].count;
        below_interior *= c;
    }
    if (n >= size)
        cg_bug("block index too long in", k->name);
    *at = n;
}

/* The interior copy's bid from its own group index, bid_interior_. */
static void interior_bid(const lower_kernel *k, const kernel_split *sp, char *out, size_t size)
{
    size_t n = 0;
    out[0] = 0;
    box_bid(k, "bid_interior_", sp->jlo, sp->jhi, out, size, &n);
}

/* The edge blocks' bid from their own group index, bid_edge_.  The blocks
 * outside the interior are, base by base, those whose first base outside
 * the interior's range is b: the bases before b within the interior, base
 * b below or above it, the bases after b anywhere.  These slabs (two per
 * base, some empty) are disjoint boxes; bid_edge_ counts through them in
 * turn, and the expression picks the slab with a chain of `?:`. */
static void edge_bid(const lower_kernel *k, const kernel_split *sp, char *out, size_t size)
{
    size_t n = 0;
    int64_t offset = 0;
    out[0] = 0;
    for (int b = 0; b < k->nbases; b++)
        for (int side = 0; side < 2; side++) {
            int64_t lo[SC_MAX_DIMS], hi[SC_MAX_DIMS], count = 1;
            for (int d = 0; d < k->nbases; d++) {
                lo[d] = d < b ? sp->jlo[d] : 0;
                hi[d] = d < b ? sp->jhi[d] : k->bases[d].count - 1;
            }
            if (side == 0)
                hi[b] = sp->jlo[b] - 1;
            else
                lo[b] = sp->jhi[b] + 1;
            for (int d = 0; d < k->nbases; d++)
                count *= hi[d] >= lo[d] ? hi[d] - lo[d] + 1 : 0;
            if (count == 0)
                continue;
            char index[64];
            if (offset > 0)
                snprintf(index, sizeof index, "(bid_edge_ - %" PRId64 ")", offset);
            else
                snprintf(index, sizeof index, "bid_edge_");
            offset += count;
            bool last = offset == k->nblocks - sp->ninterior;
            if (!last && n < size)
                n += (size_t)snprintf(out + n, size - n, "bid_edge_ < %" PRId64 " ? ", offset);
            if (n < size)
                n += (size_t)snprintf(out + n, size - n, "(");
            box_bid(k, index, lo, hi, out, size, &n);
            if (n < size)
                n += (size_t)snprintf(out + n, size - n, ")%s", last ? "" : " : ");
        }
    if (n >= size || offset != k->nblocks - sp->ninterior)
        cg_bug("edge block index wrong in", k->name);
}

static void add_launch(cg_ctx *g, int kernel, bool interior, int64_t nblocks)
{
    if (g->nlaunches == g->caplaunches) {
        g->caplaunches = g->caplaunches ? 2 * g->caplaunches : 16;
        g->launches = cg_grow(g->launches, sizeof *g->launches * (size_t)g->caplaunches);
    }
    g->launches[g->nlaunches++] = (cg_launch){ kernel, interior, nblocks };
}

/*
 * A kernel's function.  The body is printed first, into its own buffer,
 * so that the frame knows which buffers, parameters and index variables
 * it really uses (constant folding can remove the last use of one); a
 * first, discarded call of kernel_open sets the body's indentation.
 */
static void pr_kernel_fn(cg_ctx *g, const lower_kernel *k, kernel_split *sp)
{
    cg_buf body = {0}, scratch = {0}, *out = g->out;
    g->k = k;
    g->nenv = 0;
    g->nlins = 0;
    g->ntmp = 0;
    g->nprinted = 0;
    g->printed_bid = g->printed_tid = false;
    memset(g->printed_tidn, 0, sizeof g->printed_tidn);
    cg_env_push(g, "bid", 0, k->nblocks > 0 ? k->nblocks - 1 : 0);
    cg_env_push(g, "tid", 0, k->nthreads > 0 ? k->nthreads - 1 : 0);
    int T[3];
    cg_thread_layout(k, T);
    for (int d = 0; d < 3; d++) cg_env_push(g, lower_tid_names[d], 0, T[d] - 1);
    g->env[g->nenv - 4].lane = true;        /* tid */
    g->env[g->nenv - 3].lane = true;        /* tid0 */
    g->indent = 0;
    g->out = &scratch;
    g->t->kernel_open(g, k);
    free(scratch.s);
    g->out = &body;
    int indent = g->indent;
    if (sp->part == PART_INTERIOR)
        set_interior_ranges(g, k, sp->jlo, sp->jhi);
    pr_stmt(g, k->block_setup, true);
    g->novr = 0;
    pr_kernel_body(g, k, sp);
    g->out = out;
    g->indent = 0;
    bool interior = sp->part == PART_INTERIOR;
    char bid[4096];
    if (sp->split) {
        if (interior)
            interior_bid(k, sp, bid, sizeof bid);
        else
            edge_bid(k, sp, bid, sizeof bid);
        g->bid_map = bid;
        g->bid_group = interior ? "bid_interior_" : "bid_edge_";
    }
    cg_printf(g, "\n/* %s%s (%" PRId64 " x %d threads, %d phase%s): ", k->name, interior ? CG_INTERIOR_SUFFIX : "",
              !sp->split ? k->nblocks : interior ? sp->ninterior : k->nblocks - sp->ninterior, k->nthreads,
              k->nphases, k->nphases == 1 ? "" : "s");
    if (interior)
        cg_printf(g, "the interior blocks of %s, no edge handling; ", k->name);
    else if (sp->split)
        cg_printf(g, "the edge blocks, the interior's in %s%s; ", k->name, CG_INTERIOR_SUFFIX);
    pr_comment_text(g, k->comment ? k->comment : "");
    cg_printf(g, " */\n");
    g->t->kernel_open(g, k);
    if (g->indent != indent)
        cg_bug("kernel_open indents differently in", k->name);
    cg_printf(g, "%.*s", (int)body.n, body.s ? body.s : "");
    free(body.s);
    g->t->kernel_close(g, k);
    g->bid_map = g->bid_group = NULL;
}

/* Kernel i of the program: one function, or for a CPU target that splits
 * (cg_target.split_on_cpu) where it is large and has interior blocks,
 * two; and its launches. */
static void pr_kernel(cg_ctx *g, int i)
{
    const lower_kernel *k = g->prog->kernels[i];
    kernel_split sp = { .part = g->t->split_on_cpu && g->prog->cpu ? PART_EDGE : PART_WHOLE };
    pr_kernel_fn(g, k, &sp);
    add_launch(g, i, false, sp.split ? k->nblocks - sp.ninterior : k->nblocks);
    if (!sp.split)
        return;
    sp.part = PART_INTERIOR;
    g->name_suffix = CG_INTERIOR_SUFFIX;
    pr_kernel_fn(g, k, &sp);
    g->name_suffix = NULL;
    add_launch(g, i, true, sp.ninterior);
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
    for (int i = 0; i < g->nlaunches; i++) {
        const cg_launch *l = &g->launches[i];
        const lower_kernel *k = p->kernels[l->kernel];
        cg_printf(g, " *   %s%s: %" PRId64 " x %d threads\n", k->name, l->interior ? CG_INTERIOR_SUFFIX : "",
                  l->nblocks, k->nthreads);
    }
    cg_printf(g, " */\n");
}

char *cg_generate(const lower_program *prog, cg_backend backend)
{
    return cg_generate_math(prog, backend, CG_MATH_EXACT);
}

/* Whether s guards with a conjunction (KS_IF on &&). */
static bool stmt_guards_conjunction(const kstmt *s)
{
    if (!s)
        return false;
    if (s->kind == KS_IF && s->cond->kind == E_BINARY && s->cond->op == SC_AND)
        return true;
    if (s->kind == KS_SEQ) {
        for (int i = 0; i < s->n; i++)
            if (stmt_guards_conjunction(s->items[i])) return true;
        return false;
    }
    return (s->kind == KS_FOR || s->kind == KS_IF) && stmt_guards_conjunction(s->body);
}

static bool guards_conjunction(const lower_kernel *k)
{
    for (int i = 0; i < k->nphases; i++)
        if (stmt_guards_conjunction(k->phases[i])) return true;
    return false;
}

char *cg_generate_probe(const lower_program *prog, cg_backend backend, cg_math math, code_counts *counts,
                        cg_launch **launches, int *nlaunches, split_probe probe)
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
    g.math = math;
    g.prog = prog;
    g.out = &kernels;
    g.guards_probe = probe == PROBE_GUARDS;
    for (int i = 0; i < prog->nkernels; i++) {
        bool narrow;
        if (probe == PROBE_GUARDS && !(prog->kernels[i]->nbases > 0 && guards_conjunction(prog->kernels[i])))
            continue;
        if ((probe == PROBE_SPLITS || probe == PROBE_NARROW_SPLITS) &&
            !(prog->kernels[i]->nbases > 0 && cg_split_worthy(prog->kernels[i], &narrow) &&
              (probe == PROBE_SPLITS || narrow)))
            continue;
        pr_kernel(&g, i);
        if (probe != PROBE_NONE && ((g.nlaunches > 0 && g.launches[g.nlaunches - 1].interior) || g.guards_apart))
            break;
    }
    if (probe != PROBE_NONE) {
        free(kernels.s);
        goto done;
    }
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
        cg_helpers(&g);
    }
    cg_printf(&g, "%.*s", (int)kernels.n, kernels.s ? kernels.s : "");
    free(kernels.s);
    if (g.t->host && cg_host_possible(prog))
        g.t->host(&g);
done:
    for (int i = 0; i < g.nnames; i++)
        free(g.names[i]);
    free(g.names);
    free(g.env);
    free(g.lins);
    free(g.printed);
    free(g.node);
    free(g.pkey);
    free(g.pval);
    free(g.stab);
    if (counts) {
        counts->pow2_shifts = g.pow2_shifts;
        counts->opencl = (cg_opencl_forms){ g.rows_apart, g.rows_apart_edge, g.pointer_selects, g.private_picks,
                                         g.guarded_mins, g.data_picks };
        counts->guards_apart = g.guards_apart;
    }
    if (launches) {
        *launches = g.launches;
        *nlaunches = g.nlaunches;
    } else
        free(g.launches);
    return file.s;
}

char *cg_generate_math(const lower_program *prog, cg_backend backend, cg_math math)
{
    return cg_generate_probe(prog, backend, math, NULL, NULL, NULL, PROBE_NONE);
}

char *cg_generate_launches(const lower_program *prog, cg_backend backend, cg_math math, cg_launch **launches,
                           int *nlaunches)
{
    *launches = NULL;
    *nlaunches = 0;
    return cg_generate_probe(prog, backend, math, NULL, launches, nlaunches, PROBE_NONE);
}

/* The options each back end's header comment also names (cg_c.c,
 * cg_opencl.c, cg_cuda.c say why). */
const char *cg_required_options(cg_backend backend)
{
    return cg_math_options(backend, CG_MATH_EXACT);
}

/* Fast math keeps IEEE infinities, NaNs and signed zeros (the pipeline
 * language's casts and select test for NaN): no -ffast-math,
 * -cl-fast-relaxed-math or --use_fast_math, whose finite-math assumptions
 * would let the compiler delete those tests.  CUDA keeps denormals
 * (--ftz=false) so that values near zero stay within the tolerance. */
const char *cg_math_options(cg_backend backend, cg_math m)
{
    bool fast = m == CG_MATH_FAST;
    switch (backend) {
    case CG_CUDA:
        return fast ? "--fmad=true --prec-div=false --prec-sqrt=false --ftz=false"
                    : "--fmad=false --prec-div=true --prec-sqrt=true";
    case CG_OPENCL:
        return fast ? "-cl-mad-enable" : "-cl-fp32-correctly-rounded-divide-sqrt";
    default:
        return fast ? "-ffp-contract=fast" : "-ffp-contract=off";
    }
}

const char *cg_math_name(cg_math m)
{
    return m == CG_MATH_FAST ? "fast" : "exact";
}

int cg_math_parse(const char *name, cg_math *out)
{
    for (int m = CG_MATH_EXACT; m <= CG_MATH_FAST; m++)
        if (name && !strcmp(name, cg_math_name((cg_math)m))) {
            *out = (cg_math)m;
            return 0;
        }
    return -1;
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
