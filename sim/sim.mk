# sim/ — the simulated CUDA runtime and driver (libcudart.so.13, libcuda.so.1).
# cuDNN and cuBLAS have fragments of their own (sim/cudnn.mk, sim/cublas.mk).

SIM_DRIVER_SRC := sim/device.c sim/context.c sim/ranges.c sim/vmm.c sim/timeline.c sim/ops.c sim/hazard.c \
                  sim/pool.c sim/graph.c sim/driver.c sim/hostcost.c sim/module.c sim/fatbin.c sim/drvops.c \
                  common/sn_mangle.c sim/standin.c
SIM_RUNTIME_SRC := sim/runtime.c sim/kernels.c sim/rtgraph.c
# Fat-binary entries nvcc compressed (zstd by default, LZ4 for
# -compress-mode=speed) are unpacked with the Debian libraries.
SIM_FATBIN_LIBS := -lzstd -llz4

$(SIM_DIR)/libcuda.so.1: $(SIM_DRIVER_SRC:%.c=$(BUILD)/%.o) sim/libcuda.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(filter %.o,$^) -Wl,-soname,libcuda.so.1 \
	    -Wl,--version-script=sim/libcuda.map $(LDFLAGS) $(SIM_FATBIN_LIBS) -lpthread -ldl -lm
	ln -sf libcuda.so.1 $(SIM_DIR)/libcuda.so

$(SIM_DIR)/libcudart.so.13: $(SIM_RUNTIME_SRC:%.c=$(BUILD)/%.o) sim/libcudart.map $(SIM_DIR)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(filter %.o,$^) -Wl,-soname,libcudart.so.13 \
	    -Wl,--version-script=sim/libcudart.map $(LDFLAGS) -L$(SIM_DIR) -l:libcuda.so.1 \
	    -lpthread -ldl -lm
	ln -sf libcudart.so.13 $(SIM_DIR)/libcudart.so

SIM_LIBS := $(SIM_DIR)/libcuda.so.1 $(SIM_DIR)/libcudart.so.13
ALL_TARGETS += $(SIM_LIBS)

# A plain CUDA program (real headers, real import libraries) that runs on the
# simulator through LD_LIBRARY_PATH only.
$(BUILD)/sim_sample: $(BUILD)/sim/sample/sample.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDART) $(REAL_CUDA)
ALL_TARGETS += $(BUILD)/sim_sample

# The fat-binary reader on its own, fed with fat binaries built in memory
# (sound, compressed, damaged), so it is tested where nvcc is not installed.
$(BUILD)/tests/test_sim_fatbin: $(BUILD)/tests/test_sim_fatbin.o $(BUILD)/sim/fatbin.o
	$(CC) -o $@ $^ $(LDFLAGS) $(SIM_FATBIN_LIBS) -lcmocka
TEST_BINS += $(BUILD)/tests/test_sim_fatbin

# The reading of kernels' mangled names that SIMGPU_COMPUTE=libs's stand-in
# relies on, with real names from Darknet, Caffe, CUB and nvcc.
$(BUILD)/tests/test_mangle_params: $(BUILD)/tests/test_mangle_params.o $(BUILD)/common/sn_mangle.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka
TEST_BINS += $(BUILD)/tests/test_mangle_params
