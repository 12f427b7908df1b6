# tests/ — tests of the simulated runtime and driver. Other parts register
# their own tests from their fragments. Test programs link against the real
# CUDA import libraries: they run on the simulator only through
# LD_LIBRARY_PATH, exactly as an unmodified program would.

$(BUILD)/tests/test_sim_runtime: $(BUILD)/tests/test_sim_runtime.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) $(REAL_CUDA) -lcmocka -ldl

TEST_BINS += $(BUILD)/tests/test_sim_runtime
TEST_SCRIPTS += tests/test_sim_sample.sh
TEST_SCRIPTS += tests/test_sim_nvcc.sh
# SIMGPU_COMPUTE=libs: the stand-in for kernels without a CPU body, with an
# nvcc-built program (tests/nvcc_libs.cu).
TEST_SCRIPTS += tests/test_sim_libs.sh
# Darknet from Debian's source, ported and built with nvcc by
# tools/darknet.sh (about 25 s the first time, cached in cache/ and
# build/darknet/ after), trains on the simulator with and without libsn.
TEST_SCRIPTS += tests/test_darknet.sh
# BVLC Caffe from the upstream tarball in ../shared/third_party/ (or
# CAFFE_SRC), ported and built by tools/caffe.sh (a quarter of an hour the
# first time on two cores, cached per machine in ~/.cache/libsn/caffe after,
# shared by every clone and build variant), trains on the simulator with
# and without libsn. Skipped with the reason where the source is missing.
# `make test-caffe` runs it alone.
TEST_SCRIPTS += tests/test_caffe.sh
test-caffe: deps
	@$(MAKE) --no-print-directory all-targets
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) tests/run_tests.sh tests/test_caffe.sh
.PHONY: test-caffe

# Contexts and threads; the graph, pool and API tests of the newer runtime
# entry points.
SIM_RT_TESTS := $(BUILD)/tests/test_sim_context $(BUILD)/tests/test_sim_apis $(BUILD)/tests/test_sim_pool
$(SIM_RT_TESTS): $(BUILD)/tests/%: $(BUILD)/tests/%.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) $(REAL_CUDA) -lcmocka -ldl -lpthread
TEST_BINS += $(SIM_RT_TESTS)

# Modules, launches, copies and graphs through the driver API alone.
$(BUILD)/tests/test_sim_driver_launch: $(BUILD)/tests/test_sim_driver_launch.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDA) -lcmocka -ldl
TEST_BINS += $(BUILD)/tests/test_sim_driver_launch

# Graphs: also checks that cuDNN and cuBLAS refuse to be captured.
$(BUILD)/tests/test_sim_graph: $(BUILD)/tests/test_sim_graph.o $(SIM_LIBS) | $(SIM_DIR)/libcudnn.so.9 \
                                $(SIM_DIR)/libcublas.so.13
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) $(REAL_CUDA) -lcmocka -ldl -lpthread
TEST_BINS += $(BUILD)/tests/test_sim_graph

# A memory manager's swaps of VMM memory, in order and racing (the hazard
# checker), with a memset and cuBLAS on the framework's side.
$(BUILD)/tests/test_sim_swap_hazards: $(BUILD)/tests/test_sim_swap_hazards.o $(SIM_LIBS) | $(SIM_DIR)/libcublas.so.13
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUBLAS) $(REAL_CUDART) $(REAL_CUDA) -lcmocka
TEST_BINS += $(BUILD)/tests/test_sim_swap_hazards
TEST_SCRIPTS += tests/test_sim_exports.sh

# The same entry points with libsn preloaded (tests/test_sn_sim_apis.sh).
$(BUILD)/tests/test_sn_sim_apis: $(BUILD)/tests/test_sn_sim_apis.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) -lcmocka -ldl
TEST_BINS += $(BUILD)/tests/test_sn_sim_apis
TEST_SCRIPTS += tests/test_sn_sim_apis.sh
TEST_SCRIPTS += tests/test_sn_manage.sh
TEST_SCRIPTS += tests/test_sn_limits.sh
TEST_SCRIPTS += tests/test_sn_fullsize.sh
# Every SN_POLICY bit-identical: the trainer's styles, the corpus, Darknet.
TEST_SCRIPTS += tests/test_sn_every_policy.sh
# SN_WORKSPACE: convolution algorithms chosen by the plan, bit-identical.
TEST_SCRIPTS += tests/test_sn_workspace.sh
TEST_SCRIPTS += tests/test_sn_broken.sh
# A run under libsn is the same run every time (plan and simulated times).
TEST_SCRIPTS += tests/test_sn_repro.sh
TEST_SCRIPTS += tests/test_sn_planning.sh
TEST_SCRIPTS += tests/test_code_shape.sh
TEST_SCRIPTS += tests/test_gpu_scripts.sh
# The runner itself: side by side, verdicts, interruption.
TEST_SCRIPTS += tests/test_run_tests.sh
# A bench script whose measurements fail writes no table.
TEST_SCRIPTS += tests/test_bench_scripts.sh

# The longest scripts (in every build, sanitizers included), started first
# so that tests/run_tests.sh's workers finish together; the rest follow in
# the order the fragments registered them.
TEST_SLOW := tests/test_sn_manage.sh tests/test_sn_every_policy.sh tests/test_sim_calibration.sh \
             tests/test_sn_reliability.sh tests/test_trainer.sh tests/test_sn_trainer.sh tests/test_sn_fullsize.sh \
             tests/test_sn_stress.sh tests/test_darknet.sh tests/test_sn_workspace.sh

# Real-function resolution with nothing above common/ linked.
$(BUILD)/tests/test_sn_resolve: $(BUILD)/tests/test_sn_resolve.o $(BUILD)/common/sn_resolve.o \
                                $(BUILD)/common/sn_lock.o $(BUILD)/common/sn_log.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -ldl -lpthread

TEST_BINS += $(BUILD)/tests/test_sn_resolve

# Kernels without parameters told by their mangled names (common/).
$(BUILD)/tests/test_sn_mangle: $(BUILD)/tests/test_sn_mangle.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka
TEST_BINS += $(BUILD)/tests/test_sn_mangle
