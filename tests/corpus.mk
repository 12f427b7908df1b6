# tests/corpus.mk — small programs with the habits of real frameworks
# (tests/corpus/*.c), each run under libsn by tests/test_sn_corpus.sh and its
# model checked against tests/corpus/<name>.expect. Like every test program
# they link against the real import libraries and reach the simulator
# through LD_LIBRARY_PATH.

CORPUS_NAMES := $(basename $(notdir $(wildcard tests/corpus/*.c)))
CORPUS_BINS := $(CORPUS_NAMES:%=$(BUILD)/tests/corpus/%)

$(BUILD)/tests/corpus/%: $(BUILD)/tests/corpus/%.o $(SIM_LIBS)
	$(CC) -o $@ $< $(LDFLAGS) $(REAL_CUDNN) $(REAL_CUBLAS) $(REAL_CUDART) -ldl -lm

ALL_TARGETS += $(CORPUS_BINS)
.SECONDARY: $(CORPUS_BINS:%=%.o)
TEST_SCRIPTS += tests/test_sn_corpus.sh
