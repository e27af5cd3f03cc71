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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "analysis.h"
#include "bounds.h"
#include "imageio.h"
#include "ir.h"

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
} options;

static const char *usage_text =
    "usage: stagecraft COMMAND FILE.pipe [options]\n"
    "\n"
    "commands:\n"
    "  check   parse and analyse; print Funcs, stages, inputs, outputs, edges, bounds\n"
    "  run     evaluate with the reference evaluator and write the outputs\n"
    "  dump    print one analysis (--what=ir|bounds|deps|ops)\n"
    "\n"
    "Run 'stagecraft COMMAND --help' for the options of a command.\n";

static void print_help(const char *cmd) {
    if (!cmd) { fputs(usage_text, stdout); return; }
    printf("usage: stagecraft %s FILE.pipe", cmd);
    if (!strcmp(cmd, "run")) printf(" [-i NAME=FILE]... [-o NAME=FILE]... [--seed N]");
    if (!strcmp(cmd, "dump")) printf(" --what=ir|bounds|deps|ops");
    printf(" [--small] [--set NAME=VALUE]...\n\n");
    if (!strcmp(cmd, "check"))
        printf("Parses and analyses FILE.pipe and prints its Funcs, stages, inputs, outputs,\n"
               "producer-consumer edges and the region of every Func.  Exits 1 and prints\n"
               "every error (file:line:column) if the pipeline is not valid.\n");
    if (!strcmp(cmd, "run"))
        printf("Evaluates FILE.pipe with the reference evaluator.\n"
               "  -i NAME=FILE   read input NAME from a .png or .npy file (default: seeded\n"
               "                 random data)\n"
               "  -o NAME=FILE   write output NAME to a .png or .npy file (-o FILE for the\n"
               "                 first output); every output is summarised on stdout\n"
               "  --seed N       seed of the random inputs (default 1)\n");
    if (!strcmp(cmd, "dump"))
        printf("Prints one analysis of FILE.pipe:\n"
               "  ir       the IR as .pipe text (parses back to the same IR)\n"
               "  bounds   the region of every Func and the loop extents of every stage\n"
               "  deps     the access Jacobian of every producer call\n"
               "  ops      the operation histogram of every stage\n");
    printf("\ncommon options:\n"
           "  --small            use the small sizes the .pipe file declares\n"
           "  --set NAME=VALUE   override a size or a param (repeatable)\n"
           "  --help             this text\n");
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "stagecraft: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'stagecraft --help' for usage)\n");
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

static int parse_options(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    if (argc < 2) { fputs(usage_text, stderr); return EXIT_USAGE; }
    o->cmd = argv[1];
    if (!strcmp(o->cmd, "--help") || !strcmp(o->cmd, "-h") || !strcmp(o->cmd, "help")) {
        print_help(NULL);
        return -1;
    }
    if (strcmp(o->cmd, "check") && strcmp(o->cmd, "run") && strcmp(o->cmd, "dump"))
        return usage_error("unknown command '%s' (expected check, run or dump)", o->cmd);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_help(o->cmd); return -1; }
        if (!strcmp(a, "--small")) { o->small = 1; continue; }
        bool needs_value = !strcmp(a, "--set") || !strcmp(a, "-i") || !strcmp(a, "-o") ||
                           !strcmp(a, "--seed") || !strcmp(a, "--what");
        if (needs_value) {
            if (i + 1 >= argc) return usage_error("option %s needs a value", a);
            val = argv[++i];
        } else if (!strncmp(a, "--what=", 7)) {
            a = "--what"; val = argv[i] + 7;
        } else if (!strncmp(a, "--seed=", 7)) {
            a = "--seed"; val = argv[i] + 7;
        } else if (!strncmp(a, "--set=", 6)) {
            a = "--set"; val = argv[i] + 6;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else {
            if (o->pipe) return usage_error("more than one pipeline file given ('%s')", a);
            o->pipe = a;
            continue;
        }
        if (!strcmp(a, "--set")) {
            const char *name, *v;
            char *end;
            if (!split_assign(val, &name, &v)) return usage_error("--set expects NAME=VALUE, got '%s'", val);
            if (o->nsets == MAX_SETS) return usage_error("too many --set options%s", "");
            errno = 0;
            double d = strtod(v, &end);
            if (!*v || *end || errno || !isfinite(d))
                return usage_error("--set: '%s' is not a number", v);
            o->set_names[o->nsets] = name;
            o->set_values[o->nsets++] = d;
        } else if (!strcmp(a, "-i") || !strcmp(a, "-o")) {
            bool in = !strcmp(a, "-i");
            const char *name, *file;
            if (!split_assign(val, &name, &file)) {
                if (in) return usage_error("-i expects NAME=FILE, got '%s'", val);
                name = NULL;
                file = val;
            }
            if ((in ? o->nin : o->nout) == MAX_FILES) return usage_error("too many %s options", a);
            if (!*file) return usage_error("%s: empty file name", a);
            if (in) { o->in_names[o->nin] = name; o->in_files[o->nin++] = file; }
            else { o->out_names[o->nout] = name; o->out_files[o->nout++] = file; }
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            o->seed = strtoull(val, &end, 10);
            if (!*val || *end || errno || val[0] == '-') return usage_error("--seed: '%s' is not a non-negative integer", val);
        } else if (!strcmp(a, "--what")) {
            if (strcmp(val, "ir") && strcmp(val, "bounds") && strcmp(val, "deps") && strcmp(val, "ops"))
                return usage_error("--what: '%s' is not one of ir, bounds, deps, ops", val);
            o->what = val;
        }
    }
    if (!o->pipe) return usage_error("%s: no pipeline file given", o->cmd);
    if (strcmp(o->cmd, "run") && (o->nin || o->nout)) return usage_error("-i and -o are options of run, not %s", o->cmd);
    if (!strcmp(o->cmd, "dump") && !o->what) return usage_error("dump needs --what=ir|bounds|deps|ops%s", "");
    if (strcmp(o->cmd, "dump") && o->what) return usage_error("--what is an option of dump, not %s", o->cmd);
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

static int cmd_run(sc_pipeline *p, const options *o) {
    int nin = p->inputs.n, nout = p->outputs.n;
    sc_buffer **in = calloc((size_t)nin + 1, sizeof *in);
    sc_buffer **out = calloc((size_t)nout + 1, sizeof *out);
    if (!in || !out) abort();
    int rc = EXIT_OK;
    char err[512];
    for (int k = 0; k < o->nin && rc == EXIT_OK; k++) {
        int idx = -1;
        for (int i = 0; i < nin; i++)
            if (!strcmp(((sc_func *)p->inputs.items[i])->name, o->in_names[k])) idx = i;
        if (idx < 0) {
            fprintf(stderr, "stagecraft: -i %s: %s has no input named %s\n", o->in_names[k], o->pipe, o->in_names[k]);
            rc = EXIT_INPUT;
            break;
        }
        const sc_func *f = p->inputs.items[idx];
        sc_buffer *b = io_load(o->in_files[k], err, sizeof err);
        if (!b) { fprintf(stderr, "stagecraft: %s\n", err); rc = EXIT_INPUT; break; }
        bool dims_ok = b->ndims == f->ndims;
        for (int d = 0; dims_ok && d < f->ndims; d++) dims_ok = b->extent[d] == f->extent[d];
        if (b->type != f->type || !dims_ok) {
            fprintf(stderr, "stagecraft: %s: input %s expects %s ", o->in_files[k], f->name, sc_type_name(f->type));
            for (int d = 0; d < f->ndims; d++) fprintf(stderr, "%s%d", d ? "x" : "", f->extent[d]);
            fprintf(stderr, ", the file holds %s ", sc_type_name(b->type));
            for (int d = 0; d < b->ndims; d++) fprintf(stderr, "%s%d", d ? "x" : "", b->extent[d]);
            fprintf(stderr, " (change the sizes with --set)\n");
            sc_buffer_free(b);
            rc = EXIT_INPUT;
            break;
        }
        sc_buffer_free(in[idx]);
        in[idx] = b;
    }
    int out_idx[MAX_FILES];
    for (int k = 0; k < o->nout && rc == EXIT_OK; k++) {
        out_idx[k] = o->out_names[k] ? -1 : 0;
        for (int i = 0; i < nout && o->out_names[k]; i++)
            if (!strcmp(((sc_func *)p->outputs.items[i])->name, o->out_names[k])) out_idx[k] = i;
        if (out_idx[k] < 0) {
            fprintf(stderr, "stagecraft: -o %s: %s has no output named %s\n", o->out_names[k], o->pipe, o->out_names[k]);
            rc = EXIT_INPUT;
        }
    }
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
            for (int i = 0; i < nout; i++) summarise(p->outputs.items[i], out[i]);
            for (int k = 0; k < o->nout; k++) {
                if (io_save(o->out_files[k], out[out_idx[k]], err, sizeof err) != 0) {
                    fprintf(stderr, "stagecraft: %s\n", err);
                    rc = EXIT_INPUT;
                } else {
                    printf("wrote %s\n", o->out_files[k]);
                }
            }
        }
    }
    for (int i = 0; i < nin; i++) sc_buffer_free(in[i]);
    for (int i = 0; i < nout; i++) sc_buffer_free(out[i]);
    free(in);
    free(out);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc < 0) return EXIT_OK;       /* --help */
    if (rc != EXIT_OK) return rc;
    sc_parse_options po = { o.small, o.nsets, o.set_names, o.set_values };
    sc_pipeline *p = sc_parse_file(o.pipe, &po);
    if (sc_error_count(p)) {
        print_errors(p);
        sc_pipeline_free(p);
        return EXIT_INPUT;
    }
    if (!strcmp(o.cmd, "check")) rc = cmd_check(p);
    else if (!strcmp(o.cmd, "dump")) rc = cmd_dump(p, o.what);
    else rc = cmd_run(p, &o);
    sc_pipeline_free(p);
    for (int i = 0; i < o.nsets; i++) free((char *)o.set_names[i]);
    for (int i = 0; i < o.nin; i++) free((char *)o.in_names[i]);
    for (int i = 0; i < o.nout; i++) free((char *)o.out_names[i]);
    return rc;
}
