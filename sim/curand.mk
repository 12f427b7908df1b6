# sim/curand — the simulated cuRAND (libcurand.so.10) and its tests.
#
# The library links the simulated driver directly only for the simgpu_*
# helpers (device checks); its device work goes through the driver entry
# points it takes from cuGetProcAddress. The tests stand for unmodified
# programs: compiled against the real headers, linked against the real
# import libraries, run with LD_LIBRARY_PATH=$(SIM_DIR).

SIM_CURAND_SRC := $(wildcard sim/curand/*.c)
SIM_CURAND_OBJ := $(SIM_CURAND_SRC:%.c=$(BUILD)/%.o)
SIM_CURAND_NO_UNDEF := $(if $(SANITIZE),,-Wl,--no-undefined)
REAL_CURAND := -L$(CUDA_HOME)/lib64 -lcurand

$(SIM_DIR)/libcurand.so.10: $(SIM_CURAND_OBJ) sim/curand/libcurand.map $(SIM_DIR)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SIM_CURAND_OBJ) -Wl,-soname,libcurand.so.10 \
	    -Wl,--version-script=sim/curand/libcurand.map $(SIM_CURAND_NO_UNDEF) $(LDFLAGS) \
	    -L$(SIM_DIR) -l:libcuda.so.1 -lm -lpthread -ldl

ALL_TARGETS += $(SIM_DIR)/libcurand.so.10

$(BUILD)/tests/test_curand_api: $(BUILD)/tests/test_curand_api.o | $(SIM_LIBS) $(SIM_DIR)/libcurand.so.10
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CURAND) $(REAL_CUDA) -lcmocka -lm

# The probe: cuRAND's kernels are its only device work; memory through the
# driver and through the runtime.
$(BUILD)/tests/sn_curand: $(BUILD)/tests/sn_curand.o | $(SIM_LIBS) $(SIM_DIR)/libcurand.so.10
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CURAND) $(REAL_CUDART) $(REAL_CUDA) -lm

TEST_BINS += $(BUILD)/tests/test_curand_api
ALL_TARGETS += $(BUILD)/tests/sn_curand
TEST_SCRIPTS += tests/test_sn_curand.sh
