/*
 * cg_opencl.c - the OpenCL C back end: one __kernel per kernel, a
 * work-group per block (local size nthreads, required), local memory for
 * shared arrays, barrier(CLK_LOCAL_MEM_FENCE) between phases.
 *
 * Expected build options: -cl-fp32-correctly-rounded-divide-sqrt (OpenCL
 * otherwise allows 2.5 ulp division and 3 ulp sqrt), and none of
 * -cl-fast-relaxed-math, -cl-mad-enable, -cl-unsafe-math-optimizations,
 * -cl-finite-math-only (NaN tests in the casts).  FP_CONTRACT is switched
 * off in the source.  The math builtins (exp, log, pow, sin ...) are the
 * standard ones, not native_*, so within a few ulp of the C library.
 */
#include "cg_backend.h"

static void cl_prologue(cg_ctx *g)
{
    cg_printf(g, "/* Build options: -cl-fp32-correctly-rounded-divide-sqrt; no fast or relaxed math. */\n"
                 "#pragma OPENCL FP_CONTRACT OFF\n"
                 "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                 "/* exp log pow sin cos tanh atan2 in double, rounded once to f32: the\n * same result on every back end and in the reference evaluator. */\n"
                 "inline float sc_expf(float x) { return (float)exp((double)x); }\ninline float sc_logf(float x) { return (float)log((double)x); }\ninline float sc_sinf(float x) { return (float)sin((double)x); }\ninline float sc_cosf(float x) { return (float)cos((double)x); }\ninline float sc_tanhf(float x) { return (float)tanh((double)x); }\ninline float sc_powf(float x, float y) { return (float)pow((double)x, (double)y); }\ninline float sc_atan2f(float y, float x) { return (float)atan2((double)y, (double)x); }\n");
}

static void cl_kernel_open(cg_ctx *g, const lower_kernel *k)
{
    cg_line(g, "__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))", k->nthreads);
    cg_printf(g, "void %s(", cg_name(g, k->name));
    for (int i = 0; i < k->nargs; i++) {
        const lower_alloc *a = k->args[i];
        cg_printf(g, "%s__global %s%s *restrict %s", i ? ",\n        " : "",
                  cg_stores_to(k, a) ? "" : "const ", cg_type(g, cg_alloc_type(a)),
                  cg_name(g, a->name));
    }
    for (int i = 0; i < k->nparams; i++)
        cg_printf(g, "%sconst %s %s", k->nargs + i ? ",\n        " : "",
                  cg_type(g, cg_param_abi_type(k->params[i])), cg_name(g, k->params[i]->name));
    cg_printf(g, "%s)\n{\n", k->nargs + k->nparams ? "" : "void");
    cg_indent(g, 1);
    for (int i = 0; i < k->nshared; i++)
        cg_line(g, "__local %s %s[%lld];", cg_type(g, cg_alloc_type(k->shared[i])),
                cg_name(g, k->shared[i]->name),
                (long long)(k->shared[i]->count > 0 ? k->shared[i]->count : 1));
    for (int i = 0; i < k->nargs + k->nparams; i++) {
        const void *x = i < k->nargs ? (const void *)k->args[i] : (const void *)k->params[i - k->nargs];
        if (!cg_printed(g, x))
            cg_line(g, "(void)%s;            /* unused here (its uses were constant) */",
                    cg_name(g, i < k->nargs ? k->args[i]->name : k->params[i - k->nargs]->name));
    }
    if (cg_printed_var(g, "bid"))
        cg_line(g, "const int bid = (int)get_group_id(0);");
    if (cg_printed_var(g, "tid"))
        cg_line(g, "const int tid = (int)get_local_id(0);");
}

static void cl_phase_open(cg_ctx *g, const lower_kernel *k, int phase)
{
    (void)k;
    cg_line(g, "/* phase %d */", phase);
    cg_line(g, "{");
    cg_indent(g, 1);
}

static void cl_phase_close(cg_ctx *g, const lower_kernel *k, int phase)
{
    cg_indent(g, -1);
    cg_line(g, "}");
    if (phase + 1 < k->nphases)
        cg_line(g, "barrier(CLK_LOCAL_MEM_FENCE);");
}

static void cl_kernel_close(cg_ctx *g, const lower_kernel *k)
{
    (void)k;
    cg_indent(g, -1);
    cg_line(g, "}");
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
    .fmin = "fmin",
    .fmax = "fmax",
    .inf = "INFINITY",
    .nan = "NAN",
    .unroll = "#pragma unroll",
    .prologue = cl_prologue,
    .kernel_open = cl_kernel_open,
    .phase_open = cl_phase_open,
    .phase_close = cl_phase_close,
    .kernel_close = cl_kernel_close,
};
