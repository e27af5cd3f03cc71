/*
 * randpipe.c - random training pipelines (randpipe.h).
 *
 * A pipeline is drawn as a chain: a pool holds every Func made so far with
 * its type, dimensionality and logical extents; each step draws the next
 * operation from a table of weights conditioned on the previous one (after
 * a convolution an activation is likely, after padding a convolution or
 * pooling), applies it to the newest Func (the spine, so every Func reaches
 * the output) and registers what it wrote.  A binary operation also reads
 * an earlier Func of the same shape, which makes diamonds and Funcs with
 * several consumers.  The structure is drawn first with extents symbolic
 * in the sizes W and H; the paper sizes are then chosen so that the
 * estimated work lands on a drawn target (docs/random_pipelines.md has the
 * calibration).
 *
 * Keeping every generated pipeline valid and its results comparable bit
 * for bit:
 *  - the input is read with every coordinate clamped (or through a
 *    boundary Func), weights through rdoms over their own extents, and the
 *    data-dependent coordinates of histograms through clamp;
 *  - values stay finite: convolution weights are normalised (unrolled taps
 *    by the sum of their magnitudes, rdom taps by a power of two at least
 *    the tap count), exp and sigmoid clamp their argument (softmax
 *    subtracts the channels' maximum first), log and sqrt take abs, scans
 *    are convex combinations;
 *  - signed integer stages only move, compare or select values, or convert
 *    them with clamps, or (the fixed-point interpolation) add, subtract and
 *    halve values they clamped to [0, 1023] first, so nothing overflows;
 *    unsigned convolutions either widen to u32 (whose sums fit) or wrap,
 *    which unsigned arithmetic defines on every back end;
 *  - every float literal is a dyadic rational printed exactly, or a small
 *    integer divisor, so the text is the same on every machine.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "randpipe.h"

/* ---- text --------------------------------------------------------------- */

typedef struct { char *s; size_t n, cap; } rp_buf;

static void buf_printf(rp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(rp_buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (w < 0) abort();
        if (b->s && (size_t)w < room) { b->n += (size_t)w; return; }
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + (size_t)w + 1) cap *= 2;
        b->s = base_realloc(b->s, cap);
        b->cap = cap;
    }
}

/* ---- random numbers: splitmix64 ------------------------------------------ */

typedef struct { uint64_t s; } rp_rng;

static uint64_t rng_next(rp_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* In [0, n). */
static int rng_below(rp_rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }
/* In [lo, hi]. */
static int rng_range(rp_rng *r, int lo, int hi) { return lo + rng_below(r, hi - lo + 1); }
/* True with probability num / den. */
static bool rng_chance(rp_rng *r, int num, int den) { return rng_below(r, den) < num; }

/* ---- types and extents ---------------------------------------------------- */

enum { T_U8, T_U16, T_I16, T_I32, T_F32, T_COUNT };
static const char *const type_names[T_COUNT] = { "u8", "u16", "i16", "i32", "f32" };

/* A logical extent: (W or H) * 2^shift + add, or the constant add. */
typedef struct { char sym; signed char shift; int add; } rp_ext;

static int64_t ext_val(rp_ext e, int64_t W, int64_t H) {
    if (!e.sym) return e.add;
    int64_t b = e.sym == 'W' ? W : H;
    b = e.shift >= 0 ? b << e.shift : b >> -e.shift;
    return b + e.add;
}

/* The extent as a .pipe expression, parenthesised unless it is one name
 * or number. */
static void ext_text(rp_ext e, char *out, size_t n) {
    if (!e.sym) { snprintf(out, n, "%d", e.add); return; }
    char base[32];
    if (e.shift > 0) snprintf(base, sizeof base, "%c * %d", e.sym, 1 << e.shift);
    else if (e.shift < 0) snprintf(base, sizeof base, "%c / %d", e.sym, 1 << -e.shift);
    else snprintf(base, sizeof base, "%c", e.sym);
    if (e.add) snprintf(out, n, "(%s %c %d)", base, e.add < 0 ? '-' : '+', abs(e.add));
    else if (e.shift) snprintf(out, n, "(%s)", base);
    else snprintf(out, n, "%s", base);
}

static bool ext_eq(rp_ext a, rp_ext b) {
    return a.sym == b.sym && (!a.sym || a.shift == b.shift) && a.add == b.add;
}

/* A multiple of 2^-k printed exactly (every such number has a finite
 * decimal expansion of at most k digits). */
static void dyadic_text(int num, int k, char *out, size_t n) {
    int64_t scale = 1, v = num < 0 ? -(int64_t)num : num;
    for (int i = 0; i < k; i++) {                /* num / 2^k = num * 5^k / 10^k */
        scale *= 10;
        v *= 5;
    }
    char frac[24];
    int64_t f = v % scale;
    int nd = k > 0 ? k : 1;
    frac[nd] = 0;
    for (int i = nd - 1; i >= 0; i--, f /= 10) frac[i] = (char)('0' + f % 10);
    snprintf(out, n, "%s%lld.%s", num < 0 ? "-" : "", (long long)(v / scale), frac);
}

/* ---- the pool ------------------------------------------------------------- */

#define RP_MAX_FUNCS 48
enum { RP_MIN_EXT = 4, RP_MAX_EXT = 256 };     /* spatial extents at small size */

typedef struct {
    char name[24];
    int type;
    int ndims;
    rp_ext ext[3];
    bool strict;                /* an input: every coordinate is clamped */
    int64_t cost;               /* estimated operations per point */
} rp_func;

typedef struct {
    rp_rng rng;
    rp_buf body;                /* definitions, in order */
    rp_buf desc;                /* "op(detail), ..." for the header */
    rp_func pool[RP_MAX_FUNCS];
    int npool;
    int funcs, target;          /* Funcs written so far, and wanted */
    int defs;
    int nnames;                 /* rdoms and weight inputs made */
    int inputs;
    int sw, sh;                 /* the small sizes */
} rp_gen;

static int64_t small_ext(const rp_gen *g, rp_ext e) { return ext_val(e, g->sw, g->sh); }

/* A fresh Func name (PREFIX and the Func's number), counting the Func and
 * its pure definition. */
static void new_func_name(rp_gen *g, const char *prefix, char *out, size_t n) {
    snprintf(out, n, "%s%d", prefix, g->funcs);
    g->funcs++;
    g->defs++;
}

/* Registers a new Func in the pool: a copy of *shape under a fresh name. */
static rp_func *add_func(rp_gen *g, const char *prefix, int type, const rp_func *shape, int64_t cost) {
    if (g->npool == RP_MAX_FUNCS) abort();
    rp_func *f = &g->pool[g->npool++];
    *f = *shape;
    new_func_name(g, prefix, f->name, sizeof f->name);
    f->type = type;
    f->strict = false;
    f->cost = cost;
    return f;
}

static void describe(rp_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void describe(rp_gen *g, const char *fmt, ...) {
    char s[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    buf_printf(&g->desc, "%s%s", g->desc.n ? ", " : "", s);
}

/* ---- expressions ------------------------------------------------------------ */

static const char *const pure_vars[3] = { "x", "y", "c" };

/* "(x, y)" or "(x, y, c)" */
static const char *pure_args(int ndims) { return ndims == 3 ? "(x, y, c)" : "(x, y)"; }

/* f at coordinates co (texts), converted to the type named as (NULL: as
 * it is) unless f already holds that type. */
static void put_acc_as(rp_buf *b, const rp_func *f, const char *const *co, const char *as) {
    bool cast = as && strcmp(as, type_names[f->type]) != 0;
    buf_printf(b, "%s%s%s(", cast ? as : "", cast ? "(" : "", f->name);
    for (int d = 0; d < f->ndims; d++) {
        if (f->strict) {
            char e[48];
            ext_text(f->ext[d], e, sizeof e);
            buf_printf(b, "%sclamp(%s, 0, %s - 1)", d ? ", " : "", co[d], e);
        } else {
            buf_printf(b, "%s%s", d ? ", " : "", co[d]);
        }
    }
    buf_printf(b, ")%s", cast ? ")" : "");
}

/* f at coordinates co; as f32 when asf and f holds integers. */
static void put_acc(rp_buf *b, const rp_func *f, const char *const *co, bool asf) {
    put_acc_as(b, f, co, asf ? "f32" : NULL);
}

/* "v", "v + 3", "v - 2" */
static void offset_text(char *out, size_t n, const char *v, int d) {
    if (!d) snprintf(out, n, "%s", v);
    else snprintf(out, n, "%s %c %d", v, d < 0 ? '-' : '+', abs(d));
}

/* f at (x + dx, y + dy[, c]), converted as put_acc_as does. */
static void put_at_as(rp_buf *b, const rp_func *f, int dx, int dy, const char *as) {
    char cx[32], cy[32];
    offset_text(cx, sizeof cx, "x", dx);
    offset_text(cy, sizeof cy, "y", dy);
    const char *co[3] = { cx, cy, "c" };
    put_acc_as(b, f, co, as);
}

/* f at (x + dx, y + dy[, c]); as f32 when asf and f holds integers. */
static void put_at(rp_buf *b, const rp_func *f, int dx, int dy, bool asf) {
    put_at_as(b, f, dx, dy, asf ? "f32" : NULL);
}

/* The body's text of one expression built in e, as "NAME(args) = e;". */
static void define(rp_gen *g, const rp_func *f, const char *op, rp_buf *e) {
    buf_printf(&g->body, "%s%s %s %s;\n", f->name, pure_args(f->ndims), op, e->s ? e->s : "");
    free(e->s);
    memset(e, 0, sizeof *e);
}

/* ---- the operations ------------------------------------------------------------
 *
 * Each applies itself to a (the newest Func), writes its definitions and
 * registers its Funcs; each returns the Funcs it wrote.  Availability (the
 * shapes and budget an operation needs) is in available(). */

/* 1-D (along x or y) or 2-D convolution with unrolled integer taps.  On
 * floats (and on signed integers, read as f32) it is normalised by the sum
 * of the taps' magnitudes, some taps negative (derivative filters).  On
 * unsigned integers it stays in integers, as image pipelines do: either
 * summed in the Func's own type, wrapping (stencil_chain's arithmetic;
 * unsigned wrap-around is exact on every back end), or widened to u32,
 * summed with the magnitudes and divided by their sum (box_blur's). */
static int op_conv_taps(rp_gen *g, const rp_func *a) {
    bool uint = a->type == T_U8 || a->type == T_U16;
    bool wrap = uint && rng_chance(&g->rng, 1, 2);
    int dims = rng_below(&g->rng, 3);           /* 0: x, 1: y, 2: both */
    int R = dims == 2 ? rng_range(&g->rng, 1, 2) : rng_range(&g->rng, 1, 5);
    int n = 2 * R + 1, ntaps = dims == 2 ? n * n : n, sum = 0;
    rp_buf e = {0};
    buf_printf(&e, uint && !wrap ? "%s((" : "(", type_names[a->type]);
    for (int i = 0; i < ntaps; i++) {
        int w = rng_range(&g->rng, 1, 4);
        if (rng_chance(&g->rng, 1, 5) && !(uint && !wrap)) w = -w;
        sum += abs(w);
        int dx = dims == 0 ? i - R : dims == 2 ? i % n - R : 0;
        int dy = dims == 1 ? i - R : dims == 2 ? i / n - R : 0;
        if (i) buf_printf(&e, " %c ", w < 0 ? '-' : '+');
        else if (w < 0) buf_printf(&e, uint ? "0 - " : "-");   /* no negative unsigned literal */
        if (abs(w) != 1) buf_printf(&e, "%d * ", abs(w));
        put_at_as(&e, a, dx, dy, !uint ? "f32" : wrap ? NULL : "u32");
    }
    if (!uint) buf_printf(&e, ") / %d.0", sum);
    else if (wrap) buf_printf(&e, ")");
    else buf_printf(&e, ") / %d)", sum);
    rp_func *f = add_func(g, "conv", uint ? a->type : T_F32, a, 2 * ntaps + 2);
    define(g, f, "=", &e);
    describe(g, "conv_taps(%s r%d%s)", dims == 2 ? "2-D" : dims ? "y" : "x", R,
             !uint ? "" : wrap ? " wrapping" : " widened");
    return 1;
}

/* Convolution over a reduction domain with weights from an input,
 * scaled by 1/P, P the power of two at or above the tap count. */
static int op_conv_rdom(rp_gen *g, const rp_func *a) {
    int dims = rng_below(&g->rng, 3);
    int R = rng_range(&g->rng, 1, 5);
    if (dims == 2 && R > 3 && rng_chance(&g->rng, 1, 2)) R = rng_range(&g->rng, 1, 3);
    int n = 2 * R + 1, ntaps = dims == 2 ? n * n : n, k = 0;
    while ((1 << k) < ntaps) k++;
    int id = g->nnames++;
    char scale[64];
    dyadic_text(1, k, scale, sizeof scale);
    if (dims == 2) {
        buf_printf(&g->body, "input f32 w%d(%d, %d);\nrdom r%d(%d, %d, %d, %d);\n", id, n, n, id, -R, n, -R, n);
    } else {
        buf_printf(&g->body, "input f32 w%d(%d);\nrdom r%d(%d, %d);\n", id, n, id, -R, n);
    }
    g->inputs++;
    rp_func *f = add_func(g, "conv", T_F32, a, 3 * ntaps + 2);
    g->defs++;
    rp_buf e = {0};
    buf_printf(&e, "0.0");
    define(g, f, "=", &e);
    char cx[32] = "x", cy[32] = "y";
    if (dims != 1) snprintf(cx, sizeof cx, "x + r%d%s", id, dims == 2 ? ".x" : "");
    if (dims != 0) snprintf(cy, sizeof cy, "y + r%d%s", id, dims == 2 ? ".y" : "");
    const char *co[3] = { cx, cy, "c" };
    if (dims == 2) buf_printf(&e, "w%d(r%d.x + %d, r%d.y + %d) * ", id, id, R, id, R);
    else buf_printf(&e, "w%d(r%d + %d) * ", id, id, R);
    put_acc(&e, a, co, true);
    buf_printf(&e, " * %s", scale);
    define(g, f, "+=", &e);
    describe(g, "conv_rdom(%s r%d)", dims == 2 ? "2-D" : dims ? "y" : "x", R);
    return 1;
}

/* Max pooling (any type) or average pooling (f32) over a 2x2 or 3x3
 * window, stride 1 or 2 in x and y. */
static int op_pool(rp_gen *g, const rp_func *a) {
    bool can2 = small_ext(g, a->ext[0]) >= 2 * RP_MIN_EXT && small_ext(g, a->ext[1]) >= 2 * RP_MIN_EXT;
    int s = can2 && rng_chance(&g->rng, 1, 2) ? 2 : 1;
    int k = rng_range(&g->rng, 2, 3), lo = k == 3 ? -1 : 0;
    bool mx = rng_chance(&g->rng, 1, 2);
    rp_buf e = {0};
    int nt = 0;
    for (int j = 0; j < k; j++)
        for (int i = 0; i < k; i++, nt++) {
            char cx[32], cy[32];
            const char *vx = s == 2 ? "2 * x" : "x", *vy = s == 2 ? "2 * y" : "y";
            offset_text(cx, sizeof cx, vx, i + lo);
            offset_text(cy, sizeof cy, vy, j + lo);
            const char *co[3] = { cx, cy, "c" };
            if (mx) {
                rp_buf t = {0};
                put_acc(&t, a, co, false);
                if (!nt) {
                    buf_printf(&e, "%s", t.s);
                } else {
                    char *prev = e.s;
                    e.s = NULL; e.n = e.cap = 0;
                    buf_printf(&e, "max(%s, %s)", prev, t.s);
                    free(prev);
                }
                free(t.s);
            } else {
                buf_printf(&e, "%s", nt ? " + " : "(");
                put_acc(&e, a, co, true);
            }
        }
    if (!mx) buf_printf(&e, ") / %d.0", k * k);
    rp_func shape = *a;
    if (s == 2)
        for (int d = 0; d < 2; d++) { shape.ext[d].shift--; shape.ext[d].add /= 2; }
    rp_func *f = add_func(g, mx ? "maxpool" : "avgpool", mx ? a->type : T_F32, &shape, k * k + 2);
    define(g, f, "=", &e);
    describe(g, "pool(%s %dx%d stride %d)", mx ? "max" : "avg", k, k, s);
    return 1;
}

static int op_activation(rp_gen *g, const rp_func *a) {
    static const char *const names[] = { "relu", "leaky_relu", "tanh", "sigmoid", "hard_tanh" };
    int v = rng_below(&g->rng, 5);
    rp_buf x = {0}, e = {0};
    put_at(&x, a, 0, 0, true);
    switch (v) {
    case 0: buf_printf(&e, "max(%s, 0.0)", x.s); break;
    case 1: buf_printf(&e, "select(%s > 0.0, %s, 0.125 * %s)", x.s, x.s, x.s); break;
    case 2: buf_printf(&e, "tanh(%s)", x.s); break;
    case 3: buf_printf(&e, "1.0 / (1.0 + exp(-clamp(%s, -30.0, 30.0)))", x.s); break;
    default: buf_printf(&e, "clamp(%s, -1.0, 1.0)", x.s); break;
    }
    free(x.s);
    static const int cost[] = { 3, 4, 16, 20, 3 };     /* tanh and exp cost more */
    rp_func *f = add_func(g, v == 0 ? "relu" : "act", T_F32, a, cost[v]);
    define(g, f, "=", &e);
    describe(g, "activation(%s)", names[v]);
    return 1;
}

/* A boundary condition over a's logical extents: repeat_edge,
 * constant_exterior or a mirror written out. */
static int op_pad(rp_gen *g, const rp_func *a) {
    int v = rng_below(&g->rng, 3);
    const char *zero = a->type == T_F32 ? "0.0" : "0";
    char ext[3][48];
    for (int d = 0; d < a->ndims; d++) ext_text(a->ext[d], ext[d], sizeof ext[d]);
    rp_func *f = add_func(g, "pad", a->type, a, 2);
    if (v < 2) {
        buf_printf(&g->body, "%s = %s(%s", f->name, v ? "constant_exterior" : "repeat_edge", a->name);
        if (v) buf_printf(&g->body, ", %s", zero);
        if (!a->strict)
            for (int d = 0; d < a->ndims; d++) buf_printf(&g->body, ", %s", ext[d]);
        buf_printf(&g->body, ");\n");
    } else {
        char co[3][512];
        for (int d = 0; d < a->ndims; d++) {
            const char *x = pure_vars[d];
            if (d == 2) snprintf(co[d], sizeof co[d], a->strict ? "clamp(c, 0, %s - 1)" : "c", ext[d]);
            else snprintf(co[d], sizeof co[d], "clamp(select(%s < 0, -1 - %s, select(%s > %s - 1, 2 * %s - 1 - %s, %s)), 0, %s - 1)",
                          x, x, x, ext[d], ext[d], x, x, ext[d]);
        }
        const char *cp[3] = { co[0], co[1], co[2] };
        rp_func plain = *a;
        plain.strict = false;               /* already clamped */
        rp_buf e = {0};
        put_acc(&e, &plain, cp, false);
        define(g, f, "=", &e);
    }
    describe(g, "pad(%s)", v == 0 ? "repeat_edge" : v == 1 ? "constant_exterior" : "mirror");
    return 1;
}

/* Which of x and y can halve (0: x, 1: y, 2: both), or -1. */
static int halvable(const rp_gen *g, const rp_func *a, bool down) {
    bool ok[2];
    for (int d = 0; d < 2; d++) {
        int64_t e = small_ext(g, a->ext[d]);
        ok[d] = down ? e >= 2 * RP_MIN_EXT : 2 * e <= RP_MAX_EXT;
    }
    return ok[0] && ok[1] ? 2 : ok[0] ? 0 : ok[1] ? 1 : -1;
}

static int pick_dims(rp_gen *g, int can) {
    if (can != 2) return can;
    int r = rng_below(&g->rng, 4);
    return r < 2 ? 2 : r - 2;
}

/* Downsampling by 2: decimation (any type) or a [1 2 1] / 4 filter then
 * decimation (f32), in x, y or both. */
static int op_downsample(rp_gen *g, const rp_func *a) {
    int dims = pick_dims(g, halvable(g, a, true));
    bool filt = a->type == T_F32 || rng_chance(&g->rng, 2, 3);
    bool inx = dims != 1, iny = dims != 0;
    rp_buf e = {0};
    int nt = 0;
    if (!filt) {
        const char *co[3] = { inx ? "2 * x" : "x", iny ? "2 * y" : "y", "c" };
        put_acc(&e, a, co, false);
        nt = 1;
    } else {
        static const int w[3] = { 1, 2, 1 };
        for (int j = iny ? -1 : 0; j <= (iny ? 1 : 0); j++)
            for (int i = inx ? -1 : 0; i <= (inx ? 1 : 0); i++, nt++) {
                char cx[32], cy[32];
                offset_text(cx, sizeof cx, inx ? "2 * x" : "x", i);
                offset_text(cy, sizeof cy, iny ? "2 * y" : "y", j);
                const char *co[3] = { cx, cy, "c" };
                int wt = (inx ? w[i + 1] : 1) * (iny ? w[j + 1] : 1);
                buf_printf(&e, "%s", nt ? " + " : "(");
                if (wt != 1) buf_printf(&e, "%d * ", wt);
                put_acc(&e, a, co, true);
            }
        buf_printf(&e, ") * %s", dims == 2 ? "0.0625" : "0.25");
    }
    rp_func shape = *a;
    for (int d = 0; d < 2; d++)
        if (d == 0 ? inx : iny) { shape.ext[d].shift--; shape.ext[d].add /= 2; }
    rp_func *f = add_func(g, "down", filt ? T_F32 : a->type, &shape, 2 * nt + 2);
    define(g, f, "=", &e);
    describe(g, "downsample(%s %s)", filt ? "filtered" : "decimate", dims == 2 ? "xy" : dims ? "y" : "x");
    return 1;
}

/* Upsampling by 2: nearest (any type) or linear (f32: the nearer coarse
 * sample weighs 3/4), in x, y or both. */
static int op_upsample(rp_gen *g, const rp_func *a) {
    int dims = pick_dims(g, halvable(g, a, false));
    bool lin = a->type == T_F32 ? rng_chance(&g->rng, 2, 3) : rng_chance(&g->rng, 1, 2);
    bool inx = dims != 1, iny = dims != 0;
    rp_buf e = {0};
    int nt = 0;
    if (!lin) {
        const char *co[3] = { inx ? "x / 2" : "x", iny ? "y / 2" : "y", "c" };
        put_acc(&e, a, co, false);
        nt = 1;
    } else {
        /* weights in 16ths: 1/4 far, 3/4 near per dimension */
        for (int j = 0; j < (iny ? 2 : 1); j++)
            for (int i = 0; i < (inx ? 2 : 1); i++, nt++) {
                const char *cx = !inx ? "x" : i ? "x / 2" : "x / 2 - 1 + 2 * (x % 2)";
                const char *cy = !iny ? "y" : j ? "y / 2" : "y / 2 - 1 + 2 * (y % 2)";
                const char *co[3] = { cx, cy, "c" };
                int wt = (inx ? (i ? 3 : 1) : 4) * (iny ? (j ? 3 : 1) : 4);
                char lit[64];
                dyadic_text(wt, 4, lit, sizeof lit);
                buf_printf(&e, "%s%s * ", nt ? " + " : "", lit);
                put_acc(&e, a, co, true);
            }
    }
    rp_func shape = *a;
    for (int d = 0; d < 2; d++)
        if (d == 0 ? inx : iny) { shape.ext[d].shift++; shape.ext[d].add *= 2; }
    rp_func *f = add_func(g, "up", lin ? T_F32 : a->type, &shape, 3 * nt + 2);
    define(g, f, "=", &e);
    describe(g, "upsample(%s %s)", lin ? "linear" : "nearest", dims == 2 ? "xy" : dims ? "y" : "x");
    return 1;
}

/* All-to-all over channels: out(x, y, c) = sum_k w(c, k) * a(x, y, k) /
 * P, an update over an rdom or an inline sum (which makes a helper Func). */
static int op_all_to_all(rp_gen *g, const rp_func *a) {
    static const int outs[] = { 2, 3, 4, 8, 16 };
    int C = a->ext[2].add, C2 = outs[rng_below(&g->rng, 5)], k = 0;
    while ((1 << k) < C) k++;
    bool use_sum = g->target - g->funcs >= 2 && rng_chance(&g->rng, 1, 3);
    int id = g->nnames++;
    char scale[64];
    dyadic_text(1, k, scale, sizeof scale);
    buf_printf(&g->body, "input f32 w%d(%d, %d);\nrdom r%d(0, %d);\n", id, C2, C, id, C);
    g->inputs++;
    rp_func shape = *a;
    shape.ext[2].add = C2;
    rp_func *f = add_func(g, "mm", T_F32, &shape, 3 * C + 2);
    char cr[16];
    snprintf(cr, sizeof cr, "r%d", id);
    const char *co[3] = { "x", "y", cr };
    rp_buf e = {0};
    if (use_sum) {
        g->funcs++;                         /* the sum's helper Func */
        g->defs += 2;
        buf_printf(&e, "sum(w%d(clamp(c, 0, %d), r%d) * ", id, C2 - 1, id);
        put_acc(&e, a, co, true);
        buf_printf(&e, ") * %s", scale);
        define(g, f, "=", &e);
    } else {
        g->defs++;
        buf_printf(&e, "0.0");
        define(g, f, "=", &e);
        buf_printf(&e, "w%d(clamp(c, 0, %d), r%d) * ", id, C2 - 1, id);
        put_acc(&e, a, co, true);
        buf_printf(&e, " * %s", scale);
        define(g, f, "+=", &e);
    }
    describe(g, "all_to_all(%d->%d%s)", C, C2, use_sum ? " sum" : "");
    return use_sum ? 2 : 1;
}

/* A first-order recurrence s(i) = a s(i-1) + (1 - a) s(i) along x or y,
 * sometimes followed by the same recurrence backwards (as iir_blur). */
static int op_scan(rp_gen *g, const rp_func *a) {
    static const int alphas[] = { 8, 12, 14 };     /* in 16ths */
    int dir = rng_below(&g->rng, 2);
    bool back = rng_chance(&g->rng, 2, 5);
    int al = alphas[rng_below(&g->rng, 3)];
    char ka[64], kb[64], ext[48];
    dyadic_text(al, 4, ka, sizeof ka);
    dyadic_text(16 - al, 4, kb, sizeof kb);
    ext_text(a->ext[dir], ext, sizeof ext);
    int id = g->nnames++;
    buf_printf(&g->body, "rdom r%d(1, %s - 1);\n", id, ext);
    rp_func *f = add_func(g, "scan", T_F32, a, back ? 12 : 8);
    rp_buf e = {0};
    put_at(&e, a, 0, 0, true);
    define(g, f, "=", &e);
    for (int pass = 0; pass < (back ? 2 : 1); pass++) {
        char cur[64], prev[64];
        if (!pass) {
            snprintf(cur, sizeof cur, "r%d", id);
            snprintf(prev, sizeof prev, "r%d - 1", id);
        } else {
            snprintf(cur, sizeof cur, "%s - 1 - r%d", ext, id);
            snprintf(prev, sizeof prev, "%s - r%d", ext, id);
        }
        const char *cc[3] = { dir ? "x" : cur, dir ? cur : "y", "c" };
        const char *cp[3] = { dir ? "x" : prev, dir ? prev : "y", "c" };
        rp_buf lhs = {0};
        put_acc(&lhs, f, cc, false);
        buf_printf(&g->body, "%s = %s * ", lhs.s, ka);
        rp_buf r = {0};
        put_acc(&r, f, cp, false);
        buf_printf(&g->body, "%s + %s * %s;\n", r.s, kb, lhs.s);
        free(lhs.s);
        free(r.s);
        g->defs++;
    }
    describe(g, "scan(%s%s alpha %d/16)", dir ? "y" : "x", back ? " both ways" : "", al);
    return 1;
}

/* The bin of a's value v (coordinate text) among B bins. */
static void put_bin(rp_buf *b, const rp_func *a, const char *const *co, int B) {
    rp_buf v = {0};
    put_acc(&v, a, co, false);
    switch (a->type) {
    case T_U8: buf_printf(b, "i32(%s) / %d", v.s, 256 / B); break;
    case T_U16: buf_printf(b, "i32(%s) / %d", v.s, 65536 / B); break;
    case T_I16: buf_printf(b, "(i32(%s) + 32768) / %d", v.s, 65536 / B); break;
    case T_I32: buf_printf(b, "clamp(%s, 0, %d)", v.s, B - 1); break;
    default: buf_printf(b, "clamp(i32(%s * %d.0), 0, %d)", v.s, B, B - 1); break;
    }
    free(v.s);
}

/* A histogram of a's values per tile of T rows (a scatter with the tile
 * and channel as pure loops), then each point's count in its tile's
 * histogram, normalised (histogram equalisation's lookup). */
static int op_histogram(rp_gen *g, const rp_func *a) {
    static const int bins[] = { 8, 16, 32, 64 };
    int B = bins[rng_below(&g->rng, 4)], T;
    do T = 4 << rng_below(&g->rng, 3); while (small_ext(g, a->ext[1]) < T);
    char ex[48];
    ext_text(a->ext[0], ex, sizeof ex);
    int id = g->nnames++;
    buf_printf(&g->body, "rdom r%d(0, %s, 0, %d);\n", id, ex, T);
    /* the histogram is not in the pool (its shape is (B, tiles[, C])) */
    char hist[24];
    new_func_name(g, "hist", hist, sizeof hist);
    g->defs++;
    buf_printf(&g->body, "%s(b, t%s) = 0;\n", hist, a->ndims == 3 ? ", c" : "");
    char rx[16], ry[48];
    snprintf(rx, sizeof rx, "r%d.x", id);
    snprintf(ry, sizeof ry, "t * %d + r%d.y", T, id);
    const char *cs[3] = { rx, ry, "c" };
    buf_printf(&g->body, "%s(", hist);
    put_bin(&g->body, a, cs, B);
    buf_printf(&g->body, ", t%s) += 1;\n", a->ndims == 3 ? ", c" : "");
    rp_func *f = add_func(g, "lookup", T_F32, a, 8);   /* with the scatter's share */
    rp_buf e = {0};
    const char *cp[3] = { "x", "y", "c" };
    buf_printf(&e, "f32(%s(", hist);
    put_bin(&e, a, cp, B);
    buf_printf(&e, ", y / %d%s)) / f32(%d * %s)", T, a->ndims == 3 ? ", c" : "", T, ex);
    define(g, f, "=", &e);
    describe(g, "histogram(%d bins, tiles of %d rows)", B, T);
    return 2;
}

/* A lookup table: a curve over B entries (a tone curve or a remapping,
 * as camera_pipe's and local_laplacian's), read at the bin of each
 * point's value: one data-dependent gather per point, or on f32 two,
 * linear between neighbouring entries. */
static int op_lookup(rp_gen *g, const rp_func *a) {
    static const int logs[] = { 4, 6, 8 };
    int lb = logs[rng_below(&g->rng, 3)], B = 1 << lb;
    int curve = rng_below(&g->rng, 3);
    bool lin = a->type == T_F32 && rng_chance(&g->rng, 1, 2);
    char t[24], step[64];
    new_func_name(g, "curve", t, sizeof t);
    dyadic_text(1, lb, step, sizeof step);
    switch (curve) {
    case 0: buf_printf(&g->body, "%s(x) = sqrt(f32(x) * %s);\n", t, step); break;
    case 1: buf_printf(&g->body, "%s(x) = f32(x * x) * %s * %s - 0.5;\n", t, step, step); break;
    default: buf_printf(&g->body, "%s(x) = tanh(f32(x) * %s * 4.0 - 2.0);\n", t, step); break;
    }
    rp_func *f = add_func(g, "lut", T_F32, a, lin ? 12 : 5);
    const char *cp[3] = { "x", "y", "c" };
    rp_buf e = {0};
    if (!lin) {
        buf_printf(&e, "%s(", t);
        put_bin(&e, a, cp, B);
        buf_printf(&e, ")");
    } else {
        /* u = the value scaled to [0, B - 1]; entries i and i + 1, i in [0, B - 2] */
        rp_buf v = {0}, u = {0}, i = {0};
        put_acc(&v, a, cp, false);
        buf_printf(&u, "clamp(%s, 0.0, 1.0) * %d.0", v.s, B - 1);
        buf_printf(&i, "clamp(i32(%s), 0, %d)", u.s, B - 2);
        buf_printf(&e, "lerp(%s(%s), %s(%s + 1), %s - f32(%s))", t, i.s, t, i.s, u.s, i.s);
        free(v.s);
        free(u.s);
        free(i.s);
    }
    define(g, f, "=", &e);
    describe(g, "lookup(%d entries, %s)", B, lin ? "linear" : "nearest");
    return 2;
}

/* A coarse grid (bilateral_grid's): one cell per S x S block of points
 * and each of Z bins of value, made from a's sample at the block's
 * corner, then read at every point's block and its value's bin:
 * data-dependent gathers, interpolated between neighbouring blocks in x
 * (two per point) or in x and y (four). */
static int op_grid_slice(rp_gen *g, const rp_func *a) {
    int ls, lz = rng_chance(&g->rng, 1, 2) ? 3 : 4, Z = 1 << lz;
    do ls = 2 + rng_below(&g->rng, 3);
    while (small_ext(g, a->ext[0]) < 2 << ls || small_ext(g, a->ext[1]) < 2 << ls);
    int S = 1 << ls;
    bool xy = rng_chance(&g->rng, 1, 2), three = a->ndims == 3;
    char grid[24], zs[64], ss[64], gx[32], gy[32];
    new_func_name(g, "grid", grid, sizeof grid);
    dyadic_text(1, lz, zs, sizeof zs);
    dyadic_text(1, ls, ss, sizeof ss);
    snprintf(gx, sizeof gx, "x * %d", S);
    snprintf(gy, sizeof gy, "y * %d", S);
    const char *gc[3] = { gx, gy, "c" };
    buf_printf(&g->body, "%s(x, y, z%s) = ", grid, three ? ", c" : "");
    put_acc(&g->body, a, gc, true);
    buf_printf(&g->body, " * 0.5 + f32(z) * %s;\n", zs);
    rp_func *f = add_func(g, "gslice", T_F32, a, xy ? 30 : 16);
    const char *cp[3] = { "x", "y", "c" };
    rp_buf bin = {0}, tap[2][2] = {{{0}}}, e = {0};
    put_bin(&bin, a, cp, Z);
    for (int j = 0; j < (xy ? 2 : 1); j++)
        for (int i = 0; i < 2; i++)
            buf_printf(&tap[j][i], "%s(x / %d%s, y / %d%s, %s%s)", grid, S, i ? " + 1" : "", S, j ? " + 1" : "",
                       bin.s, three ? ", c" : "");
    char fx[128], fy[128];
    snprintf(fx, sizeof fx, "f32(x %% %d) * %s", S, ss);
    snprintf(fy, sizeof fy, "f32(y %% %d) * %s", S, ss);
    if (!xy) buf_printf(&e, "lerp(%s, %s, %s)", tap[0][0].s, tap[0][1].s, fx);
    else buf_printf(&e, "lerp(lerp(%s, %s, %s), lerp(%s, %s, %s), %s)", tap[0][0].s, tap[0][1].s, fx,
                    tap[1][0].s, tap[1][1].s, fx, fy);
    define(g, f, "=", &e);
    free(bin.s);
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) free(tap[j][i].s);
    describe(g, "grid_slice(%dx%d blocks, %d bins, %s)", S, S, Z, xy ? "xy" : "x");
    return 2;
}

/* One channel of a 3-D Func, or a crop (an offset window). */
static int op_slice(rp_gen *g, const rp_func *a) {
    int64_t m = small_ext(g, a->ext[0]) < small_ext(g, a->ext[1]) ? small_ext(g, a->ext[0]) : small_ext(g, a->ext[1]);
    bool crop_ok = m >= RP_MIN_EXT + 2;
    rp_buf e = {0};
    rp_func shape = *a;
    bool chan = a->ndims == 3 && (!crop_ok || rng_chance(&g->rng, 3, 5));
    if (chan && rng_chance(&g->rng, 1, 2)) {
        /* a luma of the first three channels (every 3-D Func has them) */
        for (int k = 0; k < 3; k++) {
            char ck[16];
            snprintf(ck, sizeof ck, "%d", k);
            const char *co[3] = { "x", "y", ck };
            buf_printf(&e, "%s", k ? (k == 1 ? " + 0.5 * " : " + 0.25 * ") : "0.25 * ");
            put_acc(&e, a, co, true);
        }
        shape.ndims = 2;
        rp_func *f = add_func(g, "luma", T_F32, &shape, 6);
        define(g, f, "=", &e);
        describe(g, "slice(luma)");
    } else if (chan) {
        int k = rng_below(&g->rng, a->ext[2].add);
        char ck[16];
        snprintf(ck, sizeof ck, "%d", k);
        const char *co[3] = { "x", "y", ck };
        put_acc(&e, a, co, false);
        shape.ndims = 2;
        rp_func *f = add_func(g, "slice", a->type, &shape, 2);
        define(g, f, "=", &e);
        describe(g, "slice(channel %d)", k);
    } else {
        int maxo = (int)((m - RP_MIN_EXT) / 2);
        int o = rng_range(&g->rng, 1, maxo < 4 ? maxo : 4);
        put_at(&e, a, o, o, false);
        shape.ext[0].add -= 2 * o;
        shape.ext[1].add -= 2 * o;
        rp_func *f = add_func(g, "crop", a->type, &shape, 2);
        define(g, f, "=", &e);
        describe(g, "slice(crop %d)", o);
    }
    return 1;
}

static int op_transpose(rp_gen *g, const rp_func *a) {
    rp_buf e = {0};
    const char *co[3] = { "y", "x", "c" };
    put_acc(&e, a, co, false);
    rp_func shape = *a;
    shape.ext[0] = a->ext[1];
    shape.ext[1] = a->ext[0];
    rp_func *f = add_func(g, "tr", a->type, &shape, 2);
    define(g, f, "=", &e);
    describe(g, "transpose");
    return 1;
}

static int op_unary(rp_gen *g, const rp_func *a) {
    static const char *const names[] = { "exp", "log", "sqrt", "tanh" };
    int v = rng_below(&g->rng, 4);
    rp_buf x = {0}, e = {0};
    put_at(&x, a, 0, 0, true);
    switch (v) {
    case 0: buf_printf(&e, "exp(clamp(%s, -4.0, 4.0))", x.s); break;
    case 1: buf_printf(&e, "log(abs(%s) + 1.0)", x.s); break;
    case 2: buf_printf(&e, "sqrt(abs(%s))", x.s); break;
    default: buf_printf(&e, "tanh(%s)", x.s); break;
    }
    free(x.s);
    rp_func *f = add_func(g, names[v], T_F32, a, v == 2 ? 6 : 16);
    define(g, f, "=", &e);
    describe(g, "unary(%s)", names[v]);
    return 1;
}

static bool same_shape(const rp_func *a, const rp_func *b) {
    if (a->ndims != b->ndims) return false;
    for (int d = 0; d < a->ndims; d++)
        if (!ext_eq(a->ext[d], b->ext[d])) return false;
    return true;
}

/* Whether b has a's x and y extents and the other dimensionality (a 2-D
 * Func over a 3-D one's x and y). */
static bool xy_shape(const rp_func *a, const rp_func *b) {
    return a->ndims != b->ndims && ext_eq(a->ext[0], b->ext[0]) && ext_eq(a->ext[1], b->ext[1]);
}

/* How many earlier pool entries match a under fits (a excluded); with
 * pick >= 0, the pick-th of them. */
static int partners(const rp_gen *g, const rp_func *a, bool (*fits)(const rp_func *, const rp_func *), int pick,
                    const rp_func **out) {
    int n = 0;
    for (int i = 0; i < g->npool; i++) {
        const rp_func *b = &g->pool[i];
        if (b == a || !fits(a, b)) continue;
        if (n == pick && out) *out = b;
        n++;
    }
    return n;
}

/* Two stages of one shape: a (the newest) and an earlier b. */
static int op_binary(rp_gen *g, const rp_func *a) {
    static const char *const names[] = { "add", "sub", "max", "min", "gate", "mean" };
    const rp_func *b = NULL;
    partners(g, a, same_shape, rng_below(&g->rng, partners(g, a, same_shape, -1, NULL)), &b);
    int v = rng_below(&g->rng, 6);
    bool keep = (v == 2 || v == 3) && a->type == b->type;
    rp_buf x = {0}, y = {0}, e = {0};
    put_at(&x, a, 0, 0, !keep);
    put_at(&y, b, 0, 0, !keep);
    switch (v) {
    case 0: buf_printf(&e, "%s + %s", x.s, y.s); break;
    case 1: buf_printf(&e, "%s - %s", x.s, y.s); break;
    case 2: buf_printf(&e, "max(%s, %s)", x.s, y.s); break;
    case 3: buf_printf(&e, "min(%s, %s)", x.s, y.s); break;
    case 4: buf_printf(&e, "%s * tanh(%s)", x.s, y.s); break;
    default: buf_printf(&e, "(%s + %s) * 0.5", x.s, y.s); break;
    }
    free(x.s);
    free(y.s);
    rp_func *f = add_func(g, names[v], keep ? a->type : T_F32, a, v == 4 ? 16 : 3);
    define(g, f, "=", &e);
    describe(g, "binary(%s with %s)", names[v], b->name);
    return 1;
}

/* A 3-D Func combined with a 2-D Func of the same x and y extents at
 * every channel: a gain map (unsharp's ratio times the input), an offset
 * or a difference.  One of the two is the newest Func, the other earlier
 * (the input included). */
static int op_broadcast(rp_gen *g, const rp_func *a) {
    static const char *const names[] = { "mul", "add", "sub" };
    const rp_func *b = NULL;
    partners(g, a, xy_shape, rng_below(&g->rng, partners(g, a, xy_shape, -1, NULL)), &b);
    const rp_func *f3 = a->ndims == 3 ? a : b, *f2 = a->ndims == 3 ? b : a;
    int v = rng_below(&g->rng, 3);
    rp_buf x = {0}, y = {0}, e = {0};
    put_at(&x, f3, 0, 0, true);
    put_at(&y, f2, 0, 0, true);
    buf_printf(&e, "%s %c %s", x.s, "*+-"[v], y.s);
    free(x.s);
    free(y.s);
    rp_func *f = add_func(g, "bcast", T_F32, f3, 3);
    define(g, f, "=", &e);
    describe(g, "broadcast(%s with %s)", names[v], b->name);
    return 1;
}

/* A conversion to another type, clamped (or scaled) so nothing wraps. */
static int op_cast(rp_gen *g, const rp_func *a) {
    int to;
    do to = rng_below(&g->rng, T_COUNT); while (to == a->type);
    rp_buf x = {0}, e = {0};
    put_at(&x, a, 0, 0, false);
    const char *v = x.s;
    switch (a->type * T_COUNT + to) {
    case T_F32 * T_COUNT + T_U8: buf_printf(&e, "u8(clamp(%s * 64.0, 0.0, 255.0))", v); break;
    case T_F32 * T_COUNT + T_U16: buf_printf(&e, "u16(clamp(%s * 4096.0, 0.0, 65535.0))", v); break;
    case T_F32 * T_COUNT + T_I16: buf_printf(&e, "i16(clamp(%s * 1024.0, -32768.0, 32767.0))", v); break;
    case T_F32 * T_COUNT + T_I32: buf_printf(&e, "i32(clamp(%s * 65536.0, -16777216.0, 16777216.0))", v); break;
    case T_U8 * T_COUNT + T_F32: buf_printf(&e, "f32(%s) * 0.00390625", v); break;
    case T_U8 * T_COUNT + T_U16: buf_printf(&e, "u16(%s) * 256", v); break;
    case T_U8 * T_COUNT + T_I16: buf_printf(&e, "i16(%s) - 128", v); break;
    case T_U8 * T_COUNT + T_I32: buf_printf(&e, "i32(%s)", v); break;
    case T_U16 * T_COUNT + T_F32: buf_printf(&e, "f32(%s) * 0.0000152587890625", v); break;
    case T_U16 * T_COUNT + T_U8: buf_printf(&e, "u8(%s >> 8)", v); break;
    case T_U16 * T_COUNT + T_I16: buf_printf(&e, "i16(%s >> 1)", v); break;
    case T_U16 * T_COUNT + T_I32: buf_printf(&e, "i32(%s)", v); break;
    case T_I16 * T_COUNT + T_F32: buf_printf(&e, "f32(%s) * 0.000030517578125", v); break;
    case T_I16 * T_COUNT + T_U8: buf_printf(&e, "u8(clamp(%s, 0, 255))", v); break;
    case T_I16 * T_COUNT + T_U16: buf_printf(&e, "u16(i32(%s) + 32768)", v); break;
    case T_I16 * T_COUNT + T_I32: buf_printf(&e, "i32(%s)", v); break;
    case T_I32 * T_COUNT + T_F32: buf_printf(&e, "f32(%s) * 0.0000152587890625", v); break;
    case T_I32 * T_COUNT + T_U8: buf_printf(&e, "u8(clamp(%s, 0, 255))", v); break;
    case T_I32 * T_COUNT + T_U16: buf_printf(&e, "u16(clamp(%s, 0, 65535))", v); break;
    default: buf_printf(&e, "i16(clamp(%s, -32768, 32767))", v); break;   /* i32 -> i16 */
    }
    free(x.s);
    rp_func *f = add_func(g, "cast", to, a, 3);
    define(g, f, "=", &e);
    describe(g, "cast(%s->%s)", type_names[a->type], type_names[to]);
    return 1;
}

/* ---- the layers set ----------------------------------------------------------- */

/* A layer's scale 2^-k: the literal, or half the time a run-time param
 * (`param f32 sN = ...;`, as the apps' strengths and sigmas are) named in
 * out. */
static void scale_text(rp_gen *g, int id, int k, char *out, size_t n) {
    char lit[64];
    dyadic_text(1, k, lit, sizeof lit);
    if (rng_chance(&g->rng, 1, 2)) {
        snprintf(out, n, "%s", lit);
    } else {
        buf_printf(&g->body, "param f32 s%d = %s;\n", id, lit);
        snprintf(out, n, "s%d", id);
    }
}

/* A convolution layer with a bias, over every channel of a and a K x K
 * window (K = 1: a 1x1 layer; conv_layer's and learned_demosaic's):
 * f(x, y, c) = bias(c), then f += w(c, k, i, j) a(x + i - R, y + j - R, k)
 * scaled by 2^-s, 2^s at least the tap count, into 4, 8 or 16 channels. */
static int op_layer_conv(rp_gen *g, const rp_func *a) {
    static const int outs[] = { 4, 8, 16 };
    int C = a->ext[2].add, C2 = outs[rng_below(&g->rng, 3)];
    int K = rng_chance(&g->rng, 1, 3) ? 1 : 3, R = K / 2, k = 0;
    while ((1 << k) < C * K * K) k++;
    int id = g->nnames++;
    char scale[64], cx[32], cy[32], ck[16];
    scale_text(g, id, k, scale, sizeof scale);
    buf_printf(&g->body, "input f32 bias%d(%d);\n", id, C2);
    if (K == 1) {
        buf_printf(&g->body, "input f32 w%d(%d, %d);\nrdom r%d(0, %d);\n", id, C2, C, id, C);
        snprintf(cx, sizeof cx, "x");
        snprintf(cy, sizeof cy, "y");
        snprintf(ck, sizeof ck, "r%d", id);
    } else {
        buf_printf(&g->body, "input f32 w%d(%d, %d, %d, %d);\nrdom r%d(0, %d, 0, %d, 0, %d);\n", id, C2, C, K, K,
                   id, C, K, K);
        snprintf(cx, sizeof cx, "x + r%d.y - %d", id, R);
        snprintf(cy, sizeof cy, "y + r%d.z - %d", id, R);
        snprintf(ck, sizeof ck, "r%d.x", id);
    }
    g->inputs += 2;
    rp_func shape = *a;
    shape.ext[2].add = C2;
    rp_func *f = add_func(g, "layer", T_F32, &shape, 3 * C * K * K + 2);
    g->defs++;
    rp_buf e = {0};
    buf_printf(&e, "bias%d(c)", id);
    define(g, f, "=", &e);
    if (K == 1) buf_printf(&e, "w%d(c, r%d) * ", id, id);
    else buf_printf(&e, "w%d(c, r%d.x, r%d.y, r%d.z) * ", id, id, id, id);
    const char *co[3] = { cx, cy, ck };
    put_acc(&e, a, co, true);
    buf_printf(&e, " * %s", scale);
    define(g, f, "+=", &e);
    describe(g, "layer_conv(%dx%d, %d->%d)", K, K, C, C2);
    return 1;
}

/* A depthwise layer with a bias (depthwise_separable_conv's): each
 * channel convolved with its own K x K window (K = 3 or 5). */
static int op_depthwise(rp_gen *g, const rp_func *a) {
    int C = a->ext[2].add, K = rng_chance(&g->rng, 2, 3) ? 3 : 5, R = K / 2, k = 0;
    while ((1 << k) < K * K) k++;
    int id = g->nnames++;
    char scale[64], cx[32], cy[32];
    scale_text(g, id, k, scale, sizeof scale);
    buf_printf(&g->body, "input f32 bias%d(%d);\ninput f32 w%d(%d, %d, %d);\nrdom r%d(0, %d, 0, %d);\n", id, C,
               id, C, K, K, id, K, K);
    g->inputs += 2;
    rp_func *f = add_func(g, "dw", T_F32, a, 3 * K * K + 2);
    g->defs++;
    rp_buf e = {0};
    buf_printf(&e, "bias%d(c)", id);
    define(g, f, "=", &e);
    snprintf(cx, sizeof cx, "x + r%d.x - %d", id, R);
    snprintf(cy, sizeof cy, "y + r%d.y - %d", id, R);
    const char *co[3] = { cx, cy, "c" };
    buf_printf(&e, "w%d(c, r%d.x, r%d.y) * ", id, id, id);
    put_acc(&e, a, co, true);
    buf_printf(&e, " * %s", scale);
    define(g, f, "+=", &e);
    describe(g, "depthwise(%dx%d)", K, K);
    return 1;
}

/* Softmax over the channels of a (learned_demosaic's): the maximum over
 * c, the exponential of each channel less it, their sum, and each
 * exponential over the sum: four Funcs, two of them reductions over an
 * rdom of the channels. */
static int op_softmax(rp_gen *g, const rp_func *a) {
    int C = a->ext[2].add, id = g->nnames++;
    char m[24], ex[24], s[24], rc[16];
    snprintf(rc, sizeof rc, "r%d", id);
    buf_printf(&g->body, "rdom r%d(0, %d);\n", id, C);
    const char *c0[3] = { "x", "y", "0" }, *cr[3] = { "x", "y", rc }, *cp[3] = { "x", "y", "c" };
    new_func_name(g, "smax", m, sizeof m);
    g->defs++;
    buf_printf(&g->body, "%s(x, y) = ", m);
    put_acc(&g->body, a, c0, true);
    buf_printf(&g->body, ";\n%s(x, y) = max(%s(x, y), ", m, m);
    put_acc(&g->body, a, cr, true);
    buf_printf(&g->body, ");\n");
    new_func_name(g, "sexp", ex, sizeof ex);
    buf_printf(&g->body, "%s(x, y, c) = exp(", ex);
    put_acc(&g->body, a, cp, true);
    buf_printf(&g->body, " - %s(x, y));\n", m);
    new_func_name(g, "ssum", s, sizeof s);
    g->defs++;
    buf_printf(&g->body, "%s(x, y) = 0.0;\n%s(x, y) += %s(x, y, r%d);\n", s, s, ex, id);
    rp_func *f = add_func(g, "soft", T_F32, a, 30);     /* with the other three's share */
    rp_buf e = {0};
    buf_printf(&e, "%s(x, y, c) / %s(x, y)", ex, s);
    define(g, f, "=", &e);
    describe(g, "softmax(%d channels)", C);
    return 4;
}

/* Each 2x2 quad of a 2-D Func as the 4 channels of one point at half the
 * size (learned_demosaic's packing of the Bayer mosaic): channel c of
 * (x, y) is a(2x + c % 2, 2y + c / 2). */
static int op_pack(rp_gen *g, const rp_func *a) {
    rp_buf e = {0};
    const char *co[3] = { "2 * x + c % 2", "2 * y + c / 2", NULL };
    put_acc(&e, a, co, false);
    rp_func shape = *a;
    shape.ndims = 3;
    for (int d = 0; d < 2; d++) { shape.ext[d].shift--; shape.ext[d].add /= 2; }
    shape.ext[2] = (rp_ext){ 0, 0, 4 };
    rp_func *f = add_func(g, "pack", a->type, &shape, 3);
    define(g, f, "=", &e);
    describe(g, "pack");
    return 1;
}

/* The inverse of pack from the first 4 channels: each point of a 2-D
 * Func twice the size takes the channel of its place in its quad, as a
 * computed channel index or through a select on the quad's parity (a
 * demosaic's measured and interpolated sites). */
static int op_unpack(rp_gen *g, const rp_func *a) {
    bool sel = rng_chance(&g->rng, 1, 2);
    rp_buf e = {0};
    if (!sel) {
        const char *co[3] = { "x / 2", "y / 2", "x % 2 + 2 * (y % 2)" };
        put_acc(&e, a, co, false);
    } else {
        const char *cs[3] = { "x / 2", "y / 2", "3 * (x % 2)" }, *co[3] = { "x / 2", "y / 2", "1 + y % 2" };
        buf_printf(&e, "select(x %% 2 == y %% 2, ");
        put_acc(&e, a, cs, false);
        buf_printf(&e, ", ");
        put_acc(&e, a, co, false);
        buf_printf(&e, ")");
    }
    rp_func shape = *a;
    shape.ndims = 2;
    for (int d = 0; d < 2; d++) { shape.ext[d].shift++; shape.ext[d].add *= 2; }
    rp_func *f = add_func(g, "unpack", a->type, &shape, sel ? 5 : 4);
    define(g, f, "=", &e);
    describe(g, "unpack(%s)", sel ? "select" : "index");
    return 1;
}

/* Three channels chosen by selects on c from a's first three: a green
 * plus colour differences (learned_demosaic's output) or a permutation. */
static int op_recolor(rp_gen *g, const rp_func *a) {
    bool diff = rng_chance(&g->rng, 1, 2);
    rp_buf ch[3] = {{0}}, e = {0};
    for (int k = 0; k < 3; k++) {
        char ck[4] = { (char)('0' + k), 0 };
        const char *co[3] = { "x", "y", ck };
        put_acc(&ch[k], a, co, diff);
    }
    if (diff) buf_printf(&e, "select(c == 1, %s, %s + select(c == 0, %s, %s) * 0.5)", ch[1].s, ch[1].s, ch[0].s,
                         ch[2].s);
    else buf_printf(&e, "select(c == 0, %s, select(c == 1, %s, %s))", ch[2].s, ch[0].s, ch[1].s);
    for (int k = 0; k < 3; k++) free(ch[k].s);
    rp_func shape = *a;
    shape.ext[2].add = 3;
    rp_func *f = add_func(g, "color", diff ? T_F32 : a->type, &shape, diff ? 6 : 4);
    define(g, f, "=", &e);
    describe(g, "recolor(%s)", diff ? "differences" : "permutation");
    return 1;
}

/* camera_pipe's fixed-point demosaic: a quantised to i16 in [0, 1023]
 * (a Func of its own), then kept at even x and interpolated at odd x from
 * the pair of neighbours along the direction of least change: i16
 * subtractions, abs and compares, an i16 average and one rounded through
 * i32, a select on the parity.  Differences and sums of values in [0,
 * 1023] fit i16. */
static int op_fixed_interp(rp_gen *g, const rp_func *a) {
    rp_func q = *a;
    new_func_name(g, "quant", q.name, sizeof q.name);
    q.type = T_I16;
    q.strict = false;
    rp_buf v = {0};
    put_at_as(&v, a, 0, 0, a->type == T_F32 ? NULL : "i32");
    if (a->type == T_F32) buf_printf(&g->body, "%s%s = i16(clamp(%s * 1024.0, 0.0, 1023.0));\n", q.name,
                                     pure_args(q.ndims), v.s);
    else buf_printf(&g->body, "%s%s = i16(clamp(%s, 0, 1023));\n", q.name, pure_args(q.ndims), v.s);
    free(v.s);
    rp_buf l = {0}, r = {0}, u = {0}, d = {0}, c = {0}, e = {0};
    put_at(&l, &q, -1, 0, false);
    put_at(&r, &q, 1, 0, false);
    put_at(&u, &q, 0, -1, false);
    put_at(&d, &q, 0, 1, false);
    put_at(&c, &q, 0, 0, false);
    buf_printf(&e, "select(x %% 2 == 0, %s, select(abs(%s - %s) < abs(%s - %s), (%s + %s) / 2, "
               "i16((i32(%s) + %s + 1) / 2)))", c.s, r.s, l.s, d.s, u.s, r.s, l.s, d.s, u.s);
    free(l.s);
    free(r.s);
    free(u.s);
    free(d.s);
    free(c.s);
    rp_func *f = add_func(g, "interp", T_I16, a, 16);    /* with the quantisation's share */
    define(g, f, "=", &e);
    describe(g, "fixed_interp");
    return 2;
}

/* ---- the chain -------------------------------------------------------------- */

typedef int (*op_fn)(rp_gen *g, const rp_func *a);
static const op_fn op_table[RANDPIPE_NKINDS] = {
    op_conv_taps, op_conv_rdom, op_pool, op_activation, op_pad, op_downsample, op_upsample,
    op_all_to_all, op_scan, op_histogram, op_slice, op_transpose, op_unary, op_binary, op_cast,
    op_broadcast, op_lookup, op_grid_slice, op_layer_conv, op_depthwise, op_softmax, op_pack, op_unpack,
    op_recolor, op_fixed_interp,
};

/* The weight of each next operation (columns, in randpipe_kind order)
 * after each previous one (rows; the last row is the start, where the
 * input is the previous Func).  docs/random_pipelines.md prints it. */
static const unsigned char chain[RANDPIPE_NKINDS + 1][RANDPIPE_NKINDS] = {
    /*               ct  cr  po  ac  pa  dn  up  mm  sc  hi  sl  tr  un  bi  ca  br  lk  gs  lc  dw  sm  pk  uk  rc  fi */
    /* conv_taps */ { 6,  2,  6, 20,  2,  4,  2,  4,  2,  2,  2,  2,  4,  8,  2,  6,  6,  4,  8,  4,  4,  4,  2,  2,  2 },
    /* conv_rdom */ { 6,  2,  6, 20,  2,  4,  2,  4,  2,  2,  2,  2,  4,  8,  2,  6,  6,  4,  8,  4,  4,  4,  2,  2,  2 },
    /* pool      */ { 6,  6,  2,  4,  4,  2,  2,  6,  2,  2,  2,  2,  2,  4,  2,  4,  6,  4, 12,  8,  4,  4,  2,  2,  2 },
    /* activation*/ { 8,  8, 10,  0,  8,  4,  2,  6,  2,  2,  2,  2,  2,  6,  4,  8,  6,  4, 16, 12,  4,  4,  2,  2,  2 },
    /* pad       */ {16, 16, 10,  1,  0,  6,  2,  2,  2,  1,  1,  1,  1,  1,  1,  2,  6,  4, 20, 16,  2,  4,  1,  1,  4 },
    /* downsample*/ { 6,  4,  2,  4,  4,  6,  4,  2,  2,  2,  2,  2,  2,  2,  2,  2,  6,  4,  8,  4,  4,  4,  2,  2,  4 },
    /* upsample  */ { 6,  2,  2,  2,  2,  2,  4,  2,  2,  2,  2,  2,  2,  8,  2,  6,  6,  4,  4,  4,  4,  4,  1,  2,  2 },
    /* all_to_all*/ { 2,  2,  4, 20,  4,  2,  2,  4,  1,  1,  2,  1,  2,  4,  2,  4,  6,  4,  4,  4, 12,  2,  4,  4,  1 },
    /* scan      */ { 4,  2,  2,  4,  2,  2,  2,  2,  6,  2,  2,  6,  4,  6,  2,  4,  6,  4,  4,  4,  4,  4,  2,  2,  2 },
    /* histogram */ { 4,  2,  2,  4,  4,  2,  2,  2,  2,  1,  2,  2,  6,  6,  6,  6,  6,  4,  4,  4,  4,  4,  2,  2,  2 },
    /* slice     */ { 6,  4,  4,  4,  6,  4,  2,  2,  2,  4,  2,  2,  4,  2,  2, 24,  6,  4,  8,  4,  4,  8,  2,  2,  4 },
    /* transpose */ { 6,  4,  2,  2,  2,  2,  2,  2,  8,  2,  2,  1,  2,  2,  2,  1,  6,  4,  4,  4,  4,  4,  2,  2,  2 },
    /* unary     */ { 4,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  8,  4,  6,  6,  4,  4,  4,  4,  4,  2,  2,  2 },
    /* binary    */ { 6,  4,  4,  8,  4,  4,  2,  4,  2,  2,  2,  2,  4,  4,  2,  4,  6,  4,  8,  4,  4,  4,  2,  2,  2 },
    /* cast      */ { 4,  4,  6,  2,  6,  4,  2,  2,  2,  8,  2,  2,  2,  2,  1,  4,  6,  4,  8,  4,  4,  8,  2,  2,  8 },
    /* broadcast */ { 6,  4,  4,  8,  4,  4,  2,  4,  2,  2,  2,  2,  4,  4,  2,  2,  6,  4,  8,  4,  4,  4,  2,  2,  2 },
    /* lookup    */ { 4,  2,  2,  4,  4,  2,  2,  2,  2,  1,  2,  2,  6,  6,  6,  6,  1,  2,  4,  4,  4,  4,  2,  2,  4 },
    /* grid_slice*/ { 4,  2,  2,  4,  4,  2,  2,  2,  2,  1,  2,  2,  6,  6,  6,  6,  2,  1,  4,  4,  4,  4,  2,  2,  2 },
    /* layer_conv*/ { 4,  2,  4, 20,  2,  2,  2,  2,  1,  1,  2,  1,  2,  4,  2,  4,  2,  2,  4,  8,  8,  2,  4,  4,  1 },
    /* depthwise */ { 4,  2,  4,  8,  2,  2,  2,  2,  1,  1,  2,  1,  2,  4,  2,  4,  2,  2, 20,  2,  4,  2,  2,  2,  1 },
    /* softmax   */ { 4,  2,  2,  2,  2,  2,  2,  4,  1,  1,  2,  1,  2,  6,  2,  6,  2,  2,  8,  4,  0,  2,  6,  6,  1 },
    /* pack      */ { 6,  6,  4,  2,  4,  2,  1,  4,  1,  1,  2,  1,  2,  2,  2,  2,  2,  2, 32, 16,  4,  0,  2,  2,  6 },
    /* unpack    */ { 6,  2,  2,  2,  4,  2,  2,  2,  2,  2,  2,  2,  2,  8,  2,  6,  2,  2,  4,  4,  2,  8,  0,  1,  4 },
    /* recolor   */ { 4,  2,  2,  2,  4,  2,  2,  2,  1,  1,  2,  1,  2,  4,  2,  4,  2,  2,  8,  4,  4,  2,  2,  0,  2 },
    /* fixed_int.*/ { 6,  2,  4,  2,  4,  4,  4,  1,  2,  2,  2,  2,  2,  4,  8,  2,  4,  2,  1,  1,  1,  4,  1,  1,  0 },
    /* (start)   */ { 6,  4,  2,  2, 16,  4,  2,  4,  2,  2,  4,  2,  2,  0,  6,  0,  8,  6, 12,  8,  4, 16,  2,  2,  6 },
};

/* Whether kind k can follow with a as its main operand and the Funcs left. */
static bool available(const rp_gen *g, int k, const rp_func *a) {
    int left = g->target - g->funcs;
    switch (k) {
    case RANDPIPE_POOL: return true;
    case RANDPIPE_PAD: return true;
    case RANDPIPE_DOWNSAMPLE: return halvable(g, a, true) >= 0;
    case RANDPIPE_UPSAMPLE: return halvable(g, a, false) >= 0;
    case RANDPIPE_ALL_TO_ALL: return a->ndims == 3;
    case RANDPIPE_SCAN: return small_ext(g, a->ext[0]) >= 2 && small_ext(g, a->ext[1]) >= 2;
    case RANDPIPE_HISTOGRAM: return left >= 2 && small_ext(g, a->ext[1]) >= 4;
    case RANDPIPE_SLICE: {
        int64_t m = small_ext(g, a->ext[0]) < small_ext(g, a->ext[1]) ? small_ext(g, a->ext[0]) : small_ext(g, a->ext[1]);
        return a->ndims == 3 || m >= RP_MIN_EXT + 2;
    }
    case RANDPIPE_BINARY: return partners(g, a, same_shape, -1, NULL) > 0;
    case RANDPIPE_BROADCAST: return partners(g, a, xy_shape, -1, NULL) > 0;
    case RANDPIPE_LOOKUP: return left >= 2;
    case RANDPIPE_GRID_SLICE: return left >= 2 && small_ext(g, a->ext[0]) >= 8 && small_ext(g, a->ext[1]) >= 8;
    case RANDPIPE_LAYER_CONV: return a->ndims == 3;
    case RANDPIPE_DEPTHWISE: return a->ndims == 3;
    case RANDPIPE_SOFTMAX: return left >= 4 && a->ndims == 3;
    case RANDPIPE_PACK: return a->ndims == 2 && halvable(g, a, true) == 2;
    case RANDPIPE_UNPACK: return a->ndims == 3 && a->ext[2].add >= 4 && halvable(g, a, false) == 2;
    case RANDPIPE_RECOLOR: return a->ndims == 3 && a->ext[2].add >= 3;
    case RANDPIPE_FIXED_INTERP: return left >= 2;
    default: return true;
    }
}

/* Estimated operations of the whole pipeline at sizes W x H. */
static int64_t work_at(const rp_gen *g, int64_t W, int64_t H) {
    int64_t w = 0;
    for (int i = 0; i < g->npool; i++) {
        const rp_func *f = &g->pool[i];
        if (f->strict) continue;
        int64_t pts = 1;
        for (int d = 0; d < f->ndims; d++) {
            int64_t e = ext_val(f->ext[d], W, H);
            pts *= e > 1 ? e : 1;
        }
        w += pts * f->cost;
    }
    return w;
}

/* The paper sizes: the largest W (a multiple of 16, H following the
 * aspect ratio) whose estimated work is at most the target. */
static void choose_sizes(rp_gen *g, int64_t target, int aspect16, int *W, int *H) {
    int bw = 0, bh = 0;
    for (int w = 64; w <= 4096; w += 16) {
        int h = (w * aspect16 / 16 + 15) / 16 * 16;
        if (w < g->sw || h < g->sh) continue;
        if (bw && work_at(g, w, h) > target) break;
        bw = w;
        bh = h;
    }
    *W = bw;
    *H = bh;
}

const char *randpipe_kind_name(int kind) {
    static const char *const names[] = {
#define RANDPIPE_NAME_(id, name) name,
        RANDPIPE_KINDS(RANDPIPE_NAME_)
#undef RANDPIPE_NAME_
    };
    return kind >= 0 && kind < RANDPIPE_NKINDS ? names[kind] : "?";
}

/* Estimated work targets (operations at paper size), log-spaced; the
 * calibration in docs/random_pipelines.md maps them to times. */
enum { RP_WORK_LO = 10000000, RP_WORK_STEPS = 18 };    /* x 2^(i/4): 1e7 .. ~1.9e8 */

static int64_t work_target(rp_rng *r) {
    static const int quarter[4] = { 16, 19, 23, 27 };  /* 16 * 2^(j/4) */
    int i = rng_below(r, RP_WORK_STEPS);
    return (int64_t)RP_WORK_LO * quarter[i % 4] / 16 << (i / 4);
}

const char *randpipe_ops_name(int ops) {
    static const char *const names[RANDPIPE_NOPS] = { "classic", "lookups", "layers" };
    return ops >= 0 && ops < RANDPIPE_NOPS ? names[ops] : "?";
}

int randpipe_ops_parse(const char *name) {
    for (int o = 0; o < RANDPIPE_NOPS; o++)
        if (name && !strcmp(name, randpipe_ops_name(o))) return o;
    return -1;
}

void randpipe_ops_list(char *out, size_t n) {
    size_t at = 0;
    if (n) out[0] = 0;
    for (int o = 0; o < RANDPIPE_NOPS && at < n; o++) {
        int w = snprintf(out + at, n - at, "%s%s", o ? ", " : "", randpipe_ops_name(o));
        at += w > 0 ? (size_t)w : 0;
    }
}

void randpipe_pipeline_name(uint64_t seed, randpipe_ops ops, char *out, size_t n) {
    if (ops == RANDPIPE_OPS_CLASSIC) snprintf(out, n, "random_%llu", (unsigned long long)seed);
    else snprintf(out, n, "random_%s_%llu", randpipe_ops_name(ops), (unsigned long long)seed);
}

char *randpipe_generate(uint64_t seed, int stages, randpipe_info *info) {
    return randpipe_generate_ops(seed, stages, RANDPIPE_OPS_CLASSIC, info);
}

char *randpipe_generate_ops(uint64_t seed, int stages, randpipe_ops ops, randpipe_info *info) {
    if (stages != 0 && (stages < RANDPIPE_MIN_STAGES || stages > RANDPIPE_MAX_STAGES)) return NULL;
    if ((int)ops < 0 || ops >= RANDPIPE_NOPS) return NULL;
    /* the classic and lookups sets draw as they always have: the kinds
     * after theirs weigh nothing, and a draw of their own is unchanged */
    static const int set_kinds[RANDPIPE_NOPS] = { RANDPIPE_CLASSIC_NKINDS, RANDPIPE_LOOKUPS_NKINDS, RANDPIPE_NKINDS };
    int nkinds = set_kinds[ops];
    rp_gen *g = base_calloc(1, sizeof *g);
    g->rng.s = seed;
    rng_next(&g->rng);
    g->target = stages ? stages : rng_range(&g->rng, RANDPIPE_MIN_STAGES, RANDPIPE_MAX_STAGES);
    static const int sws[] = { 32, 48, 64 }, shs[] = { 24, 32, 48 };
    g->sw = sws[rng_below(&g->rng, 3)];
    g->sh = shs[rng_below(&g->rng, 3)];
    static const int aspects[] = { 8, 12, 16, 21 };     /* H / W in 16ths */
    int aspect16 = aspects[rng_below(&g->rng, 4)];

    /* the input */
    static const int in_types[] = { T_F32, T_F32, T_F32, T_F32, T_U8, T_U8, T_U8, T_U16, T_U16, T_I16 };
    static const int chans[] = { 3, 3, 4, 8, 16 };
    rp_func *in = &g->pool[g->npool++];
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "in");
    in->type = in_types[rng_below(&g->rng, 10)];
    in->ndims = rng_chance(&g->rng, ops == RANDPIPE_OPS_LAYERS ? 4 : 3, 5) ? 3 : 2;     /* layers: images of channels */
    in->ext[0] = (rp_ext){ 'W', 0, 0 };
    in->ext[1] = (rp_ext){ 'H', 0, 0 };
    in->ext[2] = (rp_ext){ 0, 0, chans[rng_below(&g->rng, 5)] };
    in->strict = true;
    g->inputs = 1;

    randpipe_kind kinds[RANDPIPE_MAX_STAGES];
    int nops = 0, prev = RANDPIPE_NKINDS;
    const rp_func *a = in;
    while (g->funcs < g->target) {
        int w[RANDPIPE_NKINDS], total = 0;
        for (int k = 0; k < RANDPIPE_NKINDS; k++) {
            w[k] = k < nkinds && available(g, k, a) ? chain[prev][k] : 0;
            total += w[k];
        }
        int k = RANDPIPE_ACTIVATION;
        if (total > 0) {
            int r = rng_below(&g->rng, total);
            for (k = 0; r >= w[k]; k++) r -= w[k];
        }
        op_table[k](g, a);
        kinds[nops++] = (randpipe_kind)k;
        a = &g->pool[g->npool - 1];
        prev = k;
    }

    /* outputs: the newest Func, sometimes also an earlier one */
    const rp_func *outs[2] = { a, NULL };
    int nout = 1;
    if (g->npool > 3 && rng_chance(&g->rng, 1, 8)) {
        int j = rng_range(&g->rng, 1, g->npool - 2);
        outs[nout++] = &g->pool[j];
    }
    int64_t target = work_target(&g->rng);
    int W, H;
    choose_sizes(g, target, aspect16, &W, &H);
    int64_t work = work_at(g, W, H);

    char pname[48];
    randpipe_pipeline_name(seed, ops, pname, sizeof pname);
    char ops_opt[48] = "", stages_opt[32] = "";
    if (ops != RANDPIPE_OPS_CLASSIC) snprintf(ops_opt, sizeof ops_opt, " --ops %s", randpipe_ops_name(ops));
    if (stages) snprintf(stages_opt, sizeof stages_opt, " --stages %d", stages);
    rp_buf out = {0};
    buf_printf(&out, "# %s - a random pipeline: stagecraft random-pipeline%s --seed %llu%s", pname, ops_opt,
               (unsigned long long)seed, stages_opt);
    buf_printf(&out, "\n# %d Funcs, %d definitions, %d operations:\n#  ", g->funcs, g->defs, nops);
    /* the descriptions, wrapped */
    int col = 3;
    for (const char *s = g->desc.s; s && *s;) {
        const char *end = strstr(s, ", ");
        size_t len = end ? (size_t)(end - s) + 1 : strlen(s);
        if (col + (int)len > 76) { buf_printf(&out, "\n#  "); col = 3; }
        buf_printf(&out, " %.*s", (int)len, s);
        col += (int)len + 1;
        s += len + (end ? 1 : 0);
    }
    buf_printf(&out, "\n# Sizes: W x H = %d x %d (small %d x %d); estimated work %lld operations.\n",
               W, H, g->sw, g->sh, (long long)work);
    buf_printf(&out, "pipeline %s;\nsize W = %d small %d;\nsize H = %d small %d;\n", pname, W, g->sw, H,
               g->sh);
    buf_printf(&out, "input %s in(W, H", type_names[in->type]);
    if (in->ndims == 3) buf_printf(&out, ", %d", in->ext[2].add);
    buf_printf(&out, ");\n%s", g->body.s ? g->body.s : "");
    for (int i = 0; i < nout; i++) {
        buf_printf(&out, "output %s(", outs[i]->name);
        for (int d = 0; d < outs[i]->ndims; d++) {
            char e[48];
            ext_text(outs[i]->ext[d], e, sizeof e);
            buf_printf(&out, "%s%s", d ? ", " : "", e);
        }
        buf_printf(&out, ");\n");
    }

    if (info) {
        memset(info, 0, sizeof *info);
        info->seed = seed;
        info->funcs = g->funcs;
        info->defs = g->defs;
        info->nops = nops;
        for (int i = 0; i < nops; i++) {
            info->ops[i] = kinds[i];
            info->kind_count[kinds[i]]++;
        }
        info->inputs = g->inputs;
        info->outputs = nout;
        info->width = W;
        info->height = H;
        info->small_width = g->sw;
        info->small_height = g->sh;
        info->work = (double)work;
    }
    free(g->body.s);
    free(g->desc.s);
    free(g);
    return out.s;
}
