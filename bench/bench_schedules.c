/*
 * bench_schedules.c - every app at its paper size on one device (OpenCL by
 * default): the time of the `root` and `baseline` schedules, the best of N
 * random schedules (20 by default), and the bandwidth a plain copy kernel
 * reaches on the same device, all in one run, printed as a table.
 *
 *   build/bench_schedules [--device opencl|c] [--random N] [--small]
 *                         [--apps a,b] [--timeout-ms MS] [--cut F]
 *                         [--math fast|exact]
 *
 * The code timed is generated with fast math by default (the device's own
 * f32 functions, contraction allowed: what a user who wants speed runs),
 * --math exact for the bit-exact code the tests check.  Every schedule is
 * checked against the reference evaluator before it is timed (a wrong
 * result is never timed), within the math mode's tolerance (exec.h);
 * timing follows Sioutas et al. 2020 §5 (warm-up, mean of runs, minimum
 * over samples).
 *
 * Time limits.  A run of the whole pipeline may take at most --timeout-ms
 * (60 s); a random schedule is stopped ("cut") once a timed run takes
 * --cut (5) times the best schedule of its app so far, as it cannot be the
 * best (its first, checked run may take up to 10 s more, as a warm-up).
 * Each schedule is measured as src/driver/measure.h describes: in a
 * child process of its own that is killed when late (OpenCL), or
 * in-process with a fresh device (C).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base.h"
#include "apps.h"
#include "exec.h"
#include "floor.h"
#include "measure.h"
#include "space.h"

static const char *cell(char *buf, size_t n, const measure_outcome *o) {
    static const char *word[] = { "", "failed", "WRONG", "timeout" };
    if (o->kind == MEASURE_OK) snprintf(buf, n, "%.2f", o->ms);
    else snprintf(buf, n, "%s", word[o->kind]);
    return buf;
}

int main(int argc, char **argv) {
    const char *devname = "opencl", *apps = NULL, *mathname = "fast";
    int nrandom = 20, small = 0, timeout_ms = 60000;
    double cut = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) devname = argv[++i];
        else if (!strcmp(argv[i], "--random") && i + 1 < argc) nrandom = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--apps") && i + 1 < argc) apps = argv[++i];
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) timeout_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cut") && i + 1 < argc) cut = atof(argv[++i]);
        else if (!strcmp(argv[i], "--small")) small = 1;
        else if (!strcmp(argv[i], "--math") && i + 1 < argc) mathname = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--device opencl|c] [--random N] [--small] [--apps a,b] "
                    "[--timeout-ms MS] [--cut F] [--math fast|exact]\n", argv[0]);
            return 2;
        }
    }
    if (nrandom < 0 || timeout_ms < 1 || cut <= 1) {
        fprintf(stderr, "--random must be >= 0, --timeout-ms >= 1 and --cut > 1\n");
        return 2;
    }
    char err[8192], desc[1024], key[512];
    measure_device d;
    if (!measure_device_by_name(devname, CG_MATH_FAST, &d)) { fprintf(stderr, "unknown device '%s' (expected opencl, c or cuda)\n", devname); return 2; }
    if (cg_math_parse(mathname, &d.math) != 0) {
        fprintf(stderr, "--math: '%s' is not one of fast, exact\n", mathname);
        return 2;
    }
    target t;
    if (measure_find_target(devname, &t, desc, sizeof desc, key, sizeof key, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", devname, err);
        return 1;
    }
    d.cpu = t.cpu;
    exec_tol tol = exec_tolerance(d.math);
    char how[256];
    cg_backend be = CG_OPENCL;
    cg_backend_parse(d.ops->name, &be);
    printf("device: %s: %s\ntarget: %s; sizes: %s; %d random schedules per app; times in ms\n"
           "math: %s (build options %s; checked: %s)\n"
           "limits: %d ms per run; random schedules cut at %gx the best so far\n",
           d.ops->name, desc, t.name, small ? "small" : "paper", nrandom, cg_math_name(d.math),
           cg_math_options(be, d.math),
           exec_tol_describe(&tol, how, sizeof how), timeout_ms, cut);
    fflush(stdout);
    double t_all = base_now_s();
    measure_outcome co;
    char which[128];
    double bw = floor_copy_bandwidth(&d, &t, (int64_t)64 << 20, (measure_limits){ timeout_ms, timeout_ms }, &co,
                                     which, sizeof which);
    if (bw > 0) printf("copy kernel: 4096x4096 f32 in %.3f ms = %.2f GB/s (read + write; %s)\n\n", co.ms, bw, which);
    else printf("copy kernel: %s\n\n", co.msg);
    printf("%-26s %6s %10s %10s %10s %5s %9s %9s  %s\n", "app", "stages", "root", "baseline", "best-rand",
           "seed", "root/best", "base/best", "random: ok/wrong/failed/timeout/cut [wall]");
    fflush(stdout);
    char **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) { fprintf(stderr, "%s\n", err); return 1; }
    for (int ai = 0; ai < napps; ai++) {
        if (!apps_wanted(apps, names[ai])) continue;
        double t0 = base_now_s();
        app_case ac;
        if (app_load("apps", names[ai], small, 1, &ac, err, sizeof err) != 0) {
            printf("%-26s %s\n", names[ai], err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        measure_outcome root, base;
        measure_limits full = { timeout_ms, timeout_ms };
        measure_schedule(&d, ac.p, ac.b, space_root(a, ac.p, ac.b, &t), NULL, ac.in, ac.ref, full, &root);
        if (root.kind != MEASURE_OK) fprintf(stderr, "%s root: %s\n", names[ai], root.msg);
        measure_schedule(&d, ac.p, ac.b, space_baseline(a, ac.p, ac.b, &t), NULL, ac.in, ac.ref, full, &base);
        if (base.kind != MEASURE_OK) fprintf(stderr, "%s baseline: %s\n", names[ai], base.msg);
        measure_outcome best;
        memset(&best, 0, sizeof best);
        best.kind = MEASURE_FAILED;
        int best_seed = -1, count[4] = {0}, ncut = 0;
        double best_fixed = -1;
        if (root.kind == MEASURE_OK) best_fixed = root.ms;
        if (base.kind == MEASURE_OK && (best_fixed < 0 || base.ms < best_fixed)) best_fixed = base.ms;
        space_opts so = { &t, true, false };
        for (int sd = 1; sd <= nrandom; sd++) {
            ir_arena *ra = ir_arena_new();
            measure_outcome o;
            sched_state *s = space_random(ra, ac.p, ac.b, &so, (uint64_t)sd, o.msg, sizeof o.msg);
            /* the cut is against every schedule measured so far */
            double best_so_far = best_fixed;
            if (best.kind == MEASURE_OK && (best_so_far < 0 || best.ms < best_so_far)) best_so_far = best.ms;
            measure_limits lim = full;
            bool cutting = best_so_far > 0 && cut * best_so_far < timeout_ms;
            if (cutting) {
                /* the first run also warms up: at least 10 s */
                lim.run_ms = (int)(cut * best_so_far) + 1;
                lim.first_ms = lim.run_ms > 10000 ? lim.run_ms : 10000;
                if (lim.first_ms > timeout_ms) lim.first_ms = timeout_ms;
            }
            if (s) measure_schedule(&d, ac.p, ac.b, s, NULL, ac.in, ac.ref, lim, &o);
            else o.kind = MEASURE_FAILED;
            if (o.kind == MEASURE_TIMEOUT && cutting) ncut++;
            else count[o.kind]++;
            if (o.kind != MEASURE_OK && !(o.kind == MEASURE_TIMEOUT && cutting))
                fprintf(stderr, "%s random seed %d: %s\n", names[ai], sd, o.msg);
            if (o.kind == MEASURE_OK && (best.kind != MEASURE_OK || o.ms < best.ms)) {
                best = o;
                best_seed = sd;
            }
            ir_arena_free(ra);
        }
        char c1[32], c2[32], c3[32], r1[32] = "-", r2[32] = "-";
        if (root.kind == MEASURE_OK && best.kind == MEASURE_OK) snprintf(r1, sizeof r1, "%.2f", root.ms / best.ms);
        if (base.kind == MEASURE_OK && best.kind == MEASURE_OK) snprintf(r2, sizeof r2, "%.2f", base.ms / best.ms);
        printf("%-26s %6d %10s %10s %10s %5d %9s %9s  %d/%d/%d/%d/%d [%.0f s]\n", names[ai], ac.stages,
               cell(c1, sizeof c1, &root), cell(c2, sizeof c2, &base), best_seed < 0 ? "none" : cell(c3, sizeof c3, &best), best_seed,
               r1, r2, count[MEASURE_OK], count[MEASURE_WRONG], count[MEASURE_FAILED], count[MEASURE_TIMEOUT], ncut,
               base_now_s() - t0);
        fflush(stdout);
        ir_arena_free(a);
        app_free(&ac);
    }
    apps_free_names(names, napps);
    /* again at the end: how steady the device was over the run */
    bw = floor_copy_bandwidth(&d, &t, (int64_t)64 << 20, (measure_limits){ timeout_ms, timeout_ms }, &co,
                              which, sizeof which);
    if (bw > 0) printf("\ncopy kernel again: %.3f ms = %.2f GB/s (%s)\n", co.ms, bw, which);
    printf("wall time: %.0f s\n", base_now_s() - t_all);
    return 0;
}
