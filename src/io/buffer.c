/*
 * buffer.c - scalar type helpers and dense n-dimensional buffers.
 *
 * A buffer created here is dense: dimension 0 has stride 1 and each later
 * stride is the product of the extents before it.  Coordinates given to
 * sc_buffer_get/sc_buffer_set are absolute (they include min).  Storage per
 * type: bool and u8 as uint8_t, u16 uint16_t, u32 uint32_t, i8 int8_t,
 * i16 int16_t, i32 int32_t, f32 float.
 */
#include <assert.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stagecraft.h"

/* ---- types ---------------------------------------------------------------- */

static const struct {
    const char *name;
    int bits;
    int is_float;
    int is_signed;
    size_t size;
} type_info[SC_TYPE_COUNT] = {
    [SC_BOOL] = {"bool", 1, 0, 0, 1},
    [SC_U8]   = {"u8", 8, 0, 0, 1},
    [SC_U16]  = {"u16", 16, 0, 0, 2},
    [SC_U32]  = {"u32", 32, 0, 0, 4},
    [SC_I8]   = {"i8", 8, 0, 1, 1},
    [SC_I16]  = {"i16", 16, 0, 1, 2},
    [SC_I32]  = {"i32", 32, 0, 1, 4},
    [SC_F32]  = {"f32", 32, 1, 1, 4},
};

static int type_ok(sc_type t)
{
    return (int)t >= 0 && t < SC_TYPE_COUNT;
}

const char *sc_type_name(sc_type t)
{
    return type_ok(t) ? type_info[t].name : "?";
}

int sc_type_bits(sc_type t)
{
    assert(type_ok(t));
    return type_info[t].bits;
}

int sc_type_is_float(sc_type t)
{
    assert(type_ok(t));
    return type_info[t].is_float;
}

int sc_type_is_signed(sc_type t)
{
    assert(type_ok(t));
    return type_info[t].is_signed;
}

size_t sc_type_size(sc_type t)
{
    assert(type_ok(t));
    return type_info[t].size;
}

/* ---- buffers -------------------------------------------------------------- */

/*
 * min may be NULL (all zeros).  Fails (NULL) on a bad type or ndims, an
 * extent < 1, a coordinate range that leaves int (min + extent - 1), a
 * size that overflows, or when memory runs out.
 */
sc_buffer *sc_buffer_new(sc_type t, int ndims, const int *min, const int *extent)
{
    if (!type_ok(t) || ndims < 1 || ndims > SC_MAX_DIMS || !extent)
        return NULL;
    size_t esize = sc_type_size(t);
    int64_t count = 1;
    for (int d = 0; d < ndims; d++) {
        int lo = min ? min[d] : 0;
        if (extent[d] < 1 || lo > INT_MAX - (extent[d] - 1))
            return NULL;
        if (count > (INT64_MAX / (int64_t)esize) / extent[d])
            return NULL;
        count *= extent[d];
    }
    if ((uint64_t)count > SIZE_MAX / esize)
        return NULL;

    sc_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->data = calloc((size_t)count, esize);
    if (!b->data) {
        free(b);
        return NULL;
    }
    b->type = t;
    b->ndims = ndims;
    int64_t stride = 1;
    for (int d = 0; d < ndims; d++) {
        b->min[d] = min ? min[d] : 0;
        b->extent[d] = extent[d];
        b->stride[d] = stride;
        stride *= extent[d];
    }
    return b;
}

void sc_buffer_free(sc_buffer *b)
{
    if (!b)
        return;
    free(b->data);
    free(b);
}

int64_t sc_buffer_count(const sc_buffer *b)
{
    int64_t n = 1;
    for (int d = 0; d < b->ndims; d++)
        n *= b->extent[d];
    return n;
}

/* Element offset (in elements) of absolute coordinates; asserts they are
 * inside the buffer, since an out-of-range access is a caller bug. */
static int64_t buffer_offset(const sc_buffer *b, const int *coords)
{
    int64_t off = 0;
    for (int d = 0; d < b->ndims; d++) {
        int64_t c = (int64_t)coords[d] - b->min[d];
        assert(c >= 0 && c < b->extent[d]);
        off += c * b->stride[d];
    }
    return off;
}

double sc_buffer_get(const sc_buffer *b, const int *coords)
{
    int64_t i = buffer_offset(b, coords);
    switch (b->type) {
    case SC_BOOL:
    case SC_U8:  return ((const uint8_t *)b->data)[i];
    case SC_U16: return ((const uint16_t *)b->data)[i];
    case SC_U32: return ((const uint32_t *)b->data)[i];
    case SC_I8:  return ((const int8_t *)b->data)[i];
    case SC_I16: return ((const int16_t *)b->data)[i];
    case SC_I32: return ((const int32_t *)b->data)[i];
    case SC_F32: return ((const float *)b->data)[i];
    default:     assert(!"bad buffer type"); return 0;
    }
}

/*
 * A double as the bit pattern of an integer type, two's complement: the
 * value is truncated toward zero (NaN gives 0, out of int64 range
 * saturates) and then wraps to the type's width, the way integer results
 * wrap in the language.  Never undefined behaviour.
 */
static uint64_t double_to_bits(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775808.0)
        return (uint64_t)INT64_MAX;
    if (v < -9223372036854775808.0)
        return (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)v;
}

/* f32 from double without the undefined behaviour of an out-of-range
 * conversion: too large magnitudes become infinities. */
static float double_to_f32(double v)
{
    if (v > FLT_MAX)
        return INFINITY;
    if (v < -FLT_MAX)
        return -INFINITY;
    return (float)v;
}

/* Stores v converted to the buffer's type: bool is v != 0, integers wrap
 * (see double_to_bits), f32 rounds. */
void sc_buffer_set(sc_buffer *b, const int *coords, double v)
{
    int64_t i = buffer_offset(b, coords);
    uint64_t bits = double_to_bits(v);
    switch (b->type) {
    case SC_BOOL: ((uint8_t *)b->data)[i] = v != 0; break;
    case SC_U8:   ((uint8_t *)b->data)[i] = (uint8_t)bits; break;
    case SC_U16:  ((uint16_t *)b->data)[i] = (uint16_t)bits; break;
    case SC_U32:  ((uint32_t *)b->data)[i] = (uint32_t)bits; break;
    /* Signed types: go through the unsigned type of the same width and
     * memcpy, so the wrap is well defined. */
    case SC_I8:   { uint8_t u = (uint8_t)bits; memcpy((int8_t *)b->data + i, &u, 1); break; }
    case SC_I16:  { uint16_t u = (uint16_t)bits; memcpy((int16_t *)b->data + i, &u, 2); break; }
    case SC_I32:  { uint32_t u = (uint32_t)bits; memcpy((int32_t *)b->data + i, &u, 4); break; }
    case SC_F32:  ((float *)b->data)[i] = double_to_f32(v); break;
    default:      assert(!"bad buffer type");
    }
}

/* SplitMix64's output function (Steele, Lea, Flood 2014). */
static uint64_t splitmix64_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/*
 * Element k (in dimension-0-fastest order, whatever the strides) gets the
 * k-th output of a SplitMix64 stream whose state starts at a mix of the
 * seed.  Only 64-bit integer arithmetic is used, so the pattern is the
 * same on every platform and does not depend on the order of filling.
 */
void sc_buffer_fill_random(sc_buffer *b, uint64_t seed)
{
    const uint64_t golden = 0x9E3779B97F4A7C15ull;
    uint64_t state = splitmix64_mix(seed ^ 0x5C0FFEE5EEDull);
    int coord[SC_MAX_DIMS] = {0};
    int64_t n = sc_buffer_count(b);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < b->ndims; d++)
            off += coord[d] * b->stride[d];
        uint64_t r = splitmix64_mix(state + (uint64_t)(k + 1) * golden);
        switch (b->type) {
        case SC_BOOL: ((uint8_t *)b->data)[off] = (uint8_t)(r >> 63); break;
        case SC_U8:   ((uint8_t *)b->data)[off] = (uint8_t)(r >> 56); break;
        case SC_U16:  ((uint16_t *)b->data)[off] = (uint16_t)(r >> 48); break;
        case SC_U32:  ((uint32_t *)b->data)[off] = (uint32_t)(r >> 54); break;
        case SC_I8:   ((int8_t *)b->data)[off] = (int8_t)((int)(r >> 56) - 128); break;
        case SC_I16:  ((int16_t *)b->data)[off] = (int16_t)((int)(r >> 48) - 32768); break;
        case SC_I32:  ((int32_t *)b->data)[off] = (int32_t)(r >> 54); break;
        /* 24 random bits: exactly representable, in [0, 1). */
        case SC_F32:  ((float *)b->data)[off] = (float)(r >> 40) * (1.0f / 16777216.0f); break;
        default:      assert(!"bad buffer type");
        }
        for (int d = 0; d < b->ndims; d++) {
            if (++coord[d] < b->extent[d])
                break;
            coord[d] = 0;
        }
    }
}
