/*
 * rt.c - choosing a runtime back end: by name, or the best one present
 * (DESIGN.md, "Targets and devices": the first CUDA GPU, else the first
 * OpenCL device, else the C compiler).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

void rt_error(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Every runtime, in the order rt_open_best tries them. */
static const rt_ops *const all_ops[] = {&rt_cuda_ops, &rt_opencl_ops, &rt_c_ops};
enum { NOPS = sizeof all_ops / sizeof all_ops[0] };

const rt_ops *rt_ops_by_name(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < NOPS; i++)
        if (strcmp(all_ops[i]->name, name) == 0) return all_ops[i];
    return NULL;
}

const char *rt_ops_names(char *buf, size_t len, const char *sep, const char *last)
{
    size_t n = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < NOPS && n < len; i++) {
        int w = snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : i == NOPS - 1 ? last : sep, all_ops[i]->name);
        if (w < 0) break;
        n += (size_t)w;
    }
    return buf;
}

/* CUDA counts only where kernels can run: a compile-only CUDA device (NVRTC
 * without a GPU) is passed over.  If nothing opens, err says why each back
 * end did not. */
rt_device *rt_open_best(const rt_ops **ops, char *err, size_t errlen)
{
    char why_cuda[256] = "", why_cl[256] = "", why_c[256] = "";
    rt_device *d = rt_cuda_ops.open(why_cuda, sizeof why_cuda);
    if (d && rt_cuda_ops.can_run(d)) {
        if (ops) *ops = &rt_cuda_ops;
        return d;
    }
    if (d) {
        snprintf(why_cuda, sizeof why_cuda, "%s", rt_cuda_ops.describe(d));
        rt_cuda_ops.close(d);
    }
    d = rt_opencl_ops.open(why_cl, sizeof why_cl);
    if (d) {
        if (ops) *ops = &rt_opencl_ops;
        return d;
    }
    d = rt_c_ops.open(why_c, sizeof why_c);
    if (d) {
        if (ops) *ops = &rt_c_ops;
        return d;
    }
    if (ops) *ops = NULL;
    if (err && errlen)
        snprintf(err, errlen, "no device: cuda: %s; opencl: %s; c: %s", why_cuda, why_cl, why_c);
    return NULL;
}
