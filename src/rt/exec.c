/*
 * exec.c - running a lowered program on a device (exec.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"

struct exec_session {
    const rt_ops *ops;
    rt_device *dev;
    const lower_program *prog;
    char *source;
    rt_module *mod;
    rt_kernel_info *info;
    int ninfo;
    rt_buf **bufs;                 /* [index in prog->buffers] */
    cg_launch *launches;           /* what runs the program (codegen.h) */
    int nlaunches;
};

static int buffer_index(const lower_program *prog, const lower_alloc *a) {
    for (int i = 0; i < prog->nbuffers; i++)
        if (prog->buffers[i] == a) return i;
    return -1;
}

exec_session *exec_open(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                        const char *options, char *err, size_t errlen) {
    return exec_open_math(ops, dev, prog, CG_MATH_EXACT, options, err, errlen);
}

exec_session *exec_open_math(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                             cg_math math, const char *options, char *err, size_t errlen) {
    cg_backend be;
    if (cg_backend_parse(ops->name, &be) != 0) {
        snprintf(err, errlen, "no code generator for device kind %s", ops->name);
        return NULL;
    }
    exec_session *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->ops = ops;
    s->dev = dev;
    s->prog = prog;
    s->source = cg_generate_launches(prog, be, math, &s->launches, &s->nlaunches);
    s->bufs = calloc((size_t)prog->nbuffers + 1, sizeof(rt_buf *));
    if (!s->source || !s->bufs) abort();
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%s%s", cg_math_options(be, math), options ? " " : "", options ? options : "");
    s->mod = ops->compile(dev, s->source, opts, err, errlen);
    if (!s->mod) { exec_close(s); return NULL; }
    s->ninfo = ops->kernel_info ? ops->kernel_info(s->mod, &s->info) : 0;
    if (s->ninfo < 0) s->ninfo = 0;
    if (!ops->can_run(dev)) return s;      /* compile-only: no buffers */
    for (int i = 0; i < prog->nbuffers; i++) {
        const lower_alloc *a = prog->buffers[i];
        size_t bytes = (size_t)a->count * sc_type_size(a->func->type);
        s->bufs[i] = ops->alloc(dev, bytes ? bytes : 1, err, errlen);
        if (!s->bufs[i]) { exec_close(s); return NULL; }
    }
    return s;
}

void exec_close(exec_session *s) {
    if (!s) return;
    for (int i = 0; s->bufs && i < s->prog->nbuffers; i++)
        if (s->bufs[i]) s->ops->buf_free(s->bufs[i]);
    if (s->mod) s->ops->module_free(s->mod);
    free(s->info);
    free(s->bufs);
    free(s->source);
    free(s->launches);
    free(s);
}

const char *exec_source(const exec_session *s) { return s->source; }

int exec_kernel_info(exec_session *s, const rt_kernel_info **info) {
    *info = s->info;
    return s->ninfo;
}

static bool check_can_run(exec_session *s, char *err, size_t errlen) {
    if (s->ops->can_run(s->dev)) return true;
    snprintf(err, errlen, "%s: this device can compile but not run kernels (%s)", s->ops->name,
             s->ops->describe(s->dev));
    return false;
}

int exec_upload(exec_session *s, sc_buffer *const *inputs, char *err, size_t errlen) {
    if (!check_can_run(s, err, errlen)) return -1;
    const sc_pipeline *p = s->prog->p;
    for (int i = 0; i < p->inputs.n; i++) {
        const sc_func *f = p->inputs.items[i];
        int bi = -1;
        for (int j = 0; j < s->prog->nbuffers; j++)
            if (s->prog->buffers[j]->func == f) bi = j;
        if (bi < 0) continue;                       /* an input nothing reads */
        const sc_buffer *b = inputs[i];
        bool ok = b && b->type == f->type && b->ndims == f->ndims;
        for (int d = 0; ok && d < f->ndims; d++) ok = b->min[d] == 0 && b->extent[d] == f->extent[d];
        if (!ok) {
            snprintf(err, errlen, "input %s: the buffer does not match its declaration", f->name);
            return -1;
        }
        size_t bytes = (size_t)sc_buffer_count(b) * sc_type_size(b->type);
        if (s->ops->write(s->bufs[bi], b->data, bytes, err, errlen) != 0) return -1;
    }
    return 0;
}

/* Enqueues kernel i of the program: its launches (one, or for split
 * interior blocks two, codegen.h). */
static int launch_one(exec_session *s, int i, char *err, size_t errlen) {
    const lower_kernel *k = s->prog->kernels[i];
    int n = k->nargs + k->nparams;
    rt_arg *args = calloc((size_t)n + 1, sizeof(rt_arg));
    if (!args) abort();
    for (int a = 0; a < k->nargs; a++) {
        args[a].kind = RT_ARG_BUF;
        args[a].buf = s->bufs[buffer_index(s->prog, k->args[a])];
    }
    for (int a = 0; a < k->nparams; a++) {
        const sc_param *q = k->params[a];
        rt_arg *r = &args[k->nargs + a];
        if (q->type == SC_F32) { r->kind = RT_ARG_F32; r->f = (float)q->value; }
        else { r->kind = RT_ARG_I32; r->i = (int32_t)(int64_t)q->value; }
    }
    int rc = 0;
    for (int l = 0; l < s->nlaunches && rc == 0; l++) {
        if (s->launches[l].kernel != i) continue;
        char name[512];
        snprintf(name, sizeof name, "%s%s", k->name, s->launches[l].interior ? CG_INTERIOR_SUFFIX : "");
        rc = s->ops->launch(s->mod, name, s->launches[l].nblocks, k->nthreads, n, args, err, errlen);
    }
    free(args);
    return rc != 0 ? -1 : 0;
}

static int launch_all(exec_session *s, char *err, size_t errlen) {
    for (int i = 0; i < s->prog->nkernels; i++)
        if (launch_one(s, i, err, errlen) != 0) return -1;
    return 0;
}

int exec_run(exec_session *s, int timeout_ms, char *err, size_t errlen) {
    if (!check_can_run(s, err, errlen)) return -1;
    if (launch_all(s, err, errlen) != 0) return -1;
    return s->ops->finish(s->dev, timeout_ms, err, errlen);
}

int exec_download(exec_session *s, sc_buffer **outputs, char *err, size_t errlen) {
    if (!check_can_run(s, err, errlen)) return -1;
    const sc_pipeline *p = s->prog->p;
    for (int i = 0; i < p->outputs.n; i++) outputs[i] = NULL;
    for (int i = 0; i < p->outputs.n; i++) {
        const sc_func *f = p->outputs.items[i];
        int bi = -1;
        for (int j = 0; j < s->prog->nbuffers; j++)
            if (s->prog->buffers[j]->func == f) bi = j;
        if (bi < 0) { snprintf(err, errlen, "output %s has no buffer", f->name); return -1; }
        const lower_alloc *a = s->prog->buffers[bi];
        size_t esize = sc_type_size(f->type);
        char *all = malloc((size_t)a->count * esize + 1);
        if (!all) { snprintf(err, errlen, "out of memory reading %s", f->name); return -1; }
        if (s->ops->read(s->bufs[bi], all, (size_t)a->count * esize, err, errlen) != 0) { free(all); return -1; }
        /* a 0-D output is one element, a 1-D buffer of extent 1 as the
         * reference evaluator gives it */
        if (f->ndims == 0) {
            static const int one[SC_MAX_DIMS] = {1};
            outputs[i] = sc_buffer_new(f->type, 1, NULL, one);
            if (outputs[i]) memcpy(outputs[i]->data, all, esize);
            free(all);
            if (!outputs[i]) { snprintf(err, errlen, "cannot allocate output %s", f->name); return -1; }
            continue;
        }
        int zero[SC_MAX_DIMS] = {0};
        sc_buffer *out = sc_buffer_new(f->type, f->ndims, zero, f->out_extent);
        if (!out) { free(all); snprintf(err, errlen, "cannot allocate output %s", f->name); return -1; }
        /* copy rows of dimension 0 from the Func's region into [0, out_extent) */
        int64_t rows = sc_buffer_count(out) / f->out_extent[0];
        for (int64_t r = 0; r < rows; r++) {
            int64_t rem = r, src = 0, dst = 0;
            for (int d = 1; d < f->ndims; d++) {
                int64_t c = rem % f->out_extent[d];
                rem /= f->out_extent[d];
                src += (c - a->min[d]->c.i) * a->stride[d];
                dst += c * out->stride[d];
            }
            src += (0 - a->min[0]->c.i) * a->stride[0];
            memcpy((char *)out->data + dst * (int64_t)esize, all + src * (int64_t)esize,
                   (size_t)f->out_extent[0] * esize);
        }
        free(all);
        outputs[i] = out;
    }
    return 0;
}

/* The device's timer started; -1 with err saying why it cannot be (a
 * device left unusable by an earlier time-out names that time-out). */
static int timer_start(exec_session *s, char *err, size_t errlen) {
    char why[400] = "";
    if (s->ops->timer_start(s->dev, why, sizeof why) == 0) return 0;
    snprintf(err, errlen, "cannot start the timer: %s", why[0] ? why : "the device refused");
    return -1;
}

double exec_time(exec_session *s, int warmup, int runs, int samples, int timeout_ms,
                 char *err, size_t errlen) {
    for (int i = 0; i < warmup; i++)
        if (exec_run(s, timeout_ms, err, errlen) != 0) return -1;
    double best = INFINITY;
    for (int sm = 0; sm < samples; sm++) {
        if (timer_start(s, err, errlen) != 0) return -1;
        for (int r = 0; r < runs; r++)
            if (launch_all(s, err, errlen) != 0) return -1;
        if (s->ops->finish(s->dev, timeout_ms * (runs > 0 ? runs : 1), err, errlen) != 0) return -1;
        double ms = s->ops->timer_stop(s->dev);
        if (ms < 0) { snprintf(err, errlen, "the device timer failed"); return -1; }
        double mean = ms / (runs > 0 ? runs : 1);
        if (mean < best) best = mean;
    }
    return best;
}

int exec_kernel_times(exec_session *s, int runs, int timeout_ms, double *ms, char *err, size_t errlen) {
    if (!check_can_run(s, err, errlen)) return -1;
    for (int i = 0; i < s->prog->nkernels; i++) ms[i] = INFINITY;
    for (int r = 0; r < (runs > 0 ? runs : 1); r++)
        for (int i = 0; i < s->prog->nkernels; i++) {
            if (timer_start(s, err, errlen) != 0) return -1;
            if (launch_one(s, i, err, errlen) != 0) return -1;
            if (s->ops->finish(s->dev, timeout_ms, err, errlen) != 0) return -1;
            double t = s->ops->timer_stop(s->dev);
            if (t < 0) { snprintf(err, errlen, "the device timer failed"); return -1; }
            if (t < ms[i]) ms[i] = t;
        }
    return 0;
}

exec_session *exec_open_checked(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                                cg_math math, const char *options, sc_buffer *const *in,
                                sc_buffer *const *ref, int timeout_ms, exec_diff *diff,
                                char *err, size_t errlen) {
    memset(diff, 0, sizeof *diff);
    exec_session *s = exec_open_math(ops, dev, prog, math, options, err, errlen);
    if (!s) return NULL;
    const sc_pipeline *p = prog->p;
    exec_tol tol = exec_tolerance(math);
    sc_buffer **got = calloc((size_t)p->outputs.n + 1, sizeof *got);
    if (!got) abort();
    bool ok = exec_upload(s, in, err, errlen) == 0 && exec_run(s, timeout_ms, err, errlen) == 0 &&
              exec_download(s, got, err, errlen) == 0;
    for (int i = 0; ok && i < p->outputs.n; i++) {
        exec_diff d;
        if (exec_compare(got[i], ref[i], &tol, &d) != 0) {
            snprintf(err, errlen, "output %s: shape differs from the reference", ((sc_func *)p->outputs.items[i])->name);
            ok = false;
        }
        exec_diff_add(diff, &d);
    }
    for (int i = 0; i < p->outputs.n; i++) sc_buffer_free(got[i]);
    free(got);
    if (!ok) { exec_close(s); return NULL; }
    return s;
}

/* ---- comparing with the reference ------------------------------------------ */

/* The fast-math tolerance, set from every app on the C and OpenCL back
 * ends at its small size under random schedules (tests/test_schedules.c
 * with MATH=fast prints the figures per case; docs/backends.md has the
 * table and the reasons).  Beyond 64 ulps no point was further than
 * 7.8e-7 of the output's largest |value| from the reference (bgu);
 * FAST_FLOOR leaves a margin of 13 for devices not measured (CUDA's
 * intrinsics).  Outliers: local_laplacian's flipped remap indices moved
 * 1.4% of its points by up to 7e-4 of the scale at the small size (root
 * schedule), and 0.003% of them by up to 1.1e-3 at the paper size
 * (baseline), the only ones seen; FAST_OUTLIER_* are 2 to 4 times that. */
#define FAST_ULP 64
#define FAST_FLOOR 1e-5
#define FAST_OUTLIER_FLOOR 5e-3
#define FAST_OUTLIER_FRAC 0.03

exec_tol exec_tolerance(cg_math math) {
    if (math == CG_MATH_FAST)
        return (exec_tol){ false, FAST_ULP, FAST_FLOOR, FAST_OUTLIER_FLOOR, FAST_OUTLIER_FRAC };
    return (exec_tol){ true, 0, 0, 0, 0 };
}

const char *exec_tol_describe(const exec_tol *t, char *buf, size_t len) {
    if (t->exact)
        snprintf(buf, len, "bit-exact, NaN equal to NaN");
    else
        snprintf(buf, len, "within %" PRId64 " ulp (f32) or 1 (integers) or %g of the largest |value|, "
                 "at most %g%% of points within %g of it", t->max_ulp, t->abs_floor, t->outlier_frac * 100,
                 t->outlier_floor);
    return buf;
}

void exec_diff_add(exec_diff *a, const exec_diff *b) {
    a->points += b->points;
    a->mismatches += b->mismatches;
    a->differ += b->differ;
    a->outliers += b->outliers;
    if (b->max_abs > a->max_abs) a->max_abs = b->max_abs;
    if (b->max_far > a->max_far) a->max_far = b->max_far;
    if (b->max_ulp > a->max_ulp) a->max_ulp = b->max_ulp;
    if (b->scale > a->scale) a->scale = b->scale;
}

/* f32 bits as an integer that orders like the values: negative values
 * below zero, -0 and +0 both 0. */
static int64_t ordered_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u & 0x80000000u ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

int64_t exec_ulp_distance(float a, float b) {
    if (isnan(a) || isnan(b)) return INT64_MAX;
    int64_t d = ordered_bits(a) - ordered_bits(b);
    return d < 0 ? -d : d;
}

static bool same_bits(float a, float b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* Sorts a point that differs by a (ulp ulps for f32) into diff: close,
 * outlier or mismatch.  beyond: more than max_ulp (f32) or 1 (integers). */
static void judge(exec_diff *diff, const exec_tol *tol, double a, int64_t ulp, bool beyond, bool close) {
    diff->differ++;
    if (a > diff->max_abs) diff->max_abs = a;
    if (ulp > diff->max_ulp) diff->max_ulp = ulp;
    double far = diff->scale > 0 ? a / diff->scale : a;
    if (beyond && far > diff->max_far) diff->max_far = far;
    if (tol->exact || !isfinite(a)) diff->mismatches++;
    else if (close) return;
    else if (a <= tol->outlier_floor * diff->scale) diff->outliers++;
    else diff->mismatches++;
}

int exec_compare(const sc_buffer *got, const sc_buffer *ref, const exec_tol *tol, exec_diff *diff) {
    memset(diff, 0, sizeof *diff);
    if (got->type != ref->type || got->ndims != ref->ndims) return -1;
    for (int d = 0; d < got->ndims; d++)
        if (got->extent[d] != ref->extent[d] || got->min[d] != ref->min[d]) return -1;
    int64_t n = sc_buffer_count(ref);
    diff->points = n;
    /* both buffers are dense over the same box: compare them flat */
    if (ref->type == SC_F32) {
        const float *g = got->data, *r = ref->data;
        for (int64_t i = 0; i < n; i++)
            if (isfinite(r[i]) && fabsf(r[i]) > diff->scale) diff->scale = fabsf(r[i]);
        for (int64_t i = 0; i < n; i++) {
            if (same_bits(g[i], r[i])) continue;
            int64_t ulp = exec_ulp_distance(g[i], r[i]);
            double a = fabs((double)g[i] - (double)r[i]);
            if (ulp == INT64_MAX || isinf(g[i]) || isinf(r[i])) a = INFINITY;
            bool beyond = ulp > (tol->exact ? 0 : tol->max_ulp);
            judge(diff, tol, a, ulp, beyond, !beyond || a <= tol->abs_floor * diff->scale);
        }
    } else {
        int c[SC_MAX_DIMS];
        for (int pass = 0; pass < 2; pass++)
            for (int64_t i = 0; i < n; i++) {
                int64_t r = i;
                for (int d = 0; d < ref->ndims; d++) { c[d] = ref->min[d] + (int)(r % ref->extent[d]); r /= ref->extent[d]; }
                double a = sc_buffer_get(got, c), b = sc_buffer_get(ref, c);
                if (pass == 0) { if (fabs(b) > diff->scale) diff->scale = fabs(b); continue; }
                if (a != b) judge(diff, tol, fabs(a - b), 0, fabs(a - b) > 1, fabs(a - b) <= 1);
            }
    }
    if ((double)diff->outliers > tol->outlier_frac * (double)n) diff->mismatches += diff->outliers;
    return 0;
}
