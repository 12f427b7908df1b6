/*
 * sn_plan_int.h — what the policy module's files share besides the public
 * sn_plan.h: checking a model and a plan, the chosen algorithm of a step,
 * a tensor's next access, and the residency a plan implies at the start of
 * its steady-state iteration. The timeline (sn_plan_timeline.c) and the
 * policies must agree on these, so there is one definition of each.
 */
#ifndef SN_PLAN_INT_H
#define SN_PLAN_INT_H

#include <stdint.h>

#include "policy/sn_plan.h"

/* An access that does not need the tensor's previous contents: a whole
 * overwrite (KILL), or workspace use (SCRATCH), whose contents the tracer
 * already treats as no use of the value. Such an access maps the tensor
 * fresh when it is off the device and clears dropped contents. */
static inline int sn_plan_mode_fresh(unsigned mode)
{
    return (mode & (SN_PLAN_KILL | SN_PLAN_SCRATCH)) != 0;
}

/* 0 when m is a well-formed model and p (when not NULL) a plan of it that
 * names only existing tensors, steps and algorithms; -1 otherwise. Copy
 * bandwidths are not checked here: a plan that copies nothing needs none. */
int sn_plan_check(const sn_plan_model *m, const sn_plan *p);

/* The algorithm step s runs with under p (p or p->algo may be NULL: the
 * framework's choice), or NULL when it has none (no choice, or an index
 * outside the step's list): the step then takes step.ms and no workspace. */
const sn_plan_algo *sn_plan_step_algo(const sn_plan_model *m, const sn_plan *p, int s);

/* The memory step s takes for the duration of the step beyond the tensors it
 * names, running algorithm alg (NULL: none): what alg's workspace exceeds
 * the buffer the step names (own_workspace) by. */
uint64_t sn_plan_extra_workspace(const sn_plan_model *m, int s, const sn_plan_algo *alg);

/* Step s's fastest algorithm (least extra workspace on a tie) and the one
 * needing the least extra workspace (fastest on a tie), as indices in its
 * list; -1 when it has no choice. */
int sn_plan_algo_fastest(const sn_plan_model *m, int s);
int sn_plan_algo_minws(const sn_plan_model *m, int s);

/* The index in t->access of its first access at or after step, -1 when
 * none; wrap: look on from the iteration's start when there is none after
 * (the access the next iteration makes first). */
int sn_plan_next_access(const sn_plan_tensor *t, int step, int wrap);

/* Per tensor, whether it is on the device (resident[t]) and whether its
 * contents were dropped (dropped[t]) when an iteration starts in the steady
 * state, i.e. as the plan leaves them at an iteration's end: off when the
 * last event in iteration order that moves the tensor is an OFFLOAD or a
 * DROP, where a step's prefetches come first, then its accesses (a fresh
 * one maps the tensor back), then its offloads and drops; dropped when its
 * last DROP comes after its last fresh access. Pinned tensors are always
 * resident; bounded tensors do not exist at the start (0). m and p must
 * have passed sn_plan_check. Returns 0, or -1 when out of memory. */
int sn_plan_initial_residency(const sn_plan_model *m, const sn_plan *p, uint8_t *resident,
                              uint8_t *dropped);

#endif
