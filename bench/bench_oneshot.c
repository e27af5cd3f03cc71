/*
 * bench_oneshot.c - how long the one-shot autoscheduler takes on every
 * bundled app, and how much memory it needs (issue 10 §3: under 10 s on
 * every app, under 1 s on apps of at most 20 stages, on one core, under
 * 1 GB).
 *
 *   build/bench_oneshot [--weights W] [--apps a,b] [--target NAME] [--seed N]
 *                       [--beam N] [--passes N] [--samples N] [--freeze-min N]
 *
 * Each app runs in a child process of its own (fork), the way
 * `stagecraft schedule apps/APP.pipe --strategy oneshot` runs it: parse,
 * bounds at the paper size, the weights loaded, search_oneshot with the
 * defaults (beam 32, 5 passes, 80 samples, seed 1), target a100, and the
 * weights it takes for the target (weights/cuda.weights for a CUDA one
 * where it exists, else weights/pocl.weights, each with its siblings
 * NAME-2.weights, ...: the mean of them) unless --weights W[,W...] names
 * others.  The
 * parent takes the child's own resource usage from wait4: its CPU time
 * (user + system), its peak resident memory (ru_maxrss), and the wall
 * time around it.  The search is single-threaded, so the CPU time is the
 * time on one core; on a loaded machine the wall time is longer, so the
 * goals are judged on the CPU time.  Stages: definitions, updates
 * included (as `stagecraft check` counts them).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "base.h"
#include "apps.h"
#include "beam.h"
#include "costmodel.h"
#include "strategy.h"

#define GOAL_ALL_S 10.0
#define GOAL_SMALL_S 1.0
#define GOAL_SMALL_STAGES 20
#define GOAL_MB 1024.0

typedef struct {
    const char *weights, *apps, *target;
    uint64_t seed;
    int beam, passes, samples;
    int freeze_min;               /* 0: the search's default */
} bench_opts;

/* What a child reports through its pipe. */
typedef struct {
    int ok;
    int stages;
    double ms;                    /* the predicted time of the schedule */
    double search_s;              /* the search's own clock */
    long long featurized, costed;
    char err[512];
} child_report;

static int count_stages(const sc_pipeline *p) {
    int n = 0;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (f->kind == FUNC_DEFINED) n += f->nstages;
    }
    return n;
}

/* The child's whole job, as the command line does it. */
static void run_child(const bench_opts *o, const char *app, child_report *r) {
    char path[512];
    snprintf(path, sizeof path, "apps/%s.pipe", app);
    sc_pipeline *p = sc_parse_file(path, NULL);
    if (!p || sc_error_count(p)) {
        snprintf(r->err, sizeof r->err, "%.400s does not parse", path);
        return;
    }
    bounds_result *b = bounds_infer(p);
    target t;
    nn_model *ws[SPACE_MAX_WEIGHTS];
    char used[4096];
    if (!b) {
        snprintf(r->err, sizeof r->err, "%s: no bounds", app);
        return;
    }
    int nw = -1;
    if (target_by_name(o->target, NULL, &t, r->err, sizeof r->err) != 0 ||
        (nw = space_load_weights_list(o->weights, "bench_oneshot", &t, ws, used, sizeof used, r->err,
                                      sizeof r->err)) < 0)
        return;
    r->stages = count_stages(p);
    cost_model *cm = cost_learned_mean_new((const nn_model *const *)ws, nw, &t);
    search_opts so;
    search_opts_default(&so, &t, cm);
    so.seed = o->seed;
    if (o->beam > 0) so.beam = o->beam;
    if (o->passes > 0) so.passes = o->passes;
    if (o->freeze_min > 0) so.freeze_min = o->freeze_min;
    search_stats st;
    ir_arena *a = ir_arena_new();
    sched_state *s = search_oneshot(a, p, b, &so, o->samples, &r->ms, &st, r->err, sizeof r->err);
    if (s) {
        r->ok = 1;
        r->search_s = st.wall_s;
        r->featurized = st.featurized;
        r->costed = st.costed;
    }
    ir_arena_free(a);
    cost_free(cm);
    for (int k = 0; k < nw; k++) free(ws[k]);
    bounds_free(b);
    sc_pipeline_free(p);
}

typedef struct {
    char name[128];
    child_report r;
    double wall_s, cpu_s, mb;
    bool met;
} row;

/* Runs one app in a child; 0, or -1 when the child could not be run. */
static int bench_app(const bench_opts *o, const char *app, row *out) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    double t0 = base_now_s();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        child_report r;
        memset(&r, 0, sizeof r);
        run_child(o, app, &r);
        ssize_t k = write(fd[1], &r, sizeof r);
        _exit(k == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    memset(&out->r, 0, sizeof out->r);
    size_t got = 0;
    while (got < sizeof out->r) {
        ssize_t k = read(fd[0], (char *)&out->r + got, sizeof out->r - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return -1;
    out->wall_s = base_now_s() - t0;
    if (got != sizeof out->r || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        out->r.ok = 0;
        snprintf(out->r.err, sizeof out->r.err, "the child failed (status %d)", status);
    }
    out->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
                 1e-6 * (double)ru.ru_stime.tv_usec;
    out->mb = (double)ru.ru_maxrss / 1024.0;         /* Linux: kilobytes */
    double limit = out->r.stages <= GOAL_SMALL_STAGES ? GOAL_SMALL_S : GOAL_ALL_S;
    out->met = out->r.ok && out->cpu_s < limit && out->mb < GOAL_MB;
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: bench_oneshot [--weights W] [--apps a,b] [--target NAME] [--seed N] [--beam N] "
                    "[--passes N] [--samples N] [--freeze-min N]\n");
}

int main(int argc, char **argv) {
    bench_opts o = { NULL, NULL, "a100", 1, 0, 0, 80, 0 };
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--weights") && v) o.weights = argv[++i];
        else if (!strcmp(argv[i], "--apps") && v) o.apps = argv[++i];
        else if (!strcmp(argv[i], "--target") && v) o.target = argv[++i];
        else if (!strcmp(argv[i], "--seed") && v) o.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--beam") && v) o.beam = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--passes") && v) o.passes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && v) o.samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--freeze-min") && v && atoi(v) > 0) o.freeze_min = atoi(argv[++i]);
        else {
            usage();
            return 2;
        }
    }
    /* no --weights: the ones `stagecraft schedule` takes for the target
     * (with their siblings); loaded here once to say which, and again in
     * each child, whose memory and time count it */
    static char wused[4096];
    {
        char werr[1024];
        target wt;
        nn_model *ws[SPACE_MAX_WEIGHTS];
        int nw = -1;
        if (target_by_name(o.target, NULL, &wt, werr, sizeof werr) != 0 ||
            (nw = space_load_weights_list(o.weights, "bench_oneshot", &wt, ws, wused, sizeof wused, werr,
                                          sizeof werr)) < 0) {
            fprintf(stderr, "bench_oneshot: %s\n", werr);
            return 1;
        }
        for (int k = 0; k < nw; k++) free(ws[k]);
    }
    char err[1024], **names;
    int napps = apps_list("apps", &names, err, sizeof err);
    if (napps < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    row *rows = calloc((size_t)napps + 1, sizeof *rows);
    if (!rows) abort();
    printf("# one-shot on every app: %s, seed %llu, %d samples; each app in a child process; CPU = user + system "
           "(one core); goals: < %.0f s CPU (< %.0f s at <= %d stages), < %.0f MB\n# weights: %s\n",
           o.target, (unsigned long long)o.seed, o.samples, GOAL_ALL_S, GOAL_SMALL_S, GOAL_SMALL_STAGES, GOAL_MB,
           wused);
    printf("| app | stages | wall s | CPU s | peak MB | featurized | predicted ms | goal met |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
    int n = 0, met = 0, failed = 0;
    double cpu_sum = 0;
    const row *slowest = NULL, *largest = NULL;
    for (int i = 0; i < napps; i++) {
        if (!apps_wanted(o.apps, names[i])) continue;
        row *r = &rows[n];
        snprintf(r->name, sizeof r->name, "%s", names[i]);
        if (bench_app(&o, names[i], r) != 0) {
            fprintf(stderr, "%s: cannot run a child: %s\n", names[i], strerror(errno));
            failed++;
            continue;
        }
        n++;
        if (!r->r.ok) {
            printf("| %s | %d | %.2f | %.2f | %.0f | - | - | no: %s |\n", r->name, r->r.stages, r->wall_s, r->cpu_s,
                   r->mb, r->r.err);
            failed++;
            continue;
        }
        double limit = r->r.stages <= GOAL_SMALL_STAGES ? GOAL_SMALL_S : GOAL_ALL_S;
        printf("| %s | %d | %.2f | %.2f | %.0f | %lld | %.4g | %s", r->name, r->r.stages, r->wall_s, r->cpu_s, r->mb,
               r->r.featurized, r->r.ms, r->met ? "yes" : "no");
        if (!r->met) printf(" (%.1fx the %.0f s goal)", r->cpu_s / limit, limit);
        printf(" |\n");
        fflush(stdout);
        met += r->met;
        cpu_sum += r->cpu_s;
        if (!slowest || r->cpu_s > slowest->cpu_s) slowest = r;
        if (!largest || r->mb > largest->mb) largest = r;
    }
    printf("# goals met on %d of %d apps%s; %.1f s CPU in all", met, n, failed ? " (some failed)" : "", cpu_sum);
    if (slowest) printf("; slowest %s (%.2f s CPU)", slowest->name, slowest->cpu_s);
    if (largest) printf("; most memory %s (%.0f MB)", largest->name, largest->mb);
    printf("\n");
    apps_free_names(names, napps);
    free(rows);
    return failed ? 1 : 0;
}
