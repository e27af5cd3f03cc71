/*
 * floor.c - traffic floors, arithmetic counts and the device's copy
 * bandwidth and arithmetic rate (floor.h).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "floor.h"
#include "sched.h"
#include "space.h"

/* ---- the traffic floor ------------------------------------------------------ */

/* The stage being walked for the input calls it makes, and the box read
 * of every input so far (lo > hi: nothing read yet). */
typedef struct {
    const bounds_result *b;
    int nvars;
    const char *vars[SC_MAX_DIMS];
    bounds_interval iv[SC_MAX_DIMS];
    bounds_interval *read;            /* [func id * SC_MAX_DIMS + dim] */
} floor_walk;

static void grow_read(const sc_expr *e, void *user) {
    floor_walk *w = user;
    if (e->kind != E_CALL || e->func->kind != FUNC_INPUT) return;
    bounds_interval *r = &w->read[e->func->id * SC_MAX_DIMS];
    for (int d = 0; d < e->nargs; d++) {
        bool ok = true;
        bounds_interval a = bounds_of_expr_in(w->b, e->args[d], w->nvars, w->vars, w->iv, &ok);
        /* bounds_infer has already rejected reads that are unbounded or
         * outside the input; clip anyway so the floor never counts more
         * than the input holds */
        if (!ok || a.lo < 0) a.lo = 0;
        if (!ok || a.hi > e->func->extent[d] - 1) a.hi = e->func->extent[d] - 1;
        if (a.lo < r[d].lo) r[d].lo = a.lo;
        if (a.hi > r[d].hi) r[d].hi = a.hi;
    }
}

/* Whether stage s of f runs at all: bounds gives the stages of Funcs no
 * output needs empty loops. */
static bool stage_runs(const bounds_stage *bs) {
    for (int l = 0; l < bs->nloops; l++)
        if (bs->extent[l] <= 0) return false;
    return true;
}

int64_t floor_read_bytes(const sc_pipeline *p, const bounds_result *b) {
    int n = p->funcs.n;
    floor_walk w = { .b = b, .read = base_calloc((size_t)n * SC_MAX_DIMS, sizeof(bounds_interval)) };
    for (int i = 0; i < n * SC_MAX_DIMS; i++) w.read[i] = (bounds_interval){ INFINITY, -INFINITY };
    for (int i = 0; i < n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (f->kind != FUNC_DEFINED) continue;
        for (int s = 0; s < f->nstages && s < b->funcs[i].nstages; s++) {
            const bounds_stage *bs = &b->funcs[i].stages[s];
            if (!stage_runs(bs)) continue;
            w.nvars = 0;
            for (int l = 0; l < bs->nloops; l++) {
                if (bs->which[l] < 0) continue;     /* reduction loops: bounds knows their domain */
                w.vars[w.nvars] = f->vars[bs->which[l]];
                w.iv[w.nvars++] = (bounds_interval){ (double)bs->min[l], (double)(bs->min[l] + bs->extent[l] - 1) };
            }
            const ir_stage *st = &f->stages[s];
            for (int a = 0; a < st->nargs; a++) ir_visit(st->args[a], grow_read, &w);
            ir_visit(st->value, grow_read, &w);
        }
    }
    int64_t bytes = 0;
    for (int i = 0; i < p->inputs.n; i++) {
        const sc_func *in = p->inputs.items[i];
        const bounds_interval *r = &w.read[in->id * SC_MAX_DIMS];
        int64_t points = 1;
        for (int d = 0; d < in->ndims; d++) points *= r[d].hi >= r[d].lo ? (int64_t)(r[d].hi - r[d].lo) + 1 : 0;
        bytes += points * (int64_t)sc_type_size(in->type);
    }
    free(w.read);
    return bytes;
}

int64_t floor_traffic_bytes(const sc_pipeline *p, const bounds_result *b) {
    int64_t bytes = floor_read_bytes(p, b);
    for (int i = 0; i < p->outputs.n; i++) {
        const sc_func *f = p->outputs.items[i];
        int64_t points = 1;
        for (int d = 0; d < f->ndims; d++) points *= f->out_extent[d];
        bytes += points * (int64_t)sc_type_size(f->type);
    }
    return bytes;
}

/* ---- arithmetic ---------------------------------------------------------------- */

/* The operations of e per evaluation, by floor.h's rule: calls count
 * nothing (their coordinates are address arithmetic), casts, constants
 * and variables nothing. */
static int64_t expr_ops(const sc_expr *e) {
    switch (e->kind) {
    case E_CALL: case E_CONST: case E_VAR: case E_RVAR: case E_PARAM:
        return 0;
    case E_CAST:
        return expr_ops(e->args[0]);
    case E_BINARY: case E_UNARY: case E_SELECT: case E_MATH: {
        int64_t n = 1;
        for (int i = 0; i < e->nargs; i++) n += expr_ops(e->args[i]);
        return n;
    }
    default:
        assert(!"unknown expression kind");
        return 0;
    }
}

double floor_ops(const sc_pipeline *p, const bounds_result *b) {
    double ops = 0;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (f->kind != FUNC_DEFINED) continue;
        for (int s = 0; s < f->nstages && s < b->funcs[i].nstages; s++) {
            const bounds_stage *bs = &b->funcs[i].stages[s];
            if (!stage_runs(bs)) continue;
            double points = 1;
            for (int l = 0; l < bs->nloops; l++) points *= (double)bs->extent[l];
            ops += points * (double)expr_ops(f->stages[s].value);
        }
    }
    return ops;
}

double floor_intensity(const sc_pipeline *p, const bounds_result *b) {
    int64_t bytes = floor_traffic_bytes(p, b);
    return bytes > 0 ? floor_ops(p, b) / (double)bytes : INFINITY;
}

bool floor_is_memory_bound(const sc_pipeline *p, const bounds_result *b, double balance) {
    return floor_intensity(p, b) < balance;
}

double floor_time_ms(const sc_pipeline *p, const bounds_result *b, double gbs) {
    return (double)floor_traffic_bytes(p, b) / (gbs * 1e9) * 1e3;
}

/* ---- measuring the device ---------------------------------------------------------- */

/* The schedules the device measurements try: the baseline, then root
 * tilings of the output of 64 to 256 threads
 * with 1 to 16 points each, along x (contiguous per thread: what a CPU's
 * vector units take) or along y (coalesced per warp: what a GPU's memory
 * takes).  On PoCL here [x=256x8] copies about 4x faster than the
 * baseline's [x=64x1]; on an H100 the baseline reached a quarter of the
 * card's bandwidth (docs/benchmarks.md). */
static const char *const tilings[] = {
    NULL,
    "x=256x1 y=1x1",
    "x=256x1 y=1x4",
    "x=128x1 y=1x16",
    "x=64x4 y=1x1",
    "x=128x8 y=1x1",
    "x=256x8 y=1x1",
    "x=64x16 y=1x1",
};
enum { NTILINGS = sizeof tilings / sizeof tilings[0] };

/* "baseline" or "root [TILING]" for the winner of measure_text. */
static void tiling_name(int best, char *which, size_t len) {
    if (!which || !len) return;
    if (best >= 0 && tilings[best]) snprintf(which, len, "root [%s]", tilings[best]);
    else snprintf(which, len, "baseline");
}

/* Parses text, computes its reference output and measures the baseline
 * and each of the tilings above of its output Func func that is legal for t,
 * keeping the fastest's outcome in *o and its index in *best (-1: none
 * ran); the pipeline's floor_ops (ops) and floor_traffic_bytes (bytes)
 * come back with the outcome. */
static void measure_text(const measure_device *d, const target *t, const char *text, const char *func,
                         measure_limits lim, measure_outcome *o, int *best, double *ops, double *bytes) {
    memset(o, 0, sizeof *o);
    o->kind = MEASURE_FAILED;
    sc_pipeline *p = sc_parse_string("floor.pipe", text, strlen(text), NULL);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    if (!b) {
        /* the text is ours: an error in it is a bug */
        assert(!"floor: the measuring pipeline does not parse or bound");
        sc_pipeline_free(p);
        return;
    }
    *ops = floor_ops(p, b);
    *bytes = (double)floor_traffic_bytes(p, b);
    ir_arena *a = ir_arena_new();
    sc_buffer *in[1] = { sc_input_random(p, 0, 1) }, *ref[1] = { NULL };
    if (!in[0] || sc_evaluate(p, in, 1, ref) != 0)
        snprintf(o->msg, sizeof o->msg, "floor: the reference evaluator failed (%s)",
                 sc_error_count(p) ? sc_error_message(p, 0) : "out of memory");
    else
        for (int i = 0; i < NTILINGS; i++) {
            char err[512];
            char full[512];
            if (tilings[i]) snprintf(full, sizeof full, "schedule %s;\n%s: root [%s];\n", p->name, func, tilings[i]);
            sched_state *s = tilings[i] ? sched_parse(a, p, "floor", full, err, sizeof err)
                                        : space_baseline(a, p, b, t);
            if (!s || sched_check(p, b, s, t, false, err, sizeof err) != 0) {
                if (*best < 0) snprintf(o->msg, sizeof o->msg, "floor: schedule %d: %s", i, err);
                continue;
            }
            measure_outcome one;
            measure_schedule(d, p, b, s, NULL, in, ref, lim, &one);
            if (*best < 0 || (one.kind == MEASURE_OK && (o->kind != MEASURE_OK || one.ms < o->ms))) {
                *o = one;
                *best = i;
            }
        }
    sc_buffer_free(in[0]);
    sc_buffer_free(ref[0]);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

double floor_copy_bandwidth(const measure_device *d, const target *t, int64_t bytes, measure_limits lim,
                            measure_outcome *o, char *which, size_t whichlen) {
    int64_t rows = bytes / (4096 * 4);
    if (rows < 1) rows = 1;
    if (rows > 1 << 20) rows = 1 << 20;
    char text[256];
    snprintf(text, sizeof text, "input f32 in(4096, %lld);\ncopy(x, y) = in(x, y);\noutput copy(4096, %lld);\n",
             (long long)rows, (long long)rows);
    double ops, moved;
    int best = -1;
    measure_text(d, t, text, "copy", lim, o, &best, &ops, &moved);
    tiling_name(best, which, whichlen);
    return o->kind == MEASURE_OK && o->ms > 0 ? moved / (o->ms * 1e-3) / 1e9 : -1;
}

/* Chains and steps of the compute-bound pipeline: enough independent work
 * per point for the vector units to overlap (on PoCL 8 chains of 64 steps
 * reach 40-48 Gop/s, 32 of 32 60-62), few enough steps for OpenCL
 * compilers' nesting limits (PoCL fails to build 128 nested steps), and a
 * value that stays near 1 (a < 1, b = 1 - a: the fixed point of v * a + b
 * is 1).  Fast math may contract each step into a fused multiply-add but
 * cannot fold a chain (its time is half the exact code's, as two
 * instructions per step against one would give). */
enum { PEAK_CHAINS = 32, PEAK_STEPS = 32, PEAK_WIDTH = 512 };

double floor_peak_ops(const measure_device *d, const target *t, int64_t points, measure_limits lim,
                      measure_outcome *o, char *which, size_t whichlen) {
    int64_t rows = points / PEAK_WIDTH;
    if (rows < 1) rows = 1;
    if (rows > 1 << 16) rows = 1 << 16;
    size_t cap = 64 + (size_t)PEAK_CHAINS * (PEAK_STEPS * 24 + 32), len = 0;
    char *text = base_calloc(cap, 1);
    len += (size_t)snprintf(text + len, cap - len, "input f32 in(%d, %lld);\nout(x, y) =", PEAK_WIDTH,
                            (long long)rows);
    for (int c = 0; c < PEAK_CHAINS; c++) {
        /* a different factor per chain, so no two chains are the same
         * expression for a compiler to share */
        double a = 0.999 - 0.001 * c;
        len += (size_t)snprintf(text + len, cap - len, "%s", c ? "\n  + " : " ");
        for (int s = 0; s < PEAK_STEPS; s++) text[len++] = '(';
        len += (size_t)snprintf(text + len, cap - len, "in(x, y)");
        for (int s = 0; s < PEAK_STEPS; s++)
            len += (size_t)snprintf(text + len, cap - len, " * %.3f + %.3f)", a, 1 - a);
    }
    snprintf(text + len, cap - len, ";\noutput out(%d, %lld);\n", PEAK_WIDTH, (long long)rows);
    double ops, moved;
    int best = -1;
    measure_text(d, t, text, "out", lim, o, &best, &ops, &moved);
    free(text);
    tiling_name(best, which, whichlen);
    return o->kind == MEASURE_OK && o->ms > 0 ? ops / (o->ms * 1e-3) / 1e9 : -1;
}
