/*
 * test_rt.c - the runtime back ends on hand-written kernels: compile, run,
 * read back and check; compile errors carry the compiler's log; unknown
 * kernels and oversized blocks are errors; a runaway kernel on the C back
 * end is reported after its time limit and leaves the device unusable
 * without taking the process down.  CUDA is compiled through NVRTC (for
 * sm_80 and sm_90) and kernel_info is checked against ptxas's report; it
 * runs only where a GPU is present.
 *
 * Cases whose back end is genuinely absent (no OpenCL driver, no NVRTC)
 * print "PASS name (skipped: why)".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rt.h"

/* Leaks inside the drivers themselves (PoCL with its LLVM, NVRTC) are not
 * ours; LeakSanitizer reads this when the test is built with ASan. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl\nleak:libOpenCL\nleak:libLLVM\nleak:libclang\nleak:libnvrtc\n";
}

enum { N = 1000, BLOCK = 64 };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Runs the case, or, where its back end is not installed, says so. */
#define RUN_IF(have, why, fn) do {                                   \
        if (have) RUN(fn);                                           \
        else { printf("PASS %s (skipped: %s)\n", #fn, why); fflush(stdout); } \
    } while (0)

/* ---- C ---- */

static const char *c_saxpy_src =
    "#include <stdint.h>\n"
    "/* Blocks in parallel; within a block a phase fills the tile, then\n"
    " * (after the implicit barrier) each thread reads its neighbour's slot. */\n"
    "void saxpy(int64_t nblocks, int32_t nthreads, void **args)\n"
    "{\n"
    "    float *y = *(float **)args[0];\n"
    "    const float *x = *(float **)args[1];\n"
    "    float a = *(float *)args[2], b = *(float *)args[3];\n"
    "    int32_t n = *(int32_t *)args[4];\n"
    "    #pragma omp parallel for\n"
    "    for (int64_t blk = 0; blk < nblocks; blk++) {\n"
    "        float tile[1024];\n"
    "        for (int32_t t = 0; t < nthreads; t++) {\n"
    "            int64_t i = blk * nthreads + t;\n"
    "            tile[t] = i < n ? x[i] : 0.0f;\n"
    "        }\n"
    "        for (int32_t t = 0; t < nthreads; t++) {\n"
    "            int64_t i = blk * nthreads + t;\n"
    "            if (i < n) y[i] = a * tile[(t + 1) % nthreads] + b;\n"
    "        }\n"
    "    }\n"
    "}\n";

/* What every saxpy kernel here computes: the neighbour within the block. */
static float expect_saxpy(const float *x, int i, float a, float b)
{
    int blk = i / BLOCK, t = i % BLOCK;
    int j = blk * BLOCK + (t + 1) % BLOCK;
    return a * (j < N ? x[j] : 0.0f) + b;
}

/* Fills x, runs saxpy over ceil(N/BLOCK) blocks, checks y. */
static void run_saxpy(const rt_ops *ops, rt_device *d, rt_module *m)
{
    char err[512] = "";
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 17) - 8.0f;
    rt_buf *bx = ops->alloc(d, N * sizeof(float), err, sizeof err);
    rt_buf *by = ops->alloc(d, N * sizeof(float), err, sizeof err);
    CHECK(bx && by);
    if (!bx || !by) { fprintf(stderr, "alloc: %s\n", err); goto out; }
    CHECK(ops->write(bx, x, N * sizeof(float), err, sizeof err) == 0);
    rt_arg args[5] = {
        {.kind = RT_ARG_BUF, .buf = by}, {.kind = RT_ARG_BUF, .buf = bx},
        {.kind = RT_ARG_F32, .f = 2.5f}, {.kind = RT_ARG_F32, .f = -1.0f},
        {.kind = RT_ARG_I32, .i = N},
    };
    CHECK(ops->timer_start(d, err, sizeof err) == 0);
    for (int rep = 0; rep < 3; rep++) {
        int rc = ops->launch(m, "saxpy", (N + BLOCK - 1) / BLOCK, BLOCK, 5, args, err, sizeof err);
        CHECK(rc == 0);
        if (rc) fprintf(stderr, "launch: %s\n", err);
    }
    CHECK(ops->finish(d, 10000, err, sizeof err) == 0);
    double ms = ops->timer_stop(d);
    CHECK(ms >= 0);
    printf("# %s: 3 saxpy launches took %.3f ms\n", ops->name, ms);
    memset(y, 0, N * sizeof *y);
    CHECK(ops->read(by, y, N * sizeof(float), err, sizeof err) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += y[i] != expect_saxpy(x, i, 2.5f, -1.0f);
    CHECK(bad == 0);
    /* A copy larger than the buffer is refused. */
    CHECK(ops->read(by, y, (N + 1) * sizeof(float), err, sizeof err) == -1);
out:
    ops->buf_free(bx);
    ops->buf_free(by);
    free(x);
    free(y);
}

static void test_ops_by_name(void)
{
    CHECK(rt_ops_by_name("c") == &rt_c_ops);
    CHECK(rt_ops_by_name("opencl") == &rt_opencl_ops);
    CHECK(rt_ops_by_name("cuda") == &rt_cuda_ops);
    CHECK(rt_ops_by_name("metal") == NULL);
    CHECK(rt_ops_by_name(NULL) == NULL);
}

static void test_open_best(void)
{
    const rt_ops *ops = NULL;
    char err[512] = "";
    rt_device *d = rt_open_best(&ops, err, sizeof err);
    CHECK(d != NULL && ops != NULL);
    if (!d) { fprintf(stderr, "%s\n", err); return; }
    CHECK(ops->can_run(d));
    printf("# best device: %s: %s\n", ops->name, ops->describe(d));
    ops->close(d);
}

static void test_c_saxpy(void)
{
    char log[4096] = "";
    rt_device *d = rt_c_ops.open(log, sizeof log);
    CHECK(d != NULL);
    if (!d) return;
    CHECK(rt_c_ops.can_run(d));
    double t0 = now_ms();
    rt_module *m = rt_c_ops.compile(d, c_saxpy_src, NULL, log, sizeof log);
    printf("# c: compile took %.0f ms\n", now_ms() - t0);
    CHECK(m != NULL);
    if (!m) { fprintf(stderr, "%s\n", log); rt_c_ops.close(d); return; }
    rt_kernel_info *info = (rt_kernel_info *)1;
    CHECK(rt_c_ops.kernel_info(m, &info) == 0 && info == NULL);
    run_saxpy(&rt_c_ops, d, m);
    /* Freeing the module after the device is fine too. */
    rt_c_ops.close(d);
    rt_c_ops.module_free(m);
}

static void test_c_compile_error(void)
{
    char log[4096] = "";
    rt_device *d = rt_c_ops.open(log, sizeof log);
    CHECK(d != NULL);
    if (!d) return;
    rt_module *m = rt_c_ops.compile(d, "void k(void) { int x = ; }\n", NULL, log, sizeof log);
    CHECK(m == NULL);
    CHECK(strstr(log, "error") != NULL);
    CHECK(strstr(log, "kernels.c") != NULL);
    rt_c_ops.module_free(m);
    rt_c_ops.close(d);
}

static void test_c_unknown_kernel(void)
{
    char log[4096] = "", err[256] = "";
    rt_device *d = rt_c_ops.open(log, sizeof log);
    CHECK(d != NULL);
    if (!d) return;
    rt_module *m = rt_c_ops.compile(d, c_saxpy_src, NULL, log, sizeof log);
    CHECK(m != NULL);
    if (m) {
        CHECK(rt_c_ops.launch(m, "nope", 1, 1, 0, NULL, err, sizeof err) == -1);
        CHECK(strstr(err, "nope") != NULL);
        /* A symbol of a library the module uses is no kernel of it. */
        CHECK(rt_c_ops.launch(m, "printf", 1, 1, 0, NULL, err, sizeof err) == -1);
        CHECK(rt_c_ops.launch(m, "saxpy", 1, 0, 0, NULL, err, sizeof err) == -1);
        CHECK(rt_c_ops.finish(d, 1000, err, sizeof err) == 0);
    }
    rt_c_ops.module_free(m);
    rt_c_ops.close(d);
}

/* A kernel that runs past its limit but does end: the device is closed and
 * everything freed while it runs; the worker frees it all when the kernel
 * returns (ASan's leak check would see anything left). */
static void test_c_timeout_slow(void)
{
    static const char *src =
        "#define _POSIX_C_SOURCE 199309L\n"
        "#include <stdint.h>\n#include <time.h>\n"
        "void slow(int64_t nb, int32_t nt, void **args)\n"
        "{\n"
        "    (void)nb; (void)nt;\n"
        "    struct timespec ts = {0, 600000000L};\n"
        "    nanosleep(&ts, 0);\n"
        "    **(int **)args[0] = 7;\n"
        "}\n";
    char log[4096] = "", err[256] = "";
    rt_device *d = rt_c_ops.open(log, sizeof log);
    CHECK(d != NULL);
    if (!d) return;
    rt_module *m = rt_c_ops.compile(d, src, NULL, log, sizeof log);
    rt_buf *b = rt_c_ops.alloc(d, 4, err, sizeof err);
    CHECK(m != NULL && b != NULL);
    if (m && b) {
        rt_arg arg = {.kind = RT_ARG_BUF, .buf = b};
        CHECK(rt_c_ops.launch(m, "slow", 1, 1, 1, &arg, err, sizeof err) == 0);
        double t0 = now_ms();
        CHECK(rt_c_ops.finish(d, 100, err, sizeof err) == -2);
        CHECK(now_ms() - t0 < 500);
        CHECK(strstr(err, "slow") != NULL && strstr(err, "100 ms") != NULL);
        CHECK(!rt_c_ops.can_run(d));
        CHECK(rt_c_ops.launch(m, "slow", 1, 1, 1, &arg, err, sizeof err) == -1);
        CHECK(strstr(err, "unusable") != NULL);
    }
    rt_c_ops.buf_free(b);
    rt_c_ops.close(d);
    rt_c_ops.module_free(m);
    struct timespec ts = {0, 900000000L};
    nanosleep(&ts, NULL);
}

/* A kernel that never ends, on a 200 ms limit: the process lives on with a
 * spinning thread, so this runs last. */
static void test_c_timeout_infinite(void)
{
    static const char *src =
        "#include <stdint.h>\n"
        "void spin(int64_t nb, int32_t nt, void **args)\n"
        "{\n"
        "    (void)nb; (void)nt; (void)args;\n"
        "    volatile int go = 1;\n"
        "    while (go) { }\n"
        "}\n";
    char log[4096] = "", err[256] = "";
    rt_device *d = rt_c_ops.open(log, sizeof log);
    CHECK(d != NULL);
    if (!d) return;
    rt_module *m = rt_c_ops.compile(d, src, NULL, log, sizeof log);
    CHECK(m != NULL);
    if (m) {
        CHECK(rt_c_ops.launch(m, "spin", 1, 1, 0, NULL, err, sizeof err) == 0);
        double t0 = now_ms();
        int rc = rt_c_ops.finish(d, 200, err, sizeof err);
        double waited = now_ms() - t0;
        CHECK(rc == -2);
        CHECK(waited >= 190 && waited < 2000);
        CHECK(strstr(err, "kernel spin ran past the time limit of 200 ms") != NULL);
        printf("# c: %s (after %.0f ms)\n", err, waited);
        CHECK(rt_c_ops.finish(d, 200, err, sizeof err) == -1);
        CHECK(rt_c_ops.alloc(d, 4, err, sizeof err) == NULL);
        CHECK(rt_c_ops.compile(d, src, NULL, log, sizeof log) == NULL);
        CHECK(rt_c_ops.timer_stop(d) < 0);
    }
    rt_c_ops.module_free(m);
    rt_c_ops.close(d);
}

/* ---- OpenCL ---- */

static const char *cl_saxpy_src =
    "__kernel void saxpy(__global float *y, __global const float *x, float a, float b, int n)\n"
    "{\n"
    "    __local float tile[256];\n"
    "    int t = get_local_id(0), nt = get_local_size(0);\n"
    "    int i = get_group_id(0) * nt + t;\n"
    "    tile[t] = i < n ? x[i] : 0.0f;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (i < n) y[i] = a * tile[(t + 1) % nt] + b;\n"
    "}\n"
    "__kernel void other(__global int *p) { p[get_global_id(0)] = 1; }\n";

static rt_device *cl_open_or_skip(const char *name)
{
    char err[512] = "";
    rt_device *d = rt_opencl_ops.open(err, sizeof err);
    CHECK(d != NULL);
    if (!d) fprintf(stderr, "%s: %s\n", name, err);
    return d;
}

static void test_opencl_saxpy(void)
{
    rt_device *d = cl_open_or_skip("test_opencl_saxpy");
    if (!d) return;
    char log[8192] = "";
    printf("# opencl: %s\n", rt_opencl_ops.describe(d));
    CHECK(rt_opencl_ops.can_run(d));
    double t0 = now_ms();
    rt_module *m = rt_opencl_ops.compile(d, cl_saxpy_src, "-cl-std=CL1.2", log, sizeof log);
    printf("# opencl: compile took %.0f ms\n", now_ms() - t0);
    CHECK(m != NULL);
    if (!m) { fprintf(stderr, "%s\n", log); rt_opencl_ops.close(d); return; }
    run_saxpy(&rt_opencl_ops, d, m);
    rt_kernel_info *info = NULL;
    int n = rt_opencl_ops.kernel_info(m, &info);
    CHECK(n == 2);
    int found = 0;
    for (int i = 0; i < n; i++) {
        printf("# opencl kernel_info: %s local %d private %d registers %d\n", info[i].name,
               info[i].shared_bytes, info[i].local_bytes, info[i].registers);
        if (strcmp(info[i].name, "saxpy") == 0) {
            found = 1;
            CHECK(info[i].registers == -1);
            CHECK(info[i].shared_bytes == -1 || info[i].shared_bytes >= 1024);
        }
    }
    CHECK(found);
    free(info);
    rt_opencl_ops.module_free(m);
    rt_opencl_ops.close(d);
}

static void test_opencl_errors(void)
{
    rt_device *d = cl_open_or_skip("test_opencl_errors");
    if (!d) return;
    char log[8192] = "", err[512] = "";
    rt_module *bad = rt_opencl_ops.compile(d, "__kernel void k(__global int *p) { p[0] = undefined_name; }\n",
                                           NULL, log, sizeof log);
    CHECK(bad == NULL);
    CHECK(strstr(log, "undefined_name") != NULL);
    CHECK(strstr(log, "error") != NULL);
    rt_module *m = rt_opencl_ops.compile(d, cl_saxpy_src, NULL, log, sizeof log);
    CHECK(m != NULL);
    if (m) {
        CHECK(rt_opencl_ops.launch(m, "nope", 1, 1, 0, NULL, err, sizeof err) == -1);
        CHECK(strstr(err, "unknown kernel nope") != NULL);
        rt_device_limits lim;
        CHECK(rt_opencl_query(d, &lim) == 0);
        rt_buf *b = rt_opencl_ops.alloc(d, 16, err, sizeof err);
        CHECK(b != NULL);
        rt_arg arg = {.kind = RT_ARG_BUF, .buf = b};
        int rc = rt_opencl_ops.launch(m, "other", 1, lim.max_work_group_size + 1, 1, &arg, err, sizeof err);
        CHECK(rc == -1);
        CHECK(strstr(err, "work-group size") != NULL);
        /* A missing argument is reported by the driver, not a crash. */
        CHECK(rt_opencl_ops.launch(m, "saxpy", 1, 1, 1, &arg, err, sizeof err) == -1);
        fprintf(stderr, "expected: %s\n", err);
        CHECK(rt_opencl_ops.finish(d, 5000, err, sizeof err) == 0);
        rt_opencl_ops.buf_free(b);
    }
    rt_opencl_ops.module_free(m);
    rt_opencl_ops.close(d);
}

static void test_opencl_query(void)
{
    rt_device *d = cl_open_or_skip("test_opencl_query");
    if (!d) return;
    rt_device_limits lim;
    CHECK(rt_opencl_query(d, &lim) == 0);
    CHECK(lim.name[0] != '\0');
    CHECK(lim.compute_units >= 1);
    CHECK(lim.max_work_group_size >= 1);
    CHECK(lim.local_mem_bytes > 0 && lim.global_mem_bytes > 0);
    CHECK(lim.simd_width >= 1);
    printf("# opencl limits: %s: %d CUs, wg %d, local %lld, global %lld, cache %lld, line %d, "
           "%d MHz, simd %d, vec %d, gpu %d\n", lim.name, lim.compute_units,
           lim.max_work_group_size, (long long)lim.local_mem_bytes, (long long)lim.global_mem_bytes,
           (long long)lim.global_cache_bytes, lim.cache_line_bytes, lim.max_clock_mhz,
           lim.simd_width, lim.preferred_vector_width_float, lim.is_gpu);
    rt_opencl_ops.close(d);
    /* Not an OpenCL device. */
    char err[256];
    rt_device *c = rt_c_ops.open(err, sizeof err);
    CHECK(c && rt_opencl_query(c, &lim) == -1);
    rt_c_ops.close(c);
}

/* ---- CUDA ---- */

static const char *cu_saxpy_src =
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a, float b, int n)\n"
    "{\n"
    "    __shared__ float tile[256];\n"
    "    int t = threadIdx.x, nt = blockDim.x;\n"
    "    int i = blockIdx.x * nt + t;\n"
    "    tile[t] = i < n ? x[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    if (i < n) y[i] = a * tile[(t + 1) % nt] + b;\n"
    "}\n";

/* Keeps 64 values live across a loop: with few registers it must spill. */
static const char *cu_spill_src =
    "extern \"C\" __global__ void big(float *y, const float *x, int n)\n"
    "{\n"
    "    float r[64];\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < 64; j++) r[j] = x[threadIdx.x * 64 + j] * j;\n"
    "    float s = 0;\n"
    "    for (int k = 0; k < n; k++) {\n"
    "        #pragma unroll\n"
    "        for (int j = 0; j < 64; j++) s += r[j] * r[(j + k) & 63];\n"
    "    }\n"
    "    y[threadIdx.x] = s;\n"
    "}\n";

static rt_device *cu_open_or_skip(const char *name)
{
    char err[512] = "";
    rt_device *d = rt_cuda_ops.open(err, sizeof err);
    CHECK(d != NULL);
    if (!d) fprintf(stderr, "%s: %s\n", name, err);
    return d;
}

/* The entry of that name in a kernel_info list, or NULL. */
static const rt_kernel_info *find_info(const rt_kernel_info *info, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(info[i].name, name) == 0) return &info[i];
    return NULL;
}

static void cuda_compile_for(const char *arch)
{
    rt_device *d = cu_open_or_skip(arch);
    if (!d) return;
    printf("# cuda: %s\n", rt_cuda_ops.describe(d));
    char log[8192] = "", opts[64];
    snprintf(opts, sizeof opts, "-arch=%s", arch);
    double t0 = now_ms();
    rt_module *m = rt_cuda_ops.compile(d, cu_saxpy_src, opts, log, sizeof log);
    printf("# cuda: compile for %s took %.0f ms\n", arch, now_ms() - t0);
    CHECK(m != NULL);
    if (!m) { fprintf(stderr, "%s\n", log); rt_cuda_ops.close(d); return; }
    rt_kernel_info *info = NULL;
    int n = rt_cuda_ops.kernel_info(m, &info);
    CHECK(n == 1);
    const rt_kernel_info *k = find_info(info, n, "saxpy");
    CHECK(k != NULL);
    if (k) {
        printf("# cuda %s kernel_info: %s: %d registers, %d B spill stores, %d B spill loads, "
               "%d B smem, %d B stack\n", arch, k->name, k->registers, k->spill_store_bytes,
               k->spill_load_bytes, k->shared_bytes, k->local_bytes);
        CHECK(k->registers >= 1);
        CHECK(k->spill_store_bytes >= 0 && k->spill_load_bytes >= 0);
        CHECK(k->shared_bytes == 1024);
        CHECK(k->local_bytes >= 0);
    }
    free(info);
    char own[40];
    snprintf(own, sizeof own, "(%s)", arch);
    if (rt_cuda_ops.can_run(d) && strstr(rt_cuda_ops.describe(d), own)) {
        run_saxpy(&rt_cuda_ops, d, m);     /* the GPU's own architecture */
    } else if (!rt_cuda_ops.can_run(d)) {
        char err[256] = "";
        CHECK(rt_cuda_ops.alloc(d, 16, err, sizeof err) == NULL);
        CHECK(strstr(err, "no CUDA GPU: compile-only") != NULL);
        CHECK(rt_cuda_ops.launch(m, "saxpy", 1, 1, 0, NULL, err, sizeof err) == -1);
        CHECK(strstr(err, "compile-only") != NULL);
    }
    rt_cuda_ops.module_free(m);
    rt_cuda_ops.close(d);
}

static void test_cuda_sm80(void) { cuda_compile_for("sm_80"); }
static void test_cuda_sm90(void) { cuda_compile_for("sm_90"); }

static void test_cuda_spills(void)
{
    rt_device *d = cu_open_or_skip("test_cuda_spills");
    if (!d) return;
    char log[8192] = "";
    rt_module *m = rt_cuda_ops.compile(d, cu_spill_src, "-arch=sm_80 -maxrregcount=24", log, sizeof log);
    CHECK(m != NULL);
    if (m) {
        rt_kernel_info *info = NULL;
        int n = rt_cuda_ops.kernel_info(m, &info);
        const rt_kernel_info *k = find_info(info, n, "big");
        CHECK(k != NULL);
        if (k) {
            printf("# cuda spill kernel_info: %s: %d registers, %d B spill stores, %d B spill loads, "
                   "%d B stack\n", k->name, k->registers, k->spill_store_bytes,
                   k->spill_load_bytes, k->local_bytes);
            CHECK(k->registers >= 1 && k->registers <= 24);
            CHECK(k->spill_store_bytes > 0 && k->spill_load_bytes > 0);
            CHECK(k->local_bytes >= k->spill_store_bytes);
        }
        free(info);
    }
    rt_cuda_ops.module_free(m);
    rt_cuda_ops.close(d);
}

/* A virtual architecture makes no SASS inside NVRTC: the report then comes
 * from the ptxas binary, when one is installed. */
static void test_cuda_virtual_arch(void)
{
    rt_device *d = cu_open_or_skip("test_cuda_virtual_arch");
    if (!d) return;
    char log[8192] = "";
    rt_module *m = rt_cuda_ops.compile(d, cu_saxpy_src, "-arch=compute_80", log, sizeof log);
    CHECK(m != NULL);
    if (m) {
        rt_kernel_info *info = NULL;
        int n = rt_cuda_ops.kernel_info(m, &info);
        const rt_kernel_info *k = find_info(info, n, "saxpy");
        CHECK(k != NULL);
        if (k && access("/usr/local/cuda/bin/ptxas", X_OK) == 0) {
            CHECK(k->registers >= 1);
            CHECK(k->shared_bytes == 1024);
        }
        free(info);
    }
    rt_cuda_ops.module_free(m);
    rt_cuda_ops.close(d);
}

static void test_cuda_errors(void)
{
    rt_device *d = cu_open_or_skip("test_cuda_errors");
    if (!d) return;
    char log[8192] = "";
    rt_module *m = rt_cuda_ops.compile(d, "extern \"C\" __global__ void k(int *p) { p[0] = 1 }\n",
                                       "-arch=sm_80", log, sizeof log);
    CHECK(m == NULL);
    CHECK(strstr(log, "error") != NULL);
    CHECK(strstr(log, "kernels.cu") != NULL);
    m = rt_cuda_ops.compile(d, cu_saxpy_src, "--no-such-option", log, sizeof log);
    CHECK(m == NULL);
    CHECK(strstr(log, "no-such-option") != NULL);
    rt_cuda_ops.close(d);
}

/* The size of a file, -1 if absent. */
static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* The one *.nvrtc file in dir, or "" (count in *n). */
static void cache_file(const char *dir, char *path, size_t len, int *n)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/*.nvrtc 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    path[0] = 0;
    *n = 0;
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        if (!(*n)++) snprintf(path, len, "%s", line);
    }
    if (p) pclose(p);
}

/* The compile cache: a second compile of the same source and options reads
 * what the first wrote (the same kernel report); a cut file is compiled
 * again and rewritten whole; "off" writes nothing; other options, another
 * file. */
static void test_cuda_cache(void)
{
    rt_device *d = cu_open_or_skip("test_cuda_cache");
    if (!d) return;
    char dir[] = "/tmp/sc_cucache_XXXXXX", log[8192], path[512];
    CHECK(mkdtemp(dir) != NULL);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/nested", dir);
    setenv("STAGECRAFT_CUDA_CACHE", sub, 1);
    rt_kernel_info *a = NULL, *b = NULL;
    rt_module *m = rt_cuda_ops.compile(d, cu_saxpy_src, "-arch=sm_80", log, sizeof log);
    CHECK(m != NULL && rt_cuda_ops.kernel_info(m, &a) == 1);
    rt_cuda_ops.module_free(m);
    int n = 0;
    cache_file(sub, path, sizeof path, &n);
    CHECK(n == 1);
    long whole = file_size(path);
    CHECK(whole > 100);
    double t0 = now_ms();
    m = rt_cuda_ops.compile(d, cu_saxpy_src, "-arch=sm_80", log, sizeof log);
    printf("# cuda: a cached compile took %.1f ms\n", now_ms() - t0);
    CHECK(m != NULL && rt_cuda_ops.kernel_info(m, &b) == 1);
    if (a && b) CHECK(a[0].registers == b[0].registers && b[0].shared_bytes == 1024 && !strcmp(b[0].name, "saxpy"));
    if (m && rt_cuda_ops.can_run(d) && strstr(rt_cuda_ops.describe(d), "(sm_80)")) run_saxpy(&rt_cuda_ops, d, m);
    rt_cuda_ops.module_free(m);
    free(b);
    b = NULL;
    CHECK(truncate(path, whole / 2) == 0);
    m = rt_cuda_ops.compile(d, cu_saxpy_src, "-arch=sm_80", log, sizeof log);
    CHECK(m != NULL && rt_cuda_ops.kernel_info(m, &b) == 1 && b && b[0].registers == a[0].registers);
    rt_cuda_ops.module_free(m);
    /* rewritten whole: the size of the first write, give or take ptxas'
     * log, which states its own compile time */
    long again = file_size(path);
    CHECK(again > whole / 2 && labs(again - whole) < 64);
    m = rt_cuda_ops.compile(d, cu_saxpy_src, "-arch=sm_90", log, sizeof log);
    CHECK(m != NULL);
    rt_cuda_ops.module_free(m);
    cache_file(sub, path, sizeof path, &n);
    CHECK(n == 2);
    setenv("STAGECRAFT_CUDA_CACHE", "off", 1);
    m = rt_cuda_ops.compile(d, cu_saxpy_src, "-arch=sm_75", log, sizeof log);
    CHECK(m != NULL);
    rt_cuda_ops.module_free(m);
    cache_file(sub, path, sizeof path, &n);
    CHECK(n == 2);
    unsetenv("STAGECRAFT_CUDA_CACHE");
    free(a);
    free(b);
    rt_cuda_ops.close(d);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    char no_cl[512] = "", no_cu[512] = "";
    rt_device *probe = rt_opencl_ops.open(no_cl, sizeof no_cl);
    int have_cl = probe != NULL;
    rt_opencl_ops.close(probe);
    probe = rt_cuda_ops.open(no_cu, sizeof no_cu);
    int have_cu = probe != NULL;
    rt_cuda_ops.close(probe);

    RUN(test_ops_by_name);
    RUN(test_open_best);
    RUN(test_c_saxpy);
    RUN(test_c_compile_error);
    RUN(test_c_unknown_kernel);
    RUN(test_c_timeout_slow);
    RUN_IF(have_cl, no_cl, test_opencl_saxpy);
    RUN_IF(have_cl, no_cl, test_opencl_errors);
    RUN_IF(have_cl, no_cl, test_opencl_query);
    RUN_IF(have_cu, no_cu, test_cuda_sm80);
    RUN_IF(have_cu, no_cu, test_cuda_sm90);
    RUN_IF(have_cu, no_cu, test_cuda_spills);
    RUN_IF(have_cu, no_cu, test_cuda_virtual_arch);
    RUN_IF(have_cu, no_cu, test_cuda_errors);
    RUN_IF(have_cu, no_cu, test_cuda_cache);
    RUN(test_c_timeout_infinite);
    CHECK_EXIT();
}
