/*
 * cmd_random_pipeline.c - `stagecraft random-pipeline`: writes a random,
 * valid pipeline (src/gen/randpipe.h) as training data for the cost model.
 *
 *   stagecraft random-pipeline [--seed N] [--stages K] [--ops SET] [-o F.pipe]
 *
 * Before writing, the text is parsed and its bounds inferred at both its
 * paper and its small sizes; a pipeline that fails either is a bug of the
 * generator, reported (exit 1) and never written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bounds.h"
#include "randpipe.h"
#include "stagecraft.h"
#include "tools.h"

static const char *const cmd = "random-pipeline";

static void usage(FILE *out) {
    fprintf(out,
            "usage: stagecraft random-pipeline [--seed N] [--stages K] [--ops SET] [-o F.pipe]\n"
            "Writes a random valid pipeline of %d to %d Funcs (convolutions, pooling,\n"
            "activations, padding, resampling, channel mixing, scans, histograms, slices,\n"
            "transposes, unary and binary math, casts), chained as real pipelines chain them.\n"
            "The same seed and stage count give the same file on every machine.\n"
            "  --seed N     the seed (0 .. 2^63-1; default 1)\n"
            "  --stages K   the number of Funcs, %d .. %d (default: drawn from the seed)\n"
            "  --ops SET    the operations: classic (default; the pipeline random_N), lookups\n"
            "               (also lookup tables and coarse grids read at data-dependent\n"
            "               coordinates; random_lookups_N) or layers (also the layers of\n"
            "               small networks: biased and depthwise convolutions, softmax over\n"
            "               channels, packing into channels and back, selects on the\n"
            "               channel, fixed-point i16 interpolation; random_layers_N)\n"
            "  -o F.pipe    write to F.pipe (default: standard output)\n"
            "See docs/random_pipelines.md.\n",
            RANDPIPE_MIN_STAGES, RANDPIPE_MAX_STAGES, RANDPIPE_MIN_STAGES, RANDPIPE_MAX_STAGES);
}

/* Parses and bounds text at its paper (small = 0) or small sizes; 0, or
 * -1 after printing the errors. */
static int validate(const char *text, int small) {
    sc_parse_options po = { small, 0, NULL, NULL };
    sc_pipeline *p = sc_parse_string("random.pipe", text, strlen(text), &po);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    int rc = b ? 0 : -1;
    for (int i = 0; i < sc_error_count(p); i++) fprintf(stderr, "  %s\n", sc_error_message(p, i));
    if (b) bounds_free(b);
    sc_pipeline_free(p);
    return rc;
}

int tool_random_pipeline(int argc, char **argv) {
    long long seed = 1, stages = 0;
    randpipe_ops ops = RANDPIPE_OPS_CLASSIC;
    const char *outfile = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return TOOL_OK;
        }
        const char *eq = strchr(a, '=');
        char name[32];
        size_t nlen = eq && !strncmp(a, "--", 2) ? (size_t)(eq - a) : strlen(a);
        if (nlen >= sizeof name) nlen = sizeof name - 1;
        memcpy(name, a, nlen);
        name[nlen] = 0;
        if (strcmp(name, "--seed") && strcmp(name, "--stages") && strcmp(name, "--ops") && strcmp(name, "-o"))
            return tool_usage_error(cmd, "unknown option '%s'", a);
        if (eq && !strncmp(a, "--", 2)) val = eq + 1;
        else if (i + 1 < argc) val = argv[++i];
        else return tool_usage_error(cmd, "%s needs a value", name);
        if (!strcmp(name, "--seed")) {
            if (!tool_parse_int(val, 0, 0x7fffffffffffffffLL, &seed))
                return tool_usage_error(cmd, "--seed: '%s' is not an integer in 0 .. 2^63-1", val);
        } else if (!strcmp(name, "--stages")) {
            if (!tool_parse_int(val, RANDPIPE_MIN_STAGES, RANDPIPE_MAX_STAGES, &stages))
                return tool_usage_error(cmd, "--stages: '%s' is not an integer in %d .. %d", val,
                                        RANDPIPE_MIN_STAGES, RANDPIPE_MAX_STAGES);
        } else if (!strcmp(name, "--ops")) {
            int k;
            if (!tool_parse_ops(cmd, val, &k)) return TOOL_USAGE;
            ops = (randpipe_ops)k;
        } else {
            if (!*val) return tool_usage_error(cmd, "-o needs a file name");
            outfile = val;
        }
    }
    char *text = randpipe_generate_ops((uint64_t)seed, (int)stages, ops, NULL);
    if (!text) return tool_usage_error(cmd, "--stages out of range");
    if (validate(text, 1) != 0 || validate(text, 0) != 0) {
        fprintf(stderr, "stagecraft %s: internal error: the pipeline of seed %lld (operations %s) is not valid "
                "(a bug of the generator; please report the seed)\n", cmd, seed, randpipe_ops_name(ops));
        free(text);
        return TOOL_INPUT;
    }
    int rc = TOOL_OK;
    FILE *out = outfile ? fopen(outfile, "w") : stdout;
    if (!out) {
        fprintf(stderr, "stagecraft %s: cannot write %s: ", cmd, outfile);
        perror(NULL);
        rc = TOOL_INPUT;
    } else {
        bool bad = fputs(text, out) == EOF;
        bad |= outfile ? fclose(out) != 0 : fflush(out) != 0;
        if (bad) {
            fprintf(stderr, "stagecraft %s: error writing %s\n", cmd, outfile ? outfile : "standard output");
            rc = TOOL_INPUT;
        }
    }
    free(text);
    return rc;
}
