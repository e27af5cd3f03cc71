/*
 * store_impl.h - what store.c and store_file.c share (not for other
 * modules: they use store.h).
 */
#ifndef SC_STORE_IMPL_H
#define SC_STORE_IMPL_H

#include <sqlite3.h>
#include "store.h"

struct store {
    sqlite3 *db;
    char *path;
    int busy_ms;
};

/* err <- "PATH: what: SQLite's message" (or that the database is
 * locked); returns -1. */
int store_fail(store *st, char *err, size_t errlen, const char *what);
/* Runs SQL without results; 0, or -1 with err. */
int store_exec(store *st, const char *sql, char *err, size_t errlen);
/* A prepared statement, or NULL with err. */
sqlite3_stmt *store_prepare(store *st, const char *sql, char *err, size_t errlen);
/* The id of the row q selects (its parameters bound by the caller), 0
 * when none, -1 with err; q is finalized. */
int64_t store_select_id(store *st, sqlite3_stmt *q, char *err, size_t errlen);
/* The outcome of its name ("ok", "failed", "wrong", "timeout"); -1 if none. */
int store_outcome_parse(const char *name, store_outcome *o);

#endif
