/*
 * cg_opencl.c - the OpenCL C back end: one __kernel per kernel, a
 * work-group per block (required local size: the root phase's threads per
 * loop, lower_kernel.tdim, so that a thread's coordinates are its local
 * ids: PoCL vectorizes over local id 0 only when x = base + get_local_id(0)
 * and not base + tid % 16), local memory for shared arrays,
 * barrier(CLK_LOCAL_MEM_FENCE) between phases.  For a CPU target a large
 * kernel's interior blocks are a kernel of their own (codegen.c,
 * split_on_cpu): PoCL vectorizes each copy alone, not the two in a branch.
 * For a CPU target f32 min and max are clang's __builtin_fminf and
 * __builtin_fmaxf (the same results as fmin and fmax): PoCL's fmin and fmax
 * are a compare and a select, on which LLVM's SLP vectorizer seeded, packing
 * a work-item's unrolled points into short vectors that kept the work-item
 * loop from vectorizing (codegen.h, generation 12).
 *
 * Expected build options: -cl-fp32-correctly-rounded-divide-sqrt (OpenCL
 * otherwise allows 2.5 ulp division and 3 ulp sqrt), and none of
 * -cl-fast-relaxed-math, -cl-mad-enable, -cl-unsafe-math-optimizations,
 * -cl-finite-math-only (NaN tests in the casts).  FP_CONTRACT is switched
 * off in the source.  The math builtins (exp, log, pow, sin ...) are the
 * standard ones, not native_*, so within a few ulp of the C library.
 *
 * Fast math (CG_MATH_FAST): native_exp, native_log, native_sin,
 * native_cos (the device's fastest forms, accuracy implementation-defined),
 * the f32 builtins pow, tanh and atan2 (native_powr is defined only for
 * x >= 0, and pow of a negative base is part of the language), contraction
 * on (the OpenCL default), built with -cl-mad-enable; no double, so fast
 * code also runs on devices without cl_khr_fp64.
 */
#include "cg_backend.h"

static void cl_prologue(cg_ctx *g)
{
    cg_printf(g, "/* Build options: %s; no -cl-fast-relaxed-math. */\n", cg_math_options(CG_OPENCL, g->math));
    if (!cg_fast(g))
        cg_printf(g, "#pragma OPENCL FP_CONTRACT OFF\n"
                     "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    cg_math_prologue(g, "inline");
}

static void cl_kernel_open(cg_ctx *g, const lower_kernel *k)
{
    int T[3];
    cg_thread_layout(k, T);
    cg_line(g, "__kernel __attribute__((reqd_work_group_size(%d, %d, %d)))", T[0], T[1], T[2]);
    cg_printf(g, "void ");
    cg_gpu_kernel_frame(g, k);
}

const cg_target cg_target_opencl = {
    .name = "OpenCL",
    .type = { [SC_BOOL] = "int", [SC_U8] = "uchar", [SC_U16] = "ushort",
              [SC_U32] = "uint", [SC_I8] = "char", [SC_I16] = "short",
              [SC_I32] = "int", [SC_F32] = "float" },
    .i64 = "long",
    .fn_qual = "static inline",
    .math = { [SC_SQRT] = "sqrt", [SC_EXP] = "sc_expf", [SC_LOG] = "sc_logf", [SC_POW] = "sc_powf",
              [SC_FLOOR] = "floor", [SC_CEIL] = "ceil", [SC_ROUND] = "rint",
              [SC_SIN] = "sc_sinf", [SC_COS] = "sc_cosf", [SC_TANH] = "sc_tanhf",
              [SC_ATAN2] = "sc_atan2f", [SC_ABS] = "fabs" },
    .fast_math = { [SC_EXP] = "native_exp", [SC_LOG] = "native_log", [SC_POW] = "pow",
                   [SC_SIN] = "native_sin", [SC_COS] = "native_cos", [SC_TANH] = "tanh",
                   [SC_ATAN2] = "atan2" },
    .fmin = "fmin",
    .fmax = "fmax",
    .cpu_fmin = "__builtin_fminf",
    .cpu_fmax = "__builtin_fmaxf",
    .inf = "INFINITY",
    .nan = "NAN",
    /* PoCL runs a work-group as a loop over its work-items and vectorizes
     * that loop only where it is innermost: a thread's serial loop left
     * rolled (PoCL 3.1 does not unroll it first, not even a trip count of
     * 2) makes every work-item run alone, scalar (box_blur's blur_x, two
     * rows a thread in out's blocks: 8.2 ms rolled, 0.75 ms unrolled).
     * So unrolled loops carry the pragma.  They count from 0 and set the
     * variable in the body: PoCL's loopvec method miscompiled a pragma'd
     * loop whose start depended on the work-item (an in-place scan read
     * rows not yet stored; a stencil read a __local array before its phase
     * had filled it).  tests/test_opencl_shapes.c keeps both shapes.
     * Only loops of up to CG_OPENCL_UNROLL_NODES expression nodes
     * unrolled: PoCL's work-group compile of a bgu kernel whose 8 unrolled
     * points came to 33,405 nodes took 26 s at its first launch (0.8 s
     * rolled); 4,178 nodes 1.4 s, 1,756 nodes 0.5 s (docs/backends.md). */
    .unroll = "#pragma unroll",
    .unroll_counted = true,
    .unroll_nodes = CG_OPENCL_UNROLL_NODES,
    .interior = true,
    .row_apart_on_cpu = true,
    .select_pointer_on_cpu = true,
    .lane_select = "select",
    .split_on_cpu = true,
    .prologue = cl_prologue,
    .kernel_open = cl_kernel_open,
    .phase_open = cg_gpu_phase_open,
    .phase_close = cg_gpu_phase_close,
    .kernel_close = cg_gpu_kernel_close,
    .gpu = { .global_qual = "__global ", .restrict_qual = "restrict", .shared_qual = "__local",
             .index_type = "int", .bid = "get_group_id(0)", .tid = "get_local_id(0)", .local_id = "get_local_id",
             .barrier = "barrier(CLK_LOCAL_MEM_FENCE);", .no_params = "void" },
};
