/*
 * rt_cuda.c - the CUDA back end: NVRTC compiles, the driver API runs.  Both
 * libraries are opened with dlopen, so that stagecraft builds and runs
 * without CUDA; the few types and constants we need are declared here
 * rather than taken from cuda.h.
 *
 * Where NVRTC is present but no driver or GPU is (libcuda.so.1 missing,
 * cuInit failing, no device), the device opens in compile-only mode: code
 * still compiles to SASS, and kernel_info reports what ptxas says of each
 * kernel (registers, spills, shared memory, stack), which the post-compile
 * spill filter of Anderson et al. 2021 (section 8.1) reads.  That
 * information comes from NVRTC's own log with -Xptxas=-v, else from running
 * the ptxas binary on the PTX, else only the kernel names are known.
 *
 * A kernel is `extern "C" __global__ void NAME(args...)` launched over
 * (nblocks) blocks of (nthreads) threads on the legacy default stream;
 * finish() polls that stream so it can give up after a time limit.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
typedef void *nvrtcProgram;
typedef int nvrtcResult;

enum {
    CUDA_SUCCESS_ = 0,
    CUDA_ERROR_NOT_READY_ = 600,
    CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    CU_ATTR_MAX_GRID_DIM_X = 5,
    CU_ATTR_SHARED_PER_BLOCK = 8,
    CU_ATTR_WARP_SIZE = 10,
    CU_ATTR_CLOCK_KHZ = 13,
    CU_ATTR_SM_COUNT = 16,
    CU_ATTR_MEM_CLOCK_KHZ = 36,
    CU_ATTR_BUS_WIDTH = 37,
    CU_ATTR_L2_BYTES = 38,
    CU_ATTR_MAX_THREADS_PER_SM = 39,
    CU_ATTR_SHARED_PER_SM = 81,
    CU_ATTR_REGISTERS_PER_SM = 82,
    CU_ATTR_MAX_BLOCKS_PER_SM = 106,
    CU_ATTR_SHARED_RESERVED_PER_BLOCK = 111,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    NVRTC_SUCCESS_ = 0,
    NVRTC_ERROR_INVALID_OPTION_ = 5,
};

static struct {
    void *lib;
    char err[256];
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);   /* CUDA >= 11.1 */
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    int major, minor;
} nv;

static struct {
    void *lib;
    char err[256];
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*StreamQuery)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorString)(CUresult, const char **);
} cu;

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

typedef struct {
    char *name;
    CUfunction f;
} cuda_kentry;

struct rt_device {
    int refs;                   /* user + modules + buffers */
    int can_run;
    int broken;                 /* a kernel ran past its limit or faulted */
    char broken_msg[256];
    char why_not[256];          /* why compile-only */
    CUdevice dev;
    CUcontext ctx;
    int cc_major, cc_minor;
    int max_threads, max_grid_x;
    CUevent ev_start, ev_stop;
    int timing;
    int limit_ms;               /* last finish limit, for read/write/timer */
    char last_name[128];
    char desc[320];
};

struct rt_module {
    rt_device *d;
    char *ptx;
    char *cubin;                /* NULL for a virtual arch (compute_XX) */
    char arch[32];
    rt_kernel_info *info;
    int ninfo;
    CUmodule mod;               /* loaded at the first launch */
    cuda_kentry *kernels;
    int nkernels, cap;
};

struct rt_buf {
    rt_device *d;
    CUdeviceptr p;
    size_t bytes;
};

static const char *cuda_status(CUresult rc)
{
    const char *s = NULL;
    if (cu.GetErrorString && cu.GetErrorString(rc, &s) == CUDA_SUCCESS_ && s) return s;
    return "CUDA driver error";
}

/* dlsym into a function pointer field; remembers the first one missing. */
static void cuda_sym(void *lib, void *field, const char *name, const char **missing)
{
    void *p = dlsym(lib, name);
    if (!p && !*missing) *missing = name;
    memcpy(field, &p, sizeof p);
}

/* Opens NVRTC and the driver, once per process; they stay loaded. */
static void cuda_load_once(void)
{
    char alt[512] = "";
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home) home = getenv("CUDA_PATH");
    if (home && *home) snprintf(alt, sizeof alt, "%s/lib64/libnvrtc.so", home);
    const char *names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                           alt, "/usr/local/cuda/lib64/libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !nv.lib; i++)
        if (names[i][0]) nv.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv.lib) {
        snprintf(nv.err, sizeof nv.err, "no NVRTC: cannot load libnvrtc.so (%s)", dlerror());
    } else {
        const char *missing = NULL;
        cuda_sym(nv.lib, &nv.GetErrorString, "nvrtcGetErrorString", &missing);
        cuda_sym(nv.lib, &nv.Version, "nvrtcVersion", &missing);
        cuda_sym(nv.lib, &nv.CreateProgram, "nvrtcCreateProgram", &missing);
        cuda_sym(nv.lib, &nv.DestroyProgram, "nvrtcDestroyProgram", &missing);
        cuda_sym(nv.lib, &nv.CompileProgram, "nvrtcCompileProgram", &missing);
        cuda_sym(nv.lib, &nv.GetProgramLogSize, "nvrtcGetProgramLogSize", &missing);
        cuda_sym(nv.lib, &nv.GetProgramLog, "nvrtcGetProgramLog", &missing);
        cuda_sym(nv.lib, &nv.GetPTXSize, "nvrtcGetPTXSize", &missing);
        cuda_sym(nv.lib, &nv.GetPTX, "nvrtcGetPTX", &missing);
        if (missing) {
            snprintf(nv.err, sizeof nv.err, "no NVRTC: libnvrtc lacks %s", missing);
            dlclose(nv.lib);
            nv.lib = NULL;
        } else {
            const char *opt = NULL;   /* optional: older NVRTC has no CUBIN */
            cuda_sym(nv.lib, &nv.GetCUBINSize, "nvrtcGetCUBINSize", &opt);
            cuda_sym(nv.lib, &nv.GetCUBIN, "nvrtcGetCUBIN", &opt);
            nv.Version(&nv.major, &nv.minor);
        }
    }

    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(cu.err, sizeof cu.err, "no CUDA driver (libcuda.so.1 not found)");
        return;
    }
    const char *missing = NULL;
    cuda_sym(cu.lib, &cu.Init, "cuInit", &missing);
    cuda_sym(cu.lib, &cu.DriverGetVersion, "cuDriverGetVersion", &missing);
    cuda_sym(cu.lib, &cu.DeviceGetCount, "cuDeviceGetCount", &missing);
    cuda_sym(cu.lib, &cu.DeviceGet, "cuDeviceGet", &missing);
    cuda_sym(cu.lib, &cu.DeviceGetName, "cuDeviceGetName", &missing);
    cuda_sym(cu.lib, &cu.DeviceGetAttribute, "cuDeviceGetAttribute", &missing);
    cuda_sym(cu.lib, &cu.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", &missing);
    cuda_sym(cu.lib, &cu.PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", &missing);
    cuda_sym(cu.lib, &cu.CtxSetCurrent, "cuCtxSetCurrent", &missing);
    cuda_sym(cu.lib, &cu.CtxSynchronize, "cuCtxSynchronize", &missing);
    cuda_sym(cu.lib, &cu.ModuleLoadData, "cuModuleLoadData", &missing);
    cuda_sym(cu.lib, &cu.ModuleUnload, "cuModuleUnload", &missing);
    cuda_sym(cu.lib, &cu.ModuleGetFunction, "cuModuleGetFunction", &missing);
    cuda_sym(cu.lib, &cu.LaunchKernel, "cuLaunchKernel", &missing);
    cuda_sym(cu.lib, &cu.MemAlloc, "cuMemAlloc_v2", &missing);
    cuda_sym(cu.lib, &cu.MemFree, "cuMemFree_v2", &missing);
    cuda_sym(cu.lib, &cu.MemcpyHtoD, "cuMemcpyHtoD_v2", &missing);
    cuda_sym(cu.lib, &cu.MemcpyDtoH, "cuMemcpyDtoH_v2", &missing);
    cuda_sym(cu.lib, &cu.StreamQuery, "cuStreamQuery", &missing);
    cuda_sym(cu.lib, &cu.EventCreate, "cuEventCreate", &missing);
    cuda_sym(cu.lib, &cu.EventRecord, "cuEventRecord", &missing);
    cuda_sym(cu.lib, &cu.EventDestroy, "cuEventDestroy_v2", &missing);
    cuda_sym(cu.lib, &cu.GetErrorString, "cuGetErrorString", &missing);
    /* cuEventElapsedTime became _v2 in CUDA 12.8; older drivers lack it. */
    const char *opt = NULL;
    cuda_sym(cu.lib, &cu.EventElapsedTime, "cuEventElapsedTime_v2", &opt);
    if (!cu.EventElapsedTime)
        cuda_sym(cu.lib, &cu.EventElapsedTime, "cuEventElapsedTime", &missing);
    if (missing) {
        snprintf(cu.err, sizeof cu.err, "CUDA driver too old: libcuda.so.1 lacks %s", missing);
        dlclose(cu.lib);
        cu.lib = NULL;
    }
}

/* Finds the first GPU and retains its primary context; 0, or -1 with the
 * reason in d->why_not. */
static int cuda_attach(rt_device *d)
{
    if (!cu.lib) { snprintf(d->why_not, sizeof d->why_not, "%s", cu.err); return -1; }
    CUresult rc = cu.Init(0);
    int n = 0;
    if (rc == CUDA_SUCCESS_) rc = cu.DeviceGetCount(&n);
    if (rc != CUDA_SUCCESS_ || n == 0) {
        snprintf(d->why_not, sizeof d->why_not, "no CUDA GPU (%s)",
                 rc != CUDA_SUCCESS_ ? cuda_status(rc) : "none found");
        return -1;
    }
    if ((rc = cu.DeviceGet(&d->dev, 0)) != CUDA_SUCCESS_ ||
        (rc = cu.PrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS_ ||
        (rc = cu.CtxSetCurrent(d->ctx)) != CUDA_SUCCESS_) {
        snprintf(d->why_not, sizeof d->why_not, "cannot use the CUDA GPU: %s", cuda_status(rc));
        return -1;
    }
    cu.DeviceGetAttribute(&d->cc_major, CU_ATTR_CC_MAJOR, d->dev);
    cu.DeviceGetAttribute(&d->cc_minor, CU_ATTR_CC_MINOR, d->dev);
    if (cu.DeviceGetAttribute(&d->max_threads, CU_ATTR_MAX_THREADS_PER_BLOCK, d->dev) != 0)
        d->max_threads = 1024;
    if (cu.DeviceGetAttribute(&d->max_grid_x, CU_ATTR_MAX_GRID_DIM_X, d->dev) != 0)
        d->max_grid_x = INT32_MAX;
    if (cu.EventCreate(&d->ev_start, 0) != CUDA_SUCCESS_ ||
        cu.EventCreate(&d->ev_stop, 0) != CUDA_SUCCESS_) {
        snprintf(d->why_not, sizeof d->why_not, "cannot create CUDA events");
        if (d->ev_start) cu.EventDestroy(d->ev_start);
        d->ev_start = NULL;
        cu.PrimaryCtxRelease(d->dev);
        d->ctx = NULL;
        return -1;
    }
    return 0;
}

static rt_device *cuda_open(char *err, size_t errlen)
{
    pthread_once(&cuda_once, cuda_load_once);
    if (!nv.lib) { rt_error(err, errlen, "%s", nv.err); return NULL; }
    rt_device *d = calloc(1, sizeof *d);
    if (!d) { rt_error(err, errlen, "out of memory"); return NULL; }
    d->refs = 1;
    d->can_run = cuda_attach(d) == 0;
    if (d->can_run) {
        char name[200] = "CUDA GPU";
        int drv = 0;
        cu.DeviceGetName(name, sizeof name, d->dev);
        cu.DriverGetVersion(&drv);
        snprintf(d->desc, sizeof d->desc, "%s (sm_%d%d), CUDA driver %d.%d, NVRTC %d.%d", name,
                 d->cc_major, d->cc_minor, drv / 1000, drv % 1000 / 10, nv.major, nv.minor);
    } else {
        snprintf(d->desc, sizeof d->desc, "NVRTC %d.%d, compile-only: %s", nv.major, nv.minor,
                 d->why_not);
    }
    return d;
}

/* One attribute, 0 where the driver does not report it. */
static int cuda_attr(rt_device *d, int attr)
{
    int v = 0;
    if (cu.DeviceGetAttribute(&v, attr, d->dev) != CUDA_SUCCESS_) v = 0;
    return v;
}

int rt_cuda_query(rt_device *d, rt_cuda_limits *out)
{
    memset(out, 0, sizeof *out);
    if (!d || !d->can_run || d->broken || !cu.lib) return -1;
    cu.DeviceGetName(out->name, sizeof out->name, d->dev);
    out->cc_major = d->cc_major;
    out->cc_minor = d->cc_minor;
    out->sm_count = cuda_attr(d, CU_ATTR_SM_COUNT);
    out->warp_size = cuda_attr(d, CU_ATTR_WARP_SIZE);
    out->max_threads_per_block = d->max_threads;
    out->max_threads_per_sm = cuda_attr(d, CU_ATTR_MAX_THREADS_PER_SM);
    out->max_blocks_per_sm = cuda_attr(d, CU_ATTR_MAX_BLOCKS_PER_SM);
    out->shared_per_block = cuda_attr(d, CU_ATTR_SHARED_PER_BLOCK);
    out->shared_per_sm = cuda_attr(d, CU_ATTR_SHARED_PER_SM);
    out->shared_reserved_per_block = cuda_attr(d, CU_ATTR_SHARED_RESERVED_PER_BLOCK);
    out->registers_per_sm = cuda_attr(d, CU_ATTR_REGISTERS_PER_SM);
    out->l2_bytes = cuda_attr(d, CU_ATTR_L2_BYTES);
    out->clock_khz = cuda_attr(d, CU_ATTR_CLOCK_KHZ);
    out->mem_clock_khz = cuda_attr(d, CU_ATTR_MEM_CLOCK_KHZ);
    out->bus_width_bits = cuda_attr(d, CU_ATTR_BUS_WIDTH);
    return 0;
}

static void cuda_dev_release(rt_device *d)
{
    if (--d->refs > 0) return;
    if (d->can_run && !d->broken) {
        cu.EventDestroy(d->ev_start);
        cu.EventDestroy(d->ev_stop);
        cu.PrimaryCtxRelease(d->dev);
    }
    free(d);
}

/* Closes the device; the context is released with the last module or
 * buffer.  After a runaway kernel nothing is released (it would wait). */
static void cuda_close(rt_device *d)
{
    if (!d) return;
    if (d->can_run && !d->broken) {
        cu.CtxSetCurrent(d->ctx);
        cu.CtxSynchronize();
    }
    cuda_dev_release(d);
}

static const char *cuda_describe(rt_device *d)
{
    return d ? d->desc : "CUDA";
}

static int cuda_can_run(rt_device *d)
{
    return d && d->can_run && !d->broken;
}

/* Whether kernels can run now; makes the context current if so. */
static int cuda_usable(rt_device *d, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return 0; }
    if (!d->can_run) {
        rt_error(err, errlen, "no CUDA GPU: compile-only (%s)", d->why_not);
        return 0;
    }
    if (d->broken) {
        rt_error(err, errlen, "CUDA device unusable: %s", d->broken_msg);
        return 0;
    }
    cu.CtxSetCurrent(d->ctx);
    return 1;
}

static double cuda_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls the default stream until it drains, at most limit_ms (<= 0: no
 * limit).  0; -2 on time out; -1 on a fault (which, in CUDA, poisons the
 * context, so the device becomes unusable either way). */
static int cuda_wait(rt_device *d, int limit_ms, char *err, size_t errlen)
{
    if (!cuda_usable(d, err, errlen)) return -1;
    double t0 = cuda_now();
    long sleep_ns = 10000;
    for (;;) {
        CUresult rc = cu.StreamQuery(NULL);
        if (rc == CUDA_SUCCESS_) return 0;
        if (rc != CUDA_ERROR_NOT_READY_) {
            d->broken = 1;
            snprintf(d->broken_msg, sizeof d->broken_msg, "kernel %s failed: %s", d->last_name,
                     cuda_status(rc));
            rt_error(err, errlen, "%s", d->broken_msg);
            return -1;
        }
        if (limit_ms > 0 && (cuda_now() - t0) * 1e3 > limit_ms) {
            d->broken = 1;
            snprintf(d->broken_msg, sizeof d->broken_msg,
                     "kernel %s ran past the time limit of %d ms", d->last_name, limit_ms);
            rt_error(err, errlen, "%s", d->broken_msg);
            return -2;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
}

/* The architecture named in the option list ("sm_90", "compute_80"), or
 * NULL.  Accepts -arch=X, -arch X, --gpu-architecture=X and its short
 * spaced form. */
static const char *cuda_arch_of(char **opts, int n)
{
    for (int i = 0; i < n; i++) {
        const char *o = opts[i];
        static const char *keys[] = {"-arch", "--gpu-architecture"};
        for (int k = 0; k < 2; k++) {
            size_t kl = strlen(keys[k]);
            if (strncmp(o, keys[k], kl) != 0) continue;
            if (o[kl] == '=') return o + kl + 1;
            if (o[kl] == '\0' && i + 1 < n) return opts[i + 1];
        }
    }
    return NULL;
}

/* Finds or adds the kernel of that name in m->info (-1 fields). */
static rt_kernel_info *cuda_info_entry(rt_module *m, const char *name, size_t len, int add)
{
    for (int i = 0; i < m->ninfo; i++)
        if (strlen(m->info[i].name) == len && strncmp(m->info[i].name, name, len) == 0)
            return &m->info[i];
    if (!add || len >= sizeof m->info[0].name) return NULL;
    rt_kernel_info *grown = realloc(m->info, (size_t)(m->ninfo + 1) * sizeof *grown);
    if (!grown) return NULL;
    m->info = grown;
    rt_kernel_info *k = &m->info[m->ninfo++];
    memset(k, 0, sizeof *k);
    memcpy(k->name, name, len);
    k->registers = k->spill_store_bytes = k->spill_load_bytes = -1;
    k->shared_bytes = k->local_bytes = -1;
    return k;
}

/* The integer just before `what` in the line (as in "16 bytes smem"), or -1. */
static int cuda_num_before(const char *line, const char *what)
{
    const char *p = strstr(line, what);
    if (!p) return -1;
    while (p > line && p[-1] == ' ') p--;
    const char *e = p;
    while (p > line && isdigit((unsigned char)p[-1])) p--;
    return p < e ? atoi(p) : -1;
}

/* Reads ptxas -v output.  Its lines, per entry function:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_80'
 *   ptxas info    : Function properties for NAME
 *       8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
 *   ptxas info    : Used 24 registers, used 1 barriers, 512 bytes smem, ...
 * Device functions have properties too; they are not entries, so skipped.
 * Returns the number of entries found. */
static int cuda_parse_ptxas(rt_module *m, const char *text)
{
    rt_kernel_info *cur = NULL, *props = NULL;
    int found = 0;
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        if (len >= sizeof buf) len = sizeof buf - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        const char *p;
        if ((p = strstr(buf, "Compiling entry function '")) != NULL) {
            p += strlen("Compiling entry function '");
            const char *q = strchr(p, '\'');
            if (q) {
                cur = cuda_info_entry(m, p, (size_t)(q - p), 1);
                found += cur != NULL;
            }
        } else if ((p = strstr(buf, "Function properties for ")) != NULL) {
            p += strlen("Function properties for ");
            size_t n = strcspn(p, " \t\r");
            props = cuda_info_entry(m, p, n, 0);
        } else if (strstr(buf, "bytes stack frame")) {
            if (props) {
                props->local_bytes = cuda_num_before(buf, "bytes stack frame");
                props->spill_store_bytes = cuda_num_before(buf, "bytes spill stores");
                props->spill_load_bytes = cuda_num_before(buf, "bytes spill loads");
            }
            props = NULL;
        } else if ((p = strstr(buf, "Used ")) != NULL && strstr(buf, "registers") && cur) {
            cur->registers = atoi(p + 5);
            int smem = cuda_num_before(buf, "bytes smem");
            cur->shared_bytes = smem < 0 ? 0 : smem;
        }
        line = end ? end + 1 : NULL;
    }
    /* An entry without a properties line uses no stack and spills nothing. */
    for (int i = 0; i < m->ninfo; i++) {
        rt_kernel_info *k = &m->info[i];
        if (k->registers >= 0 && k->local_bytes < 0)
            k->local_bytes = k->spill_store_bytes = k->spill_load_bytes = 0;
    }
    return found;
}

/* The ptxas binary: on PATH, else under $CUDA_HOME or /usr/local/cuda. */
static int cuda_find_ptxas(char *out, size_t len)
{
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n < 400) {
            snprintf(out, len, "%.*s/ptxas", (int)n, path);
            if (access(out, X_OK) == 0) return 0;
        }
        path += n + (path[n] == ':');
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home && strlen(home) < 400) {
        snprintf(out, len, "%s/bin/ptxas", home);
        if (access(out, X_OK) == 0) return 0;
    }
    snprintf(out, len, "/usr/local/cuda/bin/ptxas");
    return access(out, X_OK) == 0 ? 0 : -1;
}

/* Runs `ptxas -v -arch=sm_XX` on the module's PTX and reads its report. */
static int cuda_run_ptxas(rt_module *m, const char *sm)
{
    char ptxas[512];
    for (const char *c = sm; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_') return 0;
    if (cuda_find_ptxas(ptxas, sizeof ptxas) != 0 || strchr(ptxas, '\'')) return 0;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strchr(tmp, '\'') || strlen(tmp) > 200) tmp = "/tmp";
    char dir[256], file[300], cmd[1200];
    snprintf(dir, sizeof dir, "%s/sc_rt_cuda_XXXXXX", tmp);
    if (!mkdtemp(dir)) return 0;
    snprintf(file, sizeof file, "%s/kernels.ptx", dir);
    int found = 0;
    FILE *f = fopen(file, "w");
    if (f) {
        size_t n = strlen(m->ptx);
        int ok = fwrite(m->ptx, 1, n, f) == n;
        if (fclose(f) == 0 && ok) {
            snprintf(cmd, sizeof cmd, "'%s' -v -arch=%s -o /dev/null '%s' 2>&1", ptxas, sm, file);
            FILE *p = popen(cmd, "r");
            if (p) {
                char *out = NULL;
                size_t cap = 0;
                /* The whole report at once: it holds no NUL. */
                ssize_t got = getdelim(&out, &cap, '\0', p);
                int st = pclose(p);
                if (got > 0 && st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
                    found = cuda_parse_ptxas(m, out);
                free(out);
            }
        }
    }
    unlink(file);
    rmdir(dir);
    return found;
}

/* Without any ptxas report, the entry names from the PTX (-1 fields). */
static void cuda_entries_from_ptx(rt_module *m)
{
    for (const char *p = strstr(m->ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) {
        p += strlen(".entry ");
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, " \t\r\n(");
        if (n) cuda_info_entry(m, p, n, 1);
    }
}

/* Splits the caller's options on white space into argv-style strings. */
static int cuda_split(const char *options, char ***out)
{
    *out = NULL;
    int n = 0, cap = 0;
    const char *p = options ? options : "";
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        size_t len = 0;
        while (p[len] && !isspace((unsigned char)p[len])) len++;
        if (n + 4 >= cap) {
            cap = cap ? 2 * cap : 16;
            char **g = realloc(*out, (size_t)cap * sizeof *g);
            if (!g) break;
            *out = g;
        }
        char *s = malloc(len + 1);
        if (!s) break;
        memcpy(s, p, len);
        s[len] = '\0';
        (*out)[n++] = s;
        p += len;
    }
    return n;
}

/* One NVRTC run.  Returns the result; *log gets the program log (malloc). */
static nvrtcResult cuda_nvrtc(const char *source, char **opts, int nopts, nvrtcProgram *prog,
                              char **log)
{
    *log = NULL;
    nvrtcResult rc = nv.CreateProgram(prog, source, "kernels.cu", 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS_) { *prog = NULL; return rc; }
    rc = nv.CompileProgram(*prog, nopts, (const char *const *)opts);
    size_t n = 0;
    if (nv.GetProgramLogSize(*prog, &n) == NVRTC_SUCCESS_ && (*log = calloc(n + 1, 1)) != NULL)
        nv.GetProgramLog(*prog, *log);
    return rc;
}

/* ---- the compile cache ------------------------------------------------------
 * NVRTC keeps nothing between processes, and the measurements compile each
 * schedule in a child of its own (after measure_precompile compiled it in
 * parallel), so what NVRTC gave (PTX, CUBIN, log) is kept in a file named
 * by a hash of the source, the options and NVRTC's version: in
 * $STAGECRAFT_CUDA_CACHE ("off": none), else $XDG_CACHE_HOME/stagecraft/cuda,
 * else ~/.cache/stagecraft/cuda.  A file that does not read back whole is
 * ignored (compiled again and rewritten); files are written under a
 * temporary name and renamed, so readers never see half of one. */

static const char cache_magic[8] = "SCCUBIN1";

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* mkdir -p of path's folders (path ends in a file name) */
static void cache_mkdirs(char *path)
{
    for (char *c = path + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        mkdir(path, 0700);
        *c = '/';
    }
}

/* The cache file for this compile in path; 0 when caching is off. */
static int cache_path(const char *source, char **opts, int nopts, char *path, size_t len)
{
    const char *dir = getenv("STAGECRAFT_CUDA_CACHE"), *base = NULL, *sub = "";
    if (dir && !strcmp(dir, "off")) return 0;
    if (!dir || !*dir) {
        base = getenv("XDG_CACHE_HOME");
        sub = "/stagecraft/cuda";
        if (!base || !*base) { base = getenv("HOME"); sub = "/.cache/stagecraft/cuda"; }
        if (!base || !*base) return 0;
    }
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, source, strlen(source) + 1);
    for (int i = 0; i < nopts; i++) h = fnv1a(h, opts[i], strlen(opts[i]) + 1);
    int ver[2] = {nv.major, nv.minor};
    h = fnv1a(h, ver, sizeof ver);
    int w = snprintf(path, len, "%s%s/%016llx.nvrtc", base ? base : dir, sub, (unsigned long long)h);
    return w > 0 && (size_t)w < len;
}

/* Reads the three parts (each malloc'd, NUL-terminated); 1 if whole. */
static int cache_load(const char *path, char **ptx, char **cubin, char **log)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char magic[8];
    uint64_t n[3];
    char *part[3] = {NULL, NULL, NULL};
    int ok = fread(magic, 1, 8, f) == 8 && !memcmp(magic, cache_magic, 8) && fread(n, sizeof n[0], 3, f) == 3;
    for (int i = 0; ok && i < 3; i++) {
        ok = n[i] < ((uint64_t)1 << 31) && (part[i] = malloc((size_t)n[i] + 1)) != NULL &&
             fread(part[i], 1, (size_t)n[i], f) == n[i];
        if (ok) part[i][n[i]] = 0;
    }
    ok = ok && fgetc(f) == EOF && n[0] > 0;
    fclose(f);
    if (!ok) {
        for (int i = 0; i < 3; i++) free(part[i]);
        return 0;
    }
    *ptx = part[0];
    if (n[1]) *cubin = part[1];
    else free(part[1]);
    *log = part[2];
    return 1;
}

static void cache_store(const char *path, const char *ptx, const char *cubin, size_t cubin_len, const char *log)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    cache_mkdirs(tmp);
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    uint64_t n[3] = {strlen(ptx), cubin ? cubin_len : 0, log ? strlen(log) : 0};
    int ok = fwrite(cache_magic, 1, 8, f) == 8 && fwrite(n, sizeof n[0], 3, f) == 3 &&
             fwrite(ptx, 1, n[0], f) == n[0] && (!n[1] || fwrite(cubin, 1, n[1], f) == n[1]) &&
             (!n[2] || fwrite(log, 1, n[2], f) == n[2]);
    if (fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

/* Compiles CUDA C++ with NVRTC.  Options are NVRTC's; -arch defaults to the
 * GPU's own (sm_80 without one), -default-device is added.  For a real
 * architecture the CUBIN is kept and ptxas's report read. */
static rt_module *cuda_compile(rt_device *d, const char *source, const char *options,
                               char *log, size_t loglen)
{
    if (log && loglen) log[0] = '\0';
    if (!d || !source) { rt_error(log, loglen, "no device or no source"); return NULL; }
    char **opts = NULL;
    int nopts = cuda_split(options, &opts);
    char arch_opt[48], *extra[3];
    int nextra = 0;
    const char *arch = cuda_arch_of(opts, nopts);
    if (!arch) {
        if (d->can_run) snprintf(arch_opt, sizeof arch_opt, "-arch=sm_%d%d", d->cc_major, d->cc_minor);
        else snprintf(arch_opt, sizeof arch_opt, "-arch=sm_80");
        extra[nextra++] = arch_opt;
        arch = arch_opt + 6;
    }
    int has_dd = 0;
    for (int i = 0; i < nopts; i++) has_dd |= strcmp(opts[i], "-default-device") == 0;
    static char dd[] = "-default-device", xv[] = "-Xptxas=-v";
    if (!has_dd) extra[nextra++] = dd;
    int real = strncmp(arch, "sm_", 3) == 0;
    if (real) extra[nextra++] = xv;
    char **all = malloc((size_t)(nopts + 3) * sizeof *all);
    rt_module *m = calloc(1, sizeof *m);
    nvrtcProgram prog = NULL;
    char *nvlog = NULL;
    int ok = 0;
    if (!all || !m) { rt_error(log, loglen, "out of memory"); goto fail; }
    for (int i = 0; i < nopts; i++) all[i] = opts[i];
    for (int i = 0; i < nextra; i++) all[nopts + i] = extra[i];
    m->d = d;
    snprintf(m->arch, sizeof m->arch, "%.31s", arch);

    char cpath[PATH_MAX + 64] = "";
    if (!cache_path(source, all, nopts + nextra, cpath, sizeof cpath)) cpath[0] = 0;
    if (!cpath[0] || !cache_load(cpath, &m->ptx, &m->cubin, &nvlog)) {
        nvrtcResult rc = cuda_nvrtc(source, all, nopts + nextra, &prog, &nvlog);
        if (rc == NVRTC_ERROR_INVALID_OPTION_ && real) {
            /* An NVRTC that does not take -Xptxas: ptxas is run by hand below. */
            if (prog) nv.DestroyProgram(&prog);
            free(nvlog);
            rc = cuda_nvrtc(source, all, nopts + nextra - 1, &prog, &nvlog);
        }
        if (rc != NVRTC_SUCCESS_) {
            rt_error(log, loglen, "NVRTC failed (%s):\n%s", nv.GetErrorString(rc),
                     nvlog && *nvlog ? nvlog : "(no log)");
            goto fail;
        }
        size_t n = 0;
        if (nv.GetPTXSize(prog, &n) != NVRTC_SUCCESS_ || !(m->ptx = calloc(n + 1, 1)) ||
            nv.GetPTX(prog, m->ptx) != NVRTC_SUCCESS_) {
            rt_error(log, loglen, "NVRTC gave no PTX");
            goto fail;
        }
        size_t cubin_len = 0;
        if (real && nv.GetCUBINSize && nv.GetCUBINSize(prog, &cubin_len) == NVRTC_SUCCESS_ && cubin_len > 0 &&
            (m->cubin = malloc(cubin_len)) != NULL && nv.GetCUBIN(prog, m->cubin) != NVRTC_SUCCESS_) {
            free(m->cubin);
            m->cubin = NULL;
        }
        if (cpath[0]) cache_store(cpath, m->ptx, m->cubin, cubin_len, nvlog);
    }
    rt_error(log, loglen, "%s", nvlog ? nvlog : "");
    if (!nvlog || !cuda_parse_ptxas(m, nvlog)) {
        /* No report in the log: ask ptxas itself, for compute_XX as sm_XX. */
        char sm[40] = "";
        if (real) snprintf(sm, sizeof sm, "%.39s", arch);
        else if (strncmp(arch, "compute_", 8) == 0) snprintf(sm, sizeof sm, "sm_%.30s", arch + 8);
        if (!sm[0] || !cuda_run_ptxas(m, sm)) cuda_entries_from_ptx(m);
    }
    d->refs++;
    ok = 1;
fail:
    if (prog) nv.DestroyProgram(&prog);
    free(nvlog);
    free(all);
    for (int i = 0; i < nopts; i++) free(opts[i]);
    free(opts);
    if (!ok && m) {
        free(m->ptx);
        free(m->cubin);
        free(m->info);
        free(m);
        m = NULL;
    }
    return m;
}

static void cuda_module_free(rt_module *m)
{
    if (!m) return;
    rt_device *d = m->d;
    if (m->mod && !d->broken) {
        cu.CtxSetCurrent(d->ctx);
        cu.ModuleUnload(m->mod);
    }
    for (int i = 0; i < m->nkernels; i++) free(m->kernels[i].name);
    free(m->kernels);
    free(m->ptx);
    free(m->cubin);
    free(m->info);
    free(m);
    cuda_dev_release(d);
}

static int cuda_kernel_info(rt_module *m, rt_kernel_info **info)
{
    if (info) *info = NULL;
    if (!m || !info) return -1;
    if (m->ninfo == 0) return 0;
    *info = malloc((size_t)m->ninfo * sizeof **info);
    if (!*info) return -1;
    memcpy(*info, m->info, (size_t)m->ninfo * sizeof **info);
    return m->ninfo;
}

static rt_buf *cuda_alloc(rt_device *d, size_t bytes, char *err, size_t errlen)
{
    if (!cuda_usable(d, err, errlen)) return NULL;
    rt_buf *b = calloc(1, sizeof *b);
    if (!b) { rt_error(err, errlen, "out of memory"); return NULL; }
    CUresult rc = cu.MemAlloc(&b->p, bytes ? bytes : 1);
    if (rc != CUDA_SUCCESS_) {
        rt_error(err, errlen, "cuMemAlloc of %zu bytes: %s", bytes, cuda_status(rc));
        free(b);
        return NULL;
    }
    b->d = d;
    b->bytes = bytes;
    d->refs++;
    return b;
}

static void cuda_buf_free(rt_buf *b)
{
    if (!b) return;
    rt_device *d = b->d;
    if (d->can_run && !d->broken) {
        cu.CtxSetCurrent(d->ctx);
        cu.MemFree(b->p);
    }
    free(b);
    cuda_dev_release(d);
}

/* Synchronous copies, once earlier launches have drained within the last
 * limit given to finish(). */
static int cuda_copy(rt_buf *b, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    if (!b) { rt_error(err, errlen, "no buffer"); return -1; }
    if (bytes > b->bytes) {
        rt_error(err, errlen, "copy of %zu bytes into a buffer of %zu", bytes, b->bytes);
        return -1;
    }
    rt_device *d = b->d;
    int rc = cuda_wait(d, d->limit_ms, err, errlen);
    if (rc != 0 || bytes == 0) return rc;
    CUresult st = dst ? cu.MemcpyDtoH(dst, b->p, bytes) : cu.MemcpyHtoD(b->p, src, bytes);
    if (st != CUDA_SUCCESS_) {
        rt_error(err, errlen, "%s of %zu bytes: %s", dst ? "cuMemcpyDtoH" : "cuMemcpyHtoD", bytes,
                 cuda_status(st));
        return -1;
    }
    return 0;
}

static int cuda_write(rt_buf *b, const void *src, size_t bytes, char *err, size_t errlen)
{
    return cuda_copy(b, NULL, src, bytes, err, errlen);
}

static int cuda_read(rt_buf *b, void *dst, size_t bytes, char *err, size_t errlen)
{
    return cuda_copy(b, dst, NULL, bytes, err, errlen);
}

/* The module's function of that name; the module is loaded on first use
 * (a CUBIN, or PTX for the driver to compile). */
static CUfunction cuda_function(rt_module *m, const char *name, char *err, size_t errlen)
{
    for (int i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i].name, name) == 0) return m->kernels[i].f;
    CUresult rc;
    if (!m->mod) {
        rc = cu.ModuleLoadData(&m->mod, m->cubin ? (const void *)m->cubin : (const void *)m->ptx);
        if (rc != CUDA_SUCCESS_) {
            m->mod = NULL;
            rt_error(err, errlen, "cannot load the module compiled for %s on this sm_%d%d GPU: %s",
                     m->arch, m->d->cc_major, m->d->cc_minor, cuda_status(rc));
            return NULL;
        }
    }
    CUfunction f = NULL;
    rc = cu.ModuleGetFunction(&f, m->mod, name);
    if (rc != CUDA_SUCCESS_ || !f) {
        rt_error(err, errlen, "unknown kernel %s in this module (%s)", name, cuda_status(rc));
        return NULL;
    }
    if (m->nkernels == m->cap) {
        int cap = m->cap ? 2 * m->cap : 8;
        cuda_kentry *g = realloc(m->kernels, (size_t)cap * sizeof *g);
        if (!g) { rt_error(err, errlen, "out of memory"); return NULL; }
        m->kernels = g;
        m->cap = cap;
    }
    char *copy = malloc(strlen(name) + 1);
    if (!copy) { rt_error(err, errlen, "out of memory"); return NULL; }
    strcpy(copy, name);
    m->kernels[m->nkernels].name = copy;
    m->kernels[m->nkernels++].f = f;
    return f;
}

static int cuda_launch(rt_module *m, const char *kernel, int64_t nblocks, int nthreads,
                       int nargs, const rt_arg *args, char *err, size_t errlen)
{
    if (!m || !kernel) { rt_error(err, errlen, "no module or no kernel name"); return -1; }
    rt_device *d = m->d;
    if (!cuda_usable(d, err, errlen)) return -1;
    if (nblocks < 0 || nthreads < 1 || nargs < 0 || (nargs > 0 && !args)) {
        rt_error(err, errlen, "launch of %s over %lld blocks of %d threads with %d arguments: bad shape",
                 kernel, (long long)nblocks, nthreads, nargs);
        return -1;
    }
    if (nthreads > d->max_threads || nblocks > d->max_grid_x) {
        rt_error(err, errlen, "kernel %s: %lld blocks of %d threads exceed the GPU's limits (%d blocks, %d threads per block)",
                 kernel, (long long)nblocks, nthreads, d->max_grid_x, d->max_threads);
        return -1;
    }
    CUfunction f = cuda_function(m, kernel, err, errlen);
    if (!f) return -1;
    typedef union { CUdeviceptr p; int32_t i; float f; } slot;
    slot vals[64];
    void *params[64];
    if (nargs > 64) { rt_error(err, errlen, "kernel %s: more than 64 arguments", kernel); return -1; }
    for (int i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case RT_ARG_BUF:
            if (!args[i].buf || args[i].buf->d != d) {
                rt_error(err, errlen, "kernel %s: argument %d is not a buffer of this device", kernel, i);
                return -1;
            }
            vals[i].p = args[i].buf->p;
            break;
        case RT_ARG_I32: vals[i].i = args[i].i; break;
        case RT_ARG_F32: vals[i].f = args[i].f; break;
        }
        params[i] = &vals[i];
    }
    if (nblocks == 0) return 0;
    CUresult rc = cu.LaunchKernel(f, (unsigned)nblocks, 1, 1, (unsigned)nthreads, 1, 1, 0, NULL,
                                  params, NULL);
    if (rc != CUDA_SUCCESS_) {
        rt_error(err, errlen, "kernel %s over %lld blocks of %d threads: %s", kernel,
                 (long long)nblocks, nthreads, cuda_status(rc));
        return -1;
    }
    snprintf(d->last_name, sizeof d->last_name, "%s", kernel);
    return 0;
}

static int cuda_finish(rt_device *d, int timeout_ms, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return -1; }
    d->limit_ms = timeout_ms;
    return cuda_wait(d, timeout_ms, err, errlen);
}

static int cuda_timer_start(rt_device *d, char *err, size_t errlen)
{
    if (!cuda_usable(d, err, errlen)) return -1;
    if (cu.EventRecord(d->ev_start, NULL) != CUDA_SUCCESS_) {
        rt_error(err, errlen, "cuEventRecord failed");
        return -1;
    }
    d->timing = 1;
    return 0;
}

static double cuda_timer_stop(rt_device *d)
{
    if (!d || !d->timing || !cuda_usable(d, NULL, 0)) return -1;
    d->timing = 0;
    if (cu.EventRecord(d->ev_stop, NULL) != CUDA_SUCCESS_) return -1;
    if (cuda_wait(d, d->limit_ms, NULL, 0) != 0) return -1;
    float ms = 0;
    if (cu.EventElapsedTime(&ms, d->ev_start, d->ev_stop) != CUDA_SUCCESS_) return -1;
    return ms;
}

const rt_ops rt_cuda_ops = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .describe = cuda_describe,
    .can_run = cuda_can_run,
    .compile = cuda_compile,
    .module_free = cuda_module_free,
    .kernel_info = cuda_kernel_info,
    .alloc = cuda_alloc,
    .buf_free = cuda_buf_free,
    .write = cuda_write,
    .read = cuda_read,
    .launch = cuda_launch,
    .finish = cuda_finish,
    .timer_start = cuda_timer_start,
    .timer_stop = cuda_timer_stop,
};
