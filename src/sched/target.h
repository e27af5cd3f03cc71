/*
 * target.h - GPU targets: the hardware a schedule is made for.
 *
 * A target file (targets/NAME.target) is `key = value` lines with '#'
 * comments; every key below is required (shared_mem_reserved_per_block may
 * be 0, every other number is positive).  The `host-opencl` and
 * `host-cuda` targets are not files: they are filled in from the OpenCL
 * device's, or the first CUDA GPU's, own queries.
 */
#ifndef SC_TARGET_H
#define SC_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char name[64];
    int sm_count;                 /* streaming multiprocessors / compute units */
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_sm;
    int shared_mem_per_block;     /* bytes */
    int shared_mem_per_sm;        /* bytes */
    int registers_per_sm;         /* 32-bit registers */
    int registers_per_thread;     /* max per thread */
    int max_blocks_per_sm;
    double mem_bandwidth_gbs;     /* GB/s */
    double peak_gflops;           /* f32 */
    int l2_bytes;
    char cuda_arch[16];           /* "sm_80"; empty if not a CUDA GPU */
    /* Allocation rules of the occupancy calculator (occupancy.h): */
    int reg_alloc_unit;           /* registers of a warp are allocated in multiples of this */
    int warp_alloc_granularity;   /* warps the register file is allocated to, per step */
    int shared_mem_alloc_unit;    /* bytes; a block's shared memory is rounded up to it */
    int shared_mem_reserved_per_block;  /* bytes the system takes per block (>= 0) */
    /* `kind = gpu|cpu` (optional, gpu when absent): a CPU keeps the cache
     * lines a warp has touched in its L1 across the warp's serial
     * iterations and accesses, so the featurizer counts a warp's
     * transactions as the distinct sectors it touches (feat_warp.h).  A
     * host-opencl text written before the key existed is a CPU exactly
     * when it has one block per SM and allocation units of 1, as
     * fill_from_opencl wrote CPUs. */
    bool cpu;
    /* `max_threads_per_dim = X,Y,Z` (optional): an OpenCL device's limits
     * of a work-group along each of its three dimensions
     * (CL_DEVICE_MAX_WORK_ITEM_SIZES); all 0 where the target has none
     * beyond max_threads_per_block (CUDA code runs one-dimensional
     * blocks).  What a root stage's threads make of the three dimensions
     * is target_group_dims'. */
    int max_threads_per_dim[3];
} target;

/* The work-group an OpenCL kernel of a root stage runs (lower.h): the
 * threads of its first two threaded loops, then the product of the other
 * threaded loops' (1 where there are fewer).  threads: n loops' thread
 * counts, 1 for a loop without threads.  Whether more than three loops
 * were merged into the third dimension is returned. */
bool target_group_dims(const int *threads, int n, int64_t dims[3]);
/* The first dimension of a work-group over t's per-dimension limits, or
 * -1 (always -1 for a target without them). */
int target_dim_over(const target *t, const int64_t dims[3]);

/* Whether code for t stages producers in registers (Anderson et al.
 * §6.7): a GPU's does (t NULL: a GPU); a CPU's does not, as PoCL keeps a
 * work-item's private array in memory (docs/backends.md, generation 7).
 * What every loop-nest context working for a target is set to
 * (nest_ctx_set_staging) and what lowering for it follows. */
static inline bool target_stages_registers(const target *t) { return !(t && t->cpu); }
/* Whether code for t gives a thread's points along a stage's first loop
 * cyclically, threads apart (nest_ctx_set_cyclic): a CPU's does, as PoCL
 * vectorizes over neighbouring work-items (docs/backends.md, generation
 * 20); a GPU's keeps them consecutive (t NULL: a GPU). */
static inline bool target_cyclic_points(const target *t) { return t && t->cpu; }

/* Reads a target file; 0, or -1 with "FILE:LINE: message" in err. */
int target_load(const char *path, target *t, char *err, size_t errlen);
/* The same from text in file form (target_print's); what names it in
 * messages ("FILE:LINE: message" with what as FILE). */
int target_parse(const char *what, const char *text, target *t, char *err, size_t errlen);
/* By name: targets/NAME.target under dir (NULL: $STAGECRAFT_TARGETS,
 * else ./targets, else the targets/ folder beside the program's folder), or
 * "host-opencl" from the OpenCL device, or "host-cuda" from the first CUDA GPU.  0, or -1 with err. */
int target_by_name(const char *name, const char *dir, target *t, char *err, size_t errlen);
/* The `host-cuda` target from what a CUDA GPU reports (rt.h); the rates
 * the driver does not give are derived as target.c says.  0, or -1 with
 * err when the limits are inconsistent. */
struct rt_cuda_limits;
int target_from_cuda(const struct rt_cuda_limits *l, target *t, char *err, size_t errlen);
/* Writes the target in file form. */
void target_print(const target *t, char *buf, size_t len);

#endif
