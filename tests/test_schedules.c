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
 *   MATH=exact (default) or fast
 *
 * Also checks, per schedule: the text form round-trips and lowers to the
 * same code, and the Halide form prints.  Where the OpenCL device is a CPU
 * and the schedule lowered for a CPU launches a kernel's interior blocks
 * apart (cg_opencl_splits) or the app takes an f32 min or max (which a
 * CPU's code computes with clang's builtins, cg_uses_f32_minmax), that
 * program runs on it too ("opencl-cpu").  With exact math every output must
 * be bit-identical to the reference evaluator's (NaN equal to NaN); with
 * fast math within exec_tolerance(CG_MATH_FAST).  Each case prints how many
 * points differ, the outliers, the largest difference in ulps and
 * absolute, the largest |value|, and with fast math, for ulp bounds N of
 * 1 to 256, the floor the points beyond N ulps need (relative to the
 * largest |value|): the figures the fast tolerance is set from.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "apps.h"
#include "check.h"
#include <stdio.h>
#include "exec.h"
#include "fixtures.h"
#include "space.h"

static int nseeds;
static uint64_t seeds[1000];
static const char *only_apps, *backends = "c,opencl,cuda";
static cg_math math = CG_MATH_EXACT;

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


typedef fixture_device device;

/* With fast math: for each ulp bound N, the floor (times the largest
 * |value|) that the points beyond N ulps would need; written to buf. */
static void floors_needed(exec_session *s, const lower_program *prog, sc_buffer **ref, char *buf, size_t len) {
    static const int64_t bound[] = { 1, 4, 16, 64, 256 };
    int nout = prog->p->outputs.n;
    sc_buffer **got = calloc((size_t)nout + 1, sizeof *got);
    char err[512];
    size_t n = 0;
    buf[0] = 0;
    if (!got) abort();
    if (exec_download(s, got, err, sizeof err) == 0)
        for (size_t b = 0; b < sizeof bound / sizeof bound[0] && n < len; b++) {
            exec_tol t = exec_tolerance(CG_MATH_FAST);
            exec_diff all = {0}, one;
            t.max_ulp = bound[b];
            for (int i = 0; i < nout; i++)
                if (exec_compare(got[i], ref[i], &t, &one) == 0) exec_diff_add(&all, &one);
            int w = snprintf(buf + n, len - n, "%s%lld: %.2g", b ? ", " : "; floor needed beyond N ulp: ",
                             (long long)bound[b], all.max_far);
            if (w > 0) n += (size_t)w;
        }
    for (int i = 0; i < nout; i++) sc_buffer_free(got[i]);
    free(got);
}

/* Runs prog on dev and compares with the reference outputs. */
static void run_on(const char *app, uint64_t seed, device *d, const lower_program *prog,
                   sc_buffer **in, sc_buffer **ref, const char *what) {
    char err[8192], floors[256] = "";
    exec_diff df;
    exec_session *s = exec_open_checked(d->ops, d->dev, prog, math, NULL, in, ref, 120000, &df, err, sizeof err);
    bool ok = s && df.mismatches == 0;
    if (s && !ok) snprintf(err, sizeof err, "%lld points beyond the tolerance", (long long)df.mismatches);
    if (s && math == CG_MATH_FAST) floors_needed(s, prog, ref, floors, sizeof floors);
    check_report(ok, "%s/seed%llu/%s%s (%d kernels; %lld of %lld points differ, %lld outliers; max %lld ulp, "
                 "max diff %.3g, largest |value| %.3g%s)%s%s",
                 app, (unsigned long long)seed, what ? what : d->ops->name, math == CG_MATH_FAST ? "/fast" : "",
                 prog->nkernels,
                 (long long)df.differ, (long long)df.points, (long long)df.outliers, (long long)df.max_ulp,
                 df.max_abs, df.scale, floors, ok ? "" : ": ", ok ? "" : err);
    exec_close(s);
}

static void cuda_compile(const char *app, uint64_t seed, device *d, const lower_program *prog) {
    static const char *archs[] = { "sm_80", "sm_90" };
    char *src = cg_generate_math(prog, CG_CUDA, math);
    for (int a = 0; a < 2; a++) {
        char err[16384], opts[128];
        snprintf(opts, sizeof opts, "%s -arch=%s", cg_math_options(CG_CUDA, math), archs[a]);
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
    if (getenv("MATH") && *getenv("MATH") && cg_math_parse(getenv("MATH"), &math) != 0) {
        check_report(false, "MATH=%s: expected exact or fast", getenv("MATH"));
        return 1;
    }
    char err[4096];
    device devs[2], cuda = {0};
    int ndev = fixture_open_devices(devs);
    if (apps_wanted(backends, "cuda")) cuda = fixture_open_cuda();
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
        space_opts so = { &t, false, false };
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
            for (int d = 0; d < ndev; d++) run_on(app, seeds[k], &devs[d], prog, in, ref, NULL);
            if (t.cpu) {
                lower_program *cpu = lower_schedule_for(arena, p, b, s, true, err, sizeof err);
                if (!cpu) check_report(false, "%s/seed%llu/cpu: %s", app, (unsigned long long)seeds[k], err);
                for (int d = 0; cpu && d < ndev; d++)
                    if (devs[d].ops == &rt_opencl_ops && (cg_opencl_splits(cpu) || cg_uses_f32_minmax(p))) {
                        cpu->schedule_text = "";
                        run_on(app, seeds[k], &devs[d], cpu, in, ref, "opencl-cpu");
                    }
            }
            if (cuda.dev && k < cuda_seeds) cuda_compile(app, seeds[k], &cuda, prog);
            if (cuda.dev && cuda.ops->can_run(cuda.dev)) run_on(app, seeds[k], &cuda, prog, in, ref, NULL);
            ir_arena_free(arena);
        }
        app_free(&ac);
    }
    apps_free_names(names, napps);
    fixture_close_devices(devs, ndev);
    if (cuda.dev) cuda.ops->close(cuda.dev);
    CHECK_EXIT();
}
