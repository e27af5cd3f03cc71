/*
 * hull.h - the hull of several consumers' footprints of a fused Func,
 * the extent lowering allocates (lower.c reads it from the model): the largest
 * extent of the hull of the consumers' spans over every block (and, at
 * thread level, every thread) of the kernel.
 *
 * The loop-nest model keeps, while it builds a kernel with such a Func,
 * a table of its symbols: each is a variable ("L<n>", its number in c.i)
 * defined by the expression lowering's LET of it has, in terms of the
 * block index, the thread index (variables with c.i -1 and -2) and
 * earlier symbols.  hull_extent evaluates the spans over the positions,
 * each symbol once per position, or once per block when it does not
 * depend on the thread.  The symbols depend on the indices only through
 * their digits (each loop's tile index), so when the spans use the digits
 * of one split of each index, the digits' values are enumerated instead of
 * the positions: every combination occurs at some position, and every
 * position gives one of them, so the largest extent is the same, found
 * over (often far) fewer cases.
 *
 * Memory: the variables and definitions live in the table's arena, made
 * by hull_begin and dropped by hull_end; hull_free releases the table.
 */
#ifndef SC_HULL_H
#define SC_HULL_H

#include <stdbool.h>
#include <stdint.h>
#include "bounds.h"
#include "footprint.h"
#include "ir.h"

typedef struct {
    ir_arena *xa;                  /* NULL: no table (hashes only) */
    int nleaf, capleaf;
    sc_expr **ldef;                /* [symbol] its value (NULL: not evaluable) */
    int64_t *lval;
    uint64_t *lstamp;              /* [symbol] when its value was computed */
    bool *ltid;                    /* [symbol] it depends on the thread index */
    uint64_t stamp, block_stamp;   /* the current position, its block's start */
    int64_t bid, tid;
    bool has_tid;
    /* digits: (index / below) % range (no mod: index / below) of the
     * block or thread index, one split (one tiling) each */
    int ndig, capdig, nsplit;
    int64_t *dbelow, *drange, *dval;
    bool *dthread, *dmod;
    int *dsplit;
    uint64_t *lmask;               /* [symbol] the digits it depends on */
    bool by_digit;                 /* values come from dval */
} hull_syms;

/* Starts a kernel: a table (and its arena) when on, else none. */
void hull_begin(hull_syms *h, bool on);
void hull_end(hull_syms *h);
void hull_free(hull_syms *h);

/* A new symbol's variable, defined by def (NULL: never evaluated). */
sc_expr *hull_sym(hull_syms *h, sc_expr *def);
/* A new split of the block (thread false) or thread index, and a digit
 * of it as a variable: (index / below) % range, or index / below when
 * !mod (the last digit; range: its count). */
int hull_split(hull_syms *h);
sc_expr *hull_digit(hull_syms *h, int split, bool thread, int64_t below, int64_t range, bool mod);

/* The largest max(hi) - min(lo) + 1 of the spans sp[i * stride] (i < n)
 * of dimension d of a Func of region pb, each clamped into the region,
 * over nblocks blocks and nthreads threads each (0: block level, the
 * thread index unbound); -1 when something cannot be evaluated or there
 * are more than NEST_HULL_POSITIONS cases to evaluate (nest.h): digit
 * combinations, or positions where the spans' digits do not allow that.
 * The caller then takes the whole region (nest_func.hull_whole). */
int64_t hull_extent(hull_syms *h, int64_t nblocks, int64_t nthreads, const bounds_func *pb, int d, int n,
                    const fp_span *sp, int stride);

#endif
