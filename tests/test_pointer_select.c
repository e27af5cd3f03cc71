/*
 * test_pointer_select.c - selects between loads in a CPU's OpenCL code
 * (cg_expr.c, codegen.h generation 17, docs/backends.md): a select whose
 * condition is the same in every lane (it reads no thread index of
 * dimension 0 and loads nothing) and whose sides are loads with columns
 * that differ by constants is printed as one load through the selected
 * pointer, (c ? a + ra : b + rb)[x].  Checked here:
 *  - the form is printed, and counted (cg_opencl_pointer_selects), for
 *    the planes of a Bayer image selected by c, nested three deep, and
 *    for rows of two Funcs selected by y's parity;
 *  - it is not printed where the condition varies from lane to lane (x's
 *    parity; y's where y has the threads of dimension 0), where the
 *    condition loads, where the columns differ by more than a constant,
 *    nor for a GPU;
 *  - every schedule, lowered for a CPU, runs on the C and OpenCL back
 *    ends and matches the reference evaluator bit for bit.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "codegen.h"
#include "exec.h"
#include "fixtures.h"
#include "measure.h"

static fixture_device devs[2];
static int ndev;

/* The four planes of a 2 x 2 mosaic, by c. */
static const char planes_pipe[] =
    "pipeline planes;\n"
    "input u16 in(64, 48);\n"
    "planes(x, y, c) = select(c == 0, in(2 * x, 2 * y), select(c == 1, in(2 * x + 1, 2 * y),\n"
    "                  select(c == 2, in(2 * x, 2 * y + 1), in(2 * x + 1, 2 * y + 1))));\n"
    "output planes(32, 24, 4);\n";

/* Rows of two Funcs interleaved by y's parity. */
static const char rows_pipe[] =
    "pipeline rows;\n"
    "input i16 in(64, 48);\n"
    "top(x, y) = in(x, 2 * y) + i16(1);\n"
    "bot(x, y) = in(x, 2 * y + 1) * i16(3);\n"
    "out(x, y) = select(y % 2 == 0, top(x, y / 2), bot(x, y / 2));\n"
    "output out(64, 48);\n";

/* Neighbours by x's parity: a different condition in every other lane. */
static const char xpar_pipe[] =
    "pipeline xpar;\n"
    "input f32 in(66, 48);\n"
    "out(x, y) = select(x % 2 == 0, in(x, y), in(x + 1, y));\n"
    "output out(64, 48);\n";

/* A condition that loads (a table by row), and columns x and 2x. */
static const char lut_pipe[] =
    "pipeline lut;\n"
    "input f32 in(128, 48);\n"
    "input u8 pick(48);\n"
    "out(x, y) = select(pick(y) > 0, in(x, y), in(x + 1, y));\n"
    "wide(x, y) = select(y % 2 == 0, in(x, y), in(2 * x, y));\n"
    "output out(64, 48);\n"
    "output wide(64, 48);\n";

/* Whether code has a select whose first side is a pointer into a global
 * array, `? (name_g + ...` or `? (name_g)`, with no load before its `:`
 * (a select between loads has `? (name_g + row)[x] :`, rows apart). */
static bool pointer_form(const char *code) {
    for (const char *s = code ? strstr(code, " ? (") : NULL; s; s = strstr(s + 1, " ? (")) {
        const char *id = s + 4, *e = id;
        while ((*e >= 'a' && *e <= 'z') || (*e >= '0' && *e <= '9') || *e == '_') e++;
        if (e - id < 3 || strncmp(e - 2, "_g", 2) || (*e != ' ' && *e != ')')) continue;
        const char *colon = strstr(e, " : ");
        const char *bracket = strchr(e, '[');
        if (colon && (!bracket || bracket > colon)) return true;
    }
    return false;
}

static void pointer_select_case(const char *name, const char *pipe, const char *sched, bool want) {
    fixture_lowered l = fixture_lower_both(pipe, name, sched);
    if (!l.ok) {
        fixture_lowered_free(&l);
        return;
    }
    const lower_program *cpu = l.cpu, *gpu = l.gpu;
    char *code = cg_generate(cpu, CG_OPENCL), *gcode = cg_generate(gpu, CG_OPENCL);
    bool printed = pointer_form(code);
    int64_t n = cg_opencl_pointer_selects(cpu);
    check_report(printed == want && (n > 0) == want, "%s/cpu: %s (%lld counted)", name,
                 want ? "loads through a selected pointer" : "no selected pointer", (long long)n);
    check_report(gcode && !pointer_form(gcode) && cg_opencl_pointer_selects(gpu) == 0,
                 "%s/gpu: no selected pointer", name);
    free(code);
    free(gcode);
    char what[160];
    snprintf(what, sizeof what, "%s/cpu", name);
    fixture_check_runs(devs, ndev, what, cpu, l.in, l.ref);
    fixture_lowered_free(&l);
}

int main(void) {
    ndev = fixture_open_devices(devs);
    pointer_select_case("planes", planes_pipe, "schedule planes;\nplanes: root [x=16x1 y=1x1 c=1x1];\n", true);
    pointer_select_case("planes_unrolled", planes_pipe, "schedule planes;\nplanes: root [x=16x2 y=1x2 c=1x4];\n", true);
    pointer_select_case("rows", rows_pipe,
                        "schedule rows;\nout: root [x=16x1 y=1x2];\ntop: root [x=16x1 y=1x1];\n"
                        "bot: root [x=16x1 y=1x1];\n",
                        true);
    /* y's threads are dimension 0: its parity differs from lane to lane */
    pointer_select_case("rows_y_threads", rows_pipe,
                        "schedule rows;\nout: root [x=1x4 y=16x1];\ntop: root [x=16x1 y=1x1];\n"
                        "bot: root [x=16x1 y=1x1];\n",
                        false);
    pointer_select_case("x_parity", xpar_pipe, "schedule xpar;\nout: root [x=16x1 y=1x2];\n", false);
    pointer_select_case("loaded_condition_or_wide", lut_pipe,
                        "schedule lut;\nout: root [x=16x1 y=1x2];\nwide: root [x=16x1 y=1x2];\n", false);
    fixture_close_devices(devs, ndev);
    CHECK_EXIT();
}
