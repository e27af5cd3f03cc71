/*
 * cmd_autotune.c - `stagecraft autotune`: batches from the learned model,
 * measured and stored, the model fine-tuned after each (autotune.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autotune.h"
#include "driver.h"
#include "tools.h"

static void autotune_help(void) {
    printf("usage: stagecraft autotune FILE.pipe --device opencl|c|cuda --db F [--iterations 20]\n"
           "       [--batch 80] [--jobs J] [-o best.sched] [--weights W | --from-scratch]\n"
           "       [--save-weights W] [--epochs 40] [--dropout 0.3] [--seed 1] [--math fast|exact]\n"
           "       [--timeout-ms MS] [--small] [--no-prune] [--[no-]unroll-whole]\n\n"
           "Autotunes the pipeline (Anderson et al. 2021 s8): each iteration draws a batch\n"
           "of schedules from the beam search guided by the learned model (one beam search\n"
           "and greedy samples, children dropped at random), compiles them J at a time,\n"
           "checks each against the reference evaluator and times it on the device (in\n"
           "turn with the pipeline's baseline), stores every result in the SQLite sample\n"
           "database F as it is known, fine-tunes the model on all of this pipeline's\n"
           "samples, and reports the best so far.  Killed or stopped (Ctrl-C), a rerun\n"
           "with the same options continues from the database: nothing measured is lost\n"
           "or measured twice.\n"
           "  --iterations N   batches in all, counting those done before (default 20)\n"
           "  --batch N        schedules drawn per batch (default 80)\n"
           "  --jobs J         parallel compiles (default: the core count)\n"
           "  -o F.sched       write the best schedule measured\n"
           "  --weights W      the starting weights (default weights/pocl.weights, or\n"
           "                   weights/cuda.weights on a CUDA GPU where it exists: one\n"
           "                   model, the first of the shipped mean, fine-tuned alone)\n"
           "  --from-scratch   start from random weights (the paper's autotuning mode)\n"
           "  --save-weights W the fine-tuned weights (default F-PIPELINE.weights beside\n"
           "                   the database); a rerun starts from them\n"
           "  --epochs N       fine-tuning epochs after each batch (default 40)\n"
           "  --dropout P      probability of dropping a child in the search (default 0.3)\n"
           "  --seed N         the searches' and the training's seed (default 1)\n"
           "  --math M         fast (default) or exact code\n"
           "  --timeout-ms MS  limit of one run (default 10000)\n"
           "  --small          the pipeline's small sizes\n"
           "  --no-prune       search the whole space, without Anderson's s6.6 pruning\n"
           "  --unroll-whole   the space also offers a root loop of extent 3 to 7 unrolled\n"
           "                   whole (the default on a CPU; --no-unroll-whole: not offered)\n");
}

int tool_autotune(int argc, char **argv) {
    autotune_opts o;
    autotune_opts_default(&o);
    const char *db = NULL, *pipe = NULL, *out = NULL;
    long long v, jobs = sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1) jobs = 1;
    o.measure.device = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { autotune_help(); return TOOL_OK; }
        if (!strcmp(a, "--small")) { o.small = true; continue; }
        if (!strcmp(a, "--no-prune")) { o.measure.prune = false; continue; }
        if (!strcmp(a, "--unroll-whole")) { o.measure.unroll_whole = 1; continue; }
        if (!strcmp(a, "--no-unroll-whole")) { o.measure.unroll_whole = 0; continue; }
        if (!strcmp(a, "--from-scratch")) { o.from_scratch = true; continue; }
        if (a[0] != '-') {
            if (pipe) return tool_usage_error("autotune", "more than one pipeline file given ('%s')", a);
            pipe = a;
            continue;
        }
        if (i + 1 >= argc) return tool_usage_error("autotune", "option %s needs a value", a);
        const char *val = argv[++i];
        if (!strcmp(a, "--db")) db = val;
        else if (!strcmp(a, "--device")) o.measure.device = val;
        else if (!strcmp(a, "-o")) out = val;
        else if (!strcmp(a, "--weights")) o.weights = val;
        else if (!strcmp(a, "--save-weights")) o.weights_out = val;
        else if (!strcmp(a, "--math")) {
            if (cg_math_parse(val, &o.measure.math) != 0)
                return tool_usage_error("autotune", "--math: '%s' is not one of fast, exact", val);
        } else if (!strcmp(a, "--dropout")) {
            char *end;
            o.dropout = strtod(val, &end);
            if (end == val || *end || !(o.dropout >= 0 && o.dropout < 1))
                return tool_usage_error("autotune", "--dropout: expected a probability in [0, 1), got '%s'", val);
        } else if (!strcmp(a, "--seed")) {
            if (!tool_parse_int(val, 0, (long long)1 << 62, &v))
                return tool_usage_error("autotune", "--seed: expected a seed >= 0, got '%s'", val);
            o.seed = (uint64_t)v;
        } else if (!strcmp(a, "--iterations") || !strcmp(a, "--batch") || !strcmp(a, "--jobs") ||
                   !strcmp(a, "--epochs") || !strcmp(a, "--timeout-ms")) {
            long long hi = !strcmp(a, "--jobs") ? 256 : !strcmp(a, "--timeout-ms") ? 3600000 : 100000;
            if (!tool_parse_int(val, 1, hi, &v))
                return tool_usage_error("autotune", "%s: expected 1 to %lld, got '%s'", a, hi, val);
            if (!strcmp(a, "--iterations")) o.iterations = (int)v;
            else if (!strcmp(a, "--batch")) o.batch = (int)v;
            else if (!strcmp(a, "--jobs")) jobs = v;
            else if (!strcmp(a, "--epochs")) o.epochs = (int)v;
            else o.measure.timeout_ms = (int)v;
        } else {
            return tool_usage_error("autotune", "unknown option '%s'", a);
        }
    }
    if (!pipe) return tool_usage_error("autotune", "no pipeline file given");
    if (!db || !*db) return tool_usage_error("autotune", "--db F is required");
    if (!o.measure.device) return tool_usage_error("autotune", "--device opencl|c|cuda is required");
    if (!rt_ops_by_name(o.measure.device))
        return tool_usage_error("autotune", "--device: '%s' is not one of opencl, c, cuda", o.measure.device);
    if (o.weights && o.from_scratch) return tool_usage_error("autotune", "give --weights or --from-scratch, not both");
    o.measure.jobs = (int)jobs;
    o.measure.progress_bar = isatty(fileno(stderr));
    char err[4096], wpath[4096];
    if (!o.weights_out) {
        /* F-PIPELINE.weights: the file's base name without .pipe */
        int n;
        const char *base = tool_pipe_base(pipe, &n);
        size_t dn = strlen(db);
        if (dn > 3 && !strcmp(db + dn - 3, ".db")) dn -= 3;
        snprintf(wpath, sizeof wpath, "%.*s-%.*s.weights", (int)dn, db, n, base);
        o.weights_out = wpath;
    }
    char *text = driver_read_text(pipe, err, sizeof err);
    if (!text) {
        fprintf(stderr, "stagecraft autotune: %s\n", err);
        return TOOL_INPUT;
    }
    store *st = store_open(db, STORE_WRITE, err, sizeof err);
    if (!st) {
        fprintf(stderr, "stagecraft autotune: %s\n", err);
        free(text);
        return TOOL_INPUT;
    }
    tool_stop_on_signals();
    char source[300];
    tool_pipe_source(pipe, source, sizeof source);
    autotune_result r;
    int rc = autotune_run(st, pipe, text, source, &o, &r, err, sizeof err);
    free(text);
    store_close(st);
    if (rc != 0) {
        fprintf(stderr, "%sstagecraft autotune: %s\n", o.measure.progress_bar ? "\n" : "", err);
        free(r.best_text);
        return TOOL_INPUT;
    }
    bool finished = r.iterations_done >= o.iterations;
    printf("autotune: %d of %d iterations done%s; %" PRId64 " measured this run, %" PRId64
           " already stored; %" PRId64 " samples of this pipeline\n",
           r.iterations_done, o.iterations, finished ? "" : " (stopped: run again to resume)", r.measured, r.skipped,
           r.samples);
    if (r.best_text) {
        printf("best: %.6g ms", r.best_ms);
        if (r.best_ratio > 0) printf(", %.3gx the baseline timed with it (%.3gx faster)", r.best_ratio, 1 / r.best_ratio);
        printf("\nweights: %s\n", o.weights_out);
        if (out) {
            FILE *f = fopen(out, "w");
            if (!f || fputs(r.best_text, f) < 0 || fclose(f) != 0) {
                fprintf(stderr, "stagecraft autotune: cannot write %s\n", out);
                if (f) fclose(f);
                rc = -1;
            } else {
                printf("wrote %s\n", out);
            }
        }
    } else {
        printf("best: none yet (no schedule ran correctly)\n");
    }
    free(r.best_text);
    return rc == 0 ? TOOL_OK : TOOL_INPUT;
}
