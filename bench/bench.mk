# bench/ — the reference trainer (build/sntrain) and its tests.
#
# sntrain stands for an unmodified framework: compiled against the real
# CUDA/cuDNN/cuBLAS headers and linked against the real import libraries;
# LD_LIBRARY_PATH decides whether it runs on the simulated device
# ($(SIM_DIR)) or on a GPU.

SNTRAIN_SRC := bench/sntrain/main.c bench/sntrain/net.c bench/sntrain/models.c \
               bench/sntrain/exec.c bench/sntrain/data.c bench/sntrain/check.c \
               bench/sntrain/kernels.c
SNTRAIN_OBJ := $(SNTRAIN_SRC:%.c=$(BUILD)/%.o)

$(BUILD)/sntrain: $(SNTRAIN_OBJ)
	$(CC) -o $@ $(SNTRAIN_OBJ) $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) \
	    -lpthread -ldl -lm

ALL_TARGETS += $(BUILD)/sntrain

# Network construction needs no device: shapes and parameter counts are
# checked against the published architectures.
$(BUILD)/tests/test_trainer_models: $(BUILD)/tests/test_trainer_models.o \
        $(BUILD)/bench/sntrain/net.o $(BUILD)/bench/sntrain/models.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_trainer_models
TEST_SCRIPTS += tests/test_trainer.sh

# ---- overhead benchmark (make bench) ------------------------------------------------

$(BUILD)/sn_overhead: $(BUILD)/bench/sn_overhead.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) -ldl $(REAL_CUDA)

BENCH_TARGETS += $(BUILD)/sn_overhead

# The per-operation calibration program (bench/calibrate.sh): single cuDNN
# convolutions and host<->device copies timed like DeepBench, bandwidthTest
# and nvbandwidth, and memory-management calls timed like their
# micro-benchmarks.
$(BUILD)/calibrate: $(BUILD)/bench/calib/calibrate.o
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUDART) $(REAL_CUDA)

ALL_TARGETS += $(BUILD)/calibrate
