/*
 * test_fusion.c - multi-consumer fusion (Anderson et al. 2021 §6: a Func
 * computed at the block or thread level of the lowest common ancestor of
 * its consumers): hand-written schedules of harris (gray, Ix and Iy each
 * read by two Funcs fused into out's blocks) and of small diamonds pass
 * sched_check, lower, and give exactly the reference's output on the C and
 * OpenCL back ends; their CUDA compiles where NVRTC is present.  The
 * enumerator offers these locations, and the rules refuse the placements
 * that break them.
 */
#include <stdlib.h>
#include <string.h>
#include "apps.h"
#include "check.h"
#include "fixtures.h"
#include "exec.h"
#include "space.h"

static fixture_device devs[2];
static int ndevs;
static fixture_device cuda;

/* Checks, lowers and runs `text` on every device against ref. */
static void run_schedule(const char *name, sc_pipeline *p, const bounds_result *b, sc_buffer **in, sc_buffer **ref,
                         const char *text) {
    ir_arena *a = ir_arena_new();
    char err[4096];
    target t = fixture_target("a100");
    sched_state *s = sched_parse(a, p, name, text, err, sizeof err);
    bool ok = s && sched_check(p, b, s, &t, true, err, sizeof err) == 0;
    lower_program *prog = ok ? lower_schedule(a, p, b, s, err, sizeof err) : NULL;
    check_report(prog != NULL, "%s: checks and lowers%s%s", name, prog ? "" : ": ", prog ? "" : err);
    if (!prog) {
        ir_arena_free(a);
        return;
    }
    int fused = 0;
    for (int k = 0; k < prog->nkernels; k++) fused += prog->kernels[k]->nshared;
    for (int d = 0; d < ndevs; d++) {
        exec_diff df;
        exec_session *x = exec_open_checked(devs[d].ops, devs[d].dev, prog, CG_MATH_EXACT, NULL, in, ref, 120000,
                                            &df, err, sizeof err);
        check_report(x && df.differ == 0, "%s/%s: bit-identical to the reference (%d kernels, %d shared arrays, "
                     "%lld points differ)%s%s", name, devs[d].ops->name, prog->nkernels, fused,
                     x ? (long long)df.differ : -1LL, x ? "" : ": ", x ? "" : err);
        exec_close(x);
    }
    if (cuda.dev) {
        char *src = cg_generate(prog, CG_CUDA), opts[128];
        snprintf(opts, sizeof opts, "%s -arch=sm_80", cg_required_options(CG_CUDA));
        rt_module *m = cuda.ops->compile(cuda.dev, src, opts, err, sizeof err);
        check_report(m != NULL, "%s/cuda: compiles%s%s", name, m ? "" : ": ", m ? "" : err);
        if (m) cuda.ops->module_free(m);
        free(src);
    }
    ir_arena_free(a);
}

/* Every Func of harris that has two consumers fused into out's blocks:
 * Ix (read by Sxx and Sxy), Iy (Syy, Sxy), gray (Ix, Iy). */
static const char *HARRIS_BLOCK =
    "schedule harris;\n"
    "out: root [x=32x1 y=8x1];\n"
    "trace: inline;\ndet: inline;\n"
    "Sxy: block of out [x=32 y=8];\nSyy: block of out [x=32 y=8];\nSxx: block of out [x=32 y=8];\n"
    "Ixy: inline;\nIyy: inline;\nIxx: inline;\n"
    "Ix: block of out [x=32 y=8];\nIy: block of out [x=16 y=8];\ngray: block of out [x=32 y=4];\n"
    "clamped: inline;\n";

/* The whole chain in registers per thread tile of out: Ix and Iy are each
 * read by two thread-level Funcs, gray by Ix and Iy. */
static const char *HARRIS_THREAD =
    "schedule harris;\n"
    "out: root [x=32x1 y=4x2];\n"
    "trace: thread of out;\ndet: thread of out;\n"
    "Sxy: thread of out;\nSyy: thread of out;\nSxx: thread of out;\n"
    "Ixy: inline;\nIyy: inline;\nIxx: inline;\n"
    "Ix: thread of out;\nIy: thread of out;\ngray: thread of out;\n"
    "clamped: inline;\n";

static void test_harris(void) {
    app_case ac;
    char err[1024];
    if (app_load("apps", "harris", true, 7, &ac, err, sizeof err) != 0) {
        check_report(false, "harris: %s", err);
        return;
    }
    run_schedule("harris/block", ac.p, ac.b, ac.in, ac.ref, HARRIS_BLOCK);
    /* the Halide form computes them at the block loop of the common
     * ancestor, out */
    ir_arena *a = ir_arena_new();
    sched_state *s = sched_parse(a, ac.p, "h.sched", HARRIS_BLOCK, err, sizeof err);
    char *hal = s ? sched_to_halide(ac.p, s) : NULL;
    CHECK(hal && strstr(hal, "gray.compute_at(out, x_o)") && strstr(hal, "Ix.compute_at(out, x_o)"));
    free(hal);
    ir_arena_free(a);
    run_schedule("harris/thread", ac.p, ac.b, ac.in, ac.ref, HARRIS_THREAD);
    app_free(&ac);
}

/* a diamond: a is read by b, c and out itself; b and c by out. */
static const char *DIAMOND =
    "pipeline diamond;\n"
    "size W = 70;\nsize H = 45;\n"
    "input i32 in(W, H);\n"
    "cl = repeat_edge(in);\n"
    "a(x, y) = cl(x, y) * 3 - cl(x + 1, y);\n"
    "b(x, y) = a(x - 1, y) + a(x + 1, y) * 2;\n"
    "c(x, y) = a(x, y - 1) - a(x, y + 2);\n"
    "out(x, y) = b(x, y) * c(x, y) + b(x + 1, y) - c(x, y - 1) + a(x, y + 1);\n"
    "tri(x, y) = out(x, y) - out(x + 1, y);\n"
    "output tri(W, H);\n";

static const char *DIAMOND_SCHEDULES[] = {
    /* a at block level of out, which reads it, and where b and c are */
    "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=16x2 y=8x1];\nc: block of out [x=16 y=4];\n"
    "b: block of out [x=32 y=2];\na: block of out [x=16 y=8];\ncl: inline;\n",
    /* a at thread level of out, b and c too */
    "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=32x2 y=2x3];\nc: thread of out;\n"
    "b: thread of out;\na: thread of out;\ncl: inline;\n",
    /* out inline into tri: a is read by tri itself and by b, c in tri's blocks */
    "schedule diamond;\ntri: root [x=16x1 y=4x2];\nout: inline;\nc: block of tri [x=16 y=4];\n"
    "b: block of tri [x=16 y=2];\na: block of tri [x=16 y=4];\ncl: inline;\n",
    /* the same at thread level, with a serial tile */
    "schedule diamond;\ntri: root [x=8x2 y=4x2];\nout: inline;\nc: thread of tri;\nb: thread of tri;\n"
    "a: thread of tri;\ncl: inline;\n",
    /* one consumer at block and one at thread level: a stays at root */
    "schedule diamond;\ntri: root [x=32x1 y=2x1];\nout: root [x=32x1 y=4x1];\nc: block of out [x=32 y=4];\n"
    "b: thread of out;\na: root [x=32x1 y=2x1];\ncl: inline;\n",
};

/* Placements the rules refuse, with the consumer that breaks them. */
static void test_refused(void) {
    sc_pipeline *p = sc_parse_string("diamond.pipe", DIAMOND, strlen(DIAMOND), NULL);
    bounds_result *b = bounds_infer(p);
    target t = fixture_target("a100");
    ir_arena *a = ir_arena_new();
    char err[1024];
    static const char *cases[][2] = {
        /* c reads a too, and is not inside b */
        { "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=32x1 y=4x1];\nc: block of out [x=32 y=4];\n"
          "b: block of out [x=32 y=4];\na: block of b [x=32 y=4];\ncl: inline;\n",
          "a: computed at block level of b, but of its several consumers, c is not computed at block level inside b" },
        /* b is at thread level: a block-level a cannot be read inside one thread's registers */
        { "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=32x1 y=4x1];\nc: block of out [x=32 y=4];\n"
          "b: thread of out;\na: block of out [x=32 y=4];\ncl: inline;\n",
          "a: computed at block level of out, but of its several consumers, b is not computed at block level inside out" },
        /* b and c at root: only out is inside out */
        { "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=32x1 y=4x1];\nc: root [x=32x1 y=4x1];\n"
          "b: root [x=32x1 y=4x1];\na: thread of out;\ncl: inline;\n",
          "a: computed at thread level of out, but of its several consumers, b is not computed at thread level inside out" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sched_state *s = sched_parse(a, p, "t.sched", cases[i][0], err, sizeof err);
        CHECK(s != NULL);
        int rc = s ? sched_check(p, b, s, &t, true, err, sizeof err) : 0;
        if (rc == 0 || !strstr(err, cases[i][1])) fprintf(stderr, "case %zu: got '%s'\n", i, err);
        CHECK(rc == -1 && strstr(err, cases[i][1]) != NULL);
    }
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

/* For the diamond, once out, c and b are in out's blocks (or registers),
 * the enumerator offers a at block (thread) level of out. */
static void test_enumerator_offers_lca(void) {
    sc_pipeline *p = sc_parse_string("diamond.pipe", DIAMOND, strlen(DIAMOND), NULL);
    bounds_result *b = bounds_infer(p);
    target t = fixture_target("a100");
    space_opts o = { &t, false, false };
    ir_arena *a = ir_arena_new();
    char err[1024];
    const char *text[2] = {
        "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=32x1 y=4x1];\nc: block of out [x=32 y=4];\n"
        "b: block of out [x=32 y=4];\na: root [x=32x1 y=1x1];\ncl: inline;\n",
        "schedule diamond;\ntri: root [x=32x1 y=1x1];\nout: root [x=32x1 y=4x1];\nc: thread of out;\n"
        "b: thread of out;\na: root [x=32x1 y=1x1];\ncl: inline;\n",
    };
    sched_loc want[2] = { SCHED_BLOCK, SCHED_THREAD };
    int aid = sc_func_lookup(p, "a")->id, out = sc_func_lookup(p, "out")->id;
    for (int k = 0; k < 2; k++) {
        sched_state *s = sched_parse(a, p, "t.sched", text[k], err, sizeof err);
        CHECK(s != NULL);
        if (!s) continue;
        s->f[aid] = NULL;
        s->f[sc_func_lookup(p, "cl")->id] = NULL;
        legal_ctx *x = space_legal(p, b, &o);
        ir_vec kids = {0};
        int n = space_children(a, x, p, b, s, &o, &kids);
        /* a: inline, root, and the one fused level its consumers allow */
        CHECK(n == 3);
        bool found = false;
        for (int i = 0; i < n; i++) {
            const sched_func *sf = ((sched_state *)kids.items[i])->f[aid];
            found |= sf->loc == want[k] && sf->at == out;
        }
        CHECK(found);
        legal_free(x);
    }
    ir_arena_free(a);
    bounds_free(b);
    sc_pipeline_free(p);
}

static void test_diamond(void) {
    sc_pipeline *p = sc_parse_string("diamond.pipe", DIAMOND, strlen(DIAMOND), NULL);
    CHECK(sc_error_count(p) == 0);
    bounds_result *b = bounds_infer(p);
    sc_buffer *in[1] = { sc_input_random(p, 0, 5) }, *ref[1] = {0};
    CHECK(sc_evaluate(p, in, 5, ref) == 0);
    for (size_t i = 0; i < sizeof DIAMOND_SCHEDULES / sizeof *DIAMOND_SCHEDULES; i++) {
        char name[64];
        snprintf(name, sizeof name, "diamond/%zu", i);
        run_schedule(name, p, b, in, ref, DIAMOND_SCHEDULES[i]);
    }
    sc_buffer_free(in[0]);
    sc_buffer_free(ref[0]);
    bounds_free(b);
    sc_pipeline_free(p);
}

int main(void) {
    ndevs = fixture_open_devices(devs);
    cuda = fixture_open_cuda();
    RUN(test_harris);
    RUN(test_diamond);
    RUN(test_refused);
    RUN(test_enumerator_offers_lca);
    fixture_close_devices(devs, ndevs);
    if (cuda.dev) cuda.ops->close(cuda.dev);
    CHECK_EXIT();
}
