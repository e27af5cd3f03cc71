/*
 * main.c - the stagecraft command line.
 *
 *   stagecraft check FILE.pipe            parse and analyse, print a summary
 *   stagecraft run FILE.pipe [-i N=F] [-o N=F] [--seed N]
 *                                         evaluate with the reference evaluator
 *   stagecraft dump FILE.pipe --what=ir|bounds|deps|ops
 *
 * Every command takes --small and --set NAME=VALUE.  Exit status: 0 on
 * success, 1 on bad input, 2 on bad usage.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/stat.h>
#include "analysis.h"
#include "beam.h"
#include "driver.h"
#include "features.h"
#include "bounds.h"
#include "imageio.h"
#include "ir.h"
#include "tools.h"

enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2 };

#define MAX_SETS 64
#define MAX_FILES 16

typedef struct {
    const char *cmd;
    const char *pipe;
    int small;
    int nsets;
    const char *set_names[MAX_SETS];
    double set_values[MAX_SETS];
    int nin, nout;
    const char *in_names[MAX_FILES], *in_files[MAX_FILES];
    const char *out_names[MAX_FILES], *out_files[MAX_FILES];
    unsigned long long seed;
    const char *what;
    /* schedules and devices (issue 3) */
    const char *schedule;
    const char *strategy;
    const char *target;
    const char *device;
    const char *backend;
    const char *outdir;
    const char *dump;
    const char *arch;
    const char *math;             /* exact | fast; NULL: the command's default */
    int check;
    int halide;
    int prune;
    int unroll_whole;             /* --unroll-whole 1, --no-unroll-whole 0, else by target */
    int warmup, runs, samples, timeout_ms;
    int json;
    int per_kernel;               /* bench --per-kernel */
    int partial;                  /* --partial K; -1: not given */
    /* the oneshot strategy's search */
    const char *weights;
    int beam, passes, samples_given, explain;
    double margin;
    double spread;                /* --spread; < 0: not given */
    int freeze_min;               /* --freeze-min; 0: not given */
    int k, jobs;                  /* topk: candidates measured, parallel compiles (0: not given) */
} options;

static void print_usage(FILE *out) {
    char names[256];
    fprintf(out, "usage: stagecraft COMMAND FILE.pipe [options]\n"
                 "\n"
                 "commands:\n"
                 "  check     parse and analyse; print Funcs, stages, inputs, outputs, edges, bounds\n"
                 "  run       evaluate (reference evaluator, or a schedule on a device) and write the outputs\n"
                 "  dump      print one analysis (--what=ir|bounds|deps|ops)\n"
                 "  schedule  make a schedule (--strategy %s) for a target\n"
                 "  compile   generate CUDA, OpenCL or C for a schedule (--backend)\n"
                 "  bench     time a schedule on a device\n"
                 "  features  print the features of every stage of a (partial) schedule\n",
            space_strategy_names(names, sizeof names, "|", "|"));
    for (int i = 0; i < tool_count(); i++) {
        const char *name = tool_at(i)->name;
        if (strlen(name) > 9) fprintf(out, "  %s\n  %-9s %s\n", name, "", tool_at(i)->summary);
        else fprintf(out, "  %-9s %s\n", name, tool_at(i)->summary);
    }
    fprintf(out, "\nRun 'stagecraft COMMAND --help' for the options of a command.\n");
}

static const char *commands[] = { "check", "run", "dump", "schedule", "compile", "bench", "features", NULL };

static bool is_sched_cmd(const char *cmd) {
    return !strcmp(cmd, "schedule") || !strcmp(cmd, "compile") || !strcmp(cmd, "bench") ||
           !strcmp(cmd, "features");
}

static void print_help(const char *cmd) {
    if (!cmd) { print_usage(stdout); return; }
    char strategies[256], devices[64];
    space_strategy_names(strategies, sizeof strategies, "|", "|");
    rt_ops_names(devices, sizeof devices, "|", "|");
    printf("usage: stagecraft %s FILE.pipe", cmd);
    if (!strcmp(cmd, "run"))
        printf(" [-i NAME=FILE]... [-o NAME=FILE]... [--seed N]\n"
               "       [--schedule F.sched | --strategy S] [--device %s] [--check]\n"
               "       [--math exact|fast]", devices);
    if (!strcmp(cmd, "dump")) printf(" --what=ir|bounds|deps|ops");
    if (!strcmp(cmd, "schedule"))
        printf(" --strategy %s [--seed N] [-o F.sched] [--halide]\n"
               "       [--weights W[,W...]] [--beam 32] [--passes 5] [--samples 80] [--explain] [--margin R]\n"
               "       [--spread S] [--freeze-min N] [--unroll-whole | --no-unroll-whole]\n"
               "       [--k 5 --device %s [--math fast|exact] [--jobs J]]", strategies, devices);
    if (!strcmp(cmd, "compile")) printf(" [--schedule F.sched | --strategy S] --backend %s -o DIR\n"
                                        "       [--math exact|fast]", devices);
    if (!strcmp(cmd, "bench"))
        printf(" [--schedule F.sched | --strategy S] [--device D] [--math fast|exact]\n"
               "       [--per-kernel [--weights W[,W...]]]");
    if (!strcmp(cmd, "features"))
        printf(" [--schedule F.sched | --strategy S [--seed N]]\n"
               "       [--target T] [--json] [--partial K]");
    printf(" [--small] [--set NAME=VALUE]...\n\n");
    if (!strcmp(cmd, "check"))
        printf("Parses and analyses FILE.pipe and prints its Funcs, stages, inputs, outputs,\n"
               "producer-consumer edges and the region of every Func.  Exits 1 and prints\n"
               "every error (file:line:column) if the pipeline is not valid.\n");
    if (!strcmp(cmd, "run"))
        printf("Evaluates FILE.pipe.  Without a schedule: with the reference evaluator.\n"
               "  -i NAME=FILE   read input NAME from a .png or .npy file (default: seeded\n"
               "                 random data)\n"
               "  -o NAME=FILE   write output NAME to a .png or .npy file (-o FILE for the\n"
               "                 first output); every output is summarised on stdout\n"
               "  --seed N       seed of the random inputs (default 1; with --strategy, also\n"
               "                 the strategy's seed)\n"
               "With --schedule or --strategy, runs the scheduled code on a device (-i\n"
               "and -o as above: -o writes what the device computed, even on a mismatch):\n"
               "  --device D     %s (default: the best found)\n"
               "  --check        compare every output with the reference evaluator\n"
               "  --target T     the target the schedule is made and checked for\n"
               "  --math M       exact (default): code bit-identical to the reference\n"
               "                 evaluator, checked bit for bit; fast: the device's own\n"
               "                 f32 exp/log/sin/cos and fused multiply-adds, checked within\n"
               "                 a stated tolerance (docs/backends.md)\n", rt_ops_names(devices, sizeof devices, ", ", " or "));
    if (!strcmp(cmd, "dump"))
        printf("Prints one analysis of FILE.pipe:\n"
               "  ir       the IR as .pipe text (parses back to the same IR)\n"
               "  bounds   the region of every Func and the loop extents of every stage\n"
               "  deps     the access Jacobian of every producer call\n"
               "  ops      the operation histogram of every stage (a subtree of constants\n"
               "           counts as one constant: the compilers fold it)\n");
    if (!strcmp(cmd, "schedule")) {
        printf("Makes a schedule and prints it (or writes it with -o):\n"
               "  --strategy S   one of\n");
        for (int i = 0; i < space_strategy_count(); i++)
            printf("                   %-9s %s%s\n", space_strategy_at(i)->name, space_strategy_at(i)->summary,
                   space_strategy_at(i)->seeded ? " (--seed)" : "");
        printf("  --seed N       the seed of a seeded strategy (default 1)\n"
               "  --target T     a100, v100, h100, rtx2080ti, host-cuda (this machine's\n"
               "                 GPU's limits) or host-opencl (the OpenCL device's); a\n"
               "                 comma-separated list takes the first there.  Default:\n"
               "                 host-cuda,host-opencl,a100 (host-cuda,a100 for --device\n"
               "                 cuda or --backend cuda, host-opencl,a100 for --device\n"
               "                 opencl or c)\n"
               "  --prune        apply the pruning rules of Anderson et al. 2021 s6.6\n"
               "  --unroll-whole (random, oneshot, topk) also offer a root loop of extent 3\n"
               "                 to 7 unrolled whole (a colour channel: its selects fold);\n"
               "                 the default on a CPU target, --no-unroll-whole: not offered\n"
               "  --halide       also print the equivalent Halide schedule\n"
               "With --strategy oneshot (docs/search.md; the prediction and the search's\n"
               "statistics are printed as '#' lines):\n"
               "  --weights W    the learned model's weights (default weights/pocl.weights,\n"
               "                 or weights/cuda.weights for a CUDA GPU target where it\n"
               "                 exists; here or beside the program); W1,W2,... searches\n"
               "                 with the mean of their predictions (--explain shows W1's\n"
               "                 terms)\n"
               "  --beam N       states of the beam search (default 32)\n"
               "  --passes N     its passes (default 5)\n"
               "  --samples N    one beam search and N - 1 greedy ones (default 80); the\n"
               "                 baseline and root join them, so the schedule returned is\n"
               "                 never predicted slower than either\n"
               "  --explain      the predicted cost of every stage and its largest terms\n"
               "  --margin R     keep the baseline unless the best schedule is predicted more\n"
               "                 than R times faster (R >= 1; default 1: the best predicted)\n"
               "  --spread S     with several weights files, rank the batch by exp(mean + S x\n"
               "                 standard deviation) of the models' log predictions: S > 0\n"
               "                 prefers the schedules the models agree on (0 to 10; default 0:\n"
               "                 by the mean)\n"
               "  --freeze-min N the freezing pre-pass (s4) for pipelines of at least N Funcs:\n"
               "                 all but the log2 N most expensive keep the decisions of a\n"
               "                 restricted search (default %d)\n"
               "For a CUDA target, the batch's schedules are compiled with NVRTC, best\n"
               "predicted first, and the first that spills no registers is returned (all\n"
               "spill: the best predicted within 50%% of the least spilling; s8.1).\n"
               "With --strategy topk (the same options, and):\n"
               "  --k N          measure the N best predicted (default 5) ...\n"
               "  --device D     ... on this device, each checked against the reference\n"
               "                 evaluator first, timed in turn with the baseline; the\n"
               "                 fastest is returned\n"
               "  --math M       the code measured: fast (default) or exact\n"
               "  --jobs J       parallel compiles (default: the core count)\n", SEARCH_FREEZE_MIN);
    }
    if (!strcmp(cmd, "compile"))
        printf("Generates code for a schedule into DIR (PIPELINE.cu, .cl or .c, and the\n"
               "schedule).  CUDA and C code end with a host entry point, PIPELINE_run(inputs,\n"
               "params, outputs) on arrays in host memory, declared in PIPELINE.h.  For cuda,\n"
               "also compiles it with NVRTC and prints registers and spills per kernel\n"
               "(--arch: the target's architecture by default, sm_80 for a100).\n"
               "  --dump=kernels   also print the kernel IR\n"
               "  --math M         exact (default) or fast (the device's own f32 functions,\n"
               "                   contraction allowed; the build options are printed)\n");
    if (!strcmp(cmd, "bench"))
        printf("Times a schedule on a device as Sioutas et al. 2020 s5 do: --warmup N\n"
               "(default 3) runs, then --samples M (default 5) samples of the mean of\n"
               "--runs N (default 10) runs each; prints the minimum.  Checks the result\n"
               "against the reference first (a wrong result is never timed).\n"
               "  --math M       fast (default for bench: the device's own f32 functions,\n"
               "                 contraction allowed, checked within the tolerance of\n"
               "                 docs/backends.md) or exact (bit-identical to the reference)\n"
               "  --per-kernel   also every kernel timed alone (the fastest of --runs runs),\n"
               "                 with its share and the Func and stage it computes\n"
               "  --weights W    with --per-kernel: also each kernel's cost as the learned\n"
               "                 model predicts it (the stages it computes; several files:\n"
               "                 the mean of their predictions) and its time over that\n");
    if (!strcmp(cmd, "features"))
        printf("Prints the features of every stage of the schedule's decided, non-inline\n"
               "Funcs (docs/features.md): a table with one named column per feature, or JSON.\n"
               "  --strategy S   root, baseline (the default) or random, as for schedule\n"
               "  --target T     the GPU the features are for (default a100)\n"
               "  --json         JSON instead of the table\n"
               "  --partial K    keep only the first K decisions (consumers first, the order\n"
               "                 of the random walk); the other Funcs are left undecided\n"
               "                 and have no row\n");
    printf("\ncommon options:\n"
           "  --small            use the small sizes the .pipe file declares\n"
           "  --set NAME=VALUE   override a size or a param (repeatable)\n"
           "  --help             this text\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stagecraft: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run 'stagecraft --help' for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

/* NAME=VALUE split; returns false if there is no '=' or no name. */
static bool split_assign(const char *arg, const char **name, const char **value) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) return false;
    char *n = strndup(arg, (size_t)(eq - arg));
    if (!n) abort();
    *name = n;
    *value = eq + 1;
    return true;
}

static bool parse_count(const char *val, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (!*val || *end || errno || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* Options that take a value, and where it goes (string options). */
static const char **string_option(options *o, const char *a) {
    if (!strcmp(a, "--schedule")) return &o->schedule;
    if (!strcmp(a, "--strategy")) return &o->strategy;
    if (!strcmp(a, "--target")) return &o->target;
    if (!strcmp(a, "--device")) return &o->device;
    if (!strcmp(a, "--backend")) return &o->backend;
    if (!strcmp(a, "--dump")) return &o->dump;
    if (!strcmp(a, "--arch")) return &o->arch;
    if (!strcmp(a, "--math")) return &o->math;
    if (!strcmp(a, "--weights")) return &o->weights;
    return NULL;
}

static int parse_options(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->unroll_whole = SPACE_UNROLL_WHOLE_BY_TARGET;
    o->seed = 1;
    o->warmup = 3;
    o->runs = 10;
    o->samples = 5;
    o->spread = -1;
    o->timeout_ms = 60000;
    o->partial = -1;
    if (argc < 2) { print_usage(stderr); return EXIT_USAGE; }
    o->cmd = argv[1];
    if (!strcmp(o->cmd, "--help") || !strcmp(o->cmd, "-h") || !strcmp(o->cmd, "help")) {
        print_help(NULL);
        return -1;
    }
    bool known = false;
    for (int i = 0; commands[i]; i++) known |= !strcmp(o->cmd, commands[i]);
    if (!known) {
        char more[256] = "";
        for (int i = 0; i < tool_count(); i++)
            snprintf(more + strlen(more), sizeof more - strlen(more), ", %s", tool_at(i)->name);
        return usage_error("unknown command '%s' (expected check, run, dump, schedule, compile, bench, features%s)",
                           o->cmd, more);
    }
    for (int i = 2; i < argc; i++) {
        char flag[64];
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_help(o->cmd); return -1; }
        if (!strcmp(a, "--small")) { o->small = 1; continue; }
        if (!strcmp(a, "--check")) { o->check = 1; continue; }
        if (!strcmp(a, "--halide")) { o->halide = 1; continue; }
        if (!strcmp(a, "--prune")) { o->prune = 1; continue; }
        if (!strcmp(a, "--unroll-whole")) { o->unroll_whole = 1; continue; }
        if (!strcmp(a, "--no-unroll-whole")) { o->unroll_whole = 0; continue; }
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--per-kernel")) { o->per_kernel = 1; continue; }
        if (!strcmp(a, "--explain")) { o->explain = 1; continue; }
        const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        if (eq) {   /* --flag=value */
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - a), a);
            a = flag;
            val = eq + 1;
        }
        bool needs_value = !strcmp(a, "--set") || !strcmp(a, "-i") || !strcmp(a, "-o") ||
                           !strcmp(a, "--seed") || !strcmp(a, "--what") || string_option(o, a) ||
                           !strcmp(a, "--warmup") || !strcmp(a, "--runs") || !strcmp(a, "--samples") ||
                           !strcmp(a, "--timeout-ms") || !strcmp(a, "--partial") || !strcmp(a, "--beam") ||
                           !strcmp(a, "--passes") || !strcmp(a, "--k") || !strcmp(a, "--jobs") ||
                           !strcmp(a, "--margin") || !strcmp(a, "--spread") || !strcmp(a, "--freeze-min");
        if (needs_value && !val) {
            if (i + 1 >= argc) return usage_error("option %s needs a value", a);
            val = argv[++i];
        } else if (!needs_value && val) {
            return usage_error("option %s takes no value", a);
        } else if (!needs_value) {
            if (a[0] == '-' && a[1]) return usage_error("unknown option '%s'", a);
            if (o->pipe) return usage_error("more than one pipeline file given ('%s')", a);
            o->pipe = a;
            continue;
        }
        const char **so = string_option(o, a);
        if (so) {
            if (!*val) return usage_error("%s: empty value", a);
            *so = val;
        } else if (!strcmp(a, "--set")) {
            const char *name, *v;
            char *end;
            if (!split_assign(val, &name, &v)) return usage_error("--set expects NAME=VALUE, got '%s'", val);
            if (o->nsets == MAX_SETS) { free((char *)name); return usage_error("too many --set options%s", ""); }
            errno = 0;
            double d = strtod(v, &end);
            if (!*v || *end || errno || !isfinite(d)) { free((char *)name); return usage_error("--set: '%s' is not a number", v); }
            o->set_names[o->nsets] = name;
            o->set_values[o->nsets++] = d;
        } else if (!strcmp(a, "-i") || (!strcmp(a, "-o") && !is_sched_cmd(o->cmd))) {
            bool in = !strcmp(a, "-i");
            const char *name, *file;
            if (!split_assign(val, &name, &file)) {
                if (in) return usage_error("-i expects NAME=FILE, got '%s'", val);
                name = NULL;
                file = val;
            }
            if ((in ? o->nin : o->nout) == MAX_FILES || !*file) {
                free((char *)name);
                return *file ? usage_error("too many %s options", a) : usage_error("%s: empty file name", a);
            }
            if (in) { o->in_names[o->nin] = name; o->in_files[o->nin++] = file; }
            else { o->out_names[o->nout] = name; o->out_files[o->nout++] = file; }
        } else if (!strcmp(a, "-o")) {
            if (!*val) return usage_error("-o: empty file name%s", "");
            o->outdir = val;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            o->seed = strtoull(val, &end, 10);
            if (!*val || *end || errno || val[0] == '-') return usage_error("--seed: '%s' is not a non-negative integer", val);
        } else if (!strcmp(a, "--k") || !strcmp(a, "--jobs")) {
            if (!parse_count(val, 1, !strcmp(a, "--k") ? 10000 : 256, !strcmp(a, "--k") ? &o->k : &o->jobs))
                return usage_error("%s: expected a positive integer, got '%s'", a, val);
        } else if (!strcmp(a, "--beam") || !strcmp(a, "--passes")) {
            if (!parse_count(val, 1, 100000, !strcmp(a, "--beam") ? &o->beam : &o->passes))
                return usage_error("%s: expected a positive integer, got '%s'", a, val);
        } else if (!strcmp(a, "--margin")) {
            char *end;
            errno = 0;
            o->margin = strtod(val, &end);
            if (!*val || *end || errno || !isfinite(o->margin) || o->margin < 1)
                return usage_error("--margin: expected a number of at least 1, got '%s'", val);
        } else if (!strcmp(a, "--spread")) {
            char *end;
            errno = 0;
            o->spread = strtod(val, &end);
            if (!*val || *end || errno || !isfinite(o->spread) || o->spread < 0 || o->spread > 10)
                return usage_error("--spread: expected a number from 0 to 10, got '%s'", val);
        } else if (!strcmp(a, "--freeze-min")) {
            if (!parse_count(val, 1, 1000000, &o->freeze_min))
                return usage_error("--freeze-min: expected a positive number of Funcs, got '%s'", val);
        } else if (!strcmp(a, "--partial")) {
            if (!parse_count(val, 0, 1000000, &o->partial))
                return usage_error("--partial: expected a number of decisions >= 0, got '%s'", val);
        } else if (!strcmp(a, "--what")) {
            if (strcmp(val, "ir") && strcmp(val, "bounds") && strcmp(val, "deps") && strcmp(val, "ops"))
                return usage_error("--what: '%s' is not one of ir, bounds, deps, ops", val);
            o->what = val;
        } else {
            o->samples_given |= !strcmp(a, "--samples");
            int *dst = !strcmp(a, "--warmup") ? &o->warmup : !strcmp(a, "--runs") ? &o->runs :
                       !strcmp(a, "--samples") ? &o->samples : &o->timeout_ms;
            if (!parse_count(val, !strcmp(a, "--warmup") ? 0 : 1, 100000000, dst))
                return usage_error("%s: expected a positive integer", a);
        }
    }
    if (!o->pipe) return usage_error("%s: no pipeline file given", o->cmd);
    if (strcmp(o->cmd, "run") && o->nin) return usage_error("-i is an option of run, not %s", o->cmd);
    if (strcmp(o->cmd, "run") && o->nout)   /* schedule and compile keep -o in outdir */
        return usage_error("-o NAME=FILE is an option of run, not %s", o->cmd);
    if (!strcmp(o->cmd, "dump") && !o->what) return usage_error("dump needs --what=ir|bounds|deps|ops%s", "");
    if (strcmp(o->cmd, "dump") && o->what) return usage_error("--what is an option of dump, not %s", o->cmd);
    if (o->schedule && o->strategy) return usage_error("give --schedule or --strategy, not both%s", "");
    bool topk = o->strategy && !strcmp(o->strategy, "topk");
    bool oneshot = topk || (o->strategy && !strcmp(o->strategy, "oneshot"));
    bool kernel_weights = !strcmp(o->cmd, "bench") && o->per_kernel;
    if (!oneshot && ((o->weights && !kernel_weights) || o->beam || o->passes || o->explain || (o->samples_given && !strcmp(o->cmd, "schedule"))))
        return usage_error("--weights, --beam, --passes, --samples and --explain (of schedule) are options of "
                           "--strategy oneshot and topk%s", " (--weights also of bench --per-kernel)");
    if (o->margin && (!oneshot || topk))
        return usage_error("--margin is an option of --strategy oneshot%s", "");
    if (o->spread >= 0 && !oneshot) return usage_error("--spread is an option of --strategy oneshot and topk%s", "");
    if (o->freeze_min && !oneshot)
        return usage_error("--freeze-min is an option of --strategy oneshot and topk%s", "");
    if (o->unroll_whole != SPACE_UNROLL_WHOLE_BY_TARGET && !oneshot && !(o->strategy && !strcmp(o->strategy, "random")))
        return usage_error("--unroll-whole and --no-unroll-whole are options of --strategy random, oneshot and topk%s",
                           "");
    if (!topk && (o->k || o->jobs)) return usage_error("--k and --jobs are options of --strategy topk%s", "");
    if (topk && !strcmp(o->cmd, "schedule") && !o->device)
        return usage_error("--strategy topk measures its candidates: give --device D%s", "");
    if (!topk && o->device && !strcmp(o->cmd, "schedule"))
        return usage_error("--device is an option of schedule with --strategy topk only%s", "");
    if (!strcmp(o->cmd, "compile") && (!o->backend || !o->outdir)) {
        char names[64];
        return usage_error("compile needs --backend %s and -o DIR", rt_ops_names(names, sizeof names, "|", "|"));
    }
    char names[256];
    /* every runtime has a code generator of its name (exec_open) */
    if (o->backend && !rt_ops_by_name(o->backend))
        return usage_error("--backend: '%s' is not one of %s", o->backend, rt_ops_names(names, sizeof names, ", ", ", "));
    if (o->device && !rt_ops_by_name(o->device))
        return usage_error("--device: '%s' is not one of %s", o->device, rt_ops_names(names, sizeof names, ", ", ", "));
    if (o->strategy && !space_strategy_by_name(o->strategy))
        return usage_error("--strategy: '%s' is not one of %s", o->strategy,
                           space_strategy_names(names, sizeof names, ", ", ", "));
    cg_math m;
    if (o->math && cg_math_parse(o->math, &m) != 0)
        return usage_error("--math: '%s' is not one of exact, fast", o->math);
    if (o->math && strcmp(o->cmd, "run") && strcmp(o->cmd, "compile") && strcmp(o->cmd, "bench") &&
        !(topk && !strcmp(o->cmd, "schedule")))
        return usage_error("--math is an option of run, compile, bench and schedule --strategy topk, not %s", o->cmd);
    if (o->math && !strcmp(o->cmd, "run") && !o->schedule && !o->strategy)
        return usage_error("--math needs --schedule F or --strategy S (the reference evaluator is always exact)%s", "");
    if (o->dump && strcmp(o->dump, "kernels") && strcmp(o->dump, "schedule"))
        return usage_error("--dump: '%s' is not one of kernels, schedule", o->dump);
    if (strcmp(o->cmd, "features") && o->json) return usage_error("--json is an option of features, not %s", o->cmd);
    if (strcmp(o->cmd, "bench") && o->per_kernel)
        return usage_error("--per-kernel is an option of bench, not %s", o->cmd);
    if (strcmp(o->cmd, "features") && o->partial >= 0)
        return usage_error("--partial is an option of features, not %s", o->cmd);
    if (!strcmp(o->cmd, "run") && (o->device || o->check) && !o->schedule && !o->strategy)
        return usage_error("--device and --check need --schedule F or --strategy S%s", "");
    return EXIT_OK;
}

static void print_errors(const sc_pipeline *p) {
    for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "%s\n", sc_error_message(p, i));
}

static void print_dims(const sc_func *f, const int *ext) {
    printf("(");
    for (int d = 0; d < f->ndims; d++) printf("%s%d", d ? ", " : "", ext[d]);
    printf(")");
}

static int cmd_check(sc_pipeline *p) {
    int nstages = 0, nfuncs = 0;
    for (int i = 0; i < p->order.n; i++) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT) continue;
        nfuncs++;
        nstages += f->nstages;
    }
    printf("pipeline %s: %d Funcs, %d stages, %d input%s, %d output%s\n", p->name, nfuncs,
           nstages, p->inputs.n, p->inputs.n == 1 ? "" : "s", p->outputs.n,
           p->outputs.n == 1 ? "" : "s");
    printf("inputs:\n");
    for (int i = 0; i < p->inputs.n; i++) {
        const sc_func *f = p->inputs.items[i];
        printf("  %s %s ", f->name, sc_type_name(f->type));
        print_dims(f, f->extent);
        printf("\n");
    }
    printf("outputs:\n");
    for (int i = 0; i < p->outputs.n; i++) {
        const sc_func *f = p->outputs.items[i];
        printf("  %s %s ", f->name, sc_type_name(f->type));
        print_dims(f, f->out_extent);
        printf("\n");
    }
    printf("funcs (producers first):\n");
    for (int i = 0; i < p->order.n; i++) {
        const sc_func *f = ir_order_at(p, i);
        if (f->kind == FUNC_INPUT) continue;
        printf("  %-24s %-4s %d-D, %d stage%s%s\n", f->name, sc_type_name(f->type), f->ndims,
               f->nstages, f->nstages == 1 ? "" : "s", f->is_output ? ", output" : "");
    }
    printf("edges (producer -> consumer):\n");
    deps_result *d = deps_analyse(p);
    for (int i = 0; i < d->n; i++) {
        const deps_access *a = &d->items[i];
        bool seen = a->producer == a->consumer;
        for (int j = 0; j < i && !seen; j++)
            seen = d->items[j].producer == a->producer && d->items[j].consumer == a->consumer;
        if (!seen)
            printf("  %s -> %s\n", ((sc_func *)p->funcs.items[a->producer])->name,
                   ((sc_func *)p->funcs.items[a->consumer])->name);
    }
    deps_free(d);
    bounds_result *b = bounds_infer(p);
    if (!b) { print_errors(p); return EXIT_INPUT; }
    printf("bounds:\n");
    bounds_print(stdout, p, b);
    bounds_free(b);
    return EXIT_OK;
}

static int cmd_dump(sc_pipeline *p, const char *what) {
    if (!strcmp(what, "ir")) {
        char *s = sc_pipeline_to_text(p);
        fputs(s, stdout);
        free(s);
    } else if (!strcmp(what, "bounds")) {
        bounds_result *b = bounds_infer(p);
        if (!b) { print_errors(p); return EXIT_INPUT; }
        bounds_print(stdout, p, b);
        bounds_free(b);
    } else if (!strcmp(what, "deps")) {
        deps_result *d = deps_analyse(p);
        deps_print(stdout, p, d);
        deps_free(d);
    } else {
        ops_result *o = ops_count(p);
        ops_print(stdout, p, o);
        ops_free(o);
    }
    return EXIT_OK;
}

static void summarise(const sc_func *f, const sc_buffer *b) {
    int64_t n = sc_buffer_count(b);
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int c[SC_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int d = 0; d < b->ndims; d++) { c[d] = b->min[d] + (int)(r % b->extent[d]); r /= b->extent[d]; }
        double v = sc_buffer_get(b, c);
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        sum += v;
    }
    printf("  %s %s ", f->name, sc_type_name(f->type));
    print_dims(f, f->out_extent);
    printf(": min %.6g, max %.6g, mean %.6g\n", lo, hi, n ? sum / (double)n : 0.0);
}

/* The inputs of p: the files of -i where given (checked against the
 * input's type and extents), seeded random data (--seed) for the rest,
 * in in[0 .. inputs.n - 1]; and, in out_idx, the output each -o names.
 * Returns EXIT_OK or EXIT_INPUT with a message. */
static int run_inputs_outputs(sc_pipeline *p, const options *o, sc_buffer **in, int *out_idx) {
    int nin = p->inputs.n, nout = p->outputs.n;
    char err[512];
    for (int k = 0; k < o->nin; k++) {
        int idx = -1;
        for (int i = 0; i < nin; i++)
            if (!strcmp(((sc_func *)p->inputs.items[i])->name, o->in_names[k])) idx = i;
        if (idx < 0) {
            fprintf(stderr, "stagecraft: -i %s: %s has no input named %s\n", o->in_names[k], o->pipe, o->in_names[k]);
            return EXIT_INPUT;
        }
        const sc_func *f = p->inputs.items[idx];
        sc_buffer *b = io_load(o->in_files[k], err, sizeof err);
        if (!b) { fprintf(stderr, "stagecraft: %s\n", err); return EXIT_INPUT; }
        bool dims_ok = b->ndims == f->ndims;
        for (int d = 0; dims_ok && d < f->ndims; d++) dims_ok = b->extent[d] == f->extent[d];
        if (b->type != f->type || !dims_ok) {
            fprintf(stderr, "stagecraft: %s: input %s expects %s ", o->in_files[k], f->name, sc_type_name(f->type));
            for (int d = 0; d < f->ndims; d++) fprintf(stderr, "%s%d", d ? "x" : "", f->extent[d]);
            fprintf(stderr, ", the file holds %s ", sc_type_name(b->type));
            for (int d = 0; d < b->ndims; d++) fprintf(stderr, "%s%d", d ? "x" : "", b->extent[d]);
            fprintf(stderr, " (change the sizes with --set)\n");
            sc_buffer_free(b);
            return EXIT_INPUT;
        }
        sc_buffer_free(in[idx]);
        in[idx] = b;
    }
    for (int i = 0; i < nin; i++)
        if (!in[i] && !(in[i] = sc_input_random(p, i, o->seed))) abort();
    for (int k = 0; k < o->nout; k++) {
        out_idx[k] = o->out_names[k] ? -1 : 0;
        for (int i = 0; i < nout && o->out_names[k]; i++)
            if (!strcmp(((sc_func *)p->outputs.items[i])->name, o->out_names[k])) out_idx[k] = i;
        if (out_idx[k] < 0) {
            fprintf(stderr, "stagecraft: -o %s: %s has no output named %s\n", o->out_names[k], o->pipe, o->out_names[k]);
            return EXIT_INPUT;
        }
    }
    return EXIT_OK;
}

/* Summarises every output and writes those -o names. */
static int run_write_outputs(sc_pipeline *p, const options *o, sc_buffer **out, const int *out_idx) {
    char err[512];
    int rc = EXIT_OK;
    for (int i = 0; i < p->outputs.n; i++) summarise(p->outputs.items[i], out[i]);
    for (int k = 0; k < o->nout; k++) {
        if (io_save(o->out_files[k], out[out_idx[k]], err, sizeof err) != 0) {
            fprintf(stderr, "stagecraft: %s\n", err);
            rc = EXIT_INPUT;
        } else {
            printf("wrote %s\n", o->out_files[k]);
        }
    }
    return rc;
}

static void free_buffers(sc_buffer **b, int n) {
    for (int i = 0; i < n && b; i++) sc_buffer_free(b[i]);
    free(b);
}

static int cmd_run(sc_pipeline *p, const options *o) {
    int nin = p->inputs.n, nout = p->outputs.n;
    sc_buffer **in = calloc((size_t)nin + 1, sizeof *in);
    sc_buffer **out = calloc((size_t)nout + 1, sizeof *out);
    int out_idx[MAX_FILES];
    if (!in || !out) abort();
    int rc = run_inputs_outputs(p, o, in, out_idx);
    if (rc == EXIT_OK) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (sc_evaluate(p, in, o->seed, out) != 0) {
            print_errors(p);
            rc = EXIT_INPUT;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (rc == EXIT_OK) {
            double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
            printf("%s: evaluated by the reference evaluator in %.1f ms\n", p->name, ms);
            rc = run_write_outputs(p, o, out, out_idx);
        }
    }
    free_buffers(in, nin);
    free_buffers(out, nout);
    return rc;
}

/* ---- schedules, code and devices ---------------------------------------- */

/* --math, or the command's default: fast for bench (timings are of the
 * code a user who wants speed runs), exact elsewhere. */
static cg_math command_math(const options *o) {
    bool timed = !strcmp(o->cmd, "bench") || (!strcmp(o->cmd, "schedule") && o->strategy && !strcmp(o->strategy, "topk"));
    cg_math m = timed ? CG_MATH_FAST : CG_MATH_EXACT;
    if (o->math) cg_math_parse(o->math, &m);
    return m;
}

static int load_scheduled(driver_state *d, const options *o) {
    sc_parse_options po = { o->small, o->nsets, o->set_names, o->set_values };
    if (driver_load(d, o->pipe, &po, stderr) != 0) return EXIT_INPUT;
    /* CUDA code is made for this machine's GPU (host-cuda), else for a100,
     * unless a target is named */
    bool cuda = (o->backend && !strcmp(o->backend, "cuda")) || (o->device && !strcmp(o->device, "cuda"));
    const char *tname = o->target ? o->target
                        : cuda ? "host-cuda,a100"
                        : !strcmp(o->cmd, "features") ? "a100"
                        : o->device ? "host-opencl,a100"   /* opencl or c: not the GPU's limits */
                        : NULL;
    space_search_args sa = { o->weights, o->beam, o->passes, o->samples_given && !strcmp(o->cmd, "schedule") ? o->samples : 0,
                             o->explain, stdout, NULL, NULL, o->margin, o->spread >= 0, o->spread,
                             o->freeze_min };
    /* top-K measures on the device of --device (schedule) */
    bool topk = o->strategy && !strcmp(o->strategy, "topk");
    driver_sched_opts so = { .schedule_path = o->schedule, .strategy = o->strategy, .seed = o->seed, .target = tname,
                             .prune = o->prune, .unroll_whole = o->unroll_whole, .search = &sa, .k = o->k,
                             .topk_device = topk ? o->device : NULL, .math = command_math(o),
                             .jobs = o->jobs ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN), .timeout_ms = o->timeout_ms };
    if (driver_schedule(d, &so, stderr) != 0) return EXIT_INPUT;
    return EXIT_OK;
}

static int cmd_schedule(const options *o) {
    driver_state d;
    int rc = load_scheduled(&d, o);
    if (rc == EXIT_OK) {
        char *text = sched_to_text(d.p, d.s);
        if (o->outdir) {
            FILE *f = fopen(o->outdir, "w");
            if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
                fprintf(stderr, "stagecraft: cannot write %s: %s\n", o->outdir, strerror(errno));
                rc = EXIT_INPUT;
            } else {
                printf("wrote %s (target %s)\n", o->outdir, d.t.name);
            }
        } else {
            printf("# target %s\n%s", d.t.name, text);
        }
        free(text);
        if (rc == EXIT_OK && o->halide) {
            char *h = sched_to_halide(d.p, d.s);
            printf("\n// the equivalent Halide schedule\n%s", h);
            free(h);
        }
        if (rc == EXIT_OK && o->dump && !strcmp(o->dump, "kernels")) lower_print(stdout, d.prog);
    }
    driver_free(&d);
    return rc;
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "stagecraft: cannot write %s: %s\n", path, strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    return 0;
}

static int cmd_compile(const options *o) {
    driver_state d;
    int rc = load_scheduled(&d, o);
    if (rc != EXIT_OK) { driver_free(&d); return rc; }
    cg_backend be;
    cg_backend_parse(o->backend, &be);
    cg_math math = command_math(o);
    char *src = cg_generate_math(d.prog, be, math);
    char path[4096];
    if (mkdir(o->outdir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "stagecraft: cannot create %s: %s\n", o->outdir, strerror(errno));
        rc = EXIT_INPUT;
    }
    const char *ext = be == CG_CUDA ? "cu" : be == CG_OPENCL ? "cl" : "c";
    snprintf(path, sizeof path, "%s/%s.%s", o->outdir, d.p->name, ext);
    if (rc == EXIT_OK && write_file(path, src) != 0) rc = EXIT_INPUT;
    if (rc == EXIT_OK)
        printf("wrote %s (%d kernel%s, %s math; build options: %s)\n", path, d.prog->nkernels,
               d.prog->nkernels == 1 ? "" : "s", cg_math_name(math), cg_math_options(be, math));
    if (rc == EXIT_OK && be != CG_OPENCL) {
        /* the host entry point's declaration, for C and C++ callers */
        char *h = cg_generate_header(d.prog);
        snprintf(path, sizeof path, "%s/%s.h", o->outdir, d.p->name);
        if (!h) fprintf(stderr, "stagecraft: internal error: the program has no host entry point\n");
        if (!h || write_file(path, h) != 0) rc = EXIT_INPUT;
        else printf("wrote %s (entry point %s_run)\n", path, d.p->name);
        free(h);
    }
    char *text = sched_to_text(d.p, d.s);
    snprintf(path, sizeof path, "%s/%s.sched", o->outdir, d.p->name);
    if (rc == EXIT_OK && write_file(path, text) != 0) rc = EXIT_INPUT;
    free(text);
    if (rc == EXIT_OK && o->dump && !strcmp(o->dump, "kernels")) lower_print(stdout, d.prog);
    if (rc == EXIT_OK && be == CG_CUDA) {
        /* compile through NVRTC for the registers and spills report */
        char err[8192];
        rt_device *dev = rt_cuda_ops.open(err, sizeof err);
        if (!dev) {
            fprintf(stderr, "stagecraft: cannot compile CUDA here: %s\n", err);
            rc = EXIT_INPUT;
        } else {
            char opts[160];
            const char *arch = o->arch ? o->arch : d.t.cuda_arch[0] ? d.t.cuda_arch : "sm_80";
            snprintf(opts, sizeof opts, "%s -arch=%s", cg_math_options(CG_CUDA, math), arch);
            rt_module *m = rt_cuda_ops.compile(dev, src, opts, err, sizeof err);
            if (!m) {
                fprintf(stderr, "stagecraft: NVRTC failed:\n%s\n", err);
                rc = EXIT_INPUT;
            } else {
                rt_kernel_info *info = NULL;
                int n = rt_cuda_ops.kernel_info(m, &info);
                printf("compiled for %s with NVRTC: %d kernel%s\n", arch, n, n == 1 ? "" : "s");
                for (int i = 0; i < n; i++)
                    printf("  %-32s %3d registers, %d bytes spill stores, %d bytes spill loads, %d bytes shared, %d bytes stack\n",
                           info[i].name, info[i].registers, info[i].spill_store_bytes, info[i].spill_load_bytes,
                           info[i].shared_bytes, info[i].local_bytes);
                free(info);
                rt_cuda_ops.module_free(m);
            }
            rt_cuda_ops.close(dev);
        }
    }
    free(src);
    driver_free(&d);
    return rc;
}

static int cmd_device_run(const options *o, bool bench) {
    driver_state d;
    int rc = load_scheduled(&d, o);
    if (rc == EXIT_OK) {
        if (o->dump && !strcmp(o->dump, "kernels")) lower_print(stdout, d.prog);
        if (o->dump && !strcmp(o->dump, "schedule")) {
            char *text = sched_to_text(d.p, d.s);
            fputs(text, stdout);
            free(text);
        }
        int nin = d.p->inputs.n, nout = d.p->outputs.n;
        sc_buffer **in = calloc((size_t)nin + 1, sizeof *in), **out = calloc((size_t)nout + 1, sizeof *out);
        int out_idx[MAX_FILES];
        if (!in || !out) abort();
        rc = run_inputs_outputs(d.p, o, in, out_idx);
        /* bench --per-kernel --weights: each kernel's predicted cost too */
        nn_model *models[SPACE_MAX_WEIGHTS];
        int nm = 0;
        if (rc == EXIT_OK && bench && o->per_kernel && o->weights) {
            char err[2048], used[PATH_MAX + 64];
            nm = space_load_weights_list(o->weights, "the per-kernel prediction", &d.t, models, used, sizeof used,
                                         err, sizeof err);
            if (nm < 0) {
                fprintf(stderr, "stagecraft bench: %s\n", err);
                nm = 0;
                rc = EXIT_INPUT;
            } else printf("weights: %s\n", used);
        }
        driver_run_opts ro = { o->device, o->check || bench, o->warmup, o->runs, bench ? o->samples : 0,
                               o->timeout_ms, command_math(o), o->arch, stdout, NULL, in, bench ? NULL : out,
                               bench && o->per_kernel, (const nn_model *const *)models, nm };
        if (rc == EXIT_OK) {
            printf("pipeline %s, target %s, sizes:", d.p->name, d.t.name);
            for (int i = 0; i < d.p->outputs.n; i++) {
                const sc_func *f = d.p->outputs.items[i];
                printf(" %s(", f->name);
                for (int k = 0; k < f->ndims; k++) printf("%s%d", k ? "x" : "", f->out_extent[k]);
                printf(")");
            }
            printf("\n");
            rc = driver_run(&d, &ro, stderr) == 0 ? EXIT_OK : EXIT_INPUT;
            /* the outputs of a run that ran, matched or not (a mismatch is
             * worth looking at) */
            if (!bench && out[0] && run_write_outputs(d.p, o, out, out_idx) != EXIT_OK) rc = EXIT_INPUT;
        }
        for (int k = 0; k < nm; k++) free(models[k]);
        free_buffers(in, nin);
        free_buffers(out, nout);
    }
    driver_free(&d);
    return rc;
}

/* The first k decisions of s, in the order the space makes them
 * (consumers first); NULL with a message when s has fewer. */
static sched_state *first_decisions(driver_state *d, int k, char *err, size_t errlen) {
    sched_state *part = sched_state_new(d->arena, d->p);
    int n = 0;
    for (int i = 0; i < d->p->funcs.n; i++)
        n += ((const sc_func *)d->p->funcs.items[i])->kind == FUNC_DEFINED;
    if (k > n) {
        snprintf(err, errlen, "--partial %d: the schedule has %d decisions (expected 0 to %d)", k, n, n);
        return NULL;
    }
    for (int i = 0; i < k; i++) {
        int f = space_next(d->p, part, NULL);
        if (f < 0) break;
        part->f[f] = d->s->f[f];
    }
    return part;
}

static int cmd_features(const options *o) {
    driver_state d;
    int rc = load_scheduled(&d, o);
    if (rc == EXIT_OK) {
        char err[1024];
        const sched_state *s = d.s;
        if (o->partial >= 0) {
            s = first_decisions(&d, o->partial, err, sizeof err);
            if (!s) {
                fprintf(stderr, "stagecraft: %s\n", err);
                rc = EXIT_USAGE;
            }
        }
        feat_result r;
        if (rc == EXIT_OK && feat_compute(d.p, d.b, s, &d.t, &r, err, sizeof err) != 0) {
            fprintf(stderr, "stagecraft: features: %s\n", err);
            rc = EXIT_INPUT;
        } else if (rc == EXIT_OK) {
            if (o->json) feat_print_json(stdout, d.p, &d.t, &r);
            else feat_print_table(stdout, d.p, &r);
            feat_free(&r);
        }
    }
    driver_free(&d);
    return rc;
}

/* The names split off NAME=VALUE options (split_assign copies them). */
static void free_options(options *o) {
    for (int i = 0; i < o->nsets; i++) free((char *)o->set_names[i]);
    for (int i = 0; i < o->nin; i++) free((char *)o->in_names[i]);
    for (int i = 0; i < o->nout; i++) free((char *)o->out_names[i]);
}

int main(int argc, char **argv) {
    const tool *tl = argc >= 2 ? tool_by_name(argv[1]) : NULL;
    if (tl) return tl->main(argc - 1, argv + 1);
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != EXIT_OK) {
        free_options(&o);
        return rc < 0 ? EXIT_OK : rc;   /* rc < 0: --help */
    }
    if (is_sched_cmd(o.cmd) || (!strcmp(o.cmd, "run") && (o.schedule || o.strategy))) {
        if (!strcmp(o.cmd, "schedule")) rc = cmd_schedule(&o);
        else if (!strcmp(o.cmd, "compile")) rc = cmd_compile(&o);
        else if (!strcmp(o.cmd, "features")) rc = cmd_features(&o);
        else rc = cmd_device_run(&o, !strcmp(o.cmd, "bench"));
        free_options(&o);
        return rc;
    }
    sc_parse_options po = { o.small, o.nsets, o.set_names, o.set_values };
    sc_pipeline *p = sc_parse_file(o.pipe, &po);
    if (sc_error_count(p)) {
        print_errors(p);
        rc = EXIT_INPUT;
    } else if (!strcmp(o.cmd, "check")) {
        rc = cmd_check(p);
    } else if (!strcmp(o.cmd, "dump")) {
        rc = cmd_dump(p, o.what);
    } else {
        rc = cmd_run(p, &o);
    }
    sc_pipeline_free(p);
    free_options(&o);
    return rc;
}
