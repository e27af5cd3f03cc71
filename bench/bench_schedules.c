/*
 * bench_schedules.c - every app at its paper size on one device (OpenCL by
 * default): the time of the `root` and `baseline` schedules, the best of N
 * random schedules (20 by default), and the bandwidth a plain copy kernel
 * reaches on the same device, all in one run, printed as a table.
 *
 *   build/bench_schedules [--device opencl|c] [--random N] [--small]
 *                         [--apps a,b] [--timeout-ms MS]
 *
 * Every schedule is checked against the reference evaluator before it is
 * timed (a wrong result is never timed); timing follows Sioutas et al.
 * 2020 §5 (warm-up, mean of runs, minimum over samples).  A schedule whose
 * run passes the time limit is reported as such and not timed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exec.h"
#include "space.h"

typedef struct { const rt_ops *ops; rt_device *dev; int timeout_ms; } device;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Checks and times one schedule; < 0: failed (why in err), -2: wrong. */
static double time_schedule(device *d, sc_pipeline *p, const bounds_result *b, sched_state *s,
                            ir_arena *a, sc_buffer **in, sc_buffer **ref, int *kernels, char *err, size_t n) {
    lower_program *prog = lower_schedule(a, p, b, s, err, n);
    if (!prog) return -1;
    *kernels = prog->nkernels;
    double md;
    int64_t bad;
    exec_session *x = exec_open_checked(d->ops, d->dev, prog, NULL, in, ref, 1e-4, 1e-4, d->timeout_ms,
                                        &md, &bad, err, n);
    if (!x) return -1;
    if (bad) { snprintf(err, n, "%lld points differ from the reference", (long long)bad); exec_close(x); return -2; }
    /* few runs for slow schedules, more for fast ones */
    double ms = exec_time(x, 1, 1, 1, d->timeout_ms, err, n);
    if (ms >= 0) {
        int runs = ms > 200 ? 1 : ms > 20 ? 3 : 10;
        ms = exec_time(x, 1, runs, 3, d->timeout_ms, err, n);
    }
    exec_close(x);
    return ms;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool wanted(const char *list, const char *name) {
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *c = list; c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
        if (!strncmp(c, name, n) && (c[n] == ',' || c[n] == 0)) return true;
    return false;
}

/* Bandwidth of out(x, y) = in(x, y) over 4096 x 4096 f32, scheduled with
 * `baseline`, through the same path as the apps: bytes read + written / time. */
static double copy_bandwidth(device *d, const target *t, double *ms_out) {
    const char *text = "input f32 in(4096, 4096);\ncopy(x, y) = in(x, y);\noutput copy(4096, 4096);\n";
    sc_pipeline *p = sc_parse_string("copy.pipe", text, strlen(text), NULL);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    sched_state *s = space_baseline(a, p, b, t);
    sc_buffer *in[1], *ref[1] = {0};
    int zero[2] = {0, 0}, ext[2] = {4096, 4096};
    in[0] = sc_buffer_new(SC_F32, 2, zero, ext);
    sc_buffer_fill_random(in[0], 1);
    sc_evaluate(p, in, 1, ref);
    char err[4096];
    int k;
    double ms = time_schedule(d, p, b, s, a, in, ref, &k, err, sizeof err);
    *ms_out = ms;
    sc_buffer_free(in[0]);
    sc_buffer_free(ref[0]);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
    return ms > 0 ? 2.0 * 4096 * 4096 * 4 / (ms * 1e-3) / 1e9 : -1;
}

static void cell(char *buf, size_t n, double ms) {
    if (ms >= 0) snprintf(buf, n, "%.2f", ms);
    else snprintf(buf, n, "%s", ms == -2 ? "WRONG" : "failed");
}

int main(int argc, char **argv) {
    const char *devname = "opencl", *apps = NULL;
    int nrandom = 20, small = 0, timeout_ms = 60000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) devname = argv[++i];
        else if (!strcmp(argv[i], "--random") && i + 1 < argc) nrandom = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--apps") && i + 1 < argc) apps = argv[++i];
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) timeout_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--small")) small = 1;
        else { fprintf(stderr, "usage: %s [--device opencl|c] [--random N] [--small] [--apps a,b] [--timeout-ms MS]\n", argv[0]); return 2; }
    }
    char err[8192];
    device d = { rt_ops_by_name(devname), NULL, timeout_ms };
    if (!d.ops || !(d.dev = d.ops->open(err, sizeof err))) { fprintf(stderr, "%s: %s\n", devname, d.ops ? err : "unknown device"); return 1; }
    target t;
    if (target_by_name(!strcmp(devname, "opencl") ? "host-opencl" : "a100", NULL, &t, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("device: %s: %s\ntarget: %s; sizes: %s; %d random schedules per app; times in ms\n",
           d.ops->name, d.ops->describe(d.dev), t.name, small ? "small" : "paper", nrandom);
    fflush(stdout);
    double copy_ms, bw = copy_bandwidth(&d, &t, &copy_ms);
    printf("copy kernel: 4096x4096 f32 in %.3f ms = %.2f GB/s (read + write)\n\n", copy_ms, bw);
    printf("%-26s %7s %10s %10s %10s %8s %9s %9s\n", "app", "stages", "root", "baseline", "best-rand",
           "seed", "root/best", "base/best");
    fflush(stdout);
    DIR *dir = opendir("apps");
    char *names[256];
    int napps = 0;
    for (struct dirent *e; dir && (e = readdir(dir)) && napps < 256;) {
        size_t n = strlen(e->d_name);
        if (n > 5 && !strcmp(e->d_name + n - 5, ".pipe")) names[napps++] = strndup(e->d_name, n - 5);
    }
    if (dir) closedir(dir);
    qsort(names, (size_t)napps, sizeof names[0], compare_names);
    for (int ai = 0; ai < napps; ai++) {
        if (!wanted(apps, names[ai])) continue;
        double t0 = now_s();
        char path[512];
        snprintf(path, sizeof path, "apps/%s.pipe", names[ai]);
        sc_parse_options po = { small, 0, NULL, NULL };
        sc_pipeline *p = sc_parse_file(path, &po);
        bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
        if (!b) { printf("%-26s does not parse\n", names[ai]); continue; }
        int stages = 0;
        for (int i = 0; i < p->funcs.n; i++) stages += ((sc_func *)p->funcs.items[i])->nstages;
        sc_buffer *in[16] = {0}, *ref[16] = {0};
        for (int i = 0; i < p->inputs.n; i++) {
            const sc_func *f = p->inputs.items[i];
            int zero[SC_MAX_DIMS] = {0};
            in[i] = sc_buffer_new(f->type, f->ndims, zero, f->extent);
            sc_buffer_fill_random(in[i], 1 + (uint64_t)i);
        }
        if (sc_evaluate(p, in, 1, ref) != 0) { printf("%-26s reference failed\n", names[ai]); continue; }
        ir_arena *a = ir_arena_new();
        int k;
        double root = time_schedule(&d, p, b, space_root(a, p, b, &t), a, in, ref, &k, err, sizeof err);
        if (root < 0) fprintf(stderr, "%s root: %s\n", names[ai], err);
        double base = time_schedule(&d, p, b, space_baseline(a, p, b, &t), a, in, ref, &k, err, sizeof err);
        if (base < 0) fprintf(stderr, "%s baseline: %s\n", names[ai], err);
        double best = -1;
        int best_seed = -1, wrong = 0, failed = 0;
        space_opts so = { &t, true };
        for (int sd = 1; sd <= nrandom; sd++) {
            ir_arena *ra = ir_arena_new();
            sched_state *s = space_random(ra, p, b, &so, (uint64_t)sd, err, sizeof err);
            double ms = s ? time_schedule(&d, p, b, s, ra, in, ref, &k, err, sizeof err) : -1;
            if (ms == -2) wrong++;
            else if (ms < 0) { failed++; fprintf(stderr, "%s random seed %d: %s\n", names[ai], sd, err); }
            else if (best < 0 || ms < best) { best = ms; best_seed = sd; }
            ir_arena_free(ra);
        }
        char c1[32], c2[32], c3[32], r1[32] = "-", r2[32] = "-";
        cell(c1, sizeof c1, root);
        cell(c2, sizeof c2, base);
        cell(c3, sizeof c3, best);
        if (root > 0 && best > 0) snprintf(r1, sizeof r1, "%.2f", root / best);
        if (base > 0 && best > 0) snprintf(r2, sizeof r2, "%.2f", base / best);
        printf("%-26s %7d %10s %10s %10s %8d %9s %9s", names[ai], stages, c1, c2, c3, best_seed, r1, r2);
        if (wrong || failed) printf("  (%d wrong, %d failed or timed out)", wrong, failed);
        printf("  [%.0f s]\n", now_s() - t0);
        fflush(stdout);
        ir_arena_free(a);
        for (int i = 0; i < p->inputs.n; i++) sc_buffer_free(in[i]);
        for (int i = 0; i < p->outputs.n; i++) sc_buffer_free(ref[i]);
        bounds_free(b);
        sc_pipeline_free(p);
    }
    for (int i = 0; i < napps; i++) free(names[i]);
    d.ops->close(d.dev);
    return 0;
}
