# allocator/arena.mk — unit tests of the arena's pure parts: the prediction
# of dead contents (sn_predict.h, inline) and the pinned host slabs' hole list
# (sn_stage.c's sn_stage_slab_take/give). The arena itself (sn_arena.c)
# calls the real CUDA functions and is tested through libsn on the
# simulated device (tests/test_sn_manage.sh, test_sn_stress.sh, ...).

$(BUILD)/tests/test_sn_predict: $(BUILD)/tests/test_sn_predict.o \
                                $(BUILD)/allocator/sn_stage.o $(BUILD)/common/sn_options.o $(BUILD)/common/sn_log.o \
                                $(BUILD)/common/sn_lock.o $(BUILD)/common/sn_resolve.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm -ldl -lpthread

TEST_BINS += $(BUILD)/tests/test_sn_predict
