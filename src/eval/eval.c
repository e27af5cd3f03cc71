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
 *  - Math on f32: sqrtf floorf ceilf; exp log pow sin cos tanh atan2 as in scmath.h;
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
 * previous write.  For the same reason chunks are independent, and run in
 * parallel when built with OpenMP, each thread with its own lane arrays.
 *
 * Each point's operations are exactly those of its expression, in its
 * order, whatever the chunk; only the work around them is saved.
 * (1) Hoisting: an instruction that depends on no reduction variable and
 * reads no value of the Func itself runs once per chunk, before the
 * reduction loop.  (2) An instruction that depends on no pure loop that
 * changes within the chunk runs on lane 0, copied to the other lanes
 * where they are read.  (3) Accesses: a coordinate that is affine in the
 * loop variables (built with + - * by a constant and casts, with no
 * wrapping anywhere over the loop box, checked when compiling) and stays
 * inside the buffer over the whole loop box needs no lanes and no checks:
 * such coordinates give a per-chunk offset array for the pure loops
 * (shared by accesses with the same steps, read as such when contiguous
 * or uniform) plus one number per reduction point.  A coordinate that
 * depends on no pure loop is read from lane 0; others from every lane;
 * both are checked.  (4) Integer / and % by a constant power of two are
 * a shift and a mask.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scmath.h"
#include "eval.h"

/* Chunks of a stage run in parallel when built with OpenMP. */
#ifdef _OPENMP
#define EV_OMP(directive) _Pragma(directive)
#else
#define EV_OMP(directive)
#endif

#define EV_LANES 1024

/* stmt for each lane j of [0, n); a full chunk has a constant count (which
 * -O2 vectorizes). */
#define LANES(stmt) { if (n == EV_LANES) for (int j = 0; j < EV_LANES; j++) { stmt; } \
    else for (int j = 0; j < n; j++) { stmt; } }

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
static void wrap_lanes(int64_t *restrict v, int n, sc_type t)
{
#define WRAP(expr) LANES(int64_t x = v[j]; v[j] = (expr)) break
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


/* The loops of a stage (ir_stage_loops: pure loops first, then the
 * reduction domain's, dim 0 first) and the box they span. */
typedef struct {
    int n, npure;
    int which[2 * SC_MAX_DIMS];
    int64_t min[2 * SC_MAX_DIMS], ext[2 * SC_MAX_DIMS];
} ev_loops;

typedef struct {
    const sc_expr *e;
    int out;                          /* result slot */
    int arg[SC_MAX_DIMS];             /* operand slots (those read) */
    int acc;                          /* loads: their access (-1: no buffer) */
    int shift;                        /* / and % by a constant 2^shift, or -1 */
    unsigned dep;                     /* the pure loops it depends on */
    bool bcast;                       /* if dep == 0: copy lane 0 to every lane */
} ev_instr;

/*
 * An access (a load or the store).  The element offset, in its buffer, of
 * the point that lane j reads or writes is the sum of the offsets of its
 * coordinates, each of one of three kinds.  Affine ones (inside the buffer
 * over the whole loop box) together give q[j] + base + sum_i kred[i] * u_i,
 * where q is the pure part of the access' index class (the same for every
 * access with the same offset step per pure loop, computed once per
 * chunk), u_i is reduction loop i's counter (its value minus its min), and
 * base is their offset at the first point of the loop box.  Uniform ones
 * (umask: the same in every lane) are read from lane 0 of their slot, and
 * the others (lmask) from every lane; both are checked when read.
 */
typedef struct {
    int cls;
    unsigned umask, lmask;
    int64_t base;
    int64_t kred[SC_MAX_DIMS];
} ev_access;

/* Patterns of a class's pure offsets over a chunk. */
enum { EV_GATHER, EV_CONTIG, EV_UNIFORM };

typedef struct {
    ev_loops L;
    int npre, ncode;                  /* code[0, npre): once per chunk */
    ev_instr *code;
    int nslots;                       /* [0, L.n) are the loop variables */
    int nleaves;
    struct ev_leaf { int slot; const sc_expr *e; } *leaf;   /* constants, params */
    bool fill_pure[SC_MAX_DIMS];      /* loop slots that are read */
    bool fill_red[SC_MAX_DIMS];
    int value;                        /* slot of the value stored */
    int lhs[SC_MAX_DIMS];             /* slots of the store coordinates */
    int store;                        /* the store's access */
    int nacc, ncls;
    ev_access *acc;
    int64_t (*cls)[SC_MAX_DIMS];      /* offset step per pure loop of a class */
} ev_prog;

static void prog_free(ev_prog *g)
{
    free(g->code);
    free(g->leaf);
    free(g->acc);
    free(g->cls);
}

typedef struct {
    sc_buffer **buf;                  /* by func id: inputs (borrowed) or owned */
    const sc_func *cur;               /* the Func being computed */
} ev_ctx;

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

/* The value of an integer constant or parameter. */
static int64_t leaf_int(const sc_expr *e)
{
    int64_t lo, hi;
    type_range(e->type, &lo, &hi);
    return e->kind == E_PARAM ? sat_trunc(e->param->value, lo, hi) : wrap1(e->c.i, e->type);
}

/* The value of a constant or parameter broadcast over every lane. */
static void fill_leaf(ev_lanes *l, const sc_expr *e)
{
    if (e->type == SC_F32) {
        double v = e->kind == E_PARAM ? e->param->value : e->c.f;
        float x = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
        for (int j = 0; j < EV_LANES; j++)
            l->f[j] = x;
    } else {
        int64_t x = leaf_int(e);
        for (int j = 0; j < EV_LANES; j++)
            l->i[j] = x;
    }
}

/* ---- affine index expressions --------------------------------------------- */

/*
 * An integer node that is exactly c + sum_i k[i] * u_i over the whole loop
 * box, u_i being loop i's counter (its value minus its min): built from
 * loop variables, constants, parameters, + - negation, * by a constant and
 * integer casts, with [lo, hi] (its range over the box) inside its type's
 * range at every node, so that no operation on the way wraps.  Loops of
 * extent 1 get no coefficient.  Overflow of the arithmetic here gives up.
 */
typedef struct {
    bool ok;
    int64_t c, lo, hi;
    int64_t k[2 * SC_MAX_DIMS];
} ev_aff;

/* r += m * x; false on overflow. */
static bool aff_axpy(ev_aff *r, const ev_aff *x, int64_t m, int nloops)
{
    int64_t t;
    if (__builtin_mul_overflow(x->c, m, &t) || __builtin_add_overflow(r->c, t, &r->c))
        return false;
    for (int i = 0; i < nloops; i++)
        if (__builtin_mul_overflow(x->k[i], m, &t) || __builtin_add_overflow(r->k[i], t, &r->k[i]))
            return false;
    return true;
}

static bool aff_is_const(const ev_aff *a, int nloops)
{
    for (int i = 0; i < nloops; i++)
        if (a->k[i])
            return false;
    return a->ok;
}

/* Fills r for node e, whose operands' forms are a and b (or NULL), loop:
 * the loop of a variable.  Returns r->ok. */
static bool aff_node(ev_aff *r, const sc_expr *e, const ev_aff *a, const ev_aff *b,
                     int loop, const ev_loops *L)
{
    int nl = L->n;
    memset(r, 0, sizeof *r);
    if (e->type == SC_F32 || e->type == SC_BOOL)
        return false;
    switch (e->kind) {
    case E_CONST: case E_PARAM:
        r->c = leaf_int(e);
        break;
    case E_VAR: case E_RVAR:
        r->c = L->min[loop];
        r->k[loop] = L->ext[loop] > 1;
        break;
    case E_CAST:                      /* exact if the range fits (checked below) */
        if (e->args[0]->type == SC_F32 || e->args[0]->type == SC_BOOL || !a->ok)
            return false;
        *r = *a;
        break;
    case E_UNARY:
        if (e->op != SC_NEG || !a->ok || !aff_axpy(r, a, -1, nl))
            return false;
        break;
    case E_BINARY:
        if (!a->ok || !b->ok)
            return false;
        if (e->op == SC_ADD || e->op == SC_SUB) {
            if (!aff_axpy(r, a, 1, nl) || !aff_axpy(r, b, e->op == SC_ADD ? 1 : -1, nl))
                return false;
        } else if (e->op == SC_MUL && (aff_is_const(a, nl) || aff_is_const(b, nl))) {
            bool bc = aff_is_const(b, nl);        /* x * m or m * x */
            if (!aff_axpy(r, bc ? a : b, bc ? b->c : a->c, nl))
                return false;
        } else {
            return false;
        }
        break;
    default:
        return false;
    }
    int64_t lo = r->c, hi = r->c, tlo, thi, t;
    for (int i = 0; i < nl; i++)
        if (__builtin_mul_overflow(r->k[i], L->ext[i] - 1, &t) ||
            __builtin_add_overflow(t < 0 ? lo : hi, t, t < 0 ? &lo : &hi))
            return false;
    type_range(e->type, &tlo, &thi);
    r->lo = lo;
    r->hi = hi;
    return r->ok = lo >= tlo && hi <= thi;
}

/* Per node of the DAG while compiling. */
typedef struct {
    int slot, last, acc;              /* acc: loads, their access or -1 */
    bool need, vary, bcast;
    unsigned dep;                     /* the pure loops it depends on */
    ev_aff aff;
} ev_node;

/*
 * The access of buffer b (NULL: -1) at the coordinate nodes coord[0..ndims).
 * A coordinate is affine if its form is and stays inside b over the whole
 * loop box (every point of the box is evaluated, so otherwise its lanes
 * report the bad one).  Offsets stay within b's element count: a
 * coefficient times its loop's extent - 1 is at most the coordinate's
 * range, which is inside b.
 */
static int make_access(ev_prog *g, const sc_buffer *b, int ndims, const int *coord,
                       const ev_node *nd)
{
    const ev_loops *L = &g->L;
    int64_t base = 0, k[2 * SC_MAX_DIMS] = {0};
    unsigned umask = 0, lmask = 0;
    if (!b)
        return -1;
    for (int d = 0; d < ndims; d++) {
        const ev_aff *a = &nd[coord[d]].aff;
        if (!a->ok || a->lo < b->min[d] || a->hi >= (int64_t)b->min[d] + b->extent[d]) {
            *(nd[coord[d]].dep ? &lmask : &umask) |= 1u << d;
            continue;
        }
        base += (a->c - b->min[d]) * b->stride[d];
        for (int i = 0; i < L->n; i++)
            k[i] += a->k[i] * b->stride[d];
    }
    ev_access *acc = &g->acc[g->nacc];
    acc->base = base;
    acc->umask = umask;
    acc->lmask = lmask;
    for (int i = L->npure; i < L->n; i++)
        acc->kred[i - L->npure] = k[i];
    for (acc->cls = 0; acc->cls < g->ncls; acc->cls++)
        if (!memcmp(g->cls[acc->cls], k, (size_t)L->npure * sizeof *k))
            break;
    if (acc->cls == g->ncls)
        memcpy(g->cls[g->ncls++], k, (size_t)L->npure * sizeof *k);
    return g->nacc++;
}

/* ---- compiling a stage ---------------------------------------------------- */

static unsigned acc_reads(const ev_access *a)
{
    return a->umask | a->lmask;
}

static bool is_leaf(const sc_expr *e)
{
    return e->kind == E_VAR || e->kind == E_RVAR || e->kind == E_CONST || e->kind == E_PARAM;
}

/*
 * Compiles stage s of f over the loops g->L into g.  Every load and the
 * store become accesses (ev_access), which read no lanes for their affine
 * coordinates: nodes read only by those are dropped.  An instruction that
 * depends on no reduction variable and reads no value of f itself goes in
 * the prologue, run once per chunk; the others in the body, run once per
 * reduction point.  An instruction records the pure loops it depends on
 * (see run_code); one that depends on none is copied to every lane only if
 * an instruction or the store reads every lane of it.  Loop variables are
 * slots [0, L.n); every other node gets a slot, an instruction's result
 * slot being taken before its operands' are released (results never alias
 * operands); prologue results read by the body, the value and the store's
 * coordinates live to the end.
 */
static void prog_compile(ev_prog *g, const ev_ctx *c, const sc_func *f, int s)
{
    const ir_stage *st = &f->stages[s];
    const ev_loops *L = &g->L;
    ev_dag dag = {0};

    EV_CHECK(st->value->type == f->type && st->nargs == f->ndims, st->value);
    for (int i = 0; i < st->nargs; i++)
        EV_CHECK(st->args[i]->type != SC_F32, st->args[i]);
    dag_add(&dag, st->value);
    for (int i = 0; i < st->nargs; i++)
        dag_add(&dag, st->args[i]);
    int n = dag.n, nfree = 0, value = dag_find(&dag, st->value), lhs[SC_MAX_DIMS];
    for (int i = 0; i < st->nargs; i++)
        lhs[i] = dag_find(&dag, st->args[i]);
    ev_node *nd = xrealloc(NULL, (size_t)n * sizeof *nd);
    int *order = xrealloc(NULL, (size_t)n * sizeof *order);
    int *free_list = xrealloc(NULL, (size_t)n * sizeof *free_list);
    g->acc = xrealloc(NULL, (size_t)(n + 1) * sizeof *g->acc);
    g->cls = xrealloc(NULL, (size_t)(n + 1) * sizeof *g->cls);
    g->code = xrealloc(NULL, (size_t)n * sizeof *g->code);
    g->leaf = xrealloc(NULL, (size_t)n * sizeof *g->leaf);

#define ARG(k, i) dag_find(&dag, dag.node[k]->args[i])
    /* Whether node k reads its operand i: an access only its non-affine
     * coordinates. */
#define READS(k, i) (nd[k].acc < 0 || acc_reads(&g->acc[nd[k].acc]) >> (i) & 1)
    /* Loop slots, affine forms, what varies over the reduction domain,
     * the pure loops each node depends on, accesses. */
    for (int k = 0; k < n; k++) {
        const sc_expr *e = dag.node[k];
        ev_node *x = &nd[k];
        memset(x, 0, sizeof *x);
        x->slot = x->acc = -1;
        if (e->kind == E_VAR) {
            for (int i = 0; i < L->npure && x->slot < 0; i++)
                if (strcmp(f->vars[L->which[i]], e->name) == 0)
                    x->slot = i;
            EV_CHECK(x->slot >= 0, e);
        } else if (e->kind == E_RVAR) {
            EV_CHECK(e->rdom == st->rdom, e);
            for (int i = L->npure; i < L->n; i++)
                if (L->which[i] == -1 - e->dim)
                    x->slot = i;
            EV_CHECK(x->slot >= 0, e);
        } else if (!is_leaf(e)) {
            check_types(e);
        }
        aff_node(&x->aff, e, e->nargs > 0 ? &nd[ARG(k, 0)].aff : NULL,
                 e->nargs > 1 ? &nd[ARG(k, 1)].aff : NULL, x->slot, L);
        bool self = s > 0 && e->kind == E_CALL && e->func == f;
        int coord[SC_MAX_DIMS];
        x->vary = e->kind == E_RVAR || self;
        x->dep = e->kind == E_VAR ? 1u << x->slot : self ? ~0u : 0;
        for (int i = 0; i < e->nargs; i++) {
            coord[i] = ARG(k, i);
            x->vary |= nd[coord[i]].vary;
            x->dep |= nd[coord[i]].dep;
        }
        if (e->kind == E_CALL)
            x->acc = make_access(g, c->buf[e->func->id], e->nargs, coord, nd);
    }
    g->store = make_access(g, c->buf[f->id], st->nargs, lhs, nd);
    unsigned lhs_read = acc_reads(&g->acc[g->store]);

    /* What is needed: the value, the store's coordinates it reads, and
     * what needed instructions read. */
    nd[value].need = true;
    for (int i = 0; i < st->nargs; i++)
        nd[lhs[i]].need |= lhs_read >> i & 1;
    for (int k = n - 1; k >= 0; k--)
        for (int i = 0; nd[k].need && i < dag.node[k]->nargs; i++)
            nd[ARG(k, i)].need |= READS(k, i);

    /* The prologue, then the body, each in post-order. */
    g->ncode = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < n; k++)
            if (nd[k].need && !is_leaf(dag.node[k]) && nd[k].vary == pass)
                order[g->ncode++] = k;
        if (pass == 0)
            g->npre = g->ncode;
    }

    /* Last reader of each node (a position in order); leaves, roots and
     * prologue results read by the body live to the end.  Which results
     * are read in every lane by an instruction or the store. */
    for (int k = 0; k < n; k++)
        nd[k].last = is_leaf(dag.node[k]) ? INT_MAX : -1;
    for (int p = 0; p < g->ncode; p++) {
        int k = order[p];
        for (int i = 0; i < dag.node[k]->nargs; i++) {
            ev_node *a = &nd[ARG(k, i)];
            if (!READS(k, i))
                continue;
            a->bcast |= nd[k].dep && nd[k].acc < 0;
            if (a->last != INT_MAX)
                a->last = p >= g->npre && !a->vary ? INT_MAX : p;
        }
    }
    nd[value].last = INT_MAX;
    nd[value].bcast = true;
    for (int i = 0; i < st->nargs; i++)
        nd[lhs[i]].last = INT_MAX;

    /* Slots: loop variables, then needed constants and parameters, then
     * temporaries. */
    g->nslots = L->n;
    g->nleaves = 0;
    for (int k = 0; k < n; k++) {
        const sc_expr *e = dag.node[k];
        if (nd[k].need && (e->kind == E_CONST || e->kind == E_PARAM)) {
            g->leaf[g->nleaves].e = e;
            g->leaf[g->nleaves++].slot = nd[k].slot = g->nslots++;
        }
        if (e->kind == E_VAR && nd[k].need)
            g->fill_pure[nd[k].slot] = true;
        if (e->kind == E_RVAR && nd[k].need)
            g->fill_red[nd[k].slot - L->npure] = true;
    }
    for (int p = 0; p < g->ncode; p++) {
        int k = order[p];
        ev_instr *in = &g->code[p];
        in->e = dag.node[k];
        in->out = nd[k].slot = nfree ? free_list[--nfree] : g->nslots++;
        in->acc = nd[k].acc;
        in->dep = nd[k].dep;
        in->bcast = nd[k].bcast;
        in->shift = -1;
        if (in->e->kind == E_BINARY && nd[ARG(k, 1)].aff.ok) {
            int64_t v = nd[ARG(k, 1)].aff.lo;
            if (v > 0 && v == nd[ARG(k, 1)].aff.hi && !(v & (v - 1)))
                in->shift = __builtin_ctzll((unsigned long long)v);
        }
        for (int i = 0; i < in->e->nargs; i++) {
            ev_node *a = &nd[ARG(k, i)];
            if (!READS(k, i))
                continue;
            in->arg[i] = a->slot;
            if (a->last == p) {
                free_list[nfree++] = a->slot;
                a->last = -1;           /* released once even if read twice */
            }
        }
    }
#undef ARG
#undef READS
    g->value = nd[value].slot;
    for (int i = 0; i < st->nargs; i++)
        g->lhs[i] = nd[lhs[i]].slot;
    free(nd);
    free(order);
    free(free_list);
    dag_free(&dag);
}

/* ---- instructions --------------------------------------------------------- */

/* What one thread needs to run a program over a chunk. */
typedef struct {
    ev_lanes *slot;                   /* the program's slots */
    int64_t (*q)[EV_LANES];           /* per index class: pure offsets */
    int *pat;                         /* per index class: EV_GATHER ... */
    int64_t rc[SC_MAX_DIMS];          /* reduction loop counters, from 0 */
    int64_t off[EV_LANES];            /* offsets of an access with lane coordinates */
    unsigned char carry[EV_LANES];    /* the pure loop that steps after a lane */
    unsigned steps;                   /* the pure loops that change in the chunk */
} ev_work;

static ev_work *work_new(const ev_prog *g)
{
    ev_work *w = xrealloc(NULL, sizeof *w);
    w->slot = xrealloc(NULL, (size_t)g->nslots * sizeof *w->slot);
    w->q = xrealloc(NULL, (size_t)g->ncls * sizeof *w->q);
    w->pat = xrealloc(NULL, (size_t)g->ncls * sizeof *w->pat);
    for (int i = 0; i < g->nleaves; i++)
        fill_leaf(&w->slot[g->leaf[i].slot], g->leaf[i].e);
    return w;
}

static void work_free(ev_work *w)
{
    free(w->slot);
    free(w->q);
    free(w->pat);
    free(w);
}

#define LOOP(stmt) LANES(stmt) break

static void exec_binary_f32(int op, ev_lanes *out, const float *restrict x,
                            const float *restrict y, int n)
{
    float *restrict o = out->f;
    int64_t *restrict ob = out->i;        /* comparisons */
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
static void exec_binary_int(int op, sc_type t, int shift, int64_t *restrict o,
                            const int64_t *restrict x, const int64_t *restrict y, int n)
{
    int bits = sc_type_bits(t);
    int64_t mask = shift >= 0 ? ((int64_t)1 << shift) - 1 : 0;
    switch (op) {
    case SC_ADD: LOOP(o[j] = x[j] + y[j]);
    case SC_SUB: LOOP(o[j] = x[j] - y[j]);
    case SC_MUL: LOOP(o[j] = (int64_t)(((uint64_t)x[j] * (uint64_t)y[j]) & 0xffffffffu));
    case SC_DIV:
        if (shift >= 0) {                 /* floor(x / 2^shift) */
            LOOP(o[j] = shift_right(x[j], shift, 64));
        }
        LOOP(o[j] = div_euclid(x[j], y[j]));
    case SC_MOD:
        if (shift >= 0) {
            LOOP(o[j] = x[j] & mask);
        }
        LOOP(o[j] = mod_euclid(x[j], y[j]));
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

/* Operands and results are restrict parameters (results never alias
 * operands), which lets -O2 vectorize the loops below. */
static void exec_binary(const ev_instr *in, ev_lanes *restrict o, const ev_lanes *restrict a,
                        const ev_lanes *restrict b, int n)
{
    sc_type t = in->e->args[0]->type;
    if (t == SC_F32)
        exec_binary_f32(in->e->op, o, a->f, b->f, n);
    else
        exec_binary_int(in->e->op, t, in->shift, o->i, a->i, b->i, n);
}

static void exec_unary(const ev_instr *in, ev_lanes *restrict o, const ev_lanes *restrict a,
                       int n)
{
    if (in->e->type == SC_F32) {          /* only negation (check_types) */
        LANES(o->f[j] = -a->f[j]);
        return;
    }
    switch (in->e->op) {
    case SC_NEG:    LOOP(o->i[j] = -a->i[j]);
    case SC_NOT:    LOOP(o->i[j] = !a->i[j]);
    case SC_BITNOT: LOOP(o->i[j] = ~a->i[j]);
    default:        ev_bug("unary operator %d", in->e->op);
    }
    wrap_lanes(o->i, n, in->e->type);
}

static void exec_cast(const ev_instr *in, ev_lanes *restrict o, const ev_lanes *restrict a,
                      int n)
{
    sc_type to = in->e->type, from = in->e->args[0]->type;
    int64_t lo, hi;
    if (from == SC_F32 && to == SC_F32) {
        memcpy(o->f, a->f, (size_t)n * sizeof(float));
    } else if (from == SC_F32 && to == SC_BOOL) {
        LANES(o->i[j] = a->f[j] != 0);
    } else if (from == SC_F32) {
        type_range(to, &lo, &hi);
        LANES(o->i[j] = sat_trunc(a->f[j], lo, hi));
    } else if (to == SC_F32) {
        LANES(o->f[j] = (float)a->i[j]);
    } else {
        memcpy(o->i, a->i, (size_t)n * sizeof(int64_t));
        wrap_lanes(o->i, n, to);          /* bool: != 0 */
    }
}

static void exec_select(const ev_instr *in, ev_lanes *restrict o, const ev_lanes *restrict c,
                        const ev_lanes *restrict t, const ev_lanes *restrict f, int n)
{
    if (in->e->type == SC_F32)
        LANES(o->f[j] = c->i[j] ? t->f[j] : f->f[j])
    else
        LANES(o->i[j] = c->i[j] ? t->i[j] : f->i[j])
}

static void exec_math(const ev_instr *in, ev_lanes *restrict out, const ev_lanes *restrict a,
                      const ev_lanes *restrict b, int n)
{
    float *o = out->f;
    const float *x = a->f, *y = b ? b->f : NULL;
    switch (in->e->op) {
    case SC_SQRT:  LOOP(o[j] = sqrtf(x[j]));
    case SC_EXP:   LOOP(o[j] = sc_expf(x[j]));
    case SC_LOG:   LOOP(o[j] = sc_logf(x[j]));
    case SC_POW:   LOOP(o[j] = sc_powf(x[j], y[j]));
    case SC_FLOOR: LOOP(o[j] = floorf(x[j]));
    case SC_CEIL:  LOOP(o[j] = ceilf(x[j]));
    case SC_ROUND: LOOP(o[j] = rintf(x[j]));
    case SC_SIN:   LOOP(o[j] = sc_sinf(x[j]));
    case SC_COS:   LOOP(o[j] = sc_cosf(x[j]));
    case SC_TANH:  LOOP(o[j] = sc_tanhf(x[j]));
    case SC_ATAN2: LOOP(o[j] = sc_atan2f(x[j], y[j]));
    case SC_ABS:
        if (in->e->type == SC_F32) {
            LOOP(o[j] = fabsf(x[j]));
        } else {
            LANES(out->i[j] = a->i[j] < 0 ? -a->i[j] : a->i[j]);
            wrap_lanes(out->i, n, in->e->type);
        }
        break;
    default:       ev_bug("math function %d", in->e->op);
    }
}


/* ---- loads and stores ----------------------------------------------------- */

/* An access outside b (an internal bug). */
static _Noreturn void out_of_region(const ev_ctx *c, const sc_buffer *b, int d,
                                    int64_t x, const char *what, const char *name)
{
    ev_bug("%s %s%s at %lld in dimension %d, outside its region [%lld, %lld)",
           c->cur->name, what, name, (long long)x, d, (long long)b->min[d],
           (long long)b->min[d] + b->extent[d]);
}

/*
 * Where lane j's element is: data[*s + q[j]], with *pat telling whether q
 * is contiguous (q[j] == q[0] + j) or uniform.  A point outside b is a bug
 * of bounds inference (or of this evaluator): abort, naming the access
 * (what: "reads g", "stores").
 */
static const int64_t *access_offsets(const ev_ctx *c, const ev_prog *g, ev_work *w,
                                     const sc_buffer *b, int acc, const int *coord, int n,
                                     const char *what, const char *name, int64_t *s, int *pat)
{
    const ev_access *a = &g->acc[acc];
    *s = a->base;
    for (int i = 0; i < g->L.n - g->L.npure; i++)
        *s += a->kred[i] * w->rc[i];
    for (int d = 0; a->umask >> d; d++)
        if (a->umask >> d & 1) {
            int64_t x = w->slot[coord[d]].i[0];
            if ((uint64_t)(x - b->min[d]) >= (uint64_t)b->extent[d])
                out_of_region(c, b, d, x, what, name);
            *s += (x - b->min[d]) * b->stride[d];
        }
    *pat = w->pat[a->cls];
    const int64_t *restrict q = w->q[a->cls];
    if (!a->lmask)
        return q;
    int64_t *restrict off = w->off, q0 = q[0];
    uint64_t bad = 0;
    if (*pat == EV_CONTIG)
        LANES(off[j] = q0 + j)
    else if (*pat == EV_UNIFORM)
        LANES(off[j] = q0)
    else
        memcpy(off, q, (size_t)n * sizeof *off);
    for (int d = 0; a->lmask >> d; d++) {
        const int64_t *restrict x = w->slot[coord[d]].i;
        int64_t lo = b->min[d], stride = b->stride[d];
        uint64_t ext = (uint64_t)b->extent[d];
        if (a->lmask >> d & 1)
            LANES(bad |= (uint64_t)(x[j] - lo) >= ext; off[j] += (x[j] - lo) * stride)
    }
    for (int d = 0; bad && a->lmask >> d; d++)
        for (int j = 0; (a->lmask >> d & 1) && j < n; j++)
            if ((uint64_t)(w->slot[coord[d]].i[j] - b->min[d]) >= (uint64_t)b->extent[d])
                out_of_region(c, b, d, w->slot[coord[d]].i[j], what, name);
    *pat = EV_GATHER;
    return off;
}

static void exec_load(const ev_ctx *c, const ev_prog *g, ev_work *w,
                      const ev_instr *in, int n)
{
    const sc_func *callee = in->e->func;
    const sc_buffer *b = c->buf[callee->id];
    if (!b)
        ev_bug("%s reads %s, which is not computed", c->cur->name, callee->name);
    int64_t s;
    int pat;
    const int64_t *restrict q = access_offsets(c, g, w, b, in->acc, in->arg, n, "reads ",
                                               callee->name, &s, &pat);
    int64_t s0 = s + q[0], *restrict oi = w->slot[in->out].i;
    float *restrict of = w->slot[in->out].f;
#define GATHER(T, lanes) { const T *restrict d = b->data;                     \
        if (pat == EV_CONTIG && sizeof(T) == sizeof *lanes)                  \
            { memcpy(lanes, d + s0, (size_t)n * sizeof(T)); break; }        \
        if (pat == EV_CONTIG) { LOOP(lanes[j] = d[s0 + j]); }               \
        if (pat == EV_UNIFORM) { T v = d[s0]; LOOP(lanes[j] = v); }         \
        LOOP(lanes[j] = d[s + q[j]]); }
    switch (b->type) {
    case SC_BOOL:
    case SC_U8:  GATHER(uint8_t, oi);
    case SC_U16: GATHER(uint16_t, oi);
    case SC_U32: GATHER(uint32_t, oi);
    case SC_I8:  GATHER(int8_t, oi);
    case SC_I16: GATHER(int16_t, oi);
    case SC_I32: GATHER(int32_t, oi);
    case SC_F32: GATHER(float, of);
    default:     ev_bug("load of type %s", sc_type_name(b->type));
    }
#undef GATHER
}

/* Stores the program's value at its left-hand side coordinates.  Integer
 * values are already wrapped to the Func's type, so the conversions below
 * are exact.  Lanes store in order (a scatter's lanes may collide). */
static void exec_store(const ev_ctx *c, const ev_prog *g, ev_work *w, sc_buffer *b, int n)
{
    int64_t s;
    int pat;
    const int64_t *restrict q = access_offsets(c, g, w, b, g->store, g->lhs, n, "stores", "",
                                               &s, &pat);
    int64_t s0 = s + q[0];
    const int64_t *restrict vi = w->slot[g->value].i;
    const float *restrict vf = w->slot[g->value].f;
#define SCATTER(T, lanes) { T *restrict d = b->data;                           \
        if (pat == EV_CONTIG && sizeof(T) == sizeof *lanes)                  \
            { memcpy(d + s0, lanes, (size_t)n * sizeof(T)); break; }        \
        if (pat == EV_CONTIG) { LOOP(d[s0 + j] = (T)lanes[j]); }            \
        LOOP(d[s + q[j]] = (T)lanes[j]); }
    switch (b->type) {
    case SC_BOOL:
    case SC_U8:  SCATTER(uint8_t, vi);
    case SC_U16: SCATTER(uint16_t, vi);
    case SC_U32: SCATTER(uint32_t, vi);
    case SC_I8:  SCATTER(int8_t, vi);
    case SC_I16: SCATTER(int16_t, vi);
    case SC_I32: SCATTER(int32_t, vi);
    case SC_F32: SCATTER(float, vf);
    default:     ev_bug("store of type %s", sc_type_name(b->type));
    }
#undef SCATTER
}

#undef LOOP

/* Runs code[from, to) over lanes [0, n). */
static void run_code(const ev_ctx *c, const ev_prog *g, ev_work *w, int from, int to, int n)
{
    for (int k = from; k < to; k++) {
        const ev_instr *in = &g->code[k];
        /* Depending on no pure loop that changes in the chunk, it is the
         * same in every lane: it runs on lane 0, copied to the others
         * unless it depends on no pure loop and nothing reads them. */
        bool one = !(in->dep & w->steps), bcast = one && (in->dep || in->bcast);
        int m = one ? 1 : n, na = in->e->kind == E_CALL ? 0 : in->e->nargs;
        ev_lanes *o = &w->slot[in->out], *a[3] = {NULL, NULL, NULL};
        for (int i = 0; i < na; i++)
            a[i] = &w->slot[in->arg[i]];
        switch (in->e->kind) {
        case E_BINARY: exec_binary(in, o, a[0], a[1], m); break;
        case E_UNARY:  exec_unary(in, o, a[0], m); break;
        case E_CAST:   exec_cast(in, o, a[0], m); break;
        case E_SELECT: exec_select(in, o, a[0], a[1], a[2], m); break;
        case E_MATH:   exec_math(in, o, a[0], a[1], m); break;
        case E_CALL:   exec_load(c, g, w, in, m); break;
        default:       ev_bug("node kind %d in a program", in->e->kind);
        }
        if (bcast && in->e->type == SC_F32) {
            float *restrict of = o->f, v = of[0];
            LANES(of[j] = v);
        } else if (bcast) {
            int64_t *restrict oi = o->i, v = oi[0];
            LANES(oi[j] = v);
        }
    }
}

/* ---- stages and Funcs ----------------------------------------------------- */

/*
 * Runs the stage over the chunk of pure points [k0, k0 + n) (flat index,
 * pure loop 0 fastest): its coordinates, the pure offsets of each index
 * class, the prologue, then the reduction domain in order (a dimension's
 * lanes refilled only when its coordinate changes), the body and the
 * store once per reduction point; a pure stage stores once.
 */
static void run_chunk(const ev_ctx *c, const ev_prog *g, ev_work *w, sc_buffer *dst,
                      int64_t k0, int n)
{
    const ev_loops *L = &g->L;
    int np = L->npure;
    int64_t pc[SC_MAX_DIMS], pc0[SC_MAX_DIMS], rest = k0;
    unsigned steps = 0;
    for (int i = 0; i < np; i++) {
        pc0[i] = pc[i] = rest % L->ext[i];
        rest /= L->ext[i];
    }
    /* Runs of lanes along loop 0; after lane j, loop carry[j] steps and
     * loops [0, carry[j]) wrap. */
    for (int j = 0, run; j < n; j += run) {
        run = np && L->ext[0] - pc[0] < n - j ? (int)(L->ext[0] - pc[0]) : n - j;
        for (int i = 0; i < np; i++) {
            int64_t *restrict x = w->slot[i].i + j, v = L->min[i] + pc[i];
            for (int t = 0; g->fill_pure[i] && t < run; t++)
                x[t] = i == 0 ? v + t : v;
        }
        memset(w->carry + j, 0, (size_t)run);
        steps |= run > 1;
        int i = 0;
        if (np)
            pc[0] += run - 1;
        while (i < np && ++pc[i] == L->ext[i])
            pc[i++] = 0;
        w->carry[j + run - 1] = (unsigned char)i;
        if (j + run < n)
            steps |= 1u << i;
    }
    w->steps = 0;                         /* loops [0, i] change when i steps */
    for (int i = 0; i < np; i++)
        if (steps >> i & 1)
            w->steps |= (2u << i) - 1;
    /* A class's offset steps by delta[i] when loop i steps after lane j. */
    for (int k = 0; k < g->ncls; k++) {
        const int64_t *step = g->cls[k];
        int64_t delta[SC_MAX_DIMS + 1] = {0}, q0 = 0, wrapped = 0;
        bool contig = true, uniform = true;
        for (int i = 0; i < np; i++) {
            q0 += step[i] * pc0[i];
            delta[i] = step[i] - wrapped;
            wrapped += step[i] * (L->ext[i] - 1);
            if (steps >> i & 1) {
                contig &= delta[i] == 1;
                uniform &= delta[i] == 0;
            }
        }
        int64_t *restrict q = w->q[k];
        q[0] = q0;
        w->pat[k] = uniform ? EV_UNIFORM : contig ? EV_CONTIG : EV_GATHER;
        for (int j = 1; w->pat[k] == EV_GATHER && j < n; j++)
            q[j] = q[j - 1] + delta[w->carry[j - 1]];
    }

    int nred = L->n - L->npure, changed = nred;
    for (int i = 0; i < nred; i++)
        w->rc[i] = 0;
    if (nred == 0) {
        run_code(c, g, w, 0, g->ncode, n);
        exec_store(c, g, w, dst, n);
        return;
    }
    run_code(c, g, w, 0, g->npre, n);
    for (;;) {
        for (int i = 0; i < changed; i++) {
            int64_t v = L->min[L->npure + i] + w->rc[i];
            int64_t *x = w->slot[L->npure + i].i;
            for (int j = 0; g->fill_red[i] && j < n; j++)
                x[j] = v;
        }
        run_code(c, g, w, g->npre, g->ncode, n);
        exec_store(c, g, w, dst, n);
        int i = 0;
        while (i < nred && ++w->rc[i] == L->ext[L->npure + i])
            w->rc[i++] = 0;
        if (i == nred)
            break;
        changed = i + 1;
    }
}

/*
 * Runs stage s of f (see the batching paragraph at the top).  Pure loops
 * span the Func's region in their dimension; reduction loops its domain.
 * Chunks are independent (distinct pure points never interact, see ir.h),
 * so they run in parallel, each thread with its own slots; an update with
 * no pure loop is a single chunk.
 */
static void run_stage(const ev_ctx *c, const sc_func *f, int s, const bounds_func *r)
{
    const ir_stage *st = &f->stages[s];
    ev_prog g = {0};
    ev_loops *L = &g.L;
    L->n = ir_stage_loops(f, s, L->which);
    while (L->npure < L->n && L->which[L->npure] >= 0)
        L->npure++;
    int64_t total = 1;
    for (int i = 0; i < L->npure; i++) {
        L->min[i] = r->min[L->which[i]];
        L->ext[i] = r->extent[L->which[i]];
        total *= L->ext[i];
    }
    for (int i = L->npure; i < L->n; i++) {
        int d = -1 - L->which[i];
        if (L->which[i] >= 0 || !st->rdom || d >= st->rdom->ndims)
            ev_bug("bad loops for stage %d of %s", s, f->name);
        L->min[i] = st->rdom->min[d];
        L->ext[i] = st->rdom->extent[d];
        if (L->ext[i] <= 0)
            return;
    }
    if (total <= 0)
        return;

    prog_compile(&g, c, f, s);
    sc_buffer *dst = c->buf[f->id];
    int64_t nchunks = (total + EV_LANES - 1) / EV_LANES;
    EV_OMP("omp parallel if (nchunks > 1)")
    {
        ev_work *w = work_new(&g);
        EV_OMP("omp for schedule(dynamic)")
        for (int64_t k = 0; k < nchunks; k++) {
            int64_t k0 = k * EV_LANES;
            run_chunk(c, &g, w, dst, k0, total - k0 < EV_LANES ? (int)(total - k0) : EV_LANES);
        }
        work_free(w);
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
