# allocator/gtbm.mk — the GTBM placement engine (allocator/sn_gtbm.c) and its
# unit test. The engine is pure bookkeeping over offsets: its test links
# nothing but the engine and cmocka.

$(BUILD)/tests/test_sn_gtbm: $(BUILD)/tests/test_sn_gtbm.o $(BUILD)/allocator/sn_gtbm.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

TEST_BINS += $(BUILD)/tests/test_sn_gtbm
