/*
 * fixtures.h - what several tests/test_*.c set up the same way: a target
 * by name (or the limits every GPU test schedule must fit), a pipeline
 * parsed from text with its bounds and an arena for schedules, and the C
 * and OpenCL devices.  Include after check.h and the stagecraft headers.
 */
#ifndef SC_FIXTURES_H
#define SC_FIXTURES_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "bounds.h"
#include "exec.h"
#include "ir.h"
#include "lower.h"
#include "measure.h"
#include "rt.h"
#include "stagecraft.h"
#include "target.h"

/* targets/NAME.target; a test cannot go on without it, so it exits. */
/* Removes the SQLite database at path and the -wal and -shm files a
 * reader or writer may leave beside it. */
static inline void fixture_remove_db(const char *path) {
    char side[1024];
    remove(path);
    snprintf(side, sizeof side, "%s-wal", path);
    remove(side);
    snprintf(side, sizeof side, "%s-shm", path);
    remove(side);
}

static inline target fixture_target(const char *name) {
    target t;
    char err[512];
    if (target_by_name(name, NULL, &t, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return t;
}

/* The OpenCL device's limits (host-opencl) within an a100's: a schedule
 * that fits them fits the OpenCL device and a CUDA GPU. */
static inline target fixture_gpu_target(void) {
    target t = fixture_target("host-opencl"), gpu = fixture_target("a100");
    if (gpu.max_threads_per_block < t.max_threads_per_block) t.max_threads_per_block = gpu.max_threads_per_block;
    if (gpu.shared_mem_per_block < t.shared_mem_per_block) t.shared_mem_per_block = gpu.shared_mem_per_block;
    if (gpu.registers_per_thread < t.registers_per_thread) t.registers_per_thread = gpu.registers_per_thread;
    return t;
}

typedef struct {
    sc_pipeline *p;
    bounds_result *b;
    ir_arena *a;
} fixture;

/* Parses text as the file t.pipe (a pipeline that does not name itself is
 * "t"), printing its errors and failing a CHECK on any; infers bounds and
 * makes an arena.  Free with fixture_unload. */
static inline fixture fixture_load(const char *text) {
    fixture fx = { sc_parse_string("t.pipe", text, strlen(text), NULL), NULL, ir_arena_new() };
    for (int i = 0; i < sc_error_count(fx.p); i++) fprintf(stderr, "  %s\n", sc_error_message(fx.p, i));
    CHECK(sc_error_count(fx.p) == 0);
    fx.b = bounds_infer(fx.p);
    CHECK(fx.b != NULL);
    return fx;
}

static inline void fixture_unload(fixture *fx) {
    bounds_free(fx->b);
    ir_arena_free(fx->a);
    sc_pipeline_free(fx->p);
}

/* A schedule of a pipeline lowered for a CPU and for a GPU, with inputs
 * and the reference's outputs (one set); ok false where a step failed, a
 * failed case named after name saying which.  Free with
 * fixture_lowered_free. */
typedef struct {
    fixture fx;
    lower_program *cpu, *gpu;
    sc_buffer **in, **ref;
    bool ok;
} fixture_lowered;

static inline fixture_lowered fixture_lower_both(const char *pipe, const char *name, const char *sched) {
    char err[8192] = "";
    fixture_lowered l = { fixture_load(pipe), NULL, NULL, NULL, NULL, false };
    sched_state *s = sched_parse(l.fx.a, l.fx.p, name, sched, err, sizeof err);
    l.cpu = s ? lower_schedule_for(l.fx.a, l.fx.p, l.fx.b, s, true, err, sizeof err) : NULL;
    l.gpu = s && l.cpu ? lower_schedule(l.fx.a, l.fx.p, l.fx.b, s, err, sizeof err) : NULL;
    l.ok = l.gpu && measure_buffers_new(l.fx.p, 1, &l.in, &l.ref, err, sizeof err) == 0;
    if (!l.ok) check_report(false, "%s: %s", name, err);
    return l;
}

static inline void fixture_lowered_free(fixture_lowered *l) {
    if (l->in) measure_buffers_free(l->fx.p, l->in, l->ref);
    fixture_unload(&l->fx);
}

typedef struct { const rt_ops *ops; rt_device *dev; } fixture_device;

/* Opens the back ends of C and OpenCL whose names the environment's
 * BACKENDS lists (comma-separated, default "c,opencl"), C first; one that does not open is
 * a failed case.  Returns how many opened; fixture_close_devices them. */
static inline int fixture_open_devices(fixture_device devs[2]) {
    const char *backends = getenv("BACKENDS") ? getenv("BACKENDS") : "c,opencl";
    const rt_ops *all[] = { &rt_c_ops, &rt_opencl_ops };
    char err[1024];
    int n = 0;
    for (int i = 0; i < 2; i++) {
        if (!apps_wanted(backends, all[i]->name)) continue;
        rt_device *dv = all[i]->open(err, sizeof err);
        if (!dv) { check_report(false, "open %s: %s", all[i]->name, err); continue; }
        devs[n].ops = all[i];
        devs[n++].dev = dv;
    }
    return n;
}

/* The CUDA back end where it opens here (NVRTC and a driver, or NVRTC to
 * compile only); else dev is NULL and a "PASS cuda (skipped: why)" line
 * says so.  Close with ops->close when dev is set. */
static inline fixture_device fixture_open_cuda(void) {
    char err[1024];
    fixture_device cu = { &rt_cuda_ops, rt_cuda_ops.open(err, sizeof err) };
    if (!cu.dev) printf("PASS cuda (skipped: %s)\n", err);
    return cu;
}

static inline void fixture_close_devices(fixture_device *devs, int n) {
    for (int d = 0; d < n; d++) devs[d].ops->close(devs[d].dev);
}

/* Runs prog on d with exact math (at most timeout_ms) and compares its
 * outputs with ref: true when no point is outside the exact tolerance and,
 * with bitwise, none differs from ref at all (NaN equal to NaN).  Else err
 * says why it did not run, or how many points differ. */
static inline bool fixture_run_exact(const fixture_device *d, const lower_program *prog, sc_buffer *const *in,
                                     sc_buffer *const *ref, int timeout_ms, bool bitwise, char *err, size_t errlen) {
    exec_diff df;
    memset(&df, 0, sizeof df);
    exec_session *es = exec_open_checked(d->ops, d->dev, prog, CG_MATH_EXACT, NULL, in, ref, timeout_ms, &df, err,
                                         errlen);
    bool ok = es && df.mismatches == 0 && (!bitwise || df.differ == 0);
    if (es && !ok)
        snprintf(err, errlen, "%lld of %lld points differ (max %lld ulp)",
                 (long long)(bitwise ? df.differ : df.mismatches), (long long)df.points, (long long)df.max_ulp);
    exec_close(es);
    return ok;
}
/* Runs prog on each of devs (fixture_run_exact, bit for bit, 60 s at
 * most), a case "WHAT on DEVICE" each. */
static inline void fixture_check_runs(const fixture_device *devs, int ndev, const char *what, const lower_program *prog,
                                      sc_buffer *const *in, sc_buffer *const *ref) {
    char err[8192] = "";
    for (int d = 0; d < ndev; d++) {
        bool ok = fixture_run_exact(&devs[d], prog, in, ref, 60000, true, err, sizeof err);
        check_report(ok, "%s on %s%s%s", what, devs[d].ops->name, ok ? "" : ": ", ok ? "" : err);
    }
}

/* Runs l's program for a CPU on each of devs (a case "NAME/cpu on DEVICE"
 * each, fixture_check_runs) and frees l. */
static inline void fixture_check_cpu_runs(const fixture_device *devs, int ndev, const char *name, fixture_lowered *l) {
    char what[160];
    snprintf(what, sizeof what, "%s/cpu", name);
    fixture_check_runs(devs, ndev, what, l->cpu, l->in, l->ref);
    fixture_lowered_free(l);
}
#endif
