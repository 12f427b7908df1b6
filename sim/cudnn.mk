# sim/cudnn — the simulated cuDNN 9 (libcudnn.so.9) and its tests.
#
# The library links the simulated driver directly for the simgpu_* timeline
# and residency helpers, and OpenBLAS for the matrix work. The tests stand for
# unmodified programs: compiled against the real headers, linked against the
# real import libraries, and run with LD_LIBRARY_PATH=$(SIM_DIR) so that the
# loader picks the simulation.

SIM_CUDNN_SRC := $(wildcard sim/cudnn/*.c)
SIM_CUDNN_OBJ := $(SIM_CUDNN_SRC:%.c=$(BUILD)/%.o)
# The arithmetic, left uninstrumented under ThreadSanitizer (Makefile).
NO_TSAN_SRCS += sim/cudnn/conv_compute.c sim/cudnn/activation.c sim/cudnn/batchnorm.c sim/cudnn/dropout.c \
                sim/cudnn/lrn.c sim/cudnn/pooling.c sim/cudnn/softmax.c sim/cudnn/tensor_ops.c
# Unresolved names are caught at link time, except under a sanitizer whose
# runtime is only provided by the executable.
SIM_CUDNN_NO_UNDEF := $(if $(SANITIZE),,-Wl,--no-undefined)

$(SIM_DIR)/libcudnn.so.9: $(SIM_CUDNN_OBJ) sim/cudnn/libcudnn.map $(SIM_DIR)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(SIM_CUDNN_OBJ) -Wl,-soname,libcudnn.so.9 \
	    -Wl,--version-script=sim/cudnn/libcudnn.map $(SIM_CUDNN_NO_UNDEF) $(LDFLAGS) \
	    -L$(SIM_DIR) -l:libcuda.so.1 -lopenblas -lm -lpthread -ldl

ALL_TARGETS += $(SIM_DIR)/libcudnn.so.9

SIM_CUDNN_TESTS := $(BUILD)/tests/test_cudnn_conv $(BUILD)/tests/test_cudnn_ops \
                   $(BUILD)/tests/test_cudnn_model $(BUILD)/tests/test_cudnn_sizes
$(SIM_CUDNN_TESTS): $(BUILD)/tests/%: $(BUILD)/tests/%.o
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUDART) -lcmocka -lm

TEST_BINS += $(SIM_CUDNN_TESTS)
