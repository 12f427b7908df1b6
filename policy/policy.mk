# policy/policy.mk — the planning policies and the timeline that predicts a
# plan's cost (policy/sn_plan.h). Everything here is pure C over a model of
# one iteration: no CUDA, so the tests link nothing but the objects they
# test, cmocka and libm. POLICY_OBJS is what libsn links; each policy file
# appends its object to it.

POLICY_OBJS := $(BUILD)/policy/sn_plan_timeline.o $(BUILD)/policy/sn_plan_bound.o

$(BUILD)/tests/test_sn_plan_timeline: $(BUILD)/tests/test_sn_plan_timeline.o \
                                      $(BUILD)/policy/sn_plan_timeline.o $(BUILD)/policy/sn_plan_bound.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_plan_timeline

# The policies behind sn_plan_make: one file per system, the moves they
# share (sn_policy_moves.c) and the indexed model, normalisation and memory
# profile under them all (sn_policy_util.c). They plan with the timeline.
SN_POLICY_SRCS := sn_plan sn_policy_util sn_policy_moves sn_policy_vdnn sn_policy_superneurons \
                  sn_policy_modnn sn_policy_pooch sn_policy_dymem sn_policy_auto sn_policy_gather
POLICY_OBJS += $(SN_POLICY_SRCS:%=$(BUILD)/policy/%.o)
# Pure code over its own model and plan, entered with libsn's lock held and
# never by two threads at once: ThreadSanitizer has nothing to check inside
# it, and checking every load of the search made a planning run ten times
# slower (the Makefile's NO_TSAN_SRCS).
NO_TSAN_SRCS += $(wildcard policy/*.c)

$(BUILD)/tests/test_sn_policies: $(BUILD)/tests/test_sn_policies.o $(POLICY_OBJS) $(BUILD)/common/sn_gtbm_class.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_policies
