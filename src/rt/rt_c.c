/*
 * rt_c.c - the C back end: generated C is compiled by the system C compiler
 * into a shared object (in a private temporary directory, removed at once)
 * and loaded with dlopen.  A kernel is
 *     void NAME(int64_t nblocks, int32_t nthreads, void **args)
 * whose blocks are an OpenMP parallel loop and whose threads a serial loop.
 *
 * Launches are queued to one worker thread per device, so that finish() can
 * wait with a time limit: a kernel that runs past it cannot be stopped (a
 * thread cannot be killed safely, and the process must live on), so the
 * device is marked unusable and every later call fails cleanly.  Whatever a
 * running kernel touches (its module, its buffers, the device itself) is
 * reference counted, so that closing the device or freeing a buffer while a
 * runaway kernel still runs leaves that memory to the worker, which frees it
 * if the kernel ever returns.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

typedef void (*c_kernel_fn)(int64_t nblocks, int32_t nthreads, void **args);

typedef union {
    void *p;
    int32_t i;
    float f;
} c_slot;

/* One queued launch.  It holds a reference on its module and buffers. */
typedef struct c_job {
    struct c_job *next;
    rt_module *m;
    c_kernel_fn fn;
    char name[128];
    int64_t nblocks;
    int32_t nthreads;
    int timed;                  /* launched between timer_start and _stop */
    int nargs;
    rt_buf **bufs;              /* nargs entries, NULL for scalars */
    c_slot *slots;
    void **argv;                /* argv[i] = &slots[i] */
} c_job;

struct rt_device {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;     /* worker waits for jobs or quit */
    pthread_cond_t done_cv;     /* finish waits for the queue to drain */
    pthread_t worker;
    int refs;                   /* user + worker + modules + buffers */
    c_job *head, *tail;
    c_job *running;
    int quit;
    int broken;                 /* a kernel ran past its time limit */
    char broken_msg[256];
    int limit_ms;               /* last finish limit, for read/write/timer */
    int timing;
    double t_first, t_last;     /* seconds, CLOCK_MONOTONIC */
    char desc[256];
};

struct rt_module {
    rt_device *d;
    void *so;
    char path[512];             /* as given to dlopen, to check dladdr */
    int refs;                   /* user + queued jobs; under d->mu */
};

struct rt_buf {
    rt_device *d;
    void *data;
    size_t bytes;
    int refs;                   /* user + queued jobs; under d->mu */
};

/* Formats a message into err (which may be NULL). */
static double c_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Drops one reference on the device; frees it with the last one.  Called
 * without d->mu held. */
static void c_dev_release(rt_device *d)
{
    pthread_mutex_lock(&d->mu);
    int left = --d->refs;
    pthread_mutex_unlock(&d->mu);
    if (left > 0) return;
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->work_cv);
    pthread_cond_destroy(&d->done_cv);
    free(d);
}

/* Reference drops for modules and buffers, with d->mu held.  They return
 * whether the object died; the caller then releases the device (unlocked). */
static int c_module_unref_locked(rt_module *m)
{
    if (--m->refs > 0) return 0;
    dlclose(m->so);
    free(m);
    return 1;
}

static int c_buf_unref_locked(rt_buf *b)
{
    if (--b->refs > 0) return 0;
    free(b->data);
    free(b);
    return 1;
}

/* Releases what a job holds, with d->mu held; returns the number of device
 * references to drop once unlocked. */
static int c_job_free_locked(c_job *j)
{
    int dead = c_module_unref_locked(j->m);
    for (int i = 0; i < j->nargs; i++)
        if (j->bufs[i]) dead += c_buf_unref_locked(j->bufs[i]);
    free(j);
    return dead;
}

/* The worker: runs queued launches in order until told to quit, or until a
 * launch has run past its limit; then pending jobs are dropped.  It owns
 * one device reference. */
static void *c_worker(void *arg)
{
    rt_device *d = arg;
    int dead = 0;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->head && !d->quit && !d->broken)
            pthread_cond_wait(&d->work_cv, &d->mu);
        if (d->quit || d->broken) break;    /* after a time out, run no more */
        c_job *j = d->head;
        d->head = j->next;
        if (!d->head) d->tail = NULL;
        d->running = j;
        pthread_mutex_unlock(&d->mu);

        double t0 = c_now();
        j->fn(j->nblocks, j->nthreads, j->argv);
        double t1 = c_now();

        pthread_mutex_lock(&d->mu);
        if (j->timed && d->timing) {
            if (d->t_first < 0) d->t_first = t0;
            d->t_last = t1;
        }
        d->running = NULL;
        dead += c_job_free_locked(j);
        pthread_cond_broadcast(&d->done_cv);
    }
    while (d->head) {
        c_job *j = d->head;
        d->head = j->next;
        dead += c_job_free_locked(j);
    }
    d->tail = NULL;
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < dead; i++) c_dev_release(d);
    c_dev_release(d);
    return NULL;
}

static rt_device *c_open(char *err, size_t errlen)
{
    rt_device *d = calloc(1, sizeof *d);
    if (!d) { rt_error(err, errlen, "out of memory"); return NULL; }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->work_cv, NULL);
    pthread_cond_init(&d->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    d->refs = 2;                /* the caller's and the worker's */
    d->t_first = d->t_last = -1;

    /* Kernels may keep large per-thread arrays on the stack. */
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setstacksize(&ta, (size_t)64 << 20);
    int rc = pthread_create(&d->worker, &ta, c_worker, d);
    pthread_attr_destroy(&ta);
    if (rc != 0) {
        rt_error(err, errlen, "cannot start the C back end's worker thread: %s", strerror(rc));
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->work_cv);
        pthread_cond_destroy(&d->done_cv);
        free(d);
        return NULL;
    }
    const char *cc = getenv("CC");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(d->desc, sizeof d->desc, "C (%s -O2 -march=native -fopenmp) on %ld host cores",
             cc && *cc ? cc : "cc", ncpu);
    return d;
}

/* Closes the device.  Queued launches are dropped; a running one is waited
 * for, unless finish() already found it stuck: then the worker is left to
 * it and frees what it holds if it ever returns. */
static void c_close(rt_device *d)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    int broken = d->broken;
    pthread_cond_broadcast(&d->work_cv);
    pthread_mutex_unlock(&d->mu);
    if (broken) pthread_detach(d->worker);
    else pthread_join(d->worker, NULL);
    c_dev_release(d);
}

static const char *c_describe(rt_device *d)
{
    return d ? d->desc : "C";
}

static int c_can_run(rt_device *d)
{
    if (!d) return 0;
    pthread_mutex_lock(&d->mu);
    int ok = !d->broken;
    pthread_mutex_unlock(&d->mu);
    return ok;
}

/* Whether the device is still usable; fills err if not.  d->mu held. */
static int c_usable_locked(rt_device *d, char *err, size_t errlen)
{
    if (!d->broken) return 1;
    rt_error(err, errlen, "C device unusable: %s", d->broken_msg);
    return 0;
}

/* Waits until every queued launch has run, at most limit_ms (<= 0: no
 * limit).  0, -2 on time out (the device becomes unusable), -1 if it
 * already was.  d->mu held. */
static int c_wait_locked(rt_device *d, int limit_ms, char *err, size_t errlen)
{
    if (!c_usable_locked(d, err, errlen)) return -1;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (limit_ms > 0) {
        dl.tv_sec += limit_ms / 1000;
        dl.tv_nsec += (long)(limit_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
    }
    while (d->head || d->running) {
        int rc = limit_ms > 0 ? pthread_cond_timedwait(&d->done_cv, &d->mu, &dl)
                              : pthread_cond_wait(&d->done_cv, &d->mu);
        if (rc == ETIMEDOUT && (d->head || d->running)) {
            const char *name = d->running ? d->running->name : d->head->name;
            d->broken = 1;
            snprintf(d->broken_msg, sizeof d->broken_msg,
                     "kernel %s ran past the time limit of %d ms", name, limit_ms);
            rt_error(err, errlen, "%s", d->broken_msg);
            return -2;
        }
    }
    return 0;
}

/* Writes the whole string to a file; 0 or -1. */
static int c_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    if (fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* Makes the OpenMP runtime that a kernel library pulled in stay loaded
 * after the library is closed: its pooled threads outlive a module, and
 * unmapping their code under them would crash. */
static void c_pin_openmp(void)
{
    static const char *libs[] = {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
        if (h) dlclose(h);
    }
}

/* Compiles the source with $CC (default cc) into a shared object in a
 * fresh private directory, loads it, and removes the directory.  options
 * are extra compiler flags.  The compiler's output goes to log. */
static rt_module *c_compile(rt_device *d, const char *source, const char *options,
                            char *log, size_t loglen)
{
    if (log && loglen) log[0] = '\0';
    if (!d || !source) { rt_error(log, loglen, "no device or no source"); return NULL; }
    pthread_mutex_lock(&d->mu);
    int ok = c_usable_locked(d, log, loglen);
    pthread_mutex_unlock(&d->mu);
    if (!ok) return NULL;

    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strchr(tmp, '\'') || strlen(tmp) > 200) tmp = "/tmp";
    char dir[256], src[300], so[300];
    snprintf(dir, sizeof dir, "%s/sc_rt_c_XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        rt_error(log, loglen, "cannot make a temporary directory in %s: %s", tmp, strerror(errno));
        return NULL;
    }
    snprintf(src, sizeof src, "%s/kernels.c", dir);
    snprintf(so, sizeof so, "%s/kernels.so", dir);
    rt_module *m = NULL;
    char *cmd = NULL;
    if (c_write_file(src, source) != 0) {
        rt_error(log, loglen, "cannot write %s: %s", src, strerror(errno));
        goto done;
    }

    const char *cc = getenv("CC");
    if (!cc || !*cc) cc = "cc";
    if (!options) options = "";
    size_t cmdlen = strlen(cc) + strlen(options) + 2 * sizeof so + 128;
    cmd = malloc(cmdlen);
    if (!cmd) { rt_error(log, loglen, "out of memory"); goto done; }
    snprintf(cmd, cmdlen, "%s -O2 -march=native -fopenmp -shared -fPIC -std=c11 %s -o '%s' '%s' -lm 2>&1",
             cc, options, so, src);
    FILE *p = popen(cmd, "r");
    if (!p) {
        rt_error(log, loglen, "cannot run the C compiler (%s): %s", cc, strerror(errno));
        goto done;
    }
    size_t used = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) {
        if (log && loglen > used + 1) {
            size_t take = n < loglen - used - 1 ? n : loglen - used - 1;
            memcpy(log + used, chunk, take);
            used += take;
            log[used] = '\0';
        }
    }
    int status = pclose(p);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char tail[160];
        snprintf(tail, sizeof tail, "%s%s failed (exit status %d)\n", used ? "\n" : "", cc,
                 status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        if (log && loglen > used + 1) snprintf(log + used, loglen - used, "%s", tail);
        goto done;
    }

    m = calloc(1, sizeof *m);
    if (!m) { rt_error(log, loglen, "out of memory"); goto done; }
    snprintf(m->path, sizeof m->path, "%s", so);
    m->so = dlopen(so, RTLD_LOCAL | RTLD_NOW);
    if (!m->so) {
        rt_error(log, loglen, "cannot load the compiled kernels: %s", dlerror());
        free(m);
        m = NULL;
        goto done;
    }
    c_pin_openmp();
    m->d = d;
    m->refs = 1;
    pthread_mutex_lock(&d->mu);
    d->refs++;
    pthread_mutex_unlock(&d->mu);
done:
    free(cmd);
    unlink(src);
    unlink(so);
    rmdir(dir);
    return m;
}

static void c_module_free(rt_module *m)
{
    if (!m) return;
    rt_device *d = m->d;
    pthread_mutex_lock(&d->mu);
    int dead = c_module_unref_locked(m);
    pthread_mutex_unlock(&d->mu);
    if (dead) c_dev_release(d);
}

/* The C compiler reports nothing per kernel. */
static int c_kernel_info(rt_module *m, rt_kernel_info **info)
{
    (void)m;
    if (info) *info = NULL;
    return 0;
}

/* Host memory, 64-byte aligned (a cache line, the widest vector). */
static rt_buf *c_alloc(rt_device *d, size_t bytes, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return NULL; }
    pthread_mutex_lock(&d->mu);
    int ok = c_usable_locked(d, err, errlen);
    pthread_mutex_unlock(&d->mu);
    if (!ok) return NULL;
    rt_buf *b = calloc(1, sizeof *b);
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes) rounded = 0;
    if (b && rounded >= bytes) b->data = aligned_alloc(64, rounded ? rounded : 64);
    if (!b || !b->data) {
        free(b);
        rt_error(err, errlen, "cannot allocate %zu bytes of host memory", bytes);
        return NULL;
    }
    memset(b->data, 0, rounded ? rounded : 64);
    b->d = d;
    b->bytes = bytes;
    b->refs = 1;
    pthread_mutex_lock(&d->mu);
    d->refs++;
    pthread_mutex_unlock(&d->mu);
    return b;
}

static void c_buf_free(rt_buf *b)
{
    if (!b) return;
    rt_device *d = b->d;
    pthread_mutex_lock(&d->mu);
    int dead = c_buf_unref_locked(b);
    pthread_mutex_unlock(&d->mu);
    if (dead) c_dev_release(d);
}

/* Copies between host and a buffer once queued launches have run (they may
 * use it), within the last limit given to finish(). */
static int c_copy(rt_buf *b, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    if (!b) { rt_error(err, errlen, "no buffer"); return -1; }
    if (bytes > b->bytes) {
        rt_error(err, errlen, "copy of %zu bytes into a buffer of %zu", bytes, b->bytes);
        return -1;
    }
    rt_device *d = b->d;
    pthread_mutex_lock(&d->mu);
    int rc = c_wait_locked(d, d->limit_ms, err, errlen);
    pthread_mutex_unlock(&d->mu);
    if (rc != 0) return rc;
    if (bytes) memcpy(dst ? dst : b->data, dst ? b->data : src, bytes);
    return 0;
}

static int c_write(rt_buf *b, const void *src, size_t bytes, char *err, size_t errlen)
{
    return c_copy(b, NULL, src, bytes, err, errlen);
}

static int c_read(rt_buf *b, void *dst, size_t bytes, char *err, size_t errlen)
{
    return c_copy(b, dst, NULL, bytes, err, errlen);
}

/* Looks the kernel up in the module alone (dlsym on a handle also finds the
 * symbols of the libraries it depends on, printf say). */
static c_kernel_fn c_lookup(rt_module *m, const char *kernel)
{
    void *sym = dlsym(m->so, kernel);
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || strcmp(info.dli_fname, m->path) != 0)
        return NULL;
    c_kernel_fn fn;
    memcpy(&fn, &sym, sizeof fn);   /* object to function pointer, as POSIX allows */
    return fn;
}

/* Queues one launch for the worker. */
static int c_launch(rt_module *m, const char *kernel, int64_t nblocks, int nthreads,
                    int nargs, const rt_arg *args, char *err, size_t errlen)
{
    if (!m || !kernel) { rt_error(err, errlen, "no module or no kernel name"); return -1; }
    rt_device *d = m->d;
    if (nblocks < 0 || nthreads < 1 || nargs < 0 || (nargs > 0 && !args)) {
        rt_error(err, errlen, "launch of %s over %lld blocks of %d threads with %d arguments: bad shape",
              kernel, (long long)nblocks, nthreads, nargs);
        return -1;
    }
    c_kernel_fn fn = c_lookup(m, kernel);
    if (!fn) { rt_error(err, errlen, "unknown kernel %s in this module", kernel); return -1; }
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind == RT_ARG_BUF && (!args[i].buf || args[i].buf->d != d)) {
            rt_error(err, errlen, "kernel %s: argument %d is not a buffer of this device", kernel, i);
            return -1;
        }
    }
    size_t na = (size_t)nargs;
    c_job *j = calloc(1, sizeof *j + na * (sizeof(rt_buf *) + sizeof(c_slot) + sizeof(void *)));
    if (!j) { rt_error(err, errlen, "out of memory"); return -1; }
    /* Layout after the header: slots (the most aligned), then pointers. */
    j->slots = (c_slot *)(j + 1);
    j->bufs = (rt_buf **)(j->slots + na);
    j->argv = (void **)(j->bufs + na);
    j->fn = fn;
    snprintf(j->name, sizeof j->name, "%s", kernel);
    j->nblocks = nblocks;
    j->nthreads = nthreads;
    j->nargs = nargs;
    j->m = m;

    pthread_mutex_lock(&d->mu);
    if (!c_usable_locked(d, err, errlen)) {
        pthread_mutex_unlock(&d->mu);
        free(j);
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case RT_ARG_BUF:
            j->bufs[i] = args[i].buf;
            j->bufs[i]->refs++;
            j->slots[i].p = args[i].buf->data;
            break;
        case RT_ARG_I32: j->slots[i].i = args[i].i; break;
        case RT_ARG_F32: j->slots[i].f = args[i].f; break;
        }
        j->argv[i] = &j->slots[i];
    }
    m->refs++;
    j->timed = d->timing;
    if (d->tail) d->tail->next = j;
    else d->head = j;
    d->tail = j;
    pthread_cond_signal(&d->work_cv);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

static int c_finish(rt_device *d, int timeout_ms, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return -1; }
    pthread_mutex_lock(&d->mu);
    d->limit_ms = timeout_ms;
    int rc = c_wait_locked(d, timeout_ms, err, errlen);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* Timing: the worker stamps the first timed launch's start and the last
 * one's end with the monotonic clock. */
static int c_timer_start(rt_device *d, char *err, size_t errlen)
{
    if (!d) { rt_error(err, errlen, "no device"); return -1; }
    pthread_mutex_lock(&d->mu);
    d->timing = 1;
    d->t_first = d->t_last = -1;
    int ok = c_usable_locked(d, err, errlen);
    pthread_mutex_unlock(&d->mu);
    return ok ? 0 : -1;
}

static double c_timer_stop(rt_device *d)
{
    if (!d) return -1;
    pthread_mutex_lock(&d->mu);
    int rc = c_wait_locked(d, d->limit_ms, NULL, 0);
    double ms = -1;
    if (rc == 0) ms = d->t_first < 0 ? 0.0 : (d->t_last - d->t_first) * 1e3;
    d->timing = 0;
    pthread_mutex_unlock(&d->mu);
    return ms;
}

const rt_ops rt_c_ops = {
    .name = "c",
    .open = c_open,
    .close = c_close,
    .describe = c_describe,
    .can_run = c_can_run,
    .compile = c_compile,
    .module_free = c_module_free,
    .kernel_info = c_kernel_info,
    .alloc = c_alloc,
    .buf_free = c_buf_free,
    .write = c_write,
    .read = c_read,
    .launch = c_launch,
    .finish = c_finish,
    .timer_start = c_timer_start,
    .timer_stop = c_timer_stop,
};
