/*
 * measure.c - one schedule measured on a device, in a child process where
 * the device allows it (measure.h).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "base.h"
#include "measure.h"
#include "store.h"

bool measure_device_by_name(const char *name, cg_math math, measure_device *d) {
    d->ops = rt_ops_by_name(name);
    d->fork_each = d->ops && strcmp(name, "c") != 0;
    d->math = math;
    d->cpu = false;
    return d->ops != NULL;
}

int measure_buffers_new(sc_pipeline *p, uint64_t seed, sc_buffer ***in, sc_buffer ***ref, char *err, size_t errlen) {
    int nin = p->inputs.n, nout = p->outputs.n;
    *in = calloc((size_t)nin + 1, sizeof **in);
    *ref = calloc((size_t)nout + 1, sizeof **ref);
    if (!*in || !*ref) abort();
    for (int i = 0; i < nin; i++)
        if (!((*in)[i] = sc_input_random(p, i, seed))) {
            snprintf(err, errlen, "cannot allocate input %s", ((const sc_func *)p->inputs.items[i])->name);
            return -1;
        }
    if (sc_evaluate(p, *in, seed, *ref) != 0) {
        snprintf(err, errlen, "the reference evaluator failed: %s", sc_error_count(p) ? sc_error_message(p, 0) : "?");
        return -1;
    }
    return 0;
}

void measure_buffers_free(const sc_pipeline *p, sc_buffer **in, sc_buffer **ref) {
    for (int i = 0; in && i < p->inputs.n; i++) sc_buffer_free(in[i]);
    for (int i = 0; ref && i < p->outputs.n; i++) sc_buffer_free(ref[i]);
    free(in);
    free(ref);
}

measure_limits measure_limits_for(int run_ms) {
    int first = run_ms > 10000 ? 3 * run_ms : 30000;
    return (measure_limits){ first, run_ms };
}

int measure_first_ms(measure_limits lim, int nkernels) {
    int64_t ms = (int64_t)lim.first_ms + (int64_t)MEASURE_FIRST_LAUNCH_MS * (nkernels > 0 ? nkernels : 0);
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* The runs per sample for a pipeline that takes est ms: 10 (3 past 20
 * ms, 1 past 200 ms). */
static int runs_for(double est) { return est > 200 ? 1 : est > 20 ? 3 : 10; }

/* The rule of in-turn pairs (measure.h, MEASURE_AGREEING): on a loaded
 * machine one pair in three can be hit by another process, and a ratio of
 * two least samples taken at different moments mixes two loads
 * (docs/samples.md). */
double measure_median_agreeing(const double *ratio, int n, int *agreeing) {
    double sorted[MEASURE_MAX_SAMPLES];
    memcpy(sorted, ratio, sizeof(double) * (size_t)n);
    double med = base_median(sorted, n);
    *agreeing = 0;
    for (int i = 0; i < n; i++)
        if (fabs(ratio[i] / med - 1) <= MEASURE_AGREE) ++*agreeing;
    return med;
}

/* Times a checked session x (and the reference session rx, when there is
 * one, in turn with it): one run estimates the time; then 3 samples of
 * the mean of runs_for(estimate) runs, and with a reference more until
 * their ratios agree (above); past a second the estimate is the only
 * sample.  ms is the least sample; with a reference, ref_ms is ms over
 * the median ratio, so that ms / ref_ms is that median. */
static void time_session(exec_session *x, exec_session *rx, measure_limits lim, measure_outcome *o) {
    /* x ran once when it was checked; the reference has not run yet, and
     * its first run includes what the driver compiles at the first launch
     * (PoCL: every kernel; over a second for local_laplacian's 88), which
     * taken as its time made a schedule look up to 5x faster than the
     * reference: so it runs once, untimed, first */
    if (rx && exec_time(rx, 0, 1, 1, lim.first_ms, o->msg, sizeof o->msg) < 0) return;
    /* a failed run (a time-out leaves the device unusable) ends the
     * timing with its own message: running the other session would
     * replace it with the unusable device's */
    double est = exec_time(x, 0, 1, 1, lim.run_ms, o->msg, sizeof o->msg);
    if (est < 0) return;
    double rest = rx ? exec_time(rx, 0, 1, 1, lim.run_ms, o->msg, sizeof o->msg) : 0;
    if (rest < 0) return;
    o->runs = 1;
    o->nsamples = 1;
    o->samples_ms[0] = o->ms = est;
    o->ref_ms = rest;
    if (est <= 1000 && rest <= 1000) {
        int runs = runs_for(est), rruns = runs_for(rest);
        double ratio[MEASURE_MAX_SAMPLES];
        o->runs = runs;
        o->nsamples = 0;
        for (int i = 0; i < MEASURE_MAX_SAMPLES; i++) {
            double r = rx ? exec_time(rx, 0, rruns, 1, lim.run_ms, o->msg, sizeof o->msg) : 0;
            double ms = r < 0 ? -1 : exec_time(x, 0, runs, 1, lim.run_ms, o->msg, sizeof o->msg);
            if (ms < 0) return;
            if (rx) ratio[o->nsamples] = ms / r;
            o->samples_ms[o->nsamples++] = ms;
            if (ms < o->ms) o->ms = ms;
            if (o->nsamples < 3) continue;
            if (!rx) break;
            int agreeing;
            double med = measure_median_agreeing(ratio, o->nsamples, &agreeing);
            o->ref_ms = o->ms / med;
            if (agreeing >= MEASURE_AGREEING) break;
        }
    }
    o->kind = MEASURE_OK;
}

/* Each kernel of a timed session alone, into o->kernel_ms (the store's
 * text); a failure here fails the measurement (a time-out leaves the
 * device unusable), as a failed timed run does. */
static void time_kernels(exec_session *x, const lower_program *prog, measure_limits lim, measure_outcome *o) {
    int n = prog->nkernels;
    double *ms = calloc((size_t)n + 1, sizeof *ms);
    store_kernel_time *k = calloc((size_t)n + 1, sizeof *k);
    if (!ms || !k) abort();
    char err[sizeof o->msg];
    if (exec_kernel_times(x, o->ms > 200 ? 1 : 3, lim.run_ms, ms, err, sizeof err) != 0) {
        o->kind = MEASURE_FAILED;
        snprintf(o->msg, sizeof o->msg, "timing each kernel alone: %.900s", err);
    } else {
        int nk = 0;
        bool fits = n <= STORE_MAX_KERNEL_TIMES;
        for (int i = 0; fits && i < n; i++) {
            const lower_kernel *lk = prog->kernels[i];
            int j = 0;
            while (j < nk && !(k[j].stage == lk->stage && !strcmp(k[j].func, lk->root->name))) j++;
            if (j == nk) {
                if (strlen(lk->root->name) >= sizeof k[j].func) { fits = false; break; }
                strcpy(k[j].func, lk->root->name);
                k[j].stage = lk->stage;
                nk++;
            }
            k[j].ms += ms[i];
        }
        if (!fits || !store_kernel_ms_format(k, nk, o->kernel_ms, sizeof o->kernel_ms)) o->kernel_ms[0] = 0;
    }
    free(ms);
    free(k);
}

/* The reference session: rs lowered and compiled, inputs uploaded; NULL
 * (and o->msg says why) when any of it fails. */
static exec_session *open_reference(const measure_device *d, rt_device *dev, ir_arena *a, sc_pipeline *p,
                                    const bounds_result *b, const sched_state *rs, sc_buffer *const *in,
                                    int *nkernels, measure_outcome *o) {
    char err[900];
    lower_program *prog = lower_schedule_for(a, p, b, rs, d->cpu, err, sizeof err);
    *nkernels = prog ? prog->nkernels : 0;
    exec_session *x = prog ? exec_open_math(d->ops, dev, prog, d->math, NULL, err, sizeof err) : NULL;
    if (x && exec_upload(x, in, err, sizeof err) != 0) {
        exec_close(x);
        x = NULL;
    }
    if (!x) snprintf(o->msg, sizeof o->msg, "the reference schedule: %s", err);
    return x;
}

/* Opens the device, lowers, checks and times one schedule, here. */
static void measure_here(const measure_device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                         const sched_state *rs, sc_buffer *const *in, sc_buffer *const *ref, measure_limits lim,
                         measure_outcome *o) {
    memset(o, 0, sizeof *o);
    o->kind = MEASURE_FAILED;
    double t0 = base_now_s();
    ir_arena *a = ir_arena_new();
    rt_device *dev = d->ops->open(o->msg, sizeof o->msg);
    lower_program *prog = dev ? lower_schedule_for(a, p, b, s, d->cpu, o->msg, sizeof o->msg) : NULL;
    exec_session *x = NULL, *rx = NULL;
    if (prog) {
        o->kernels = prog->nkernels;
        exec_diff diff;
        x = exec_open_checked(d->ops, dev, prog, d->math, NULL, in, ref, measure_first_ms(lim, prog->nkernels),
                              &diff, o->msg, sizeof o->msg);
        o->compile_s = base_now_s() - t0;
        if (x && diff.mismatches) {
            o->kind = MEASURE_WRONG;
            snprintf(o->msg, sizeof o->msg,
                     "%lld of %lld points beyond the tolerance of %s math (max difference %g, %lld ulp)",
                     (long long)diff.mismatches, (long long)diff.points, cg_math_name(d->math), diff.max_abs,
                     (long long)diff.max_ulp);
        } else if (x) {
            snprintf(o->check, sizeof o->check, "%lld of %lld points differ (%s math), max difference %g",
                     (long long)diff.differ, (long long)diff.points, cg_math_name(d->math), diff.max_abs);
            int rkernels = 0;
            if (!rs || (rx = open_reference(d, dev, a, p, b, rs, in, &rkernels, o))) {
                measure_limits rlim = lim;     /* the reference's first run: its own kernels' */
                rlim.first_ms = measure_first_ms(lim, rkernels);
                time_session(x, rx, rlim, o);
                if (o->kind == MEASURE_OK && d->kernel_times) time_kernels(x, prog, lim, o);
            }
        }
    }
    if (o->kind == MEASURE_FAILED && strstr(o->msg, "time limit")) o->kind = MEASURE_TIMEOUT;
    /* A device whose kernel ran past its limit may hang on release. */
    if (o->kind != MEASURE_TIMEOUT) {
        exec_close(rx);
        exec_close(x);
        if (dev) d->ops->close(dev);
    }
    ir_arena_free(a);
}

/* Reads a struct of n bytes from fd until the deadline; bytes read. */
static size_t read_until(int fd, void *dst, size_t n, double deadline) {
    size_t got = 0;
    while (got < n) {
        int left = (int)((deadline - base_now_s()) * 1000);
        if (left <= 0) break;
        struct pollfd pf = { fd, POLLIN, 0 };
        int r = poll(&pf, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        ssize_t k = read(fd, (char *)dst + got, n - got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    return got;
}

void measure_schedule(const measure_device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                      const sched_state *rs, sc_buffer *const *in, sc_buffer *const *ref, measure_limits lim,
                      measure_outcome *o) {
    if (!d->fork_each) {
        measure_here(d, p, b, s, rs, in, ref, lim, o);
        return;
    }
    memset(o, 0, sizeof *o);
    o->kind = MEASURE_FAILED;
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
        measure_outcome mine;
        measure_here(d, p, b, s, rs, in, ref, lim, &mine);
        ssize_t w = write(fd[1], &mine, sizeof mine);
        _exit(w == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fd[1]);
    double allow = 300.0 + (lim.first_ms + ((rs ? 64.0 : 32.0) + (d->kernel_times ? 3 : 0)) * lim.run_ms) / 1000.0;
    double deadline = base_now_s() + allow;
    measure_outcome theirs;
    size_t got = read_until(fd[0], &theirs, sizeof theirs, deadline);
    close(fd[0]);
    int status = 0;
    if (got < sizeof theirs) kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (got == sizeof theirs) *o = theirs;
    else if (base_now_s() >= deadline) {
        o->kind = MEASURE_TIMEOUT;
        snprintf(o->msg, sizeof o->msg, "killed after %.0f s", allow);
    } else if (WIFSIGNALED(status))
        snprintf(o->msg, sizeof o->msg, "the measuring process died of signal %d", WTERMSIG(status));
    else
        snprintf(o->msg, sizeof o->msg, "the measuring process exited (%d) without a result", WEXITSTATUS(status));
}

bool measure_exact_retry(const measure_device *d, sc_pipeline *p, const bounds_result *b, const sched_state *s,
                         const sched_state *rs, sc_buffer *const *in, sc_buffer *const *ref, measure_limits lim,
                         const measure_outcome *o, measure_outcome *exact) {
    if (o->kind != MEASURE_WRONG || d->math != CG_MATH_FAST) return false;
    measure_device x = *d;
    x.math = CG_MATH_EXACT;
    measure_schedule(&x, p, b, s, rs, in, ref, lim, exact);
    return true;
}

/* In a child: lower, generate and compile one schedule; exit 0 if it
 * compiled. */
static void precompile_one(const measure_device *d, sc_pipeline *p, const bounds_result *b,
                           const sched_state *s) {
    char err[4096];
    if (!freopen("/dev/null", "w", stderr)) _exit(1);
    ir_arena *a = ir_arena_new();
    rt_device *dev = d->ops->open(err, sizeof err);
    lower_program *prog = dev ? lower_schedule_for(a, p, b, s, d->cpu, err, sizeof err) : NULL;
    exec_session *x = prog ? exec_open_math(d->ops, dev, prog, d->math, NULL, err, sizeof err) : NULL;
    _exit(x ? 0 : 1);
}

int measure_precompile(const measure_device *d, sc_pipeline *p, const bounds_result *b,
                       const sched_state *const *s, int n, int jobs) {
    if (!d->fork_each || n <= 0) return 0;
    if (jobs < 1) jobs = 1;
    int next = 0, running = 0, ok = 0;
    fflush(stdout);
    fflush(stderr);
    while (next < n || running > 0) {
        while (running < jobs && next < n) {
            pid_t pid = fork();
            if (pid == 0) precompile_one(d, p, b, s[next]);
            next++;
            if (pid > 0) running++;
        }
        int status;
        pid_t w = wait(&status);
        if (w < 0) break;
        running--;
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    return ok;
}

/* Copies the first run of characters of s that ends before any of stop
 * (or the end), spaces trimmed. */
static void copy_until(char *dst, size_t len, const char *s, const char *stop) {
    while (*s == ' ') s++;
    size_t n = strcspn(s, stop);
    while (n > 0 && s[n - 1] == ' ') n--;
    snprintf(dst, len, "%.*s", (int)n, s);
}

/* The CPU's model name, from /proc/cpuinfo ("unknown" elsewhere). */
static void cpu_model(char *buf, size_t len) {
    snprintf(buf, len, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *c = strchr(line, ':');
        if (c) copy_until(buf, len, c + 1, "\n");
        break;
    }
    if (f) fclose(f);
}

/* The device key of a device's description (measure.h). */
static void device_key(const char *devname, const char *desc, char *key, size_t keylen) {
    char driver[128] = "", hw[256] = "";
    if (!strcmp(devname, "opencl")) {
        /* "PLATFORM (OpenCL 3.0 PoCL 3.1+debian ...) / DEVICE (...)" */
        const char *pocl = strstr(desc, "PoCL ");
        if (pocl) {
            char ver[64];
            copy_until(ver, sizeof ver, pocl + 5, " +)");
            snprintf(driver, sizeof driver, "pocl-%s", ver);
        } else {
            copy_until(driver, sizeof driver, desc, "(/");
        }
        const char *slash = strstr(desc, " / ");
        const char *name = slash ? slash + 3 : desc, *paren = strstr(name, " (");
        snprintf(hw, sizeof hw, "%.*s", paren ? (int)(paren - name) : (int)strlen(name), name);
    } else if (!strcmp(devname, "c")) {
        char cpu[200];
        cpu_model(cpu, sizeof cpu);
        snprintf(driver, sizeof driver, "cc");
        snprintf(hw, sizeof hw, "%s x%ld", cpu, sysconf(_SC_NPROCESSORS_ONLN));
    } else {
        const char *paren = strstr(desc, " (");
        snprintf(driver, sizeof driver, "%s", devname);
        snprintf(hw, sizeof hw, "%.*s", paren ? (int)(paren - desc) : (int)strlen(desc), desc);
    }
    for (char *c = driver; *c; c++) *c = (char)tolower((unsigned char)*c);
    snprintf(key, keylen, "%s:%s:%s", devname, driver, hw);
}

/* In a child: the target of the forked device devname ("opencl": the
 * OpenCL device's own limits; "cuda": the GPU's) and its description. */
static void find_target_child(const char *devname, int rc_fd) {
    struct { int rc; target t; char desc[1024], err[1024]; } r;
    memset(&r, 0, sizeof r);
    bool cuda = !strcmp(devname, "cuda");
    const rt_ops *ops = cuda ? &rt_cuda_ops : &rt_opencl_ops;
    rt_device *dev = ops->open(r.err, sizeof r.err);
    if (!dev) {
        r.rc = -1;
    } else {
        snprintf(r.desc, sizeof r.desc, "%s", ops->describe(dev));
        if (cuda && !ops->can_run(dev)) {
            snprintf(r.err, sizeof r.err, "cuda: this device compiles but cannot run kernels here (%.900s)", r.desc);
            r.rc = -1;
        }
        ops->close(dev);
        if (!r.rc) r.rc = target_by_name(cuda ? "host-cuda" : "host-opencl", NULL, &r.t, r.err, sizeof r.err);
    }
    ssize_t w = write(rc_fd, &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
}

int measure_find_target(const char *devname, target *t, char *desc, size_t desclen, char *key, size_t keylen,
                        char *err, size_t errlen) {
    const rt_ops *ops = rt_ops_by_name(devname);
    if (!ops) { snprintf(err, errlen, "unknown device '%s' (expected opencl, c or cuda)", devname); return -1; }
    if (!strcmp(devname, "c")) {
        rt_device *dev = ops->open(err, errlen);
        if (!dev) return -1;
        snprintf(desc, desclen, "%s", ops->describe(dev));
        ops->close(dev);
        device_key(devname, desc, key, keylen);
        return target_by_name("a100", NULL, t, err, errlen);
    }
    struct { int rc; target t; char desc[1024], err[1024]; } r;
    int fd[2];
    if (pipe(fd) != 0) { snprintf(err, errlen, "pipe: %s", strerror(errno)); return -1; }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        find_target_child(devname, fd[1]);
    }
    close(fd[1]);
    size_t got = read_until(fd[0], &r, sizeof r, base_now_s() + 120);
    close(fd[0]);
    if (pid > 0) {
        if (got != sizeof r) kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    if (got != sizeof r) { snprintf(err, errlen, "%s: the device query process failed", devname); return -1; }
    if (r.rc) { snprintf(err, errlen, "%s", r.err); return -1; }
    *t = r.t;
    snprintf(desc, desclen, "%s", r.desc);
    device_key(devname, desc, key, keylen);
    return 0;
}
