/*
 * rt.h - the runtime: devices that compile generated source, hold buffers,
 * launch kernels and time them.  Three back ends behind one interface (a
 * struct of function pointers), each in its own file: rt_c.c (system C
 * compiler + dlopen, blocks as an OpenMP loop), rt_opencl.c (the system's
 * OpenCL ICD, PoCL on machines without a GPU), rt_cuda.c (libnvrtc and
 * libcuda opened with dlopen, so the build never needs CUDA; with no GPU it
 * still compiles to SASS and reports registers and spills).
 *
 * Kernel ABI, the same for every back end: a kernel is launched over
 * `nblocks` blocks of `nthreads` threads (1-D; kernels decompose the
 * indices themselves) with a list of arguments, each a buffer or a 32-bit
 * scalar.
 *  - CUDA:   extern "C" __global__ void NAME(args...), grid (nblocks), block (nthreads).
 *  - OpenCL: __kernel void NAME(args...), global nblocks*nthreads, local nthreads.
 *  - C:      void NAME(int64_t nblocks, int32_t nthreads, void **args), where
 *            args[i] points to the argument: for a buffer, to its data pointer
 *            (a void *); for a scalar, to the int32_t or float.
 *
 * Errors are returned (-1, or NULL) with a message in err; a failed compile
 * carries the compiler's log.  Nothing here exits or aborts on user input.
 */
#ifndef SC_RT_H
#define SC_RT_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_device rt_device;
typedef struct rt_module rt_module;
typedef struct rt_buf rt_buf;

typedef enum { RT_ARG_BUF, RT_ARG_I32, RT_ARG_F32 } rt_arg_kind;

typedef struct {
    rt_arg_kind kind;
    rt_buf *buf;
    int32_t i;
    float f;
} rt_arg;

/* What the compiler says of one kernel (CUDA: from ptxas; others: what is
 * known, -1 where unknown). */
typedef struct {
    char name[128];
    int registers;
    int spill_store_bytes;
    int spill_load_bytes;
    int shared_bytes;       /* static shared memory */
    int local_bytes;        /* stack frame */
} rt_kernel_info;

typedef struct rt_ops {
    const char *name;                          /* "c", "opencl", "cuda" */
    /* Opens the first device of this kind; NULL with err if none. */
    rt_device *(*open)(char *err, size_t errlen);
    /* Closes the device; modules and buffers may be freed before or after
     * (each keeps what it needs alive). */
    void (*close)(rt_device *d);
    /* One line: the device and driver ("PoCL 3.1 pthread on AMD EPYC ..."). */
    const char *(*describe)(rt_device *d);
    /* Whether kernels can run here (CUDA without a GPU can only compile). */
    int (*can_run)(rt_device *d);
    /* Compiles source; options are back-end specific (may be NULL);
     * for CUDA, arch like "sm_80" is given in options as "-arch=sm_80". */
    rt_module *(*compile)(rt_device *d, const char *source, const char *options,
                          char *log, size_t loglen);
    void (*module_free)(rt_module *m);
    /* Per-kernel compile information; returns the count, fills *info
     * (caller frees with free()).  CUDA: every entry, from ptxas; OpenCL:
     * every kernel, local and private memory only; C: none (0). */
    int (*kernel_info)(rt_module *m, rt_kernel_info **info);
    rt_buf *(*alloc)(rt_device *d, size_t bytes, char *err, size_t errlen);
    void (*buf_free)(rt_buf *b);
    int (*write)(rt_buf *b, const void *src, size_t bytes, char *err, size_t errlen);
    int (*read)(rt_buf *b, void *dst, size_t bytes, char *err, size_t errlen);
    /* Enqueues a launch (may return before it finishes). */
    int (*launch)(rt_module *m, const char *kernel, int64_t nblocks, int nthreads,
                  int nargs, const rt_arg *args, char *err, size_t errlen);
    /* Waits for everything enqueued; -2 if it did not finish within
     * timeout_ms (the device is then unusable), -1 on another error.
     * timeout_ms <= 0: no limit.  read, write and timer_stop also wait for
     * earlier launches, within the last limit given here. */
    int (*finish)(rt_device *d, int timeout_ms, char *err, size_t errlen);
    /* Device-side timing of everything enqueued between timer_start and
     * timer_stop (events where the API has them), in milliseconds.
     * timer_start fails (-1 with err) on a device left unusable by an
     * earlier error, a time-out among them. */
    int (*timer_start)(rt_device *d, char *err, size_t errlen);
    double (*timer_stop)(rt_device *d);      /* < 0 on error; implies finish */
} rt_ops;

extern const rt_ops rt_c_ops;
extern const rt_ops rt_opencl_ops;
extern const rt_ops rt_cuda_ops;

/* What an OpenCL device says of itself, for the `host-opencl` target.
 * Fields it does not report are 0. */
typedef struct {
    char name[256];
    int is_gpu;
    int compute_units;
    int max_work_group_size;
    int max_work_item_sizes[3];
    int64_t local_mem_bytes;        /* per work-group ("shared") */
    int64_t global_mem_bytes;
    int64_t global_cache_bytes;     /* the nearest to an L2 size */
    int cache_line_bytes;
    int max_clock_mhz;
    int preferred_vector_width_float;
    /* The warp-like SIMD width: CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE
     * of a probe kernel, 32 if the device does not say. */
    int simd_width;
} rt_device_limits;

/* Fills *out for a device opened with rt_opencl_ops; 0, or -1 if d is not
 * a usable OpenCL device. */
int rt_opencl_query(rt_device *d, rt_device_limits *out);

/* What a CUDA GPU says of itself through the driver's attributes, for
 * the `host-cuda` target.  Fields the driver does not report are 0. */
typedef struct rt_cuda_limits {
    char name[200];
    int cc_major, cc_minor;
    int sm_count;
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int shared_per_block;           /* bytes, without opting in */
    int shared_per_sm;
    int shared_reserved_per_block;
    int registers_per_sm;
    int l2_bytes;
    int clock_khz;                  /* 0 where the driver no longer says */
    int mem_clock_khz;
    int bus_width_bits;
} rt_cuda_limits;

/* Fills *out for a device opened with rt_cuda_ops that can run kernels;
 * 0, or -1 (compile-only, or not a CUDA device). */
int rt_cuda_query(rt_device *d, rt_cuda_limits *out);

/* For the back ends: formats a message into err (nothing if err is NULL
 * or errlen 0). */
void rt_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* By name: "c", "opencl", "cuda"; NULL if unknown. */
const rt_ops *rt_ops_by_name(const char *name);
/* The names of the runtimes, best first, joined by sep, the last two by
 * last ("cuda, opencl or c"); buf is returned. */
const char *rt_ops_names(char *buf, size_t len, const char *sep, const char *last);

/* The best device found: the first CUDA GPU that can run, else the first
 * OpenCL device, else C.  Sets *ops and returns the opened device. */
rt_device *rt_open_best(const rt_ops **ops, char *err, size_t errlen);

#endif
