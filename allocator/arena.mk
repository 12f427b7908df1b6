# allocator/arena.mk — unit tests of the arena: its pure parts (the
# prediction of dead contents, sn_predict.h, inline, and the pinned host
# slabs' hole list, sn_stage.c's sn_stage_slab_take/give) and its residency
# phases over a fake driver (test_sn_arena). Its behaviour on the simulated
# device is tested through libsn (tests/test_sn_manage.sh, test_sn_stress.sh, ...).

$(BUILD)/tests/test_sn_predict: $(BUILD)/tests/test_sn_predict.o \
                                $(BUILD)/allocator/sn_stage.o $(BUILD)/common/sn_options.o $(BUILD)/common/sn_log.o \
                                $(BUILD)/common/sn_lock.o $(BUILD)/common/sn_resolve.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm -ldl -lpthread

TEST_BINS += $(BUILD)/tests/test_sn_predict

# The arena's residency phases over a fake driver (tests/test_sn_arena.c
# includes sn_arena.c itself, to reach its phases, and fills common/'s
# real-function table with a fake driver): no CUDA library and no shim/
# object.
$(BUILD)/tests/test_sn_arena: $(BUILD)/tests/test_sn_arena.o \
                              $(BUILD)/allocator/sn_stage.o $(BUILD)/allocator/sn_gtbm.o \
                              $(BUILD)/common/sn_gtbm_class.o $(BUILD)/common/sn_resolve.o \
                              $(BUILD)/common/sn_options.o $(BUILD)/common/sn_log.o $(BUILD)/common/sn_lock.o \
                              $(BUILD)/common/sn_capture.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm -ldl -lpthread

TEST_BINS += $(BUILD)/tests/test_sn_arena
