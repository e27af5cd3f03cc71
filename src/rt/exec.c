/*
 * exec.c - running a lowered program on a device (exec.h).
 */
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
};

static int buffer_index(const lower_program *prog, const lower_alloc *a) {
    for (int i = 0; i < prog->nbuffers; i++)
        if (prog->buffers[i] == a) return i;
    return -1;
}

exec_session *exec_open(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                        const char *options, char *err, size_t errlen) {
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
    s->source = cg_generate(prog, be);
    s->bufs = calloc((size_t)prog->nbuffers + 1, sizeof(rt_buf *));
    if (!s->source || !s->bufs) abort();
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%s%s", cg_required_options(be), options ? " " : "", options ? options : "");
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

static int launch_all(exec_session *s, char *err, size_t errlen) {
    for (int i = 0; i < s->prog->nkernels; i++) {
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
        int rc = s->ops->launch(s->mod, k->name, k->nblocks, k->nthreads, n, args, err, errlen);
        free(args);
        if (rc != 0) return -1;
    }
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

double exec_time(exec_session *s, int warmup, int runs, int samples, int timeout_ms,
                 char *err, size_t errlen) {
    for (int i = 0; i < warmup; i++)
        if (exec_run(s, timeout_ms, err, errlen) != 0) return -1;
    double best = INFINITY;
    for (int sm = 0; sm < samples; sm++) {
        if (s->ops->timer_start(s->dev) != 0) { snprintf(err, errlen, "cannot start the timer"); return -1; }
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

exec_session *exec_open_checked(const rt_ops *ops, rt_device *dev, const lower_program *prog,
                                const char *options, sc_buffer *const *in, sc_buffer *const *ref,
                                double abs_tol, double rel_tol, int timeout_ms,
                                double *max_diff, int64_t *mismatches, char *err, size_t errlen) {
    *max_diff = 0;
    *mismatches = 0;
    exec_session *s = exec_open(ops, dev, prog, options, err, errlen);
    if (!s) return NULL;
    const sc_pipeline *p = prog->p;
    sc_buffer **got = calloc((size_t)p->outputs.n + 1, sizeof *got);
    if (!got) abort();
    bool ok = exec_upload(s, in, err, errlen) == 0 && exec_run(s, timeout_ms, err, errlen) == 0 &&
              exec_download(s, got, err, errlen) == 0;
    for (int i = 0; ok && i < p->outputs.n; i++) {
        double md;
        int64_t bad;
        if (exec_compare(got[i], ref[i], abs_tol, rel_tol, &md, &bad) != 0) {
            snprintf(err, errlen, "output %s: shape differs from the reference", ((sc_func *)p->outputs.items[i])->name);
            ok = false;
        }
        if (md > *max_diff) *max_diff = md;
        *mismatches += bad;
    }
    for (int i = 0; i < p->outputs.n; i++) sc_buffer_free(got[i]);
    free(got);
    if (!ok) { exec_close(s); return NULL; }
    return s;
}

int exec_compare(const sc_buffer *got, const sc_buffer *ref, double abs_tol, double rel_tol,
                 double *max_diff, int64_t *mismatches) {
    *max_diff = 0;
    *mismatches = 0;
    if (got->type != ref->type || got->ndims != ref->ndims) return -1;
    for (int d = 0; d < got->ndims; d++)
        if (got->extent[d] != ref->extent[d] || got->min[d] != ref->min[d]) return -1;
    int64_t n = sc_buffer_count(ref);
    int c[SC_MAX_DIMS];
    bool is_float = sc_type_is_float(ref->type);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int d = 0; d < ref->ndims; d++) { c[d] = ref->min[d] + (int)(r % ref->extent[d]); r /= ref->extent[d]; }
        double a = sc_buffer_get(got, c), b = sc_buffer_get(ref, c);
        double diff = fabs(a - b);
        bool bad;
        if (is_float) {
            if (isnan(a) || isnan(b)) { bad = isnan(a) != isnan(b); diff = bad ? INFINITY : 0; }
            else if (isinf(a) || isinf(b)) { bad = a != b; diff = bad ? INFINITY : 0; }
            else bad = diff > abs_tol + rel_tol * fabs(b);
        } else {
            bad = a != b;
        }
        if (diff > *max_diff) *max_diff = diff;
        if (bad) (*mismatches)++;
    }
    return 0;
}
