/*
 * randpipe.h - random training pipelines for the learned cost model
 * (Anderson et al. 2021 §7 trains on random pipelines): .pipe text made of
 * the operations imaging and ML pipelines are made of, chained the way real
 * pipelines chain them.  docs/random_pipelines.md describes the operations,
 * the table of weights that chains them, the sizes and their calibration.
 *
 * Deterministic: one seed and one stage count give the same bytes on every
 * machine (a splitmix64 generator of its own, integer arithmetic only).
 * Reentrant: every call owns its state; no static buffers.
 */
#ifndef SC_RANDPIPE_H
#define SC_RANDPIPE_H

#include <stddef.h>
#include <stdint.h>

/* The operations, in the order docs/random_pipelines.md lists them. */
#define RANDPIPE_KINDS(X) \
    X(CONV_TAPS, "conv_taps")       /* 1-D or 2-D convolution, unrolled taps */ \
    X(CONV_RDOM, "conv_rdom")       /* 1-D or 2-D convolution over an rdom, weights an input */ \
    X(POOL, "pool")                 /* max or average pooling, stride 1 or 2 */ \
    X(ACTIVATION, "activation")     /* relu, leaky relu, tanh, sigmoid, hard tanh */ \
    X(PAD, "pad")                   /* repeat_edge, constant_exterior, mirror */ \
    X(DOWNSAMPLE, "downsample")     /* by 2: filtered or decimated */ \
    X(UPSAMPLE, "upsample")         /* by 2: nearest or linear */ \
    X(ALL_TO_ALL, "all_to_all")     /* a matrix multiply over channels */ \
    X(SCAN, "scan")                 /* a first-order recurrence, one or two directions */ \
    X(HISTOGRAM, "histogram")       /* tiled histogram (scatter), then a lookup in it */ \
    X(SLICE, "slice")               /* one channel, or a crop */ \
    X(TRANSPOSE, "transpose")       /* swaps x and y */ \
    X(UNARY, "unary")               /* exp, log, sqrt, tanh, kept finite */ \
    X(BINARY, "binary")             /* two earlier stages of one shape (a diamond) */ \
    X(CAST, "cast")                 /* between integer and float types */ \
    X(BROADCAST, "broadcast")       /* a 3-D Func with a 2-D one of its x, y extents */ \
    X(LOOKUP, "lookup")             /* a curve table read at each value's bin (lookups only) */ \
    X(GRID_SLICE, "grid_slice")     /* a coarse grid read at block and value bin (lookups only) */ \
    X(LAYER_CONV, "layer_conv")     /* a conv layer over all channels, with a bias (layers only) */ \
    X(DEPTHWISE, "depthwise")       /* a depthwise conv layer, with a bias (layers only) */ \
    X(SOFTMAX, "softmax")           /* softmax over the channels (layers only) */ \
    X(PACK, "pack")                 /* 2x2 quads into 4 channels (layers only) */ \
    X(UNPACK, "unpack")             /* 4 channels back to 2x2 quads (layers only) */ \
    X(RECOLOR, "recolor")           /* 3 channels chosen by selects on c (layers only) */ \
    X(FIXED_INTERP, "fixed_interp") /* i16 fixed point: interpolation along the least change (layers only) */

typedef enum {
#define RANDPIPE_ENUM_(id, name) RANDPIPE_##id,
    RANDPIPE_KINDS(RANDPIPE_ENUM_)
#undef RANDPIPE_ENUM_
    RANDPIPE_NKINDS
} randpipe_kind;

/* The operation sets.  classic: the first RANDPIPE_CLASSIC_NKINDS kinds,
 * the set every pipeline "random_N" of the stored samples was drawn from
 * (its seeds keep drawing the same bytes); lookups: the first
 * RANDPIPE_LOOKUPS_NKINDS, the classic set and the data-dependent gathers
 * of lookup tables and grids (camera_pipe's curve, local_laplacian's
 * remapping, bilateral_grid's slice), pipelines named "random_lookups_N";
 * layers: every kind, the lookups set and the layers of small networks
 * (conv_layer's and learned_demosaic's biased convolutions, depthwise
 * layers, softmax over channels, Bayer quads packed into channels and
 * back, channels chosen by selects on c) and camera_pipe's fixed-point
 * demosaic (i16 arithmetic, compares of differences, selects on parity),
 * with run-time params for some weights' scales, pipelines
 * "random_layers_N". */
typedef enum { RANDPIPE_OPS_CLASSIC, RANDPIPE_OPS_LOOKUPS, RANDPIPE_OPS_LAYERS, RANDPIPE_NOPS } randpipe_ops;
enum { RANDPIPE_CLASSIC_NKINDS = RANDPIPE_LOOKUP, RANDPIPE_LOOKUPS_NKINDS = RANDPIPE_LAYER_CONV };

enum {
    RANDPIPE_MIN_STAGES = 2,
    RANDPIPE_MAX_STAGES = 20,
};

/* What one call drew.  "Stages" counts Funcs: every Func the pipeline
 * defines, inputs excluded and helper Funcs of inline reductions (sum)
 * included, i.e. the "N Funcs" that `stagecraft check` prints.  A Func's
 * update definitions do not count (defs does). */
typedef struct {
    uint64_t seed;
    int funcs;                          /* == the stage count */
    int defs;                           /* definitions, updates included */
    int nops;                           /* operations drawn */
    randpipe_kind ops[RANDPIPE_MAX_STAGES];
    int kind_count[RANDPIPE_NKINDS];    /* operations of each kind */
    int inputs, outputs;
    int width, height;                  /* paper sizes W, H */
    int small_width, small_height;      /* the `small` sizes */
    double work;                        /* estimated operations at paper size */
} randpipe_info;

/* The .pipe text of the random pipeline of seed with `stages` Funcs (0:
 * drawn in RANDPIPE_MIN_STAGES..RANDPIPE_MAX_STAGES).  Returns malloc'd
 * text (caller frees), or NULL when stages is out of range.  info (may be
 * NULL) receives what was drawn. */
char *randpipe_generate(uint64_t seed, int stages, randpipe_info *info);

/* The same from the operation set ops: randpipe_generate is
 * randpipe_generate_ops(seed, stages, RANDPIPE_OPS_CLASSIC, info).  NULL
 * also when ops is not a set. */
char *randpipe_generate_ops(uint64_t seed, int stages, randpipe_ops ops, randpipe_info *info);

/* "classic", "lookups", "layers"; "?" out of range. */
const char *randpipe_ops_name(int ops);

/* The set named name, or -1. */
int randpipe_ops_parse(const char *name);

/* Every set's name, "classic, lookups, layers", in out (for messages). */
void randpipe_ops_list(char *out, size_t n);

/* The name a pipeline of seed from ops gets ("random_12",
 * "random_lookups_12", "random_layers_12"), in out. */
void randpipe_pipeline_name(uint64_t seed, randpipe_ops ops, char *out, size_t n);

/* "conv_taps", ... for a kind; "?" out of range. */
const char *randpipe_kind_name(int kind);

#endif
