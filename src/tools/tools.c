/*
 * tools.c - the table of tools (tools.h) and what their parsers share.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect.h"
#include "randpipe.h"
#include "tools.h"

/* Each tool's main, in its own file (cmd_NAME.c). */
int tool_samples(int argc, char **argv);
int tool_collect(int argc, char **argv);
int tool_random_pipeline(int argc, char **argv);
int tool_train(int argc, char **argv);
int tool_predict(int argc, char **argv);
int tool_autotune(int argc, char **argv);
int tool_floor(int argc, char **argv);

/* In the order `stagecraft --help` lists them; ends with a NULL name. */
static const tool tools[] = {
    { "random-pipeline", "write a random valid pipeline (training data for the cost model)", tool_random_pipeline },
    { "collect", "measure schedules of pipelines into the sample store", tool_collect },
    { "samples", "the sample store: stats, export and import of measured schedules", tool_samples },
    { "train", "train the learned cost model on measured samples (docs/costmodel.md)", tool_train },
    { "predict", "the run time the learned cost model predicts for a schedule", tool_predict },
    { "autotune", "search, measure and retrain in a loop: the fastest schedule found on a device", tool_autotune },
    { "floor", "the device's copy bandwidth and each pipeline's traffic floor and class", tool_floor },
    { NULL, NULL, NULL },
};

const tool *tool_by_name(const char *name) {
    for (int i = 0; tools[i].name; i++)
        if (!strcmp(tools[i].name, name)) return &tools[i];
    return NULL;
}

int tool_count(void) {
    int n = 0;
    while (tools[n].name) n++;
    return n;
}
const tool *tool_at(int i) { return &tools[i]; }

int tool_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stagecraft %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run 'stagecraft %s --help' for usage)\n", cmd);
    va_end(ap);
    return TOOL_USAGE;
}

bool tool_parse_ops(const char *cmd, const char *val, int *ops) {
    int k = randpipe_ops_parse(val);
    if (k < 0) {
        char sets[64];
        randpipe_ops_list(sets, sizeof sets);
        tool_usage_error(cmd, "--ops: '%s' is not one of %s", val, sets);
        return false;
    }
    *ops = k;
    return true;
}

bool tool_parse_int(const char *val, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(val, &end, 10);
    if (!*val || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static void on_stop_signal(int sig) {
    (void)sig;
    collect_request_stop();
}

void tool_stop_on_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

const char *tool_pipe_base(const char *path, int *len) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".pipe")) n -= 5;
    *len = (int)n;
    return base;
}

void tool_pipe_source(const char *path, char *buf, size_t len) {
    int n;
    const char *base = tool_pipe_base(path, &n);
    snprintf(buf, len, "app:%.*s", n, base);
}
