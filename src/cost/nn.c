/*
 * nn.c - the cost model's network (nn.h): initialization, the forward
 * pass over many stage rows, the backward pass written out by hand, Adam,
 * and the weights file.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "nn.h"

/* splitmix64: the initial weights depend on the seed only. */
static uint64_t nn_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-a, a). */
static double nn_uniform(uint64_t *s, double a) {
    return a * (2.0 * ((double)(nn_rand(s) >> 11) * 0x1.0p-53) - 1.0);
}

/* Coefficients start near 1 (b3 = 1 plus small weights), so every term
 * counts from the first step; W1 starts well inside the sigmoid so the
 * algorithm embedding has room to grow and shrink. */
void nn_init(nn_model *m, uint64_t seed) {
    memset(m, 0, sizeof *m);
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 0x1234567;
    double *w = m->w;
    for (int i = 0; i < NN_ALGO_IN * NN_H1; i++) w[NN_OFF_W1 + i] = -3.0 + nn_uniform(&s, 0.5);
    double a2 = 0.5 / sqrt((double)NN_SCHED_IN);
    for (int i = 0; i < NN_SCHED_IN * NN_H2; i++) w[NN_OFF_W2 + i] = nn_uniform(&s, a2);
    for (int i = 0; i < NN_H2; i++) w[NN_OFF_B2 + i] = 0.1;
    for (int i = 0; i < (NN_H1 + NN_H2) * NN_COEF; i++) w[NN_OFF_W3 + i] = nn_uniform(&s, 0.05);
    for (int i = 0; i < NN_COEF; i++) w[NN_OFF_B3 + i] = 1.0;
    for (int i = 0; i < NN_COEF; i++) m->term_scale[i] = 1.0;
}

bool nn_sched_input_extensive(int k) {
    static const int extensive[] = {
        FEAT_num_realizations, FEAT_num_productions, FEAT_points_computed_per_realization,
        FEAT_points_computed_total, FEAT_points_computed_minimum, FEAT_bytes_at_realization,
        FEAT_bytes_at_production, FEAT_bytes_at_root, FEAT_innermost_pure_loop_extent,
        FEAT_outer_parallelism, FEAT_num_scalars, FEAT_unique_global_bytes_read_per_realization,
        FEAT_unique_shared_bytes_read_per_realization, FEAT_unique_register_bytes_read_per_realization,
        FEAT_unique_global_lines_read_per_realization, FEAT_unique_shared_lines_read_per_realization,
        FEAT_unique_register_lines_read_per_realization, FEAT_global_allocation_bytes_read_per_realization,
        FEAT_shared_allocation_bytes_read_per_realization, FEAT_register_allocation_bytes_read_per_realization,
        FEAT_num_blocks,
    };
    for (size_t i = 0; i < sizeof extensive / sizeof *extensive; i++)
        if (FEAT_AT(extensive[i]) - NN_ALGO_IN == k)
            return true;
    return false;
}

void nn_drop_extensive_inputs(nn_model *m) {
    for (int k = 0; k < NN_SCHED_IN; k++)
        if (nn_sched_input_extensive(k))
            memset(m->w + NN_OFF_W2 + k * NN_H2, 0, sizeof(double) * NN_H2);
}

bool nn_uses_extensive_inputs(const nn_model *m) {
    for (int k = 0; k < NN_SCHED_IN; k++)
        for (int j = 0; nn_sched_input_extensive(k) && j < NN_H2; j++)
            if (m->w[NN_OFF_W2 + k * NN_H2 + j] != 0)
                return true;
    return false;
}

/* FNV-1a, 64 bits. */
static uint64_t nn_fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}
#define NN_FNV_INIT 0xcbf29ce484222325ull

uint64_t nn_layout_hash(void) {
    uint64_t h = NN_FNV_INIT;
    for (int i = 0; i < FEAT_COUNT; i++) {
        const char *n = feat_name(i);
        h = nn_fnv(h, n, strlen(n) + 1);
        unsigned char k = (unsigned char)feat_kind_of(i);
        h = nn_fnv(h, &k, 1);
    }
    int32_t sizes[] = { NN_ALGO_IN, NN_SCHED_IN, NN_H1, NN_H2, NN_COEF, NN_NPARAMS, NN_TERMS_VERSION };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char b[4] = { (unsigned char)sizes[i], (unsigned char)(sizes[i] >> 8),
                               (unsigned char)(sizes[i] >> 16), (unsigned char)(sizes[i] >> 24) };
        h = nn_fnv(h, b, 4);
    }
    return h;
}

/* ---- the tape ---- */

void nn_tape_init(nn_tape *t) { memset(t, 0, sizeof *t); }

void nn_tape_reserve(nn_tape *t, int rows) {
    if (rows <= t->cap) return;
    int cap = t->cap ? t->cap : 64;
    while (cap < rows) cap *= 2;
    t->e1 = base_realloc(t->e1, sizeof(double) * (size_t)cap * NN_H1);
    t->e2 = base_realloc(t->e2, sizeof(double) * (size_t)cap * NN_H2);
    t->z = base_realloc(t->z, sizeof(double) * (size_t)cap * NN_COEF);
    t->floored = base_realloc(t->floored, (size_t)cap);
    t->cap = cap;
}

void nn_tape_free(nn_tape *t) {
    free(t->e1);
    free(t->e2);
    free(t->z);
    free(t->floored);
    nn_tape_init(t);
}

/* ---- forward ---- */

void nn_squash(const nn_model *m, double *sw1) {
    for (int i = 0; i < NN_ALGO_IN * NN_H1; i++) sw1[i] = 1.0 / (1.0 + exp(-m->w[NN_OFF_W1 + i]));
}

void nn_sched_inputs(const double *v, double *s) {
    for (int k = 0; k < NN_SCHED_IN; k++) {
        double x = v[NN_ALGO_IN + k];
        s[k] = x > 0 ? log1p(x) : 0;
    }
}

/* e1 = b1 + sigmoid(W1) a.  Most of the histogram is zero: skipped. */
static void nn_embed_algo(const nn_model *m, const double *restrict sw1, const double *a, double *restrict e1) {
    for (int j = 0; j < NN_H1; j++) e1[j] = m->w[NN_OFF_B1 + j];
    for (int i = 0; i < NN_ALGO_IN; i++) {
        double x = a[i];
        if (x == 0) continue;
        const double *wi = sw1 + i * NN_H1;
        for (int j = 0; j < NN_H1; j++) e1[j] += wi[j] * x;
    }
}

/* z += W3[rows from..from+n] in. */
static void nn_mix(const nn_model *restrict m, int from, int n, const double *in, double *restrict z) {
    for (int i = 0; i < n; i++) {
        double x = in[i];
        if (x == 0) continue;
        const double *wi = m->w + NN_OFF_W3 + (from + i) * NN_COEF;
        for (int k = 0; k < NN_COEF; k++) z[k] += wi[k] * x;
    }
}

void nn_algo_part(const nn_model *m, const double *sw1, const double *algo, double *part) {
    double e1[NN_H1];
    nn_embed_algo(m, sw1, algo, e1);
    for (int k = 0; k < NN_COEF; k++) part[k] = m->w[NN_OFF_B3 + k];
    nn_mix(m, 0, NN_H1, e1, part);
}

/* e2 = relu(b2 + W2 s). */
static void nn_embed_sched(const nn_model *restrict m, const double *s, double *restrict e2) {
    for (int j = 0; j < NN_H2; j++) e2[j] = m->w[NN_OFF_B2 + j];
    for (int i = 0; i < NN_SCHED_IN; i++) {
        double x = s[i];
        if (x == 0) continue;
        const double *wi = m->w + NN_OFF_W2 + i * NN_H2;
        for (int j = 0; j < NN_H2; j++) e2[j] += wi[j] * x;
    }
    for (int j = 0; j < NN_H2; j++) e2[j] = e2[j] > 0 ? e2[j] : 0;
}

static double nn_dot_terms(const nn_model *m, const double *z, const double *terms) {
    double c = 0;
    for (int k = 0; k < NN_COEF; k++) c += (z[k] > 0 ? z[k] : 0) * terms[k] * m->term_scale[k];
    return c;
}

/* The floor of a row in the model's units (0 without one): the larger of
 * the instruction and the gather floors; *which (unless NULL) says which
 * (NN_FLOOR_*). */
static double nn_floor_of(const nn_model *m, const double *terms, int *which) {
    double fi = m->floor_ms > 0 ? nn_instructions(terms) * m->floor_ms : 0;
    double fg = m->gather_floor_ms > 0 ? nn_gathers(terms) * m->gather_floor_ms : 0;
    if (which) *which = fg > fi ? NN_FLOOR_GATHERS : NN_FLOOR_INSTRUCTIONS;
    return fmax(fi, fg) / exp(m->w[NN_OFF_SCALE]);
}

double nn_row_cost(const nn_model *m, const double *part, const double *sched_log, const double *terms) {
    double e2[NN_H2], z[NN_COEF];
    nn_embed_sched(m, sched_log, e2);
    memcpy(z, part, sizeof z);
    nn_mix(m, NN_H1, NN_H2, e2, z);
    return fmax(nn_dot_terms(m, z, terms), nn_floor_of(m, terms, NULL));
}

void nn_forward(const nn_model *m, const nn_rows *r, nn_tape *t, double *cost) {
    nn_tape local;
    if (!t) {
        nn_tape_init(&local);
        t = &local;
    }
    nn_tape_reserve(t, r->n);
    nn_squash(m, t->sw1);
    for (int i = 0; i < r->n; i++) {
        double *e1 = t->e1 + (size_t)i * NN_H1, *e2 = t->e2 + (size_t)i * NN_H2, *z = t->z + (size_t)i * NN_COEF;
        nn_embed_algo(m, t->sw1, r->algo[i], e1);
        nn_embed_sched(m, r->sched + (size_t)i * NN_SCHED_IN, e2);
        for (int k = 0; k < NN_COEF; k++) z[k] = m->w[NN_OFF_B3 + k];
        nn_mix(m, 0, NN_H1, e1, z);
        nn_mix(m, NN_H1, NN_H2, e2, z);
        const double *terms = r->terms + (size_t)i * NN_COEF;
        int which;
        double c = nn_dot_terms(m, z, terms), fl = nn_floor_of(m, terms, &which);
        t->floored[i] = fl > c ? (unsigned char)which : NN_FLOOR_NONE;
        cost[i] = t->floored[i] ? fl : c;
    }
    if (t == &local) nn_tape_free(&local);
}

double nn_reg_value(const nn_tape *t, int n) {
    double s = 0;
    for (size_t i = 0; i < (size_t)n * NN_COEF; i++) s += t->z[i] < 0 ? -t->z[i] : 0;
    return s;
}

/* ---- backward ---- */

void nn_backward(const nn_model *m, const nn_rows *r, const nn_tape *t, const double *dcost, double reg,
                 double *grad) {
    const double *w = m->w;
    for (int i = 0; i < r->n; i++) {
        const double *e1 = t->e1 + (size_t)i * NN_H1, *e2 = t->e2 + (size_t)i * NN_H2;
        const double *z = t->z + (size_t)i * NN_COEF, *terms = r->terms + (size_t)i * NN_COEF;
        const double *a = r->algo[i], *s = r->sched + (size_t)i * NN_SCHED_IN;
        /* cost = sum_k relu(z_k) T_k scale_k, or the floor; reg * max(-z_k, 0) */
        double dz[NN_COEF], dc = t->floored[i] ? 0 : dcost[i];
        for (int k = 0; k < NN_COEF; k++)
            dz[k] = z[k] > 0 ? dc * terms[k] * m->term_scale[k] : (z[k] < 0 ? -reg : 0);
        for (int k = 0; k < NN_COEF; k++) grad[NN_OFF_B3 + k] += dz[k];
        double de1[NN_H1], de2[NN_H2];
        for (int j = 0; j < NN_H1; j++) {
            const double *wj = w + NN_OFF_W3 + j * NN_COEF;
            double *gj = grad + NN_OFF_W3 + j * NN_COEF, acc = 0;
            for (int k = 0; k < NN_COEF; k++) {
                gj[k] += e1[j] * dz[k];
                acc += wj[k] * dz[k];
            }
            de1[j] = acc;
        }
        for (int j = 0; j < NN_H2; j++) {
            const double *wj = w + NN_OFF_W3 + (NN_H1 + j) * NN_COEF;
            double *gj = grad + NN_OFF_W3 + (NN_H1 + j) * NN_COEF, acc = 0;
            for (int k = 0; k < NN_COEF; k++) {
                gj[k] += e2[j] * dz[k];
                acc += wj[k] * dz[k];
            }
            de2[j] = e2[j] > 0 ? acc : 0;       /* through the relu */
        }
        for (int j = 0; j < NN_H2; j++) grad[NN_OFF_B2 + j] += de2[j];
        for (int q = 0; q < NN_SCHED_IN; q++) {
            if (s[q] == 0) continue;
            double *gq = grad + NN_OFF_W2 + q * NN_H2;
            for (int j = 0; j < NN_H2; j++) gq[j] += s[q] * de2[j];
        }
        for (int j = 0; j < NN_H1; j++) grad[NN_OFF_B1 + j] += de1[j];
        for (int q = 0; q < NN_ALGO_IN; q++) {
            if (a[q] == 0) continue;
            const double *sq = t->sw1 + q * NN_H1;
            double *gq = grad + NN_OFF_W1 + q * NN_H1;
            for (int j = 0; j < NN_H1; j++) gq[j] += a[q] * de1[j] * sq[j] * (1.0 - sq[j]);
        }
    }
}

/* ---- Adam ---- */

void nn_adam_init(nn_adam *a) { memset(a, 0, sizeof *a); }

void nn_adam_step(nn_model *m, nn_adam *a, const double *grad, double lr) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    a->t++;
    double c1 = 1.0 - pow(b1, (double)a->t), c2 = 1.0 - pow(b2, (double)a->t);
    for (int i = 0; i < NN_NPARAMS; i++) {
        double g = grad[i];
        a->m[i] = b1 * a->m[i] + (1 - b1) * g;
        a->v[i] = b2 * a->v[i] + (1 - b2) * g * g;
        m->w[i] -= lr * (a->m[i] / c1) / (sqrt(a->v[i] / c2) + eps);
    }
}

void nn_decay_weights(nn_model *m, double f) {
    if (!(f > 0)) return;
    static const int range[3][2] = { { NN_OFF_W1, NN_OFF_B1 }, { NN_OFF_W2, NN_OFF_B2 }, { NN_OFF_W3, NN_OFF_B3 } };
    for (int k = 0; k < 3; k++)
        for (int i = range[k][0]; i < range[k][1]; i++) m->w[i] *= 1.0 - f;
}

/* ---- the weights file ----
 *   "SCWEIGHT"                          8 bytes
 *   u32 format version, u32 NN_NPARAMS, u32 NN_COEF, u32 0
 *   u64 layout hash
 *   u32 length + device key bytes
 *   u32 length + summary bytes
 *   NN_NPARAMS + NN_COEF doubles (IEEE 754 binary64): weights, term scales
 *   1 double: floor_ms (format version 2; absent, and 0, in version 1)
 *   1 double: gather_floor_ms (format version 3; absent, and 0, before)
 *   u64 FNV-1a of every byte after the magic up to here
 * Integers and doubles little-endian. */
static const char nn_magic[8] = { 'S', 'C', 'W', 'E', 'I', 'G', 'H', 'T' };

typedef struct {
    unsigned char *p;
    size_t n, cap;
} nn_buf;

static void nn_put(nn_buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = base_realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void nn_put_u64(nn_buf *b, uint64_t v) {
    unsigned char c[8];
    for (int i = 0; i < 8; i++) c[i] = (unsigned char)(v >> (8 * i));
    nn_put(b, c, 8);
}

static void nn_put_u32(nn_buf *b, uint32_t v) {
    unsigned char c[4];
    for (int i = 0; i < 4; i++) c[i] = (unsigned char)(v >> (8 * i));
    nn_put(b, c, 4);
}

static void nn_put_double(nn_buf *b, double d) {
    uint64_t v;
    memcpy(&v, &d, 8);
    nn_put_u64(b, v);
}

int nn_save(const nn_model *m, const char *path, char *err, size_t errlen) {
    nn_buf b = { 0 };
    nn_put(&b, nn_magic, 8);
    nn_put_u32(&b, NN_FORMAT_VERSION);
    nn_put_u32(&b, NN_NPARAMS);
    nn_put_u32(&b, NN_COEF);
    nn_put_u32(&b, 0);
    nn_put_u64(&b, nn_layout_hash());
    size_t dl = strnlen(m->device, NN_DEVICE_MAX - 1), sl = strnlen(m->summary, NN_SUMMARY_MAX - 1);
    nn_put_u32(&b, (uint32_t)dl);
    nn_put(&b, m->device, dl);
    nn_put_u32(&b, (uint32_t)sl);
    nn_put(&b, m->summary, sl);
    for (int i = 0; i < NN_NPARAMS; i++) nn_put_double(&b, m->w[i]);
    for (int i = 0; i < NN_COEF; i++) nn_put_double(&b, m->term_scale[i]);
    nn_put_double(&b, m->floor_ms);
    nn_put_double(&b, m->gather_floor_ms);
    nn_put_u64(&b, nn_fnv(NN_FNV_INIT, b.p + 8, b.n - 8));
    /* a temporary file renamed over the target: never half a file */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int rc = 0;
    if (!f) rc = base_fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    else {
        bool ok = fwrite(b.p, 1, b.n, f) == b.n;
        ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp, path) != 0) {
            rc = base_fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            remove(tmp);
        }
    }
    free(b.p);
    return rc;
}

typedef struct {
    const unsigned char *p;
    size_t n, at;
} nn_reader;

static bool nn_get(nn_reader *r, void *out, size_t n) {
    if (r->n - r->at < n) return false;
    memcpy(out, r->p + r->at, n);
    r->at += n;
    return true;
}

static bool nn_get_u64(nn_reader *r, uint64_t *v) {
    unsigned char c[8];
    if (!nn_get(r, c, 8)) return false;
    *v = 0;
    for (int i = 0; i < 8; i++) *v |= (uint64_t)c[i] << (8 * i);
    return true;
}

static bool nn_get_u32(nn_reader *r, uint32_t *v) {
    unsigned char c[4];
    if (!nn_get(r, c, 4)) return false;
    *v = 0;
    for (int i = 0; i < 4; i++) *v |= (uint32_t)c[i] << (8 * i);
    return true;
}

static bool nn_get_double(nn_reader *r, double *d) {
    uint64_t v;
    if (!nn_get_u64(r, &v)) return false;
    memcpy(d, &v, 8);
    return true;
}

static int nn_parse(nn_model *m, const char *path, const unsigned char *p, size_t n, char *err, size_t errlen) {
    nn_reader r = { p, n, 0 };
    char magic[8];
    if (!nn_get(&r, magic, 8) || memcmp(magic, nn_magic, 8))
        return base_fail(err, errlen, "%s: not a stagecraft weights file (no SCWEIGHT magic)", path);
    uint32_t version, np, nc, zero, dl, sl;
    uint64_t hash;
    if (!nn_get_u32(&r, &version)) goto truncated;
    if (version < 1 || version > NN_FORMAT_VERSION)
        return base_fail(err, errlen, "%s: weights format version %u, this stagecraft reads versions 1 to %d",
                         path, version, NN_FORMAT_VERSION);
    if (!nn_get_u32(&r, &np) || !nn_get_u32(&r, &nc) || !nn_get_u32(&r, &zero) || !nn_get_u64(&r, &hash))
        goto truncated;
    if (hash != nn_layout_hash() || np != NN_NPARAMS || nc != NN_COEF)
        return base_fail(err, errlen,
                         "%s: the weights were trained for another feature layout or network "
                         "(layout hash %016llx, this build's is %016llx): retrain them with `stagecraft train`",
                         path, (unsigned long long)hash, (unsigned long long)nn_layout_hash());
    if (!nn_get_u32(&r, &dl)) goto truncated;
    if (dl >= NN_DEVICE_MAX) return base_fail(err, errlen, "%s: corrupt header (device key of %u bytes)", path, dl);
    memset(m, 0, sizeof *m);
    if (!nn_get(&r, m->device, dl) || !nn_get_u32(&r, &sl)) goto truncated;
    if (sl >= NN_SUMMARY_MAX) return base_fail(err, errlen, "%s: corrupt header (summary of %u bytes)", path, sl);
    if (!nn_get(&r, m->summary, sl)) goto truncated;
    for (int i = 0; i < NN_NPARAMS; i++)
        if (!nn_get_double(&r, &m->w[i])) goto truncated;
    for (int i = 0; i < NN_COEF; i++)
        if (!nn_get_double(&r, &m->term_scale[i])) goto truncated;
    if (version >= 2 && !nn_get_double(&r, &m->floor_ms)) goto truncated;
    if (version >= 3 && !nn_get_double(&r, &m->gather_floor_ms)) goto truncated;
    size_t body = r.at;
    uint64_t sum;
    if (!nn_get_u64(&r, &sum)) goto truncated;
    if (r.at != n) return base_fail(err, errlen, "%s: %zu bytes after the end of the weights", path, n - r.at);
    if (sum != nn_fnv(NN_FNV_INIT, p + 8, body - 8))
        return base_fail(err, errlen, "%s: checksum mismatch: the weights file is corrupt", path);
    for (int i = 0; i < NN_NPARAMS; i++)
        if (!isfinite(m->w[i])) return base_fail(err, errlen, "%s: parameter %d is not finite", path, i);
    for (int i = 0; i < NN_COEF; i++)
        if (!isfinite(m->term_scale[i]) || m->term_scale[i] < 0)
            return base_fail(err, errlen, "%s: term scale %d is not a finite non-negative number", path, i);
    if (!isfinite(m->floor_ms) || m->floor_ms < 0)
        return base_fail(err, errlen, "%s: the instruction floor (%g ms) is not a finite non-negative number", path,
                         m->floor_ms);
    if (!isfinite(m->gather_floor_ms) || m->gather_floor_ms < 0)
        return base_fail(err, errlen, "%s: the gather floor (%g ms) is not a finite non-negative number", path,
                         m->gather_floor_ms);
    return 0;
truncated:
    return base_fail(err, errlen, "%s: truncated weights file (%zu bytes)", path, n);
}

int nn_load(nn_model *m, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return base_fail(err, errlen, "%s: cannot open weights: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *p = base_calloc(cap, 1);
    size_t got;
    while ((got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= ((size_t)1 << 26)) break;     /* far larger than any weights file */
            cap *= 2;
            p = base_realloc(p, cap);
        }
    }
    bool rerr = ferror(f);
    fclose(f);
    int rc = rerr ? base_fail(err, errlen, "%s: cannot read weights: %s", path, strerror(errno))
                  : nn_parse(m, path, p, n, err, errlen);
    free(p);
    return rc;
}
