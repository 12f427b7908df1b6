# sim/cublas — the simulated cuBLAS (libcublas.so.13) and its tests.
#
# The library links the simulated driver directly for the simgpu_* timeline
# helpers and OpenBLAS for the arithmetic. The tests and the two-layer
# sample stand for unmodified programs: compiled against the real headers,
# linked against the real import libraries, and run with
# LD_LIBRARY_PATH=$(SIM_DIR) so that the loader picks the simulation.

SIM_CUBLAS_SRC := $(wildcard sim/cublas/*.c)
SIM_CUBLAS_OBJ := $(SIM_CUBLAS_SRC:%.c=$(BUILD)/%.o)
# Unresolved names are caught at link time, except under a sanitizer whose
# runtime is only provided by the executable.
SIM_CUBLAS_NO_UNDEF := $(if $(SANITIZE),,-Wl,--no-undefined)

$(SIM_DIR)/libcublas.so.13: $(SIM_CUBLAS_OBJ) sim/cublas/libcublas.map $(SIM_DIR)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SIM_CUBLAS_OBJ) -Wl,-soname,libcublas.so.13 \
	    -Wl,--version-script=sim/cublas/libcublas.map $(SIM_CUBLAS_NO_UNDEF) $(LDFLAGS) \
	    -L$(SIM_DIR) -l:libcuda.so.1 -lopenblas -lm -lpthread -ldl

ALL_TARGETS += $(SIM_DIR)/libcublas.so.13

SIM_CUBLAS_TESTS := $(BUILD)/tests/test_cublas_ops $(BUILD)/tests/test_cublas_api \
                    $(BUILD)/tests/test_cublas_model $(BUILD)/tests/test_cublas_ex
# Order-only: building a test also builds the libraries it runs on.
$(SIM_CUBLAS_TESTS): $(BUILD)/tests/%: $(BUILD)/tests/%.o | $(SIM_DIR)/libcudart.so.13 $(SIM_DIR)/libcublas.so.13
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUBLAS) $(REAL_CUDART) -lcmocka -lm

$(BUILD)/tests/sample_twolayer: $(BUILD)/tests/sample_twolayer.o | $(SIM_DIR)/libcudart.so.13 $(SIM_DIR)/libcublas.so.13 \
                                  $(SIM_DIR)/libcudnn.so.9
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) -lcmocka -lm

TEST_BINS += $(SIM_CUBLAS_TESTS) $(BUILD)/tests/sample_twolayer
