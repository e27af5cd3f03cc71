/*
 * cg_cuda.c - the CUDA C back end: one extern "C" __global__ function per
 * kernel (grid nblocks, block nthreads, __launch_bounds__ of it), static
 * __shared__ arrays, __syncthreads() between phases.  NVRTC has no
 * <stdint.h>, so under it the fixed-width types are typedef'd here; nvcc
 * includes the real header.
 *
 * Expected NVRTC / nvcc options: --fmad=false (no contraction into FMA,
 * which would change f32 results against the reference), --prec-div=true
 * --prec-sqrt=true (the defaults), never --use_fast_math or
 * --ftz=true; -arch=sm_XX as the runtime chooses.  Static shared memory is
 * limited to 48 KiB per block.
 */
#include "cg_backend.h"

static void cu_prologue(cg_ctx *g)
{
    cg_printf(g, "/* Build: --fmad=false --prec-div=true --prec-sqrt=true (no fast math). */\n"
                 "#ifdef __CUDACC_RTC__\n"
                 "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\n"
                 "typedef unsigned int uint32_t;\ntypedef signed char int8_t;\n"
                 "typedef short int16_t;\ntypedef int int32_t;\ntypedef long long int64_t;\n"
                 "#else\n#include <stdint.h>\n#endif\n"
                 "/* exp log pow sin cos tanh atan2 in double, rounded once to f32: the\n * same result on every back end and in the reference evaluator. */\n"
                 "__device__ inline float sc_expf(float x) { return (float)exp((double)x); }\n__device__ inline float sc_logf(float x) { return (float)log((double)x); }\n__device__ inline float sc_sinf(float x) { return (float)sin((double)x); }\n__device__ inline float sc_cosf(float x) { return (float)cos((double)x); }\n__device__ inline float sc_tanhf(float x) { return (float)tanh((double)x); }\n__device__ inline float sc_powf(float x, float y) { return (float)pow((double)x, (double)y); }\n__device__ inline float sc_atan2f(float y, float x) { return (float)atan2((double)y, (double)x); }\n");
}

static void cu_kernel_open(cg_ctx *g, const lower_kernel *k)
{
    /* CUDA blocks hold at most 1024 threads: a bigger block (a schedule
     * made for another target) gets no launch bound, and its launch fails
     * on a GPU with the driver's error instead of the compile failing. */
    if (k->nthreads <= 1024)
        cg_line(g, "extern \"C\" __global__ void __launch_bounds__(%d)", k->nthreads);
    else
        cg_line(g, "extern \"C\" __global__ void /* %d threads: over CUDA's 1024 */", k->nthreads);
    cg_printf(g, "%s(", cg_name(g, k->name));
    for (int i = 0; i < k->nargs; i++) {
        const lower_alloc *a = k->args[i];
        cg_printf(g, "%s%s%s *__restrict__ %s", i ? ",\n        " : "",
                  cg_stores_to(k, a) ? "" : "const ", cg_type(g, cg_alloc_type(a)),
                  cg_name(g, a->name));
    }
    for (int i = 0; i < k->nparams; i++)
        cg_printf(g, "%sconst %s %s", k->nargs + i ? ",\n        " : "",
                  cg_type(g, cg_param_abi_type(k->params[i])), cg_name(g, k->params[i]->name));
    cg_printf(g, ")\n{\n");
    cg_indent(g, 1);
    for (int i = 0; i < k->nshared; i++)
        cg_line(g, "__shared__ %s %s[%lld];", cg_type(g, cg_alloc_type(k->shared[i])),
                cg_name(g, k->shared[i]->name),
                (long long)(k->shared[i]->count > 0 ? k->shared[i]->count : 1));
    for (int i = 0; i < k->nargs + k->nparams; i++) {
        const void *x = i < k->nargs ? (const void *)k->args[i] : (const void *)k->params[i - k->nargs];
        if (!cg_printed(g, x))
            cg_line(g, "(void)%s;            /* unused here (its uses were constant) */",
                    cg_name(g, i < k->nargs ? k->args[i]->name : k->params[i - k->nargs]->name));
    }
    if (cg_printed_var(g, "bid"))
        cg_line(g, "const int32_t bid = (int32_t)blockIdx.x;");
    if (cg_printed_var(g, "tid"))
        cg_line(g, "const int32_t tid = (int32_t)threadIdx.x;");
}

static void cu_phase_open(cg_ctx *g, const lower_kernel *k, int phase)
{
    (void)k;
    cg_line(g, "/* phase %d */", phase);
    cg_line(g, "{");
    cg_indent(g, 1);
}

static void cu_phase_close(cg_ctx *g, const lower_kernel *k, int phase)
{
    cg_indent(g, -1);
    cg_line(g, "}");
    if (phase + 1 < k->nphases)
        cg_line(g, "__syncthreads();");
}

static void cu_kernel_close(cg_ctx *g, const lower_kernel *k)
{
    (void)k;
    cg_indent(g, -1);
    cg_line(g, "}");
}

const cg_target cg_target_cuda = {
    .name = "CUDA",
    .type = { [SC_BOOL] = "int", [SC_U8] = "uint8_t", [SC_U16] = "uint16_t",
              [SC_U32] = "uint32_t", [SC_I8] = "int8_t", [SC_I16] = "int16_t",
              [SC_I32] = "int32_t", [SC_F32] = "float" },
    .i64 = "int64_t",
    .fn_qual = "static __device__ __forceinline__",
    .math = { [SC_SQRT] = "sqrtf", [SC_EXP] = "sc_expf", [SC_LOG] = "sc_logf", [SC_POW] = "sc_powf",
              [SC_FLOOR] = "floorf", [SC_CEIL] = "ceilf", [SC_ROUND] = "rintf",
              [SC_SIN] = "sc_sinf", [SC_COS] = "sc_cosf", [SC_TANH] = "sc_tanhf",
              [SC_ATAN2] = "sc_atan2f", [SC_ABS] = "fabsf" },
    .fmin = "fminf",
    .fmax = "fmaxf",
    .inf = "__int_as_float(0x7f800000)",
    .nan = "__int_as_float(0x7fffffff)",
    .unroll = "#pragma unroll",
    .prologue = cu_prologue,
    .kernel_open = cu_kernel_open,
    .phase_open = cu_phase_open,
    .phase_close = cu_phase_close,
    .kernel_close = cu_kernel_close,
};
