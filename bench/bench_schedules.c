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
 * A kernel past its limit cannot be stopped inside an OpenCL driver, so
 * each schedule is measured in a child process of its own (fork) that is
 * killed when late: the parent never opens the device.  The parent
 * computes the reference outputs with the evaluator, which uses OpenMP;
 * the children never do (libgomp's threads do not survive fork).  The C
 * device runs generated OpenMP code, so it is measured in-process instead,
 * with a fresh device per schedule.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "apps.h"
#include "exec.h"
#include "space.h"

typedef enum { OUT_OK, OUT_FAILED, OUT_WRONG, OUT_TIMEOUT } outcome_kind;

/* What one measurement gives, as sent from a child. */
typedef struct {
    outcome_kind kind;
    double ms;
    int kernels;
    char msg[1024];
} outcome;

typedef struct {
    const rt_ops *ops;
    bool fork_each;             /* measure in a child process */
    cg_math math;               /* fast unless --math exact */
} device;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Time limits of one measurement: the checked first run (which also
 * warms up: some drivers finish compiling at the first launch), and each
 * timed run. */
typedef struct { int first_ms, run_ms; } limits;

/* Opens the device, lowers, checks and times one schedule. */
static void measure(const device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                    sc_buffer **in, sc_buffer **ref, limits lim, outcome *o) {
    memset(o, 0, sizeof *o);
    o->kind = OUT_FAILED;
    ir_arena *a = ir_arena_new();
    rt_device *dev = d->ops->open(o->msg, sizeof o->msg);
    lower_program *prog = dev ? lower_schedule(a, p, b, s, o->msg, sizeof o->msg) : NULL;
    exec_session *x = NULL;
    if (prog) {
        o->kernels = prog->nkernels;
        exec_diff diff;
        x = exec_open_checked(d->ops, dev, prog, d->math, NULL, in, ref, lim.first_ms, &diff, o->msg,
                              sizeof o->msg);
        if (x && diff.mismatches) {
            o->kind = OUT_WRONG;
            snprintf(o->msg, sizeof o->msg, "%lld points beyond the tolerance of %s math (max difference %g, %lld ulp)",
                     (long long)diff.mismatches, cg_math_name(d->math), diff.max_abs, (long long)diff.max_ulp);
        } else if (x) {
            /* The checked run was the warm-up.  One run estimates the
             * time; fast schedules get more runs per sample. */
            double est = exec_time(x, 0, 1, 1, lim.run_ms, o->msg, sizeof o->msg), ms = est;
            if (est >= 0 && est <= 1000) {
                int runs = est > 200 ? 1 : est > 20 ? 3 : 10;
                double more = exec_time(x, 0, runs, 3, lim.run_ms, o->msg, sizeof o->msg);
                ms = more < 0 ? more : more < est ? more : est;
            }
            if (ms >= 0) {
                o->kind = OUT_OK;
                o->ms = ms;
            }
        }
    }
    if (o->kind == OUT_FAILED && strstr(o->msg, "time limit")) o->kind = OUT_TIMEOUT;
    /* A device whose kernel ran past its limit may hang on release. */
    if (o->kind != OUT_TIMEOUT) {
        exec_close(x);
        if (dev) d->ops->close(dev);
    }
    ir_arena_free(a);
}

/* measure() in a child process, killed after a deadline that leaves room
 * for compiling and every run the child makes. */
static void measure_apart(const device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                          sc_buffer **in, sc_buffer **ref, limits lim, outcome *o) {
    if (!d->fork_each) {
        measure(d, p, b, s, in, ref, lim, o);
        return;
    }
    memset(o, 0, sizeof *o);
    o->kind = OUT_FAILED;
    int fd[2];
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) { snprintf(o->msg, sizeof o->msg, "pipe: %s", strerror(errno)); return; }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(o->msg, sizeof o->msg, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        /* the driver's compiler chatter; the parent reports what failed */
        if (!freopen("/dev/null", "w", stderr)) _exit(1);
        outcome mine;
        measure(d, p, b, s, in, ref, lim, &mine);
        ssize_t w = write(fd[1], &mine, sizeof mine);
        _exit(w == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fd[1]);
    double allow = 300.0 + (lim.first_ms + 8.0 * lim.run_ms) / 1000.0;
    double deadline = now_s() + allow;
    size_t got = 0;
    outcome theirs;
    while (got < sizeof theirs) {
        int left = (int)((deadline - now_s()) * 1000);
        if (left <= 0) break;
        struct pollfd pf = { fd[0], POLLIN, 0 };
        int r = poll(&pf, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        ssize_t n = read(fd[0], (char *)&theirs + got, sizeof theirs - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd[0]);
    int status = 0;
    if (got < sizeof theirs) kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (got == sizeof theirs) *o = theirs;
    else if (now_s() >= deadline) {
        o->kind = OUT_TIMEOUT;
        snprintf(o->msg, sizeof o->msg, "killed after %.0f s", allow);
    } else if (WIFSIGNALED(status))
        snprintf(o->msg, sizeof o->msg, "the measuring process died of signal %d", WTERMSIG(status));
    else
        snprintf(o->msg, sizeof o->msg, "the measuring process exited (%d) without a result", WEXITSTATUS(status));
}

/* Bandwidth of out(x, y) = in(x, y) over 4096 x 4096 f32, scheduled with
 * `baseline`, through the same path as the apps: bytes read + written / time. */
static double copy_bandwidth(const device *d, const target *t, int limit_ms, outcome *o) {
    const char *text = "input f32 in(4096, 4096);\ncopy(x, y) = in(x, y);\noutput copy(4096, 4096);\n";
    sc_pipeline *p = sc_parse_string("copy.pipe", text, strlen(text), NULL);
    bounds_result *b = bounds_infer(p);
    ir_arena *a = ir_arena_new();
    sc_buffer *in[1] = { sc_input_random(p, 0, 1) }, *ref[1] = {0};
    sc_evaluate(p, in, 1, ref);
    measure_apart(d, p, b, space_baseline(a, p, b, t), in, ref, (limits){ limit_ms, limit_ms }, o);
    sc_buffer_free(in[0]);
    sc_buffer_free(ref[0]);
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
    return o->kind == OUT_OK && o->ms > 0 ? 2.0 * 4096 * 4096 * 4 / (o->ms * 1e-3) / 1e9 : -1;
}

static const char *cell(char *buf, size_t n, const outcome *o) {
    static const char *word[] = { "", "failed", "WRONG", "timeout" };
    if (o->kind == OUT_OK) snprintf(buf, n, "%.2f", o->ms);
    else snprintf(buf, n, "%s", word[o->kind]);
    return buf;
}

/* The target schedules are made for: the OpenCL device's own, queried in
 * a child so that the parent never opens the device; a100 otherwise. */
static int find_target(const char *devname, target *t, char *desc, size_t desclen, char *err, size_t errlen) {
    if (strcmp(devname, "opencl")) {
        const rt_ops *ops = rt_ops_by_name(devname);
        rt_device *dev = ops ? ops->open(err, errlen) : NULL;
        if (!dev) return -1;
        snprintf(desc, desclen, "%s", ops->describe(dev));
        ops->close(dev);
        return target_by_name("a100", NULL, t, err, errlen);
    }
    struct { int rc; target t; char desc[1024], err[1024]; } r;
    int fd[2];
    if (pipe(fd) != 0) { snprintf(err, errlen, "pipe: %s", strerror(errno)); return -1; }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        memset(&r, 0, sizeof r);
        r.rc = target_by_name("host-opencl", NULL, &r.t, r.err, sizeof r.err);
        rt_device *dev = r.rc ? NULL : rt_opencl_ops.open(r.err, sizeof r.err);
        if (dev) snprintf(r.desc, sizeof r.desc, "%s", rt_opencl_ops.describe(dev));
        else r.rc = -1;
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    for (ssize_t n; got < sizeof r && (n = read(fd[0], (char *)&r + got, sizeof r - got)) > 0;) got += (size_t)n;
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    if (got != sizeof r) { snprintf(err, errlen, "opencl: the device query process failed"); return -1; }
    if (r.rc) { snprintf(err, errlen, "%s", r.err); return -1; }
    *t = r.t;
    snprintf(desc, desclen, "%s", r.desc);
    return 0;
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
    char err[8192], desc[1024];
    device d = { rt_ops_by_name(devname), strcmp(devname, "c") != 0, CG_MATH_FAST };
    if (!d.ops) { fprintf(stderr, "unknown device '%s' (expected opencl, c or cuda)\n", devname); return 2; }
    if (cg_math_parse(mathname, &d.math) != 0) {
        fprintf(stderr, "--math: '%s' is not one of fast, exact\n", mathname);
        return 2;
    }
    target t;
    if (find_target(devname, &t, desc, sizeof desc, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", devname, err);
        return 1;
    }
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
    double t_all = now_s();
    outcome co;
    double bw = copy_bandwidth(&d, &t, timeout_ms, &co);
    if (bw > 0) printf("copy kernel: 4096x4096 f32 in %.3f ms = %.2f GB/s (read + write)\n\n", co.ms, bw);
    else printf("copy kernel: %s\n\n", co.msg);
    printf("%-26s %6s %10s %10s %10s %5s %9s %9s  %s\n", "app", "stages", "root", "baseline", "best-rand",
           "seed", "root/best", "base/best", "random: ok/wrong/failed/timeout/cut [wall]");
    fflush(stdout);
    char **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) { fprintf(stderr, "%s\n", err); return 1; }
    for (int ai = 0; ai < napps; ai++) {
        if (!apps_wanted(apps, names[ai])) continue;
        double t0 = now_s();
        app_case ac;
        if (app_load("apps", names[ai], small, 1, &ac, err, sizeof err) != 0) {
            printf("%-26s %s\n", names[ai], err);
            continue;
        }
        ir_arena *a = ir_arena_new();
        outcome root, base;
        limits full = { timeout_ms, timeout_ms };
        measure_apart(&d, ac.p, ac.b, space_root(a, ac.p, ac.b, &t), ac.in, ac.ref, full, &root);
        if (root.kind != OUT_OK) fprintf(stderr, "%s root: %s\n", names[ai], root.msg);
        measure_apart(&d, ac.p, ac.b, space_baseline(a, ac.p, ac.b, &t), ac.in, ac.ref, full, &base);
        if (base.kind != OUT_OK) fprintf(stderr, "%s baseline: %s\n", names[ai], base.msg);
        outcome best = { OUT_FAILED, 0, 0, "" };
        int best_seed = -1, count[4] = {0}, ncut = 0;
        double best_fixed = -1;
        if (root.kind == OUT_OK) best_fixed = root.ms;
        if (base.kind == OUT_OK && (best_fixed < 0 || base.ms < best_fixed)) best_fixed = base.ms;
        space_opts so = { &t, true };
        for (int sd = 1; sd <= nrandom; sd++) {
            ir_arena *ra = ir_arena_new();
            outcome o;
            sched_state *s = space_random(ra, ac.p, ac.b, &so, (uint64_t)sd, o.msg, sizeof o.msg);
            /* the cut is against every schedule measured so far */
            double best_so_far = best_fixed;
            if (best.kind == OUT_OK && (best_so_far < 0 || best.ms < best_so_far)) best_so_far = best.ms;
            limits lim = full;
            bool cutting = best_so_far > 0 && cut * best_so_far < timeout_ms;
            if (cutting) {
                /* the first run also warms up: at least 10 s */
                lim.run_ms = (int)(cut * best_so_far) + 1;
                lim.first_ms = lim.run_ms > 10000 ? lim.run_ms : 10000;
                if (lim.first_ms > timeout_ms) lim.first_ms = timeout_ms;
            }
            if (s) measure_apart(&d, ac.p, ac.b, s, ac.in, ac.ref, lim, &o);
            else o.kind = OUT_FAILED;
            if (o.kind == OUT_TIMEOUT && cutting) ncut++;
            else count[o.kind]++;
            if (o.kind != OUT_OK && !(o.kind == OUT_TIMEOUT && cutting))
                fprintf(stderr, "%s random seed %d: %s\n", names[ai], sd, o.msg);
            if (o.kind == OUT_OK && (best.kind != OUT_OK || o.ms < best.ms)) {
                best = o;
                best_seed = sd;
            }
            ir_arena_free(ra);
        }
        char c1[32], c2[32], c3[32], r1[32] = "-", r2[32] = "-";
        if (root.kind == OUT_OK && best.kind == OUT_OK) snprintf(r1, sizeof r1, "%.2f", root.ms / best.ms);
        if (base.kind == OUT_OK && best.kind == OUT_OK) snprintf(r2, sizeof r2, "%.2f", base.ms / best.ms);
        printf("%-26s %6d %10s %10s %10s %5d %9s %9s  %d/%d/%d/%d/%d [%.0f s]\n", names[ai], ac.stages,
               cell(c1, sizeof c1, &root), cell(c2, sizeof c2, &base), best_seed < 0 ? "none" : cell(c3, sizeof c3, &best), best_seed,
               r1, r2, count[OUT_OK], count[OUT_WRONG], count[OUT_FAILED], count[OUT_TIMEOUT], ncut,
               now_s() - t0);
        fflush(stdout);
        ir_arena_free(a);
        app_free(&ac);
    }
    apps_free_names(names, napps);
    /* again at the end: how steady the device was over the run */
    bw = copy_bandwidth(&d, &t, timeout_ms, &co);
    if (bw > 0) printf("\ncopy kernel again: %.3f ms = %.2f GB/s\n", co.ms, bw);
    printf("wall time: %.0f s\n", now_s() - t_all);
    return 0;
}
