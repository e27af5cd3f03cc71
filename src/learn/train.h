/*
 * train.h - training the learned cost model (nn.h) on measured schedules:
 * a dataset of featurized samples grouped by pipeline, the loss of Adams
 * et al. 2019 (squared error of relative throughput, each minibatch's
 * times taken relative to its fastest sample), Adam over minibatches of up
 * to 64 schedules of one pipeline, and the ranking metrics (pairwise
 * accuracy, Spearman's rho) per pipeline.  docs/costmodel.md.
 *
 * A dataset holds, per stage row, the network's inputs: the schedule
 * features as log(1 + x), the cost terms (costmodel.h) for the target the
 * sample was featurized for, and an index into a table of distinct
 * algorithm feature vectors (a pipeline's stages share theirs across its
 * schedules).  Samples whose features or time are absurd (NaN, infinite,
 * negative, above TRAIN_ABSURD) are rejected with a count.
 *
 * Training is deterministic in its seed (one thread, fixed order).
 */
#ifndef SC_TRAIN_H
#define SC_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "costmodel.h"
#include "nn.h"

#define TRAIN_ABSURD 1e14
#define TRAIN_MAX_MS 1e7              /* 10^4 s: no measured sample runs that long */
#define TRAIN_BATCH 64
/* Kernels of a sample the per-kernel loss takes (STORE_MAX_KERNEL_TIMES,
 * store.h: as many as the store keeps). */
#define TRAIN_MAX_KERNELS 256
/* Pairs whose times differ by more than this factor are "apart": beyond
 * the 10% within which the in-turn rule takes a measurement's ratios to
 * agree (docs/samples.md), so that their order is the measurement's and
 * not its noise. */
#define TRAIN_APART 1.1

typedef enum { TRAIN_ROLE_TRAIN, TRAIN_ROLE_VALID, TRAIN_ROLE_SKIP } train_role;

/* The training loss: Adams et al.'s relative throughput alone, or with a
 * pairwise ranking term added (train_batch_loss). */
typedef enum { TRAIN_LOSS_THROUGHPUT, TRAIN_LOSS_RANK } train_loss;

typedef struct {
    char *name, *source, *hash;       /* source: "app:harris", "random:seed=3" */
    train_role role;
} train_pipe;

typedef struct {
    int pipe;
    double ms;
    int row0, nrows;
    int kern0, nkern;                 /* its kernels' measured shares in kern_share (nkern 0: none) */
} train_sample;

typedef struct {
    int npipes, nsamples, nrows, nalgo;
    train_pipe *pipes;
    train_sample *samples;
    int *row_algo;                    /* per row: its algorithm vector */
    double *sched;                    /* nrows x NN_SCHED_IN */
    double *terms;                    /* nrows x NN_COEF */
    double *algo;                     /* nalgo x NN_ALGO_IN */
    int *algo_pipe;                   /* the pipeline of each algorithm vector */
    /* Each kernel's time alone (train_data_add_kernels): per row, the
     * index of its kernel among its sample's (-1: the sample has none);
     * per kernel, its share of the sample's kernel times. */
    int *row_kernel;
    double *kern_share;
    char **kern_name;                 /* per kernel, "FUNC.STAGE" (NULL: not given) */
    int nkern, capk;
    int capp, caps, capr, capa;
    int64_t kernel_samples;           /* samples with kernel times attached */
    int64_t kernel_unmatched;         /* samples whose kernel times name kernels their
                                         feature rows do not (left without them) */
    /* what was left out, and why */
    int64_t rejected_features, rejected_time, rejected_input, held_out;
    int64_t rejected_staged;      /* a CPU's, of code with register staging (train_load.h) */
    int64_t rejected_unrolled;    /* of code with loops rolled that are unrolled now (train_load.h) */
    int64_t rejected_division;    /* of code that divided by a power of two with a helper (train_load.h) */
    int64_t rejected_private;     /* of code reading private arrays otherwise (train_load.h) */
    int64_t rejected_interior;    /* a CPU's OpenCL code with interior blocks in a branch (train_load.h) */
    int64_t rejected_minmax;      /* a CPU's OpenCL code calling OpenCL's fmin or fmax (train_load.h) */
    int64_t rejected_scan;        /* of code running a scan's reduction inside a tile of several points */
    int64_t rejected_square;      /* of code calling pow for a square (train_load.h) */
    int64_t rejected_merged;      /* of code reading more than three threaded loops
                                     from a flat index (train_load.h) */
    int64_t rejected_cold;        /* timed once against a cold reference (train_load.h) */
    int64_t rejected_order;       /* measured before the reduction order changed (train_load.h) */
    int64_t rejected_generation;  /* code older than train_load_opts.min_generation */
    int64_t rejected_rows_apart;  /* a CPU's OpenCL code indexing rows by a sum (train_load.h) */
    int64_t kept_rows_apart;      /* kept: the same at the edges only (train_load.h) */
    int64_t kept_conversions;     /* kept: f32-to-integer helpers with branches (train_load.h) */
    int64_t kept_changed;         /* kept: timed code that changed since, as
                                     train_load_opts.keep_changed asks */
    int64_t rejected_pointer_selects; /* a CPU's OpenCL code selecting between loads (train_load.h) */
    int64_t rejected_narrow_splits;   /* a CPU's OpenCL code with a small kernel's guarded narrow
                                         store beside its interior (train_load.h) */
    int64_t rejected_private_picks;   /* OpenCL code reading a private array at an index with a
                                         block's coordinate in it (train_load.h) */
    int64_t rejected_guarded_mins;    /* OpenCL code reading a private array inside a guard at an
                                         index printed whole for a clamped min (train_load.h) */
    int64_t rejected_partial_guards;  /* code whose interior a guard's conjuncts now decide
                                         otherwise (train_load.h) */
    int64_t rejected_longer_unrolls;  /* code with loops rolled that generation 24 unrolls
                                         (train_load.h) */
    int64_t rejected_data_picks;      /* OpenCL code reading a private array at an index computed
                                         from data (train_load.h) */
    char device[NN_DEVICE_MAX];       /* the device key of the samples ("" mixed or unknown) */
} train_data;

void train_data_init(train_data *d);
void train_data_free(train_data *d);
/* Per pipeline (group) of d, whether it has samples: an array of npipes
 * flags, freed by the caller (a pipeline whose samples were all rejected
 * has none). */
char *train_pipes_with_samples(const train_data *d);
/* The groups of d that have samples, and the pipelines they belong to (a
 * pipeline's groups are consecutive: train_load.h). */
void train_count_groups(const train_data *d, int *pipelines, int *groups);
/* A new pipeline; its index. */
int train_data_pipeline(train_data *d, const char *name, const char *source, const char *hash);
/* A sample of pipeline `pipe`: its features (every stage of a complete
 * state) for target t and its time.  1 when added, 0 when rejected (and
 * counted in rejected_features or rejected_time). */
int train_data_add(train_data *d, int pipe, const feat_result *r, const target *t, double ms);
/* Attaches each kernel's time alone to the sample added last: ms[0..nk)
 * the kernels' times, row_kernel[i] the kernel of the sample's row i (its
 * feature row i).  They are kept as shares of their sum.  1 when
 * attached; 0 when not: fewer than two kernels (a share of 1 says
 * nothing), a row of no kernel or a kernel of no row, or times that are
 * not positive and finite (counted in kernel_unmatched but for the
 * first). */
int train_data_add_kernels(train_data *d, const int *row_kernel, const double *ms, int nk);
/* The same with each kernel's name ("FUNC.STAGE"; names may be NULL), kept
 * for train_worst_kernels. */
int train_data_add_named_kernels(train_data *d, const int *row_kernel, const double *ms, const char *const *names,
                                 int nk);

/* Validation pipelines chosen by hash: a pipeline whose hash (FNV-1a of
 * its hash text, else its name) modulo 100 falls in the window of
 * `percent` values starting at fold x percent (modulo 100) is
 * TRAIN_ROLE_VALID, every other one TRAIN_ROLE_TRAIN.  Fold 0 is the
 * first `percent` of 100; folds 0, 1, ... of one percent hold out
 * disjoint sets of pipelines (until they wrap past 100), so models
 * trained on different folds see different data (a mean of them is a
 * cross-validation ensemble). */
void train_split_by_hash(train_data *d, int percent, int fold);
/* The first hash value (modulo 100) of fold's validation window of
 * `percent` values; the window runs to (start + percent - 1) % 100. */
int train_fold_start(int percent, int fold);
/* Pipelines whose source is "app:NAME" for a NAME in names: role r. */
int train_set_role_of_apps(train_data *d, int n, const char *const *names, train_role r);

typedef struct {
    int epochs;
    uint64_t seed;
    double lr;                        /* Adam's step, 1e-3 by default */
    double anneal;                    /* the last fraction of the epochs whose step falls
                                         linearly from lr to lr / 20 (0.2 by default) */
    double reg;                       /* weight of the dead-coefficient regularizer (1e-5) */
    double weight_decay;              /* decoupled weight decay per step, times the step size (0: none) */
    int batch;                        /* schedules per minibatch, at most TRAIN_BATCH */
    train_loss loss;
    bool fine_tune;                   /* m holds weights to start from (term scales kept) */
    bool intensive;                   /* coefficients from the intensive schedule inputs
                                         alone (nn_drop_extensive_inputs) */
    double floor_quantile;            /* of the rates, for the floors (TRAIN_FLOOR_QUANTILE) */
    bool gather_floor;                /* set the gather floor too (false by default) */
    double kernel_loss;               /* weight of the per-kernel loss (train_batch_loss; 0: none) */
    bool progress;                    /* a progress bar on stderr (when it is a terminal) */
    FILE *log;                        /* one line per epoch, or NULL */
} train_opts;
void train_opts_default(train_opts *o);
/* Adam's step in epoch e (1 .. o->epochs): o->lr, annealed over the last
 * o->anneal of the epochs to o->lr / 20. */
double train_step_size(const train_opts *o, int e);

/* Ranking figures of one pipeline's (or a set's) predictions. */
typedef struct {
    int64_t pairs, correct;           /* pairs of samples with different times; ordered right */
    int64_t pairs_apart, correct_apart; /* the same, of pairs measured more than TRAIN_APART apart */
    double rho;                       /* Spearman's rho (NAN for fewer than 2 samples) */
    double best_ms;                   /* measured time of the sample predicted fastest */
    double min_ms;                    /* the fastest measured sample */
} train_rank;
void train_rank_of(int n, const double *pred, const double *ms, train_rank *out);

typedef struct {
    int samples, pipelines;
    double loss;                      /* mean per sample (without the regularizer) */
    double pairwise;                  /* correct / pairs over the pipelines */
    double rho;                       /* mean over pipelines of >= 3 samples, weighted by samples */
    int kernel_samples;               /* samples with kernel times */
    double kernel_divergence;         /* their mean per-kernel loss (train_kernel_divergence; NAN: none) */
} train_metrics;

/* The predicted ms of every sample (pred: d->nsamples). */
void train_predict_all(const train_data *d, const nn_model *m, double *pred);
/* The measurement-drift check (bench_costmodel): each sample "predicted"
 * by the median time of up to w samples of its pipeline before it and w
 * after it in the dataset's order, itself left out (0 when it has no
 * neighbour).  The order is the store's, measurement id within a pipeline,
 * i.e. the order of measurement for a database that collect wrote (not for
 * one imported from an exchange file, whose records are sorted by
 * schedule text).  It knows nothing of the schedules, so where it ranks a
 * pipeline's samples better than chance their times carry the machine's
 * load at the moment they were measured.  docs/costmodel.md. */
void train_neighbour_predict(const train_data *d, int w, double *pred);
/* The kernels the model prices furthest under their share: of the
 * samples of role r with kernel times, the n kernels with the largest
 * terms m log(m / q) of the per-kernel loss (m the measured share, q the
 * predicted one), largest first, in out[0 .. count); the count. */
typedef struct {
    int sample, kernel;               /* the sample, and its kernel's index among its kernels */
    double measured, predicted;       /* the shares */
    double term;                      /* m log(m / q) */
} train_kernel_miss;
int train_worst_kernels(const train_data *d, const nn_model *m, train_role r, int n, train_kernel_miss *out);
/* The metrics over the pipelines of role r. */
train_metrics train_evaluate(const train_data *d, const nn_model *m, train_role r);
/* One pipeline's figures (stagecraft train --evaluate): samples (0: not of
 * the role, or none), pairwise accuracy (NAN without pairs), Spearman's
 * rho (NAN under 3 samples), the measured time of the sample predicted
 * fastest over the fastest measured (1: the model picks the best), and
 * the mean per-kernel loss of its samples with kernel times (NAN: none). */
typedef struct {
    int samples;
    double pairwise, rho, pick_over_best;
    int kernel_samples;
    double kernel_divergence;
} train_pipe_metrics;
/* train_evaluate, and (each not NULL) each pipeline's figures in
 * each[0 .. d->npipes). */
train_metrics train_evaluate_pipes(const train_data *d, const nn_model *m, train_role r, train_pipe_metrics *each);

/* The per-kernel loss of one sample with kernel times: the Kullback-
 * Leibler divergence of the predicted shares from the measured ones,
 * sum_k m_k log(m_k / q_k), where q_k is the sum of the predicted costs
 * of kernel k's rows over that of all rows (cost: the sample's rows'
 * costs).  With dcost, adds w times its gradient to dcost[0..nrows). */
double train_kernel_divergence(const train_data *d, const train_sample *sm, const double *cost, double w,
                               double *dcost);

/* The loss of one minibatch (samples idx[0..n) of one pipeline): the mean
 * relative-throughput loss (with kind TRAIN_LOSS_RANK plus the mean
 * pairwise ranking loss), plus kernel_loss times the mean per-kernel
 * loss over the batch's samples (those without kernel times add 0), plus
 * reg times the regularizer; with grad
 * (NN_NPARAMS, zeroed by the caller) adds its gradient.  Exposed for the
 * gradient check.  The validation loss is always TRAIN_LOSS_THROUGHPUT's. */
double train_batch_loss(const train_data *d, const nn_model *m, const int *idx, int n, double reg,
                        train_loss kind, double kernel_loss, double *grad);

/* Sets m's term scales and log-scale from the training rows (1 / the mean
 * of each term, and the median ratio of time to unscaled prediction). */
void train_calibrate(const train_data *d, nn_model *m);

/* The instruction floor (nn.h) the training pipelines' samples allow: ms
 * per instruction at quantile q of their rates (the instructions of terms
 * 30 + 31 summed over a sample's stages, over its measured time), so that
 * the floor predicts at most a share 1 - q of the samples slower than
 * measured (TRAIN_FLOOR_QUANTILE, the default: one in a thousand, and for
 * fewer than a thousand samples, none).  A quantile and not the fastest
 * rate, because the op counts are the source's and a compiler folds some
 * of them away.  0 without samples. */
#define TRAIN_FLOOR_QUANTILE 0.999
double train_instruction_floor(const train_data *d, double q);
/* The gather floor (nn.h) likewise: ms per gather of term 10 at quantile
 * q of the rates of the training samples that gather at all. */
double train_gather_floor(const train_data *d, double q);

/* Trains m on the TRAIN_ROLE_TRAIN pipelines (from nn_init(seed), or from
 * m itself when fine-tuning), printing per epoch the training and
 * validation loss, pairwise accuracy and rho.  The instruction and the
 * gather floors are the training samples' (train_instruction_floor,
 * train_gather_floor; no gather floor without o->gather_floor); a
 * fine-tuned model keeps its own where that is lower, and none where it
 * had none.  The
 * final metrics in *train and *valid (may be NULL).  0, or -1 with err (no
 * training samples). */
int train_run(const train_data *d, nn_model *m, const train_opts *o, train_metrics *train, train_metrics *valid,
              char *err, size_t errlen);

/* A one-line summary of the dataset for the weights file and the log. */
void train_summary(const train_data *d, const train_opts *o, const train_metrics *valid, char *buf, size_t len);

/* The least-squares baseline of bench_costmodel: fixed coefficients for
 * the Appendix B terms, fitted on the training pipelines minimizing the
 * squared relative error of each sample's time (ridge-regularized normal
 * equations).  coef: NN_COEF (0 for unused terms); pred as
 * train_predict_all.  0, or -1 when there is nothing to fit. */
int train_lsq_fit(const train_data *d, double *coef);
void train_lsq_predict(const train_data *d, const double *coef, double *pred);

#endif
