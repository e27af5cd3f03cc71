/*
 * store.h - the sample store: one SQLite database of measured schedules,
 * the data the learned cost model is trained on (issue 9, DESIGN.md
 * "Autotuning data").
 *
 * Tables (schema version STORE_SCHEMA_VERSION, in the meta table):
 *   pipelines     the canonical .pipe text (sizes resolved: the IR text
 *                 form, which parses back to the same IR), its hash, its
 *                 name and where it came from ("app:harris",
 *                 "random:seed=12")
 *   schedules     per pipeline: the schedule text and its structural
 *                 hashes at depths 0..3
 *   devices       a key built from the back end, the driver and the
 *                 hardware ("opencl:pocl-3.1:AMD EPYC 7B13"), the --math
 *                 mode, a description, and the target the schedules were
 *                 made and featurized for, in target file form
 *   measurements  pipeline, schedule, device, each timed sample's ms, the
 *                 summary (the minimum over samples of the mean of runs),
 *                 the reference time (the pipeline's reference schedule
 *                 timed in turn with it, in the same process: the ratio
 *                 of the two is free of the machine's load, which drifts
 *                 over minutes on a shared machine; NULL in samples
 *                 measured without one), kernels, each kernel's time alone
 *                 (kernel_ms: "FUNC.STAGE=MS,..."; NULL in samples
 *                 measured without them), the check's outcome, the date,
 *                 the version
 *   failures      schedules that did not compile, ran past their limit or
 *                 did not match the reference: recorded so that they are
 *                 not tried again, never used as timings
 * Features are not stored: they are recomputed from the pipeline and
 * schedule text, so the data outlives changes to the featurizer.
 *
 * Durability: WAL mode, and one transaction per sample (its schedule and
 * its measurement or failure together), so a process killed at any instant
 * loses at most the sample it was measuring.  A schedule has at most one
 * result per device: store_has_result says whether it was measured (or
 * failed) already, which is how an interrupted collection resumes.
 *
 * Errors: every function that can fail returns -1 (or NULL) with a
 * message naming the database file and what went wrong; nothing already
 * stored is changed by a call that fails.  Explicit open/close; one handle
 * per thread.
 */
#ifndef SC_STORE_H
#define SC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Version 2 added measurements.ref_ms, version 3 measurements.kernel_ms;
 * an older database is upgraded when it is opened for writing (its rows
 * are kept, without reference or kernel times). */
#define STORE_SCHEMA_VERSION 3

/* Each kernel's time alone in a measurement, as the store keeps them: the
 * kernel named by the Func and stage it computes at its root (a lowered
 * kernel's root and stage; two kernels of one root and stage are summed),
 * "FUNC.STAGE=MS" joined by commas, in launch order. */
#define STORE_MAX_KERNEL_TIMES 256
#define STORE_FUNC_NAME_MAX 96
typedef struct {
    char func[STORE_FUNC_NAME_MAX];
    int stage;
    double ms;
} store_kernel_time;
/* Parses that text into out[0..max): the count (0 for "" or NULL), or -1
 * with err naming the entry and what was expected (a Func name, a stage
 * number, a time of at least 0 ms; at most max entries; no Func and stage
 * twice). */
int store_kernel_ms_parse(const char *text, store_kernel_time *out, int max, char *err, size_t errlen);
/* Writes n kernel times as that text into buf (cap bytes); false when
 * they do not fit or a name is not a Func name. */
bool store_kernel_ms_format(const store_kernel_time *k, int n, char *buf, size_t cap);

typedef struct store store;

typedef enum {
    STORE_READ,                   /* an existing database, read only */
    STORE_WRITE,                  /* created (with its schema) if missing */
} store_mode;

/* Opens path; NULL with err (a missing file in STORE_READ mode, a file
 * that is not a stagecraft database, a schema of another version, a
 * database locked past the busy timeout). */
store *store_open(const char *path, store_mode mode, char *err, size_t errlen);
void store_close(store *st);
const char *store_path(const store *st);
/* How long a call waits for another process's write before it fails
 * with "locked" (default STORE_BUSY_MS). */
#define STORE_BUSY_MS 10000
void store_set_busy_ms(store *st, int ms);

/* A device row; the id of the existing row with the same key and math,
 * else a new one.  -1 with err. */
typedef struct {
    const char *key;              /* "opencl:pocl-3.1:<cpu model>" */
    const char *math;             /* "fast" | "exact" */
    const char *description;      /* the runtime's description */
    const char *target_text;      /* target_print form */
} store_device;
int64_t store_put_device(store *st, const store_device *d, char *err, size_t errlen);
/* The id of the device row of key and math, 0 if there is none, -1 with
 * err. */
int64_t store_find_device(store *st, const char *key, const char *math, char *err, size_t errlen);

/* A pipeline row (by the hash of text); the existing row's id when the
 * text is already there.  -1 with err. */
int64_t store_put_pipeline(store *st, const char *name, const char *text, const char *source,
                           char *err, size_t errlen);

/* The outcome of one schedule on one device. */
typedef enum { STORE_OK, STORE_FAILED, STORE_WRONG, STORE_TIMEOUT } store_outcome;
const char *store_outcome_name(store_outcome o);

typedef struct {
    int64_t pipeline, device;     /* ids from the put functions */
    const char *schedule_text;
    uint64_t hash[4];             /* sched_hash at depths 0..3 */
    store_outcome outcome;
    /* STORE_OK: */
    double ms;                    /* the summary */
    double ref_ms;                /* the reference schedule's time measured with it (0: none) */
    int nsamples;
    const double *samples_ms;     /* each sample's mean run time */
    int runs;                     /* runs per sample */
    int kernels;
    const char *kernel_ms;        /* each kernel's time alone (store_kernel_ms_parse), or NULL */
    const char *check;            /* how the result was checked ("0 of N points differ ...") */
    /* otherwise: */
    const char *message;
    const char *sizes;            /* "out(1536x2560x3)" */
    const char *date;             /* UTC, ISO 8601; NULL: now */
    const char *version;          /* stagecraft's version; NULL: this build's (store_version) */
    /* A successful result with a reference time replaces the schedule's
     * measurement on the device when that one is stale (store_found_stale:
     * no reference time, or older code; collect --remeasure); any other
     * stored result is kept. */
    bool replace_stale;
    /* A successful result with a reference time and kernel times replaces
     * one that has no kernel times (collect --add-kernel-times). */
    bool replace_without_kernel_times;
} store_result;

/* This build's version: git describe at build time ("unknown" outside a
 * git checkout), then " cgN", the generation of the code it generates
 * (CG_GENERATION, codegen.h): what a measurement timed. */
const char *store_version(void);
/* The code generation of a version string: N of its " cgN", else 1 (the
 * code of every build before the generations were recorded). */
int store_codegen_generation(const char *version);

/* Stores the schedule and its result in one transaction.  1 when stored,
 * 0 when this schedule already has a result on this device (nothing is
 * changed), -1 with err. */
int store_put_result(store *st, const store_result *r, char *err, size_t errlen);

/* Whether the schedule text of that pipeline has a result (measurement or
 * failure) on the device: 1, 0, or -1 with err. */
int store_has_result(store *st, int64_t pipeline, int64_t device, const char *schedule_text,
                     char *err, size_t errlen);

/* The stored result of the schedule text on the device: 0 none, 1 a
 * measurement (ms, ref_ms: 0 when measured without a reference), 2 a
 * failure (its outcome), -1 with err.  out may be NULL. */
typedef struct {
    store_outcome outcome;
    double ms, ref_ms;
    int generation;               /* of the code it timed (store_codegen_generation) */
    bool kernel_times;            /* a measurement with each kernel's time alone (kernel_ms) */
} store_found;
/* Whether a found measurement is to be measured again by collect
 * --remeasure: it has no reference time, or it timed code older than this
 * build's (CG_GENERATION). */
bool store_found_stale(const store_found *f);
/* Whether a found measurement has no kernel times (collect
 * --add-kernel-times measures it again). */
bool store_found_without_kernel_times(const store_found *f);
int store_find_result(store *st, int64_t pipeline, int64_t device, const char *schedule_text, store_found *out,
                      char *err, size_t errlen);
/* The texts of the pipeline's schedules that have a stale measurement
 * (store_found_stale) on some device row and no fresh one anywhere: what
 * collect --remeasure times again.  With without_kernel_times, a
 * measurement without kernel times counts as stale, and a fresh one must
 * have them (collect --add-kernel-times).  In the order they were first
 * stored; *texts malloc'd (each text too); the count, or -1 with err. */
int store_stale_schedules(store *st, int64_t pipeline, bool without_kernel_times, char ***texts, char *err,
                          size_t errlen);

/* Keys of the meta table other than the store's own (format,
 * schema_version, which set_meta refuses): what a long job (autotune)
 * records of its progress.  get: the value malloc'd ("" when the key is
 * absent), NULL with err.  set: 0, or -1 with err.  Not exported. */
char *store_get_meta(store *st, const char *key, char *err, size_t errlen);
int store_set_meta(store *st, const char *key, const char *value, char *err, size_t errlen);

/* One successful measurement, as the training code reads them.  Strings
 * are valid during the callback only. */
typedef struct {
    int64_t id;                   /* the measurement */
    int64_t pipeline;             /* the pipeline's id (samples of one pipeline share it) */
    const char *pipeline_name;
    const char *pipeline_hash;
    const char *pipeline_source;  /* "app:harris", "random:seed=12" */
    const char *pipeline_text;
    const char *schedule_text;
    const char *device_key;
    const char *math;
    const char *target_text;      /* the device's target, target_print form */
    double ms;
    double ref_ms;                /* 0: measured without a reference */
    bool one_sample;              /* timed once (its samples list has one entry) */
    const char *date;             /* when it was measured, "2026-11-27T01:00:00Z" */
    int64_t device;               /* the device row's id */
    int generation;               /* the code generation it timed (store_codegen_generation) */
    const char *kernel_ms;        /* each kernel's time alone (store_kernel_ms_parse); "" none */
} store_sample;

/* Calls fn on every successful measurement (of devices whose key is
 * device_key, or all when NULL), ordered by pipeline id then measurement
 * id; fn returning nonzero stops the walk (and is returned).  -1 with err
 * on a database error.  Where a pipeline has measurements with a
 * reference time on a device row, its measurements without one on that
 * row are left out: their times followed the load of the machine and are
 * not comparable (docs/samples.md).  A measurement of a schedule that was
 * timed again, with a reference, on newer code (store_codegen_generation;
 * on any device row of device_key) is left out too.  Within a pipeline,
 * the newest code's measurements come first, and those of one code
 * generation and device row are consecutive (one comparable group). */
typedef int (*store_sample_fn)(const store_sample *s, void *ud);
int store_each_sample(store *st, const char *device_key, store_sample_fn fn, void *ud, char *err,
                      size_t errlen);

/* Counts, for stats and tests. */
typedef struct {
    int64_t pipelines, schedules, devices, samples, failures;
    int64_t failed, wrong, timeout;
} store_counts;
int store_count(store *st, store_counts *c, char *err, size_t errlen);

/* `samples stats`: the counts (one line "N samples"), per device and per
 * pipeline source. */
int store_print_stats(store *st, FILE *out, char *err, size_t errlen);

/* The exchange file: text, one record per line, sorted so that two
 * exports of the same data are the same bytes (diffable), xz-compressed
 * when the path ends in .xz.  Lines:
 *     stagecraft-samples 2
 *     device KEY MATH DESCRIPTION TARGET
 *     pipeline HASH NAME SOURCE TEXT
 *     sample PIPELINE-HASH DEVICE-KEY MATH MS REF-MS KERNELS SAMPLES-CSV RUNS CHECK SIZES DATE VERSION HASHES SCHEDULE
 *     failure PIPELINE-HASH DEVICE-KEY MATH OUTCOME SIZES DATE VERSION HASHES MESSAGE SCHEDULE
 * Every field is escaped (\\ \s \t \n \r for backslash, space, tab,
 * newline and carriage return; \e for the empty string), so fields are
 * separated by single spaces; HASHES is the four structural hashes in hex,
 * comma-separated.  A pipeline record whose text does not hash to its
 * HASH is refused as corrupt.  REF-MS is \e without a reference time;
 * version 1 files (no REF-MS field) are read too.  Export writes a temporary file and renames it.
 * Import adds what is not there yet (in one transaction: all or
 * nothing); *added counts the samples and failures added. */
int store_export(store *st, const char *path, int64_t *written, char *err, size_t errlen);
int store_import(store *st, const char *path, int64_t *added, char *err, size_t errlen);

/* The hex text of a 64-bit FNV-1a hash of text (17 bytes with the NUL). */
void store_text_hash(const char *text, char out[17]);

#endif
