# tern — CPU build (C11). `make` builds ./tern; `make run` fetches the default model and generates;
# `make test` installs what the tests need and runs them. No CUDA anywhere in this build.
# `make CUDA=1` builds the CUDA backend too (src/backend/cuda/*.cu with nvcc, objects in build-cuda/); the binary
# links the CUDA runtime statically (it loads the driver itself, lazily) and cuBLASLt, never libcuda.
CC      ?= cc
# The source folders (docs/layout.md): core/ (errors, threads, config), format/ (GGUF), model/ (recipes, the
# graph), runtime/ (engine, KV cache, sampler, speculation), backend/cpu, backend/cuda, text/ (tokenizer, chat),
# server/ (tern serve: HTTP, OpenAI JSON, the scheduler, the chat page).
SRC_DIRS := src/core src/format src/model src/runtime src/backend src/backend/cpu src/backend/cuda src/text src/server
INCS    := -Iinclude $(addprefix -I,$(SRC_DIRS))
# -ffp-contract=off: no silent FMA contraction, so the scalar and SIMD paths keep one rounding order.
# No -march: the binary runs on any x86-64; AVX2/FMA kernels are chosen at run time (src/backend/cpu/quant.c).
OPT     ?= -O2 -g
CFLAGS  ?=
override CFLAGS += $(OPT) -std=c11 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -D_GNU_SOURCE $(INCS)
LDLIBS  += -Wl,--as-needed -lpcre2-8 -lmicrohttpd -lcjson -ledit -lpthread -lm
SAN     ?=
CUDA    ?=
ifeq ($(CUDA),1)
BUILD   ?= build-cuda
CUDA_HOME ?= /usr/local/cuda
NVCC    ?= $(CUDA_HOME)/bin/nvcc
# sm_90 (H100/H200) first; sm_80/sm_89 compile-checked. CUDA_ARCHS="-arch=sm_90" for a quick build.
CUDA_ARCHS ?= -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_80,code=sm_80 \
              -gencode=arch=compute_89,code=sm_89
NVFLAGS ?= -O3 -lineinfo
# make CUDA=1 CUDA_DEBUG=1: every kernel launch checked and synchronised, a fault reported at its launch (check.cuh)
ifeq ($(CUDA_DEBUG),1)
override NVFLAGS += -DTERN_CUDA_DEBUG
endif
override CFLAGS += -DTERN_CUDA -I$(CUDA_HOME)/include -I$(CUDA_HOME)/extras/CUPTI/include # (CUPTI: TERN_TIMELINE)
LDLIBS  += -L$(CUDA_HOME)/lib64 -lcublasLt -lcudart_static -ldl -lrt -lstdc++ -Wl,-rpath,$(CUDA_HOME)/lib64
# the four slowest to compile first, so a parallel make starts them before the short ones and the C objects (the
# library from clean 196 -> 179 s on 2 cores: docs/ledger.md 2026-12-07 "the CUDA build's four slowest files first")
CU_SLOW := $(addprefix src/backend/cuda/,gemm_mma.cu attention.cu gemm_hmma.cu gemv_dp4a.cu)
CU_SRCS := $(CU_SLOW) $(filter-out $(CU_SLOW),$(wildcard src/backend/cuda/*.cu))
GPU_TESTS := $(patsubst tests/gpu/%.c,$(BUILD)/gpu/%,$(wildcard tests/gpu/*.c))
else
BUILD   ?= build
CU_SRCS :=
GPU_TESTS :=
endif

SRCS    := $(wildcard $(addsuffix /*.c,$(SRC_DIRS)))
OBJS    := $(patsubst src/%.cu,$(BUILD)/%.o,$(CU_SRCS)) $(patsubst src/%.c,$(BUILD)/%.o,$(SRCS))
HDRS    := $(wildcard include/*.h $(addsuffix /*.h,$(SRC_DIRS)))
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_*.c))

MODEL   ?= models/SmolLM2-135M-Instruct.Q4_1.gguf
PROMPT  ?= Once upon a time

.PHONY: all deps test-deps model run test clean asan-test fuzz
all: tern $(TESTS) $(GPU_TESTS)

$(BUILD)/%.o: src/%.c $(HDRS) | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -c $< -o $@

CU_HDRS := $(wildcard src/backend/cuda/*.h src/backend/cuda/*.cuh src/backend/cpu/quant.h)
$(BUILD)/%.o: src/%.cu $(CU_HDRS) | $(BUILD)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) $(CUDA_ARCHS) -std=c++17 $(INCS) -c $< -o $@

# wgmma (attention_wgmma.cu, gemm_hmma.cu) exists on sm_90a only: those files are built for it whatever CUDA_ARCHS
# says (the attention's launcher runs the sm_80+ kernels on any other device; the f16 order is Hopper's alone).
WG_ARCHS ?= -gencode=arch=compute_90a,code=sm_90a
$(BUILD)/backend/cuda/attention_wgmma.o $(BUILD)/backend/cuda/gemm_hmma.o: $(BUILD)/backend/cuda/%.o: src/backend/cuda/%.cu $(CU_HDRS) | $(BUILD)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) $(WG_ARCHS) -std=c++17 $(INCS) -c $< -o $@

$(BUILD)/gpu/%: tests/gpu/%.c tests/check.h $(BUILD)/libtern.a | $(BUILD)/gpu
	$(CC) $(CFLAGS) -Itests $< -o $@ $(BUILD)/libtern.a $(LDLIBS)

$(BUILD)/libtern.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^

CLI_SRCS := $(wildcard cli/*.c)
# The commit the binary is built at goes into its receipts ("build_commit"; "commit" is the checkout's
# at run time, which differs when a binary is copied to another machine's tree).
GIT_COMMIT := $(shell git describe --always --dirty=-dirty --abbrev=12 2>/dev/null || echo unknown)
# ./tern is shared by the CPU and the CUDA build: a stamp of the configuration relinks it when the other
# build made it last (make CUDA=1, then make, gives the CPU binary back).
BUILD_STAMP := .build-config
$(shell echo "$(BUILD) CUDA=$(CUDA) $(SAN)" | cmp -s - $(BUILD_STAMP) 2>/dev/null || echo "$(BUILD) CUDA=$(CUDA) $(SAN)" > $(BUILD_STAMP))
tern: $(CLI_SRCS) cli/commands.h $(BUILD)/libtern.a $(BUILD_STAMP)
	$(CC) $(CFLAGS) $(SAN) -Icli -DTERN_BUILD_COMMIT='"$(GIT_COMMIT)"' $(CLI_SRCS) -o $@ $(BUILD)/libtern.a $(LDLIBS)

$(BUILD)/tests/%: tests/%.c tests/check.h $(BUILD)/libtern.a | $(BUILD)/tests
	$(CC) $(CFLAGS) $(SAN) $< -o $@ $(BUILD)/libtern.a $(LDLIBS)
# the other models' instances of tests/test_model.c include it
$(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_model_*.c)): tests/test_model.c

$(BUILD) $(BUILD)/tests $(BUILD)/gpu:
	mkdir -p $@

deps:
	@scripts/deps.sh build

test-deps:
	@scripts/deps.sh test

model: $(MODEL)
# the real-model tests' files: the gemma3 recipe's (tests/test_gemma3.c, test_model_gemma3.c), the qwen2 recipe's
# (tests/test_model_qwen2.c). scripts/fetch_model.sh holds each file's source, size and sha256.
REAL_MODELS := models/gemma-3-270m-q4_k_m.gguf models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
models/SmolLM2-135M-Instruct.Q4_1.gguf $(REAL_MODELS):
	@scripts/fetch_model.sh $@

run: deps
	$(MAKE) tern
	$(MAKE) model
	./tern run -m $(MODEL) -p "$(PROMPT)" -n 64 --temp 0

test: test-deps
	$(MAKE) all
	$(MAKE) model $(REAL_MODELS)
	tests/run.sh

# libFuzzer over the server's request path too (tests/fuzz/fuzz_request.c; tests/t_fuzz.sh runs it for a bounded time),
# built the same way against build-fuzz/libtern.a.
FUZZ_CC ?= clang
FUZZ_CORE := gguf tokenizer chat sampler
fuzz: $(addprefix build-fuzz/fuzz/fuzz_,$(FUZZ_CORE) request)

# libFuzzer over the parsers and the sampler (issue 28): tests/fuzz/fuzz_{gguf,tokenizer,chat,sampler}.c against a
# libtern built by clang with coverage instrumentation, ASan and UBSan in build-fuzz/ (the code under test is
# instrumented, not only the harness). tests/t_fuzz_core.sh runs each for seconds in `make test`; scripts/fuzz.sh
# SECONDS runs them longer (FUZZ_CORE, above: `make fuzz` names them before this point).
FUZZ_SAN  := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ifeq ($(BUILD),build-fuzz)
# quant.c's run-time SIMD dispatch (GCC's target builtins) does not build with clang: gcc, uninstrumented, there
build-fuzz/backend/cpu/quant.o: override CC := $(firstword $(filter-out $(FUZZ_CC),cc gcc))
build-fuzz/backend/cpu/quant.o: override SAN :=
else
build-fuzz/libtern.a: $(SRCS) $(HDRS)
	@mkdir -p build-fuzz
	$(MAKE) --no-print-directory BUILD=build-fuzz BUILD_STAMP=build-fuzz/.stamp CC=$(FUZZ_CC) CUDA= OPT="-O1 -g" \
	  SAN="$(FUZZ_SAN)" build-fuzz/libtern.a
endif
build-fuzz/fuzz/fuzz_%: tests/fuzz/fuzz_%.c build-fuzz/libtern.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -O1 -g -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(INCS) \
	  $< -o $@ build-fuzz/libtern.a $(LDLIBS)

# The parsers (GGUF reader, tokenizer, HF directories) and the sampler under AddressSanitizer + UBSan on corrupted and
# hostile input.
ASAN_TESTS := test_gguf test_badinput test_tokenizer test_safetensors test_sampler
asan-test: test-deps model
	$(MAKE) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  OPT="-O1 -g" $(addprefix build-asan/tests/,$(ASAN_TESTS))
	@set -e; for t in $(ASAN_TESTS); do [ -x build-asan/tests/$$t ] && build-asan/tests/$$t; done

clean:
	rm -rf build build-asan build-cuda build-fuzz tern .build-config
