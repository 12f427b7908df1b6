# allocator/gtbm.mk — the GTBM placement engine (allocator/sn_gtbm.c) and its
# unit test. The engine is pure bookkeeping over offsets: its test links
# nothing but the engine, the classifier it shares with the planner
# (common/sn_gtbm_class.c) and cmocka.

$(BUILD)/tests/test_sn_gtbm: $(BUILD)/tests/test_sn_gtbm.o $(BUILD)/allocator/sn_gtbm.o $(BUILD)/common/sn_gtbm_class.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

TEST_BINS += $(BUILD)/tests/test_sn_gtbm

# The classifier alone: common/ links with nothing above it.
$(BUILD)/tests/test_sn_gtbm_class: $(BUILD)/tests/test_sn_gtbm_class.o $(BUILD)/common/sn_gtbm_class.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

TEST_BINS += $(BUILD)/tests/test_sn_gtbm_class
