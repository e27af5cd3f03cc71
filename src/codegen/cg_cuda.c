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
 *
 * Fast math (CG_MATH_FAST): the intrinsics __expf, __logf, __sinf, __cosf,
 * tanhf, atan2f and powf (__powf is exp2(y * log2(x)), NaN for a negative
 * base), with --fmad=true --prec-div=false --prec-sqrt=false; denormals
 * kept (--ftz=false), unlike --use_fast_math.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cg_backend.h"

static void cu_prologue(cg_ctx *g)
{
    cg_printf(g, "/* Build: %s (not --use_fast_math). */\n"
                 "#ifdef __CUDACC_RTC__\n"
                 "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\n"
                 "typedef unsigned int uint32_t;\ntypedef signed char int8_t;\n"
                 "typedef short int16_t;\ntypedef int int32_t;\ntypedef long long int64_t;\n"
                 "#else\n#include <stdint.h>\n#endif\n", cg_math_options(CG_CUDA, g->math));
    cg_math_prologue(g, "__device__ inline");
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
    cg_gpu_kernel_frame(g, k);
}

/* The host entry point (cg_host.c), for nvcc: NVRTC, which compiles only
 * device code, skips it.  Every declaration comes before the first goto
 * (C++ forbids jumping over an initialisation). */
static void cu_host(cg_ctx *g)
{
    const lower_program *prog = g->prog;
    cg_printf(g, "\n#ifndef __CUDACC_RTC__\n#include <cuda_runtime.h>\n");
    cg_host_open(g, "extern \"C\"",
                 "Runs on the current CUDA device, in the default stream, and returns once\n"
                 " * the outputs are copied back: cudaSuccess (0), or the first CUDA error\n"
                 " * (cudaGetErrorString names it).  Nothing is left allocated either way.");
    cg_line(g, "cudaError_t sc_rc = cudaSuccess;");
    for (int i = 0; i < prog->nbuffers; i++) {
        const lower_alloc *a = prog->buffers[i];
        cg_line(g, "%s *%s = NULL;", cg_type(g, cg_alloc_type(a)), cg_host_buf(g, a));
    }
    cg_host_params(g);
    static const char check[] = " != cudaSuccess) goto sc_done;";
    for (int i = 0; i < prog->nbuffers; i++) {
        const lower_alloc *a = prog->buffers[i];
        cg_line(g, "if ((sc_rc = cudaMalloc((void **)&%s, %" PRId64 "))%s", cg_host_buf(g, a),
                cg_host_bytes(a), check);
        if (a->func->kind == FUNC_INPUT)
            cg_line(g, "if ((sc_rc = cudaMemcpy(%s, %s, %" PRId64 ", cudaMemcpyHostToDevice))%s",
                    cg_host_buf(g, a), cg_name(g, a->func->name), cg_host_bytes(a), check);
    }
    for (int i = 0; i < prog->nkernels; i++) {
        const lower_kernel *k = prog->kernels[i];
        cg_put_indent(g);
        cg_printf(g, "%s<<<%" PRId64 ", %d>>>(", cg_name(g, k->name), k->nblocks, k->nthreads);
        cg_host_args(g, k, "");
        cg_printf(g, ");\n");
        cg_line(g, "if ((sc_rc = cudaGetLastError())%s", check);
    }
    cg_line(g, "if ((sc_rc = cudaDeviceSynchronize())%s", check);
    char copy[128];
    snprintf(copy, sizeof copy, "if ((sc_rc = cudaMemcpy(%%s, %%s, %%s, cudaMemcpyDeviceToHost))%s", check);
    for (int i = 0; i < prog->p->outputs.n; i++) {
        const sc_func *f = cg_host_func(prog, 1, i);
        cg_host_copy_out(g, f, cg_host_buffer_of(prog, f), copy);
    }
    cg_printf(g, "sc_done:\n");
    for (int i = 0; i < prog->nbuffers; i++)
        cg_line(g, "cudaFree(%s);", cg_host_buf(g, prog->buffers[i]));
    cg_line(g, "return (int)sc_rc;");
    cg_host_close(g);
    cg_printf(g, "#endif\n");
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
    .fast_math = { [SC_EXP] = "__expf", [SC_LOG] = "__logf", [SC_POW] = "powf", [SC_SIN] = "__sinf",
                   [SC_COS] = "__cosf", [SC_TANH] = "tanhf", [SC_ATAN2] = "atan2f" },
    .fmin = "fminf",
    .fmax = "fmaxf",
    .inf = "__int_as_float(0x7f800000)",
    .nan = "__int_as_float(0x7fffffff)",
    .unroll = "#pragma unroll",
    .interior = true,
    .prologue = cu_prologue,
    .kernel_open = cu_kernel_open,
    .phase_open = cg_gpu_phase_open,
    .phase_close = cg_gpu_phase_close,
    .kernel_close = cg_gpu_kernel_close,
    .host = cu_host,
    .gpu = { .global_qual = "", .restrict_qual = "__restrict__", .shared_qual = "__shared__",
             .index_type = "int32_t", .bid = "blockIdx.x", .tid = "threadIdx.x",
             .barrier = "__syncthreads();", .no_params = "" },
};
