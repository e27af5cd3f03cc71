/*
 * nn.h - the small network of the learned cost model (Anderson et al. 2021
 * §7.2, Appendix B; sizes after Halide's anderson2021 cost model): per
 * stage, it turns the stage's features into NN_COEF non-negative
 * coefficients that weight hand-derived cost terms (costmodel.h computes
 * the terms); the stage costs sum to a state's predicted time.
 * docs/costmodel.md has the sizes, the formula and the weights format.
 *
 *   algorithm features a (op histogram + access classes, raw counts)
 *       e1 = b1 + sigmoid(W1) a                 NN_H1 wide, positive weights
 *   schedule features s (every FEAT_SCHED entry), log(1 + s)
 *       e2 = relu(b2 + W2 log(1 + s))           NN_H2 wide
 *   z = b3 + W3 [e1; e2],  coef = relu(z)       NN_COEF wide
 *   stage cost = max(sum_k coef_k * term_k * term_scale_k,
 *                    (term_30 + term_31) * floor_ms / exp(log_scale),
 *                    term_10 * gather_floor_ms / exp(log_scale))
 *   state time (ms) = exp(log_scale) * sum over its stages of stage cost
 *
 * term_scale is fixed when training starts (1 / the mean of each term over
 * the training rows) so that every coefficient starts near 1 whatever its
 * term's unit; log_scale is trained.  floor_ms, the instruction floor, is
 * not trained: no stage is predicted faster than floor_ms per instruction
 * it executes (terms 30 and 31, the arithmetic and the loads of its body,
 * inline producers' included), a rate taken from the training samples
 * (train_instruction_floor) so that the network cannot extrapolate a
 * schedule that multiplies the work (inlining a stencil into a stencil) to
 * near zero cost.  gather_floor_ms, the gather floor (train
 * --gather-floor; off by default), is the same for the gathers of term
 * 10 (a load or store per lane where a CPU vectorizes across threads whose
 * addresses are not consecutive): the network can kill that term's
 * coefficient, and a schedule whose every point gathers and scatters
 * through local memory ran 27x slower than the instruction floor alone
 * priced it (docs/costmodel.md).  0: no floor.  All arithmetic is in
 * double: one path for inference, training and the gradient check.
 *
 * Parameters are one flat array of NN_NPARAMS doubles with named slices
 * (NN_OFF_*); matrices are stored input-major (W[i][o] at i * outputs + o)
 * so that the inner loops run over outputs and vectorize.
 */
#ifndef SC_NN_H
#define SC_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "features.h"

/* The algorithm features are the op histogram and the FEAT_ALGO entries
 * at the head of FEAT_LIST; every entry from num_realizations on is a
 * schedule feature (tests/test_nn.c checks the kinds). */
#define NN_ALGO_IN FEAT_AT(FEAT_num_realizations)
#define NN_SCHED_IN (FEAT_COUNT - NN_ALGO_IN)
#define NN_H1 8
#define NN_H2 24
#define NN_COEF 32
/* Bumped whenever the cost terms (costmodel.c) or the inputs change
 * meaning: it enters the layout hash, so older weights files are refused.
 * 2: a stage's operation counts include those of the inline Funcs it
 * expands.  3: on a CPU target a warp's memory transactions are the
 * distinct sectors it touches over its iterations (feat_warp.h).  4: terms
 * 30 and 31, the arithmetic and load instructions the stage executes.
 * 5: term 10, the gathers (feature vector_gathers_per_point).  6:
 * unrolled_loop_extent counts a reduction whose loops lowering unrolls one
 * by one (it read 1 where their product passed the limit), and the warp
 * transactions count such loops as unrolled (nest_serial_loops_unrolled).
 * 7: terms 30, 31 and 10 count the points computed, not num_scalars (which
 * includes the iterations a guard skips).  (8 was tried and not kept.)
 * 9: an inline Func's operations count once per distinct call (by the
 * forms of its arguments), a stage's loads once per distinct access, and
 * inlined_calls the distinct calls: what the compiler leaves of an
 * expression tree that repeats them (feat_access.h); and a subtree of
 * constants counts as one constant (ops_count), as the compiler folds it.
 * 10 was tried twice and not kept (thread_rows_per_block; math_cost).
 * 11: a division or remainder by a constant counts as the shift, mask or
 * multiply-high the compiler emits for it (ops_const_division). */
#define NN_TERMS_VERSION 11

/* Terms 30 and 31: the arithmetic and the load instructions a stage
 * executes (costmodel.c); their sum is what the instruction floor prices. */
#define NN_TERM_ARITH 30
#define NN_TERM_LOADS 31
static inline double nn_instructions(const double *terms) {
    return terms[NN_TERM_ARITH] + terms[NN_TERM_LOADS];
}
/* Term 10, the gathers a stage executes: what the gather floor prices. */
#define NN_TERM_GATHERS 10
static inline double nn_gathers(const double *terms) { return terms[NN_TERM_GATHERS]; }

#define NN_OFF_W1 0                                      /* [NN_ALGO_IN][NN_H1], squashed by a sigmoid */
#define NN_OFF_B1 (NN_OFF_W1 + NN_ALGO_IN * NN_H1)
#define NN_OFF_W2 (NN_OFF_B1 + NN_H1)                   /* [NN_SCHED_IN][NN_H2] */
#define NN_OFF_B2 (NN_OFF_W2 + NN_SCHED_IN * NN_H2)
#define NN_OFF_W3 (NN_OFF_B2 + NN_H2)                   /* [NN_H1 + NN_H2][NN_COEF] */
#define NN_OFF_B3 (NN_OFF_W3 + (NN_H1 + NN_H2) * NN_COEF)
#define NN_OFF_SCALE (NN_OFF_B3 + NN_COEF)              /* log_scale */
#define NN_NPARAMS (NN_OFF_SCALE + 1)

/* A model: trained parameters, the fixed term scales and what the
 * weights file says about where they come from. */
#define NN_DEVICE_MAX 256
#define NN_SUMMARY_MAX 1024
typedef struct {
    double w[NN_NPARAMS];
    double term_scale[NN_COEF];
    double floor_ms;                  /* ms per instruction of terms 30 + 31 (0: no floor) */
    double gather_floor_ms;           /* ms per gather of term 10 (0: no gather floor) */
    char device[NN_DEVICE_MAX];       /* the device key trained for ("" unknown) */
    char summary[NN_SUMMARY_MAX];     /* the training set, one line */
} nn_model;

/* Random initial weights (deterministic in seed), term scales 1. */
void nn_init(nn_model *m, uint64_t seed);

/* Whether schedule input k (0 .. NN_SCHED_IN - 1) is extensive: a total
 * that grows with the pipeline's size where the stage is at root (points,
 * bytes, blocks, realizations and productions, per-realization footprints
 * and allocations, the innermost pure loop's extent).  The others are per
 * point, per thread, per block or ratios. */
bool nn_sched_input_extensive(int k);
/* Zeroes the W2 rows of the extensive schedule inputs: the coefficients
 * then depend on the intensive inputs alone, and a stage's cost grows with
 * the size only through its terms (train --intensive, docs/costmodel.md). */
void nn_drop_extensive_inputs(nn_model *m);
/* Whether some W2 row of an extensive schedule input is not zero (false:
 * weights trained with --intensive, which fine-tuning keeps so). */
bool nn_uses_extensive_inputs(const nn_model *m);

/* The hash of the input layout: every feature's name and kind, the
 * network's sizes and NN_TERMS_VERSION. */
uint64_t nn_layout_hash(void);

/* Rows to evaluate: per row its raw algorithm features (NN_ALGO_IN),
 * log(1 + x) of its schedule features (NN_SCHED_IN) and its cost terms
 * (NN_COEF, unscaled). */
typedef struct {
    int n;
    const double *const *algo;        /* n pointers */
    const double *sched;              /* n x NN_SCHED_IN */
    const double *terms;              /* n x NN_COEF */
} nn_rows;

/* What the forward pass keeps for the backward pass, for up to cap rows. */
typedef struct {
    int cap;
    double sw1[NN_ALGO_IN * NN_H1];   /* sigmoid(W1) */
    double *e1, *e2, *z;              /* per row: NN_H1, NN_H2, NN_COEF */
    unsigned char *floored;           /* per row: its cost is a floor (NN_FLOOR_*, 0: the network's) */
} nn_tape;
void nn_tape_init(nn_tape *t);
void nn_tape_reserve(nn_tape *t, int rows);
void nn_tape_free(nn_tape *t);

/* Which floor a row's cost is (nn_tape.floored). */
enum { NN_FLOOR_NONE, NN_FLOOR_INSTRUCTIONS, NN_FLOOR_GATHERS };
/* cost[r] = the cost of row r in the model's units (before exp(log_scale)),
 * the floors included.  With a tape (reserved for r.n rows)
 * keeps what nn_backward needs.  A floored row's cost does not depend on
 * the network, and its share of the state's time not on log_scale. */
void nn_forward(const nn_model *m, const nn_rows *r, nn_tape *t, double *cost);
/* Adds to grad (NN_NPARAMS) the gradient of sum_r dcost[r] * cost[r] +
 * reg * sum_r sum_k max(-z_rk, 0) for the rows of the last nn_forward with
 * tape t, log_scale held (the caller adds its part).  The regularizer
 * (Halide's) pulls dead coefficients back. */
void nn_backward(const nn_model *m, const nn_rows *r, const nn_tape *t, const double *dcost, double reg,
                 double *grad);
/* sum over the rows of sum_k max(-z_rk, 0), after nn_forward with t. */
double nn_reg_value(const nn_tape *t, int n);

/* Inference in two parts, for callers that see one stage's algorithm
 * features many times (costmodel.c caches the first part per stage):
 * part = b3 + W3[:NN_H1] e1 from the algorithm features (sw1 =
 * nn_squash's), then the row's cost from part, its log(1 + schedule
 * features) and its terms. */
void nn_squash(const nn_model *m, double *sw1);
/* The network's schedule input of a feature vector (FEAT_COUNT):
 * log(1 + x) of each schedule feature (0 for x <= 0). */
void nn_sched_inputs(const double *v, double *sched_log);
void nn_algo_part(const nn_model *m, const double *sw1, const double *algo, double *part);
double nn_row_cost(const nn_model *m, const double *part, const double *sched_log, const double *terms);

/* Adam (Kingma & Ba), beta1 0.9, beta2 0.999, epsilon 1e-8. */
typedef struct {
    double m[NN_NPARAMS], v[NN_NPARAMS];
    int64_t t;
} nn_adam;
void nn_adam_init(nn_adam *a);
void nn_adam_step(nn_model *m, nn_adam *a, const double *grad, double lr);
/* Decoupled weight decay: the three layers' weights (not their biases nor
 * the log scale) multiplied by 1 - f, pulling every stage's coefficients
 * towards the same values (train_opts.weight_decay). */
void nn_decay_weights(nn_model *m, double f);

/* The weights file (docs/costmodel.md): a header (magic, format version,
 * layout hash, device key, training summary), the parameters and the term
 * scales, and a checksum.  0, or -1 with a message naming the file. */
#define NN_FORMAT_VERSION 3       /* 2 added floor_ms, 3 gather_floor_ms; older files load without */
int nn_save(const nn_model *m, const char *path, char *err, size_t errlen);
int nn_load(nn_model *m, const char *path, char *err, size_t errlen);

#endif
