/*
 * fuzz_parse.c - libFuzzer entry point for the .pipe front end (`make fuzz`).
 *
 * Every input is parsed.  When it parses cleanly, the IR must survive the
 * text round trip (print, parse, print gives the same text), the analyses
 * the CLI runs must not crash, and, when the work is small, the pipeline is
 * evaluated through both the original and the reparsed IR, which must give
 * bit-identical outputs.  Any violation aborts, so libFuzzer reports it with
 * the input that caused it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analysis.h"
#include "bounds.h"
#include "ir.h"

/* Points computed in all (every stage's loop nest, every input filled)
 * above which a pipeline is not evaluated: a fuzzer run must stay fast. */
#define WORK_LIMIT 20000

static void fail(const char *what, const char *a, const char *b) {
    fprintf(stderr, "fuzz_parse: %s\n", what);
    if (a) fprintf(stderr, "---- first ----\n%s\n", a);
    if (b) fprintf(stderr, "---- second ----\n%s\n", b);
    abort();
}

/* Loop iterations of every stage plus input points, saturating. */
static int64_t work_of(const sc_pipeline *p, const bounds_result *b) {
    int64_t total = 0;
    for (int i = 0; i < p->funcs.n; i++) {
        const sc_func *f = p->funcs.items[i];
        if (f->kind == FUNC_INPUT) {
            int64_t n = 1;
            for (int d = 0; d < f->ndims; d++) n *= f->extent[d];
            total += n;
        }
        const bounds_func *bf = &b->funcs[i];
        for (int s = 0; s < bf->nstages; s++) {
            int64_t n = 1;
            for (int l = 0; l < bf->stages[s].nloops; l++) {
                int64_t e = bf->stages[s].extent[l];
                if (e > WORK_LIMIT) return WORK_LIMIT + 1;
                n *= e > 0 ? e : 1;
                if (n > WORK_LIMIT) return WORK_LIMIT + 1;
            }
            total += n;
        }
        if (total > WORK_LIMIT) return WORK_LIMIT + 1;
    }
    return total;
}

static int evaluate(sc_pipeline *p, sc_buffer **out) {
    return sc_evaluate(p, NULL, 7, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sc_parse_options opt = { 1, 0, NULL, NULL };
    sc_pipeline *p = sc_parse_string("fuzz.pipe", (const char *)data, size, &opt);
    for (int i = 0; i < sc_error_count(p); i++)
        if (!sc_error_message(p, i)) fail("missing error message", NULL, NULL);
    if (sc_error_count(p)) { sc_pipeline_free(p); return 0; }

    char *t1 = sc_pipeline_to_text(p);
    sc_pipeline *q = sc_parse_string("fuzz-ir.pipe", t1, strlen(t1), NULL);
    if (sc_error_count(q)) fail(sc_error_message(q, 0), t1, NULL);
    char *t2 = sc_pipeline_to_text(q);
    /* The first line names the pipeline, which both share. */
    if (strcmp(t1, t2)) fail("the IR text does not round-trip", t1, t2);

    deps_free(deps_analyse(p));
    ops_free(ops_count(p));

    bounds_result *b = bounds_infer(p);
    if (!b) fail("bounds failed on a finalized pipeline", t1, NULL);
    if (work_of(p, b) <= WORK_LIMIT) {
        int n = sc_output_count(p);
        sc_buffer **o1 = calloc((size_t)n + 1, sizeof *o1);
        sc_buffer **o2 = calloc((size_t)n + 1, sizeof *o2);
        if (!o1 || !o2) abort();
        int r1 = evaluate(p, o1), r2 = evaluate(q, o2);
        if (r1 != r2) fail("one IR evaluates and the other does not", t1, t2);
        for (int i = 0; i < n && r1 == 0; i++) {
            int64_t bytes = sc_buffer_count(o1[i]) * (int64_t)sc_type_size(o1[i]->type);
            if (o1[i]->type != o2[i]->type || sc_buffer_count(o1[i]) != sc_buffer_count(o2[i]) ||
                memcmp(o1[i]->data, o2[i]->data, (size_t)bytes))
                fail("the reparsed IR computes different outputs", t1, t2);
        }
        for (int i = 0; i < n; i++) { sc_buffer_free(o1[i]); sc_buffer_free(o2[i]); }
        free(o1);
        free(o2);
    }
    bounds_free(b);
    free(t1);
    free(t2);
    sc_pipeline_free(q);
    sc_pipeline_free(p);
    return 0;
}
