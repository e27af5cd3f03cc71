/*
 * test_randpipe.c - the random training pipelines (src/gen/randpipe.h).
 *
 *  - 1,000 seeds, a third with the stage count drawn and the rest with one
 *    asked (2..20 in turn), each parse and bound at their small and paper
 *    sizes with no error; the Funcs the parser counts (inputs excluded)
 *    equal what the generator says and what was asked, inputs and outputs
 *    too;
 *  - the same seed gives the same text (and, for three seeds, the text
 *    whose hash is recorded here), different seeds different texts, and a
 *    stage count out of range gives nothing;
 *  - over the 1,000, every operation kind of the classic set is drawn and
 *    none of the lookups set's own (counted from the generator's info, not
 *    from the text);
 *  - 400 seeds of the lookups set the same way: valid, every kind drawn,
 *    named random_lookups_N; the set's names parse back and an unknown one
 *    or set gives nothing;
 *  - 400 seeds of the layers set: valid, every kind drawn (the layers'
 *    own kinds in neither other set), named random_layers_N, and the
 *    texts the set is for (biases, weights read at the channel, packing,
 *    selects on c, softmax, params, fixed-point interpolation) in many;
 *  - RUNS (default 50) classic pipelines and RUNS / 2 of the lookups and
 *    of the layers set at their small sizes, each through a random schedule (and every fifth
 *    through a second one) on the C and OpenCL back ends, bit-identical to
 *    the reference evaluator.  BACKENDS=c,opencl picks the back ends, SEED0
 *    (default 5000) the first seed, for longer hunts.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "bounds.h"
#include "exec.h"
#include "fixtures.h"
#include "measure.h"
#include "randpipe.h"
#include "space.h"

enum { NSEEDS = 1000 };

/* The stage count asked of seed i: 0 (drawn) for a third, else 2..20. */
static int stages_for(int i) { return i % 3 == 0 ? 0 : 2 + i % 19; }

static int count_funcs(const sc_pipeline *p) {
    int n = 0;
    for (int i = 0; i < p->funcs.n; i++) n += ((const sc_func *)p->funcs.items[i])->kind != FUNC_INPUT;
    return n;
}

/* Parses text at its small or paper sizes; NULL (errors printed) when it
 * does not parse or bound.  *b receives the bounds. */
static sc_pipeline *load(const char *text, int small, bounds_result **b) {
    sc_parse_options po = { small, 0, NULL, NULL };
    sc_pipeline *p = sc_parse_string("random.pipe", text, strlen(text), &po);
    *b = sc_error_count(p) ? NULL : bounds_infer(p);
    if (!*b) {
        for (int i = 0; i < sc_error_count(p) && i < 3; i++) fprintf(stderr, "  %s\n", sc_error_message(p, i));
        sc_pipeline_free(p);
        return NULL;
    }
    return p;
}

static int kind_total[RANDPIPE_NOPS][RANDPIPE_NKINDS];

static void valid_seeds(randpipe_ops ops, int nseeds) {
    int bad = 0, bad_count = 0, defs_total = 0, two_outputs = 0;
    for (int i = 0; i < nseeds; i++) {
        randpipe_info info;
        uint64_t seed = 1000 + (uint64_t)i * 7919;
        char *text = randpipe_generate_ops(seed, stages_for(i), ops, &info);
        CHECK(text != NULL);
        if (!text) continue;
        for (int k = 0; k < RANDPIPE_NKINDS; k++) kind_total[ops][k] += info.kind_count[k];
        int ok_all = 1;
        for (int small = 1; small >= 0; small--) {
            bounds_result *b;
            sc_pipeline *p = load(text, small, &b);
            if (!p) {
                if (bad++ < 3) fprintf(stderr, "seed %llu (small %d) does not parse or bound:\n%s\n",
                                       (unsigned long long)seed, small, text);
                ok_all = 0;
                continue;
            }
            int nf = count_funcs(p);
            bool counts = nf == info.funcs && nf >= RANDPIPE_MIN_STAGES && nf <= RANDPIPE_MAX_STAGES &&
                          (stages_for(i) == 0 || nf == stages_for(i)) &&
                          p->inputs.n == info.inputs && p->outputs.n == info.outputs;
            int defs = 0;
            for (int f = 0; f < p->funcs.n; f++) {
                const sc_func *fn = p->funcs.items[f];
                if (fn->kind != FUNC_INPUT) defs += fn->nstages;
            }
            counts = counts && defs == info.defs;
            if (!counts && bad_count++ < 3)
                fprintf(stderr, "seed %llu: %d Funcs (info %d, asked %d), %d definitions (info %d), "
                        "%d inputs (info %d), %d outputs (info %d)\n", (unsigned long long)seed, nf,
                        info.funcs, stages_for(i), defs, info.defs, p->inputs.n, info.inputs,
                        p->outputs.n, info.outputs);
            bounds_free(b);
            sc_pipeline_free(p);
        }
        if (ok_all) { defs_total += info.defs; two_outputs += info.outputs == 2; }
        CHECK(info.nops >= 1 && info.nops <= info.funcs);
        CHECK(info.width >= info.small_width && info.height >= info.small_height);
        free(text);
    }
    CHECK(bad == 0);
    CHECK(bad_count == 0);
    CHECK(two_outputs > 0 && two_outputs < nseeds / 4);
    printf("  %s: %d pipelines, %d definitions, %d with two outputs\n", randpipe_ops_name(ops), nseeds,
           defs_total, two_outputs);
}

static void thousand_valid(void) { valid_seeds(RANDPIPE_OPS_CLASSIC, NSEEDS); }

static void lookups_valid(void) {
    valid_seeds(RANDPIPE_OPS_LOOKUPS, 400);
    char *t = randpipe_generate_ops(42, 8, RANDPIPE_OPS_LOOKUPS, NULL);
    CHECK(t && strstr(t, "pipeline random_lookups_42;") && strstr(t, "random-pipeline --ops lookups --seed 42"));
    free(t);
    CHECK(randpipe_generate_ops(42, 8, RANDPIPE_NOPS, NULL) == NULL);
    CHECK(randpipe_generate_ops(42, 8, (randpipe_ops)-1, NULL) == NULL);
    CHECK(randpipe_ops_parse("classic") == RANDPIPE_OPS_CLASSIC);
    CHECK(randpipe_ops_parse("lookups") == RANDPIPE_OPS_LOOKUPS);
    CHECK(randpipe_ops_parse("layers") == RANDPIPE_OPS_LAYERS);
    CHECK(randpipe_ops_parse("gathers") == -1 && randpipe_ops_parse(NULL) == -1);
    char sets[64];
    randpipe_ops_list(sets, sizeof sets);
    CHECK(!strcmp(sets, "classic, lookups, layers"));
    CHECK(!strcmp(randpipe_ops_name(RANDPIPE_NOPS), "?"));
}

static void layers_valid(void) {
    valid_seeds(RANDPIPE_OPS_LAYERS, 400);
    char *t = randpipe_generate_ops(42, 8, RANDPIPE_OPS_LAYERS, NULL);
    CHECK(t && strstr(t, "pipeline random_layers_42;") && strstr(t, "random-pipeline --ops layers --seed 42"));
    free(t);
    /* the patterns of the apps the set is for, each counted over the 400
     * pipelines, and the fewest that must hold it */
    static const struct { const char *what, *text; int least; } pat[] = {
        { "with a bias", ", y, c) = bias", 80 },
        { "with a weight read at the channel", "(c, r", 80 },
        { "packing", " + c % 2, 2 * y + c / 2", 20 },
        { "selecting on c", "select(c == 1, ", 20 },
        { "with softmax", "(x, y) = max(smax", 20 },
        { "with a param", "param f32 s", 40 },
        { "with fixed-point interpolation", " = select(x % 2 == 0, quant", 20 },
    };
    enum { NPAT = sizeof pat / sizeof pat[0] };
    int n[NPAT] = {0};
    for (int i = 0; i < 400; i++) {
        t = randpipe_generate_ops(1000 + (uint64_t)i * 7919, stages_for(i), RANDPIPE_OPS_LAYERS, NULL);
        for (int j = 0; j < NPAT; j++) n[j] += t && strstr(t, pat[j].text) != NULL;
        free(t);
    }
    printf("  layers (of 400):");
    for (int j = 0; j < NPAT; j++) printf("%s %d %s", j ? "," : "", n[j], pat[j].what);
    printf("\n");
    for (int j = 0; j < NPAT; j++) check_report(n[j] >= pat[j].least, "%s: %d, at least %d", pat[j].what, n[j],
                                                pat[j].least);
}

static void deterministic(void) {
    int same = 0, differ = 0;
    char *prev = NULL;
    for (int i = 0; i < 100; i++) {
        char *a = randpipe_generate((uint64_t)i, stages_for(i), NULL);
        char *b = randpipe_generate((uint64_t)i, stages_for(i), NULL);
        same += a && b && !strcmp(a, b);
        differ += prev && a && strcmp(prev, a) != 0;
        free(prev);
        free(b);
        prev = a;
    }
    free(prev);
    CHECK(same == 100);
    CHECK(differ == 99);
    /* the stage count changes the pipeline; the seed names it */
    char *a = randpipe_generate(42, 5, NULL), *b = randpipe_generate(42, 6, NULL);
    CHECK(a && b && strcmp(a, b) != 0);
    CHECK(a && strstr(a, "pipeline random_42;"));
    free(a);
    free(b);
    /* the same bytes on every machine: FNV-1a hashes of three texts as
     * generated when the generator was written (a change to the generator
     * changes the training data, and must update them knowingly) */
    static const struct { uint64_t seed; int stages; uint64_t fnv; } golden[] = {
        { 7, 6, 0x1fadd730781a9cf0ull },
        { 1, 0, 0x523473b5824163dbull },
        { 123456789, 20, 0xd195d5e62501b01cull },
        { 20, 4, 0xca3b6c10cdb98fabull },           /* an unsigned conv_taps that wraps */
        { 6, 5, 0x9565dc912e4d1291ull },            /* a slice, then a broadcast */
    };
    for (size_t i = 0; i < sizeof golden / sizeof golden[0]; i++) {
        char *t = randpipe_generate(golden[i].seed, golden[i].stages, NULL);
        uint64_t h = 0xcbf29ce484222325ull;
        for (const char *c = t; c && *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
        if (h != golden[i].fnv) fprintf(stderr, "  seed %llu: text hash 0x%016llx\n", (unsigned long long)golden[i].seed,
                                        (unsigned long long)h);
        CHECK(h == golden[i].fnv);
        free(t);
    }
    /* out of range */
    CHECK(randpipe_generate(1, 1, NULL) == NULL);
    CHECK(randpipe_generate(1, 21, NULL) == NULL);
    CHECK(randpipe_generate(1, -3, NULL) == NULL);
}

static void coverage(void) {
    for (int k = 0; k < RANDPIPE_NKINDS; k++) {
        int c = kind_total[RANDPIPE_OPS_CLASSIC][k], l = kind_total[RANDPIPE_OPS_LOOKUPS][k],
            n = kind_total[RANDPIPE_OPS_LAYERS][k];
        printf("  %-12s %5d classic %5d lookups %5d layers\n", randpipe_kind_name(k), c, l, n);
        CHECK(k < RANDPIPE_CLASSIC_NKINDS ? c >= 10 : c == 0);
        CHECK(k < RANDPIPE_LOOKUPS_NKINDS ? l >= 10 : l == 0);
        CHECK(n >= 10);
    }
    CHECK(!strcmp(randpipe_kind_name(RANDPIPE_HISTOGRAM), "histogram"));
    CHECK(!strcmp(randpipe_kind_name(RANDPIPE_NKINDS), "?"));
}

/* Pipelines at small sizes through random schedules, checked bit for bit
 * against the reference evaluator on each back end. */
static void schedules(randpipe_ops ops, int div) {
    int runs = (getenv("RUNS") ? atoi(getenv("RUNS")) : 50) / div;
    uint64_t seed0 = getenv("SEED0") ? strtoull(getenv("SEED0"), NULL, 10) : 5000;
    char err[8192];
    fixture_device devs[2];
    int ndev = fixture_open_devices(devs);
    /* a schedule must fit the OpenCL device and a CUDA GPU */
    target t = fixture_gpu_target();
    space_opts so = { &t, false, false };
    for (int i = 0; i < runs; i++) {
        uint64_t seed = seed0 + (uint64_t)i;
        randpipe_info info;
        char *text = randpipe_generate_ops(seed, 0, ops, &info), name[48];
        randpipe_pipeline_name(seed, ops, name, sizeof name);
        bounds_result *b = NULL;
        sc_pipeline *p = text ? load(text, 1, &b) : NULL;
        if (!p) {
            check_report(false, "%s: does not load", name);
            free(text);
            continue;
        }
        sc_buffer **in, **ref;
        if (measure_buffers_new(p, seed, &in, &ref, err, sizeof err) != 0) {
            check_report(false, "%s: %s", name, err);
        } else {
            for (int s = 0; s < (i % 5 == 0 ? 2 : 1); s++) {
                uint64_t sseed = seed * 31 + (uint64_t)s;
                ir_arena *arena = ir_arena_new();
                sched_state *st = space_random(arena, p, b, &so, sseed, err, sizeof err);
                lower_program *prog = st ? lower_schedule(arena, p, b, st, err, sizeof err) : NULL;
                if (!prog) {
                    check_report(false, "%s/sched%llu: %s", name,
                                 (unsigned long long)sseed, err);
                    ir_arena_free(arena);
                    continue;
                }
                for (int d = 0; d < ndev; d++) {
                    bool ok = fixture_run_exact(&devs[d], prog, in, ref, 120000, false, err, sizeof err);
                    check_report(ok, "%s/sched%llu/%s (%d Funcs, %d kernels)%s%s",
                                 name, (unsigned long long)sseed, devs[d].ops->name,
                                 info.funcs, prog->nkernels, ok ? "" : ": ", ok ? "" : err);
                }
                ir_arena_free(arena);
            }
        }
        measure_buffers_free(p, in, ref);
        bounds_free(b);
        sc_pipeline_free(p);
        free(text);
    }
    fixture_close_devices(devs, ndev);
}

int main(void) {
    RUN(thousand_valid);
    RUN(deterministic);
    RUN(lookups_valid);
    RUN(layers_valid);
    RUN(coverage);
    schedules(RANDPIPE_OPS_CLASSIC, 1);
    schedules(RANDPIPE_OPS_LOOKUPS, 2);
    schedules(RANDPIPE_OPS_LAYERS, 2);
    CHECK_EXIT();
}
