/*
 * store_file.c - the sample store's exchange file (store.h): a sorted
 * text dump, one record per line, xz-compressed when its name ends in .xz.
 * This is how a dataset travels between machines and is committed.
 */
#include <errno.h>
#include <inttypes.h>
#include <lzma.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store_impl.h"

#define FILE_MAGIC "stagecraft-samples"
#define FILE_VERSION 3

/* ---- a growable text buffer ------------------------------------------------ */

typedef struct { char *p; size_t n, cap; } text_buf;

static void buf_put(text_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void buf_str(text_buf *b, const char *s) { buf_put(b, s, strlen(s)); }

/* A field: backslash, space, tab, CR and newline escaped, so that fields
 * are separated by single spaces and records by newlines; the empty
 * string is \e. */
static void buf_field(text_buf *b, const char *s) {
    buf_put(b, " ", 1);
    if (!s || !*s) { buf_put(b, "\\e", 2); return; }
    for (; *s; s++) {
        switch (*s) {
        case '\\': buf_put(b, "\\\\", 2); break;
        case ' ': buf_put(b, "\\s", 2); break;
        case '\t': buf_put(b, "\\t", 2); break;
        case '\n': buf_put(b, "\\n", 2); break;
        case '\r': buf_put(b, "\\r", 2); break;
        default: buf_put(b, s, 1);
        }
    }
}

/* Undoes buf_field in place; false on a bad escape. */
static bool unescape(char *s) {
    if (!strcmp(s, "\\e")) { s[0] = 0; return true; }
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '\\') { *w++ = *r; continue; }
        switch (*++r) {
        case '\\': *w++ = '\\'; break;
        case 's': *w++ = ' '; break;
        case 't': *w++ = '\t'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        default: return false;
        }
    }
    *w = 0;
    return true;
}

/* ---- xz ---------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int xz_compress(const text_buf *in, text_buf *out, char *err, size_t errlen) {
    size_t bound = lzma_stream_buffer_bound(in->n);
    out->p = malloc(bound);
    if (!out->p) abort();
    out->cap = bound;
    out->n = 0;
    lzma_ret r = lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, (const uint8_t *)in->p, in->n,
                                         (uint8_t *)out->p, &out->n, bound);
    if (r != LZMA_OK) {
        snprintf(err, errlen, "xz compression failed (liblzma error %d)", (int)r);
        return -1;
    }
    return 0;
}

static int xz_decompress(const char *path, const uint8_t *in, size_t n, text_buf *out, char *err, size_t errlen) {
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&z, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
        snprintf(err, errlen, "%s: cannot start the xz decoder", path);
        return -1;
    }
    z.next_in = in;
    z.avail_in = n;
    lzma_ret r = LZMA_OK;
    uint8_t chunk[1 << 16];
    while (r == LZMA_OK) {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        r = lzma_code(&z, LZMA_FINISH);
        buf_put(out, (const char *)chunk, sizeof chunk - z.avail_out);
    }
    lzma_end(&z);
    if (r != LZMA_STREAM_END) {
        free(out->p);
        *out = (text_buf){0};
        snprintf(err, errlen, "%s: not a valid xz file (%s)", path,
                 r == LZMA_DATA_ERROR || r == LZMA_FORMAT_ERROR ? "corrupt data" :
                 r == LZMA_BUF_ERROR ? "truncated" : "liblzma error");
        return -1;
    }
    return 0;
}

/* ---- export ---------------------------------------------------------------- */

static const char *col(sqlite3_stmt *q, int i) {
    const char *s = (const char *)sqlite3_column_text(q, i);
    return s ? s : "";
}

/* Appends every row of sql as a record: kind, then each column a field. */
static int dump(store *st, text_buf *b, const char *kind, const char *sql, int64_t *rows, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, sql, err, errlen);
    if (!q) return -1;
    int rc, ncol = sqlite3_column_count(q);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        buf_str(b, kind);
        for (int i = 0; i < ncol; i++) {
            if (sqlite3_column_type(q, i) == SQLITE_FLOAT) {
                char num[40];
                snprintf(num, sizeof num, "%.17g", sqlite3_column_double(q, i));
                buf_field(b, num);
            } else {
                buf_field(b, col(q, i));
            }
        }
        buf_put(b, "\n", 1);
        if (rows) (*rows)++;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return store_fail(st, err, errlen, "reading for the export");
    return 0;
}

static int write_all(const char *path, const text_buf *b, char *err, size_t errlen) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        return -1;
    }
    bool ok = fwrite(b->p, 1, b->n, f) == b->n && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", ok ? path : tmp, strerror(ok ? errno : e));
        remove(tmp);
        return -1;
    }
    return 0;
}

int store_export(store *st, const char *path, int64_t *written, char *err, size_t errlen) {
    text_buf b = {0}, z = {0};
    char head[64];
    int64_t n = 0;
    snprintf(head, sizeof head, "%s %d\n", FILE_MAGIC, FILE_VERSION);
    buf_str(&b, head);
    /* one read transaction: a consistent snapshot while a collection writes */
    int rc = store_exec(st, "BEGIN", err, errlen);
    if (!rc)
        rc = dump(st, &b, "device", "SELECT key, math, description, target FROM devices ORDER BY key, math",
                  NULL, err, errlen) ||
             dump(st, &b, "pipeline", "SELECT hash, name, source, text FROM pipelines ORDER BY hash", NULL, err,
                  errlen) ||
             dump(st, &b, "sample",
                  "SELECT p.hash, d.key, d.math, m.ms, m.ref_ms, m.kernel_ms, m.kernels, m.samples, m.runs, m.check_result, m.sizes, m.date,"
                  " m.version, s.hash0 || ',' || s.hash1 || ',' || s.hash2 || ',' || s.hash3, s.text"
                  " FROM measurements m JOIN schedules s ON m.schedule = s.id JOIN pipelines p ON s.pipeline = p.id"
                  " JOIN devices d ON m.device = d.id ORDER BY p.hash, d.key, d.math, s.text", &n, err, errlen) ||
             dump(st, &b, "failure",
                  "SELECT p.hash, d.key, d.math, f.outcome, f.sizes, f.date, f.version,"
                  " s.hash0 || ',' || s.hash1 || ',' || s.hash2 || ',' || s.hash3, f.message, s.text"
                  " FROM failures f JOIN schedules s ON f.schedule = s.id JOIN pipelines p ON s.pipeline = p.id"
                  " JOIN devices d ON f.device = d.id ORDER BY p.hash, d.key, d.math, s.text", &n, err, errlen)
             ? -1 : 0;
    sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
    if (!rc && ends_with(path, ".xz")) rc = xz_compress(&b, &z, err, errlen);
    if (!rc) rc = write_all(path, z.p ? &z : &b, err, errlen);
    free(b.p);
    free(z.p);
    if (!rc && written) *written = n;
    return rc;
}

/* ---- import ---------------------------------------------------------------- */

static int read_file(const char *path, text_buf *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    text_buf raw = {0};
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_put(&raw, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        free(raw.p);
        return -1;
    }
    static const uint8_t xz_magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
    if (raw.n >= 6 && !memcmp(raw.p, xz_magic, 6)) {
        int rc = xz_decompress(path, (const uint8_t *)raw.p, raw.n, out, err, errlen);
        free(raw.p);
        return rc;
    }
    *out = raw;
    if (!out->p) buf_put(out, "", 0);
    return 0;
}

#define MAX_FIELDS 20

/* Splits a record at single spaces and unescapes each field; the count,
 * or -1 on a bad escape. */
static int split(char *line, char **f) {
    int n = 0;
    for (char *s = line; n < MAX_FIELDS;) {
        f[n++] = s;
        char *sp = strchr(s, ' ');
        if (!sp) break;
        *sp = 0;
        s = sp + 1;
    }
    for (int i = 0; i < n; i++)
        if (!unescape(f[i])) return -1;
    return n;
}

static bool parse_double(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && !*end && !errno && isfinite(*v);
}

static bool parse_int(const char *s, int *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (!*s || *end || errno || x < 0 || x > 1000000000) return false;
    *v = (int)x;
    return true;
}

static bool parse_hashes(const char *s, uint64_t h[4]) {
    const char *p = s;
    for (int i = 0; i < 4; i++) {
        char *end;
        errno = 0;
        h[i] = strtoull(p, &end, 16);
        if (end == p || errno || (i < 3 ? *end != ',' : *end != 0)) return false;
        p = end + 1;
    }
    return true;
}

/* The id of a stored row (0: none) by one text key (and a second). */
/* The id of the pipeline of that hash (0: none), -1 with err. */
static int64_t pipeline_by_hash(store *st, const char *hash, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, "SELECT id FROM pipelines WHERE hash = ?", err, errlen);
    if (!q) return -1;
    sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
    return store_select_id(st, q, err, errlen);
}

/* One record; 1 if it added a result, 0 if not, -1 with err (without
 * the place, which the caller adds). */
static int import_record(store *st, char **f, int n, int version, char *err, size_t errlen) {
    const char *kind = f[0];
    double ref_ms = 0;
    const char *kernel_ms = NULL;
    int want = version >= 3 ? 16 : 15;
    if (version >= 2 && !strcmp(kind, "sample") && n == want) {
        /* REF-MS after MS, and KERNEL-MS after it (version 3): taken out
         * so that the fields are version 1's */
        if (*f[5] && (!parse_double(f[5], &ref_ms) || ref_ms <= 0)) {
            snprintf(err, errlen, "expected a reference time in ms or \\e, got '%.40s'", f[5]);
            return -1;
        }
        int extra = version >= 3 ? 2 : 1;
        if (version >= 3) kernel_ms = f[6];
        memmove(f + 5, f + 5 + extra, (size_t)(n - 5 - extra) * sizeof *f);
        n -= extra;
    } else if (version >= 2 && !strcmp(kind, "sample")) {
        snprintf(err, errlen, "a sample record has %d fields, this one %d", want, n);
        return -1;
    }
    if (!strcmp(kind, "device")) {
        if (n != 5) { snprintf(err, errlen, "a device record has 5 fields, this one %d", n); return -1; }
        store_device d = { f[1], f[2], f[3], f[4] };
        return store_put_device(st, &d, err, errlen) < 0 ? -1 : 0;
    }
    if (!strcmp(kind, "pipeline")) {
        if (n != 5) { snprintf(err, errlen, "a pipeline record has 5 fields, this one %d", n); return -1; }
        char hash[17];
        store_text_hash(f[4], hash);
        if (strcmp(hash, f[1])) {
            snprintf(err, errlen, "pipeline %s: its text hashes to %s, not %s (corrupt record)", f[2], hash, f[1]);
            return -1;
        }
        return store_put_pipeline(st, f[2], f[4], f[3], err, errlen) < 0 ? -1 : 0;
    }
    bool sample = !strcmp(kind, "sample");
    if (!sample && strcmp(kind, "failure")) {
        snprintf(err, errlen, "unknown record '%.40s' (expected device, pipeline, sample or failure)", kind);
        return -1;
    }
    if (n != (sample ? 14 : 11)) {
        snprintf(err, errlen, "a %s record has %d fields, this one %d", kind, sample ? 14 : 11, n);
        return -1;
    }
    store_result r = {0};
    int64_t pid = pipeline_by_hash(st, f[1], err, errlen);
    int64_t did = pid > 0 ? store_find_device(st, f[2], f[3], err, errlen) : pid;
    if (pid <= 0 || did <= 0) {
        if (pid == 0) snprintf(err, errlen, "pipeline %s is not defined by an earlier record", f[1]);
        else if (did == 0) snprintf(err, errlen, "device '%s' (%s math) is not defined by an earlier record", f[2], f[3]);
        return -1;
    }
    r.pipeline = pid;
    r.device = did;
    double *samples = NULL;
    if (sample) {
        r.outcome = STORE_OK;
        r.ref_ms = ref_ms;
        r.kernel_ms = kernel_ms;
        int cap = 1;
        for (const char *c = f[6]; *c; c++) cap += *c == ',';
        samples = calloc((size_t)cap, sizeof *samples);
        if (!samples) abort();
        char *save = NULL;
        for (char *t = strtok_r(f[6], ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (!parse_double(t, &samples[r.nsamples])) {
                snprintf(err, errlen, "sample times: '%s' is not a number", t);
                free(samples);
                return -1;
            }
            r.nsamples++;
        }
        r.samples_ms = samples;
        if (!parse_double(f[4], &r.ms) || !parse_int(f[5], &r.kernels) || !parse_int(f[7], &r.runs)) {
            snprintf(err, errlen, "expected numbers for the time, kernels and runs, got '%s', '%s', '%s'", f[4], f[5], f[7]);
            free(samples);
            return -1;
        }
        r.check = f[8];
        r.sizes = f[9];
        r.date = f[10];
        r.version = f[11];
    } else {
        if (store_outcome_parse(f[4], &r.outcome) != 0 || r.outcome == STORE_OK) {
            snprintf(err, errlen, "'%s' is not a failure (expected failed, wrong or timeout)", f[4]);
            return -1;
        }
        r.sizes = f[5];
        r.date = f[6];
        r.version = f[7];
        r.message = f[9];
    }
    if (!parse_hashes(f[sample ? 12 : 8], r.hash)) {
        snprintf(err, errlen, "expected four hex hashes separated by commas, got '%.80s'", f[sample ? 12 : 8]);
        free(samples);
        return -1;
    }
    r.schedule_text = f[sample ? 13 : 10];
    int rc = store_put_result(st, &r, err, errlen);
    free(samples);
    return rc;
}

int store_import(store *st, const char *path, int64_t *added, char *err, size_t errlen) {
    text_buf b = {0};
    if (read_file(path, &b, err, errlen)) return -1;
    /* this version's files, version 2's (no kernel times) and version 1's
     * (no reference times either) */
    char head[64];
    int version = FILE_VERSION;
    for (; version >= 1; version--) {
        snprintf(head, sizeof head, "%s %d\n", FILE_MAGIC, version);
        if (!strncmp(b.p, head, strlen(head))) break;
    }
    if (version < 1) {
        snprintf(err, errlen, "%s:1: not a stagecraft samples file (expected the line '%s %d')", path, FILE_MAGIC,
                 FILE_VERSION);
        free(b.p);
        return -1;
    }
    if (store_exec(st, "BEGIN IMMEDIATE", err, errlen)) { free(b.p); return -1; }
    int64_t n = 0;
    int lineno = 1, rc = 0;
    for (char *line = b.p + strlen(head); *line && !rc;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        char *f[MAX_FIELDS], msg[1024];
        int nf = *line ? split(line, f) : 0;
        int r = nf < 0 ? (snprintf(msg, sizeof msg, "a bad escape (expected \\\\, \\s, \\t, \\n, \\r or \\e)"), -1)
                : nf == 0 ? (snprintf(msg, sizeof msg, "an empty line"), -1)
                          : import_record(st, f, nf, version, msg, sizeof msg);
        if (r < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
            rc = -1;
        }
        n += r > 0;
        line = nl ? nl + 1 : line + strlen(line);
    }
    free(b.p);
    if (rc || store_exec(st, "COMMIT", err, errlen)) {
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (added) *added = n;
    return 0;
}
