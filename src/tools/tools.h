/*
 * tools.h - the commands of the learned cost model and its data, and the
 * traffic floors (floor), each with its own option parser (main.c keeps the pipeline commands: check, run,
 * dump, schedule, compile, bench, features).
 *
 * A tool is a name, a line of summary and a main function that gets the
 * arguments after the command name (argv[0] is the command).  Exit status
 * as main.c: 0 success, 1 bad input, 2 bad usage.
 */
#ifndef SC_TOOLS_H
#define SC_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

enum { TOOL_OK = 0, TOOL_INPUT = 1, TOOL_USAGE = 2 };

typedef struct {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv);
} tool;

/* The tool of that name, or NULL. */
const tool *tool_by_name(const char *name);
int tool_count(void);
const tool *tool_at(int i);

/* Prints "stagecraft CMD: message" and the help hint to stderr; returns
 * TOOL_USAGE. */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses a decimal integer in [lo, hi]; false when val is not one. */
bool tool_parse_int(const char *val, long long lo, long long hi, long long *out);
/* Parses the value of --ops (a random pipelines' operation set, randpipe.h)
 * into *ops; on a name that is none of them prints the usage error, which
 * lists the sets, and returns false. */
bool tool_parse_ops(const char *cmd, const char *val, int *ops);
/* Makes SIGINT and SIGTERM ask a collection or an autotuning run to stop
 * after the schedule it is measuring (collect_request_stop). */
void tool_stop_on_signals(void);
/* A pipeline file's name without its folder and its ".pipe": a pointer
 * into path, its length in *len. */
const char *tool_pipe_base(const char *path, int *len);
/* "app:NAME" of a file NAME.pipe (any folder): the source a pipeline file
 * is stored under. */
void tool_pipe_source(const char *path, char *buf, size_t len);

#endif
