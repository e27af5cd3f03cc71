/*
 * choose.c - the spill filter and top-K over a one-shot batch (choose.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "choose.h"
#include "space.h"

int choose_cuda_spills(sc_pipeline *p, const bounds_result *b, const sched_state *s, const char *arch, cg_math math,
                       int *registers, char *err, size_t errlen) {
    ir_arena *a = ir_arena_new();
    lower_program *prog = lower_schedule(a, p, b, s, err, errlen);
    int spills = -1;
    if (registers) *registers = 0;
    char *src = prog ? cg_generate_math(prog, CG_CUDA, math) : NULL;
    rt_device *dev = src ? rt_cuda_ops.open(err, errlen) : NULL;
    if (dev) {
        char opts[160];
        snprintf(opts, sizeof opts, "%s -arch=%s", cg_math_options(CG_CUDA, math), arch);
        rt_module *m = rt_cuda_ops.compile(dev, src, opts, err, errlen);
        if (m) {
            rt_kernel_info *info = NULL;
            int n = rt_cuda_ops.kernel_info(m, &info);
            spills = 0;
            for (int i = 0; i < n; i++) {
                /* -1: ptxas said nothing of this kernel */
                if (info[i].spill_store_bytes > 0) spills += info[i].spill_store_bytes;
                if (info[i].spill_load_bytes > 0) spills += info[i].spill_load_bytes;
                if (registers && info[i].registers > *registers) *registers = info[i].registers;
            }
            free(info);
            rt_cuda_ops.module_free(m);
        }
        rt_cuda_ops.close(dev);
    }
    free(src);
    ir_arena_free(a);
    return spills;
}

int choose_spill_filter(const choose_ctx *c, sc_pipeline *p, const bounds_result *b, const search_sample *batch,
                        int n, bool *keep, char *err, size_t errlen) {
    int *spills = malloc(sizeof *spills * (size_t)(n ? n : 1));
    if (!spills) abort();
    int least = -1, clean = 0, want = c->k > 0 ? c->k : 1;
    char last[1024] = "";
    /* best predicted first, until enough spill nothing */
    for (int i = 0; i < n; i++) spills[i] = -1;
    for (int i = 0; i < n && clean < want; i++) {
        int regs = 0;
        spills[i] = choose_cuda_spills(p, b, batch[i].s, c->t->cuda_arch, c->math, &regs, last, sizeof last);
        if (c->report) {
            if (spills[i] < 0) fprintf(c->report, "# spill filter: #%d does not compile for %s\n", i + 1, c->t->cuda_arch);
            else fprintf(c->report, "# spill filter: #%d (predicted %.4g ms): %d registers, %d bytes spilled\n", i + 1,
                         batch[i].ms, regs, spills[i]);
        }
        if (spills[i] < 0) continue;
        if (least < 0 || spills[i] < least) least = spills[i];
        clean += spills[i] == 0;
    }
    int pick = -1;
    if (least < 0 && strstr(last, "gpu-architecture")) {
        /* this toolkit cannot compile for the target's architecture (CUDA
         * 13 dropped sm_70): the schedule is still made, unfiltered */
        if (c->report)
            fprintf(c->report, "# spill filter: skipped: this CUDA toolkit's NVRTC cannot compile for %s (%s)\n",
                    c->t->cuda_arch, "--gpu-architecture refused");
        for (int i = 0; keep && i < n; i++) keep[i] = true;
        pick = 0;
    } else if (least < 0) {
        snprintf(err, errlen, "none of the %d schedules compiles for %s: %s", n, c->t->cuda_arch, last);
    } else {
        /* nothing spills: least is 0 and only clean ones pass */
        double limit = least * CHOOSE_SPILL_SLACK;
        for (int i = 0; i < n; i++) {
            bool ok = spills[i] >= 0 && spills[i] <= limit;
            if (keep) keep[i] = ok;
            if (ok && pick < 0) pick = i;
        }
        if (c->report && least > 0)
            fprintf(c->report, "# spill filter: every schedule compiled spills; the least spills %d bytes, "
                    "#%d is the best predicted within %.0f%% of it\n", least, pick + 1, (CHOOSE_SPILL_SLACK - 1) * 100);
    }
    free(spills);
    return pick;
}

/* Top-K: the first k of the batch that keep allows (all when NULL),
 * compiled, checked and timed; the index of the fastest, -1 with err
 * when none ran correctly. */
static int measure_top(const choose_ctx *c, sc_pipeline *p, const bounds_result *b, const search_sample *batch,
                       int n, const bool *keep, char *err, size_t errlen) {
    measure_device d;
    if (!measure_device_by_name(c->device, c->math, &d)) {
        snprintf(err, errlen, "unknown device '%s' (expected opencl, c or cuda)", c->device);
        return -1;
    }
    d.cpu = c->t && c->t->cpu;
    int *idx = malloc(sizeof *idx * (size_t)(n ? n : 1)), m = 0;
    const sched_state **states = malloc(sizeof *states * (size_t)(n ? n : 1));
    if (!idx || !states) abort();
    for (int i = 0; i < n && m < c->k; i++)
        if (!keep || keep[i]) {
            idx[m] = i;
            states[m++] = batch[i].s;
        }
    /* the reference outputs, and the baseline timed with each candidate */
    sc_buffer **in, **ref;
    int pick = -1;
    if (measure_buffers_new(p, 1, &in, &ref, err, errlen) != 0) m = 0;
    ir_arena *a = ir_arena_new();
    const sched_state *rs = space_reference(a, p, b, c->t, false, NULL);
    measure_precompile(&d, p, b, states, m, c->jobs);
    double best = INFINITY;
    int lim = c->timeout_ms > 0 ? c->timeout_ms : 10000;
    measure_limits limits = measure_limits_for(lim);
    char last[1100] = "";
    for (int j = 0; j < m; j++) {
        measure_outcome o;
        measure_schedule(&d, p, b, states[j], rs, in, ref, limits, &o);
        int i = idx[j];
        if (o.kind != MEASURE_OK) {
            snprintf(last, sizeof last, "#%d: %s", i + 1, o.msg);
            if (c->report) fprintf(c->report, "# topk: #%d (predicted %.4g ms): %s: %s\n", i + 1, batch[i].ms,
                                   o.kind == MEASURE_WRONG ? "wrong" : o.kind == MEASURE_TIMEOUT ? "timed out"
                                                                                                   : "failed", o.msg);
            continue;
        }
        /* relative to the reference timed in turn with it, when there is one */
        double score = o.ref_ms > 0 ? o.ms / o.ref_ms : o.ms;
        if (c->report) {
            fprintf(c->report, "# topk: #%d (predicted %.4g ms): measured %.4g ms", i + 1, batch[i].ms, o.ms);
            if (o.ref_ms > 0) fprintf(c->report, ", %.3gx the baseline's %.4g ms timed with it", score, o.ref_ms);
            fprintf(c->report, " (%s)\n", o.check);
            fflush(c->report);
        }
        if (score < best) {
            best = score;
            pick = i;
        }
    }
    if (pick < 0 && m > 0) snprintf(err, errlen, "none of the %d best predicted schedules ran correctly on %s (%s)", m,
                                    c->device, last);
    if (pick >= 0 && c->report) fprintf(c->report, "# topk: the fastest of %d measured is #%d\n", m, pick + 1);
    ir_arena_free(a);
    measure_buffers_free(p, in, ref);
    free(idx);
    free(states);
    return pick;
}

int choose_pick(void *ctx, sc_pipeline *p, const bounds_result *b, search_sample *batch, int n, char *err,
                size_t errlen) {
    const choose_ctx *c = ctx;
    bool *keep = NULL;
    int pick = 0;
    if (c->t->cuda_arch[0]) {
        keep = malloc(sizeof *keep * (size_t)n);
        if (!keep) abort();
        pick = choose_spill_filter(c, p, b, batch, n, keep, err, errlen);
    }
    if (pick >= 0 && c->k > 0) pick = measure_top(c, p, b, batch, n, keep, err, errlen);
    free(keep);
    return pick;
}
