# bench/gtbm.mk — the allocation-trace replay of the placement engine
# (bench/gtbm_replay.c), used by bench/gtbm_bench.sh (make bench) and by
# tests/test_gtbm_replay.sh.

$(BUILD)/gtbm_replay: $(BUILD)/bench/gtbm_replay.o $(BUILD)/allocator/sn_gtbm.o $(BUILD)/common/sn_gtbm_class.o
	$(CC) -o $@ $^ $(LDFLAGS)

ALL_TARGETS += $(BUILD)/gtbm_replay

TEST_SCRIPTS += tests/test_gtbm_replay.sh
