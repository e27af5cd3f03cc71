/*
 * cg_backend.h - the private interface between codegen.c, which prints
 * everything C-like that the three back ends share (expressions with the
 * pipeline's exact arithmetic, statements, helper functions, comments),
 * and cg_c.c, cg_opencl.c, cg_cuda.c, which supply what differs: type and
 * math function names, the prologue, the kernel signature and index
 * variables, shared-memory declarations, phases and barriers.
 *
 * A back end is a cg_target: strings where a string suffices, function
 * pointers for the kernel frame.  codegen.c prints a kernel as
 *     kernel_open      signature, arguments, bid/tid, shared arrays
 *     block_setup      statements (by codegen.c)
 *     for each phase:  phase_open, the phase's statements, phase_close
 *     kernel_close
 * Back ends print through the cg_ functions below, so indentation and
 * identifier mangling stay in one place.
 */
#ifndef SC_CG_BACKEND_H
#define SC_CG_BACKEND_H

#include <stdbool.h>
#include "codegen.h"

typedef struct cg_ctx cg_ctx;

typedef struct cg_target {
    const char *name;                     /* "c", "opencl", "cuda" */
    const char *type[SC_TYPE_COUNT];      /* scalar types; bool is an int */
    const char *i64;                      /* 64-bit signed integer type */
    const char *fn_qual;                  /* qualifiers of helper functions */
    const char *math[SC_MATH_COUNT];      /* f32 math; [SC_ABS] is fabs */
    const char *fmin, *fmax;              /* f32 min / max (NaN-ignoring) */
    const char *inf, *nan;                /* f32 +infinity and a quiet NaN */
    const char *unroll;                   /* pragma line for an unrolled loop;
                                             "%d" (if present) is the trip count */
    void (*prologue)(cg_ctx *g);          /* includes, typedefs, pragmas */
    void (*kernel_open)(cg_ctx *g, const lower_kernel *k);
    void (*phase_open)(cg_ctx *g, const lower_kernel *k, int phase);
    void (*phase_close)(cg_ctx *g, const lower_kernel *k, int phase);
    void (*kernel_close)(cg_ctx *g, const lower_kernel *k);
} cg_target;

extern const cg_target cg_target_c;
extern const cg_target cg_target_opencl;
extern const cg_target cg_target_cuda;

/* ---- printing, for the back ends (codegen.c) ---- */

/* Appends formatted text, no indentation. */
void cg_printf(cg_ctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line at the current indentation, newline added. */
void cg_line(cg_ctx *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cg_indent(cg_ctx *g, int delta);
/* The identifier for a name from the IR: itself, or with a trailing '_'
 * where it would clash with a keyword, a builtin or a name of the
 * generated code (those start with sc_).  Valid until cg_generate returns. */
const char *cg_name(cg_ctx *g, const char *name);
const char *cg_type(cg_ctx *g, sc_type t);
/* The element type of an allocation. */
sc_type cg_alloc_type(const lower_alloc *a);
/* Whether the kernel reads the variable `name` anywhere (bid, tid). */
bool cg_uses_var(const lower_kernel *k, const char *name);
/* Whether the kernel stores into the allocation (else it is read-only). */
bool cg_stores_to(const lower_kernel *k, const lower_alloc *a);
/* The i-th scalar parameter: its identifier and its ABI type (i32 or f32;
 * narrower integer parameters are passed as i32 and cast where used). */
sc_type cg_param_abi_type(const sc_param *param);

/* Shared arrays of at most this many bytes live on the stack in C. */
#define CG_C_STACK_BYTES 65536

#endif
