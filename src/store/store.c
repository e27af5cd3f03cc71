/*
 * store.c - the sample store on SQLite (store.h): opening and checking a
 * database, its schema, and putting and reading rows.  The exchange file
 * (export / import) is in store_file.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "codegen.h"
#include "store_impl.h"

#define CG_TEXT_(n) #n
#define CG_TEXT(n) CG_TEXT_(n)
#define CG_GENERATION_TEXT CG_TEXT(CG_GENERATION)

#ifndef SC_VERSION
#define SC_VERSION "unknown"
#endif

const char *store_version(void) { return SC_VERSION " cg" CG_GENERATION_TEXT; }

bool store_found_stale(const store_found *f) {
    return f->outcome == STORE_OK && (f->ref_ms <= 0 || f->generation < CG_GENERATION);
}

bool store_found_without_kernel_times(const store_found *f) {
    return f->outcome == STORE_OK && !f->kernel_times;
}

int store_codegen_generation(const char *version) {
    const char *g = version ? strstr(version, " cg") : NULL;
    int n = g ? atoi(g + 3) : 0;
    return n > 0 ? n : 1;
}

/* generation(version) in SQL: store_codegen_generation */
static void sql_generation(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    sqlite3_result_int(ctx, store_codegen_generation((const char *)sqlite3_value_text(argv[0])));
}


static const char *schema =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE pipelines(id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT NOT NULL,"
    "  source TEXT NOT NULL, text TEXT NOT NULL);"
    "CREATE TABLE devices(id INTEGER PRIMARY KEY, key TEXT NOT NULL, math TEXT NOT NULL,"
    "  description TEXT NOT NULL, target TEXT NOT NULL, UNIQUE(key, math));"
    "CREATE TABLE schedules(id INTEGER PRIMARY KEY, pipeline INTEGER NOT NULL REFERENCES pipelines(id),"
    "  text TEXT NOT NULL, hash0 TEXT NOT NULL, hash1 TEXT NOT NULL, hash2 TEXT NOT NULL,"
    "  hash3 TEXT NOT NULL, UNIQUE(pipeline, text));"
    "CREATE TABLE measurements(id INTEGER PRIMARY KEY, schedule INTEGER NOT NULL REFERENCES schedules(id),"
    "  device INTEGER NOT NULL REFERENCES devices(id), ms REAL NOT NULL, ref_ms REAL, samples TEXT NOT NULL,"
    "  runs INTEGER NOT NULL, kernels INTEGER NOT NULL, check_result TEXT NOT NULL, sizes TEXT NOT NULL,"
    "  date TEXT NOT NULL, version TEXT NOT NULL, kernel_ms TEXT, UNIQUE(schedule, device));"
    "CREATE TABLE failures(id INTEGER PRIMARY KEY, schedule INTEGER NOT NULL REFERENCES schedules(id),"
    "  device INTEGER NOT NULL REFERENCES devices(id), outcome TEXT NOT NULL, message TEXT NOT NULL,"
    "  sizes TEXT NOT NULL, date TEXT NOT NULL, version TEXT NOT NULL, UNIQUE(schedule, device));";

int store_fail(store *st, char *err, size_t errlen, const char *what) {
    const char *msg = st->db ? sqlite3_errmsg(st->db) : "out of memory";
    int code = st->db ? sqlite3_errcode(st->db) : SQLITE_NOMEM;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        snprintf(err, errlen, "%s: %s: the database is locked by another process (waited %.1f s)", st->path,
                 what, st->busy_ms / 1000.0);
    else
        snprintf(err, errlen, "%s: %s: %s", st->path, what, msg);
    return -1;
}

int store_exec(store *st, const char *sql, char *err, size_t errlen) {
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK) return store_fail(st, err, errlen, sql);
    return 0;
}

sqlite3_stmt *store_prepare(store *st, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK) {
        store_fail(st, err, errlen, "preparing a query");
        return NULL;
    }
    return q;
}

void store_text_hash(const char *text, char out[17]) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        h ^= *c;
        h *= 0x100000001b3ull;
    }
    snprintf(out, 17, "%016" PRIx64, h);
}

const char *store_outcome_name(store_outcome o) {
    static const char *names[] = { "ok", "failed", "wrong", "timeout" };
    return (unsigned)o < 4 ? names[o] : "?";
}

int store_outcome_parse(const char *name, store_outcome *o) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, store_outcome_name((store_outcome)i))) { *o = (store_outcome)i; return 0; }
    return -1;
}

/* The value of a meta key, or NULL (malloc'd). */
static char *meta_get(store *st, const char *key) {
    sqlite3_stmt *q = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key = ?", -1, &q, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) v = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return v;
}

/* A new database gets the schema; an existing one must be ours, of this
 * schema version. */
static int check_schema(store *st, bool writable, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, "SELECT count(*) FROM sqlite_master", err, errlen);
    if (!q) return -1;
    int rc = sqlite3_step(q);
    int64_t ntables = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
    sqlite3_finalize(q);
    if (ntables < 0) {
        if (sqlite3_errcode(st->db) == SQLITE_NOTADB)
            snprintf(err, errlen, "%s: not a stagecraft sample database (not an SQLite file)", st->path);
        else
            store_fail(st, err, errlen, "reading the schema");
        return -1;
    }
    if (ntables == 0) {
        if (!writable) {
            snprintf(err, errlen, "%s: an empty database, not a stagecraft sample database", st->path);
            return -1;
        }
        char sql[160];
        snprintf(sql, sizeof sql,
                 "INSERT INTO meta VALUES('format', 'stagecraft-samples'), ('schema_version', '%d');",
                 STORE_SCHEMA_VERSION);
        if (store_exec(st, "BEGIN IMMEDIATE", err, errlen)) return -1;
        if (store_exec(st, schema, err, errlen) || store_exec(st, sql, err, errlen)) {
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        return store_exec(st, "COMMIT", err, errlen);
    }
    char *format = meta_get(st, "format"), *version = meta_get(st, "schema_version");
    int r = 0;
    if (!format || strcmp(format, "stagecraft-samples")) {
        snprintf(err, errlen, "%s: not a stagecraft sample database (no 'format = stagecraft-samples' in a meta table)",
                 st->path);
        r = -1;
    } else if (version && atoi(version) >= 1 && atoi(version) < STORE_SCHEMA_VERSION && writable) {
        /* version 1 -> 2: the reference time; 2 -> 3: the kernels' times;
         * NULL in the rows there are */
        char sql[300];
        snprintf(sql, sizeof sql, "%s ALTER TABLE measurements ADD COLUMN kernel_ms TEXT;"
                 "UPDATE meta SET value = '%d' WHERE key = 'schema_version';",
                 atoi(version) == 1 ? "ALTER TABLE measurements ADD COLUMN ref_ms REAL;" : "", STORE_SCHEMA_VERSION);
        if (store_exec(st, "BEGIN IMMEDIATE", err, errlen)) r = -1;
        else if (store_exec(st, sql, err, errlen)) {
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
            r = -1;
        } else {
            r = store_exec(st, "COMMIT", err, errlen);
        }
    } else if (!version || atoi(version) != STORE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: schema version %s, this stagecraft reads version %d%s", st->path,
                 version ? version : "(none)", STORE_SCHEMA_VERSION,
                 version && atoi(version) < STORE_SCHEMA_VERSION
                     ? " (a command that writes, such as collect or samples import, upgrades it)" : "");
        r = -1;
    }
    free(format);
    free(version);
    return r;
}

store *store_open(const char *path, store_mode mode, char *err, size_t errlen) {
    bool memory = !strcmp(path, ":memory:");
    if (mode == STORE_READ && !memory && access(path, F_OK) != 0) {
        snprintf(err, errlen, "%s: no such database (%s)", path, strerror(errno));
        return NULL;
    }
    store *st = calloc(1, sizeof *st);
    if (!st) abort();
    st->path = strdup(path);
    if (!st->path) abort();
    int flags = mode == STORE_READ ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &st->db, flags, NULL) != SQLITE_OK) {
        store_fail(st, err, errlen, "cannot open");
        store_close(st);
        return NULL;
    }
    store_set_busy_ms(st, STORE_BUSY_MS);
    sqlite3_extended_result_codes(st->db, 0);
    sqlite3_create_function(st->db, "generation", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_generation,
                            NULL, NULL);
    /* WAL: readers never block the writer, and a commit is one append; a
     * killed process loses only its open transaction. */
    if ((mode == STORE_WRITE && !memory &&
         (store_exec(st, "PRAGMA journal_mode=WAL", err, errlen) ||
          store_exec(st, "PRAGMA synchronous=NORMAL", err, errlen))) ||
        check_schema(st, mode == STORE_WRITE, err, errlen) ||
        store_exec(st, "PRAGMA foreign_keys=ON", err, errlen)) {
        if (strstr(err, "file is not a database"))
            snprintf(err, errlen, "%s: not a stagecraft sample database (not an SQLite file)", path);
        store_close(st);
        return NULL;
    }
    return st;
}

void store_close(store *st) {
    if (!st) return;
    sqlite3_close(st->db);
    free(st->path);
    free(st);
}

const char *store_path(const store *st) { return st->path; }

void store_set_busy_ms(store *st, int ms) {
    st->busy_ms = ms;
    sqlite3_busy_timeout(st->db, ms);
}

int64_t store_select_id(store *st, sqlite3_stmt *q, char *err, size_t errlen) {
    int rc = sqlite3_step(q);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : rc == SQLITE_DONE ? 0 : -1;
    if (id < 0) store_fail(st, err, errlen, "reading");
    sqlite3_finalize(q);
    return id;
}

/* Runs an insert whose parameters are bound; the new row's id, or -1. */
static int64_t insert(store *st, sqlite3_stmt *q, char *err, size_t errlen) {
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return store_fail(st, err, errlen, "writing");
    return sqlite3_last_insert_rowid(st->db);
}

int64_t store_find_device(store *st, const char *key, const char *math, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, "SELECT id FROM devices WHERE key = ? AND math = ?", err, errlen);
    if (!q) return -1;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, math, -1, SQLITE_STATIC);
    return store_select_id(st, q, err, errlen);
}

int64_t store_put_device(store *st, const store_device *d, char *err, size_t errlen) {
    if (!d->key || !*d->key || !d->math || !d->target_text) {
        snprintf(err, errlen, "%s: a device needs a key, a math mode and a target", st->path);
        return -1;
    }
    int64_t id = store_find_device(st, d->key, d->math, err, errlen);
    if (id != 0) return id;
    sqlite3_stmt *q = store_prepare(st, "INSERT INTO devices(key, math, description, target) VALUES(?, ?, ?, ?)", err, errlen);
    if (!q) return -1;
    sqlite3_bind_text(q, 1, d->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, d->math, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, d->description ? d->description : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, d->target_text, -1, SQLITE_STATIC);
    return insert(st, q, err, errlen);
}

int64_t store_put_pipeline(store *st, const char *name, const char *text, const char *source, char *err,
                           size_t errlen) {
    char hash[17];
    store_text_hash(text, hash);
    sqlite3_stmt *q = store_prepare(st, "SELECT id, text FROM pipelines WHERE hash = ?", err, errlen);
    if (!q) return -1;
    sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        bool same = !strcmp((const char *)sqlite3_column_text(q, 1), text);
        sqlite3_finalize(q);
        if (!same) {
            snprintf(err, errlen, "%s: pipeline %s: another pipeline's text has the same hash %s", st->path, name, hash);
            return -1;
        }
        return id;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return store_fail(st, err, errlen, "reading pipelines");
    q = store_prepare(st, "INSERT INTO pipelines(hash, name, source, text) VALUES(?, ?, ?, ?)", err, errlen);
    if (!q) return -1;
    sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, source ? source : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, text, -1, SQLITE_STATIC);
    return insert(st, q, err, errlen);
}

/* The schedule's id (0: not stored), -1 with err. */
static int64_t schedule_id(store *st, int64_t pipeline, const char *text, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, "SELECT id FROM schedules WHERE pipeline = ? AND text = ?", err, errlen);
    if (!q) return -1;
    sqlite3_bind_int64(q, 1, pipeline);
    sqlite3_bind_text(q, 2, text, -1, SQLITE_STATIC);
    return store_select_id(st, q, err, errlen);
}

int store_find_result(store *st, int64_t pipeline, int64_t device, const char *schedule_text, store_found *out,
                      char *err, size_t errlen) {
    if (out) *out = (store_found){ 0 };
    int64_t sid = schedule_id(st, pipeline, schedule_text, err, errlen);
    if (sid <= 0) return (int)sid;
    sqlite3_stmt *q = store_prepare(st,
        "SELECT 1, ms, coalesce(ref_ms, 0), '', version, kernel_ms IS NOT NULL FROM measurements"
        " WHERE schedule = ?1 AND device = ?2"
        " UNION ALL SELECT 2, 0, 0, outcome, version, 0 FROM failures WHERE schedule = ?1 AND device = ?2", err, errlen);
    if (!q) return -1;
    sqlite3_bind_int64(q, 1, sid);
    sqlite3_bind_int64(q, 2, device);
    int rc = sqlite3_step(q), r = 0;
    if (rc == SQLITE_ROW) {
        r = sqlite3_column_int(q, 0);
        if (out) {
            out->ms = sqlite3_column_double(q, 1);
            out->ref_ms = sqlite3_column_double(q, 2);
            out->outcome = STORE_OK;
            out->generation = store_codegen_generation((const char *)sqlite3_column_text(q, 4));
            out->kernel_times = sqlite3_column_int(q, 5) != 0;
            if (r == 2 && store_outcome_parse((const char *)sqlite3_column_text(q, 3), &out->outcome) != 0)
                out->outcome = STORE_FAILED;
        }
    } else if (rc != SQLITE_DONE) {
        r = store_fail(st, err, errlen, "reading a result");
    }
    sqlite3_finalize(q);
    return r;
}

int store_stale_schedules(store *st, int64_t pipeline, bool without_kernel_times, char ***texts, char *err,
                          size_t errlen) {
    *texts = NULL;
    sqlite3_stmt *q = store_prepare(st,
        "SELECT s.text FROM schedules s WHERE s.pipeline = ?1"
        " AND EXISTS (SELECT 1 FROM measurements m WHERE m.schedule = s.id"
        "  AND (m.ref_ms IS NULL OR generation(m.version) < ?2 OR (?3 AND m.kernel_ms IS NULL)))"
        " AND NOT EXISTS (SELECT 1 FROM measurements m WHERE m.schedule = s.id"
        "  AND m.ref_ms IS NOT NULL AND generation(m.version) >= ?2 AND (NOT ?3 OR m.kernel_ms IS NOT NULL))"
        " ORDER BY s.id", err, errlen);
    if (!q) return -1;
    sqlite3_bind_int64(q, 1, pipeline);
    sqlite3_bind_int(q, 2, CG_GENERATION);
    sqlite3_bind_int(q, 3, without_kernel_times);
    int n = 0, rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        *texts = realloc(*texts, sizeof **texts * (size_t)(n + 1));
        if (!*texts || !((*texts)[n++] = strdup((const char *)sqlite3_column_text(q, 0)))) abort();
    }
    if (rc != SQLITE_DONE) {
        store_fail(st, err, errlen, "reading stale schedules");
        for (int i = 0; i < n; i++) free((*texts)[i]);
        free(*texts);
        *texts = NULL;
        n = -1;
    }
    sqlite3_finalize(q);
    return n;
}

int store_has_result(store *st, int64_t pipeline, int64_t device, const char *schedule_text, char *err,
                     size_t errlen) {
    int r = store_find_result(st, pipeline, device, schedule_text, NULL, err, errlen);
    return r < 0 ? -1 : r > 0;
}

char *store_get_meta(store *st, const char *key, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, "SELECT value FROM meta WHERE key = ?", err, errlen);
    if (!q) return NULL;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    char *v = NULL;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        if (!(v = strdup((const char *)sqlite3_column_text(q, 0)))) abort();
    } else if (rc == SQLITE_DONE) {
        if (!(v = strdup(""))) abort();
    } else {
        store_fail(st, err, errlen, "reading the meta table");
    }
    sqlite3_finalize(q);
    return v;
}

int store_set_meta(store *st, const char *key, const char *value, char *err, size_t errlen) {
    if (!strcmp(key, "format") || !strcmp(key, "schema_version")) {
        snprintf(err, errlen, "%s: the meta key '%s' belongs to the store itself", st->path, key);
        return -1;
    }
    sqlite3_stmt *q = store_prepare(st, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", err, errlen);
    if (!q) return -1;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
    return insert(st, q, err, errlen) < 0 ? -1 : 0;
}

static void now_iso(char *buf, size_t len) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The schedule and its result, inside the caller's savepoint. */
static int put_result_in(store *st, const store_result *r, char *err, size_t errlen) {
    int64_t sid = schedule_id(st, r->pipeline, r->schedule_text, err, errlen);
    if (sid < 0) return -1;
    if (sid == 0) {
        sqlite3_stmt *q = store_prepare(st,
            "INSERT INTO schedules(pipeline, text, hash0, hash1, hash2, hash3) VALUES(?, ?, ?, ?, ?, ?)", err, errlen);
        if (!q) return -1;
        char h[4][17];
        sqlite3_bind_int64(q, 1, r->pipeline);
        sqlite3_bind_text(q, 2, r->schedule_text, -1, SQLITE_STATIC);
        for (int i = 0; i < 4; i++) {
            snprintf(h[i], sizeof h[i], "%016" PRIx64, r->hash[i]);
            sqlite3_bind_text(q, 3 + i, h[i], -1, SQLITE_STATIC);
        }
        sid = insert(st, q, err, errlen);
        if (sid < 0) return -1;
    } else {
        store_found f;
        int has = store_find_result(st, r->pipeline, r->device, r->schedule_text, &f, err, errlen);
        if (has < 0) return -1;
        bool replace = (r->replace_stale && store_found_stale(&f)) ||
                       (r->replace_without_kernel_times && store_found_without_kernel_times(&f) && r->kernel_ms &&
                        *r->kernel_ms);
        if (has == 1 && replace && r->outcome == STORE_OK && r->ref_ms > 0) {
            sqlite3_stmt *q = store_prepare(st, "DELETE FROM measurements WHERE schedule = ? AND device = ?", err, errlen);
            if (!q) return -1;
            sqlite3_bind_int64(q, 1, sid);
            sqlite3_bind_int64(q, 2, r->device);
            if (insert(st, q, err, errlen) < 0) return -1;
        } else if (has != 0) {
            return 0;
        }
    }
    char date[32], *samples = NULL;
    if (!r->date) now_iso(date, sizeof date);
    const char *version = r->version ? r->version : store_version();
    sqlite3_stmt *q;
    if (r->outcome == STORE_OK) {
        size_t cap = 32 + (size_t)r->nsamples * 26, n = 0;
        samples = malloc(cap);
        if (!samples) abort();
        samples[0] = 0;
        for (int i = 0; i < r->nsamples; i++)
            n += (size_t)snprintf(samples + n, cap - n, "%s%.17g", i ? "," : "", r->samples_ms[i]);
        q = store_prepare(st,
            "INSERT INTO measurements(schedule, device, ms, samples, runs, kernels, check_result, sizes, date, version,"
            " ref_ms, kernel_ms) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", err, errlen);
        if (q) {
            sqlite3_bind_double(q, 3, r->ms);
            sqlite3_bind_text(q, 4, samples, -1, SQLITE_STATIC);
            sqlite3_bind_int(q, 5, r->runs);
            sqlite3_bind_int(q, 6, r->kernels);
            sqlite3_bind_text(q, 7, r->check ? r->check : "", -1, SQLITE_STATIC);
            if (r->ref_ms > 0) sqlite3_bind_double(q, 11, r->ref_ms);
            else sqlite3_bind_null(q, 11);
            if (r->kernel_ms && *r->kernel_ms) sqlite3_bind_text(q, 12, r->kernel_ms, -1, SQLITE_STATIC);
            else sqlite3_bind_null(q, 12);
        }
    } else {
        q = store_prepare(st,
            "INSERT INTO failures(schedule, device, outcome, message, sizes, date, version)"
            " VALUES(?, ?, ?, ?, ?, ?, ?)", err, errlen);
        if (q) {
            sqlite3_bind_text(q, 3, store_outcome_name(r->outcome), -1, SQLITE_STATIC);
            sqlite3_bind_text(q, 4, r->message ? r->message : "", -1, SQLITE_STATIC);
        }
    }
    if (!q) { free(samples); return -1; }
    int last = r->outcome == STORE_OK ? 8 : 5;
    sqlite3_bind_int64(q, 1, sid);
    sqlite3_bind_int64(q, 2, r->device);
    sqlite3_bind_text(q, last, r->sizes ? r->sizes : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(q, last + 1, r->date ? r->date : date, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, last + 2, version, -1, SQLITE_STATIC);
    int64_t id = insert(st, q, err, errlen);
    free(samples);
    return id < 0 ? -1 : 1;
}

int store_put_result(store *st, const store_result *r, char *err, size_t errlen) {
    if (r->outcome == STORE_OK && r->kernel_ms && *r->kernel_ms) {
        store_kernel_time *k = malloc(sizeof *k * STORE_MAX_KERNEL_TIMES);
        if (!k) abort();
        char why[300];
        int n = store_kernel_ms_parse(r->kernel_ms, k, STORE_MAX_KERNEL_TIMES, why, sizeof why);
        free(k);
        if (n < 0) {
            snprintf(err, errlen, "%s: the kernels' times: %s", st->path, why);
            return -1;
        }
    }
    if (r->outcome == STORE_OK && (!(r->ms >= 0 && r->ms < 1e12) || !(r->ref_ms >= 0 && r->ref_ms < 1e12))) {
        snprintf(err, errlen, "%s: a measurement of %g ms is not a run time", st->path, r->ms);
        return -1;
    }
    if (!r->schedule_text || (unsigned)r->outcome > STORE_TIMEOUT) {
        snprintf(err, errlen, "%s: a result needs a schedule text and an outcome", st->path);
        return -1;
    }
    /* a savepoint nests inside an import's transaction, and is one
     * transaction of its own otherwise */
    if (store_exec(st, "SAVEPOINT put_result", err, errlen)) return -1;
    int rc = put_result_in(st, r, err, errlen);
    if (rc < 0) {
        sqlite3_exec(st->db, "ROLLBACK TO put_result; RELEASE put_result", NULL, NULL, NULL);
        return -1;
    }
    if (store_exec(st, "RELEASE put_result", err, errlen)) {
        sqlite3_exec(st->db, "ROLLBACK TO put_result; RELEASE put_result", NULL, NULL, NULL);
        return -1;
    }
    return rc;
}

int store_each_sample(store *st, const char *device_key, store_sample_fn fn, void *ud, char *err,
                      size_t errlen) {
    sqlite3_stmt *q = store_prepare(st,
        "SELECT m.id, p.id, p.name, p.hash, p.source, p.text, s.text, d.key, d.math, d.target, m.ms,"
        " coalesce(m.ref_ms, 0), instr(m.samples, ',') = 0, m.date, m.device, generation(m.version),"
        " coalesce(m.kernel_ms, '') FROM measurements m JOIN schedules s ON m.schedule = s.id JOIN pipelines p ON s.pipeline = p.id"
        " JOIN devices d ON m.device = d.id WHERE (?1 IS NULL OR d.key = ?1)"
        /* times without a reference are not comparable with those with one */
        " AND (m.ref_ms IS NOT NULL OR NOT EXISTS (SELECT 1 FROM measurements m2 JOIN schedules s2"
        "  ON m2.schedule = s2.id WHERE s2.pipeline = p.id AND m2.device = m.device AND m2.ref_ms IS NOT NULL))"
        /* a schedule timed again on newer code: the older time is left out */
        " AND NOT EXISTS (SELECT 1 FROM measurements m3 JOIN devices d3 ON m3.device = d3.id"
        "  WHERE m3.schedule = m.schedule AND (?1 IS NULL OR d3.key = ?1) AND m3.ref_ms IS NOT NULL"
        "  AND generation(m3.version) > generation(m.version))"
        /* the newest code's first; one generation's and device row's together */
        " ORDER BY p.id, generation(m.version) DESC, m.device, m.id", err, errlen);
    if (!q) return -1;
    if (device_key) sqlite3_bind_text(q, 1, device_key, -1, SQLITE_STATIC);
    int rc, r = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        store_sample s = {
            sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
            (const char *)sqlite3_column_text(q, 2), (const char *)sqlite3_column_text(q, 3),
            (const char *)sqlite3_column_text(q, 4), (const char *)sqlite3_column_text(q, 5),
            (const char *)sqlite3_column_text(q, 6), (const char *)sqlite3_column_text(q, 7),
            (const char *)sqlite3_column_text(q, 8), (const char *)sqlite3_column_text(q, 9),
            sqlite3_column_double(q, 10), sqlite3_column_double(q, 11),
            sqlite3_column_int(q, 12) != 0, (const char *)sqlite3_column_text(q, 13),
            sqlite3_column_int64(q, 14), sqlite3_column_int(q, 15),
            (const char *)sqlite3_column_text(q, 16),
        };
        if ((r = fn(&s, ud)) != 0) break;
    }
    if (r == 0 && rc != SQLITE_DONE) r = store_fail(st, err, errlen, "reading samples");
    sqlite3_finalize(q);
    return r;
}

/* One count(*) query. */
static int64_t count_of(store *st, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *q = store_prepare(st, sql, err, errlen);
    return q ? store_select_id(st, q, err, errlen) : -1;
}

int store_count(store *st, store_counts *c, char *err, size_t errlen) {
    int64_t *dst[] = { &c->pipelines, &c->schedules, &c->devices, &c->samples, &c->failures,
                       &c->failed, &c->wrong, &c->timeout };
    static const char *sql[] = {
        "SELECT count(*) FROM pipelines", "SELECT count(*) FROM schedules", "SELECT count(*) FROM devices",
        "SELECT count(*) FROM measurements", "SELECT count(*) FROM failures",
        "SELECT count(*) FROM failures WHERE outcome = 'failed'",
        "SELECT count(*) FROM failures WHERE outcome = 'wrong'",
        "SELECT count(*) FROM failures WHERE outcome = 'timeout'",
    };
    for (int i = 0; i < 8; i++)
        if ((*dst[i] = count_of(st, sql[i], err, errlen)) < 0) return -1;
    return 0;
}

int store_print_stats(store *st, FILE *out, char *err, size_t errlen) {
    store_counts c;
    if (store_count(st, &c, err, errlen)) return -1;
    fprintf(out, "database %s (schema %d)\n", st->path, STORE_SCHEMA_VERSION);
    fprintf(out, "%" PRId64 " samples\n", c.samples);
    fprintf(out, "%" PRId64 " failures (%" PRId64 " failed to compile or run, %" PRId64 " wrong, %" PRId64
                 " timed out)\n", c.failures, c.failed, c.wrong, c.timeout);
    fprintf(out, "%" PRId64 " pipelines, %" PRId64 " schedules, %" PRId64 " devices\n", c.pipelines, c.schedules,
            c.devices);
    sqlite3_stmt *q = store_prepare(st,
        "SELECT d.key, d.math, (SELECT count(*) FROM measurements m WHERE m.device = d.id),"
        " (SELECT count(*) FROM failures f WHERE f.device = d.id) FROM devices d ORDER BY d.key, d.math", err, errlen);
    if (!q) return -1;
    fprintf(out, "per device (samples, failures):\n");
    while (sqlite3_step(q) == SQLITE_ROW)
        fprintf(out, "  %s [%s math]: %lld, %lld\n", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1),
                (long long)sqlite3_column_int64(q, 2), (long long)sqlite3_column_int64(q, 3));
    sqlite3_finalize(q);
    /* code generations: how much --remeasure has left to time again */
    q = store_prepare(st,
        "SELECT generation(version) AS g, count(*), sum(ref_ms IS NULL) FROM measurements GROUP BY g ORDER BY g",
        err, errlen);
    if (!q) return -1;
    fprintf(out, "per code generation (samples, of them without a reference time):\n");
    while (sqlite3_step(q) == SQLITE_ROW) {
        int g = sqlite3_column_int(q, 0);
        fprintf(out, "  generation %d: %lld, %lld%s\n", g, (long long)sqlite3_column_int64(q, 1),
                (long long)sqlite3_column_int64(q, 2), g == CG_GENERATION ? " (this build's code)" : "");
    }
    sqlite3_finalize(q);
    /* sources: "app:NAME" one line each; "random:..." together */
    q = store_prepare(st,
        "SELECT CASE WHEN p.source LIKE 'random:%' THEN 'random pipelines' ELSE p.source END AS src,"
        " count(DISTINCT p.id), count(m.id), min(m.ms), max(m.ms)"
        " FROM pipelines p LEFT JOIN schedules s ON s.pipeline = p.id LEFT JOIN measurements m ON m.schedule = s.id"
        " GROUP BY src ORDER BY src", err, errlen);
    if (!q) return -1;
    fprintf(out, "per source: pipelines, samples, fastest and slowest ms\n");
    while (sqlite3_step(q) == SQLITE_ROW) {
        fprintf(out, "  %-28s %6lld %7lld", sqlite3_column_text(q, 0), (long long)sqlite3_column_int64(q, 1),
                (long long)sqlite3_column_int64(q, 2));
        if (sqlite3_column_type(q, 3) != SQLITE_NULL)
            fprintf(out, "  %.3g .. %.3g", sqlite3_column_double(q, 3), sqlite3_column_double(q, 4));
        fprintf(out, "\n");
    }
    sqlite3_finalize(q);
    return 0;
}

/* ---- each kernel's time alone ------------------------------------------------ */

static bool func_name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

int store_kernel_ms_parse(const char *text, store_kernel_time *out, int max, char *err, size_t errlen) {
    int n = 0;
    for (const char *p = text ? text : ""; *p;) {
        const char *name = p;
        while (func_name_char(*p, p == name)) p++;
        size_t len = (size_t)(p - name);
        if (len == 0 || len >= STORE_FUNC_NAME_MAX || *p != '.') {
            snprintf(err, errlen, "entry %d: expected FUNC.STAGE=MS (a Func name of at most %d characters), got '%.40s'",
                     n + 1, STORE_FUNC_NAME_MAX - 1, name);
            return -1;
        }
        char *end;
        errno = 0;
        long stage = strtol(p + 1, &end, 10);
        if (end == p + 1 || errno || stage < 0 || stage > 1000 || *end != '=') {
            snprintf(err, errlen, "entry %d (%.*s): expected a stage number and '=', got '%.40s'", n + 1, (int)len,
                     name, p + 1);
            return -1;
        }
        p = end + 1;
        errno = 0;
        double ms = strtod(p, &end);
        if (end == p || errno || !(ms >= 0 && ms < 1e12) || (*end && *end != ',')) {
            snprintf(err, errlen, "entry %d (%.*s.%ld): expected a time of at least 0 ms, got '%.40s'", n + 1,
                     (int)len, name, stage, p);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "more than %d kernels", max);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (out[i].stage == stage && strlen(out[i].func) == len && !strncmp(out[i].func, name, len)) {
                snprintf(err, errlen, "entry %d: %.*s.%ld is there twice", n + 1, (int)len, name, stage);
                return -1;
            }
        memcpy(out[n].func, name, len);
        out[n].func[len] = 0;
        out[n].stage = (int)stage;
        out[n].ms = ms;
        n++;
        p = *end ? end + 1 : end;
        if (*end && !*p) {
            snprintf(err, errlen, "a comma at the end");
            return -1;
        }
    }
    return n;
}

bool store_kernel_ms_format(const store_kernel_time *k, int n, char *buf, size_t cap) {
    size_t at = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!k[i].func[0]) return false;
        for (const char *c = k[i].func; *c; c++)
            if (!func_name_char(*c, c == k[i].func)) return false;
        int w = snprintf(buf + at, cap - at, "%s%s.%d=%.6g", i ? "," : "", k[i].func, k[i].stage, k[i].ms);
        if (w < 0 || (size_t)w >= cap - at) {
            if (cap) buf[0] = 0;
            return false;
        }
        at += (size_t)w;
    }
    return true;
}
