/*
 * test_schedules.c - random complete schedules of every app, run on the C
 * and OpenCL back ends and compared with the reference evaluator; their
 * CUDA code compiled for sm_80 and sm_90 through NVRTC.
 *
 *   SEEDS=5 (default) seeds per app, or SEEDS=a-b / SEEDS=a,b,c
 *   APPS=harris,unsharp   only these apps
 *   BACKENDS=c,opencl,cuda
 *   CUDA_SEEDS=N     compile CUDA for the first N seeds of each app (default 1;
 *                    make fuzz-schedules compiles every seed)
 *
 * Also checks, per schedule: the text form round-trips and lowers to the
 * same code, and the Halide form prints.  Integer outputs must match
 * exactly, f32 outputs within 1e-4 absolute + 1e-4 relative.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "apps.h"
#include "check.h"
#include <stdio.h>
#include "exec.h"
#include "space.h"

static int nseeds;
static uint64_t seeds[1000];
static const char *only_apps, *backends = "c,opencl,cuda";

static void parse_seeds(void) {
    const char *e = getenv("SEEDS");
    if (!e || !*e) e = "5";
    if (strchr(e, '-')) {
        int a = atoi(e), b = atoi(strchr(e, '-') + 1);
        for (int s = a; s <= b && nseeds < 1000; s++) seeds[nseeds++] = (uint64_t)s;
    } else if (strchr(e, ',')) {
        for (const char *c = e; c && *c && nseeds < 1000; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
            seeds[nseeds++] = (uint64_t)atoll(c);
    } else {
        for (int s = 1; s <= atoi(e) && nseeds < 1000; s++) seeds[nseeds++] = (uint64_t)s;
    }
}


typedef struct { const rt_ops *ops; rt_device *dev; } device;

/* Runs prog on dev and compares with the reference outputs. */
static void run_on(const char *app, uint64_t seed, device *d, const lower_program *prog,
                   sc_buffer **in, sc_buffer **ref) {
    char err[8192];
    double worst;
    int64_t bad;
    exec_session *s = exec_open_checked(d->ops, d->dev, prog, NULL, in, ref, 1e-4, 1e-4, 120000,
                                        &worst, &bad, err, sizeof err);
    if (s && bad) snprintf(err, sizeof err, "%lld points differ from the reference", (long long)bad);
    check_report(s && !bad, "%s/seed%llu/%s (%d kernels, max difference %.3g)%s%s", app, (unsigned long long)seed,
           d->ops->name, prog->nkernels, worst, s && !bad ? "" : ": ", s && !bad ? "" : err);
    exec_close(s);
}

static void cuda_compile(const char *app, uint64_t seed, device *d, const lower_program *prog) {
    static const char *archs[] = { "sm_80", "sm_90" };
    char *src = cg_generate(prog, CG_CUDA);
    for (int a = 0; a < 2; a++) {
        char err[16384], opts[128];
        snprintf(opts, sizeof opts, "%s -arch=%s", cg_required_options(CG_CUDA), archs[a]);
        rt_module *m = d->ops->compile(d->dev, src, opts, err, sizeof err);
        if (!m) {
            check_report(false, "%s/seed%llu/cuda-%s: %s", app, (unsigned long long)seed, archs[a], err);
            continue;
        }
        rt_kernel_info *info = NULL;
        int n = d->ops->kernel_info(m, &info);
        int maxreg = 0, spills = 0;
        for (int i = 0; i < n; i++) {
            if (info[i].registers > maxreg) maxreg = info[i].registers;
            spills += info[i].spill_store_bytes > 0 ? info[i].spill_store_bytes : 0;
        }
        check_report(n == prog->nkernels && maxreg > 0, "%s/seed%llu/cuda-%s (%d kernels, up to %d registers, %d bytes spilled)",
               app, (unsigned long long)seed, archs[a], n, maxreg, spills);
        free(info);
        d->ops->module_free(m);
    }
    free(src);
}

int main(void) {
    parse_seeds();
    only_apps = getenv("APPS");
    int cuda_seeds = getenv("CUDA_SEEDS") ? atoi(getenv("CUDA_SEEDS")) : 1;
    if (getenv("BACKENDS")) backends = getenv("BACKENDS");
    char err[4096];
    device devs[3];
    int ndev = 0;
    device cuda = {0};
    const rt_ops *all[] = { &rt_c_ops, &rt_opencl_ops };
    for (int i = 0; i < 2; i++) {
        if (!apps_wanted(backends, all[i]->name)) continue;
        rt_device *dv = all[i]->open(err, sizeof err);
        if (!dv) { check_report(false, "open %s: %s", all[i]->name, err); continue; }
        devs[ndev].ops = all[i];
        devs[ndev++].dev = dv;
    }
    if (apps_wanted(backends, "cuda")) {
        cuda.dev = rt_cuda_ops.open(err, sizeof err);
        cuda.ops = &rt_cuda_ops;
        if (!cuda.dev) printf("PASS cuda (skipped: %s)\n", err);
    }
    target t;
    if (target_by_name("host-opencl", NULL, &t, err, sizeof err) != 0 &&
        target_by_name("a100", NULL, &t, err, sizeof err) != 0) {
        check_report(false, "no target: %s", err);
        return 1;
    }
    /* Schedules must fit both the OpenCL device and a CUDA GPU (they are
     * compiled for sm_80 and sm_90): take the tighter of each limit. */
    target gpu;
    if (target_by_name("a100", NULL, &gpu, err, sizeof err) == 0) {
        if (gpu.max_threads_per_block < t.max_threads_per_block) t.max_threads_per_block = gpu.max_threads_per_block;
        if (gpu.shared_mem_per_block < t.shared_mem_per_block) t.shared_mem_per_block = gpu.shared_mem_per_block;
        if (gpu.registers_per_thread < t.registers_per_thread) t.registers_per_thread = gpu.registers_per_thread;
    }
    char **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) check_report(false, "%s", err);
    for (int ai = 0; ai < napps; ai++) {
        const char *app = names[ai];
        if (!apps_wanted(only_apps, app)) continue;
        app_case ac;
        if (app_load("apps", app, true, 7, &ac, err, sizeof err) != 0) {
            check_report(false, "%s: %s", app, err);
            continue;
        }
        sc_pipeline *p = ac.p;
        bounds_result *b = ac.b;
        sc_buffer **in = ac.in, **ref = ac.ref;
        space_opts so = { &t, false };
        for (int k = 0; k < nseeds; k++) {
            ir_arena *arena = ir_arena_new();
            sched_state *s = space_random(arena, p, b, &so, seeds[k], err, sizeof err);
            lower_program *prog = s ? lower_schedule(arena, p, b, s, err, sizeof err) : NULL;
            if (!prog) {
                check_report(false, "%s/seed%llu: %s", app, (unsigned long long)seeds[k], err);
                ir_arena_free(arena);
                continue;
            }
            /* the text form round-trips and lowers to the same code */
            char *text = sched_to_text(p, s);
            sched_state *back = sched_parse(arena, p, "<text>", text, err, sizeof err);
            char *text2 = back ? sched_to_text(p, back) : NULL;
            lower_program *prog2 = back ? lower_schedule(arena, p, b, back, err, sizeof err) : NULL;
            char *c1 = cg_generate(prog, CG_C), *c2 = prog2 ? cg_generate(prog2, CG_C) : NULL;
            char *hal = sched_to_halide(p, s);
            check_report(text2 && !strcmp(text, text2) && c2 && !strcmp(c1, c2) && hal && strlen(hal) > 0,
                   "%s/seed%llu/text (schedule prints, parses back, gives the same code; Halide form prints)",
                   app, (unsigned long long)seeds[k]);
            free(text); free(text2); free(c1); free(c2); free(hal);
            prog->schedule_text = "";
            for (int d = 0; d < ndev; d++) run_on(app, seeds[k], &devs[d], prog, in, ref);
            if (cuda.dev && k < cuda_seeds) cuda_compile(app, seeds[k], &cuda, prog);
            ir_arena_free(arena);
        }
        app_free(&ac);
    }
    apps_free_names(names, napps);
    for (int d = 0; d < ndev; d++) devs[d].ops->close(devs[d].dev);
    if (cuda.dev) cuda.ops->close(cuda.dev);
    CHECK_EXIT();
}
