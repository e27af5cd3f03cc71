# stagecraft - see README.md.  `make demo`, `make test`.
CC      ?= cc
CFLAGS  ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Iinclude -Isrc
LDLIBS  = -lpng -lm
BUILD  ?= build

LIB_SRCS  = $(filter-out src/main.c,$(wildcard src/*.c))
LIB_OBJS  = $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
TEST_SRCS = $(wildcard tests/test_*.c)
TEST_BINS = $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

.PHONY: all deps demo test asan fuzz clean
all: $(BUILD)/stagecraft $(TEST_BINS) $(BUILD)/example_blur

deps:
	@bash scripts/install-deps.sh

$(BUILD)/obj/%.o: src/%.c $(wildcard src/*.h) include/stagecraft.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libstagecraft.a: $(LIB_OBJS)
	ar rcs $@ $^

$(BUILD)/stagecraft: src/main.c $(BUILD)/libstagecraft.a
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/%.c tests/check.h $(BUILD)/libstagecraft.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

$(BUILD)/example_blur: examples/blur.c $(BUILD)/libstagecraft.a
	$(CC) $(CFLAGS) $< $(BUILD)/libstagecraft.a $(LDLIBS) -o $@

demo: deps all
	./$(BUILD)/stagecraft run apps/harris.pipe -o out=$(BUILD)/harris.png

test: deps all
	@bash tests/run.sh $(BUILD)

asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" all
	@ASAN_OPTIONS=detect_leaks=1 bash tests/run.sh build-asan

clean:
	rm -rf build build-asan build-fuzz
