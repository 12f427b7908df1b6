# tests/stress.mk — sn_stress, the randomized check of device memory
# contents (tests/sn_stress.c), run with and without libsn by
# tests/test_sn_stress.sh. Like every test program it links against the
# real import libraries and reaches the simulator through LD_LIBRARY_PATH.

$(BUILD)/tests/sn_stress: $(BUILD)/tests/sn_stress.o $(SIM_LIBS) | $(SIM_DIR)/libcudnn.so.9 $(SIM_DIR)/libcublas.so.13
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) $(REAL_CUDA) -ldl -lpthread

ALL_TARGETS += $(BUILD)/tests/sn_stress
TEST_SCRIPTS += tests/test_sn_stress.sh

# Deliberate mistakes of a memory manager, preloaded to show that
# sn_stress catches them.
$(BUILD)/tests/libsn_stress_break.so: $(BUILD)/tests/sn_stress_break.o
	$(CC) -shared -o $@ $< $(LDFLAGS) -ldl

ALL_TARGETS += $(BUILD)/tests/libsn_stress_break.so
