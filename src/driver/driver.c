/*
 * driver.c - from .pipe text to a checked, timed run (driver.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "choose.h"
#include "driver.h"
#include "measure.h"

static void print_errors(const sc_pipeline *p, FILE *out) {
    for (int i = 0; i < sc_error_count(p); i++) fprintf(out, "%s\n", sc_error_message(p, i));
}

int driver_load(driver_state *d, const char *pipe_path, const sc_parse_options *po, FILE *err_out) {
    memset(d, 0, sizeof *d);
    d->p = sc_parse_file(pipe_path, po);
    if (sc_error_count(d->p)) { print_errors(d->p, err_out); return -1; }
    d->b = bounds_infer(d->p);
    if (!d->b) { print_errors(d->p, err_out); return -1; }
    d->arena = ir_arena_new();
    return 0;
}

void driver_free(driver_state *d) {
    bounds_free(d->b);
    ir_arena_free(d->arena);
    sc_pipeline_free(d->p);
    memset(d, 0, sizeof *d);
}

char *driver_read_text(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return NULL; }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) abort();
    for (size_t r; (r = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += r;
        if (len == cap) {
            if (cap > (16u << 20)) { fclose(f); free(buf); snprintf(err, errlen, "%s: larger than 16 MiB", path); return NULL; }
            cap *= 2;
            buf = realloc(buf, cap + 1);
            if (!buf) abort();
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

int driver_schedule(driver_state *d, const driver_sched_opts *o, FILE *err_out) {
    char err[2048];
    /* host-opencl and host-cuda are queried in a child process
     * (measure.h): a process that opened PoCL or CUDA cannot fork
     * measurements (top-K's) later. */
    const char *names = o->target ? o->target : "host-cuda,host-opencl,a100";
    char desc[1024], key[512];
    int trc = -1;
    /* the first of the comma-separated names that is there */
    for (const char *n = names; trc != 0 && *n;) {
        size_t len = strcspn(n, ",");
        char tname[128];
        snprintf(tname, sizeof tname, "%.*s", (int)len, n);
        if (!strcmp(tname, "host-opencl") || !strcmp(tname, "host-cuda"))
            trc = measure_find_target(tname + 5, &d->t, desc, sizeof desc, key, sizeof key, err, sizeof err);
        else
            trc = target_by_name(tname, o->targets_dir, &d->t, err, sizeof err);
        n += len + (n[len] == ',');
    }
    if (trc != 0) {
        fprintf(err_out, "%s\n", err);
        return -1;
    }
    space_opts so = { &d->t, o->prune, space_unroll_whole_for(o->unroll_whole, &d->t) };
    if (o->schedule_path) {
        char *text = driver_read_text(o->schedule_path, err, sizeof err);
        if (!text) { fprintf(err_out, "%s\n", err); return -1; }
        d->s = sched_parse(d->arena, d->p, o->schedule_path, text, err, sizeof err);
        free(text);
    } else {
        const char *name = o->strategy ? o->strategy : "baseline";
        const space_strategy *st = space_strategy_by_name(name);
        bool batch = st && (!strcmp(st->name, "oneshot") || !strcmp(st->name, "topk"));
        bool topk = st && !strcmp(st->name, "topk");
        if (batch && (topk || d->t.cuda_arch[0])) {
            /* the choice after compiling (choose.h) */
            space_search_args sa = { 0 };
            if (o->search) sa = *o->search;
            choose_ctx cc = { &d->t, o->math, topk ? (o->k > 0 ? o->k : 5) : 0, o->topk_device,
                              o->jobs > 0 ? o->jobs : 1, o->timeout_ms, sa.report };
            target dt;
            char ddesc[1024], dkey[512];
            if (topk && !cc.device) {
                snprintf(err, sizeof err, "the topk strategy measures its candidates on a device: give --device D");
            } else if (topk && measure_find_target(cc.device, &dt, ddesc, sizeof ddesc, dkey, sizeof dkey, err,
                                                   sizeof err) != 0) {
                /* a device that cannot run kernels here: said before the search */
            } else {
                sa.pick = choose_pick;
                sa.pick_ctx = &cc;
                d->s = st->make(d->arena, d->p, d->b, &so, &sa, o->seed, err, sizeof err);
            }
        } else if (st) {
            d->s = st->make(d->arena, d->p, d->b, &so, o->search, o->seed, err, sizeof err);
        } else {
            char names[256];
            snprintf(err, sizeof err, "unknown strategy '%s' (expected %s)", name,
                     space_strategy_names(names, sizeof names, ", ", " or "));
        }
    }
    if (!d->s) { fprintf(err_out, "%s\n", err); return -1; }
    if (sched_check(d->p, d->b, d->s, &d->t, false, err, sizeof err) != 0) {
        fprintf(err_out, "schedule rejected for target %s: %s\n", d->t.name, err);
        return -1;
    }
    d->prog = lower_schedule_for(d->arena, d->p, d->b, d->s, d->t.cpu, err, sizeof err);
    if (!d->prog) { fprintf(err_out, "lowering failed: %s\n", err); return -1; }
    char *text = sched_to_text(d->p, d->s);
    d->prog->schedule_text = ir_strdup(d->arena, text);
    free(text);
    return 0;
}

static rt_device *open_device(const char *name, const rt_ops **ops, char *err, size_t errlen) {
    if (!name) return rt_open_best(ops, err, errlen);
    *ops = rt_ops_by_name(name);
    if (!*ops) {
        char names[64];
        snprintf(err, errlen, "unknown device '%s' (expected %s)", name, rt_ops_names(names, sizeof names, ", ", " or "));
        return NULL;
    }
    return (*ops)->open(err, errlen);
}

static void print_kernel_info(exec_session *s, FILE *out) {
    const rt_kernel_info *info;
    int n = exec_kernel_info(s, &info);
    for (int i = 0; i < n; i++)
        if (info[i].registers >= 0)
            fprintf(out, "  %-32s %3d registers, %d bytes spill stores, %d bytes spill loads, %d bytes shared, %d bytes stack\n",
                    info[i].name, info[i].registers, info[i].spill_store_bytes, info[i].spill_load_bytes,
                    info[i].shared_bytes, info[i].local_bytes);
}

/* Each kernel's predicted cost (ms): the sum of the costs of the stages it
 * computes (feat_row.kernel_func and kernel_stage), pred[n] the whole
 * prediction; -1 with err where the schedule cannot be featurized. */
static int kernel_predictions(const driver_state *d, const driver_run_opts *o, double *pred, char *err,
                              size_t errlen) {
    const lower_program *prog = d->prog;
    feat_result fr;
    double *cost;
    if (search_stage_costs(d->p, d->b, d->s, &d->t, o->models, o->nmodels, &fr, &cost, err, errlen) != 0) return -1;
    for (int i = 0; i <= prog->nkernels; i++) pred[i] = 0;
    for (int r = 0; r < fr.n; r++) {
        pred[prog->nkernels] += cost[r];
        for (int i = 0; i < prog->nkernels; i++)
            if (prog->kernels[i]->root->id == fr.rows[r].kernel_func &&
                prog->kernels[i]->stage == fr.rows[r].kernel_stage) {
                pred[i] += cost[r];
                break;
            }
    }
    free(cost);
    feat_free(&fr);
    return 0;
}

/* bench --per-kernel: every kernel timed alone (exec_kernel_times), with
 * its share of their sum and the Func and stage it computes; with models,
 * also its predicted cost and the measured time over it. */
static int print_kernel_times(exec_session *s, const driver_state *d, const driver_run_opts *o, char *err,
                              size_t errlen, FILE *err_out) {
    const lower_program *prog = d->prog;
    int n = prog->nkernels;
    double *ms = calloc((size_t)n + 1, sizeof *ms), *pred = NULL;
    if (!ms) abort();
    if (o->nmodels > 0) {
        pred = calloc((size_t)n + 1, sizeof *pred);
        if (!pred) abort();
        if (kernel_predictions(d, o, pred, err, errlen) != 0) {
            fprintf(err_out, "the prediction: %s\n", err);
            free(ms);
            free(pred);
            return -1;
        }
    }
    if (exec_kernel_times(s, o->runs, o->timeout_ms, ms, err, errlen) != 0) {
        fprintf(err_out, "%s\n", err);
        free(ms);
        free(pred);
        return -1;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += ms[i];
    fprintf(o->out, "per kernel (each timed alone, the fastest of %d runs; sum %.4f ms", o->runs, sum);
    if (pred) fprintf(o->out, "; predicted %.4g ms in all, measured / predicted %.3g", pred[n], pred[n] > 0 ? sum / pred[n] : 0);
    fprintf(o->out, "):\n");
    for (int i = 0; i < n; i++) {
        const lower_kernel *k = prog->kernels[i];
        fprintf(o->out, "  %-28s %12.4f ms %6.1f%%", k->name, ms[i], sum > 0 ? 100 * ms[i] / sum : 0);
        if (pred && pred[i] > 0) fprintf(o->out, "  predicted %10.4g ms, x%-7.3g", pred[i], ms[i] / pred[i]);
        else if (pred) fprintf(o->out, "  predicted %10s     %-7s", "-", "");
        fprintf(o->out, "  %s stage %d, %lld x %d threads\n", k->root->name, k->stage, (long long)k->nblocks,
                k->nthreads);
    }
    free(ms);
    free(pred);
    return 0;
}

int driver_run(driver_state *d, const driver_run_opts *o, FILE *err_out) {
    char err[8192];
    const rt_ops *ops;
    rt_device *dev = open_device(o->device, &ops, err, sizeof err);
    if (!dev) { fprintf(err_out, "%s\n", err); return -1; }
    /* CUDA: the named architecture; else the GPU's own where it runs, the
     * target's where it only compiles */
    char options[64] = "";
    if (!strcmp(ops->name, "cuda")) {
        const char *arch = o->arch ? o->arch : ops->can_run(dev) ? NULL : d->t.cuda_arch[0] ? d->t.cuda_arch : "sm_80";
        if (arch) snprintf(options, sizeof options, "-arch=%s", arch);
    }
    const char *opt = options[0] ? options : NULL;
    fprintf(o->out, "device: %s: %s\n", ops->name, ops->describe(dev));
    fprintf(o->out, "math: %s\n", cg_math_name(o->math));
    fprintf(o->out, "kernels: %d\n", d->prog->nkernels);
    int rc = 0;
    exec_session *s = NULL;
    if (!ops->can_run(dev)) {
        s = exec_open_math(ops, dev, d->prog, o->math, opt, err, sizeof err);
        if (!s) { fprintf(err_out, "%s\n", err); ops->close(dev); return -1; }
        print_kernel_info(s, o->out);
        fprintf(o->out, "compiled only: %s cannot run kernels here\n", ops->name);
        if (o->check || o->samples) { fprintf(err_out, "%s: no device to run on\n", ops->name); rc = -1; }
        exec_close(s);
        ops->close(dev);
        return rc;
    }
    int nout = d->p->outputs.n;
    sc_buffer **in = o->inputs, **ref = calloc((size_t)nout + 1, sizeof *ref);
    if (!ref) abort();
    /* A wrong result is never timed: timing implies the check. */
    bool check = o->check || o->samples > 0;
    if (check) {
        exec_diff diff;
        if (sc_evaluate(d->p, in, 1, ref) != 0) {
            print_errors(d->p, err_out);
            rc = -1;
        } else if (!(s = exec_open_checked(ops, dev, d->prog, o->math, opt, in, ref, o->timeout_ms, &diff,
                                           err, sizeof err))) {
            fprintf(err_out, "%s\n", err);
            rc = -1;
        } else {
            print_kernel_info(s, o->out);
            exec_tol tol = exec_tolerance(o->math);
            char how[256];
            fprintf(o->out, "check: %s, max difference %.3g (%lld ulp; %lld of %lld output points differ: "
                    "%lld outliers, %lld beyond the tolerance; tolerance: %s)\n",
                    diff.mismatches ? "MISMATCH with the reference" : "matches the reference", diff.max_abs,
                    (long long)diff.max_ulp, (long long)diff.differ, (long long)diff.points,
                    (long long)diff.outliers, (long long)diff.mismatches, exec_tol_describe(&tol, how, sizeof how));
            if (diff.mismatches) rc = 1;
        }
    } else {
        s = exec_open_math(ops, dev, d->prog, o->math, opt, err, sizeof err);
        if (!s || exec_upload(s, in, err, sizeof err) != 0 || exec_run(s, o->timeout_ms, err, sizeof err) != 0) {
            fprintf(err_out, "%s\n", err);
            rc = -1;
        } else {
            print_kernel_info(s, o->out);
            fprintf(o->out, "ran (not checked against the reference: add --check)\n");
        }
    }
    if (rc >= 0 && o->outputs) {
        if (exec_download(s, o->outputs, err, sizeof err) != 0) {
            fprintf(err_out, "%s\n", err);
            for (int i = 0; i < nout; i++) { sc_buffer_free(o->outputs[i]); o->outputs[i] = NULL; }
            rc = -1;
        }
    }
    if (rc == 0 && o->samples > 0) {
        double ms = exec_time(s, o->warmup, o->runs, o->samples, o->timeout_ms, err, sizeof err);
        if (ms < 0) { fprintf(err_out, "%s\n", err); rc = -1; }
        else {
            fprintf(o->out, "time: %.4f ms (min over %d samples of the mean of %d runs, after %d warm-up runs)\n",
                    ms, o->samples, o->runs, o->warmup);
            if (o->time_ms) *o->time_ms = ms;
            if (o->per_kernel) rc = print_kernel_times(s, d, o, err, sizeof err, err_out);
        }
    }
    for (int i = 0; i < nout; i++) sc_buffer_free(ref[i]);
    free(ref);
    exec_close(s);
    ops->close(dev);
    return rc;
}
