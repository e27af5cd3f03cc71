/*
 * test_store.c - the sample store: rows in and out, one result per
 * schedule and device, persistence, the exchange file (round trip, same
 * bytes twice, corrupt files refused with nothing imported), and the
 * errors of files that are not sample databases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include "check.h"
#include "codegen.h"
#include "store.h"

static char dir[256];

static const char *path_in(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    *n = fread(s, 1, (size_t)len, f);
    s[*n] = 0;
    fclose(f);
    return s;
}

static const char *PIPE_A = "pipeline a;\ninput f32 in(8);\nout(x) = in(x) * 2;\noutput out(8);\n";
static const char *PIPE_B = "pipeline b;\ninput u8 in(4, 4);\nout(x, y) = in(y, x);\noutput out(4, 4);\n";

/* Fills a database with two pipelines on one device: 3 samples, 2
 * failures (texts with spaces, tabs, newlines and backslashes). */
static void fill(store *st) {
    char err[512];
    store_device d = { "opencl:pocl-3.1:Test CPU (R)", "fast", "a test device\twith a tab", "name = t\nsm_count = 1\n" };
    int64_t dev = store_put_device(st, &d, err, sizeof err);
    CHECK(dev > 0);
    CHECK(store_put_device(st, &d, err, sizeof err) == dev);   /* the same row */
    int64_t pa = store_put_pipeline(st, "a", PIPE_A, "app:a", err, sizeof err);
    int64_t pb = store_put_pipeline(st, "b", PIPE_B, "random:seed=3", err, sizeof err);
    CHECK(pa > 0 && pb > 0 && pa != pb);
    CHECK(store_put_pipeline(st, "a", PIPE_A, "app:a", err, sizeof err) == pa);
    double s1[3] = { 1.5, 1.25, 1.375 };
    store_result r = { .pipeline = pa, .device = dev, .schedule_text = "schedule a;\nout: root [x=8x1];\n",
                       .hash = { 1, 2, 3, 4 }, .outcome = STORE_OK, .ms = 1.25, .ref_ms = 2.5, .nsamples = 3,
                       .samples_ms = s1, .runs = 10, .kernels = 1, .check = "0 of 8 points differ",
                       .sizes = "out(8)", .date = "2026-01-02T03:04:05Z", .version = "v1",
                       .kernel_ms = "out.0=1.125" };
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    CHECK(store_put_result(st, &r, err, sizeof err) == 0);     /* one result per schedule and device */
    r.kernel_ms = NULL;
    r.schedule_text = "schedule a;\nout: root [x=4x2];\n";
    r.ms = 0.75;
    r.ref_ms = 0;       /* measured without a reference */
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    r.pipeline = pb;
    r.schedule_text = "schedule b;\nout: root [x=4x1 y=4x1];\n";
    r.ms = 3;
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    store_result f = { .pipeline = pb, .device = dev, .schedule_text = "schedule b;\nout: root [x=2x2 y=4x1];\n",
                       .hash = { 5, 6, 7, 8 }, .outcome = STORE_WRONG, .message = "3 points differ \\ badly",
                       .sizes = "out(4x4)" };
    CHECK(store_put_result(st, &f, err, sizeof err) == 1);
    f.schedule_text = "schedule b;\nout: root [x=1x4 y=4x1];\n";
    f.outcome = STORE_TIMEOUT;
    f.message = "killed after 300 s";
    CHECK(store_put_result(st, &f, err, sizeof err) == 1);
    CHECK(store_has_result(st, pb, dev, f.schedule_text, err, sizeof err) == 1);
    CHECK(store_has_result(st, pb, dev, "schedule b;\nnot stored\n", err, sizeof err) == 0);
    /* absurd times are refused, and change nothing */
    r.schedule_text = "schedule b;\nout: root [x=4x4];\n";
    r.ms = -1;
    CHECK(store_put_result(st, &r, err, sizeof err) == -1);
    CHECK(store_has_result(st, pb, dev, r.schedule_text, err, sizeof err) == 0);
}

typedef struct {
    int n;
    double ms[8], ref[8];
    int64_t pipeline[8], device[8];
    int generation[8];
    char source[8][32], kernel_ms[8][64];
} seen;

static int collect_fn(const store_sample *s, void *ud) {
    seen *v = ud;
    if (v->n < 8) {
        v->ms[v->n] = s->ms;
        v->ref[v->n] = s->ref_ms;
        v->pipeline[v->n] = s->pipeline;
        v->device[v->n] = s->device;
        v->generation[v->n] = s->generation;
        snprintf(v->source[v->n], sizeof v->source[v->n], "%s", s->pipeline_source);
        snprintf(v->kernel_ms[v->n], sizeof v->kernel_ms[v->n], "%s", s->kernel_ms);
    }
    v->n++;
    return 0;
}

static void test_rows(void) {
    char err[512];
    store *st = store_open(path_in("rows.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    fill(st);
    store_counts c;
    CHECK(store_count(st, &c, err, sizeof err) == 0);
    CHECK(c.pipelines == 2 && c.devices == 1 && c.samples == 3 && c.failures == 2 && c.wrong == 1 && c.timeout == 1);
    CHECK(c.schedules == 5);
    seen v = {0};
    CHECK(store_each_sample(st, NULL, collect_fn, &v, err, sizeof err) == 0);
    /* pipeline a's sample without a reference time is left out: a has
     * one with a reference; b has none with one, so its sample stays */
    CHECK(v.n == 2 && v.ms[0] == 1.25 && v.ms[1] == 3);
    CHECK(v.ref[0] == 2.5 && v.ref[1] == 0);
    CHECK(!strcmp(v.kernel_ms[0], "out.0=1.125") && !strcmp(v.kernel_ms[1], ""));
    CHECK(v.pipeline[0] != v.pipeline[1]);
    CHECK(!strcmp(v.source[1], "random:seed=3"));
    seen none = {0};
    CHECK(store_each_sample(st, "cuda:other", collect_fn, &none, err, sizeof err) == 0 && none.n == 0);
    store_close(st);
    /* it persists, and reads back read-only */
    st = store_open(path_in("rows.db"), STORE_READ, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    CHECK(store_count(st, &c, err, sizeof err) == 0 && c.samples == 3);
    char *out = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    CHECK(store_print_stats(st, mem, err, sizeof err) == 0);
    fclose(mem);
    CHECK(strstr(out, "\n3 samples\n") != NULL);
    free(out);
    store_close(st);
}

static void test_exchange(void) {
    char err[512];
    store *st = store_open(path_in("x.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    fill(st);
    int64_t n = 0;
    CHECK(store_export(st, path_in("x.txt"), &n, err, sizeof err) == 0 && n == 5);
    CHECK(store_export(st, path_in("x.txt.xz"), &n, err, sizeof err) == 0);
    store_close(st);
    /* import into a fresh database, export again: the same bytes */
    for (int xz = 0; xz < 2; xz++) {
        const char *name = xz ? "y2.db" : "y1.db";
        store *y = store_open(path_in(name), STORE_WRITE, err, sizeof err);
        CHECK(y != NULL);
        if (!y) return;
        int64_t added = 0;
        CHECK(store_import(y, path_in(xz ? "x.txt.xz" : "x.txt"), &added, err, sizeof err) == 0);
        CHECK(added == 5);
        CHECK(store_import(y, path_in("x.txt"), &added, err, sizeof err) == 0 && added == 0);
        CHECK(store_export(y, path_in("y.txt"), &n, err, sizeof err) == 0);
        size_t la, lb;
        char *a = read_all(path_in("x.txt"), &la), *b = read_all(path_in("y.txt"), &lb);
        CHECK(a && b && la == lb && !memcmp(a, b, la));
        free(a);
        free(b);
        store_close(y);
    }
}

/* A corrupt file is refused with its line, and nothing of it is kept. */
static void expect_refused(const char *text, const char *needle) {
    char err[1024];
    store *st = store_open(path_in("bad.db"), STORE_WRITE, err, sizeof err);
    if (!st) { CHECK(st != NULL); return; }
    store_counts before, after;
    CHECK(store_count(st, &before, err, sizeof err) == 0);
    write_text(path_in("bad.txt"), text);
    int rc = store_import(st, path_in("bad.txt"), NULL, err, sizeof err);
    CHECK(rc == -1);
    if (rc == -1 && !strstr(err, needle)) fprintf(stderr, "expected '%s' in: %s\n", needle, err);
    CHECK(strstr(err, needle) != NULL);
    CHECK(store_count(st, &after, err, sizeof err) == 0);
    CHECK(!memcmp(&before, &after, sizeof before));
    store_close(st);
}

static void test_corrupt_files(void) {
    size_t n;
    char *good = read_all(path_in("x.txt"), &n);
    CHECK(good != NULL);
    if (!good) return;
    expect_refused("hello\n", "bad.txt:1: not a stagecraft samples file");
    /* a pipeline text changed after the export */
    char *bad = strdup(good), *p = strstr(bad, "in(x)\\s*\\s2");
    CHECK(p != NULL);
    if (p) p[3] = 'y';
    expect_refused(bad, "its text hashes to");
    free(bad);
    /* a sample that lost a field; the records before it are not kept */
    bad = strdup(good);
    char *s = strstr(bad, "\nsample ");
    CHECK(s != NULL);
    if (s) { char *sp = strchr(s + 8, ' '); memmove(sp, strchr(sp + 1, ' '), strlen(strchr(sp + 1, ' ')) + 1); }
    expect_refused(bad, "a sample record has 16 fields");
    free(bad);
    expect_refused("stagecraft-samples 1\nsample 0123456789abcdef k fast 1 1 1 1 c s d v 1,2,3,4 x\n",
                   "bad.txt:2: pipeline 0123456789abcdef is not defined");
    expect_refused("stagecraft-samples 1\nfrob x\n", "unknown record 'frob'");
    expect_refused("stagecraft-samples 1\ndevice a\\q b c d\n", "bad.txt:2: a bad escape");
    /* a truncated xz file */
    size_t zn;
    char *z = read_all(path_in("x.txt.xz"), &zn);
    FILE *f = fopen(path_in("bad.txt"), "wb");
    if (f && z) { fwrite(z, 1, zn / 2, f); fclose(f); }
    char err[512];
    store *st = store_open(path_in("bad.db"), STORE_WRITE, err, sizeof err);
    CHECK(st && store_import(st, path_in("bad.txt"), NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "not a valid xz file") != NULL);
    store_close(st);
    free(z);
    free(good);
}

static void test_bad_databases(void) {
    char err[512];
    CHECK(store_open(path_in("missing.db"), STORE_READ, err, sizeof err) == NULL);
    CHECK(strstr(err, "no such database") != NULL);
    write_text(path_in("text.db"), "this is not SQLite at all, just some text that is long enough to read a header\n");
    CHECK(store_open(path_in("text.db"), STORE_WRITE, err, sizeof err) == NULL);
    CHECK(strstr(err, "not a stagecraft sample database") != NULL);
    size_t n;
    char *s = read_all(path_in("text.db"), &n);
    CHECK(s && !strncmp(s, "this is not SQLite", 18));   /* left as it was */
    free(s);
    /* an SQLite database of something else */
    sqlite3 *db;
    CHECK(sqlite3_open(path_in("other.db"), &db) == SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK(store_open(path_in("other.db"), STORE_WRITE, err, sizeof err) == NULL);
    CHECK(strstr(err, "not a stagecraft sample database") != NULL);
    /* another schema version */
    store *st = store_open(path_in("v.db"), STORE_WRITE, err, sizeof err);
    store_close(st);
    CHECK(sqlite3_open(path_in("v.db"), &db) == SQLITE_OK);
    sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK(store_open(path_in("v.db"), STORE_READ, err, sizeof err) == NULL);
    CHECK(strstr(err, "schema version 99") != NULL);
}

/* A database of schema version 1 (no ref_ms) or 2 (ref_ms, no
 * kernel_ms), as those versions wrote it, with one measurement of 4.5 ms
 * (version 2: reference 9 ms). */
static void old_database(const char *name, int version) {
    char sql[4096];
    snprintf(sql, sizeof sql,
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES('format', 'stagecraft-samples'), ('schema_version', '%d');"
        "CREATE TABLE pipelines(id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT NOT NULL,"
        "  source TEXT NOT NULL, text TEXT NOT NULL);"
        "CREATE TABLE devices(id INTEGER PRIMARY KEY, key TEXT NOT NULL, math TEXT NOT NULL,"
        "  description TEXT NOT NULL, target TEXT NOT NULL, UNIQUE(key, math));"
        "CREATE TABLE schedules(id INTEGER PRIMARY KEY, pipeline INTEGER NOT NULL REFERENCES pipelines(id),"
        "  text TEXT NOT NULL, hash0 TEXT NOT NULL, hash1 TEXT NOT NULL, hash2 TEXT NOT NULL,"
        "  hash3 TEXT NOT NULL, UNIQUE(pipeline, text));"
        "CREATE TABLE measurements(id INTEGER PRIMARY KEY, schedule INTEGER NOT NULL REFERENCES schedules(id),"
        "  device INTEGER NOT NULL REFERENCES devices(id), ms REAL NOT NULL,%s samples TEXT NOT NULL,"
        "  runs INTEGER NOT NULL, kernels INTEGER NOT NULL, check_result TEXT NOT NULL, sizes TEXT NOT NULL,"
        "  date TEXT NOT NULL, version TEXT NOT NULL, UNIQUE(schedule, device));"
        "CREATE TABLE failures(id INTEGER PRIMARY KEY, schedule INTEGER NOT NULL REFERENCES schedules(id),"
        "  device INTEGER NOT NULL REFERENCES devices(id), outcome TEXT NOT NULL, message TEXT NOT NULL,"
        "  sizes TEXT NOT NULL, date TEXT NOT NULL, version TEXT NOT NULL, UNIQUE(schedule, device));"
        "INSERT INTO pipelines VALUES(1, 'h', 'a', 'app:a', 'pipeline a;');"
        "INSERT INTO devices VALUES(1, 'k', 'fast', '', 'name = t');"
        "INSERT INTO schedules VALUES(1, 1, 's', '0', '0', '0', '0');"
        "INSERT INTO measurements VALUES(1, 1, 1, 4.5,%s '4.5', 1, 1, '', '', '', '');",
        version, version >= 2 ? " ref_ms REAL," : "", version >= 2 ? " 9," : "");
    sqlite3 *db;
    CHECK(sqlite3_open(path_in(name), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

/* A version 1 database (no reference times) is refused read-only with
 * the way to upgrade it, and upgraded, rows kept, when opened to write;
 * a version 1 exchange file is read. */
static void test_version1(void) {
    char err[512];
    old_database("v1.db", 1);
    CHECK(store_open(path_in("v1.db"), STORE_READ, err, sizeof err) == NULL);
    CHECK(strstr(err, "schema version 1") && strstr(err, "upgrades it"));
    store *st = store_open(path_in("v1.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    seen v = {0};
    CHECK(store_each_sample(st, NULL, collect_fn, &v, err, sizeof err) == 0);
    CHECK(v.n == 1 && v.ms[0] == 4.5 && v.ref[0] == 0);
    store_close(st);
    CHECK((st = store_open(path_in("v1.db"), STORE_READ, err, sizeof err)) != NULL);
    store_close(st);
    /* a version 1 file: samples without the reference field */
    char hash[17];
    store_text_hash("pipeline a;", hash);
    char text[1024];
    snprintf(text, sizeof text, "stagecraft-samples 1\ndevice k fast \\e name\\s=\\st\n"
             "pipeline %s a app:a pipeline\\sa;\n"
             "sample %s k fast 2.5 1 2.5 1 \\e \\e d v 0,0,0,0 s2\n", hash, hash);
    write_text(path_in("v1.txt"), text);
    CHECK((st = store_open(path_in("v1b.db"), STORE_WRITE, err, sizeof err)) != NULL);
    int64_t added = 0;
    CHECK(store_import(st, path_in("v1.txt"), &added, err, sizeof err) == 0 && added == 1);
    store_close(st);
}

/* A writer holding the database: a write waits, then fails with a message
 * that says the database is locked; what was stored stays. */
static void test_locked(void) {
    char err[512];
    store *st = store_open(path_in("lock.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    fill(st);
    sqlite3 *other;
    CHECK(sqlite3_open(path_in("lock.db"), &other) == SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    store_set_busy_ms(st, 200);
    store_device d = { "c:cc:another", "fast", "", "name = t\n" };
    CHECK(store_put_device(st, &d, err, sizeof err) == -1);
    CHECK(strstr(err, "locked") != NULL);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    store_counts c;
    CHECK(store_count(st, &c, err, sizeof err) == 0 && c.samples == 3 && c.devices == 1);
    CHECK(store_put_device(st, &d, err, sizeof err) > 0);
    store_close(st);
}

/* store_find_result, a remeasured sample replacing one without a
 * reference time, and the meta keys of long jobs. */
static void test_find_replace_meta(void) {
    char err[512];
    store *st = store_open(path_in("find.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    fill(st);
    int64_t dev = store_find_device(st, "opencl:pocl-3.1:Test CPU (R)", "fast", err, sizeof err);
    int64_t pa = store_put_pipeline(st, "a", PIPE_A, "app:a", err, sizeof err);
    int64_t pb = store_put_pipeline(st, "b", PIPE_B, "random:seed=3", err, sizeof err);
    store_found f;
    CHECK(store_find_result(st, pa, dev, "schedule a;\nout: root [x=8x1];\n", &f, err, sizeof err) == 1);
    CHECK(f.outcome == STORE_OK && f.ms == 1.25 && f.ref_ms == 2.5);
    CHECK(store_find_result(st, pb, dev, "schedule b;\nout: root [x=1x4 y=4x1];\n", &f, err, sizeof err) == 2);
    CHECK(f.outcome == STORE_TIMEOUT);
    CHECK(store_find_result(st, pb, dev, "schedule b;\nnever\n", &f, err, sizeof err) == 0);
    /* a sample with a reference time replaces one without, when asked */
    store_result r = { .pipeline = pa, .device = dev, .schedule_text = "schedule a;\nout: root [x=4x2];\n",
                       .outcome = STORE_OK, .ms = 0.5, .ref_ms = 1.0, .sizes = "out(8)" };
    CHECK(store_put_result(st, &r, err, sizeof err) == 0);       /* not asked: kept */
    r.replace_stale = true;
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    CHECK(store_find_result(st, pa, dev, r.schedule_text, &f, err, sizeof err) == 1 && f.ms == 0.5 && f.ref_ms == 1.0);
    r.ms = 0.25;        /* it has a reference time now: kept */
    CHECK(store_put_result(st, &r, err, sizeof err) == 0);
    CHECK(store_find_result(st, pa, dev, r.schedule_text, &f, err, sizeof err) == 1 && f.ms == 0.5);
    CHECK(f.generation == CG_GENERATION && !store_found_stale(&f));
    /* code generations: a measurement of older code is stale, and replaced
     * when asked */
    CHECK(store_codegen_generation("v1-3-gabc") == 1 && store_codegen_generation(NULL) == 1);
    CHECK(store_codegen_generation("abc123-dirty cg7") == 7);
    CHECK(store_codegen_generation(store_version()) == CG_GENERATION);
    store_result old = r;
    old.schedule_text = "schedule a;\nout: root [x=2x4];\n";
    old.version = "aa12d84";
    old.ms = 0.75;
    old.replace_stale = false;
    CHECK(store_put_result(st, &old, err, sizeof err) == 1);
    CHECK(store_find_result(st, pa, dev, old.schedule_text, &f, err, sizeof err) == 1 && f.generation == 1);
    CHECK(store_found_stale(&f));
    store_result fresh = old;
    fresh.version = NULL;
    fresh.ms = 0.5;
    CHECK(store_put_result(st, &fresh, err, sizeof err) == 0);    /* not asked: kept */
    fresh.replace_stale = true;
    CHECK(store_put_result(st, &fresh, err, sizeof err) == 1);
    CHECK(store_find_result(st, pa, dev, old.schedule_text, &f, err, sizeof err) == 1 && f.ms == 0.5 &&
          f.generation == CG_GENERATION);
    store_counts c;
    CHECK(store_count(st, &c, err, sizeof err) == 0 && c.samples == 4 && c.schedules == 6);
    /* meta keys */
    char *v = store_get_meta(st, "autotune x", err, sizeof err);
    CHECK(v && !strcmp(v, ""));
    free(v);
    CHECK(store_set_meta(st, "autotune x", "iteration 3", err, sizeof err) == 0);
    CHECK(store_set_meta(st, "autotune x", "iteration 4", err, sizeof err) == 0);
    v = store_get_meta(st, "autotune x", err, sizeof err);
    CHECK(v && !strcmp(v, "iteration 4"));
    free(v);
    CHECK(store_set_meta(st, "schema_version", "9", err, sizeof err) == -1 && strstr(err, "belongs to the store"));
    store_close(st);
    CHECK((st = store_open(path_in("find.db"), STORE_WRITE, err, sizeof err)) != NULL);
    if (!st) return;
    v = store_get_meta(st, "autotune x", err, sizeof err);
    CHECK(v && !strcmp(v, "iteration 4"));
    free(v);
    store_close(st);
}

/* Generations across device rows: store_stale_schedules lists the
 * schedules with no fresh time anywhere, and the samples training reads
 * leave out a time superseded by one of newer code, the newest first. */
static void test_generations(void) {
    char err[512];
    store *st = store_open(":memory:", STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    store_device d1 = { "opencl:pocl-3.1:Old CPU", "fast", "old", "name = t\nsm_count = 1\n" };
    store_device d2 = { "opencl:pocl-3.1:New CPU", "fast", "new", "name = t\nsm_count = 1\n" };
    int64_t old = store_put_device(st, &d1, err, sizeof err), now = store_put_device(st, &d2, err, sizeof err);
    int64_t pa = store_put_pipeline(st, "a", PIPE_A, "app:a", err, sizeof err);
    CHECK(old > 0 && now > 0 && pa > 0);
    const char *t1 = "schedule a;\nout: root [x=8x1];\n", *t2 = "schedule a;\nout: root [x=4x2];\n",
               *t3 = "schedule a;\nout: root [x=2x4];\n";
    store_result r = { .pipeline = pa, .device = old, .outcome = STORE_OK, .ref_ms = 2, .sizes = "out(8)",
                       .version = "aa12d84" };
    r.schedule_text = t1, r.ms = 1;
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    r.schedule_text = t2, r.ms = 4;
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    r.schedule_text = t3, r.ms = 3, r.version = NULL;      /* this build's code */
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    char **texts;
    int n = store_stale_schedules(st, pa, false, &texts, err, sizeof err);
    CHECK(n == 2 && !strcmp(texts[0], t1) && !strcmp(texts[1], t2));
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    /* t1 timed again on the other device row: no longer stale, and its old
     * time is left out of the samples */
    r.device = now, r.schedule_text = t1, r.ms = 6, r.ref_ms = 3;
    CHECK(store_put_result(st, &r, err, sizeof err) == 1);
    n = store_stale_schedules(st, pa, false, &texts, err, sizeof err);
    CHECK(n == 1 && !strcmp(texts[0], t2));
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);

    seen v = { 0 };
    CHECK(store_each_sample(st, NULL, collect_fn, &v, err, sizeof err) == 0);
    /* t3 and t1's new time (this build's generation) first, then t2 (generation 1) */
    CHECK(v.n == 3 && v.ms[0] == 3 && v.ms[1] == 6 && v.ms[2] == 4);
    /* each with its device row and generation, one group after another */
    CHECK(v.device[0] == old && v.device[1] == now && v.device[2] == old);
    CHECK(v.generation[0] == CG_GENERATION && v.generation[1] == CG_GENERATION && v.generation[2] == 1);
    /* stats count them per generation */
    char *out = NULL, line[128];
    size_t len = 0;
    FILE *mem = open_memstream(&out, &len);
    CHECK(store_print_stats(st, mem, err, sizeof err) == 0);
    fclose(mem);
    CHECK(strstr(out, "\n  generation 1: 2, 0\n") != NULL);
    snprintf(line, sizeof line, "\n  generation %d: 2, 0 (this build's code)\n", CG_GENERATION);
    CHECK(strstr(out, line) != NULL);
    free(out);
    /* one device row only: the superseding time must be of that device's key */
    v = (seen){ 0 };
    CHECK(store_each_sample(st, "opencl:pocl-3.1:Old CPU", collect_fn, &v, err, sizeof err) == 0);
    CHECK(v.n == 3 && v.ms[0] == 3 && v.ms[1] == 1 && v.ms[2] == 4);
    /* without kernel times counting as stale: t3 and t1 too (none has
     * them), until t3 is timed again with them, which replaces it */
    n = store_stale_schedules(st, pa, true, &texts, err, sizeof err);
    CHECK(n == 3);
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    store_found f3;
    CHECK(store_find_result(st, pa, old, t3, &f3, err, sizeof err) == 1 && !f3.kernel_times &&
          store_found_without_kernel_times(&f3) && !store_found_stale(&f3));
    store_result k3 = r;
    k3.device = old, k3.schedule_text = t3, k3.ms = 3.5, k3.ref_ms = 2, k3.version = NULL, k3.kernel_ms = "out.0=3.25";
    CHECK(store_put_result(st, &k3, err, sizeof err) == 0);         /* not asked to replace */
    k3.replace_without_kernel_times = true;
    CHECK(store_put_result(st, &k3, err, sizeof err) == 1);
    CHECK(store_find_result(st, pa, old, t3, &f3, err, sizeof err) == 1 && f3.kernel_times && f3.ms == 3.5);
    CHECK(store_put_result(st, &k3, err, sizeof err) == 0);         /* it has them now */
    n = store_stale_schedules(st, pa, true, &texts, err, sizeof err);
    CHECK(n == 2);
    for (int i = 0; i < n; i++) CHECK(strcmp(texts[i], t3) != 0);
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    store_close(st);
}

/* A version 2 database (no kernel times) is upgraded, rows kept, when
 * opened to write; a version 2 exchange file (15 fields a sample) is
 * read, its samples without kernel times. */
static void test_version2(void) {
    char err[512];
    old_database("v2.db", 2);
    CHECK(store_open(path_in("v2.db"), STORE_READ, err, sizeof err) == NULL);
    CHECK(strstr(err, "schema version 2") && strstr(err, "upgrades it"));
    store *st = store_open(path_in("v2.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    seen v = {0};
    CHECK(store_each_sample(st, NULL, collect_fn, &v, err, sizeof err) == 0);
    CHECK(v.n == 1 && v.ms[0] == 4.5 && v.ref[0] == 9 && !strcmp(v.kernel_ms[0], ""));
    store_close(st);
    char hash[17];
    store_text_hash("pipeline a;", hash);
    char text[1024];
    snprintf(text, sizeof text, "stagecraft-samples 2\ndevice k fast \\e name\\s=\\st\n"
             "pipeline %s a app:a pipeline\\sa;\n"
             "sample %s k fast 2.5 5 1 2.5 1 \\e \\e d v 0,0,0,0 s2\n", hash, hash);
    write_text(path_in("v2.txt"), text);
    CHECK((st = store_open(path_in("v2b.db"), STORE_WRITE, err, sizeof err)) != NULL);
    int64_t added = 0;
    CHECK(store_import(st, path_in("v2.txt"), &added, err, sizeof err) == 0 && added == 1);
    seen w = {0};
    CHECK(store_each_sample(st, NULL, collect_fn, &w, err, sizeof err) == 0);
    CHECK(w.n == 1 && w.ref[0] == 5 && !strcmp(w.kernel_ms[0], ""));
    store_close(st);
}

/* The kernels' times: the text's syntax both ways, a bad text refused by
 * store_put_result and by an import (with the line), nothing stored. */
static void test_kernel_times(void) {
    char err[512], buf[256];
    store_kernel_time k[4];
    CHECK(store_kernel_ms_parse("", k, 4, err, sizeof err) == 0);
    CHECK(store_kernel_ms_parse(NULL, k, 4, err, sizeof err) == 0);
    CHECK(store_kernel_ms_parse("blur_x.0=0.25,out.1=1e-3", k, 4, err, sizeof err) == 2);
    CHECK(!strcmp(k[0].func, "blur_x") && k[0].stage == 0 && k[0].ms == 0.25);
    CHECK(!strcmp(k[1].func, "out") && k[1].stage == 1 && k[1].ms == 1e-3);
    CHECK(store_kernel_ms_format(k, 2, buf, sizeof buf) && !strcmp(buf, "blur_x.0=0.25,out.1=0.001"));
    CHECK(!store_kernel_ms_format(k, 2, buf, 8) && buf[0] == 0);       /* no room */
    static const struct { const char *text, *needle; } bad[] = {
        { "out=1", "entry 1: expected FUNC.STAGE=MS" },
        { "out.0=1,9x.0=1", "entry 2: expected FUNC.STAGE=MS" },
        { "out.x=1", "entry 1 (out): expected a stage number" },
        { "out.0=-1", "entry 1 (out.0): expected a time of at least 0 ms" },
        { "out.0=1ms", "expected a time" },
        { "out.0=1,", "a comma at the end" },
        { "out.0=1,out.0=2", "out.0 is there twice" },
        { "a.0=1,b.0=1,c.0=1,d.0=1,e.0=1", "more than 4 kernels" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK(store_kernel_ms_parse(bad[i].text, k, 4, err, sizeof err) == -1);
        if (!strstr(err, bad[i].needle)) fprintf(stderr, "'%s': expected '%s' in: %s\n", bad[i].text, bad[i].needle, err);
        CHECK(strstr(err, bad[i].needle) != NULL);
    }
    store *st = store_open(path_in("k.db"), STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) return;
    fill(st);
    int64_t dev = store_find_device(st, "opencl:pocl-3.1:Test CPU (R)", "fast", err, sizeof err);
    int64_t pa = store_put_pipeline(st, "a", PIPE_A, "app:a", err, sizeof err);
    store_result r = { .pipeline = pa, .device = dev, .schedule_text = "schedule a;\nout: root [x=2x4];\n",
                       .outcome = STORE_OK, .ms = 1, .ref_ms = 1, .sizes = "out(8)", .kernel_ms = "out.0=x" };
    CHECK(store_put_result(st, &r, err, sizeof err) == -1 && strstr(err, "the kernels' times: entry 1"));
    CHECK(store_has_result(st, pa, dev, r.schedule_text, err, sizeof err) == 0);
    store_close(st);
    /* an exchange file whose kernel field is bad: refused with its line */
    size_t n;
    char *good = read_all(path_in("x.txt"), &n);
    CHECK(good && strstr(good, " out.0=1.125 "));
    if (!good) return;
    char *bad2 = malloc(n + 16), *at = strstr(good, " out.0=1.125 ");
    if (at) {
        size_t pre = (size_t)(at - good);
        memcpy(bad2, good, pre);
        strcpy(bad2 + pre, " out.0=1.1.25 ");
        strcat(bad2, at + strlen(" out.0=1.125 "));
        expect_refused(bad2, "the kernels' times: entry 1 (out.0): expected a time");
    }
    free(bad2);
    free(good);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/sc_test_store_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    RUN(test_rows);
    RUN(test_exchange);
    RUN(test_corrupt_files);
    RUN(test_bad_databases);
    RUN(test_locked);
    RUN(test_version1);
    RUN(test_version2);
    RUN(test_kernel_times);
    RUN(test_find_replace_meta);
    RUN(test_generations);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    CHECK_EXIT();
}
