/*
 * test_oneshot.c - the one-shot autoscheduler (the oneshot strategy:
 * search_oneshot guided by weights/pocl.weights, as `stagecraft schedule
 * --strategy oneshot` runs it) never runs out of states: it returns a
 * legal schedule (sched_check) that lowers, and whose code matches the
 * reference evaluator bit for bit (CG_MATH_EXACT) on the C and OpenCL back
 * ends, for
 *
 *  - 200 random pipelines (src/gen/randpipe.c, seeds 1-200) at their small
 *    sizes, with 2 samples (one beam search of beam 32 x 5 passes, one
 *    greedy); all on C, every fourth on OpenCL too (PoCL compiles for
 *    1-2 s per pipeline here: OPENCL_EVERY=1 checks every one);
 *  - 40 random pipelines of the lookups set (random_lookups_1-40: lookup
 *    tables and grids read at data-dependent coordinates), the same way;
 *  - 40 of the layers set (random_layers_1-40: biased and depthwise
 *    layers, softmax, packing, selects on c, fixed-point interpolation);
 *  - pipelines with several outputs (one read by another, of different
 *    sizes, with a scan and a histogram between them);
 *  - scalar outputs: 0-D Funcs (alone, read by other scalars and by 1-D to
 *    3-D stages, integer ones with updates and a param) and 1-element ones;
 *  - 1-D inputs of 10 million elements (a blur, a reduction of it to a
 *    scalar, a decimation; a histogram and a count).
 *
 * For longer hunts: RUNS, LOOKUP_RUNS, LAYER_RUNS, SEED0, SAMPLES, STAGES (the Funcs asked of the
 * generator), SMALL=0 (paper sizes), PRUNE=1, TARGET=NAME (else the
 * OpenCL device's limits within an a100's), BACKENDS=c,opencl ("" only
 * schedules and lowers), OPENCL_EVERY.
 */
#include <stdlib.h>
#include <string.h>
#include "beam.h"
#include "check.h"
#include "exec.h"
#include "fixtures.h"
#include "measure.h"
#include "randpipe.h"
#include "strategy.h"

static fixture_device devs[2];
static int ndev;
static target tgt;
static int samples = 2;
static bool prune;

/* Parses text (small sizes when small), schedules it one-shot, lowers it
 * and runs it on the first nd devices, comparing each output bit for bit
 * with the reference evaluator.  Reports one case, name. */
static void run_case(const char *name, const char *text, int small, uint64_t seed, int nd) {
    char err[8192] = "";
    sc_parse_options po = { small, 0, NULL, NULL };
    sc_pipeline *p = sc_parse_string("oneshot.pipe", text, strlen(text), &po);
    bounds_result *b = sc_error_count(p) ? NULL : bounds_infer(p);
    if (!b) {
        check_report(false, "%s: does not load: %s", name, sc_error_count(p) ? sc_error_message(p, 0) : "?");
        sc_pipeline_free(p);
        return;
    }
    sc_buffer **in, **ref;
    int ref_rc = measure_buffers_new(p, seed, &in, &ref, err, sizeof err);
    ir_arena *arena = ir_arena_new();
    bool ok = false;
    sched_state *s = NULL;
    int kernels = 0;
    char on[64] = "lowered only";
    const char *failed_on = "";
    if (ref_rc != 0) goto done;
    space_opts so = { &tgt, prune, false };
    space_search_args args = { .weights = "weights/pocl.weights", .samples = samples };
    s = space_strategy_by_name("oneshot")->make(arena, p, b, &so, &args, seed, err, sizeof err);
    if (!s) goto done;
    char cerr[512];
    if (sched_check(p, b, s, &tgt, false, cerr, sizeof cerr) != 0) {
        snprintf(err, sizeof err, "illegal schedule: %s", cerr);
        goto done;
    }
    lower_program *prog = lower_schedule(arena, p, b, s, err, sizeof err);
    if (!prog) goto done;
    kernels = prog->nkernels;
    ok = true;
    for (int d = 0; d < nd && ok; d++) {
        ok = fixture_run_exact(&devs[d], prog, in, ref, 120000, true, err, sizeof err);
        if (!ok) failed_on = devs[d].ops->name;
    }
done:
    if (nd > 0)
        snprintf(on, sizeof on, "%s%s%s", devs[0].ops->name, nd > 1 ? ", " : "", nd > 1 ? devs[1].ops->name : "");
    check_report(ok, "%s (%d Funcs, %d kernels; %s)%s%s%s%s", name, p->funcs.n - p->inputs.n, kernels, on,
                 ok ? "" : ": ",
                 failed_on, *failed_on ? ": " : "", ok ? "" : err);
    if (!ok) fprintf(stderr, "---- %s ----\n%s\n", name, text);
    if (!ok && s) {
        char *st = sched_to_text(p, s);
        fprintf(stderr, "---- %s: its schedule ----\n%s\n", name, st ? st : "?");
        free(st);
    }
    ir_arena_free(arena);
    measure_buffers_free(p, in, ref);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* RUNS random pipelines from seed SEED0 on (the header says which
 * back ends check which). */
static void random_pipelines(randpipe_ops ops, const char *runs_var, int runs_default) {
    int runs = getenv(runs_var) ? atoi(getenv(runs_var)) : runs_default;
    uint64_t seed0 = getenv("SEED0") ? strtoull(getenv("SEED0"), NULL, 10) : 1;
    int small = getenv("SMALL") ? atoi(getenv("SMALL")) : 1;
    int stages = getenv("STAGES") ? atoi(getenv("STAGES")) : 0;
    int every = getenv("OPENCL_EVERY") && atoi(getenv("OPENCL_EVERY")) > 0 ? atoi(getenv("OPENCL_EVERY")) : 4;
    for (int i = 0; i < runs; i++) {
        uint64_t seed = seed0 + (uint64_t)i;
        char *text = randpipe_generate_ops(seed, stages, ops, NULL);
        char name[64];
        randpipe_pipeline_name(seed, ops, name, sizeof name);
        /* devs[0] is C when both are open */
        run_case(name, text, small, seed, i % every == 0 || ndev < 2 ? ndev : 1);
        free(text);
    }
}

/* Several outputs: one read by another (its region is larger than its
 * output size), outputs of different sizes sharing a producer, an output
 * that is also fused into nothing else. */
static const char multi_outputs[] =
    "pipeline multi;\n"
    "size W = 512 small 48;\n"
    "size H = 256 small 40;\n"
    "input u8 in(W, H);\n"
    "c = repeat_edge(in);\n"
    "g(x, y) = f32(c(x, y)) * 0.25;\n"
    "bx(x, y) = g(x - 1, y) + g(x, y) + g(x + 1, y);\n"
    "by(x, y) = bx(x, y - 1) + bx(x, y) + bx(x, y + 1);\n"
    "dx(x, y) = by(x + 1, y) - by(x, y);\n"
    "half(x, y) = by(2 * x, 2 * y);\n"
    "edge(x, y) = u8(clamp(abs(dx(x, y)) * 4.0, 0.0, 255.0));\n"
    "output by(W - 1, H);\n"
    "output dx(W - 1, H);\n"
    "output half(W / 2, H / 2);\n"
    "output edge(W - 1, H);\n";

/* Two outputs with a scan and a histogram between them. */
static const char multi_scan_hist[] =
    "pipeline multi2;\n"
    "size W = 300 small 50;\n"
    "size H = 200 small 20;\n"
    "input u8 in(W, H);\n"
    "rdom r(1, W - 1);\n"
    "rdom p(0, W, 0, H);\n"
    "cs(x, y) = i32(in(x, y));\n"
    "cs(r, y) = cs(r - 1, y) + cs(r, y);\n"
    "hist(b) = 0;\n"
    "hist(i32(in(p.x, p.y)) / 16) += 1;\n"
    "eq(x, y) = hist(i32(in(x, y)) / 16) * 2 + cs(x, y) % 7;\n"
    "output eq(W, H);\n"
    "output hist(16);\n"
    "output cs(W, H);\n";

/* 0-D Funcs: an output alone; mean and variance read by scalars and by a
 * 2-D stage; integer scalars (a count with updates, a maximum, a
 * constant, a param); min and max accumulators normalizing a 3-D stage. */
static const char scalar_alone[] =
    "pipeline scalar_alone;\n"
    "size N = 5000 small 300;\n"
    "input f32 in(N);\n"
    "rdom r(0, N);\n"
    "total() = sum(in(r) * in(r));\n"
    "output total();\n";

static const char scalar_stats[] =
    "pipeline scalar_stats;\n"
    "size W = 640 small 40;\n"
    "size H = 480 small 30;\n"
    "input u8 img(W, H);\n"
    "rdom r(0, W, 0, H);\n"
    "g(x, y) = f32(img(x, y)) * 0.5 + 1.0;\n"
    "total() = 0.0;\n"
    "total() += g(r.x, r.y);\n"
    "mean() = total() / f32(W * H);\n"
    "var() = sum((g(r.x, r.y) - mean()) * (g(r.x, r.y) - mean())) / f32(W * H);\n"
    "norm(x, y) = (g(x, y) - mean()) / sqrt(var() + 1.0);\n"
    "output norm(W, H);\n"
    "output var();\n"
    "output mean();\n";

static const char scalar_int[] =
    "pipeline scalar_int;\n"
    "size N = 4096 small 200;\n"
    "param i32 bias = 3;\n"
    "input i16 v(N);\n"
    "rdom r(0, N);\n"
    "k() = 7;\n"
    "cnt() = 0;\n"
    "cnt() += select(v(r) > 0, 1, 0);\n"
    "cnt() = cnt() * 2 + bias;\n"
    "top() = maximum(i32(v(r)));\n"
    "out(x) = i32(v(x)) * k() + cnt() - top();\n"
    "output out(N);\n"
    "output cnt();\n"
    "output top();\n";

static const char scalar_minmax[] =
    "pipeline scalar_minmax;\n"
    "size W = 128 small 16;\n"
    "size H = 64 small 8;\n"
    "input f32 in(W, H, 3);\n"
    "rdom r(0, W, 0, H);\n"
    "lo() = 1000.0;\n"
    "lo() = min(lo(), in(r.x, r.y, 1));\n"
    "hi() = maximum(in(r.x, r.y, 1));\n"
    "out(x, y, c) = (in(x, y, c) - lo()) / max(hi() - lo(), 0.001);\n"
    "output out(W, H, 3);\n";

/* 1-element outputs (1-D of extent 1) beside a 0-D one. */
static const char one_element[] =
    "pipeline one_element;\n"
    "size N = 3000 small 100;\n"
    "input f32 in(N);\n"
    "rdom r(0, N);\n"
    "s1(x) = sum(in(r + x));\n"
    "s0() = sum(in(r));\n"
    "both(x) = s1(x) + s0();\n"
    "output s1(1);\n"
    "output s0();\n"
    "output both(1);\n";

/* A 1-D input of 10 million elements: a two-pass blur, a reduction of
 * it to a scalar, a decimated copy. */
static const char ten_million[] =
    "pipeline ten_million;\n"
    "size N = 10000000;\n"
    "input f32 in(N);\n"
    "c = repeat_edge(in);\n"
    "bx(x) = (c(x - 1) + 2.0 * c(x) + c(x + 1)) * 0.25;\n"
    "by(x) = (bx(x - 2) + bx(x) + bx(x + 2)) * 0.5;\n"
    "rdom r(0, N);\n"
    "total() = sum(by(r));\n"
    "dec(x) = by(8 * x) - total() * 0.0000001;\n"
    "output by(N);\n"
    "output total();\n"
    "output dec(N / 8);\n";

/* A 10-million-element u8 input reduced alone: a histogram and a count. */
static const char ten_million_hist[] =
    "pipeline ten_million_hist;\n"
    "size N = 10000000;\n"
    "input u8 in(N);\n"
    "rdom r(0, N);\n"
    "hist(b) = 0;\n"
    "hist(i32(in(r)) / 32) += 1;\n"
    "big() = 0;\n"
    "big() += select(in(r) > 200, 1, 0);\n"
    "output hist(8);\n"
    "output big();\n";

static void fixed_cases(void) {
    static const struct { const char *name, *text; } cases[] = {
        { "multi_outputs", multi_outputs }, { "multi_scan_hist", multi_scan_hist },
        { "scalar_alone", scalar_alone }, { "scalar_stats", scalar_stats }, { "scalar_int", scalar_int },
        { "scalar_minmax", scalar_minmax }, { "one_element", one_element },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int small = 1; small >= 0; small--) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", cases[i].name, small ? "/small" : "");
            run_case(name, cases[i].text, small, 7, ndev);
        }
    run_case("ten_million", ten_million, 0, 3, ndev);
    run_case("ten_million_hist", ten_million_hist, 0, 3, ndev);
}

int main(void) {
    if (getenv("SAMPLES")) samples = atoi(getenv("SAMPLES"));
    prune = getenv("PRUNE") && atoi(getenv("PRUNE"));
    ndev = fixture_open_devices(devs);
    /* a schedule must fit the OpenCL device and a CUDA GPU (TARGET=NAME:
     * that target alone) */
    tgt = getenv("TARGET") ? fixture_target(getenv("TARGET")) : fixture_gpu_target();
    fixed_cases();
    random_pipelines(RANDPIPE_OPS_CLASSIC, "RUNS", 200);
    random_pipelines(RANDPIPE_OPS_LOOKUPS, "LOOKUP_RUNS", 40);
    random_pipelines(RANDPIPE_OPS_LAYERS, "LAYER_RUNS", 40);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
