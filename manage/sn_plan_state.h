/*
 * sn_plan_state.h — where a device's plan is in its life, as one atomic
 * word changed only by the named transitions below (each a single
 * compare-and-swap, so that two threads cannot both take one):
 *
 *   NONE ──want──▶ WANTED ──claim──▶ MAKING ──made──▶ READY ──installed──▶ FOLLOWED
 *                    ▲                                  │                  │  ▲
 *                    │                                  ├──▶ DEMAND        │  │ resume
 *                    └──────────── next_trial ──────────┼──────────────────┘  │
 *                                                       └──▶ ASIDE ◀──aside───┘
 *
 * want: the profile is complete (from any state: a plan of an iteration
 * learned anew replaces whatever was under way; a job still being made
 * for the old one is discarded when it finishes, by its generation).
 * claim: a framework thread takes the model and hands it to the planning
 * thread. made: the planning thread finished. installed: a framework
 * thread bound the plan to the run, FOLLOWED, or ASIDE when the run has
 * meanwhile left the learned iteration, or DEMAND when no plan could be
 * made. aside/resume: the tracer left the learned iteration and came back
 * to it. next_trial: auto measured a candidate and wants the next one.
 * Every state but FOLLOWED means demand residency only.
 */
#ifndef SN_PLAN_STATE_H
#define SN_PLAN_STATE_H

enum sn_plan_state {
    SN_PLAN_DEMAND = -1,  /* no plan: demand residency only */
    SN_PLAN_NONE = 0,     /* the iteration is not learned yet */
    SN_PLAN_WANTED = 1,   /* a plan (of rank plan_rank) is to be made */
    SN_PLAN_MAKING = 2,   /* the planning thread has it */
    SN_PLAN_FOLLOWED = 3, /* the plan is followed */
    SN_PLAN_ASIDE = 4,    /* set aside while the iteration is learned anew */
    SN_PLAN_READY = 5,    /* made, to be installed at the next call */
};

static inline int sn_plan_state_get(const int *state)
{
    return __atomic_load_n(state, __ATOMIC_ACQUIRE);
}

static inline int sn_plan_state_move(int *state, int from, int to)
{
    return __atomic_compare_exchange_n(state, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static inline void sn_plan_want(int *state)
{
    __atomic_store_n(state, SN_PLAN_WANTED, __ATOMIC_RELEASE);
}
static inline int sn_plan_claim(int *state)
{
    return sn_plan_state_move(state, SN_PLAN_WANTED, SN_PLAN_MAKING);
}
static inline int sn_plan_made(int *state)
{
    return sn_plan_state_move(state, SN_PLAN_MAKING, SN_PLAN_READY);
}
static inline int sn_plan_take_ready(int *state)
{
    /* installing: MAKING again until it is done, so no other thread installs */
    return sn_plan_state_move(state, SN_PLAN_READY, SN_PLAN_MAKING);
}
static inline int sn_plan_installed(int *state, int to)
{
    return sn_plan_state_move(state, SN_PLAN_MAKING, to);
}
static inline int sn_plan_aside(int *state)
{
    return sn_plan_state_move(state, SN_PLAN_FOLLOWED, SN_PLAN_ASIDE);
}
static inline int sn_plan_resume(int *state)
{
    return sn_plan_state_move(state, SN_PLAN_ASIDE, SN_PLAN_FOLLOWED);
}
static inline int sn_plan_next_trial(int *state)
{
    return sn_plan_state_move(state, SN_PLAN_FOLLOWED, SN_PLAN_WANTED);
}

#endif
