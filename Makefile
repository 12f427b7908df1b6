# libsn — top-level build. Each part of the tree owns a make fragment
# (sim/sim.mk, sim/cudnn.mk, sim/cublas.mk, bench/bench.mk, shim/shim.mk,
# tests/tests.mk) that appends to the variables below; this file holds the
# shared flags, the sanitizer/debug knobs and the user-facing targets.
#
#   make                  build everything into build/
#   make test             run every test; exits non-zero on any failure
#   make demo             the main job (see README)
#   make bench            benchmarks; tables go to bench/results/
#   make SANITIZE=address|undefined|thread   instrumented build (own build dir)
#   make DEBUG=1          -Og with internal assertions (SN_DEBUG)

CUDA_HOME ?= /usr/local/cuda
CC        ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif

BUILD := build
ifneq ($(SANITIZE),)
BUILD := build-$(SANITIZE)
endif
ifneq ($(DEBUG),)
BUILD := $(BUILD)-debug
endif

OPT      := -O2
ifneq ($(DEBUG),)
OPT      := -Og -DSN_DEBUG=1
endif

CFLAGS   := -std=c11 -g $(OPT) -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC \
            -I. -I$(CUDA_HOME)/include
LDFLAGS  :=
SAN_FLAGS :=
ifeq ($(SANITIZE),address)
SAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer
else ifeq ($(SANITIZE),undefined)
SAN_FLAGS := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SANITIZE),thread)
SAN_FLAGS := -fsanitize=thread
else ifneq ($(SANITIZE),)
$(error SANITIZE must be address, undefined or thread)
endif
CFLAGS   += $(SAN_FLAGS)
LDFLAGS  += $(SAN_FLAGS)

# Programs that stand for "an unmodified CUDA program" link against the real
# libraries' import names; LD_LIBRARY_PATH=$(BUILD)/sim picks the simulated
# ones at run time.
REAL_CUDART := -L$(CUDA_HOME)/lib64 -lcudart
REAL_CUDA   := -L$(CUDA_HOME)/lib64/stubs -lcuda
REAL_CUDNN  := -L$(CUDA_HOME)/lib64 -lcudnn
REAL_CUBLAS := -L$(CUDA_HOME)/lib64 -lcublas
SIM_DIR     := $(BUILD)/sim

ALL_TARGETS :=
TEST_BINS   :=
TEST_SCRIPTS :=
# Sources ThreadSanitizer leaves uninstrumented (see below).
NO_TSAN_SRCS :=
BENCH_TARGETS :=

.PHONY: all test demo bench clean deps
all: all-targets

# Installs missing Debian packages (as root) or says which are missing.
deps:
	@tools/deps.sh

# The simulated runtime and driver come first: the other fragments name
# $(SIM_LIBS) in prerequisites, which make expands as it reads them.
include sim/sim.mk
include $(filter-out sim/sim.mk,$(sort $(wildcard sim/*.mk bench/*.mk shim/*.mk tracer/*.mk policy/*.mk allocator/*.mk tests/*.mk)))

all-targets: $(ALL_TARGETS)

# Under ThreadSanitizer two kinds of code are left uninstrumented, listed by
# their fragments in NO_TSAN_SRCS: the simulated cuDNN's arithmetic (im2col,
# per-row kernels: one thread on buffers the call was handed; a race on
# device memory is the simulator's hazard checker's to catch, by stream
# order, not host threads) and the planner (pure, run under libsn's lock).
# Checking their every load made the TSan suite several times slower than
# the others and could find nothing: the API entry points, libsn's locks
# and shared state and every other file stay instrumented, and libtsan's
# interceptors still see the mutexes these files take.
ifeq ($(SANITIZE),thread)
$(NO_TSAN_SRCS:%.c=$(BUILD)/%.o): CFLAGS := $(filter-out -fsanitize=thread,$(CFLAGS))
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

test: deps
	@$(MAKE) --no-print-directory all-targets $(TEST_BINS)
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) tests/run_tests.sh $(filter $(TEST_SCRIPTS),$(TEST_SLOW)) \
	    $(TEST_BINS) $(filter-out $(TEST_SLOW),$(TEST_SCRIPTS))

clean:
	rm -rf build build-*

demo: deps
	@$(MAKE) --no-print-directory all-targets
	@BUILD=$(BUILD) bench/demo.sh

bench: deps
	@$(MAKE) --no-print-directory all-targets $(BENCH_TARGETS)
	@BUILD=$(BUILD) bench/run_bench.sh
