/*
 * cmd_collect.c - `stagecraft collect`: measure schedules of pipelines
 * into the sample store (collect.h), resumably.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "codegen.h"
#include "collect.h"
#include "driver.h"
#include "randpipe.h"
#include "strategy.h"
#include "tools.h"

#define MAX_PIPES 256

static void collect_help(void) {
    printf("usage: stagecraft collect --db F --device opencl|c|cuda [FILE.pipe...]\n"
           "       [--random N [--first-seed S] [--ops classic|lookups|layers]] [--schedules K] [--jobs J]\n"
           "       [--budget MINUTES] [--timeout-ms MS]\n"
           "       [--math fast|exact] [--small] [--no-prune] [--[no-]unroll-whole] [--sampler random|shapes|beam|picks [--weights W]\n"
           "       [--dropout P]] [--remeasure] [--add-kernel-times]\n\n"
           "Measures K schedules (the baseline, root, then random walks of the schedule\n"
           "space, seeds 1, 2, ..., re-tilings of the baseline or beam-search samples;\n"
           "duplicates skipped) of each\n"
           "pipeline on the device, each timed in turn with the pipeline's baseline\n"
           "(its reference time), and stores every result\n"
           "in the SQLite database F (created if missing) as soon as it is known:\n"
           "each schedule is compiled (J at a time), checked against the reference\n"
           "evaluator, then timed alone in a process of its own with a time limit.\n"
           "Failures (compile errors, wrong results, time-outs) are stored as such.\n"
           "Schedules that already have a result on this device are skipped, so an\n"
           "interrupted run (Ctrl-C, kill, a crash) is resumed by running it again:\n"
           "nothing measured is lost or measured twice.\n"
           "  --random N       also N random pipelines (random-pipeline, seeds S .. S+N-1;\n"
           "                   docs/random_pipelines.md), source random:seed=N\n"
           "  --first-seed S   the first random pipeline's seed (default 1)\n"
           "  --ops SET        the random pipelines' operations: classic (default; random_N),\n"
           "                   lookups (also lookup tables and grids read at data-dependent\n"
           "                   coordinates; random_lookups_N, source random:ops=lookups:seed=N)\n"
           "                   or layers (also network layers and fixed-point demosaicking;\n"
           "                   random_layers_N, source random:ops=layers:seed=N)\n"
           "  --schedules K    schedules per pipeline (default 80)\n"
           "  --jobs J         parallel compiles (default: the core count)\n"
           "  --budget M       stop after M minutes (default: no limit)\n"
           "  --timeout-ms MS  limit of one run of a pipeline (default 10000)\n"
           "  --math M         fast (default: the code a user who wants speed runs) or exact\n"
           "  --small          the pipelines' small sizes\n"
           "  --no-prune       draw from the whole space, without Anderson's s6.6 pruning\n"
           "  --unroll-whole   the space also offers a root loop of extent 3 to 7 unrolled\n"
           "                   whole (random, beam and picks samplers; the default on a CPU;\n"
           "                   --no-unroll-whole: not offered)\n"
           "  --sampler S      random (default): random walks; beam: the batches of the\n"
           "                   one-shot search (one beam search and greedy samples) guided\n"
           "                   by the learned model, children dropped at random; shapes:\n"
           "                   the baseline with its root stages' block shapes and serial\n"
           "                   tiles drawn anew (seeds 1, 2, ...), all stages alike or one\n"
           "                   of them, within the target's limits; picks: the model's\n"
           "                   four best of the one-shot batch, then each re-tiled as shapes\n"
           "                   re-tiles the baseline, in turn\n"
           "  --weights W[,W2...]  the model of beam and picks, the mean of those given as\n"
           "                   the searches' --weights (default weights/pocl.weights and its\n"
           "                   siblings pocl-2.weights ..., or weights/cuda.weights and its\n"
           "                   siblings on a CUDA GPU where they exist)\n"
           "  --dropout P      the beam sampler's probability of dropping a child (0.3)\n"
           "  --remeasure      measure again the schedules whose stored measurement is stale:\n"
           "                   without a reference time (an older collect's), or of code older\n"
           "                   than this build generates (its version's cgN, below cg%d;\n"
           "                   on a CPU, cg%d only where the schedule stages in registers,\n"
           "                   the one thing cg%d changed there); replaces their measurement;\n"
           "                   then every stored schedule of the\n"
           "                   pipeline with no fresh time on any device is timed again too\n"
           "                   (from its text; training leaves out the older time)\n", CG_GENERATION,
           CG_GENERATION_CPU_UNSTAGED - 1, CG_GENERATION_CPU_UNSTAGED);
    printf("  --add-kernel-times  the same for the schedules whose stored measurement has no\n"
           "                   kernel times (measured before collect timed each kernel alone):\n"
           "                   the labels of train --kernel-loss\n"
           "Pipeline files are recorded with the source app:NAME (NAME.pipe).\n");
}

/* One pipeline: a pipeline that does not parse is skipped with a
 * message; a database error ends the collection (TOOL_INPUT). */
static int collect_one(collect_ctx *c, const char *name, const char *text, const char *source, bool small,
                       bool bar) {
    char err[4096];
    int r = collect_pipeline(c, name, text, source, small, err, sizeof err);
    if (r == -2) fprintf(stderr, "%scollect: skipping %s\n", bar ? "\n" : "", err);
    if (r == -1) fprintf(stderr, "%sstagecraft collect: %s\n", bar ? "\n" : "", err);
    return r == -1 ? TOOL_INPUT : TOOL_OK;
}

int tool_collect(int argc, char **argv) {
    const char *db = NULL, *pipes[MAX_PIPES];
    int npipes = 0;
    long long nrandom = 0, first_seed = 1;
    long long schedules = 80, jobs = sysconf(_SC_NPROCESSORS_ONLN), budget = 0, timeout_ms = 10000;
    collect_opts o = { .math = CG_MATH_FAST, .jobs = 1, .prune = true, .log = stderr, .dropout = 0.3,
                       .unroll_whole = SPACE_UNROLL_WHOLE_BY_TARGET };
    bool small = false;
    const char *sampler = "random", *weights = NULL;
    randpipe_ops ops = RANDPIPE_OPS_CLASSIC;
    bool ops_given = false;
    if (jobs < 1) jobs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { collect_help(); return TOOL_OK; }
        if (!strcmp(a, "--small")) { small = true; continue; }
        if (!strcmp(a, "--no-prune")) { o.prune = false; continue; }
        if (!strcmp(a, "--unroll-whole")) { o.unroll_whole = 1; continue; }
        if (!strcmp(a, "--no-unroll-whole")) { o.unroll_whole = 0; continue; }
        if (!strcmp(a, "--remeasure")) { o.remeasure = true; continue; }
        if (!strcmp(a, "--add-kernel-times")) { o.add_kernel_times = true; continue; }
        if (a[0] != '-') {
            if (npipes == MAX_PIPES) return tool_usage_error("collect", "more than %d pipeline files", MAX_PIPES);
            pipes[npipes++] = a;
            continue;
        }
        if (i + 1 >= argc) return tool_usage_error("collect", "option %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--db")) db = v;
        else if (!strcmp(a, "--device")) o.device = v;
        else if (!strcmp(a, "--sampler")) sampler = v;
        else if (!strcmp(a, "--weights")) weights = v;
        else if (!strcmp(a, "--ops")) {
            int k;
            if (!tool_parse_ops("collect", v, &k)) return TOOL_USAGE;
            ops = (randpipe_ops)k;
            ops_given = true;
        } else if (!strcmp(a, "--dropout")) {
            char *end;
            o.dropout = strtod(v, &end);
            if (end == v || *end || !(o.dropout >= 0 && o.dropout < 1))
                return tool_usage_error("collect", "--dropout: expected a probability in [0, 1), got '%s'", v);
        }
        else if (!strcmp(a, "--math")) {
            if (cg_math_parse(v, &o.math) != 0) return tool_usage_error("collect", "--math: '%s' is not one of fast, exact", v);
        } else if (!strcmp(a, "--schedules")) {
            if (!tool_parse_int(v, 1, 100000, &schedules))
                return tool_usage_error("collect", "--schedules: expected 1 to 100000, got '%s'", v);
        } else if (!strcmp(a, "--random")) {
            if (!tool_parse_int(v, 1, 100000000, &nrandom))
                return tool_usage_error("collect", "--random: expected a number of pipelines >= 1, got '%s'", v);
        } else if (!strcmp(a, "--first-seed")) {
            if (!tool_parse_int(v, 0, (long long)1 << 62, &first_seed))
                return tool_usage_error("collect", "--first-seed: expected a seed >= 0, got '%s'", v);
        } else if (!strcmp(a, "--jobs")) {
            if (!tool_parse_int(v, 1, 256, &jobs)) return tool_usage_error("collect", "--jobs: expected 1 to 256, got '%s'", v);
        } else if (!strcmp(a, "--budget")) {
            if (!tool_parse_int(v, 1, 10000000, &budget))
                return tool_usage_error("collect", "--budget: expected a number of minutes >= 1, got '%s'", v);
        } else if (!strcmp(a, "--timeout-ms")) {
            if (!tool_parse_int(v, 1, 3600000, &timeout_ms))
                return tool_usage_error("collect", "--timeout-ms: expected 1 to 3600000, got '%s'", v);
        } else {
            return tool_usage_error("collect", "unknown option '%s'", a);
        }
    }
    if (!db || !*db) return tool_usage_error("collect", "--db F is required");
    if (!o.device) return tool_usage_error("collect", "--device opencl|c|cuda is required");
    if (!rt_ops_by_name(o.device))
        return tool_usage_error("collect", "--device: '%s' is not one of opencl, c, cuda", o.device);
    if (npipes == 0 && nrandom == 0) return tool_usage_error("collect", "no pipelines given (FILE.pipe... or --random N)");
    if (ops_given && nrandom == 0) return tool_usage_error("collect", "--ops is an option of --random N");
    if (strcmp(sampler, "random") && strcmp(sampler, "shapes") && strcmp(sampler, "beam") && strcmp(sampler, "picks"))
        return tool_usage_error("collect", "--sampler: '%s' is not one of random, shapes, beam, picks", sampler);
    /* the samplers that search with the learned model, and those that re-tile */
    bool beam = !strcmp(sampler, "beam") || !strcmp(sampler, "picks");
    o.retile = !strcmp(sampler, "shapes") || !strcmp(sampler, "picks");
    if (weights && !beam) return tool_usage_error("collect", "--weights is an option of --sampler beam and picks");
    o.schedules = (int)schedules;
    o.jobs = (int)jobs;
    o.timeout_ms = (int)timeout_ms;
    o.budget_s = (double)budget * 60;
    o.progress_bar = isatty(fileno(stderr));
    char err[4096];
    /* every file is read before anything is measured: a typo in the last
     * name should not wait for hours of measurements */
    char *texts[MAX_PIPES];
    for (int i = 0; i < npipes; i++) {
        if (!(texts[i] = driver_read_text(pipes[i], err, sizeof err))) {
            fprintf(stderr, "stagecraft collect: %s\n", err);
            for (int k = 0; k < i; k++) free(texts[k]);
            return TOOL_INPUT;
        }
    }
    /* the beam sampler's model: given weights are read before anything
     * is opened (a bad file changes nothing); the default ones once the
     * device's target is known (a CUDA GPU's own where they exist) */
    nn_model *ms[SPACE_MAX_WEIGHTS];
    int nm = 0;
    char used[SPACE_MAX_WEIGHTS * 300];
    const char *whom = "collect --sampler beam or picks";
    if (beam && weights &&
        (nm = space_load_weights_list(weights, whom, NULL, ms, used, sizeof used, err, sizeof err)) < 0) {
        fprintf(stderr, "stagecraft collect: %s\n", err);
        for (int k = 0; k < npipes; k++) free(texts[k]);
        return TOOL_INPUT;
    }
    store *st = store_open(db, STORE_WRITE, err, sizeof err);
    collect_ctx *c = st ? collect_open(st, &o, err, sizeof err) : NULL;
    if (c && beam && !nm &&
        (nm = space_load_weights_list(NULL, whom, collect_target(c), ms, used, sizeof used, err, sizeof err)) < 0) {
        nm = 0;
        collect_close(c);
        c = NULL;
    }
    if (c && nm > 0) collect_set_models(c, (const nn_model *const *)ms, nm);
    int rc = TOOL_OK;
    if (!c) {
        fprintf(stderr, "stagecraft collect: %s\n", err);
        rc = TOOL_INPUT;
    } else {
        tool_stop_on_signals();
        fprintf(stderr, "collect: device %s (%s math), target %s, %d schedules per pipeline, %d pipelines\n",
                collect_device_key(c), cg_math_name(o.math), collect_target(c)->name, o.schedules,
                npipes + (int)nrandom);
        if (nm > 0) fprintf(stderr, "collect: the model: %s%s\n", nm > 1 ? "the mean of " : "", used);
        collect_plan(c, ((int64_t)npipes + nrandom) * o.schedules);
        for (int i = 0; i < npipes && rc == TOOL_OK && !collect_stopped(c); i++) {
            char source[256];
            tool_pipe_source(pipes[i], source, sizeof source);
            rc = collect_one(c, pipes[i], texts[i], source, small, o.progress_bar);
        }
        for (long long k = 0; k < nrandom && rc == TOOL_OK && !collect_stopped(c); k++) {
            uint64_t seed = (uint64_t)(first_seed + k);
            char *text = randpipe_generate_ops(seed, 0, ops, NULL), name[64], source[64];
            randpipe_pipeline_name(seed, ops, name, sizeof name - 5);
            strcat(name, ".pipe");
            if (ops == RANDPIPE_OPS_CLASSIC) snprintf(source, sizeof source, "random:seed=%llu", (unsigned long long)seed);
            else snprintf(source, sizeof source, "random:ops=%s:seed=%llu", randpipe_ops_name(ops), (unsigned long long)seed);
            rc = collect_one(c, name, text, source, small, o.progress_bar);
            free(text);
        }
        collect_totals t = collect_get_totals(c);
        fprintf(stderr, "%scollect: %" PRId64 " measured, %" PRId64 " failed, %" PRId64 " wrong, %" PRId64
                        " timed out; %" PRId64 " already stored, %" PRId64 " duplicate walks%s\n",
                o.progress_bar ? "\n" : "", t.measured, t.failed, t.wrong, t.timeout, t.skipped, t.duplicates,
                collect_stopped(c) ? " (stopped: run again to resume)" : "");
        if (o.remeasure)
            fprintf(stderr, "collect: --remeasure: %" PRId64 " stored stale schedules read back, %" PRId64
                            " whose text no longer parses left alone\n", t.stale, t.unreadable);
        collect_close(c);
    }
    store_close(st);
    while (nm > 0) free(ms[--nm]);
    for (int i = 0; i < npipes; i++) free(texts[i]);
    return rc;
}
