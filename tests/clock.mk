# tests/clock.mk — tests of the simulator's clock against published
# measurements (docs/sim-cudnn.md, "Calibration"; docs/sim-runtime.md,
# "Host-side cost of memory management"): the fitted parts of the
# model in a cmocka test, and every row of bench/results/calibration.md
# recomputed and held within 25% of its published figure.

$(BUILD)/tests/test_sim_clock: $(BUILD)/tests/test_sim_clock.o | $(SIM_DIR)/libcudart.so.13 $(SIM_DIR)/libcudnn.so.9
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUDART) $(REAL_CUDA) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sim_clock
TEST_SCRIPTS += tests/test_sim_calibration.sh
