/*
 * test_interior.c - interior blocks (codegen.c, docs/backends.md): a
 * kernel whose edge blocks clamp coordinates, select a constant exterior
 * or guard a partial tile gets a second copy of its body for the blocks
 * away from the edges, without them.  Checked here:
 *  - the copy is there in the OpenCL code, with the condition on the
 *    block bases that the edges give, and its body has no clamp, select
 *    or guard left; the C code has none (cg_target.interior);
 *  - a kernel without edge handling, or of one block, has no copy;
 *  - every schedule runs on the C and OpenCL back ends and matches the
 *    reference evaluator bit for bit, block-level Funcs (phases and
 *    barriers inside the branch) and tails included;
 *  - the CUDA code of the same schedules compiles (NVRTC), where the
 *    toolkit is installed;
 *  - lowered for a CPU (lower_schedule_for), the OpenCL code of a large
 *    kernel launches the interior blocks apart (cg_generate_launches): a
 *    kernel of its own with no edge handling and no branch around its
 *    body, and the kernel's own function over the other blocks, the two
 *    launches covering the kernel's blocks; so does a small one that
 *    guards a store of 8 or 16 bits (a partial tile's, generation 18),
 *    not one of f32 or without a guard, which keeps the branch; run
 *    against the reference;
 *  - a guard of two conjuncts, one of them (a short loop's partial
 *    block) undecided in every block, leaves the other's blocks an
 *    interior guarded by the first alone (generation 22), launched apart
 *    for a CPU, and cg_decides_guards_apart says so where generation
 *    21's finder found none; run against the reference, its CUDA code
 *    compiled;
 *  - lowered for a CPU, OpenCL takes a clamped row apart from the first
 *    coordinate ((in_g + (row))[x], cg_access) in the edge code only,
 *    never a data-dependent row, never for a GPU; run against the
 *    reference.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "codegen.h"
#include "exec.h"
#include "fixtures.h"
#include "measure.h"

static fixture_device devs[2];
static int ndev;
static fixture_device cuda;

/* A 3x3 blur of a repeat_edge input, 100 x 77 (tails in both loops). */
static const char blur_pipe[] =
    "pipeline edge_blur;\n"
    "size W = 100;\n"
    "size H = 77;\n"
    "input u16 in(W, H);\n"
    "clamped = repeat_edge(in);\n"
    "bx(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y)) / 3);\n"
    "out(x, y) = u16((u32(bx(x, y - 1)) + bx(x, y) + bx(x, y + 1)) / 3);\n"
    "output out(W, H);\n";

/* A constant exterior (a select of the coordinates) read by a 5-tap
 * stencil along y. */
static const char zero_pipe[] =
    "pipeline edge_zero;\n"
    "size W = 40;\n"
    "size H = 30;\n"
    "input f32 in(W, H);\n"
    "padded = constant_exterior(in, 0.0);\n"
    "out(x, y) = padded(x, y - 2) + padded(x, y - 1) + padded(x, y) + padded(x, y + 1) + padded(x, y + 2);\n"
    "output out(W, H);\n";

/* random_41 of test_oneshot (small sizes) with its one-shot schedule:
 * two Funcs at block level, each kernel two phases and a barrier.  With
 * the interior test around all the phases (a barrier in each branch),
 * PoCL 3.1's loopvec method gave 384 of 1152 points wrong. */
static const char r41_pipe[] =
    "pipeline random_41;\n"
    "size W = 48;\n"
    "size H = 48;\n"
    "input f32 in(W, H, 3);\n"
    "luma0(x, y) = 0.25 * in(clamp(x, 0, W - 1), clamp(y, 0, H - 1), clamp(0, 0, 3 - 1)) + 0.5 * "
    "in(clamp(x, 0, W - 1), clamp(y, 0, H - 1), clamp(1, 0, 3 - 1)) + 0.25 * in(clamp(x, 0, W - 1), "
    "clamp(y, 0, H - 1), clamp(2, 0, 3 - 1));\n"
    "pad1 = constant_exterior(luma0, 0.0, W, H);\n"
    "act2(x, y) = 1.0 / (1.0 + exp(-clamp(pad1(x, y), -30.0, 30.0)));\n"
    "maxpool3(x, y) = max(max(max(max(max(max(max(max(act2(2 * x - 1, 2 * y - 1), act2(2 * x, 2 * y - "
    "1)), act2(2 * x + 1, 2 * y - 1)), act2(2 * x - 1, 2 * y)), act2(2 * x, 2 * y)), act2(2 * x + 1, 2 * "
    "y)), act2(2 * x - 1, 2 * y + 1)), act2(2 * x, 2 * y + 1)), act2(2 * x + 1, 2 * y + 1));\n"
    "relu4(x, y) = max(maxpool3(x, y), 0.0);\n"
    "pad5(x, y) = relu4(clamp(select(x < 0, -1 - x, select(x > (W / 2) - 1, 2 * (W / 2) - 1 - x, x)), 0, "
    "(W / 2) - 1), clamp(select(y < 0, -1 - y, select(y > (H / 2) - 1, 2 * (H / 2) - 1 - y, y)), 0, (H / "
    "2) - 1));\n"
    "input f32 w0(7, 7);\n"
    "rdom r0(-3, 7, -3, 7);\n"
    "conv6(x, y) = 0.0;\n"
    "conv6(x, y) += w0(r0.x + 3, r0.y + 3) * pad5(x + r0.x, y + r0.y) * 0.015625;\n"
    "sqrt7(x, y) = sqrt(abs(conv6(x, y)));\n"
    "up8(x, y) = 0.2500 * sqrt7(x / 2 - 1 + 2 * (x % 2), y) + 0.7500 * sqrt7(x / 2, y);\n"
    "rdom r1(1, (H / 2) - 1);\n"
    "scan9(x, y) = up8(x, y);\n"
    "scan9(x, r1) = 0.8750 * scan9(x, r1 - 1) + 0.1250 * scan9(x, r1);\n"
    "scan9(x, (H / 2) - 1 - r1) = 0.8750 * scan9(x, (H / 2) - r1) + 0.1250 * scan9(x, (H / 2) - 1 - r1);\n"
    "output scan9(W, (H / 2));\n";

/* Clamps in three dimensions, with a partial tile along x: the edge
 * blocks come from every base (codegen.c, edge_bid). */
static const char cube_pipe[] =
    "pipeline edge_cube;\n"
    "input f32 in(21, 18, 9);\n"
    "out(x, y, c) = in(clamp(x - 1, 0, 20), clamp(y + 1, 0, 17), clamp(c + 1, 0, 8)) + in(x, y, c) + "
    "in(clamp(x + 1, 0, 20), clamp(y - 1, 0, 17), clamp(c - 1, 0, 8)) * in(clamp(x - 2, 0, 20), y, c) + "
    "in(clamp(x + 2, 0, 20), clamp(y + 2, 0, 17), c) * in(x, clamp(y - 2, 0, 17), clamp(c + 2, 0, 8));\n"
    "output out(21, 18, 9);\n";

/* A 5 x 5 stencil of a repeat_edge input, 70 x 50: 8 points a thread
 * come to over 600 nodes. */
static const char stencil_pipe[] =
    "pipeline edge_stencil;\n"
    "input u16 in(70, 50);\n"
    "clamped = repeat_edge(in);\n"
    "out(x, y) = u16(clamped(x - 2, y - 2) + 2 * clamped(x - 1, y - 2) + 3 * clamped(x, y - 2) + "
    "4 * clamped(x + 1, y - 2) + 5 * clamped(x + 2, y - 2) + 6 * clamped(x - 2, y - 1) + 7 * clamped(x - 1, y - 1) + "
    "8 * clamped(x, y - 1) + 9 * clamped(x + 1, y - 1) + 10 * clamped(x + 2, y - 1) + 11 * clamped(x - 2, y) + "
    "12 * clamped(x - 1, y) + 13 * clamped(x, y) + 14 * clamped(x + 1, y) + 15 * clamped(x + 2, y) + "
    "16 * clamped(x - 2, y + 1) + 17 * clamped(x - 1, y + 1) + 18 * clamped(x, y + 1) + 19 * clamped(x + 1, y + 1) + "
    "20 * clamped(x + 2, y + 1) + 21 * clamped(x - 2, y + 2) + 22 * clamped(x - 1, y + 2) + "
    "23 * clamped(x, y + 2) + 24 * clamped(x + 1, y + 2) + 25 * clamped(x + 2, y + 2));\n"
    "output out(70, 50);\n";

/* No edges: a pointwise scale. */
static const char plain_pipe[] =
    "pipeline plain;\n"
    "input f32 in(64, 16);\n"
    "out(x, y) = in(x, y) * 2.0;\n"
    "output out(64, 16);\n";

typedef struct {
    const char *name, *pipe, *sched;
    const char *kernel;           /* the kernel checked for its interior copy */
    const char *condition;        /* its condition, or NULL: no copy */
    bool partial;                 /* some edges stay (too few blocks along x) */
    bool split;                   /* for a CPU, OpenCL launches its interior apart
                                     (a body of CG_SPLIT_NODES nodes or more, or a
                                     guarded store of 8 or 16 bits); where false, it
                                     may, and is checked the same way */
} shape;

static const shape shapes[] = {
    /* the edges: x = -1 and 100 (bx's blocks of 8 start at 0: the first
     * reads x - 1, the last is partial), y = -1 and 77 (blocks of 2 rows
     * from -1); small, but its u16 store is guarded: launched apart */
    { "blur_root", blur_pipe,
      "schedule edge_blur;\nout: root [x=8x1 y=1x1];\nbx: root [x=8x1 y=2x1];\nclamped: inline;\n",
      "bx_s0", "if (bx_x_b >= 8 && bx_x_b <= 88 && bx_y_b >= 1 && bx_y_b <= 75) {", false, true },
    /* bx at block level: two phases with a barrier in each copy */
    { "blur_block", blur_pipe,
      "schedule edge_blur;\nout: root [x=8x2 y=4x1];\nbx: block of out [x=16 y=1];\nclamped: inline;\n",
      "out_s0", "if (out_x_b >= 16 && out_x_b <= 80 && out_y_b >= 4 && out_y_b <= 72) {", false, true },
    { "blur_clamped_root", blur_pipe,
      "schedule edge_blur;\nout: root [x=4x2 y=2x2];\nbx: inline;\nclamped: root [x=16x1 y=1x1];\n",
      "clamped_s0", "if (clamped_x_b >= 15 && clamped_x_b <= 79 && clamped_y_b >= 0 && clamped_y_b <= 76) {", false, false },
    /* the select of constant_exterior, along y only */
    { "zero_root", zero_pipe,
      "schedule edge_zero;\nout: root [x=8x1 y=1x2];\npadded: inline;\n",
      "out_s0", "if (out_y_b >= 2 && out_y_b <= 26) {", false, false },
    { "barrier_phases", r41_pipe,
      "schedule random_41;\nscan9: root [x=32x1 y=1x3] [x=8x1] [x=8x1];\nup8: inline;\n"
      "sqrt7: block of scan9 [x=1 y=4];\nconv6: thread of sqrt7;\npad5: inline;\nrelu4: root [x=8x1 y=1x4];\n"
      "maxpool3: inline;\nact2: block of relu4 [x=1 y=1];\npad1: inline;\nluma0: inline;\n",
      "scan9_s0", "if (scan9_y_b >= 3 && scan9_y_b <= 15) {", true, false },
    { "cube", cube_pipe, "schedule edge_cube;\nout: root [x=4x1 y=2x2 c=1x2];\n", "out_s0",
      "if (out_x_b >= 4 && out_x_b <= 12 && out_y_b >= 4 && out_y_b <= 12 && out_c_b >= 2 && out_c_b <= 6) {",
      true, true },     /* c + 2 reaches past the interior's last c: its clamp stays */
    { "stencil_split", stencil_pipe, "schedule edge_stencil;\nout: root [x=16x1 y=4x2];\nclamped: inline;\n",
      "out_s0", "if (out_x_b >= 16 && out_x_b <= 48 && out_y_b >= 8 && out_y_b <= 40) {", false, true },
    { "plain", plain_pipe, "schedule plain;\nout: root [x=16x1 y=1x1];\n", "out_s0", NULL, false, false },
    { "one_block", blur_pipe,
      "schedule edge_blur;\nout: root [x=128x1 y=1x77];\nbx: inline;\nclamped: inline;\n", "out_s0", NULL, false, false },
};

/* The text of kernel `name` in the code, up to the next kernel's comment. */
static char *kernel_text(const char *code, const char *name) {
    char head[128];
    snprintf(head, sizeof head, "/* %s (", name);
    const char *s = strstr(code, head);
    if (!s) return NULL;
    const char *e = strstr(s + 1, "\n/* ");
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char *r = malloc(n + 1);
    if (!r) abort();
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* Whether the text of the code between from and to has edge handling:
 * a clamp, a select or a guard (a phase's `if (tid < n)` is none). */
static bool has_edges(const char *from, const char *to) {
    for (const char *w = from; w < to; w++)
        if (!strncmp(w, "sc_min_", 7) || !strncmp(w, "sc_max_", 7) || !strncmp(w, " ? ", 3) ||
            (!strncmp(w, "if (", 4) && strncmp(w, "if (tid < ", 10)))
            return true;
    return false;
}

static void check_copy(const shape *sh, const lower_program *prog) {
    char *code = cg_generate(prog, CG_OPENCL);
    char *k = code ? kernel_text(code, sh->kernel) : NULL;
    check_report(k != NULL, "%s: kernel %s in the OpenCL code", sh->name, sh->kernel);
    if (!k) {
        free(code);
        return;
    }
    const char *at = strstr(k, "/* interior blocks");
    if (!sh->condition) {
        check_report(!at, "%s: %s has no interior copy", sh->name, sh->kernel);
    } else {
        const char *c = strstr(k, sh->condition);
        check_report(c && at && c < at, "%s: %s's interior condition is '%s'", sh->name, sh->kernel, sh->condition);
        /* the interior copy, up to "} else {", decides every edge */
        const char *end = at ? strstr(at, "} else {") : NULL;
        bool clean = at && end && !sh->partial && !has_edges(at, end);
        if (!sh->partial)
            check_report(clean, "%s: no clamp, select or guard left in the interior copy of %s", sh->name,
                         sh->kernel);
        /* the general copy still has them */
        check_report(end && (strstr(end, "sc_min_") || strstr(end, " ? ")),
                     "%s: the general copy of %s keeps its edge handling", sh->name, sh->kernel);
    }
    free(k);
    free(code);
    code = cg_generate(prog, CG_C);
    check_report(code && !strstr(code, "/* interior blocks"), "%s: no interior copy in the C code", sh->name);
    free(code);
}

/* The shape lowered for a CPU: OpenCL launches the interior apart. */
static void check_split(const shape *sh, const lower_program *prog, sc_buffer *const *in, sc_buffer *const *ref) {
    cg_launch *l = NULL;
    int n = 0;
    char *code = cg_generate_launches(prog, CG_OPENCL, CG_MATH_EXACT, &l, &n);
    int kernel = -1;
    for (int i = 0; i < prog->nkernels; i++)
        if (!strcmp(prog->kernels[i]->name, sh->kernel)) kernel = i;
    int mine = 0, interior = -1, edge = -1;
    for (int i = 0; i < n; i++)
        if (l[i].kernel == kernel) {
            mine++;
            if (l[i].interior) interior = i;
            else edge = i;
        }
    check_report(code && kernel >= 0, "%s/cpu: %s in the OpenCL code", sh->name, sh->kernel);
    bool any = false;
    for (int i = 0; i < n; i++) any |= l[i].interior;
    check_report(any == cg_opencl_splits(prog), "%s/cpu: cg_opencl_splits", sh->name);
    bool splits = mine == 2;
    if (sh->split || !sh->condition)
        check_report(splits == sh->split, "%s/cpu: %s launched apart: %s", sh->name, sh->kernel,
                     sh->split ? "yes" : "no");
    if (!splits) {
        /* small: the interior copy in its branch, as on a GPU */
        char name[128];
        snprintf(name, sizeof name, "void %s%s(", sh->kernel, CG_INTERIOR_SUFFIX);
        check_report(mine == 1 && edge >= 0 && l[edge].nblocks == prog->kernels[kernel]->nblocks &&
                         !strstr(code, name),
                     "%s/cpu: %s launched once over its blocks", sh->name, sh->kernel);
    } else {
        bool two = mine == 2 && interior > edge && edge >= 0 &&
                   l[edge].nblocks + l[interior].nblocks == prog->kernels[kernel]->nblocks &&
                   l[edge].nblocks > 0 && l[interior].nblocks > 0;
        check_report(two, "%s/cpu: %s launched twice, the edge and the interior blocks, %lld blocks in all",
                     sh->name, sh->kernel, (long long)prog->kernels[kernel]->nblocks);
        char name[128];
        snprintf(name, sizeof name, "%s%s", sh->kernel, CG_INTERIOR_SUFFIX);
        char *k = code ? kernel_text(code, name) : NULL;
        const char *body = k ? strstr(k, "/* phase") : NULL;
        check_report(body && strstr(k, "bid_interior_") && (sh->partial || !has_edges(body, body + strlen(body))),
                     "%s/cpu: %s has no edge handling", sh->name, name);
        free(k);
        k = code ? kernel_text(code, sh->kernel) : NULL;
        check_report(k && strstr(k, "bid_edge_") && has_edges(strchr(k, '{'), k + strlen(k)),
                     "%s/cpu: %s runs the edge blocks with their edge handling", sh->name, sh->kernel);
        free(k);
    }
    free(code);
    free(l);
    char what[160];
    snprintf(what, sizeof what, "%s/cpu", sh->name);
    fixture_check_runs(devs, ndev, what, prog, in, ref);
}

static void run_shape(const shape *sh) {
    char err[8192] = "";
    fixture fx = fixture_load(sh->pipe);
    sched_state *s = sched_parse(fx.a, fx.p, sh->name, sh->sched, err, sizeof err);
    lower_program *prog = s ? lower_schedule(fx.a, fx.p, fx.b, s, err, sizeof err) : NULL;
    sc_buffer **in = NULL, **ref = NULL;
    if (!prog || measure_buffers_new(fx.p, 1, &in, &ref, err, sizeof err) != 0) {
        check_report(false, "%s: %s", sh->name, err);
        fixture_unload(&fx);
        return;
    }
    check_copy(sh, prog);
    fixture_check_runs(devs, ndev, sh->name, prog, in, ref);
    if (cuda.dev) {
        char *src = cg_generate(prog, CG_CUDA), opts[128];
        snprintf(opts, sizeof opts, "%s -arch=sm_80", cg_required_options(CG_CUDA));
        rt_module *m = cuda.ops->compile(cuda.dev, src, opts, err, sizeof err);
        check_report(m != NULL, "%s/cuda: compiles%s%s", sh->name, m ? "" : ": ", m ? "" : err);
        if (m) cuda.ops->module_free(m);
        free(src);
    }
    lower_program *cpu = lower_schedule_for(fx.a, fx.p, fx.b, s, true, err, sizeof err);
    check_report(cpu != NULL, "%s: lowered for a CPU%s%s", sh->name, cpu ? "" : ": ", cpu ? "" : err);
    if (cpu) check_split(sh, cpu, in, ref);
    measure_buffers_free(fx.p, in, ref);
    fixture_unload(&fx);
}

/* A row read through a table: data-dependent, never taken apart. */
static const char lut_pipe[] =
    "pipeline lut_rows;\n"
    "size W = 64;\n"
    "size H = 40;\n"
    "input u16 in(W, H);\n"
    "input u16 rows(H);\n"
    "out(x, y) = in(x, i32(rows(y)) % H) + in(x, min(max(y - 1, 0), H - 1));\n"
    "output out(W, H);\n";

/* The CPU's OpenCL code of sched: whether the text between from (a kernel
 * name) and the next kernel takes a row apart; NULL kernel: anywhere. */
static bool apart_in(const char *code, const char *kernel) {
    char *k = kernel ? kernel_text(code, kernel) : NULL;
    const char *t = kernel ? k : code;
    bool r = t && strstr(t, "_g + (") != NULL;
    free(k);
    return r;
}

/* want: some row taken apart; split: the kernel out_s0 launches its
 * interior apart (and that copy takes none apart). */
static void rows_apart_case(const char *name, const char *pipe, const char *sched, bool want, bool split) {
    fixture_lowered l = fixture_lower_both(pipe, name, sched);
    if (!l.ok) {
        fixture_lowered_free(&l);
        return;
    }
    const lower_program *cpu = l.cpu, *gpu = l.gpu;
    char *code = cg_generate(cpu, CG_OPENCL), *gcode = cg_generate(gpu, CG_OPENCL);
    check_report(code && apart_in(code, NULL) == want && (cg_opencl_rows_apart(cpu, NULL) > 0) == want,
                 "%s/cpu: rows taken apart: %s", name, want ? "yes" : "no");
    check_report(gcode && !apart_in(gcode, NULL) && cg_opencl_rows_apart(gpu, NULL) == 0,
                 "%s/gpu: no row taken apart", name);
    /* the interior kernel's rows are linear forms */
    char iname[128];
    snprintf(iname, sizeof iname, "out_s0%s", CG_INTERIOR_SUFFIX);
    char *ik = code ? kernel_text(code, iname) : NULL;
    check_report(code && !apart_in(code, iname) && (ik != NULL) == split, "%s/cpu: %s%s", name, iname,
                 split ? " launched apart, no row taken apart in it" : " not launched");
    free(ik);
    free(code);
    free(gcode);
    char what[160];
    snprintf(what, sizeof what, "%s/cpu", name);
    fixture_check_runs(devs, ndev, what, cpu, l.in, l.ref);
    fixture_lowered_free(&l);
}

static void test_rows_apart(void) {
    /* bx in out's threads: clamped rows at the top and bottom edges */
    rows_apart_case("rows_blur", blur_pipe,
                    "schedule edge_blur;\nout: root [x=16x1 y=1x4];\nbx: thread of out;\nclamped: inline;\n", true,
                    true);
    rows_apart_case("rows_lut", lut_pipe, "schedule lut_rows;\nout: root [x=16x1 y=1x8];\n", true, false);
    /* the table's row alone: nothing else clamped */
    static const char lut_only[] = "pipeline lut_only;\nsize W = 64;\nsize H = 40;\ninput u16 in(W, H);\n"
                                   "input u16 rows(H);\nout(x, y) = in(x, i32(rows(y)) % H);\noutput out(W, H);\n";
    rows_apart_case("rows_lut_only", lut_only, "schedule lut_only;\nout: root [x=16x1 y=1x2];\n", false, false);
}

/* Whether the CPU's OpenCL code of sched launches some interior apart,
 * and whether for a small kernel's guarded narrow store; never for a GPU. */
static void narrow_split_case(const char *name, const char *pipe, const char *sched, bool want) {
    fixture_lowered l = fixture_lower_both(pipe, name, sched);
    if (l.ok) {
        check_report(cg_opencl_splits(l.cpu) == want && cg_opencl_splits_narrow(l.cpu) == want,
                     "%s/cpu: launched apart for a guarded narrow store: %s", name, want ? "yes" : "no");
        check_report(!cg_opencl_splits(l.gpu) && !cg_opencl_splits_narrow(l.gpu), "%s/gpu: one launch", name);
    }
    fixture_lowered_free(&l);
}

static void test_narrow_splits(void) {
    /* u16, a partial tile along x (100 = 12 x 8 + 4) */
    narrow_split_case("narrow_partial", blur_pipe,
                      "schedule edge_blur;\nout: root [x=8x1 y=1x1];\nbx: root [x=8x1 y=2x1];\nclamped: inline;\n",
                      true);
    /* f32, a partial tile along x (40 = 2 x 16 + 8): AVX2 masks 32-bit stores */
    narrow_split_case("f32_partial", zero_pipe, "schedule edge_zero;\nout: root [x=16x1 y=1x1];\npadded: inline;\n",
                      false);
    /* u16 in whole tiles (96 = 6 x 16): edges, but no guard */
    static const char whole_pipe[] = "pipeline whole;\ninput u16 in(96, 32);\nclamped = repeat_edge(in);\n"
                                     "out(x, y) = clamped(x - 1, y) + clamped(x + 1, y - 1);\noutput out(96, 32);\n";
    narrow_split_case("narrow_whole", whole_pipe, "schedule whole;\nout: root [x=16x1 y=1x2];\nclamped: inline;\n",
                      false);
}

/* Three channels in blocks of two and a partial tile along x: the guard
 * `out_x < 100 && out_c < 3`.  Counted as one conditional (generation 21)
 * it was undecided in every block, for the last channel block, and no
 * block got an interior; counted by its conjuncts the blocks before x's
 * last decide `out_x < 100` and get an interior copy guarded by
 * `out_c < 3` alone (codegen.c, "Interior blocks"). */
static const char chan_pipe[] =
    "pipeline partial_guards;\n"
    "size W = 100;\n"
    "input u16 in(W, 20, 3);\n"
    "out(x, y, c) = u8(in(x, y, c) >> 8);\n"
    "output out(W, 20, 3);\n";

/* The interior copy of out_s0 in code, up to "} else {" or the kernel's
 * end: guarded by the channel alone. */
static bool channel_guard_only(const char *k, bool apart) {
    const char *at = k ? strstr(k, apart ? "/* phase" : "/* interior blocks") : NULL;
    const char *end = at ? strstr(at, apart ? "\n}\n" : "} else {") : NULL;
    if (!end)
        return false;
    bool c = false, x = false;
    for (const char *w = at; w < end; w++) {
        c |= !strncmp(w, "out_c < 3", 9);
        x |= !strncmp(w, "out_x < 100", 11);
    }
    return c && !x;
}

static void partial_guard_case(const char *name, const char *sched, bool apart) {
    fixture_lowered l = fixture_lower_both(chan_pipe, name, sched);
    if (!l.ok) {
        fixture_lowered_free(&l);
        return;
    }
    check_report(cg_decides_guards_apart(l.cpu, CG_OPENCL) == apart &&
                     cg_decides_guards_apart(l.gpu, CG_OPENCL) == apart &&
                     cg_decides_guards_apart(l.gpu, CG_CUDA) == apart && !cg_decides_guards_apart(l.cpu, CG_C),
                 "%s: generation 21's finder found %s interior (OpenCL, CUDA; C has none)", name,
                 apart ? "another" : "the same");
    if (apart) {
        char *gcode = cg_generate(l.gpu, CG_OPENCL), *code = cg_generate(l.cpu, CG_OPENCL);
        char *gk = gcode ? kernel_text(gcode, "out_s0") : NULL;
        char iname[64];
        snprintf(iname, sizeof iname, "out_s0%s", CG_INTERIOR_SUFFIX);
        char *ik = code ? kernel_text(code, iname) : NULL;
        check_report(gk && strstr(gk, "if (out_x_b <= 80) {") && channel_guard_only(gk, false),
                     "%s/gpu: out_s0's interior blocks, x's first six, guarded by the channel alone", name);
        check_report(ik && cg_opencl_splits(l.cpu) && channel_guard_only(ik, true),
                     "%s/cpu: %s launched apart, guarded by the channel alone", name, iname);
        free(gk);
        free(ik);
        free(gcode);
        free(code);
    }
    if (cuda.dev) {
        char err[8192], opts[128], *src = cg_generate(l.gpu, CG_CUDA);
        snprintf(opts, sizeof opts, "%s -arch=sm_80", cg_required_options(CG_CUDA));
        rt_module *m = cuda.ops->compile(cuda.dev, src, opts, err, sizeof err);
        check_report(m != NULL, "%s/cuda: compiles%s%s", name, m ? "" : ": ", m ? "" : err);
        if (m) cuda.ops->module_free(m);
        free(src);
    }
    fixture_check_runs(devs, ndev, name, l.gpu, l.in, l.ref);
    fixture_check_cpu_runs(devs, ndev, name, &l);
}

static void test_partial_guards(void) {
    partial_guard_case("partial_guard", "schedule partial_guards;\nout: root [x=16x1 y=1x1 c=2x1];\n", true);
    /* one channel a block: the guard is x's alone, the same either way */
    partial_guard_case("x_guard", "schedule partial_guards;\nout: root [x=16x1 y=1x1 c=1x1];\n", false);
    /* the channels in one block of four: `out_c < 3` in its only block */
    partial_guard_case("one_channel_block", "schedule partial_guards;\nout: root [x=16x1 y=1x1 c=4x1];\n", true);
}

int main(void) {
    ndev = fixture_open_devices(devs);
    test_rows_apart();
    test_narrow_splits();
    cuda = fixture_open_cuda();
    test_partial_guards();
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) run_shape(&shapes[i]);
    if (cuda.dev) cuda.ops->close(cuda.dev);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
