/*
 * codegen.h - printing the kernel IR as CUDA C, OpenCL C or C (OpenMP).
 *
 * The generators only print (the mapping was decided by lowering): one
 * kernel function per lower_kernel, named after it, with the kernel ABI of
 * rt.h, readable (named after the Funcs, indented, the schedule as a
 * comment).  Each result is a malloc'd, self-contained source file.
 */
#ifndef SC_CODEGEN_H
#define SC_CODEGEN_H

/* The generation of the code this build generates, recorded with every
 * measurement (store_version: "... cgN") so that measurements of older
 * code can be told apart and measured again (collect --remeasure):
 *   1  until 2026-11-27;
 *   2  a thread's coordinate in its block's last threaded loop without the
 *      redundant modulo (nest_thread_digit_wraps): PoCL vectorizes it, a
 *      u16 5x5 stencil at the image origin ran 16.3 ms before, 2.2 after;
 *   3  the same day: OpenCL work-groups shaped by the root phase's threads
 *      per loop (lower_kernel.tdim), its coordinates the local ids: the
 *      stencil with 16 x 4 threads ran 16.4 ms before, 2.4 after;
 *   4  2026-11-27: interior blocks, a second copy of a kernel's body
 *      without its edge handling (codegen.c): harris's repeat_edge copy
 *      ran 8.1 ms before, 2.7 after (docs/backends.md);
 *   5  2026-11-28: OpenCL's unrolled loops carry `#pragma unroll` and count
 *      from 0, and block-level phases read their threads from the local
 *      ids where the work-group's shape allows (lower.c): box_blur with
 *      4 serial rows a thread ran 8.2 ms before, 1.4 after; blur_x in
 *      out's 64 x 8 blocks 13.9 ms before, 5.3 after;
 *   6  the same day: the pragma only on loops of up to 2,048 expression
 *      nodes unrolled (cg_opencl.c): PoCL compiled a bgu kernel of 8
 *      unrolled points for 26 s at its first launch, and a random bgu
 *      schedule's 108 kernels for 137 s in all (25 s now, 30 s on
 *      generation 4); collections of generation 5 timed out on it;
 *   7  2026-11-28: no register staging on a CPU target (target.cpu:
 *      nest_ctx_set_staging): PoCL kept the staged array in memory per
 *      work-item, and stencil_chain's stages in 64 x 8 threads of 1 x 2
 *      points ran 20.2 and 19.9 ms staged, 3.5 and 3.7 ms reading global
 *      memory.  Only code with staging changed: a CPU's samples of older
 *      generations whose schedule stages are left out of training
 *      (train_load.h, rejected_staged);
 *   8  2026-11-28: a thread-level Func's loops unrolled up to 64 points
 *      (NEST_UNROLL_THREAD_LIMIT, nest_query.h), not 16: its private array
 *      stays in registers only when every index into it is a constant.
 *      harris' clamped, 3 x 8 points a thread of gray, looped: gray took
 *      17.3 ms on PoCL, 10.4 ms unrolled; learned_demosaic's l3 (4 points
 *      x 8 reduction steps) in a3's threads: a3 226 ms, 57 ms unrolled.
 *      And OpenCL loops unrolled up to 4,096 expression nodes, not 2,048
 *      (CG_OPENCL_UNROLL_NODES): harris' out in threads of 1 x 5 points
 *      ran rolled, 19.6 ms, against 4.0 ms unrolled.  Only schedules with
 *      such loops changed (train_load.h, rejected_unrolled).
 *   9  2026-11-28: signed integer division and modulo by a constant
 *      power of two 2^k, k >= 1, of a value that may be negative, as an
 *      arithmetic shift right by k and a mask with 2^k - 1 (the floor
 *      semantics exactly), not the helpers sc_div_* and sc_mod_*, whose
 *      branches kept PoCL from vectorizing larger kernels: camera_pipe's
 *      out with 4 points a work-item divides an i16 by 32: 67 ms, 15 ms
 *      with the shift.  Samples of pipelines that divide so changed
 *      (train_load.h, rejected_division).
 *  10  2026-11-28: a stage that reads a thread-level Func's private array
 *      unrolls its loops up to 64 points too (nest_unroll_limit), and
 *      OpenCL indexes private arrays by the unrolled loops' counters
 *      alone where the tile's base cancels (cg_index): PoCL kept such an
 *      array in memory when its indices were not plainly constants;
 *      box_blur's out over 16 rows a work-item with blur_x in its
 *      threads: 3.6 ms rolled, 1.3 ms unrolled with the old indices,
 *      0.47-0.65 ms now.  Samples of schedules whose readers' loops
 *      unroll now changed (train_load.h, rejected_private).
 *  11  2026-11-28: OpenCL code for a CPU target launches a kernel's
 *      interior blocks apart (cg_launch): its interior copy is a kernel
 *      of its own, with no branch around the body, and the kernel's own
 *      function runs over the edge blocks only.  With the interior copy
 *      and the general one as two sides of one branch in the work-item
 *      loop, PoCL's vectorizer if-converted both and often gave up:
 *      stencil_chain's stage_2 in 32 threads of 1 x 8 points ran 15.1 ms,
 *      1.2 ms either copy alone, its one-shot pick 565 ms (docs/backends.md).
 *      Only kernels of CG_SPLIT_NODES nodes or more are split.  Samples
 *      of a CPU's OpenCL code with such a kernel changed (train_load.h,
 *      rejected_interior).
 *  12  2026-11-28: OpenCL code for a CPU target computes f32 min and max
 *      with clang's builtins (llvm.minnum, llvm.maxnum), not OpenCL's
 *      fmin and fmax, which PoCL compiles to a compare and a select.
 *      LLVM's SLP vectorizer, run on each work-item's code before PoCL
 *      builds its work-item loops, seeded on those compares and packed a
 *      work-item's unrolled points into short vectors, and the loop
 *      vectorizer then left the work-item loop scalar: learned_demosaic's
 *      a2 over 4 rows a work-item, l2 in its threads, 33 ms, 9.4 ms now;
 *      max_filter's baseline 1,256 to 1,097 ms (docs/backends.md).
 *      Samples of a CPU's OpenCL code of a pipeline with an f32 min or
 *      max changed (train_load.h, rejected_minmax).
 *  13  2026-11-29: a scan (an update whose coordinates come from its
 *      reduction domain, f(x, r) = f(x, r - 1) ..., not from values it
 *      loads as a scatter's do) runs its reduction loops around a serial
 *      tile of more than one point, as updates that accumulate in place
 *      have since 2026-11-27 (nest_reduction_around_tile): the innermost
 *      loop runs over contiguous points, which PoCL vectorizes, where
 *      each point ran the whole scan down a column before.  iir_blur's
 *      four scans in threads of 4 x 16 points: 363 ms together, 40 ms
 *      now (docs/benchmarks.md, "Scans around the tile").  Samples of
 *      schedules with such a tile changed (train_load.h, rejected_scan).
 *  14  2026-11-29: pow(a, 2.0) is computed as a * a, a once (cg_expr.c),
 *      the reference's value bit for bit (ir_expr_is_square), where it
 *      called pow: PoCL's pow is a library call that its vectorizer
 *      leaves scalar.  nl_means' dc at 256 x 256 (baseline): 566 ms, 3.3
 *      ms now; its baseline at paper size 34.2 s, 0.81 s now; lens_blur's
 *      48.0 s, 4.40 s now (exact code: with its squares' sums contracted
 *      fast math moves a few depths beyond the tolerance; docs/backends.md,
 *      "Squares").  Samples of a pipeline with such a square changed
 *      (train_load.h, rejected_square).
 *  15  2026-11-29: a root stage with threads in more than three loops
 *      gets a work-group of three dimensions, the first two loops' threads
 *      and the product of the others' (lower_kernel.merged_tdim), whose
 *      thread indices are digits of local id 2, where it was one flat
 *      dimension read with / and %, which PoCL does not vectorize over:
 *      nl_means' one-shot pick computes d in 32 x 4 x 8 x 4 threads, 564
 *      ms before, 313 ms now (docs/backends.md).  Samples of schedules
 *      with such a stage changed (train_load.h, rejected_merged).
 *  16  2026-12-01: OpenCL code for a CPU target prints an access whose
 *      row (every coordinate but the first) is not a linear form of the
 *      loops and loads nothing as (a + row)[x] (cg_access), where it was
 *      a[x + row]: with a clamped row, at an image's edge, PoCL left the
 *      work-item loop scalar.  box_blur's edge blocks in 32 threads
 *      of 1 x 8 points: 0.35 ms, 0.17 ms now (the whole, 1.07 ms to 0.85
 *      ms; docs/backends.md, "Generation 16").  A row y / 2 (a pyramid's)
 *      was left scalar everywhere, not only at the edges: interpolate's
 *      schedules 2% to 44% faster.  Samples of a CPU's OpenCL code with
 *      such an access changed: outside the edge blocks' copy of a kernel
 *      (rejected_rows_apart: interpolate's schedules changed their
 *      order), or only there (kept_rows_apart, in their own groups:
 *      train_load.h).
 *  17  2026-12-01: OpenCL code for a CPU target prints a select between
 *      loads whose condition is the same in every lane (it reads no
 *      thread index of dimension 0 and loads nothing) and whose columns
 *      differ by constants as one load through the selected pointer,
 *      (c ? a + ra : b + rb)[x] (cg_expr), where it was c ? a[x + ra] :
 *      b[x + rb], a branch around loads that PoCL's vectorizer does not
 *      speculate: camera_pipe's deinterleaved (a plane of the Bayer
 *      image by c) ran scalar (docs/backends.md, "Generation 17").
 *      Samples of a CPU's OpenCL code with such a select changed
 *      (train_load.h, rejected_pointer_selects).
 *  18  2026-12-01: OpenCL code for a CPU target launches the interior
 *      blocks of a kernel apart (generation 11) also where the kernel is
 *      small but guards a store of 8 or 16 bits into a global array (a
 *      partial tile's): on a CPU with AVX2 and no AVX-512 there is no
 *      masked store of that width, and with the guarded copy in a branch
 *      beside the interior one PoCL left the whole work-item loop scalar:
 *      stencil_chain's baseline 750-790 ms, 77 ms now (docs/backends.md,
 *      "Generation 18").  Samples of a CPU's OpenCL code with such a
 *      kernel changed (train_load.h, rejected_narrow_splits).
 *  19  2026-12-03: OpenCL code reads a private array whose index has,
 *      beside unrolled loops' counters, variables of at most 8 values
 *      together (a block's coordinate that a Func's tile in the threads
 *      spans whole) as a select over those values whose sides index the
 *      array by counters and constants (cg_expr.c, print_private_pick),
 *      where it printed the index whole: PoCL kept such an array in
 *      memory.  interpolate's one-shot pick computes interp_0's four
 *      channels in the threads of out, one channel a block, and reads
 *      channel c and 3: out 21.6 ms, 9.6 ms now; the whole 42.9 ms, 30.9
 *      ms now (docs/backends.md, "Generation 19").  Samples of OpenCL
 *      code with such a read changed (train_load.h,
 *      rejected_private_picks).
 *  20  2026-12-03: code for a CPU target gives a work-item's points along
 *      a ROOT or BLOCK stage's first loop cyclically, the loop's thread
 *      count apart (x = base + tid0 + u * threads), where they were
 *      consecutive (base + tid0 * serial + u): PoCL vectorizes over
 *      neighbouring work-items, whose loads were then a gather.  A u16
 *      5x5 stencil in 64 x 8 work-items of 2 x 1 points: 5.5 ms, 2.3 ms
 *      now; 32 x 8 of 2 x 1: 5.5 ms, 1.2 ms now (docs/backends.md,
 *      "Generation 20").  Where the tile is unrolled (under 16 points: a
 *      looped tile's in-thread loop over consecutive points is what
 *      PoCL vectorizes then), no Func is computed in the stage's threads
 *      and nothing is staged (nest_ctx_set_cyclic).  Older
 *      samples are not left out: training models each with the mapping
 *      of its generation (train_load.h), so their features describe the
 *      code they timed.
 *  21  2026-12-03: the helpers that convert f32 to an integer type
 *      (sc_f32_to_u8 ...) are one expression of conditionals, where they
 *      returned from a chain of ifs: the same values, NaN to 0 and the
 *      type's bounds beyond them.  PoCL left the branches in its
 *      work-item loops, and in hist's one-shot pick (eq, Cr and Cb in the
 *      threads of out) did not vectorize them at all in exact math: out
 *      32.6 ms, 21.2 ms now; with contraction 8.8 ms, 8.0 ms now
 *      (docs/backends.md, "Generation 21").  Samples of code converting
 *      f32 to integers are kept, in their own groups (train_load.h,
 *      kept_conversions): on the apps' baselines the old and new code
 *      timed alike but for hist's.
 *  22  2026-12-06: the interior finder counts the conjuncts of a guard
 *      that the interior's ranges leave undecided, where it counted the
 *      guard as one conditional (codegen.c, "Interior blocks"): a
 *      partial tile's guard `x < 2561 && c < 3`, three channels in tiles
 *      of two, kept `c < 3` in every block, so no interior was found and
 *      every block kept `x < 2561`, which PoCL did not vectorize (a
 *      masked byte gather).  camera_pipe's curved with two channels a
 *      work-group: 37.1 ms, 5.7 ms now (docs/backends.md, "Generation
 *      22").  Samples whose code this changed (cg_decides_guards_apart)
 *      are left out (train_load.h, rejected_partial_guards).
 *  23  2026-12-07: OpenCL code reads a private array inside a partial
 *      tile's guard by unrolled loops' counters and a constant also where
 *      the producer's min is clamped, min(x_t, k), to keep the ragged
 *      tile's last work-items' producers in range: the guard (x < k + 1)
 *      leaves the min its operand (cg_expr.c, guard_caps), where the
 *      index was printed whole, (x - x_min) + ..., and PoCL kept the
 *      array in memory.  nl_means' one-shot pick (blur_d_y's producers
 *      in its threads, dx and dy in tiles of 4 and 2 of 7): blur_d_y
 *      (docs/backends.md, "Generation 23").  Samples of OpenCL code
 *      with such a read changed (train_load.h, rejected_guarded_mins).
 *  24  2026-12-07: on a CPU, a reduction around an unrolled tile is
 *      unrolled whole where the tile times the whole reduction has fewer than 512
 *      points (NEST_UNROLL_AROUND_LIMIT, nest_query.h), where each of its
 *      loops alone had to be short with the tile (16 points, 64 at thread
 *      level), its loops up to 16,384 expression nodes on OpenCL and C,
 *      not 4,096 (CG_UNROLL_NODES_WHOLE): learned_demosaic's l1 over 8
 *      channels a work-item, a 4 x 3 x 3 reduction, had every loop rolled,
 *      and PoCL ran the kernel one work-item at a time (docs/backends.md,
 *      "Generation 24").  Samples whose code changed
 *      (nest_unrolls_reductions_around, cg_unrolls_whole_past) are left
 *      out (train_load.h, rejected_longer_unrolls).
 *  25  2026-12-08: OpenCL code reads a private array at an index with a
 *      temporary of at most 8 values in it (a value computed from data,
 *      local_laplacian's level k = clamp(int(gray * 7), 0, 6)) as a chain
 *      of select() over constant indices, where it printed the index
 *      whole: PoCL kept the array in memory and left the work-item loop
 *      scalar (the select's chain of branches, had it been printed with ?:,
 *      became a switch, scalar too).  local_laplacian's held-out one-shot
 *      pick (lp_0 in out's threads, all 8 levels): out 95 ms before, 60 ms
 *      after (docs/backends.md, "Generation 25").  Samples of OpenCL code
 *      with such a read changed (train_load.h, rejected_data_picks). */
#define CG_GENERATION 25
/* The first generation whose CPU code has no register staging. */
#define CG_GENERATION_CPU_UNSTAGED 7
/* The first generation that unrolls thread-level tiles up to 64 points. */
#define CG_GENERATION_THREAD_UNROLLED 8
/* The first generation that divides by powers of two with shifts. */
#define CG_GENERATION_POW2_DIVISION 9
/* The first generation that unrolls the readers of private arrays and
 * indexes those arrays (OpenCL) by loop counters. */
#define CG_GENERATION_PRIVATE_INDICES 10
/* The first generation whose OpenCL code for a CPU launches interior
 * blocks apart. */
#define CG_GENERATION_SPLIT_INTERIOR 11
/* The first generation whose OpenCL code for a CPU computes f32 min and
 * max with clang's builtins. */
#define CG_GENERATION_CPU_MINMAX 12
/* The first generation that runs a scan's reduction loops around a tile
 * of several points, as those of updates that accumulate in place. */
#define CG_GENERATION_SCANS_AROUND 13
/* The first generation that computes pow(a, 2.0) as a * a. */
#define CG_GENERATION_SQUARES 14
/* The first generation whose work-groups merge a root stage's fourth and
 * later threaded loops into their third dimension. */
#define CG_GENERATION_MERGED_THREADS 15
/* The first generation whose OpenCL code for a CPU takes rows that are
 * not linear forms apart from the first coordinate. */
#define CG_GENERATION_ROWS_APART 16
/* The first generation whose OpenCL code for a CPU loads through a
 * selected pointer where a select's condition is the same in every lane. */
#define CG_GENERATION_POINTER_SELECTS 17
/* The first generation whose OpenCL code for a CPU launches the interior
 * of a small kernel apart where it guards a store of 8 or 16 bits. */
#define CG_GENERATION_NARROW_SPLITS 18
/* The first generation whose OpenCL code reads a private array at an index
 * with a block's coordinate in it as a select between constant indices. */
#define CG_GENERATION_PRIVATE_PICKS 19
/* The first generation whose code for a CPU gives a work-item's points
 * along a stage's first loop cyclically (nest_ctx_set_cyclic): the
 * loop-nest model of an older sample is built without it. */
#define CG_GENERATION_CYCLIC_POINTS 20
/* The first generation whose f32-to-integer helpers have no branches. */
#define CG_GENERATION_BRANCHLESS_CONVERSIONS 21
/* The first generation whose interior finder counts a guard's conjuncts. */
#define CG_GENERATION_PARTIAL_GUARDS 22
/* The first generation whose private arrays' indices see through a
 * guarded min. */
#define CG_GENERATION_GUARDED_MINS 23
/* The first generation that unrolls a reduction around an unrolled tile
 * whole where the tile times it is short (NEST_UNROLL_AROUND_LIMIT), up
 * to 16,384 nodes (CG_UNROLL_NODES_WHOLE). */
#define CG_GENERATION_LONGER_UNROLLS 24
/* The first generation whose OpenCL code reads a private array at a
 * temporary's values as a chain of select() over constant indices. */
#define CG_GENERATION_DATA_PICKS 25

#include "lower.h"

typedef enum { CG_C, CG_OPENCL, CG_CUDA } cg_backend;

/* How f32 arithmetic is compiled.
 *   CG_MATH_EXACT  exp log pow sin cos tanh atan2 computed in double and
 *                  rounded once to f32 (scmath.h), no contraction of
 *                  a * b + c into fused multiply-adds, correctly rounded
 *                  division and square root: the reference evaluator's
 *                  results bit for bit.  The default, and what the tests use.
 *   CG_MATH_FAST   the device's own f32 functions (native_exp, __expf,
 *                  expf ...) and contraction allowed: for timing.  Checked
 *                  against the reference within a stated tolerance
 *                  (exec.h, exec_tolerance). */
typedef enum { CG_MATH_EXACT, CG_MATH_FAST } cg_math;

/* The most expression nodes an OpenCL loop unrolled may come to (the rest
 * stay rolled, for PoCL's compile time: cg_opencl.c).  2,048 before
 * generation 8: harris' out in threads of 1 x 5 points (about 2,100
 * nodes) ran rolled, 19.6 ms on PoCL, against 4.0 ms unrolled. */
#define CG_OPENCL_UNROLL_NODES 4096
/* The cap, on OpenCL and C, for the loops of a reduction unrolled whole
 * around an unrolled tile (kstmt.unroll_whole; since generation 24):
 * learned_demosaic's l1 over 8 channels a work-item, a 4 x 3 x 3
 * reduction of about 11,500 nodes, kept its outer loop under 4,096, and
 * PoCL ran the kernel one work-item at a time, 2x slower. */
#define CG_UNROLL_NODES_WHOLE 16384
/* The same cap for the C back end's `#pragma GCC unroll` (since
 * generation 10; CUDA has none). */
#define CG_C_UNROLL_NODES 4096
/* OpenCL code for a CPU launches a kernel's interior blocks apart only
 * where its phases come to this many expression nodes or more (unrolled
 * loops counted unrolled): PoCL vectorized the branch of smaller bodies,
 * and a second launch, its blocks away from their rows' neighbours, cost
 * more than it saved (docs/backends.md). */
#define CG_SPLIT_NODES 256
#define CG_OPENCL_UNROLL_NODES_BEFORE_8 2048

/* Whether OpenCL code of prog unrolls a loop that a cap of `before` nodes
 * left rolled (the loop's unrolled size is over before and at most
 * CG_OPENCL_UNROLL_NODES): code that differs from an older generation's. */
bool cg_opencl_unrolls_past(const lower_program *prog, int64_t before);
/* Whether code of prog unrolls a loop of a reduction unrolled whole
 * (kstmt.unroll_whole) of more than CG_OPENCL_UNROLL_NODES nodes, which
 * generations before CG_GENERATION_LONGER_UNROLLS left rolled (their cap
 * for OpenCL and C). */
bool cg_unrolls_whole_past(const lower_program *prog);
/* Whether OpenCL code of prog launches some kernel's interior blocks apart
 * (prog->cpu and a kernel of CG_SPLIT_NODES nodes or more with interior
 * blocks): code that differs from an older generation's. */
bool cg_opencl_splits(const lower_program *prog);
/* Whether it does so for a kernel below CG_SPLIT_NODES nodes, for a
 * guarded store of 8 or 16 bits (since CG_GENERATION_NARROW_SPLITS). */
bool cg_opencl_splits_narrow(const lower_program *prog);

/* What changed since an older generation's code for a schedule, as far as
 * generations 7 to 16 changed it (older ones changed more: callers that
 * care leave them out): the code of s that code generation `generation`
 * made (its loop-nest model, built without staging; on a CPU target or
 * not, through OpenCL or not) lacked staging that it had then
 * (CG_CODE_STAGING: a CPU before CG_GENERATION_CPU_UNSTAGED), called a
 * helper where this build shifts (CG_CODE_DIVISION: before
 * CG_GENERATION_POW2_DIVISION, code with cg_pow2_shifts) or
 * left loops rolled that this build unrolls (CG_CODE_UNROLLING: before
 * CG_GENERATION_THREAD_UNROLLED), or read a thread-level Func's private
 * array through loops this build unrolls or, on OpenCL, through indices
 * this build prints as loop counters (CG_CODE_PRIVATE: before
 * CG_GENERATION_PRIVATE_INDICES, where nest_unrolls_private_readers: the
 * indices changed in every reader, but one whose loops were unrolled
 * already ran the same on PoCL, docs/backends.md), or, on a CPU through
 * OpenCL, ran a kernel's interior blocks in a branch of the kernel that
 * this build launches apart (CG_CODE_INTERIOR: before
 * CG_GENERATION_SPLIT_INTERIOR, where cg_opencl_splits), or, on a CPU
 * through OpenCL, called OpenCL's fmin or fmax where this build calls
 * clang's builtins (CG_CODE_MINMAX: before CG_GENERATION_CPU_MINMAX, where
 * cg_uses_f32_minmax), or ran the reduction loops of a scan inside a
 * tile of several points where this build runs them around it
 * (CG_CODE_SCAN_ORDER: before CG_GENERATION_SCANS_AROUND, where
 * nest_any_scan_around_tile), or called pow where this build multiplies
 * (CG_CODE_SQUARE: before CG_GENERATION_SQUARES, where cg_squares), or
 * read the thread indices of a root stage with more than three threaded
 * loops from one flat index (CG_CODE_MERGED_THREADS: before
 * CG_GENERATION_MERGED_THREADS, where nest_merges_thread_loops), or, on
 * a CPU through OpenCL, indexed an array by a sum where this build takes
 * the row apart (before CG_GENERATION_ROWS_APART, where
 * cg_opencl_rows_apart: CG_CODE_ROWS_APART where some such access is
 * outside the edge blocks' copy of a kernel, CG_CODE_ROWS_APART_EDGES
 * where all are in it), or, on a CPU through OpenCL, selected between
 * loads where this build loads through a selected pointer
 * (CG_CODE_POINTER_SELECTS: before CG_GENERATION_POINTER_SELECTS, where
 * cg_opencl_pointer_selects), or, on a CPU through OpenCL, kept a small
 * kernel with a guarded narrow store whole (CG_CODE_NARROW_SPLITS: before
 * CG_GENERATION_NARROW_SPLITS, where cg_opencl_splits_narrow), or, through
 * OpenCL on any device, read a private array at an index that is not a
 * sum of counters where this build selects between constant indices
 * (CG_CODE_PRIVATE_PICKS: before CG_GENERATION_PRIVATE_PICKS, where
 * cg_opencl_private_picks), or converted f32 to an integer type through
 * a helper with branches (CG_CODE_CONVERSIONS: before
 * CG_GENERATION_BRANCHLESS_CONVERSIONS, where cg_converts_f32), or, through
 * OpenCL or CUDA, found another interior for some kernel, or none, by
 * counting a guard as one conditional (CG_CODE_PARTIAL_GUARDS: before
 * CG_GENERATION_PARTIAL_GUARDS, where cg_decides_guards_apart), or, through
 * OpenCL, read a private array inside a guard at an index printed whole
 * for a clamped min (CG_CODE_GUARDED_MINS: before CG_GENERATION_GUARDED_MINS,
 * where cg_opencl_forms_of's guarded_mins), or left rolled a reduction loop
 * around an unrolled tile that lowering now unrolls with the rest of the
 * reduction, or, through OpenCL or C, such a whole reduction's loop of
 * 4,097 to 16,384 nodes (CG_CODE_LONGER_UNROLLS: before
 * CG_GENERATION_LONGER_UNROLLS, where nest_unrolls_reductions_around or
 * cg_unrolls_whole_past).  The model is the sample's own: built with
 * the mapping of its generation (nest_ctx_set_cyclic off before
 * CG_GENERATION_CYCLIC_POINTS), and the code the checks read is lowered
 * with its mapping, so a change of mapping is no change here. */
typedef enum {
    CG_CODE_SAME,
    CG_CODE_STAGING,
    CG_CODE_DIVISION,
    CG_CODE_UNROLLING,
    CG_CODE_PRIVATE,
    CG_CODE_INTERIOR,
    CG_CODE_MINMAX,
    CG_CODE_SCAN_ORDER,
    CG_CODE_SQUARE,
    CG_CODE_MERGED_THREADS,
    CG_CODE_ROWS_APART,
    CG_CODE_ROWS_APART_EDGES,
    CG_CODE_POINTER_SELECTS,
    CG_CODE_NARROW_SPLITS,
    CG_CODE_PRIVATE_PICKS,
    CG_CODE_CONVERSIONS,
    CG_CODE_PARTIAL_GUARDS,
    CG_CODE_GUARDED_MINS,
    CG_CODE_LONGER_UNROLLS,
    CG_CODE_DATA_PICKS
} cg_code_change;
/* Whether code of prog in backend finds other interior blocks than
 * generation 21's finder, which counted a guard as one conditional where
 * this build counts its undecided conjuncts (codegen.c, "Interior
 * blocks"): code that differs from an older generation's.  False for C,
 * which has no interior copies. */
bool cg_decides_guards_apart(const lower_program *prog, cg_backend backend);
/* Whether a definition of p divides or takes the modulo of a signed
 * integer by a constant power of two of at least 2 (a quick test: only
 * where the dividend may be negative did generation 9 change the code,
 * which cg_pow2_shifts counts). */
bool cg_divides_by_pow2(const sc_pipeline *p);
/* Whether a definition of p converts f32 to an integer type other than
 * bool (the code of every schedule of p then calls sc_f32_to_T). */
bool cg_converts_f32(const sc_pipeline *p);
/* Whether a definition of p squares with pow(a, 2.0) (ir_expr_is_square). */
bool cg_squares(const sc_pipeline *p);
/* Whether a definition of p takes the min or max of two f32 values (the
 * code of every schedule of p then prints one). */
bool cg_uses_f32_minmax(const sc_pipeline *p);
/* How many divisions and modulos by powers of two the code of prog
 * prints as shifts and masks (the same in every back end). */
int64_t cg_pow2_shifts(const lower_program *prog);
/* How many accesses OpenCL code of prog for a CPU prints with the row
 * apart, (a + row)[x] (cg_access; 0 where prog is not for a CPU);
 * *in_edges (may be NULL) how many of them are in the edge blocks' copy
 * of a kernel that has an interior copy (codegen.c, "Interior blocks"). */
int64_t cg_opencl_rows_apart(const lower_program *prog, int64_t *in_edges);
/* What OpenCL code of prog prints in the forms of generations 16, 17 and
 * 19, from one generation of the code: for a CPU (0 where prog is not for
 * one) accesses with the row apart, those of them in the edge blocks' copy
 * of a kernel, and selects loading through a selected pointer; for any
 * device, reads of private arrays as a select (all 0, nothing generated,
 * where prog has no private array and is not for a CPU). */
typedef struct {
    int64_t rows_apart, rows_apart_edge, pointer_selects, private_picks;
    int64_t guarded_mins;   /* private arrays' indices read through a guarded min (generation 23) */
    int64_t data_picks;     /* private arrays read as a select over a temporary's values (generation 25) */
} cg_opencl_forms;
cg_opencl_forms cg_opencl_forms_of(const lower_program *prog);
/* How many selects OpenCL code of prog for a CPU prints as one load
 * through a selected pointer (cg_expr; 0 where prog is not for a CPU). */
int64_t cg_opencl_pointer_selects(const lower_program *prog);
/* How many reads of private arrays OpenCL code of prog (for any device)
 * prints as a select over a few values of variables that are not
 * unrolled loops' counters (cg_expr.c, generation 19). */
int64_t cg_opencl_private_picks(const lower_program *prog);
cg_code_change cg_code_changed_since(int generation, sc_pipeline *p, const bounds_result *b,
                                     const sched_state *s, const nest *model, bool cpu, bool opencl);

/* One launch of a program's kernel: lower_program.kernels[kernel] over
 * nblocks blocks of its threads; with interior, its interior copy, the
 * function named after the kernel with CG_INTERIOR_SUFFIX.  Code for a CPU
 * target (lower_program.cpu) in OpenCL prints a kernel of CG_SPLIT_NODES
 * nodes or more with interior blocks (codegen.c) as two functions: the
 * kernel's own, launched over the edge blocks alone, and the interior
 * copy, launched over the interior blocks alone, with no edge handling
 * and no branch around its body (PoCL if-converted the two bodies of one
 * branch and often did not vectorize them at all, docs/backends.md).
 * Other code launches each kernel once, over its blocks. */
typedef struct {
    int kernel;
    bool interior;
    int64_t nblocks;
} cg_launch;
#define CG_INTERIOR_SUFFIX "_interior"
/* cg_generate_math, and the launches that run the program, in order
 * (malloc'd; *nlaunches of them). */
char *cg_generate_launches(const lower_program *prog, cg_backend backend, cg_math math, cg_launch **launches,
                           int *nlaunches);

/* cg_generate_math with CG_MATH_EXACT. */
char *cg_generate(const lower_program *prog, cg_backend backend);
char *cg_generate_math(const lower_program *prog, cg_backend backend, cg_math math);
/* A C header declaring the host entry point that cg_generate writes for
 * the C and CUDA back ends (cg_host.c):
 *     int PIPELINE_run(const T *input..., T param..., T *output...);
 * malloc'd; NULL where the program has no entry point (a hand-made program
 * whose buffers do not cover its outputs and kernel arguments). */
char *cg_generate_header(const lower_program *prog);
/* The compiler options the generated code needs to compute what the
 * reference evaluator computes: no contraction of a * b + c into fused
 * multiply-adds, correctly rounded division and square root. */
const char *cg_required_options(cg_backend backend);
/* The compiler options of code generated with math mode m: for
 * CG_MATH_EXACT those of cg_required_options; for CG_MATH_FAST the ones
 * that allow contraction (-ffp-contract=fast, -cl-mad-enable, --fmad=true)
 * and approximate division and square root on CUDA. */
const char *cg_math_options(cg_backend backend, cg_math m);
/* "exact", "fast"; and back (0, or -1 if unknown). */
const char *cg_math_name(cg_math m);
int cg_math_parse(const char *name, cg_math *out);
const char *cg_backend_name(cg_backend b);
/* "c", "opencl", "cuda" -> 0 and *out; -1 if unknown. */
int cg_backend_parse(const char *name, cg_backend *out);

#endif
