# tern — CPU build (C11). `make` builds ./tern; `make run` fetches the default model and generates;
# `make test` installs what the tests need and runs them. No CUDA anywhere in this build.
CC      ?= cc
# -ffp-contract=off: no silent FMA contraction, so the scalar and SIMD paths keep one rounding order.
# No -march: the binary runs on any x86-64; AVX2/FMA kernels are chosen at run time (src/quant.c).
OPT     ?= -O2 -g
CFLAGS  ?=
override CFLAGS += $(OPT) -std=c11 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -D_GNU_SOURCE -Iinclude -Isrc
LDLIBS  += -lpcre2-8 -lpthread -lm
SAN     ?=
BUILD   ?= build

SRCS    := $(wildcard src/*.c)
OBJS    := $(patsubst src/%.c,$(BUILD)/%.o,$(SRCS))
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_*.c))

MODEL   ?= models/SmolLM2-135M-Instruct.Q4_1.gguf
PROMPT  ?= Once upon a time

.PHONY: all deps test-deps model run test clean asan-test
all: tern $(TESTS)

$(BUILD)/%.o: src/%.c $(wildcard src/*.h include/*.h) | $(BUILD)
	$(CC) $(CFLAGS) $(SAN) -c $< -o $@

$(BUILD)/libtern.a: $(OBJS)
	ar rcs $@ $^

CLI_SRCS := $(wildcard cli/*.c)
tern: $(CLI_SRCS) cli/commands.h $(BUILD)/libtern.a
	$(CC) $(CFLAGS) $(SAN) -Icli $(CLI_SRCS) -o $@ $(BUILD)/libtern.a $(LDLIBS)

$(BUILD)/tests/%: tests/%.c tests/check.h $(BUILD)/libtern.a | $(BUILD)/tests
	$(CC) $(CFLAGS) $(SAN) $< -o $@ $(BUILD)/libtern.a $(LDLIBS)

$(BUILD) $(BUILD)/tests:
	mkdir -p $@

deps:
	@scripts/deps.sh build

test-deps:
	@scripts/deps.sh test

model: $(MODEL)
models/SmolLM2-135M-Instruct.Q4_1.gguf:
	@scripts/fetch_model.sh

run: deps
	$(MAKE) tern
	$(MAKE) model
	./tern run -m $(MODEL) -p "$(PROMPT)" -n 64 --temp 0

test: test-deps
	$(MAKE) all
	$(MAKE) model
	tests/run.sh

# The parsers (GGUF reader, tokenizer) under AddressSanitizer + UBSan on corrupted and hostile input.
ASAN_TESTS := test_gguf test_badinput test_tokenizer
asan-test: test-deps model
	$(MAKE) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  OPT="-O1 -g" $(addprefix build-asan/tests/,$(ASAN_TESTS))
	@set -e; for t in $(ASAN_TESTS); do [ -x build-asan/tests/$$t ] && build-asan/tests/$$t; done

clean:
	rm -rf build build-asan tern
