/*
 * rt_opencl.c - the OpenCL back end, through the system's ICD loader
 * (libOpenCL.so.1, opened with dlopen so that stagecraft runs, without this
 * back end, where no loader is installed).  On machines without a GPU the
 * ICD is usually PoCL's CPU device.
 *
 * A kernel is `__kernel void NAME(args...)` run over nblocks work-groups of
 * nthreads work-items.  Launches go to one in-order queue with profiling on;
 * timing reads the first timed launch's START and the last one's END.
 * finish() polls the last launch's event, so it can give up after a time
 * limit: the kernel cannot be stopped, so the device is then marked
 * unusable and its queue and context are abandoned, not released (releasing
 * would wait for the runaway kernel).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"

#define CL_DEV_MAGIC 0x4f70434cu    /* "OpCL": tags our devices for rt_opencl_query */

/* The entry points we use, resolved once per process. */
static struct {
    void *lib;
    char err[256];
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void (*)(const char *, const void *, size_t, void *), void *,
                                cl_int *);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id,
                                           cl_command_queue_properties, cl_int *);
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                          cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void (*)(cl_program, void *), void *);
    cl_int (*GetProgramInfo)(cl_program, cl_program_info, size_t, void *, size_t *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t,
                                  void *, size_t *);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t,
                                     void *, size_t *);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                   const size_t *, const size_t *, cl_uint, const cl_event *,
                                   cl_event *);
    cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t,
                                 const void *, cl_uint, const cl_event *, cl_event *);
    cl_int (*Flush)(cl_command_queue);
    cl_int (*Finish)(cl_command_queue);
    cl_int (*GetEventInfo)(cl_event, cl_event_info, size_t, void *, size_t *);
    cl_int (*GetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void *, size_t *);
    cl_int (*ReleaseEvent)(cl_event);
    cl_int (*RetainEvent)(cl_event);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*ReleaseProgram)(cl_program);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_int (*ReleaseContext)(cl_context);
} ocl;

static pthread_once_t ocl_once = PTHREAD_ONCE_INIT;

typedef struct {
    char *name;
    cl_kernel k;
    size_t max_wg;              /* CL_KERNEL_WORK_GROUP_SIZE */
    size_t wg[3];               /* CL_KERNEL_COMPILE_WORK_GROUP_SIZE (0s: none required) */
} ocl_kentry;

struct rt_device {
    uint32_t magic;
    int refs;                   /* user + modules + buffers */
    int closed;
    int broken;                 /* a kernel ran past its time limit */
    char broken_msg[256];
    cl_platform_id platform;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    size_t max_wg;
    size_t max_item[3];         /* CL_DEVICE_MAX_WORK_ITEM_SIZES (max_wg: not reported) */
    cl_event ev_last;           /* last launch not yet known complete */
    char last_name[128];
    int limit_ms;               /* last finish limit, for read/write/timer */
    int timing;
    cl_event ev_first_timed, ev_last_timed;
    double host_t0;
    int simd_width;             /* 0 until probed */
    char desc[640];
};

struct rt_module {
    rt_device *d;
    cl_program prog;
    ocl_kentry *kernels;
    int nkernels, cap;
};

struct rt_buf {
    rt_device *d;
    cl_mem mem;
    size_t bytes;
};

/* The name of an OpenCL status code, for messages. */
static const char *ocl_status_name(cl_int rc)
{
    switch (rc) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE: return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_PROFILING_INFO_NOT_AVAILABLE: return "CL_PROFILING_INFO_NOT_AVAILABLE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_BINARY: return "CL_INVALID_BINARY";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM_EXECUTABLE: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL: return "CL_INVALID_KERNEL";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS (an argument was not set)";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE: return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_COMMAND_QUEUE: return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_PLATFORM: return "CL_INVALID_PLATFORM";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver is installed)";
    default: return "an OpenCL error";
    }
}

/* Opens the ICD loader and resolves every entry point, once.  The library
 * stays loaded for the life of the process: drivers keep threads. */
static void ocl_load_once(void)
{
    static const char *names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !ocl.lib; i++)
        ocl.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!ocl.lib) {
        snprintf(ocl.err, sizeof ocl.err, "no OpenCL: cannot load libOpenCL.so.1 (%s)", dlerror());
        return;
    }
    const char *missing = NULL;
#define CL_SYM(field, sym) do {                      \
        void *p_ = dlsym(ocl.lib, #sym);                \
        if (!p_ && !missing) missing = #sym;            \
        memcpy(&ocl.field, &p_, sizeof p_);             \
    } while (0)
    CL_SYM(GetPlatformIDs, clGetPlatformIDs);
    CL_SYM(GetPlatformInfo, clGetPlatformInfo);
    CL_SYM(GetDeviceIDs, clGetDeviceIDs);
    CL_SYM(GetDeviceInfo, clGetDeviceInfo);
    CL_SYM(CreateContext, clCreateContext);
    CL_SYM(CreateCommandQueue, clCreateCommandQueue);
    CL_SYM(CreateProgramWithSource, clCreateProgramWithSource);
    CL_SYM(BuildProgram, clBuildProgram);
    CL_SYM(GetProgramInfo, clGetProgramInfo);
    CL_SYM(GetProgramBuildInfo, clGetProgramBuildInfo);
    CL_SYM(CreateKernel, clCreateKernel);
    CL_SYM(GetKernelWorkGroupInfo, clGetKernelWorkGroupInfo);
    CL_SYM(SetKernelArg, clSetKernelArg);
    CL_SYM(EnqueueNDRangeKernel, clEnqueueNDRangeKernel);
    CL_SYM(CreateBuffer, clCreateBuffer);
    CL_SYM(EnqueueReadBuffer, clEnqueueReadBuffer);
    CL_SYM(EnqueueWriteBuffer, clEnqueueWriteBuffer);
    CL_SYM(Flush, clFlush);
    CL_SYM(Finish, clFinish);
    CL_SYM(GetEventInfo, clGetEventInfo);
    CL_SYM(GetEventProfilingInfo, clGetEventProfilingInfo);
    CL_SYM(ReleaseEvent, clReleaseEvent);
    CL_SYM(RetainEvent, clRetainEvent);
    CL_SYM(ReleaseKernel, clReleaseKernel);
    CL_SYM(ReleaseProgram, clReleaseProgram);
    CL_SYM(ReleaseMemObject, clReleaseMemObject);
    CL_SYM(ReleaseCommandQueue, clReleaseCommandQueue);
    CL_SYM(ReleaseContext, clReleaseContext);
#undef CL_SYM
    if (missing) {
        snprintf(ocl.err, sizeof ocl.err, "no OpenCL: libOpenCL.so.1 lacks %s", missing);
        dlclose(ocl.lib);
        ocl.lib = NULL;
    }
}

static double ocl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A string property of a platform or device, into buf (empty if unknown). */
static void ocl_platform_str(cl_platform_id p, cl_platform_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (ocl.GetPlatformInfo(p, what, len, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[len - 1] = '\0';
}

static void ocl_device_str(cl_device_id dv, cl_device_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (ocl.GetDeviceInfo(dv, what, len, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[len - 1] = '\0';
}

/* Finds the first GPU of any platform, else the first device of any kind. */
static int ocl_pick(cl_platform_id *pp, cl_device_id *pd, char *err, size_t errlen)
{
    cl_uint np = 0;
    cl_int rc = ocl.GetPlatformIDs(0, NULL, &np);
    if (rc != CL_SUCCESS || np == 0) {
        rt_error(err, errlen, "no OpenCL platform (%s)", rc ? ocl_status_name(rc) : "none found");
        return -1;
    }
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    if ((rc = ocl.GetPlatformIDs(np, plats, NULL)) != CL_SUCCESS) {
        rt_error(err, errlen, "clGetPlatformIDs: %s", ocl_status_name(rc));
        return -1;
    }
    static const cl_device_type kinds[] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
    for (int k = 0; k < 2; k++) {
        for (cl_uint i = 0; i < np; i++) {
            cl_uint nd = 0;
            if (ocl.GetDeviceIDs(plats[i], kinds[k], 1, pd, &nd) == CL_SUCCESS && nd > 0) {
                *pp = plats[i];
                return 0;
            }
        }
    }
    rt_error(err, errlen, "no OpenCL device on %u platform(s)", np);
    return -1;
}

static rt_device *ocl_open(char *err, size_t errlen)
{
    pthread_once(&ocl_once, ocl_load_once);
    if (!ocl.lib) { rt_error(err, errlen, "%s", ocl.err); return NULL; }
    rt_device *d = calloc(1, sizeof *d);
    if (!d) { rt_error(err, errlen, "out of memory"); return NULL; }
    d->magic = CL_DEV_MAGIC;
    d->refs = 1;
    if (ocl_pick(&d->platform, &d->dev, err, errlen) != 0) { free(d); return NULL; }
    cl_int rc;
    d->ctx = ocl.CreateContext(NULL, 1, &d->dev, NULL, NULL, &rc);
    if (!d->ctx) {
        rt_error(err, errlen, "clCreateContext: %s", ocl_status_name(rc));
        free(d);
        return NULL;
    }
    d->q = ocl.CreateCommandQueue(d->ctx, d->dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (!d->q) {
        rt_error(err, errlen, "clCreateCommandQueue: %s", ocl_status_name(rc));
        ocl.ReleaseContext(d->ctx);
        free(d);
        return NULL;
    }
    size_t items[3] = {0, 0, 0};
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg,
                          NULL) != CL_SUCCESS)
        d->max_wg = 1;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) != CL_SUCCESS)
        items[0] = items[1] = items[2] = 0;
    for (int i = 0; i < 3; i++) d->max_item[i] = items[i] > 0 ? items[i] : d->max_wg;
    char pname[128], pver[160], dname[128], dver[128];
    ocl_platform_str(d->platform, CL_PLATFORM_NAME, pname, sizeof pname);
    ocl_platform_str(d->platform, CL_PLATFORM_VERSION, pver, sizeof pver);
    ocl_device_str(d->dev, CL_DEVICE_NAME, dname, sizeof dname);
    ocl_device_str(d->dev, CL_DEVICE_VERSION, dver, sizeof dver);
    snprintf(d->desc, sizeof d->desc, "%s (%s) / %s (%s)", pname, pver, dname, dver);
    return d;
}

/* Drops one reference; the last frees the host-side record. */
static void ocl_dev_release(rt_device *d)
{
    if (--d->refs == 0) free(d);
}

static void ocl_release_events(rt_device *d)
{
    if (d->ev_last) ocl.ReleaseEvent(d->ev_last);
    if (d->ev_first_timed) ocl.ReleaseEvent(d->ev_first_timed);
    if (d->ev_last_timed) ocl.ReleaseEvent(d->ev_last_timed);
    d->ev_last = d->ev_first_timed = d->ev_last_timed = NULL;
}

/* Closes the device.  Modules and buffers still alive keep the context
 * (OpenCL counts its own references) until they are freed. */
static void ocl_close(rt_device *d)
{
    if (!d) return;
    if (!d->broken) {
        ocl.Finish(d->q);
        ocl_release_events(d);
        ocl.ReleaseCommandQueue(d->q);
        ocl.ReleaseContext(d->ctx);
    }
    d->closed = 1;
    d->magic = 0;
    ocl_dev_release(d);
}

static const char *ocl_describe(rt_device *d)
{
    return d ? d->desc : "OpenCL";
}

static int ocl_can_run(rt_device *d)
{
    return d && !d->broken && !d->closed;
}

static int ocl_usable(rt_device *d, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return 0; }
    if (d->closed) { rt_error(err, errlen, "OpenCL device already closed"); return 0; }
    if (d->broken) {
        rt_error(err, errlen, "OpenCL device unusable: %s", d->broken_msg);
        return 0;
    }
    return 1;
}

/* Waits for every enqueued command, at most limit_ms (<= 0: no limit), by
 * polling the last launch's event.  0, -2 on time out (the device becomes
 * unusable), -1 on another error. */
static int ocl_wait(rt_device *d, int limit_ms, char *err, size_t errlen)
{
    if (!ocl_usable(d, err, errlen)) return -1;
    ocl.Flush(d->q);
    if (d->ev_last) {
        double t0 = ocl_now();
        long sleep_ns = 20000;
        for (;;) {
            cl_int st = CL_QUEUED;
            cl_int rc = ocl.GetEventInfo(d->ev_last, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                         sizeof st, &st, NULL);
            if (rc != CL_SUCCESS) {
                rt_error(err, errlen, "clGetEventInfo: %s", ocl_status_name(rc));
                return -1;
            }
            if (st < 0) {
                rt_error(err, errlen, "kernel %s failed: %s", d->last_name, ocl_status_name(st));
                ocl.ReleaseEvent(d->ev_last);
                d->ev_last = NULL;
                return -1;
            }
            if (st == CL_COMPLETE) break;
            if (limit_ms > 0 && (ocl_now() - t0) * 1e3 > limit_ms) {
                d->broken = 1;
                snprintf(d->broken_msg, sizeof d->broken_msg,
                         "kernel %s ran past the time limit of %d ms", d->last_name, limit_ms);
                rt_error(err, errlen, "%s", d->broken_msg);
                return -2;
            }
            struct timespec ts = {0, sleep_ns};
            nanosleep(&ts, NULL);
            if (sleep_ns < 2000000) sleep_ns *= 2;
        }
        ocl.ReleaseEvent(d->ev_last);
        d->ev_last = NULL;
    }
    cl_int rc = ocl.Finish(d->q);
    if (rc != CL_SUCCESS) {
        rt_error(err, errlen, "clFinish: %s", ocl_status_name(rc));
        return -1;
    }
    return 0;
}

/* Builds the source for the device with the given options; the build log
 * goes to log (on failure it is the message). */
static rt_module *ocl_compile(rt_device *d, const char *source, const char *options,
                             char *log, size_t loglen)
{
    if (log && loglen) log[0] = '\0';
    if (!ocl_usable(d, log, loglen)) return NULL;
    if (!source) { rt_error(log, loglen, "no source"); return NULL; }
    cl_int rc;
    cl_program prog = ocl.CreateProgramWithSource(d->ctx, 1, &source, NULL, &rc);
    if (!prog) {
        rt_error(log, loglen, "clCreateProgramWithSource: %s", ocl_status_name(rc));
        return NULL;
    }
    rc = ocl.BuildProgram(prog, 1, &d->dev, options ? options : "", NULL, NULL);
    size_t n = 0;
    char *blog = NULL;
    if (ocl.GetProgramBuildInfo(prog, d->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
        n > 0 && (blog = calloc(n + 1, 1)) != NULL)
        ocl.GetProgramBuildInfo(prog, d->dev, CL_PROGRAM_BUILD_LOG, n, blog, NULL);
    if (rc != CL_SUCCESS) {
        rt_error(log, loglen, "OpenCL build failed (%s):\n%s", ocl_status_name(rc),
                  blog ? blog : "(no build log)");
        free(blog);
        ocl.ReleaseProgram(prog);
        return NULL;
    }
    if (blog) rt_error(log, loglen, "%s", blog);
    free(blog);
    rt_module *m = calloc(1, sizeof *m);
    if (!m) {
        ocl.ReleaseProgram(prog);
        rt_error(log, loglen, "out of memory");
        return NULL;
    }
    m->d = d;
    m->prog = prog;
    d->refs++;
    return m;
}

static void ocl_module_free(rt_module *m)
{
    if (!m) return;
    rt_device *d = m->d;
    for (int i = 0; i < m->nkernels; i++) {
        if (!d->broken) ocl.ReleaseKernel(m->kernels[i].k);
        free(m->kernels[i].name);
    }
    free(m->kernels);
    if (!d->broken) ocl.ReleaseProgram(m->prog);
    free(m);
    ocl_dev_release(d);
}

static ocl_kentry *ocl_kernel(rt_module *m, const char *name, char *err, size_t errlen);

/* OpenCL reports no registers or spills; per kernel it gives the local
 * memory (as shared_bytes) and the private memory per work-item (as
 * local_bytes, the nearest to a stack frame).  Unknown fields are -1. */
static int ocl_kernel_info(rt_module *m, rt_kernel_info **info)
{
    if (info) *info = NULL;
    if (!m || !info || m->d->broken) return -1;
    size_t n = 0;
    if (ocl.GetProgramInfo(m->prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return 0;
    char *names = calloc(n + 1, 1);
    if (!names) return -1;
    if (ocl.GetProgramInfo(m->prog, CL_PROGRAM_KERNEL_NAMES, n, names, NULL) != CL_SUCCESS) {
        free(names);
        return 0;
    }
    int count = names[0] ? 1 : 0;
    for (char *c = names; *c; c++) count += *c == ';';
    rt_kernel_info *out = calloc((size_t)count + 1, sizeof *out);
    if (!out) { free(names); return -1; }
    int k = 0;
    char *save = NULL;
    for (char *tok = strtok_r(names, ";", &save); tok && k < count;
         tok = strtok_r(NULL, ";", &save)) {
        rt_kernel_info *ki = &out[k++];
        snprintf(ki->name, sizeof ki->name, "%s", tok);
        ki->registers = ki->spill_store_bytes = ki->spill_load_bytes = -1;
        ki->shared_bytes = ki->local_bytes = -1;
        ocl_kentry *e = ocl_kernel(m, tok, NULL, 0);
        cl_ulong v = 0;
        if (e && ocl.GetKernelWorkGroupInfo(e->k, m->d->dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof v, &v,
                                            NULL) == CL_SUCCESS)
            ki->shared_bytes = (int)v;
        if (e && ocl.GetKernelWorkGroupInfo(e->k, m->d->dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof v,
                                            &v, NULL) == CL_SUCCESS)
            ki->local_bytes = (int)v;
    }
    free(names);
    *info = out;
    return k;
}

static rt_buf *ocl_alloc(rt_device *d, size_t bytes, char *err, size_t errlen)
{
    if (!ocl_usable(d, err, errlen)) return NULL;
    rt_buf *b = calloc(1, sizeof *b);
    if (!b) { rt_error(err, errlen, "out of memory"); return NULL; }
    cl_int rc;
    /* OpenCL refuses empty buffers; a one-byte one stands in. */
    b->mem = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &rc);
    if (!b->mem) {
        rt_error(err, errlen, "clCreateBuffer of %zu bytes: %s", bytes, ocl_status_name(rc));
        free(b);
        return NULL;
    }
    b->d = d;
    b->bytes = bytes;
    d->refs++;
    return b;
}

static void ocl_buf_free(rt_buf *b)
{
    if (!b) return;
    rt_device *d = b->d;
    if (!d->broken) ocl.ReleaseMemObject(b->mem);
    free(b);
    ocl_dev_release(d);
}

/* Blocking copies, once earlier launches have finished within the last
 * limit given to finish() (a blocking copy behind a runaway kernel would
 * never return). */
static int ocl_copy(rt_buf *b, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    if (!b) { rt_error(err, errlen, "no buffer"); return -1; }
    if (bytes > b->bytes) {
        rt_error(err, errlen, "copy of %zu bytes into a buffer of %zu", bytes, b->bytes);
        return -1;
    }
    rt_device *d = b->d;
    int rc = ocl_wait(d, d->limit_ms, err, errlen);
    if (rc != 0 || bytes == 0) return rc;
    cl_int st = dst ? ocl.EnqueueReadBuffer(d->q, b->mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL)
                    : ocl.EnqueueWriteBuffer(d->q, b->mem, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        rt_error(err, errlen, "%s of %zu bytes: %s",
                  dst ? "clEnqueueReadBuffer" : "clEnqueueWriteBuffer", bytes, ocl_status_name(st));
        return -1;
    }
    return 0;
}

static int ocl_write(rt_buf *b, const void *src, size_t bytes, char *err, size_t errlen)
{
    return ocl_copy(b, NULL, src, bytes, err, errlen);
}

static int ocl_read(rt_buf *b, void *dst, size_t bytes, char *err, size_t errlen)
{
    return ocl_copy(b, dst, NULL, bytes, err, errlen);
}

/* The module's kernel of that name, made on first use and kept. */
static ocl_kentry *ocl_kernel(rt_module *m, const char *name, char *err, size_t errlen)
{
    for (int i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[i].name, name) == 0) return &m->kernels[i];
    cl_int rc;
    cl_kernel k = ocl.CreateKernel(m->prog, name, &rc);
    if (!k) {
        if (rc == CL_INVALID_KERNEL_NAME)
            rt_error(err, errlen, "unknown kernel %s in this module", name);
        else
            rt_error(err, errlen, "clCreateKernel(%s): %s", name, ocl_status_name(rc));
        return NULL;
    }
    if (m->nkernels == m->cap) {
        int cap = m->cap ? 2 * m->cap : 8;
        ocl_kentry *grown = realloc(m->kernels, (size_t)cap * sizeof *grown);
        if (!grown) {
            ocl.ReleaseKernel(k);
            rt_error(err, errlen, "out of memory");
            return NULL;
        }
        m->kernels = grown;
        m->cap = cap;
    }
    ocl_kentry *e = &m->kernels[m->nkernels];
    e->name = malloc(strlen(name) + 1);
    if (!e->name) {
        ocl.ReleaseKernel(k);
        rt_error(err, errlen, "out of memory");
        return NULL;
    }
    strcpy(e->name, name);
    e->k = k;
    if (ocl.GetKernelWorkGroupInfo(k, m->d->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof e->max_wg,
                                   &e->max_wg, NULL) != CL_SUCCESS || e->max_wg == 0)
        e->max_wg = m->d->max_wg;
    if (ocl.GetKernelWorkGroupInfo(k, m->d->dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof e->wg, e->wg,
                                   NULL) != CL_SUCCESS)
        e->wg[0] = e->wg[1] = e->wg[2] = 0;
    m->nkernels++;
    return e;
}

static int ocl_launch(rt_module *m, const char *kernel, int64_t nblocks, int nthreads,
                     int nargs, const rt_arg *args, char *err, size_t errlen)
{
    if (!m || !kernel) { rt_error(err, errlen, "no module or no kernel name"); return -1; }
    rt_device *d = m->d;
    if (!ocl_usable(d, err, errlen)) return -1;
    if (nblocks < 0 || nthreads < 1 || nargs < 0 || (nargs > 0 && !args)) {
        rt_error(err, errlen, "launch of %s over %lld blocks of %d threads with %d arguments: bad shape",
                  kernel, (long long)nblocks, nthreads, nargs);
        return -1;
    }
    ocl_kentry *e = ocl_kernel(m, kernel, err, errlen);
    if (!e) return -1;
    if ((size_t)nthreads > d->max_wg || (size_t)nthreads > d->max_item[0]) {
        rt_error(err, errlen, "kernel %s: %d threads per block exceed the device's max work-group size %zu",
                  kernel, nthreads, d->max_wg < d->max_item[0] ? d->max_wg : d->max_item[0]);
        return -1;
    }
    if ((size_t)nthreads > e->max_wg) {
        rt_error(err, errlen, "kernel %s: %d threads per block exceed its max work-group size %zu "
                  "(CL_KERNEL_WORK_GROUP_SIZE: it uses too many resources per work-item)",
                  kernel, nthreads, e->max_wg);
        return -1;
    }
    if ((uint64_t)nblocks > SIZE_MAX / (uint64_t)nthreads) {
        rt_error(err, errlen, "kernel %s: %lld blocks of %d threads overflow the global size",
                  kernel, (long long)nblocks, nthreads);
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        cl_int rc;
        cl_int iv;
        cl_float fv;
        switch (args[i].kind) {
        case RT_ARG_BUF:
            if (!args[i].buf || args[i].buf->d != d) {
                rt_error(err, errlen, "kernel %s: argument %d is not a buffer of this device", kernel, i);
                return -1;
            }
            rc = ocl.SetKernelArg(e->k, (cl_uint)i, sizeof(cl_mem), &args[i].buf->mem);
            break;
        case RT_ARG_I32:
            iv = args[i].i;
            rc = ocl.SetKernelArg(e->k, (cl_uint)i, sizeof iv, &iv);
            break;
        default:
            fv = args[i].f;
            rc = ocl.SetKernelArg(e->k, (cl_uint)i, sizeof fv, &fv);
            break;
        }
        if (rc != CL_SUCCESS) {
            rt_error(err, errlen, "kernel %s: argument %d: %s", kernel, i, ocl_status_name(rc));
            return -1;
        }
    }
    if (nblocks == 0) return 0;
    /* a kernel that requires a work-group shape whose size is nthreads
     * (generated code: lower_kernel.tdim) gets it, block b being group
     * (b, 0, 0); any other runs in one dimension */
    size_t local[3] = { (size_t)nthreads, 1, 1 }, global[3];
    cl_uint dims = 1;
    if (e->wg[0] && e->wg[0] * (e->wg[1] ? e->wg[1] : 1) * (e->wg[2] ? e->wg[2] : 1) == (size_t)nthreads) {
        local[0] = e->wg[0];
        local[1] = e->wg[1] ? e->wg[1] : 1;
        local[2] = e->wg[2] ? e->wg[2] : 1;
        dims = local[2] > 1 ? 3 : local[1] > 1 ? 2 : 1;
        for (int i = 0; i < 3; i++)
            if (local[i] > d->max_item[i]) {
                rt_error(err, errlen, "kernel %s requires work-groups of %zu x %zu x %zu, beyond the device's "
                         "work-item sizes (%zu x %zu x %zu)", kernel, local[0], local[1], local[2],
                         d->max_item[0], d->max_item[1], d->max_item[2]);
                return -1;
            }
    }
    global[0] = (size_t)nblocks * local[0];
    global[1] = local[1];
    global[2] = local[2];
    cl_event ev = NULL;
    cl_int rc = ocl.EnqueueNDRangeKernel(d->q, e->k, dims, NULL, global, local, 0, NULL, &ev);
    if (rc != CL_SUCCESS) {
        rt_error(err, errlen, "kernel %s over %lld blocks of %d threads: %s", kernel,
                  (long long)nblocks, nthreads, ocl_status_name(rc));
        return -1;
    }
    snprintf(d->last_name, sizeof d->last_name, "%s", kernel);
    if (d->ev_last) ocl.ReleaseEvent(d->ev_last);
    d->ev_last = ev;
    if (d->timing) {
        if (!d->ev_first_timed) {
            ocl.RetainEvent(ev);
            d->ev_first_timed = ev;
        }
        if (d->ev_last_timed) ocl.ReleaseEvent(d->ev_last_timed);
        ocl.RetainEvent(ev);
        d->ev_last_timed = ev;
    }
    return 0;
}

static int ocl_finish(rt_device *d, int timeout_ms, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return -1; }
    d->limit_ms = timeout_ms;
    return ocl_wait(d, timeout_ms, err, errlen);
}

static int ocl_timer_start(rt_device *d, char *err, size_t errlen)
{
    if (!ocl_usable(d, err, errlen)) return -1;
    if (d->ev_first_timed) ocl.ReleaseEvent(d->ev_first_timed);
    if (d->ev_last_timed) ocl.ReleaseEvent(d->ev_last_timed);
    d->ev_first_timed = d->ev_last_timed = NULL;
    d->timing = 1;
    d->host_t0 = ocl_now();
    return 0;
}

/* From the first timed launch's START to the last one's END, by the
 * profiling counters; the host clock if the driver has none. */
static double ocl_timer_stop(rt_device *d)
{
    if (!d || !d->timing) return -1;
    d->timing = 0;
    if (ocl_wait(d, d->limit_ms, NULL, 0) != 0) return -1;
    double host_ms = (ocl_now() - d->host_t0) * 1e3;
    if (!d->ev_first_timed) return 0.0;
    cl_ulong start = 0, end = 0;
    cl_int r1 = ocl.GetEventProfilingInfo(d->ev_first_timed, CL_PROFILING_COMMAND_START,
                                          sizeof start, &start, NULL);
    cl_int r2 = ocl.GetEventProfilingInfo(d->ev_last_timed, CL_PROFILING_COMMAND_END,
                                          sizeof end, &end, NULL);
    ocl.ReleaseEvent(d->ev_first_timed);
    ocl.ReleaseEvent(d->ev_last_timed);
    d->ev_first_timed = d->ev_last_timed = NULL;
    if (r1 != CL_SUCCESS || r2 != CL_SUCCESS || end < start) return host_ms;
    return (double)(end - start) * 1e-6;
}

/* The preferred work-group size multiple (the SIMD or warp width) is a
 * kernel property: asked of a one-line probe kernel, once. */
static int ocl_probe_simd(rt_device *d)
{
    static const char *src = "__kernel void sc_probe(__global int *p) { p[get_global_id(0)] = 0; }\n";
    int width = 32;
    cl_int rc;
    cl_program prog = ocl.CreateProgramWithSource(d->ctx, 1, &src, NULL, &rc);
    if (!prog) return width;
    if (ocl.BuildProgram(prog, 1, &d->dev, "", NULL, NULL) == CL_SUCCESS) {
        cl_kernel k = ocl.CreateKernel(prog, "sc_probe", &rc);
        if (k) {
            size_t mult = 0;
            if (ocl.GetKernelWorkGroupInfo(k, d->dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                           sizeof mult, &mult, NULL) == CL_SUCCESS && mult > 0 &&
                mult <= 1024)
                width = (int)mult;
            ocl.ReleaseKernel(k);
        }
    }
    ocl.ReleaseProgram(prog);
    return width;
}

int rt_opencl_query(rt_device *d, rt_device_limits *out)
{
    if (!d || !out || d->magic != CL_DEV_MAGIC || !ocl_usable(d, NULL, 0)) return -1;
    memset(out, 0, sizeof *out);
    ocl_device_str(d->dev, CL_DEVICE_NAME, out->name, sizeof out->name);
    cl_uint u = 0;
    cl_ulong ul = 0;
    cl_device_type type = 0;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL) == CL_SUCCESS)
        out->compute_units = (int)u;
    out->max_work_group_size = d->max_wg > INT32_MAX ? INT32_MAX : (int)d->max_wg;
    size_t items[3] = {0, 0, 0};
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) ==
        CL_SUCCESS)
        for (int i = 0; i < 3; i++)
            out->max_work_item_sizes[i] = items[i] > INT32_MAX ? INT32_MAX : (int)items[i];
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
        out->local_mem_bytes = (int64_t)ul;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL) == CL_SUCCESS)
        out->global_mem_bytes = (int64_t)ul;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof ul, &ul, NULL) ==
        CL_SUCCESS)
        out->global_cache_bytes = (int64_t)ul;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, sizeof u, &u, NULL) ==
        CL_SUCCESS)
        out->cache_line_bytes = (int)u;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL) == CL_SUCCESS)
        out->max_clock_mhz = (int)u;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof u, &u, NULL) ==
        CL_SUCCESS)
        out->preferred_vector_width_float = (int)u;
    if (ocl.GetDeviceInfo(d->dev, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS)
        out->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    if (!d->simd_width) d->simd_width = ocl_probe_simd(d);
    out->simd_width = d->simd_width;
    return 0;
}

const rt_ops rt_opencl_ops = {
    .name = "opencl",
    .open = ocl_open,
    .close = ocl_close,
    .describe = ocl_describe,
    .can_run = ocl_can_run,
    .compile = ocl_compile,
    .module_free = ocl_module_free,
    .kernel_info = ocl_kernel_info,
    .alloc = ocl_alloc,
    .buf_free = ocl_buf_free,
    .write = ocl_write,
    .read = ocl_read,
    .launch = ocl_launch,
    .finish = ocl_finish,
    .timer_start = ocl_timer_start,
    .timer_stop = ocl_timer_stop,
};
