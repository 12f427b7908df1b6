# policy/policy.mk — the planning policies and the timeline that predicts a
# plan's cost (policy/sn_plan.h). Everything here is pure C over a model of
# one iteration: no CUDA, so the tests link nothing but the objects they
# test, cmocka and libm. POLICY_OBJS is what libsn links; each policy file
# appends its object to it.

POLICY_OBJS := $(BUILD)/policy/sn_plan_timeline.o

$(BUILD)/tests/test_sn_plan_timeline: $(BUILD)/tests/test_sn_plan_timeline.o \
                                      $(BUILD)/policy/sn_plan_timeline.o
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lm

TEST_BINS += $(BUILD)/tests/test_sn_plan_timeline
