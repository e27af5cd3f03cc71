/*
 * eval.c - the reference evaluator: every Func computed straight from its
 * definitions over the region bounds inference gives it, with no schedule.
 * It is the oracle every generated kernel is compared with, so it favours
 * being obviously right; it is fast enough because it interprets each
 * expression once per batch of points, not once per point.
 *
 * Semantics (the language's, see docs/language.md):
 *  - Integer values of every type are held as int64_t and wrapped to their
 *    type (two's complement truncation) after every operation, so + - * and
 *    negation wrap.  bool is 0 or 1.  f32 values are computed in float
 *    precision, operation by operation, as generated C or CUDA would.
 *  - Integer / and % are Euclidean: the remainder is always in [0, |b|)
 *    and a == b * (a / b) + a % b; so for b > 0 the quotient rounds toward
 *    minus infinity, for b < 0 toward plus infinity.  x / 0 == 0 and
 *    x % 0 == 0.  Unsigned types are plain.  f32 / is IEEE; f32 % is
 *    a - b * floorf(a / b).
 *  - min, max: the smaller / larger operand; f32 uses fminf / fmaxf (a NaN
 *    operand gives the other one).  Comparisons give bool (f32 comparisons
 *    with a NaN are false, except !=).  && || ! take bools; & | ^ ~ ints.
 *  - a << s and a >> s: s in [0, bits) shifts as is (>> is arithmetic for
 *    signed types); s >= bits gives 0, or -1 for >> of a negative signed
 *    value; a negative s shifts the other way by -s.
 *  - Casts: int -> int wraps; f32 -> int truncates toward zero, saturates
 *    to the target's range, NaN gives 0; anything -> bool is != 0;
 *    bool -> int is 0 or 1; int -> f32 rounds to nearest.
 *  - Math on f32: sqrtf expf logf powf floorf ceilf sinf cosf tanhf atan2f;
 *    round is rintf (ties to even, as Halide's).  abs keeps its type: fabsf
 *    on f32, and on integers |a| wrapped (abs of the most negative i8 is
 *    itself).
 *  - select(c, t, f) evaluates both sides (there are no side effects).
 *  - A parameter's value is converted to its type as a cast from f32 would
 *    (truncated, saturated).  Integer literals wrap to their type.
 *
 * Batching.  A stage is compiled into a straight-line program: the unique
 * nodes of its expression DAG (shared subexpressions once) in post-order,
 * each an instruction that reads the lane arrays of its operands and
 * writes its own.  A lane array holds EV_LANES values; slots are reused
 * once their last reader has run.  Loop variables, constants and
 * parameters are slots filled outside the program.  The stage's pure loops
 * (ir_stage_loops) are flattened, dimension 0 fastest, and cut into chunks
 * of EV_LANES consecutive points; each lane's coordinates are decoded from
 * its flat index, so a small innermost extent still fills the batch.  A
 * pure stage runs the program once per chunk.  An update stage runs, for
 * each chunk of pure points, its whole reduction domain in order (dim 0
 * innermost), the program once per reduction point over the chunk.  This
 * is exact because distinct pure points never interact (see ir.h), while
 * reduction points are never batched: an update with no pure loop (a
 * scatter such as hist(v) += 1) has chunks of one point and sees every
 * previous write.  Stores go to coordinates evaluated per lane.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define EV_LANES 1024

typedef union {
    int64_t i[EV_LANES];
    float f[EV_LANES];
} ev_lanes;

/* ---- internal errors ------------------------------------------------------ */

/* An internal bug (never a user error): report and abort, even with NDEBUG. */
static _Noreturn void ev_bug(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void ev_bug(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("stagecraft: internal error in the evaluator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define EV_CHECK(cond, e) do { if (!(cond)) \
    ev_bug("%s: %s in %s", #cond, ir_expr_to_string(e), __func__); } while (0)

/* The evaluator's own small allocations (programs, tables) abort when
 * memory runs out, as the IR arena does; only buffers, whose size the
 * user controls, fail with an error. */
static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        ev_bug("out of memory (%zu bytes)", n);
    return p;
}

/* ---- integer helpers ------------------------------------------------------ */

static void type_range(sc_type t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case SC_BOOL: *lo = 0; *hi = 1; break;
    case SC_U8:   *lo = 0; *hi = UINT8_MAX; break;
    case SC_U16:  *lo = 0; *hi = UINT16_MAX; break;
    case SC_U32:  *lo = 0; *hi = UINT32_MAX; break;
    case SC_I8:   *lo = INT8_MIN; *hi = INT8_MAX; break;
    case SC_I16:  *lo = INT16_MIN; *hi = INT16_MAX; break;
    case SC_I32:  *lo = INT32_MIN; *hi = INT32_MAX; break;
    default:      ev_bug("no integer range for %s", sc_type_name(t));
    }
}

/* Wraps lanes (any int64) to type t: the low bits, sign-extended for
 * signed types, written with masks so that no conversion is out of range. */
static void wrap_lanes(int64_t *v, int n, sc_type t)
{
#define WRAP(expr) for (int j = 0; j < n; j++) { int64_t x = v[j]; v[j] = (expr); } break
    switch (t) {
    case SC_BOOL: WRAP(x != 0);
    case SC_U8:   WRAP(x & 0xff);
    case SC_U16:  WRAP(x & 0xffff);
    case SC_U32:  WRAP(x & 0xffffffff);
    case SC_I8:   WRAP(((x & 0xff) ^ 0x80) - 0x80);
    case SC_I16:  WRAP(((x & 0xffff) ^ 0x8000) - 0x8000);
    case SC_I32:  WRAP(((x & 0xffffffff) ^ 0x80000000) - 0x80000000);
    default:      ev_bug("wrap to %s", sc_type_name(t));
    }
#undef WRAP
}

static int64_t wrap1(int64_t v, sc_type t)
{
    wrap_lanes(&v, 1, t);
    return v;
}

/* Operands are within 32-bit ranges, so a / b cannot overflow int64. */
static inline int64_t div_euclid(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    int64_t q = a / b, r = a % b;
    if (r < 0)
        q += b > 0 ? -1 : 1;
    return q;
}

static inline int64_t mod_euclid(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    int64_t r = a % b;
    if (r < 0)
        r += b > 0 ? b : -b;
    return r;
}

/* Shifts by s >= 0 of a value of a `bits`-wide type; the caller wraps. */
static inline int64_t shift_left(int64_t a, int64_t s, int bits)
{
    if (s >= bits)
        return 0;
    return (int64_t)(((uint64_t)a << s) & 0xffffffffu);
}

static inline int64_t shift_right(int64_t a, int64_t s, int bits)
{
    if (s >= bits)
        return a < 0 ? -1 : 0;
    return a < 0 ? ~(~a >> s) : a >> s;     /* arithmetic, portably */
}

/* f32 or double to an integer type of range [lo, hi]: truncate toward
 * zero, saturate, NaN -> 0. */
static inline int64_t sat_trunc(double v, int64_t lo, int64_t hi)
{
    if (isnan(v))
        return 0;
    return v <= (double)lo ? lo : v >= (double)hi ? hi : (int64_t)v;
}

/* ---- programs ------------------------------------------------------------- */

/* The unique nodes of one or more expressions, operands before users,
 * with an open-addressing table (2 * cap entries) from node to index. */
typedef struct {
    const sc_expr **node;
    int n, cap;
    int *table;                       /* index into node, or -1 */
} ev_dag;

static size_t dag_hash(const ev_dag *g, const sc_expr *e)
{
    uint64_t h = (uint64_t)(uintptr_t)e;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (2 * (size_t)g->cap - 1);
}

static int dag_find(const ev_dag *g, const sc_expr *e)
{
    if (!g->cap)
        return -1;
    size_t mask = 2 * (size_t)g->cap - 1;
    for (size_t i = dag_hash(g, e); g->table[i] >= 0; i = (i + 1) & mask)
        if (g->node[g->table[i]] == e)
            return g->table[i];
    return -1;
}

static void dag_insert(ev_dag *g, int k)
{
    size_t i = dag_hash(g, g->node[k]), mask = 2 * (size_t)g->cap - 1;
    while (g->table[i] >= 0)
        i = (i + 1) & mask;
    g->table[i] = k;
}

static void dag_add(ev_dag *g, const sc_expr *e)
{
    if (dag_find(g, e) >= 0)
        return;
    for (int i = 0; i < e->nargs; i++)
        dag_add(g, e->args[i]);
    if (g->n == g->cap) {             /* grow, then rehash */
        g->cap = g->cap ? 2 * g->cap : 64;
        g->node = xrealloc(g->node, (size_t)g->cap * sizeof *g->node);
        g->table = xrealloc(g->table, 2 * (size_t)g->cap * sizeof *g->table);
        memset(g->table, 0xff, 2 * (size_t)g->cap * sizeof *g->table);
        for (int k = 0; k < g->n; k++)
            dag_insert(g, k);
    }
    g->node[g->n] = e;
    dag_insert(g, g->n++);
}

static void dag_free(ev_dag *g)
{
    free(g->table);
    free(g->node);
}

/* Adds every expression of every stage of f. */
static void dag_add_func(ev_dag *g, const sc_func *f)
{
    for (int s = 0; s < f->nstages; s++) {
        dag_add(g, f->stages[s].value);
        for (int i = 0; i < f->stages[s].nargs; i++)
            dag_add(g, f->stages[s].args[i]);
    }
}

typedef struct {
    const sc_expr *e;
    int out;                          /* result slot */
    int arg[SC_MAX_DIMS];             /* operand slots */
} ev_instr;

typedef struct {
    int ncode;
    ev_instr *code;
    int nslots;
    ev_lanes *slot;                   /* [0, nloops) are the loop variables */
    int value;                        /* slot of the value stored */
    int nlhs;
    int lhs[SC_MAX_DIMS];             /* slots of the store coordinates */
} ev_prog;

static void prog_free(ev_prog *g)
{
    free(g->code);
    free(g->slot);
}

/* Whether a node's operand and result types are what the evaluator
 * assumes (the builders guarantee it; this catches their bugs early). */
static void check_types(const sc_expr *e)
{
    const sc_expr *a = e->nargs > 0 ? e->args[0] : NULL;
    switch (e->kind) {
    case E_BINARY: {
        const sc_expr *b = e->args[1];
        if (e->op == SC_SHL || e->op == SC_SHR)
            EV_CHECK(b->type != SC_F32, e);
        else
            EV_CHECK(a->type == b->type, e);
        if (e->op >= SC_EQ && e->op <= SC_GE)
            EV_CHECK(e->type == SC_BOOL, e);
        else if (e->op == SC_AND || e->op == SC_OR)
            EV_CHECK(e->type == SC_BOOL && a->type == SC_BOOL, e);
        else
            EV_CHECK(e->type == a->type, e);
        if (e->op >= SC_BITAND)
            EV_CHECK(e->type != SC_F32, e);
        break;
    }
    case E_UNARY:
        EV_CHECK(e->type == a->type, e);
        EV_CHECK(e->op == SC_NEG || e->type != SC_F32, e);
        EV_CHECK(e->op != SC_NOT || e->type == SC_BOOL, e);
        break;
    case E_SELECT:
        EV_CHECK(a->type == SC_BOOL, e);
        EV_CHECK(e->args[1]->type == e->type && e->args[2]->type == e->type, e);
        break;
    case E_MATH:
        EV_CHECK(e->nargs == ((e->op == SC_POW || e->op == SC_ATAN2) ? 2 : 1), e);
        for (int i = 0; i < e->nargs; i++)
            EV_CHECK(e->args[i]->type == (e->op == SC_ABS ? e->type : SC_F32), e);
        break;
    case E_CALL:
        EV_CHECK(e->nargs == e->func->ndims && e->type == e->func->type, e);
        for (int i = 0; i < e->nargs; i++)
            EV_CHECK(e->args[i]->type != SC_F32, e);
        break;
    default:
        break;
    }
}

/* The value of a constant or parameter broadcast over every lane. */
static void fill_leaf(ev_lanes *l, const sc_expr *e)
{
    double v = e->kind == E_PARAM ? e->param->value : e->c.f;
    if (e->type == SC_F32) {
        float x = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
        for (int j = 0; j < EV_LANES; j++)
            l->f[j] = x;
    } else {
        int64_t lo, hi;
        type_range(e->type, &lo, &hi);
        int64_t x = e->kind == E_PARAM ? sat_trunc(v, lo, hi) : wrap1(e->c.i, e->type);
        for (int j = 0; j < EV_LANES; j++)
            l->i[j] = x;
    }
}

/*
 * Compiles stage s of f, whose loops are which[0..nloops) (ir_stage_loops),
 * into g.  Variables name loop slots; every other node gets a slot, an
 * instruction's result slot being taken before its operands' are released
 * (results never alias operands).
 */
static void prog_compile(ev_prog *g, const sc_func *f, int s, int nloops,
                        const int *which)
{
    const ir_stage *st = &f->stages[s];
    ev_dag dag = {0};
    int nfree = 0;

    memset(g, 0, sizeof *g);
    EV_CHECK(st->value->type == f->type && st->nargs == f->ndims, st->value);
    for (int i = 0; i < st->nargs; i++)
        EV_CHECK(st->args[i]->type != SC_F32, st->args[i]);
    dag_add(&dag, st->value);
    for (int i = 0; i < st->nargs; i++)
        dag_add(&dag, st->args[i]);
    int n = dag.n;
    int *slot = xrealloc(NULL, (size_t)n * sizeof *slot);
    int *last = xrealloc(NULL, (size_t)n * sizeof *last);
    int *free_list = xrealloc(NULL, (size_t)n * sizeof *free_list);
    g->code = xrealloc(NULL, (size_t)n * sizeof *g->code);

    /* Last reader of each node; the roots live to the end. */
    for (int k = 0; k < n; k++)
        last[k] = -1;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < dag.node[k]->nargs; i++)
            last[dag_find(&dag, dag.node[k]->args[i])] = k;
    last[dag_find(&dag, st->value)] = INT_MAX;
    for (int i = 0; i < st->nargs; i++)
        last[dag_find(&dag, st->args[i])] = INT_MAX;

    /* Slots: loop variables, then leaves, then temporaries.  Leaves are
     * never released. */
    g->nslots = nloops;
    for (int k = 0; k < n; k++) {
        const sc_expr *e = dag.node[k];
        slot[k] = -1;
        if (e->nargs == 0)
            last[k] = INT_MAX;
        if (e->kind == E_VAR) {
            for (int i = 0; i < nloops && slot[k] < 0; i++)
                if (which[i] >= 0 && strcmp(f->vars[which[i]], e->name) == 0)
                    slot[k] = i;
            EV_CHECK(slot[k] >= 0, e);
        } else if (e->kind == E_RVAR) {
            EV_CHECK(e->rdom == st->rdom, e);
            for (int i = 0; i < nloops; i++)
                if (which[i] == -1 - e->dim)
                    slot[k] = i;
            EV_CHECK(slot[k] >= 0, e);
        } else if (e->kind == E_CONST || e->kind == E_PARAM) {
            slot[k] = g->nslots++;
        }
    }
    for (int k = 0; k < n; k++) {
        const sc_expr *e = dag.node[k];
        if (slot[k] >= 0)
            continue;
        check_types(e);
        ev_instr *in = &g->code[g->ncode];
        slot[k] = nfree ? free_list[--nfree] : g->nslots++;
        in->e = e;
        in->out = slot[k];
        for (int i = 0; i < e->nargs; i++) {
            int a = dag_find(&dag, e->args[i]);
            in->arg[i] = slot[a];
            if (last[a] == k) {
                free_list[nfree++] = slot[a];
                last[a] = -1;           /* released once even if read twice */
            }
        }
        g->ncode++;
    }
    g->value = slot[dag_find(&dag, st->value)];
    g->nlhs = st->nargs;
    for (int i = 0; i < st->nargs; i++)
        g->lhs[i] = slot[dag_find(&dag, st->args[i])];

    g->slot = xrealloc(NULL, (size_t)g->nslots * sizeof *g->slot);
    for (int k = 0; k < n; k++)
        if (dag.node[k]->kind == E_CONST || dag.node[k]->kind == E_PARAM)
            fill_leaf(&g->slot[slot[k]], dag.node[k]);
    free(slot);
    free(last);
    free(free_list);
    dag_free(&dag);
}

/* ---- instructions --------------------------------------------------------- */

typedef struct {
    sc_buffer **buf;                  /* by func id: inputs (borrowed) or owned */
    const sc_func *cur;               /* the Func being computed */
    int64_t off[EV_LANES];            /* element offsets of a load or store */
} ev_ctx;

#define LOOP(stmt) for (int j = 0; j < n; j++) { stmt; } break

static void exec_binary_f32(int op, ev_lanes *out, const float *x,
                            const float *y, int n)
{
    float *o = out->f;
    int64_t *ob = out->i;
    switch (op) {
    case SC_ADD: LOOP(o[j] = x[j] + y[j]);
    case SC_SUB: LOOP(o[j] = x[j] - y[j]);
    case SC_MUL: LOOP(o[j] = x[j] * y[j]);
    case SC_DIV: LOOP(o[j] = x[j] / y[j]);
    case SC_MOD: LOOP(o[j] = x[j] - y[j] * floorf(x[j] / y[j]));
    case SC_MIN: LOOP(o[j] = fminf(x[j], y[j]));
    case SC_MAX: LOOP(o[j] = fmaxf(x[j], y[j]));
    case SC_EQ:  LOOP(ob[j] = x[j] == y[j]);
    case SC_NE:  LOOP(ob[j] = x[j] != y[j]);
    case SC_LT:  LOOP(ob[j] = x[j] < y[j]);
    case SC_LE:  LOOP(ob[j] = x[j] <= y[j]);
    case SC_GT:  LOOP(ob[j] = x[j] > y[j]);
    case SC_GE:  LOOP(ob[j] = x[j] >= y[j]);
    default:     ev_bug("f32 operator %s", ir_binop_name(op));
    }
}

/* Integer operands are already wrapped to their type (at most 32 bits),
 * so + - and / cannot overflow int64; * is done in uint64_t. */
static void exec_binary_int(int op, sc_type t, int64_t *restrict o,
                            const int64_t *x, const int64_t *y, int n)
{
    int bits = sc_type_bits(t);
    switch (op) {
    case SC_ADD: LOOP(o[j] = x[j] + y[j]);
    case SC_SUB: LOOP(o[j] = x[j] - y[j]);
    case SC_MUL: LOOP(o[j] = (int64_t)(((uint64_t)x[j] * (uint64_t)y[j]) & 0xffffffffu));
    case SC_DIV: LOOP(o[j] = div_euclid(x[j], y[j]));
    case SC_MOD: LOOP(o[j] = mod_euclid(x[j], y[j]));
    case SC_MIN: LOOP(o[j] = x[j] < y[j] ? x[j] : y[j]);
    case SC_MAX: LOOP(o[j] = x[j] > y[j] ? x[j] : y[j]);
    case SC_EQ:  LOOP(o[j] = x[j] == y[j]);
    case SC_NE:  LOOP(o[j] = x[j] != y[j]);
    case SC_LT:  LOOP(o[j] = x[j] < y[j]);
    case SC_LE:  LOOP(o[j] = x[j] <= y[j]);
    case SC_GT:  LOOP(o[j] = x[j] > y[j]);
    case SC_GE:  LOOP(o[j] = x[j] >= y[j]);
    case SC_AND: LOOP(o[j] = x[j] && y[j]);
    case SC_OR:  LOOP(o[j] = x[j] || y[j]);
    case SC_BITAND: LOOP(o[j] = x[j] & y[j]);
    case SC_BITOR:  LOOP(o[j] = x[j] | y[j]);
    case SC_BITXOR: LOOP(o[j] = x[j] ^ y[j]);
    case SC_SHL: LOOP(o[j] = y[j] >= 0 ? shift_left(x[j], y[j], bits)
                                       : shift_right(x[j], -y[j], bits));
    case SC_SHR: LOOP(o[j] = y[j] >= 0 ? shift_right(x[j], y[j], bits)
                                       : shift_left(x[j], -y[j], bits));
    default:     ev_bug("integer operator %s", ir_binop_name(op));
    }
    if (op < SC_EQ || op > SC_OR)
        wrap_lanes(o, n, t);
}

static void exec_binary(ev_prog *g, const ev_instr *in, int n)
{
    ev_lanes *o = &g->slot[in->out], *a = &g->slot[in->arg[0]], *b = &g->slot[in->arg[1]];
    sc_type t = in->e->args[0]->type;
    if (t == SC_F32)
        exec_binary_f32(in->e->op, o, a->f, b->f, n);
    else
        exec_binary_int(in->e->op, t, o->i, a->i, b->i, n);
}

static void exec_unary(ev_prog *g, const ev_instr *in, int n)
{
    ev_lanes *o = &g->slot[in->out], *a = &g->slot[in->arg[0]];
    sc_type t = in->e->type;
    if (t == SC_F32) {                    /* only negation (check_types) */
        for (int j = 0; j < n; j++)
            o->f[j] = -a->f[j];
        return;
    }
    switch (in->e->op) {
    case SC_NEG:    LOOP(o->i[j] = -a->i[j]);
    case SC_NOT:    LOOP(o->i[j] = !a->i[j]);
    case SC_BITNOT: LOOP(o->i[j] = ~a->i[j]);
    default:        ev_bug("unary operator %d", in->e->op);
    }
    wrap_lanes(o->i, n, t);
}

static void exec_cast(ev_prog *g, const ev_instr *in, int n)
{
    ev_lanes *o = &g->slot[in->out], *a = &g->slot[in->arg[0]];
    sc_type to = in->e->type, from = in->e->args[0]->type;
    if (from == SC_F32) {
        if (to == SC_F32)
            memcpy(o->f, a->f, (size_t)n * sizeof(float));
        else if (to == SC_BOOL)
            for (int j = 0; j < n; j++)
                o->i[j] = a->f[j] != 0;
        else {
            int64_t lo, hi;
            type_range(to, &lo, &hi);
            for (int j = 0; j < n; j++)
                o->i[j] = sat_trunc(a->f[j], lo, hi);
        }
    } else if (to == SC_F32) {
        for (int j = 0; j < n; j++)
            o->f[j] = (float)a->i[j];
    } else {
        memcpy(o->i, a->i, (size_t)n * sizeof(int64_t));
        wrap_lanes(o->i, n, to);          /* bool: != 0 */
    }
}

static void exec_select(ev_prog *g, const ev_instr *in, int n)
{
    ev_lanes *o = &g->slot[in->out], *c = &g->slot[in->arg[0]];
    ev_lanes *t = &g->slot[in->arg[1]], *f = &g->slot[in->arg[2]];
    if (in->e->type == SC_F32) {
        for (int j = 0; j < n; j++)
            o->f[j] = c->i[j] ? t->f[j] : f->f[j];
    } else {
        for (int j = 0; j < n; j++)
            o->i[j] = c->i[j] ? t->i[j] : f->i[j];
    }
}

static void exec_math(ev_prog *g, const ev_instr *in, int n)
{
    float *restrict o = g->slot[in->out].f;
    const float *x = g->slot[in->arg[0]].f;
    const float *y = in->e->nargs > 1 ? g->slot[in->arg[1]].f : NULL;
    switch (in->e->op) {
    case SC_SQRT:  LOOP(o[j] = sqrtf(x[j]));
    case SC_EXP:   LOOP(o[j] = expf(x[j]));
    case SC_LOG:   LOOP(o[j] = logf(x[j]));
    case SC_POW:   LOOP(o[j] = powf(x[j], y[j]));
    case SC_FLOOR: LOOP(o[j] = floorf(x[j]));
    case SC_CEIL:  LOOP(o[j] = ceilf(x[j]));
    case SC_ROUND: LOOP(o[j] = rintf(x[j]));
    case SC_SIN:   LOOP(o[j] = sinf(x[j]));
    case SC_COS:   LOOP(o[j] = cosf(x[j]));
    case SC_TANH:  LOOP(o[j] = tanhf(x[j]));
    case SC_ATAN2: LOOP(o[j] = atan2f(x[j], y[j]));
    case SC_ABS:
        if (in->e->type == SC_F32) {
            LOOP(o[j] = fabsf(x[j]));
        } else {
            int64_t *restrict oi = g->slot[in->out].i;
            const int64_t *xi = g->slot[in->arg[0]].i;
            for (int j = 0; j < n; j++)
                oi[j] = xi[j] < 0 ? -xi[j] : xi[j];
            wrap_lanes(oi, n, in->e->type);
        }
        break;
    default:       ev_bug("math function %d", in->e->op);
    }
}

/* Reports the first lane of an access outside b (an internal bug). */
static _Noreturn void lane_out_of_region(ev_ctx *c, ev_prog *g, const sc_buffer *b,
                                         int ndims, const int *coord, int n,
                                         const char *what, const char *name)
{
    for (int d = 0; d < ndims; d++)
        for (int j = 0; j < n; j++) {
            int64_t x = g->slot[coord[d]].i[j], lo = b->min[d];
            if (x < lo || x >= lo + b->extent[d])
                ev_bug("%s %s%s at %lld in dimension %d, outside its region "
                       "[%lld, %lld)", c->cur->name, what, name, (long long)x, d,
                       (long long)lo, (long long)(lo + b->extent[d]));
        }
    ev_bug("lane_out_of_region found no bad lane");
}

/*
 * Element offsets in b of the points whose coordinates are in the lanes
 * coord[0..ndims) (a 0-dimensional Func has one element).  A point outside
 * b is a bug of bounds inference (or of this evaluator): abort, naming the
 * access (what: "reads g", "stores").
 */
static void lane_offsets(ev_ctx *c, ev_prog *g, const sc_buffer *b,
                         int ndims, const int *coord, int n, const char *what,
                         const char *name)
{
    int64_t *restrict off = c->off;
    uint64_t bad = 0;
    if (ndims == 0)
        memset(off, 0, (size_t)n * sizeof *off);
    for (int d = 0; d < ndims; d++) {
        const int64_t *x = g->slot[coord[d]].i;
        int64_t lo = b->min[d], stride = b->stride[d];
        uint64_t ext = (uint64_t)b->extent[d];
        if (d == 0 && stride == 1)
            for (int j = 0; j < n; j++) {
                bad |= (uint64_t)(x[j] - lo) >= ext;
                off[j] = x[j] - lo;
            }
        else if (d == 0)
            for (int j = 0; j < n; j++) {
                bad |= (uint64_t)(x[j] - lo) >= ext;
                off[j] = (x[j] - lo) * stride;
            }
        else
            for (int j = 0; j < n; j++) {
                bad |= (uint64_t)(x[j] - lo) >= ext;
                off[j] += (x[j] - lo) * stride;
            }
    }
    if (bad)
        lane_out_of_region(c, g, b, ndims, coord, n, what, name);
}

static void exec_load(ev_ctx *c, ev_prog *g, const ev_instr *in, int n)
{
    const sc_func *callee = in->e->func;
    const sc_buffer *b = c->buf[callee->id];
    if (!b)
        ev_bug("%s reads %s, which is not computed", c->cur->name, callee->name);
    lane_offsets(c, g, b, callee->ndims, in->arg, n, "reads ", callee->name);
    const int64_t *off = c->off;
    ev_lanes *o = &g->slot[in->out];
    const void *d = b->data;
    switch (b->type) {
    case SC_BOOL:
    case SC_U8:  LOOP(o->i[j] = ((const uint8_t *)d)[off[j]]);
    case SC_U16: LOOP(o->i[j] = ((const uint16_t *)d)[off[j]]);
    case SC_U32: LOOP(o->i[j] = ((const uint32_t *)d)[off[j]]);
    case SC_I8:  LOOP(o->i[j] = ((const int8_t *)d)[off[j]]);
    case SC_I16: LOOP(o->i[j] = ((const int16_t *)d)[off[j]]);
    case SC_I32: LOOP(o->i[j] = ((const int32_t *)d)[off[j]]);
    case SC_F32: LOOP(o->f[j] = ((const float *)d)[off[j]]);
    default:     ev_bug("load of type %s", sc_type_name(b->type));
    }
}

/* Stores the program's value at its left-hand side coordinates.  Integer
 * values are already wrapped to the Func's type, so the conversions below
 * are exact. */
static void exec_store(ev_ctx *c, ev_prog *g, sc_buffer *b, int n)
{
    lane_offsets(c, g, b, g->nlhs, g->lhs, n, "stores", "");
    const int64_t *off = c->off;
    const ev_lanes *v = &g->slot[g->value];
    void *d = b->data;
    switch (b->type) {
    case SC_BOOL:
    case SC_U8:  LOOP(((uint8_t *)d)[off[j]] = (uint8_t)v->i[j]);
    case SC_U16: LOOP(((uint16_t *)d)[off[j]] = (uint16_t)v->i[j]);
    case SC_U32: LOOP(((uint32_t *)d)[off[j]] = (uint32_t)v->i[j]);
    case SC_I8:  LOOP(((int8_t *)d)[off[j]] = (int8_t)v->i[j]);
    case SC_I16: LOOP(((int16_t *)d)[off[j]] = (int16_t)v->i[j]);
    case SC_I32: LOOP(((int32_t *)d)[off[j]] = (int32_t)v->i[j]);
    case SC_F32: LOOP(((float *)d)[off[j]] = v->f[j]);
    default:     ev_bug("store of type %s", sc_type_name(b->type));
    }
}

#undef LOOP

/* Runs the program over lanes [0, n) and stores the results. */
static void prog_run(ev_ctx *c, ev_prog *g, sc_buffer *dst, int n)
{
    for (int k = 0; k < g->ncode; k++) {
        const ev_instr *in = &g->code[k];
        switch (in->e->kind) {
        case E_BINARY: exec_binary(g, in, n); break;
        case E_UNARY:  exec_unary(g, in, n); break;
        case E_CAST:   exec_cast(g, in, n); break;
        case E_SELECT: exec_select(g, in, n); break;
        case E_MATH:   exec_math(g, in, n); break;
        case E_CALL:   exec_load(c, g, in, n); break;
        default:       ev_bug("node kind %d in a program", in->e->kind);
        }
    }
    exec_store(c, g, dst, n);
}

/* ---- stages and Funcs ----------------------------------------------------- */

/*
 * Runs stage s of f (see the batching paragraph at the top).  Pure loops
 * span the Func's region in their dimension; reduction loops its domain.
 */
static void run_stage(ev_ctx *c, const sc_func *f, int s, const bounds_func *r)
{
    const ir_stage *st = &f->stages[s];
    int which[2 * SC_MAX_DIMS];
    int nloops = ir_stage_loops(f, s, which);
    int npure = 0;
    while (npure < nloops && which[npure] >= 0)
        npure++;

    int64_t pmin[SC_MAX_DIMS], pext[SC_MAX_DIMS], total = 1;
    for (int i = 0; i < npure; i++) {
        pmin[i] = r->min[which[i]];
        pext[i] = r->extent[which[i]];
        total *= pext[i];
    }
    int nred = nloops - npure;
    int64_t rmin[SC_MAX_DIMS], rext[SC_MAX_DIMS];
    for (int i = 0; i < nred; i++) {
        int d = -1 - which[npure + i];
        if (which[npure + i] >= 0 || !st->rdom || d >= st->rdom->ndims)
            ev_bug("bad loops for stage %d of %s", s, f->name);
        rmin[i] = st->rdom->min[d];
        rext[i] = st->rdom->extent[d];
        if (rext[i] <= 0)
            return;
    }

    ev_prog g;
    prog_compile(&g, f, s, nloops, which);
    sc_buffer *dst = c->buf[f->id];
    int64_t pc[SC_MAX_DIMS];
    for (int64_t k0 = 0; k0 < total; k0 += EV_LANES) {
        int n = total - k0 < EV_LANES ? (int)(total - k0) : EV_LANES;
        /* Decode the chunk's first point, then count up, dim 0 fastest. */
        int64_t rest = k0;
        for (int i = 0; i < npure; i++) {
            pc[i] = rest % pext[i];
            rest /= pext[i];
        }
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < npure; i++)
                g.slot[i].i[j] = pmin[i] + pc[i];
            for (int i = 0; i < npure && ++pc[i] == pext[i]; i++)
                pc[i] = 0;
        }
        if (nred == 0) {
            prog_run(c, &g, dst, n);
            continue;
        }
        /* The reduction domain in order; a dimension's lanes are refilled
         * only when its coordinate changes. */
        int64_t rc[SC_MAX_DIMS];
        int changed = nred;               /* dims [0, changed) to refill */
        for (int i = 0; i < nred; i++)
            rc[i] = 0;
        for (;;) {
            for (int i = 0; i < changed; i++) {
                int64_t v = rmin[i] + rc[i];
                int64_t *x = g.slot[npure + i].i;
                for (int j = 0; j < n; j++)
                    x[j] = v;
            }
            prog_run(c, &g, dst, n);
            int i = 0;
            while (i < nred && ++rc[i] == rext[i])
                rc[i++] = 0;
            if (i == nred)
                break;
            changed = i + 1;
        }
    }
    prog_free(&g);
}

static int region_empty(const bounds_func *r)
{
    for (int d = 0; d < r->ndims; d++)
        if (r->extent[d] <= 0)
            return 1;
    return 0;
}

/* Checks an input buffer against its declaration and the region that the
 * pipeline reads of it. */
static int check_input(sc_pipeline *p, const sc_func *f, const sc_buffer *in,
                       const bounds_func *r)
{
    sc_pipeline_set_loc(p, f->loc.file, f->loc.line, f->loc.col);
    if (!in) {
        sc_error(p, "no buffer for input %s", f->name);
        return -1;
    }
    if (in->type != f->type || in->ndims != f->ndims) {
        sc_error(p, "input %s: buffer is %s with %d dimensions, expected %s with %d",
                 f->name, sc_type_name(in->type), in->ndims,
                 sc_type_name(f->type), f->ndims);
        return -1;
    }
    for (int d = 0; d < f->ndims; d++) {
        if (in->extent[d] != f->extent[d]) {
            sc_error(p, "input %s: buffer extent %d in dimension %d, expected %d",
                     f->name, in->extent[d], d, f->extent[d]);
            return -1;
        }
        if (!region_empty(r) && (r->min[d] < in->min[d] ||
                                 r->min[d] + r->extent[d] > (int64_t)in->min[d] + in->extent[d])) {
            sc_error(p, "input %s: buffer covers [%d, %lld) in dimension %d, "
                     "the pipeline reads [%lld, %lld)", f->name, in->min[d],
                     (long long)in->min[d] + in->extent[d], d,
                     (long long)r->min[d], (long long)(r->min[d] + r->extent[d]));
            return -1;
        }
    }
    return 0;
}

/* A zeroed buffer over f's region, or NULL with an error recorded.  A
 * 0-dimensional Func (a scalar) gets a buffer of one element. */
static sc_buffer *alloc_region(sc_pipeline *p, const sc_func *f, const bounds_func *r)
{
    int min[SC_MAX_DIMS] = {0}, ext[SC_MAX_DIMS] = {1};
    sc_pipeline_set_loc(p, f->loc.file, f->loc.line, f->loc.col);
    for (int d = 0; d < f->ndims; d++) {
        if (r->min[d] < INT_MIN || r->min[d] > INT_MAX || r->extent[d] > INT_MAX) {
            sc_error(p, "region of %s is too large in dimension %d", f->name, d);
            return NULL;
        }
        min[d] = (int)r->min[d];
        ext[d] = (int)r->extent[d];
    }
    sc_buffer *b = sc_buffer_new(f->type, f->ndims ? f->ndims : 1, min, ext);
    if (!b)
        sc_error(p, "cannot allocate the region of %s (%s, too large?)",
                 f->name, sc_type_name(f->type));
    return b;
}

/* outputs[i]: [0, out_extent) of the Func's buffer, which covers it (a
 * scalar output is a buffer of one element). */
static sc_buffer *copy_output(sc_pipeline *p, const sc_func *f, const sc_buffer *src)
{
    static const int one[SC_MAX_DIMS] = {1};
    sc_buffer *o = f->ndims ? sc_buffer_new(f->type, f->ndims, NULL, f->out_extent)
                            : sc_buffer_new(f->type, 1, NULL, one);
    if (!o) {
        sc_error(p, "cannot allocate output %s", f->name);
        return NULL;
    }
    size_t es = sc_type_size(f->type);
    int64_t count = sc_buffer_count(o);
    int coord[SC_MAX_DIMS] = {0};
    for (int d = 0; d < f->ndims; d++)
        if (src->min[d] > 0 || (int64_t)src->min[d] + src->extent[d] < f->out_extent[d])
            ev_bug("region of output %s does not cover its output size", f->name);
    for (int64_t k = 0; k < count; k += o->extent[0]) {
        int64_t soff = 0;
        for (int d = 1; d < o->ndims; d++)
            soff += (coord[d] - src->min[d]) * src->stride[d];
        for (int x = 0; x < o->extent[0]; x++)
            memcpy((char *)o->data + (size_t)(k + x) * es,
                   (const char *)src->data +
                       (size_t)(soff + (x - src->min[0]) * src->stride[0]) * es, es);
        for (int d = 1; d < o->ndims && ++coord[d] == o->extent[d]; d++)
            coord[d] = 0;
    }
    return o;
}

/*
 * Funcs in topological order; each intermediate buffer is freed as soon as
 * the last Func that reads it has been computed.
 */
int eval_pipeline(sc_pipeline *p, const bounds_result *b,
                  sc_buffer *const *inputs, sc_buffer **outputs)
{
    int nf = p->funcs.n, nout = p->outputs.n, rc = -1;
    ev_ctx *c = xrealloc(NULL, sizeof *c);
    sc_buffer **buf = xrealloc(NULL, (size_t)nf * sizeof *buf);
    int *last = xrealloc(NULL, (size_t)nf * sizeof *last);
    for (int i = 0; i < nout; i++)
        outputs[i] = NULL;
    for (int i = 0; i < nf; i++)
        buf[i] = NULL;
    c->buf = buf;

    /* last[id]: position in p->order of the last Func reading id. */
    for (int k = 0; k < nf; k++)
        last[k] = -1;
    for (int k = 0; k < p->order.n; k++) {
        sc_func *f = ir_order_at(p, k);
        ev_dag dag = {0};
        last[f->id] = k;                  /* unread: free right away */
        dag_add_func(&dag, f);
        for (int i = 0; i < dag.n; i++)
            if (dag.node[i]->kind == E_CALL)
                last[dag.node[i]->func->id] = k;
        dag_free(&dag);
    }

    for (int k = 0; k < p->order.n; k++) {
        sc_func *f = ir_order_at(p, k);
        const bounds_func *r = &b->funcs[f->id];
        if (f->kind == FUNC_INPUT) {
            buf[f->id] = inputs[f->input_index - 1];
            if (check_input(p, f, buf[f->id], r) < 0)
                goto done;
        } else if (!region_empty(r)) {
            c->cur = f;
            if (!(buf[f->id] = alloc_region(p, f, r)))
                goto done;
            for (int s = 0; s < f->nstages; s++)
                run_stage(c, f, s, r);
        }
        for (int i = 0; i < p->order.n; i++) {
            sc_func *g = ir_order_at(p, i);
            if (last[g->id] == k && g->kind != FUNC_INPUT && !g->is_output) {
                sc_buffer_free(buf[g->id]);
                buf[g->id] = NULL;
            }
        }
    }

    for (int i = 0; i < nout; i++) {
        const sc_func *f = p->outputs.items[i];
        const sc_buffer *src = buf[f->id];
        if (!src)
            ev_bug("output %s was not computed", f->name);
        if (!(outputs[i] = copy_output(p, f, src)))
            goto done;
    }
    rc = 0;
done:
    if (rc < 0)
        for (int i = 0; i < nout; i++) {
            sc_buffer_free(outputs[i]);
            outputs[i] = NULL;
        }
    for (int i = 0; i < nf; i++)
        if (((sc_func *)p->funcs.items[i])->kind != FUNC_INPUT)
            sc_buffer_free(buf[i]);
    free(buf);
    free(last);
    free(c);
    return rc;
}
