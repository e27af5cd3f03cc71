# stagecraft - see README.md.  `make demo`, `make test`.
CC      ?= cc
CFLAGS  ?= -O2 -g
SRC_DIRS = $(sort $(dir $(wildcard src/*/*.c src/*/*.h)))
# -ffp-contract=off: the reference evaluator must not fuse a * b + c (clang
# would by default), or generated code could not match it bit for bit.
override CFLAGS += -fopenmp -std=c11 -D_GNU_SOURCE -ffp-contract=off -Wall -Wextra -Wpedantic -Iinclude $(addprefix -iquote ,$(SRC_DIRS))
LDLIBS  = -lsqlite3 -llzma -lpng -lm -ldl -lpthread
BUILD  ?= build

LIB_SRCS  = $(wildcard src/*/*.c)
LIB_OBJS  = $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
TEST_SRCS = $(wildcard tests/test_*.c)
TEST_BINS = $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

.PHONY: FORCE all deps demo test asan fuzz fuzz-schedules train train-cuda holdout-weights clean
all: $(BUILD)/stagecraft $(TEST_BINS) $(BUILD)/example_blur $(BUILD)/bench_schedules $(BUILD)/bench_nest \
     $(BUILD)/bench_costmodel $(BUILD)/bench_autosched $(BUILD)/bench_oneshot

deps:
	@bash scripts/install-deps.sh

$(BUILD)/obj/%.o: src/%.c $(wildcard src/*/*.h) include/stagecraft.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The version stored with every sample: git describe, rewritten only when
# it changes, so that store.o is rebuilt then and only then.
SC_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/version.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define SC_VERSION "$(SC_VERSION)"' > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(BUILD)/obj/store/store.o: $(BUILD)/version.h
$(BUILD)/obj/store/store.o: override CFLAGS += -include $(BUILD)/version.h
FORCE:

$(BUILD)/libstagecraft.a: $(LIB_OBJS)
	ar rcs $@ $^

$(BUILD)/stagecraft: src/main.c $(BUILD)/libstagecraft.a
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c $(wildcard tests/*.h) $(BUILD)/libstagecraft.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

$(BUILD)/bench_%: bench/bench_%.c $(BUILD)/libstagecraft.a
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

$(BUILD)/example_blur: examples/blur.c $(BUILD)/libstagecraft.a
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

# The main job on a bundled app: the reference evaluator writes the output
# image; then the baseline schedule runs on the best device found, is
# checked against the reference and timed.
DEMO_APP ?= unsharp
demo: deps all
	./$(BUILD)/stagecraft run apps/$(DEMO_APP).pipe -o $(BUILD)/$(DEMO_APP).png
	./$(BUILD)/stagecraft bench apps/$(DEMO_APP).pipe --strategy baseline --dump=schedule --samples 3 --runs 3
	./$(BUILD)/stagecraft bench apps/$(DEMO_APP).pipe --strategy oneshot --dump=schedule --samples 3 --runs 3

# Random schedules of every app on the C and OpenCL back ends, checked
# against the reference, their CUDA compiled for sm_80 and sm_90; SEEDS=N
# (or a-b, or a,b,c), APPS=a,b, BACKENDS=c,opencl,cuda, JOBS=N apps at once
# (default: the core count).
SEEDS ?= 30
fuzz-schedules: all
	SEEDS=$(SEEDS) CUDA_SEEDS=1000 bash tests/fuzz_schedules.sh $(BUILD)

# The learned cost model's weights (docs/costmodel.md) from the committed
# dataset; TRAIN_DEVICE=KEY keeps one device's samples, TRAIN_EPOCHS=N;
# only samples of code of generation TRAIN_MIN_GENERATION or newer (the
# older code ran schedules too differently), 150 epochs of them (more
# over-fit the held-out apps' ranking: docs/costmodel.md).  TRAIN_SEEDS
# models, seeds 1 .. N: weights/pocl.weights, then pocl-2.weights and so
# on, whose mean the searches predict with (docs/costmodel.md, "A mean of
# models").
# TRAIN_DATA: the exchange files trained on, as one set: the AMD EPYC's
# and the Intel Xeon's samples (docs/autosched_runs_4.md, the fifty-ninth
# run).
TRAIN_DATA ?= data/samples.txt.xz data/samples_xeon.txt.xz
TRAIN_DATA_ARGS = $(foreach f,$(TRAIN_DATA),--data $(f))
TRAIN_EPOCHS ?= 150
TRAIN_DEVICE ?=
TRAIN_MIN_GENERATION ?= 2
TRAIN_SEEDS ?= 6
# The per-kernel loss's weight (train --kernel-loss; 0: none): 10, where
# it starts to count beside the pipeline loss (docs/costmodel.md)
TRAIN_KERNEL_LOSS ?= 10
TRAIN_KERNEL_ARGS = $(if $(filter-out 0,$(TRAIN_KERNEL_LOSS)),--kernel-loss $(TRAIN_KERNEL_LOSS))
train: $(BUILD)/stagecraft
	@mkdir -p weights
	@rm -f weights/pocl-[0-9]*.weights
	@for s in $$(seq 1 $(TRAIN_SEEDS)); do \
		o=weights/pocl.weights; [ $$s = 1 ] || o=weights/pocl-$$s.weights; \
		echo "train seed $$s -> $$o"; \
		./$(BUILD)/stagecraft train $(TRAIN_DATA_ARGS) -o $$o --epochs $(TRAIN_EPOCHS) \
			--seed $$s --min-generation $(TRAIN_MIN_GENERATION) $(if $(TRAIN_DEVICE),--device '$(TRAIN_DEVICE)') \
			$(TRAIN_KERNEL_ARGS) || exit 1; \
	done

# The CUDA GPUs' own model, the default weights for a CUDA target: trained
# on the samples measured on lent GPU machines (data/samples_gpu.txt.xz,
# every generation: there are few), 300 epochs from scratch.
CUDA_TRAIN_EPOCHS ?= 300
train-cuda: $(BUILD)/stagecraft
	@mkdir -p weights
	./$(BUILD)/stagecraft train --data data/samples_gpu.txt.xz -o weights/cuda.weights \
		--epochs $(CUDA_TRAIN_EPOCHS) --seed 1

# Hold-one-app-out weights for bench_autosched --weights-dir: for every
# bundled app, HOLDOUT_DIR/APP.weights trained on the committed dataset
# without that app's samples (18 models from one load of the samples,
# HOLDOUT_JOBS at a time, each with its epochs in HOLDOUT_DIR/APP.log;
# TRAIN_EPOCHS=N to shorten).  HOLDOUT_SEED=N HOLDOUT_DIR=D for the other
# members of a mean of models (bench_autosched --weights-dir D1,D2,...).
HOLDOUT_DIR ?= $(BUILD)/holdout
empty :=
space := $(empty) $(empty)
comma := ,
HOLDOUT_SEED ?= 1
HOLDOUT_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
HOLDOUT_APPS = $(patsubst apps/%.pipe,%,$(wildcard apps/*.pipe))
holdout-weights: $(BUILD)/stagecraft
	./$(BUILD)/stagecraft train $(TRAIN_DATA_ARGS) -o $(HOLDOUT_DIR) --hold-out-each $(subst $(space),$(comma),$(strip $(HOLDOUT_APPS))) \
		--jobs $(HOLDOUT_JOBS) --epochs $(TRAIN_EPOCHS) --seed $(HOLDOUT_SEED) --min-generation $(TRAIN_MIN_GENERATION) \
		$(if $(TRAIN_DEVICE),--device '$(TRAIN_DEVICE)') $(TRAIN_KERNEL_ARGS)

test: deps all
	@bash tests/run.sh $(BUILD)

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer; random
# schedules run on the C back end only (PoCL's LLVM is not built for ASan).
# test_legal walks 10 times per app and test_oneshot draws 40 random
# pipelines here (100 and 200 in make test: about 40 minutes under ASan).
asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" all
	@ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp BACKENDS=c SEEDS=$${SEEDS:-2} WALKS=$${WALKS:-10} RUNS=$${RUNS:-40} \
		bash tests/run.sh build-asan

# libFuzzer on the .pipe front end: a ~45 s smoke run seeded from the apps
# and the bad-input corpus (FUZZ_TIME=600 for a longer one).  Crashes are
# left in build-fuzz/ as crash-* files.
FUZZ_TIME ?= 45
FUZZ_SAN = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz:
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" build-fuzz/libstagecraft.a
	clang $(FUZZ_SAN) -fsanitize=fuzzer -std=c11 -D_GNU_SOURCE -Iinclude $(addprefix -iquote ,$(SRC_DIRS)) tests/fuzz_parse.c \
		build-fuzz/libstagecraft.a $(LDLIBS) -o build-fuzz/fuzz_parse
	@mkdir -p build-fuzz/corpus build-fuzz/seed && cp apps/*.pipe tests/bad/*.pipe build-fuzz/seed/
	cd build-fuzz && ./fuzz_parse -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 \
		-max_len=8192 -dict=../tests/fuzz_parse.dict -print_final_stats=1 corpus seed

clean:
	rm -rf build build-asan build-fuzz
