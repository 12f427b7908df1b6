# shim/ — build/libsn.so, the preloaded interposer with its tracer, and the
# tests of both. libsn.so links against no CUDA library: it finds the real
# functions at run time (-z defs proves no CUDA symbol is needed at link).

TRACER_SRC := tracer/sn_trace.c tracer/sn_period.c tracer/sn_whatif.c tracer/sn_model.c \
              tracer/sn_planmodel.c tracer/sn_report.c tracer/sn_timeline.c tracer/sn_plot.c tracer/sn_output.c
LIBSN_SRC := common/sn_log.c common/sn_options.c common/sn_resolve.c shim/sn_init.c \
             common/sn_lock.c common/sn_mangle.c core/sn_registry.c common/sn_extent.c core/sn_access.c shim/sn_describe.c core/sn_convsearch.c core/sn_core.c core/sn_graphs.c common/sn_capture.c \
             manage/sn_exec.c manage/sn_planner.c manage/sn_manage.c \
             shim/hooks_plain.c shim/hooks_alloc.c shim/hooks_driver.c shim/hooks_drvcopy.c shim/hooks_cudart.c shim/hooks_cudnn.c \
             shim/hooks_cublas.c shim/hooks_curand.c shim/hooks_drvlaunch.c allocator/sn_arena.c allocator/sn_stage.c allocator/sn_gtbm.c common/sn_gtbm_class.c \
             $(TRACER_SRC)
LIBSN_OBJ := $(LIBSN_SRC:%.c=$(BUILD)/%.o) $(POLICY_OBJS)

# Only the wrappers (marked SN_EXPORT) and dlsym leave the library.
$(LIBSN_OBJ): CFLAGS += -fvisibility=hidden

# The optimised build links libsn with link-time optimisation: an
# intercepted call crosses a dozen small functions of several files (the
# wrapper, the access memo, the tracer's cursor, the arena), and inlining
# across them saves about 50 instructions a call (bench/sn_overhead.sh).
# The objects stay usable without it (fat), for the unit tests that link
# them one by one; the debug and sanitizer builds go without.
LIBSN_LTO :=
ifeq ($(SANITIZE)$(DEBUG),)
LIBSN_LTO := -flto=auto
$(LIBSN_OBJ): CFLAGS += -flto=auto -ffat-lto-objects
endif

$(BUILD)/libsn.so: $(LIBSN_OBJ)
	$(CC) -shared -o $@ $^ -Wl,-soname,libsn.so -Wl,-Bsymbolic-functions -Wl,-z,defs \
	    $(OPT) $(LIBSN_LTO) $(LDFLAGS) -lunwind -ldl -lpthread -lm

ALL_TARGETS += $(BUILD)/libsn.so

# ---- tests --------------------------------------------------------------------

$(BUILD)/tests/test_sn_passthrough: $(BUILD)/tests/test_sn_passthrough.o $(ALL_TARGETS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) $(REAL_CUDA) -lcmocka -ldl -lpthread

TEST_BINS += $(BUILD)/tests/test_sn_passthrough
TEST_SCRIPTS += tests/test_sn_preload.sh

$(BUILD)/tests/test_sn_options: $(BUILD)/tests/test_sn_options.o $(BUILD)/common/sn_options.o $(BUILD)/common/sn_log.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_options

$(BUILD)/tests/test_sn_registry: $(BUILD)/tests/test_sn_registry.o $(BUILD)/core/sn_registry.o $(BUILD)/common/sn_extent.o \
                                $(BUILD)/core/sn_access.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

TEST_BINS += $(BUILD)/tests/test_sn_registry
TEST_SCRIPTS += tests/test_sn_trainer.sh

$(BUILD)/tests/test_sn_tracer: $(BUILD)/tests/test_sn_tracer.o $(TRACER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/common/sn_log.o $(BUILD)/common/sn_options.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_tracer

$(BUILD)/tests/test_sn_planmodel: $(BUILD)/tests/test_sn_planmodel.o $(TRACER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/common/sn_log.o $(BUILD)/common/sn_options.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_planmodel
TEST_SCRIPTS += tests/test_sn_planmodel.sh
TEST_SCRIPTS += tests/test_sn_outputs.sh
TEST_SCRIPTS += tests/test_sn_memory.sh
$(BUILD)/tests/sn_peak_rss: $(BUILD)/tests/sn_peak_rss.o
	$(CC) -o $@ $< $(LDFLAGS)
ALL_TARGETS += $(BUILD)/tests/sn_peak_rss

$(BUILD)/tests/test_sn_output: $(BUILD)/tests/test_sn_output.o $(TRACER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/common/sn_log.o $(BUILD)/common/sn_options.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_output

# A program that chdir()s after start, for the output path checks.
$(BUILD)/tests/sn_chdir_sample: $(BUILD)/tests/sn_chdir_sample.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART)

ALL_TARGETS += $(BUILD)/tests/sn_chdir_sample
TEST_SCRIPTS += tests/test_sn_paths.sh


# Concurrency habits of real frameworks (threads, fork) under libsn.
$(BUILD)/tests/sn_threads: $(BUILD)/tests/sn_threads.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) -lpthread

ALL_TARGETS += $(BUILD)/tests/sn_threads
TEST_SCRIPTS += tests/test_sn_reliability.sh

# Peer copies between two devices under memory pressure (data-parallel habits).
$(BUILD)/tests/sn_peer: $(BUILD)/tests/sn_peer.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART)

ALL_TARGETS += $(BUILD)/tests/sn_peer

# CUDA reached through dlopen + dlsym only (ctypes, plugin loaders).
$(BUILD)/tests/sn_dlopen: $(BUILD)/tests/sn_dlopen.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) -ldl

ALL_TARGETS += $(BUILD)/tests/sn_dlopen

# Calls a function the loaded cuBLAS lacks; lazy binding, as most builds.
$(BUILD)/tests/sn_missing: $(BUILD)/tests/sn_missing.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) -Wl,-z,lazy $(REAL_CUBLAS) -ldl

ALL_TARGETS += $(BUILD)/tests/sn_missing
TEST_SCRIPTS += tests/test_sn_faults.sh

# Framework-style GEMMs (GemmEx, strided and pointer-array batches) over
# three times a budget, with and without libsn.
$(BUILD)/tests/sn_gemm_probe: $(BUILD)/tests/sn_gemm_probe.o $(SIM_LIBS) | $(SIM_DIR)/libcublas.so.13
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUBLAS) $(REAL_CUDART)

ALL_TARGETS += $(BUILD)/tests/sn_gemm_probe
TEST_SCRIPTS += tests/test_sn_gemm_ex.sh

# First stream work captured into a CUDA graph.
$(BUILD)/tests/sn_capture: $(BUILD)/tests/sn_capture.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART)

ALL_TARGETS += $(BUILD)/tests/sn_capture

# Whole-buffer writes that do not run: rejected, captured, refused.
$(BUILD)/tests/sn_floor_rt: $(BUILD)/tests/sn_floor_rt.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART)

ALL_TARGETS += $(BUILD)/tests/sn_floor_rt

# Kernels that reach buffers through pointers stored in device memory.
$(BUILD)/tests/sn_ptrarray: $(BUILD)/tests/sn_ptrarray.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) -ldl

ALL_TARGETS += $(BUILD)/tests/sn_ptrarray
TEST_SCRIPTS += tests/test_sn_floor.sh

# Two threads, two streams, two cuBLAS handles on a full device.
$(BUILD)/tests/sn_blas_threads: $(BUILD)/tests/sn_blas_threads.o $(SIM_LIBS) | $(SIM_DIR)/libcublas.so.13
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUBLAS) $(REAL_CUDART) -lpthread

ALL_TARGETS += $(BUILD)/tests/sn_blas_threads
TEST_SCRIPTS += tests/test_sn_budget_race.sh

$(BUILD)/tests/test_sn_lock: $(BUILD)/tests/test_sn_lock.o $(BUILD)/common/sn_lock.o $(BUILD)/common/sn_log.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

TEST_BINS += $(BUILD)/tests/test_sn_lock

# A program that reaches the GPU through the driver API only (copies, sets,
# entry points from cuGetProcAddress), and the same program with the
# runtime loaded beside it; one that launches kernels and graphs through
# the driver only.
$(BUILD)/tests/sn_drvprobe: $(BUILD)/tests/sn_drvprobe.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDA)
$(BUILD)/tests/sn_drvprobe_rt: $(BUILD)/tests/sn_drvprobe.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDA) -Wl,--no-as-needed $(REAL_CUDART) -Wl,--as-needed

$(BUILD)/tests/sn_drvlaunch: $(BUILD)/tests/sn_drvlaunch.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDA) -ldl

ALL_TARGETS += $(BUILD)/tests/sn_drvprobe $(BUILD)/tests/sn_drvprobe_rt $(BUILD)/tests/sn_drvlaunch
TEST_SCRIPTS += tests/test_sn_driver.sh

# Kernels with 30 and 130 pointer parameters (multi-tensor apply): calls
# longer than a call record holds inline.
$(BUILD)/tests/sn_longcall: $(BUILD)/tests/sn_longcall.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) -ldl

ALL_TARGETS += $(BUILD)/tests/sn_longcall
TEST_SCRIPTS += tests/test_sn_longcall.sh
