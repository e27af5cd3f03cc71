/*
 * test_train_store.c - training from the sample store: a temporary
 * database with two devices (a C device and an OpenCL one), three small
 * pipelines (one of them an app) and random schedules with times made up
 * from a known formula of their features; the loader reads the right
 * samples per device, leaves failures and held-out apps out and counts
 * what it rejects, the exchange file gives the same set, and the model
 * trained on it ranks the samples.  Seconds.
 *
 * Run from the repository root (targets/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fixtures.h"
#include "codegen.h"
#include "costmodel.h"
#include "space.h"
#include "store.h"
#include "train_load.h"

static target A100;

#include "train_pipes.h"
#define NSCHED 24
static const char *C_KEY = "c:cc-test:test-cpu";
static const char *CL_KEY = "opencl:pocl-test:test-cpu";

static double made_up_ms(const feat_result *r) {
    double ms = 1e-3, T[NN_COEF];
    for (int i = 0; i < r->n; i++) {
        cost_terms(r->rows[i].v, &A100, T);
        ms += 2e-6 * T[1] + 5e-6 * T[28] + 4e-3 * T[24] + 1e-6 * T[13];
    }
    return ms;
}

/* The database: every pipeline's distinct random schedules on the C
 * device, the first few also on the OpenCL device; the first schedule of
 * each pipeline a failure and the second an absurd time on the C device
 * (absurd[] counts those stored).  Returns the C device's good samples. */
static int absurd[NPIPES];

static int fill(store *st, int *per_pipe) {
    char err[1024], tt[4096];
    target_print(&A100, tt, sizeof tt);
    store_device dc = { C_KEY, "exact", "the C back end", tt }, dl = { CL_KEY, "fast", "PoCL", tt };
    int64_t devc = store_put_device(st, &dc, err, sizeof err), devl = store_put_device(st, &dl, err, sizeof err);
    CHECK(devc >= 0 && devl >= 0);
    int good = 0;
    for (int p = 0; p < NPIPES; p++) {
        fixture fx = fixture_load(PIPES[p]);
        char *text = sc_pipeline_to_text(fx.p);
        int64_t pid = store_put_pipeline(st, sc_pipeline_name(fx.p), text, p == 2 ? "app:blur" : "random:seed=1",
                                         err, sizeof err);
        CHECK(pid >= 0);
        free(text);
        space_opts so = { &A100, true, false };
        per_pipe[p] = 0;
        for (int s = 1; s <= NSCHED + 2; s++) {
            sched_state *sc = space_random(fx.a, fx.p, fx.b, &so, (uint64_t)s, err, sizeof err);
            feat_result r = { 0 };
            CHECK(sc && feat_compute(fx.p, fx.b, sc, &A100, &r, err, sizeof err) == 0);
            char *stext = sched_to_text(fx.p, sc);
            store_result res = { .pipeline = pid, .device = devc, .schedule_text = stext, .outcome = STORE_OK,
                                 .ms = made_up_ms(&r), .nsamples = 0, .runs = 1, .kernels = 1, .check = "exact",
                                 .sizes = "", .version = "test" };
            for (int d = 0; d < 4; d++) res.hash[d] = sched_hash(sc, d);
            bool bad = s <= 2;                         /* the first two: always new */
            if (s == 1) {
                res.outcome = STORE_FAILED;
                res.message = "did not compile";
            } else if (s == 2) {
                res.ms = 1e9;                          /* absurd: rejected by the loader */
            }
            int put = store_put_result(st, &res, err, sizeof err);
            CHECK(put >= 0);
            if (put == 1 && s == 2) absurd[p]++;
            if (put == 1 && !bad) {
                good++;
                per_pipe[p]++;
            }
            if (s <= 7 && !bad) {
                res.device = devl;
                CHECK(store_put_result(st, &res, err, sizeof err) >= 0);
            }
            free(stext);
            feat_free(&r);
        }
        fixture_unload(&fx);
    }
    return good;
}

static void test_from_store(void) {
    char db[128], xz[128], err[2048];
    snprintf(db, sizeof db, "/tmp/test_train_store_%d.db", (int)getpid());
    snprintf(xz, sizeof xz, "/tmp/test_train_store_%d.txt.xz", (int)getpid());
    fixture_remove_db(db);
    store *st = store_open(db, STORE_WRITE, err, sizeof err);
    if (!st) fprintf(stderr, "  %s\n", err);
    CHECK(st != NULL);
    if (!st) return;
    int per_pipe[NPIPES];
    int good = fill(st, per_pipe);
    printf("  %d good samples on the C device (%d, %d, %d per pipeline), %d absurd\n", good, per_pipe[0], per_pipe[1],
           per_pipe[2], absurd[0] + absurd[1] + absurd[2]);
    CHECK(absurd[0] + absurd[1] + absurd[2] >= 1);
    CHECK(good >= 20 && per_pipe[0] > 2 && per_pipe[1] > 2 && per_pipe[2] > 2);
    int64_t written = 0;
    CHECK(store_export(st, xz, &written, err, sizeof err) == 0);
    store_close(st);

    /* the C device: its good samples, one absurd time per pipeline */
    train_data d;
    train_data_init(&d);
    train_load_opts o = { .device_key = C_KEY };
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    CHECK(d.nsamples == good);
    CHECK(d.npipes == NPIPES);
    CHECK(d.rejected_time == absurd[0] + absurd[1] + absurd[2]);
    CHECK(!strcmp(d.device, C_KEY));
    train_data_free(&d);

    /* both devices: a mixed set */
    train_data_init(&d);
    o.device_key = NULL;
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    CHECK(d.nsamples > good && d.device[0] == 0);
    train_data_free(&d);

    /* an unknown device: nothing, and the keys it has */
    train_data_init(&d);
    o.device_key = "cuda:none";
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0 && d.nsamples == 0);
    train_data_free(&d);
    char keys[512];
    CHECK(train_device_keys(db, NULL, keys, sizeof keys, err, sizeof err) == 2);
    CHECK(strstr(keys, C_KEY) && strstr(keys, CL_KEY));

    /* the exchange file: the same samples; the app held out */
    train_data_init(&d);
    const char *hold[] = { "blur", "blurr" };
    int hold_pipes[2] = { 0, 0 };
    train_load_opts oh = { .device_key = C_KEY, .nhold = 2, .hold = hold, .hold_pipes = hold_pipes };
    CHECK(train_load(&d, NULL, xz, &oh, err, sizeof err) == 0);
    CHECK(hold_pipes[0] == 1 && hold_pipes[1] == 0);   /* the app's one pipeline; the misspelt name none */
    CHECK(d.nsamples == good - per_pipe[2]);
    CHECK(d.held_out == per_pipe[2] + absurd[2]);      /* its absurd sample too */
    CHECK(d.npipes == NPIPES - 1);
    train_data_free(&d);

    /* trained on the store's samples, the model ranks them */
    train_data_init(&d);
    o.device_key = C_KEY;
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    nn_model *m = calloc(1, sizeof *m);
    train_opts to;
    train_opts_default(&to);
    to.epochs = 60;
    to.lr = 3e-3;
    train_metrics tm;
    CHECK(train_run(&d, m, &to, &tm, NULL, err, sizeof err) == 0);
    printf("  from the store: %d samples, pairwise %.3f, rho %.3f, loss %.4g\n", tm.samples, tm.pairwise, tm.rho,
           tm.loss);
    CHECK(tm.pairwise > 0.85);
    free(m);
    train_data_free(&d);

    /* missing and bad inputs */
    train_data_init(&d);
    CHECK(train_load(&d, "/nonexistent/samples.db", NULL, &o, err, sizeof err) != 0 && strstr(err, "/nonexistent/samples.db"));
    CHECK(train_load(&d, NULL, "/nonexistent/samples.txt.xz", &o, err, sizeof err) != 0 &&
          strstr(err, "/nonexistent/samples.txt.xz"));
    train_data_free(&d);
    fixture_remove_db(db);
    remove(xz);
}

/* The drift check: each sample gets the median time of its pipeline's
 * neighbours in order, never its own; other pipelines' samples between
 * them are skipped. */
static void test_neighbours(void) {
    train_data d;
    train_data_init(&d);
    int a = train_data_pipeline(&d, "a", "app:a", "ha"), b = train_data_pipeline(&d, "b", "app:b", "hb");
    static const double ms[] = { 1, 100, 2, 4, 8, 1000 };
    const int pipe[] = { a, b, a, a, a, b };
    d.nsamples = 6;
    d.samples = calloc(6, sizeof *d.samples);
    for (int i = 0; i < 6; i++) d.samples[i] = (train_sample){ pipe[i], ms[i], 0, 0, 0, 0 };
    double pred[6];
    train_neighbour_predict(&d, 1, pred);
    CHECK(fabs(pred[0] - 2) < 1e-12);                  /* only the next of a: 2 */
    CHECK(fabs(pred[1] - 1000) < 1e-9);                /* b's other sample, past a's */
    CHECK(fabs(pred[2] - 2) < 1e-12);                  /* median of 1 and 4, in log: sqrt(1 x 4) */
    CHECK(fabs(pred[3] - 4) < 1e-12);                  /* sqrt(2 x 8) */
    CHECK(fabs(pred[4] - 4) < 1e-12);
    CHECK(fabs(pred[5] - 100) < 1e-9);
    train_neighbour_predict(&d, 3, pred);
    CHECK(fabs(pred[0] - 4) < 1e-12);                  /* median of 2, 4, 8 */
    CHECK(fabs(pred[2] - 4) < 1e-12);                  /* median of 1, 4, 8 */
    train_data_free(&d);
}

/* A new store at db (removed first) with the C device and the pipeline
 * of fx: the store; *devc and *pid get their ids.  NULL on failure, with
 * fx unloaded. */
static store *one_pipeline_store(const char *db, fixture *fx, int64_t *devc, int64_t *pid) {
    char err[2048], tt[4096];
    fixture_remove_db(db);
    store *st = store_open(db, STORE_WRITE, err, sizeof err);
    CHECK(st != NULL);
    if (!st) {
        fixture_unload(fx);
        return NULL;
    }
    target_print(&A100, tt, sizeof tt);
    store_device dev = { C_KEY, "exact", "the C back end", tt };
    *devc = store_put_device(st, &dev, err, sizeof err);
    char *text = sc_pipeline_to_text(fx->p);
    *pid = store_put_pipeline(st, sc_pipeline_name(fx->p), text, "random:seed=1", err, sizeof err);
    free(text);
    CHECK(*devc >= 0 && *pid >= 0);
    return st;
}

/* Stores each of the n results under a distinct random schedule of fx's
 * pipeline (its text and hashes filled in here); how many were stored. */
static int put_on_random_schedules(store *st, const fixture *fx, store_result *res, int n) {
    char err[2048];
    space_opts so = { &A100, true, false };
    int put = 0;
    for (int seed = 1; put < n && seed < 50; seed++) {
        sched_state *sc = space_random(fx->a, fx->p, fx->b, &so, (uint64_t)seed, err, sizeof err);
        char *stext = sc ? sched_to_text(fx->p, sc) : NULL;
        if (!stext) continue;
        res[put].schedule_text = stext;
        for (int d = 0; d < 4; d++) res[put].hash[d] = sched_hash(sc, d);
        int r = store_put_result(st, &res[put], err, sizeof err);
        free(stext);
        res[put].schedule_text = NULL;
        put += r == 1;
    }
    return put;
}

/* A sample timed once against a reference before the fix of the cold
 * reference (train_load.h) is rejected as such; one timed once after it,
 * or one timed in several samples before it, or one without a reference,
 * is loaded. */
static void test_cold_reference(void) {
    char db[128], err[2048];
    snprintf(db, sizeof db, "/tmp/test_train_cold_%d.db", (int)getpid());
    fixture fx = fixture_load(PIPES[0]);
    int64_t devc, pid;
    store *st = one_pipeline_store(db, &fx, &devc, &pid);
    if (!st) return;
    double one[1] = { 1500 }, three[3] = { 1500, 1510, 1490 };
    struct { const double *samples; int n; double ref_ms; const char *date; } cases[] = {
        { one, 1, 900, "2026-11-25T10:00:00Z" },      /* cold: rejected */
        { one, 1, 900, "2026-11-27T02:00:00Z" },      /* after the fix */
        { three, 3, 900, "2026-11-25T10:00:00Z" },    /* timed in turn, several pairs */
        { one, 1, 900, NULL },                         /* now */
    };
    store_result res[4];
    for (int c = 0; c < 4; c++)
        res[c] = (store_result){ .pipeline = pid, .device = devc, .outcome = STORE_OK, .ms = cases[c].samples[0],
                                 .ref_ms = cases[c].ref_ms, .nsamples = cases[c].n,
                                 .samples_ms = cases[c].samples, .runs = 1, .kernels = 1, .check = "exact",
                                 .sizes = "", .date = cases[c].date, .version = "test" };
    int put = put_on_random_schedules(st, &fx, res, 4);
    CHECK(put == 4);
    store_close(st);
    train_data d;
    train_data_init(&d);
    train_load_opts o = { .device_key = C_KEY };
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    CHECK(d.nsamples == 3 && d.rejected_cold == 1);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A pipeline's samples of different code generations form separate groups
 * (pipelines to the loss and the metrics), each in the units of its own
 * first reference time: the newest code's group first. */
static void test_generation_groups(void) {
    char db[128], err[2048];
    snprintf(db, sizeof db, "/tmp/test_train_groups_%d.db", (int)getpid());
    fixture fx = fixture_load(PIPES[0]);
    int64_t devc, pid;
    store *st = one_pipeline_store(db, &fx, &devc, &pid);
    if (!st) return;
    struct { double ms, ref_ms; const char *version; } cases[] = {
        { 5, 10, "aa12d84" },                  /* generation 1 */
        { 10, 20, "42ab5b2 cg4" },             /* generation 4 */
        { 30, 20, "42ab5b2 cg4" },
        { 8, 10, "aa12d84" },
    };
    store_result res[4];
    double ms[4];
    for (int c = 0; c < 4; c++) {
        ms[c] = cases[c].ms;
        res[c] = (store_result){ .pipeline = pid, .device = devc, .outcome = STORE_OK, .ms = ms[c],
                                 .ref_ms = cases[c].ref_ms, .nsamples = 1, .samples_ms = &ms[c], .runs = 1,
                                 .kernels = 1, .check = "exact", .sizes = "", .date = "2026-11-27T16:00:00Z",
                                 .version = cases[c].version };
    }
    int put = put_on_random_schedules(st, &fx, res, 4);
    CHECK(put == 4);
    store_close(st);
    train_data d;
    train_data_init(&d);
    train_load_opts o = { .device_key = C_KEY };
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    CHECK(d.nsamples == 4 && d.npipes == 2);
    if (d.nsamples == 4 && d.npipes == 2) {
        /* generation 4 in units of 20 ms, generation 1 in units of 10 */
        CHECK(d.samples[0].pipe == 0 && d.samples[1].pipe == 0 && d.samples[0].ms == 10 &&
              d.samples[1].ms == 30);
        CHECK(d.samples[2].pipe == 1 && d.samples[3].pipe == 1 && d.samples[2].ms == 5 &&
              d.samples[3].ms == 8);
        CHECK(!strcmp(d.pipes[0].hash, d.pipes[1].hash) && !strcmp(d.pipes[0].name, d.pipes[1].name));
    }
    train_data_free(&d);
    /* --min-generation 4: generation 1's samples left out, and counted */
    train_data_init(&d);
    o.min_generation = 4;
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    CHECK(d.nsamples == 2 && d.npipes == 1 && d.rejected_generation == 2);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* Stores one successful result of the schedule text sched (timed ms,
 * against a reference of 20 ms) for pipeline pid on device; 1 when stored. */
static int put_one(store *st, const fixture *fx, int64_t pid, int64_t device, const char *sched, double ms,
                   const char *date, const char *version, bool replace_stale) {
    char err[2048];
    sched_state *sc = sched_parse(fx->a, fx->p, "t.sched", sched, err, sizeof err);
    if (!sc) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    char *stext = sched_to_text(fx->p, sc);
    double one[1] = { ms };
    store_result res = { .pipeline = pid, .device = device, .schedule_text = stext, .outcome = STORE_OK,
                         .ms = ms, .ref_ms = 20, .nsamples = 1, .samples_ms = one, .runs = 1, .kernels = 2,
                         .check = "exact", .sizes = "", .date = date, .version = version,
                         .replace_stale = replace_stale };
    for (int d = 0; d < 4; d++) res.hash[d] = sched_hash(sc, d);
    int rc = store_put_result(st, &res, err, sizeof err);
    free(stext);
    return rc;
}

/* A sample measured before the reduction order changed
 * (TRAIN_REDUCTION_AROUND_TILE) is rejected where its schedule has a
 * stage accumulating in place over more than one point per thread, and
 * loaded where that stage has one point per thread or where it was
 * measured after the change. */
static void test_reduction_order(void) {
    char db[128], err[2048];
    snprintf(db, sizeof db, "/tmp/test_train_order_%d.db", (int)getpid());
    /* a reduction of 256 steps: no tile here unrolls it (generation 24) */
    fixture fx = fixture_load("pipeline mm;\ninput f32 A(64, 256);\ninput f32 B(256, 64);\nrdom r(0, 256);\n"
                              "prod(i, j) = 0.0;\nprod(i, j) += A(i, r) * B(r, j);\n"
                              "out(i, j) = prod(i, j) * 2.0;\noutput out(64, 64);\n");
    int64_t devc, pid;
    store *st = one_pipeline_store(db, &fx, &devc, &pid);
    if (!st) return;
    struct { const char *sched, *date; } cases[] = {
        { "schedule mm;\nout: root [i=16x1 j=4x1];\nprod: root [i=16x1 j=4x1] [i=16x4 j=4x1];\n",
          "2026-11-27T05:00:00Z" },                     /* 4 points a thread, before: rejected */
        { "schedule mm;\nout: root [i=16x1 j=4x1];\nprod: root [i=16x4 j=4x1] [i=16x1 j=4x1];\n",
          "2026-11-27T05:00:00Z" },                     /* the update 1 point a thread: loaded */
        { "schedule mm;\nout: root [i=16x1 j=4x1];\nprod: root [i=16x1 j=4x1] [i=16x2 j=4x2];\n",
          "2026-11-28T10:00:00Z" },                     /* after the change: loaded */
    };
    for (int c = 0; c < 3; c++)
        CHECK(put_one(st, &fx, pid, devc, cases[c].sched, 10 + c, cases[c].date, "test", false) == 1);
    store_close(st);
    train_data d;
    train_data_init(&d);
    train_load_opts o = { .device_key = C_KEY };
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
    CHECK(d.nsamples == 2 && d.rejected_order == 1 && d.rejected_cold == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* Loads every sample of db (nothing held out) into *d (train_data_free
 * it); false when that fails. */
static bool load_all(const char *db, train_data *d) {
    char err[2048];
    train_data_init(d);
    train_load_opts o = { 0 };
    return train_load(d, db, NULL, &o, err, sizeof err) == 0;
}

/* Stores a time of sched on device dev measured by code generation gen
 * in db, replacing an older generation's; false when that fails. */
static bool put_generation(const char *db, const fixture *fx, int64_t pid, int64_t dev, const char *sched,
                           int gen) {
    char err[2048], version[64];
    store *st = store_open(db, STORE_WRITE, err, sizeof err);
    if (!st) return false;
    snprintf(version, sizeof version, "abc cg%d", gen);
    bool ok = put_one(st, fx, pid, dev, sched, 9, "2026-11-28T10:00:00Z", version, true) == 1;
    store_close(st);
    return ok;
}

/* A CPU's sample (target kind cpu) of code older than
 * CG_GENERATION_CPU_UNSTAGED is rejected where its schedule has a kernel
 * the GPU rule stages in registers (the code it timed had the staged
 * array, which a CPU's code no longer has); loaded where nothing stages,
 * where the code is newer, or where the device is a GPU. */
static void test_cpu_staged(void) {
    char db[128], err[2048], tt[4096];
    snprintf(db, sizeof db, "/tmp/test_train_staged_%d.db", (int)getpid());
    fixture fx = fixture_load("pipeline blur;\ninput u16 in(66, 52);\n"
                              "bx(x, y) = u16((u32(in(x, y)) + in(x + 1, y)) / 2);\n"
                              "out(x, y) = u16((u32(bx(x, y)) + bx(x, y + 1) + bx(x, y + 2)) / 3);\n"
                              "output out(64, 48);\n");
    int64_t devg, pid;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    target cpu = A100;
    cpu.cpu = true;
    target_print(&cpu, tt, sizeof tt);
    store_device dev = { CL_KEY, "fast", "PoCL", tt };
    int64_t devl = store_put_device(st, &dev, err, sizeof err);
    CHECK(devl >= 0);
    /* out 2x2 points a thread reads bx over 2x4: staged by the GPU rule */
    const char *staged = "schedule blur;\nout: root [x=16x2 y=4x2];\nbx: root [x=32x1 y=10x1];\n";
    const char *plain = "schedule blur;\nout: root [x=16x1 y=4x1];\nbx: root [x=32x1 y=10x1];\n";
    struct { const char *sched, *version; int64_t device; } cases[] = {
        { staged, "abc cg6", devl },    /* a CPU's staged code: rejected */
        { plain, "abc cg6", devl },     /* nothing staged: loaded */
        { staged, "abc cg6", devg },    /* a GPU's: loaded */
    };
    for (int c = 0; c < 3; c++)
        CHECK(put_one(st, &fx, pid, cases[c].device, cases[c].sched, 10 + c, "2026-11-28T09:00:00Z",
                      cases[c].version, false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_staged == 1);
    train_data_free(&d);
    /* the same staged schedule timed by this build's code: loaded; the
     * GPU's time of the schedule, of older code, is left out now that
     * newer code's exists (store_each_sample) */
    CHECK(put_generation(db, &fx, pid, devl, staged, CG_GENERATION_CPU_UNSTAGED));
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_staged == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A sample of code older than CG_GENERATION_THREAD_UNROLLED is rejected,
 * on any device, where a thread-level Func of its schedule has loops that
 * lowering now unrolls (nest_unrolls_thread_tiles); loaded where none has,
 * or where the code is newer.  One older than
 * CG_GENERATION_PRIVATE_INDICES is rejected where the stage reading such
 * a Func's private array has loops that lowering now unrolls
 * (nest_unrolls_private_readers). */
static void test_thread_unrolled(void) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_unrolled_%d.db", (int)getpid());
    fixture fx = fixture_load("pipeline blur;\ninput u16 in(66, 52);\n"
                              "bx(x, y) = u16((u32(in(x, y)) + in(x + 1, y)) / 2);\n"
                              "out(x, y) = u16((u32(bx(x, y)) + bx(x, y + 1) + bx(x, y + 2)) / 3);\n"
                              "output out(64, 48);\n");
    int64_t devg, pid;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    /* bx in out's threads: 1 x 18 points (unrolled now), 1 x 4 (always) */
    const char *wide = "schedule blur;\nout: root [x=16x1 y=3x16];\nbx: thread of out;\n";
    /* the narrow one's reader (out, 2 points) unrolled in every generation */
    const char *narrow = "schedule blur;\nout: root [x=16x1 y=4x2];\nbx: thread of out;\n";
    CHECK(put_one(st, &fx, pid, devg, wide, 10, "2026-11-28T09:00:00Z", "abc cg7", false) == 1);
    CHECK(put_one(st, &fx, pid, devg, narrow, 11, "2026-11-28T09:00:00Z", "abc cg7", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_unrolled == 1);
    train_data_free(&d);
    /* generation 8 unrolled bx's 18 points but left out's 16 rolled: out
     * reads bx's private array, and unrolls since generation 10 */
    CHECK(put_generation(db, &fx, pid, devg, wide, CG_GENERATION_THREAD_UNROLLED));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_unrolled == 0 && d.rejected_private == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devg, wide, CG_GENERATION_PRIVATE_INDICES));
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_private == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* Two OpenCL devices in st: PoCL on a CPU (*devl) and a GPU (*devg). */
static void cpu_and_gpu_devices(store *st, int64_t *devl, int64_t *devg) {
    char err[2048], tt[4096];
    target cpu = A100;
    cpu.cpu = true;
    target_print(&cpu, tt, sizeof tt);
    store_device dl = { CL_KEY, "fast", "PoCL", tt };
    *devl = store_put_device(st, &dl, err, sizeof err);
    target_print(&A100, tt, sizeof tt);
    store_device dg = { "opencl:test:a-gpu", "fast", "a GPU", tt };
    *devg = store_put_device(st, &dg, err, sizeof err);
    CHECK(*devl >= 0 && *devg >= 0);
}

/* A CPU's OpenCL sample of code older than CG_GENERATION_SPLIT_INTERIOR
 * is rejected where a kernel of its program has interior blocks that this
 * build launches apart (cg_opencl_splits: a body of CG_SPLIT_NODES nodes
 * or more); loaded where the kernel is small, where the code is newer,
 * or where the device is not a CPU. */
static void test_split_interior(void) {
    char db[128], err[2048];
    snprintf(db, sizeof db, "/tmp/test_train_split_%d.db", (int)getpid());
    /* a 5 x 5 stencil, f32 (a small kernel guarding a narrower store is
     * launched apart too: test_narrow_splits) */
    fixture fx = fixture_load("pipeline sten;\ninput f32 in(68, 52);\n"
                              "out(x, y) = f32(in(x, y) + 2 * in(x + 1, y) + 3 * in(x + 2, y) + 4 * in(x + 3, y) + "
                              "5 * in(x + 4, y) + 6 * in(x, y + 1) + 7 * in(x + 1, y + 1) + 8 * in(x + 2, y + 1) + "
                              "9 * in(x + 3, y + 1) + 10 * in(x + 4, y + 1) + 11 * in(x, y + 2) + 12 * in(x + 1, y + 2) + "
                              "13 * in(x + 2, y + 2) + 14 * in(x + 3, y + 2) + 15 * in(x + 4, y + 2) + "
                              "16 * in(x, y + 3) + 17 * in(x + 1, y + 3) + 18 * in(x + 2, y + 3) + "
                              "19 * in(x + 3, y + 3) + 20 * in(x + 4, y + 3) + 21 * in(x, y + 4) + "
                              "22 * in(x + 1, y + 4) + 23 * in(x + 2, y + 4) + 24 * in(x + 3, y + 4) + "
                              "25 * in(x + 4, y + 4));\n"
                              "output out(64, 44);\n");
    int64_t devc, pid;
    store *st = one_pipeline_store(db, &fx, &devc, &pid);
    if (!st) return;
    int64_t devl, devg;
    cpu_and_gpu_devices(st, &devl, &devg);
    /* 44 rows in tiles of 8: a partial tile, so interior blocks; 4 points a
     * thread come to over 256 nodes, 1 to fewer */
    const char *big = "schedule sten;\nout: root [x=16x2 y=4x2];\n";
    const char *small = "schedule sten;\nout: root [x=16x1 y=3x1];\n";
    lower_program *prog[2];
    const char *scheds[2] = { big, small };
    for (int i = 0; i < 2; i++) {
        sched_state *sc = sched_parse(fx.a, fx.p, "t.sched", scheds[i], err, sizeof err);
        prog[i] = sc ? lower_schedule_for(fx.a, fx.p, fx.b, sc, true, err, sizeof err) : NULL;
        CHECK(prog[i] != NULL);
    }
    CHECK(prog[0] && cg_opencl_splits(prog[0]));
    CHECK(prog[1] && !cg_opencl_splits(prog[1]));
    CHECK(put_one(st, &fx, pid, devl, big, 10, "2026-11-28T09:00:00Z", "abc cg10", false) == 1);
    CHECK(put_one(st, &fx, pid, devl, small, 11, "2026-11-28T09:00:00Z", "abc cg10", false) == 1);
    CHECK(put_one(st, &fx, pid, devg, big, 12, "2026-11-28T09:00:00Z", "abc cg10", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_interior == 1);
    train_data_free(&d);
    /* timed by this build's code: loaded (and the GPU's older time of
     * the schedule left out, store_each_sample) */
    CHECK(put_generation(db, &fx, pid, devl, big, CG_GENERATION_SPLIT_INTERIOR));
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_interior == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A sample of code older than CG_GENERATION_POW2_DIVISION of a pipeline
 * that divides a signed integer by a constant power of two is rejected
 * (that code called the helper; this build shifts); loaded once timed by
 * newer code.  Unsigned division (the blur above) is not such a pipeline. */
static void test_pow2_division(void) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_division_%d.db", (int)getpid());
    fixture fx = fixture_load("pipeline halves;\ninput u16 in(64, 48);\n"
                              "d(x, y) = i16(in(x, y)) - 100;\n"
                              "out(x, y) = d(x, y) / 4 + d(x, y) % 8;\n"
                              "output out(64, 48);\n");
    fixture blur = fixture_load("pipeline blur;\ninput u16 in(66, 52);\n"
                                "out(x, y) = u16((u32(in(x, y)) + in(x + 1, y)) / 2);\n"
                                "output out(65, 52);\n");
    CHECK(cg_divides_by_pow2(fx.p) && !cg_divides_by_pow2(blur.p));
    fixture_unload(&blur);
    int64_t devg, pid;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    const char *text = "schedule halves;\nout: root [x=32x1 y=4x1];\nd: inline;\n";
    CHECK(put_one(st, &fx, pid, devg, text, 10, "2026-11-28T09:00:00Z", "abc cg8", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 0 && d.rejected_division == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devg, text, CG_GENERATION_POW2_DIVISION));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_division == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A CPU's OpenCL sample of code older than CG_GENERATION_CPU_MINMAX of a
 * pipeline with an f32 min or max is rejected (that code called OpenCL's
 * fmax; this build calls clang's builtin), a GPU's OpenCL sample of the
 * same code loaded; once timed by newer code the CPU's is loaded (and the
 * GPU's older time of the schedule left out, store_each_sample).  An
 * integer max is no such pipeline. */
static void test_cpu_minmax(void) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_minmax_%d.db", (int)getpid());
    fixture fx = fixture_load("pipeline relu;\ninput f32 in(64, 48);\n"
                              "out(x, y) = max(in(x, y), 0.0);\n"
                              "output out(64, 48);\n");
    fixture imax = fixture_load("pipeline imax;\ninput u16 in(64, 48);\n"
                                "out(x, y) = max(in(x, y), in(x, 47 - y));\n"
                                "output out(64, 48);\n");
    CHECK(cg_uses_f32_minmax(fx.p) && !cg_uses_f32_minmax(imax.p));
    fixture_unload(&imax);
    int64_t devc, pid;
    store *st = one_pipeline_store(db, &fx, &devc, &pid);
    if (!st) return;
    int64_t devl, devg;
    cpu_and_gpu_devices(st, &devl, &devg);
    const char *text = "schedule relu;\nout: root [x=16x1 y=4x1];\n";
    CHECK(put_one(st, &fx, pid, devl, text, 10, "2026-11-28T09:00:00Z", "abc cg11", false) == 1);
    CHECK(put_one(st, &fx, pid, devg, text, 11, "2026-11-28T09:00:00Z", "abc cg11", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_minmax == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_CPU_MINMAX));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_minmax == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A sample of code older than CG_GENERATION_SCANS_AROUND whose scan runs
 * over a tile of several points a thread is rejected (that code ran the
 * scan inside the tile; this build runs it around the tile); one whose
 * scan has one point a thread ran the same code and is loaded, and so is
 * the first once timed by newer code. */
static void test_scan_order(void) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_scan_%d.db", (int)getpid());
    /* 199 steps: no tile here unrolls the scan (generation 24) */
    fixture fx = fixture_load("pipeline scan;\ninput f32 in(64, 200);\nrdom r(1, 199);\n"
                              "f(x, y) = in(x, y);\nf(x, r) = f(x, r - 1) * 0.5 + f(x, r);\n"
                              "output f(64, 200);\n");
    int64_t devg, pid;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    const char *tiled = "schedule scan;\nf: root [x=16x1 y=4x1] [x=4x4];\n";
    const char *one = "schedule scan;\nf: root [x=16x1 y=4x1] [x=16x1];\n";
    CHECK(put_one(st, &fx, pid, devg, tiled, 10, "2026-11-28T09:00:00Z", "abc cg12", false) == 1);
    CHECK(put_one(st, &fx, pid, devg, one, 11, "2026-11-28T09:00:00Z", "abc cg12", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_scan == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devg, tiled, CG_GENERATION_SCANS_AROUND));
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_scan == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A sample of code older than CG_GENERATION_SQUARES of a pipeline that
 * squares with pow(a, 2.0) is rejected (that code called pow; this build
 * multiplies), loaded once timed by newer code; a cube is no square. */
static void test_square(void) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_square_%d.db", (int)getpid());
    fixture fx = fixture_load("pipeline sq;\ninput f32 in(64, 48);\n"
                              "out(x, y) = pow(in(x, y), 2.0);\n"
                              "output out(64, 48);\n");
    fixture cube = fixture_load("pipeline cube;\ninput f32 in(64, 48);\n"
                                "out(x, y) = pow(in(x, y), 3.0);\n"
                                "output out(64, 48);\n");
    CHECK(cg_squares(fx.p) && !cg_squares(cube.p));
    fixture_unload(&cube);
    int64_t devg, pid;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    const char *text = "schedule sq;\nout: root [x=32x1 y=4x1];\n";
    CHECK(put_one(st, &fx, pid, devg, text, 10, "2026-11-29T09:00:00Z", "abc cg13", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 0 && d.rejected_square == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devg, text, CG_GENERATION_SQUARES));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_square == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A sample of code older than CG_GENERATION_MERGED_THREADS whose root
 * stage has threads in four loops is rejected (that code read them from a
 * flat index); three threaded loops are kept, and so is the four-loop
 * schedule timed by newer code. */
static void test_merged_threads(void) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_merged_%d.db", (int)getpid());
    fixture fx = fixture_load("pipeline wide;\ninput f32 in(64, 48);\n"
                              "out(x, y, a, b) = in(x, y) * f32(a + b);\n"
                              "output out(64, 48, 4, 4);\n");
    int64_t devg, pid;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    const char *four = "schedule wide;\nout: root [x=16x1 y=2x1 a=2x1 b=2x1];\n";
    const char *three = "schedule wide;\nout: root [x=16x1 y=2x1 a=4x1 b=1x1];\n";
    CHECK(put_one(st, &fx, pid, devg, four, 10, "2026-11-29T09:00:00Z", "abc cg14", false) == 1);
    CHECK(put_one(st, &fx, pid, devg, three, 11, "2026-11-29T09:00:00Z", "abc cg14", false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_merged == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devg, four, CG_GENERATION_MERGED_THREADS));
    CHECK(load_all(db, &d) && d.nsamples == 2 && d.rejected_merged == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A CPU's OpenCL sample of code older than CG_GENERATION_ROWS_APART whose
 * code takes a clamped row or a row y / 2 apart (cg_opencl_rows_apart)
 * timed other code than this build makes, and `collect --remeasure` times
 * it again (cg_code_changed_since).  Where every such access is in the
 * edge blocks' copy of a kernel (a repeat_edge blur) it is kept, in its
 * own group, and counted as kept_rows_apart; where one is elsewhere (a
 * row y / 2, read in every block) it is rejected (rejected_rows_apart).
 * A GPU's sample timed the same code, and so did the CPU's code of a row
 * read through a table (never taken apart); the CPU's timed by newer
 * code is neither. */
static bool rows_change(const fixture *fx, const char *text, int generation, bool cpu, bool opencl,
                        cg_code_change *c) {
    char err[2048];
    sched_state *sc = sched_parse(fx->a, fx->p, "t.sched", text, err, sizeof err);
    nest_ctx *nx = nest_ctx_new(fx->p, fx->b);
    nest_ctx_set_staging(nx, !cpu);     /* as the loader models a CPU's sample */
    nest *m = sc ? nest_build(nx, sc, err, sizeof err) : NULL;
    if (m) *c = cg_code_changed_since(generation, fx->p, fx->b, sc, m, cpu, opencl);
    nest_free(m);
    nest_ctx_free(nx);
    return m != NULL;
}

/* A store at db of fx's pipeline with text timed once on a CPU's OpenCL
 * device row (*devl) and once on a GPU's, both by build `version`. */
static bool cpu_and_gpu_samples(const char *db, fixture *fx, const char *text, const char *version,
                                int64_t *pid, int64_t *devl) {
    int64_t devc, devg;
    store *st = one_pipeline_store(db, fx, &devc, pid);
    if (!st) return false;
    cpu_and_gpu_devices(st, devl, &devg);
    bool ok = put_one(st, fx, *pid, *devl, text, 10, "2026-11-30T09:00:00Z", version, false) == 1 &&
              put_one(st, fx, *pid, devg, text, 11, "2026-11-30T09:00:00Z", version, false) == 1;
    store_close(st);
    return ok;
}

typedef enum { ROWS_SAME, ROWS_EDGES, ROWS_BODY } rows_kind;

static void rows_apart_case(const char *pipe, const char *text, rows_kind kind) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_rows_%d.db", (int)getpid());
    fixture fx = fixture_load(pipe);
    const int old = CG_GENERATION_ROWS_APART - 1;
    cg_code_change c[4] = { CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME };
    CHECK(rows_change(&fx, text, old, true, true, &c[0]) && rows_change(&fx, text, old + 1, true, true, &c[1]) &&
          rows_change(&fx, text, old, false, true, &c[2]) && rows_change(&fx, text, old, true, false, &c[3]));
    CHECK(c[0] == (kind == ROWS_EDGES ? CG_CODE_ROWS_APART_EDGES : kind == ROWS_BODY ? CG_CODE_ROWS_APART
                                                                                   : CG_CODE_SAME));
    CHECK(c[1] == CG_CODE_SAME && c[2] == CG_CODE_SAME && c[3] == CG_CODE_SAME);
    int64_t pid, devl;
    CHECK(cpu_and_gpu_samples(db, &fx, text, "abc cg15", &pid, &devl));
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == (kind == ROWS_BODY ? 1 : 2) && d.kept_rows_apart == (kind == ROWS_EDGES) &&
          d.rejected_rows_apart == (kind == ROWS_BODY));
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_ROWS_APART));
    /* the GPU's older time of the schedule left out (store_each_sample) */
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.kept_rows_apart == 0 && d.rejected_rows_apart == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

static void test_rows_apart(void) {
    rows_apart_case("pipeline eblur;\ninput u16 in(64, 48);\nclamped = repeat_edge(in);\n"
                    "bx(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x, y) + clamped(x + 1, y)) / 3);\n"
                    "out(x, y) = u16((u32(bx(x, y - 1)) + bx(x, y) + bx(x, y + 1)) / 3);\n"
                    "output out(64, 48);\n",
                    "schedule eblur;\nout: root [x=16x1 y=1x4];\nbx: thread of out;\nclamped: inline;\n", ROWS_EDGES);
    rows_apart_case("pipeline up;\ninput f32 in(64, 24);\nout(x, y) = in(x, y / 2) * 2.0;\n"
                    "output out(64, 48);\n",
                    "schedule up;\nout: root [x=16x1 y=1x4];\n", ROWS_BODY);
    rows_apart_case("pipeline lut;\ninput f32 in(64, 48);\ninput u16 rows(48);\n"
                    "out(x, y) = in(x, i32(rows(y)) % 48) * 2.0;\noutput out(64, 48);\n",
                    "schedule lut;\nout: root [x=16x1 y=1x4];\n", ROWS_SAME);
}

/* A CPU's OpenCL sample of code older than CG_GENERATION_POINTER_SELECTS
 * whose code selects between loads under a condition the same in every
 * lane (cg_opencl_pointer_selects: a Bayer image's planes by c) timed
 * code that PoCL left scalar: rejected (rejected_pointer_selects).  A
 * GPU's sample, and the CPU's of newer code, are kept; a select by x's
 * parity was never changed. */
static void pointer_selects_case(const char *pipe, const char *text, bool changed) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_psel_%d.db", (int)getpid());
    fixture fx = fixture_load(pipe);
    const int old = CG_GENERATION_POINTER_SELECTS - 1;
    cg_code_change c[3] = { CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME };
    CHECK(rows_change(&fx, text, old, true, true, &c[0]) && rows_change(&fx, text, old + 1, true, true, &c[1]) &&
          rows_change(&fx, text, old, false, true, &c[2]));
    CHECK(c[0] == (changed ? CG_CODE_POINTER_SELECTS : CG_CODE_SAME) && c[1] == CG_CODE_SAME && c[2] == CG_CODE_SAME);
    int64_t pid, devl;
    CHECK(cpu_and_gpu_samples(db, &fx, text, "abc cg16", &pid, &devl));
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == (changed ? 1 : 2) && d.rejected_pointer_selects == changed);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_POINTER_SELECTS));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_pointer_selects == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

static void test_pointer_selects(void) {
    pointer_selects_case("pipeline planes;\ninput u16 in(64, 48);\n"
                         "planes(x, y, c) = select(c == 0, in(2 * x, 2 * y), in(2 * x + 1, 2 * y + 1));\n"
                         "output planes(32, 24, 2);\n",
                         "schedule planes;\nplanes: root [x=16x1 y=1x1 c=1x1];\n", true);
    pointer_selects_case("pipeline xpar;\ninput f32 in(66, 48);\n"
                         "out(x, y) = select(x % 2 == 0, in(x, y), in(x + 1, y));\noutput out(64, 48);\n",
                         "schedule xpar;\nout: root [x=16x1 y=1x2];\n", false);
}

/* An OpenCL sample (a CPU's or a GPU's) of code older than
 * CG_GENERATION_PRIVATE_PICKS that read a private array at the block's
 * channel (cg_opencl_private_picks: each channel over the last, the
 * Func in the threads) timed the array in memory: rejected
 * (rejected_private_picks), kept with --keep-changed private-picks; a
 * CUDA sample, the samples of newer code, and a schedule whose channels
 * are in the thread are kept. */
static void private_picks_case(const char *text, bool changed) {
    static const char pipe[] = "pipeline chan;\ninput f32 in(64, 48, 4);\nf(x, y, c) = in(x, y, c) * 2.0 + 1.0;\n"
                               "out(x, y, c) = f(x, y, c) / f(x, y, 3);\noutput out(64, 48, 3);\n";
    char db[128], err[1024];
    snprintf(db, sizeof db, "/tmp/test_train_ppick_%d.db", (int)getpid());
    fixture fx = fixture_load(pipe);
    const int old = CG_GENERATION_PRIVATE_PICKS - 1;
    cg_code_change c[4] = { CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME };
    CHECK(rows_change(&fx, text, old, true, true, &c[0]) && rows_change(&fx, text, old + 1, true, true, &c[1]) &&
          rows_change(&fx, text, old, false, true, &c[2]) && rows_change(&fx, text, old, false, false, &c[3]));
    cg_code_change want = changed ? CG_CODE_PRIVATE_PICKS : CG_CODE_SAME;
    CHECK(c[0] == want && c[1] == CG_CODE_SAME && c[2] == want && c[3] == CG_CODE_SAME);
    int64_t pid, devl;
    CHECK(cpu_and_gpu_samples(db, &fx, text, "abc cg18", &pid, &devl));
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == (changed ? 0 : 2) && d.rejected_private_picks == (changed ? 2 : 0));
    train_data_free(&d);
    train_data_init(&d);
    train_load_opts o = { 0 };
    CHECK(train_keep_changed_parse("private-picks", &o.keep_changed, err, sizeof err) == 0);
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0 && d.nsamples == 2 && d.rejected_private_picks == 0 &&
          d.kept_changed == (changed ? 2 : 0));
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_PRIVATE_PICKS));
    /* the GPU's older time of the schedule left out (store_each_sample) */
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_private_picks == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* vector_gathers_per_point of the out row of the one sample in d (the
 * network's input, log1p of the feature), or NAN. */
static double loaded_gathers(const train_data *d) {
    if (d->nsamples != 1) return NAN;
    int k = FEAT_AT(FEAT_vector_gathers_per_point) - NN_ALGO_IN;
    double most = 0;
    for (int r = d->samples[0].row0; r < d->samples[0].row0 + d->samples[0].nrows; r++)
        most = fmax(most, d->sched[(size_t)r * NN_SCHED_IN + k]);
    return most;
}

/* Generation 20 gives a CPU's points cyclically (nest_ctx_set_cyclic):
 * a CPU's sample of an older generation timed consecutive points, so the
 * loader models it so, its gathers counted, and keeps it; the same
 * schedule timed by generation 20 has none.  Nothing is rejected. */
static void test_cyclic_generations(void) {
    static const char pipe[] = "pipeline st;\ninput u16 in(70, 40);\nclamped = repeat_edge(in);\n"
                               "out(x, y) = u16(clamped(x - 1, y) + 2 * clamped(x, y) + clamped(x + 1, y));\n"
                               "output out(70, 40);\n";
    static const char text[] = "schedule st;\nout: root [x=16x2 y=4x1];\nclamped: inline;\n";
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_cyclic_%d.db", (int)getpid());
    fixture fx = fixture_load(pipe);
    int64_t pid, devl, devg;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    cpu_and_gpu_devices(st, &devl, &devg);
    char version[64];
    snprintf(version, sizeof version, "abc cg%d", CG_GENERATION_CYCLIC_POINTS - 1);
    CHECK(put_one(st, &fx, pid, devl, text, 10, "2026-12-02T09:00:00Z", version, false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1);
    double old = loaded_gathers(&d);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_CYCLIC_POINTS));
    CHECK(load_all(db, &d) && d.nsamples == 1);
    double now = loaded_gathers(&d);
    train_data_free(&d);
    check_report(old > 0 && now == 0, "cyclic generations: the older sample's gathers %g (log1p), the newer's %g",
                 old, now);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* Code older than CG_GENERATION_BRANCHLESS_CONVERSIONS converting f32 to
 * an integer type called a helper with branches: CG_CODE_CONVERSIONS on
 * every device and back end, kept and counted (kept_conversions); code
 * with no such conversion, and newer code, are the same. */
static void test_conversion_generations(void) {
    static const char pipe[] = "pipeline conv;\ninput u8 in(40, 20);\n"
                               "out(x, y) = u8(clamp(in(x, y) * 0.75, 0, 255));\noutput out(40, 20);\n";
    static const char plain[] = "pipeline plain;\ninput u8 in(40, 20);\n"
                                "out(x, y) = in(x, y) / 2;\noutput out(40, 20);\n";
    static const char text[] = "schedule conv;\nout: root [x=8x1 y=1x2];\n";
    static const char ptext[] = "schedule plain;\nout: root [x=8x1 y=1x2];\n";
    const int old = CG_GENERATION_BRANCHLESS_CONVERSIONS - 1;
    fixture fx = fixture_load(pipe), fp = fixture_load(plain);
    cg_code_change c[5] = { CG_CODE_SAME, CG_CODE_SAME, CG_CODE_CONVERSIONS, CG_CODE_SAME, CG_CODE_CONVERSIONS };
    CHECK(rows_change(&fx, text, old, true, true, &c[0]) && rows_change(&fx, text, old, false, false, &c[1]) &&
          rows_change(&fx, text, old + 1, true, true, &c[2]) && rows_change(&fp, ptext, old, true, true, &c[3]));
    check_report(c[0] == CG_CODE_CONVERSIONS && c[1] == CG_CODE_CONVERSIONS && c[2] == CG_CODE_SAME &&
                 c[3] == CG_CODE_SAME, "conversions: generation %d %d (CPU OpenCL) %d (GPU C), generation %d %d, "
                 "no conversion %d", old, c[0], c[1], old + 1, c[2], c[3]);
    char db[128], version[64];
    snprintf(db, sizeof db, "/tmp/test_train_conv_%d.db", (int)getpid());
    snprintf(version, sizeof version, "abc cg%d", old);
    int64_t pid, devl, devg;
    store *st = one_pipeline_store(db, &fx, &devg, &pid);
    if (!st) return;
    cpu_and_gpu_devices(st, &devl, &devg);
    CHECK(put_one(st, &fx, pid, devl, text, 10, "2026-12-03T09:00:00Z", version, false) == 1);
    store_close(st);
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.kept_conversions == 1);
    train_data_free(&d);
    CHECK(put_generation(db, &fx, pid, devl, text, old + 1));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.kept_conversions == 0);
    train_data_free(&d);
    fixture_remove_db(db);
    fixture_unload(&fx);
    fixture_unload(&fp);
}

static void test_private_picks(void) {
    private_picks_case("schedule chan;\nout: root [x=16x1 y=1x2 c=1x1];\nf: thread of out;\n", true);
    private_picks_case("schedule chan;\nout: root [x=16x1 y=1x2 c=1x3];\nf: thread of out;\n", false);
}

/* A CPU's OpenCL sample of generations 11 to 17 with a small kernel that
 * guards a u16 store (a partial tile) ran both copies in one kernel,
 * where this build launches the interior apart (cg_opencl_splits_narrow):
 * rejected (rejected_narrow_splits); older code counts as
 * CG_CODE_INTERIOR; a GPU's sample and the CPU's of newer code are kept. */
static void test_narrow_splits(void) {
    static const char pipe[] = "pipeline nblur;\ninput u16 in(100, 40);\nclamped = repeat_edge(in);\n"
                               "out(x, y) = u16((u32(clamped(x - 1, y)) + clamped(x + 1, y)) / 2);\n"
                               "output out(100, 40);\n";
    static const char text[] = "schedule nblur;\nout: root [x=8x1 y=1x2];\nclamped: inline;\n";
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_nsplit_%d.db", (int)getpid());
    fixture fx = fixture_load(pipe);
    const int old = CG_GENERATION_NARROW_SPLITS - 1;
    cg_code_change c[4] = { CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME };
    CHECK(rows_change(&fx, text, old, true, true, &c[0]) && rows_change(&fx, text, old + 1, true, true, &c[1]) &&
          rows_change(&fx, text, old, false, true, &c[2]) &&
          rows_change(&fx, text, CG_GENERATION_SPLIT_INTERIOR - 1, true, true, &c[3]));
    CHECK(c[0] == CG_CODE_NARROW_SPLITS && c[1] == CG_CODE_SAME && c[2] == CG_CODE_SAME && c[3] == CG_CODE_INTERIOR);
    int64_t pid, devl;
    CHECK(cpu_and_gpu_samples(db, &fx, text, "abc cg17", &pid, &devl));
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_narrow_splits == 1);
    train_data_free(&d);
    /* --keep-changed: kept with its older time when named, not otherwise */
    char err[1024];
    unsigned keep = 0, other = 0, all = 0;
    CHECK(train_keep_changed_parse("pointer-selects,narrow-store", &keep, err, sizeof err) == 0 &&
          train_keep_changed_parse("rows-apart", &other, err, sizeof err) == 0 &&
          train_keep_changed_parse("all", &all, err, sizeof err) == 0);
    CHECK((keep >> CG_CODE_NARROW_SPLITS & 1u) && (all >> CG_CODE_NARROW_SPLITS & 1u) &&
          !(other >> CG_CODE_NARROW_SPLITS & 1u) && !(all & 1u));
    CHECK(train_keep_changed_parse("narrow-store,rows", &keep, err, sizeof err) == -1 && strstr(err, "'rows'") &&
          strstr(err, "rows-apart"));
    CHECK(train_keep_changed_parse("", &other, err, sizeof err) == -1);
    unsigned masks[2] = { keep, other };
    for (int k = 0; k < 2; k++) {
        train_data_init(&d);
        train_load_opts o = { .keep_changed = masks[k] };
        CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0);
        CHECK(k == 0 ? d.nsamples == 2 && d.kept_changed == 1 && d.rejected_narrow_splits == 0
                     : d.nsamples == 1 && d.kept_changed == 0 && d.rejected_narrow_splits == 1);
        train_data_free(&d);
    }
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_NARROW_SPLITS));
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_narrow_splits == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* A sample older than CG_GENERATION_PARTIAL_GUARDS whose kernel guards
 * `x < 100 && c < 3` (three channels in blocks of two, a partial x tile)
 * ran with no interior blocks, where this build finds them
 * (cg_decides_guards_apart): CG_CODE_PARTIAL_GUARDS through OpenCL (CPU
 * and GPU) and CUDA, rejected (rejected_partial_guards); C's code has no
 * interior and is kept, as are newer code and a schedule whose guard is
 * x's alone. */
static void test_partial_guards(void) {
    static const char pipe[] = "pipeline chans;\ninput u16 in(100, 20, 3);\n"
                               "out(x, y, c) = u8(in(x, y, c) >> 8);\noutput out(100, 20, 3);\n";
    static const char text[] = "schedule chans;\nout: root [x=16x1 y=1x1 c=2x1];\n";
    static const char xtext[] = "schedule chans;\nout: root [x=16x1 y=1x1 c=1x1];\n";
    fixture fx = fixture_load(pipe);
    const int old = CG_GENERATION_PARTIAL_GUARDS - 1;
    cg_code_change c[6];
    for (int i = 0; i < 6; i++) c[i] = CG_CODE_SAME;
    CHECK(rows_change(&fx, text, old, true, true, &c[0]) && rows_change(&fx, text, old, false, true, &c[1]) &&
          rows_change(&fx, text, old, false, false, &c[2]) && rows_change(&fx, text, old, true, false, &c[3]) &&
          rows_change(&fx, text, old + 1, true, true, &c[4]) && rows_change(&fx, xtext, old, true, true, &c[5]));
    check_report(c[0] == CG_CODE_PARTIAL_GUARDS && c[1] == CG_CODE_PARTIAL_GUARDS && c[2] == CG_CODE_PARTIAL_GUARDS &&
                 c[3] == CG_CODE_SAME && c[4] == CG_CODE_SAME && c[5] == CG_CODE_SAME,
                 "partial guards: generation %d: CPU OpenCL %d, GPU OpenCL %d, CUDA %d, C %d; generation %d %d; "
                 "x's guard alone %d", old, c[0], c[1], c[2], c[3], old + 1, c[4], c[5]);
    char db[128], version[64];
    snprintf(db, sizeof db, "/tmp/test_train_guards_%d.db", (int)getpid());
    snprintf(version, sizeof version, "abc cg%d", old);
    int64_t pid, devl;
    CHECK(cpu_and_gpu_samples(db, &fx, text, version, &pid, &devl));
    train_data d;
    CHECK(load_all(db, &d) && d.nsamples == 0 && d.rejected_partial_guards == 2);
    train_data_free(&d);
    char err[1024];
    unsigned keep = 0;
    CHECK(train_keep_changed_parse("partial-guards", &keep, err, sizeof err) == 0 &&
          (keep >> CG_CODE_PARTIAL_GUARDS & 1u));
    CHECK(put_generation(db, &fx, pid, devl, text, CG_GENERATION_PARTIAL_GUARDS));
    /* the CPU's time of this code; the GPU's older one is left out beside it */
    CHECK(load_all(db, &d) && d.nsamples == 1 && d.rejected_partial_guards == 0);
    train_data_free(&d);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* The course of a generation's rejection, on fx's schedule text:
 * cg_code_changed_since at generation gen - 1 for a CPU's OpenCL, a GPU's
 * OpenCL and CUDA (want, in that order; the same code at gen); then, of a
 * CPU's and a GPU's OpenCL samples of gen - 1 in db, `rejected` left out
 * (counted in the train_data field at offset `field`), both kept with
 * --keep-changed `name`, and the CPU's loaded once timed again by gen. */
static void rejection_case(fixture *fx, const char *text, const char *db, int gen, const cg_code_change want[3],
                           const char *name, size_t field, int64_t rejected) {
    char err[1024];
    const int old = gen - 1;
    cg_code_change c[4] = { CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME };
    CHECK(rows_change(fx, text, old, true, true, &c[0]) && rows_change(fx, text, old + 1, true, true, &c[1]) &&
          rows_change(fx, text, old, false, true, &c[2]) && rows_change(fx, text, old, false, false, &c[3]));
    check_report(c[0] == want[0] && c[1] == CG_CODE_SAME && c[2] == want[1] && c[3] == want[2],
                 "%s: generation %d: CPU OpenCL %d, GPU OpenCL %d, CUDA %d; generation %d: %d (want %d, %d, %d)",
                 name, old, c[0], c[2], c[3], old + 1, c[1], want[0], want[1], want[2]);
    char version[64];
    snprintf(version, sizeof version, "abc cg%d", old);
    int64_t pid, devl;
    CHECK(cpu_and_gpu_samples(db, fx, text, version, &pid, &devl));
    train_data d;
#define REJECTED(d) (*(const int64_t *)((const char *)&(d) + field))
    CHECK(load_all(db, &d) && d.nsamples == 2 - rejected && REJECTED(d) == rejected);
    train_data_free(&d);
    train_data_init(&d);
    train_load_opts o = { 0 };
    CHECK(train_keep_changed_parse(name, &o.keep_changed, err, sizeof err) == 0);
    CHECK(train_load(&d, db, NULL, &o, err, sizeof err) == 0 && d.nsamples == 2 && REJECTED(d) == 0 &&
          d.kept_changed == rejected);
    train_data_free(&d);
    CHECK(put_generation(db, fx, pid, devl, text, gen));
    CHECK(load_all(db, &d) && d.nsamples == 1 && REJECTED(d) == 0);
#undef REJECTED
    train_data_free(&d);
}

/* rejection_case for a change of OpenCL code on any device (a CPU's and a
 * GPU's samples rejected where changed, a CUDA sample kept), on pipeline
 * pipe, with a database of its own named after tag. */
static void opencl_rejection_case(const char *pipe, const char *tag, const char *text, bool changed, int gen,
                                  cg_code_change change, const char *name, size_t field) {
    char db[128];
    snprintf(db, sizeof db, "/tmp/test_train_%s_%d.db", tag, (int)getpid());
    fixture fx = fixture_load(pipe);
    cg_code_change w = changed ? change : CG_CODE_SAME;
    const cg_code_change want[3] = { w, w, CG_CODE_SAME };
    rejection_case(&fx, text, db, gen, want, name, field, changed ? 2 : 0);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

/* An OpenCL sample (a CPU's or a GPU's) of code older than
 * CG_GENERATION_GUARDED_MINS that read a private array in a partial
 * tile's edge blocks at an index printed whole, for the producer's
 * clamped min (cg_opencl_forms_of's guarded_mins), timed the array in
 * memory: rejected (rejected_guarded_mins), kept with --keep-changed
 * guarded-mins; a CUDA sample, newer code, and a schedule whose rows in
 * the thread keep the index whole are kept. */
static void guarded_mins_case(const char *text, bool changed) {
    static const char pipe[] = "pipeline gm;\ninput f32 in(100, 20);\nf(x, y) = in(x, y) * 2.0;\n"
                               "out(x, y) = f(x, y) + f(x + 1, y);\noutput out(99, 20);\n";
    opencl_rejection_case(pipe, "gmin", text, changed, CG_GENERATION_GUARDED_MINS, CG_CODE_GUARDED_MINS,
                          "guarded-mins", offsetof(train_data, rejected_guarded_mins));
}

static void test_guarded_mins(void) {
    guarded_mins_case("schedule gm;\nout: root [x=16x1 y=4x1];\nf: thread of out;\n", true);
    /* two rows a work-item, the last block's partial: y's min stays whole */
    guarded_mins_case("schedule gm;\nout: root [x=16x1 y=4x2];\nf: thread of out;\n", false);
}

/* A CPU's samples of code older than CG_GENERATION_LONGER_UNROLLS with
 * loops rolled that generation 24 unrolls: a reduction around an unrolled
 * tile (8 channels a work-item over 4 x 3 x 3 taps), and such a reduction
 * of more than 4,096 nodes that the rule for each loop unrolled before
 * but the node cap left rolled (2 channels over 7 x 7 x 3 taps, 294
 * points, each loop alone under 16 points with the tile): rejected
 * (rejected_longer_unrolls), kept with --keep-changed longer-unrolls; a
 * GPU's (OpenCL or CUDA), a tile of 16 points, one point a thread over 15
 * x 15 taps (a loop of more than 4,096 nodes, but no reduction around a
 * tile: still rolled), and newer code, are kept. */
static void longer_unrolls_case(int rx, int ry, const char *tile, bool changed) {
    char pipe[512], text[256], db[128];
    snprintf(pipe, sizeof pipe,
             "pipeline lu;\ninput f32 in(80, 64, 4);\ninput f32 w(8, %d, %d, 3);\nrdom r(0, %d, 0, %d, 0, 3);\n"
             "l(x, y, c) = 0.5;\nl(x, y, c) += w(c, r.x, r.y, r.z) * in(x + r.y, y + r.z, r.x %% 4);\n"
             "output l(64, 48, 8);\n", rx, ry, rx, ry);
    snprintf(text, sizeof text, "schedule lu;\nl: root [x=16x1 y=4x1 c=1x1] [%s];\n", tile);
    snprintf(db, sizeof db, "/tmp/test_train_unrolls_%d.db", (int)getpid());
    fixture fx = fixture_load(pipe);
    const cg_code_change want[3] = { changed ? CG_CODE_LONGER_UNROLLS : CG_CODE_SAME, CG_CODE_SAME, CG_CODE_SAME };
    rejection_case(&fx, text, db, CG_GENERATION_LONGER_UNROLLS, want, "longer-unrolls",
                   offsetof(train_data, rejected_longer_unrolls), changed ? 1 : 0);
    fixture_unload(&fx);
    fixture_remove_db(db);
}

static void test_longer_unrolls(void) {
    longer_unrolls_case(4, 3, "x=16x1 y=4x1 c=1x8", true);
    longer_unrolls_case(7, 7, "x=16x1 y=4x1 c=1x2", true);
    longer_unrolls_case(15, 15, "x=16x1 y=4x1 c=8x1", false);
    longer_unrolls_case(4, 3, "x=16x1 y=4x2 c=1x8", false);
}

/* An OpenCL sample (a CPU's or a GPU's) of code older than
 * CG_GENERATION_DATA_PICKS that read a private array at a level computed
 * from data (cg_opencl_forms_of's data_picks), timed the array in memory:
 * rejected (rejected_data_picks), kept with --keep-changed data-picks; a
 * CUDA sample, newer code, and a schedule with the levels at root (no
 * private array) are kept. */
static void data_picks_case(const char *text, bool changed) {
    static const char pipe[] =
        "pipeline dp;\ninput f32 in(64, 48);\nlv(x, y, k) = in(x, y) * f32(k + 1) - 0.5;\n"
        "out(x, y) = lv(x, y, clamp(i32(in(x, y) * 4.0), 0, 3)) + lv(x, y, clamp(i32(in(x, y) * 4.0), 0, 3) + 1);\n"
        "output out(64, 48);\n";
    opencl_rejection_case(pipe, "dpick", text, changed, CG_GENERATION_DATA_PICKS, CG_CODE_DATA_PICKS, "data-picks",
                          offsetof(train_data, rejected_data_picks));
}

static void test_data_picks(void) {
    data_picks_case("schedule dp;\nout: root [x=16x1 y=1x2];\nlv: thread of out;\n", true);
    data_picks_case("schedule dp;\nout: root [x=16x1 y=1x2];\nlv: root [x=16x1 y=1x1 k=1x1];\n", false);
}

int main(void) {
    A100 = fixture_target("a100");
    RUN(test_from_store);
    RUN(test_neighbours);
    RUN(test_cpu_staged);
    RUN(test_pow2_division);
    RUN(test_thread_unrolled);
    RUN(test_split_interior);
    RUN(test_cpu_minmax);
    RUN(test_scan_order);
    RUN(test_square);
    RUN(test_merged_threads);
    RUN(test_rows_apart);
    RUN(test_pointer_selects);
    RUN(test_narrow_splits);
    RUN(test_partial_guards);
    RUN(test_private_picks);
    RUN(test_guarded_mins);
    RUN(test_longer_unrolls);
    RUN(test_data_picks);
    RUN(test_cyclic_generations);
    RUN(test_conversion_generations);
    RUN(test_cold_reference);
    RUN(test_reduction_order);
    RUN(test_generation_groups);
    CHECK_EXIT();
}
