/*
 * sn_manage.h — manage mode's per-device manager: the one home of
 * following a plan. It owns the plan's life (manage/sn_plan_state.h:
 * wanted when the profile completes, made on libsn's planning thread,
 * installed, set aside and resumed, auto's candidates measured in turn),
 * the executor (manage/sn_exec.h) and what is due at each call: the moves,
 * a convolution's algorithm and workspace, the iteration's measurement.
 *
 * The core (core/sn_core.c) owns the device's lock, the registry, the
 * trace and the CUDA calls; it tells the manager what happens through the
 * functions below and carries out what they answer. A function named
 * _locked is called with the device's lock held (m->lock); those that also
 * read the trace are called with the registry's lock taken before it, as
 * the trace needs. None makes a CUDA call.
 */
#ifndef SN_MANAGE_H
#define SN_MANAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/sn_call.h"
#include "common/sn_lock.h"
#include "manage/sn_exec.h"
#include "manage/sn_plan_state.h"
#include "manage/sn_planner.h"

typedef struct sn_plan_work sn_plan_work;

typedef struct sn_manager {
    sn_lock *lock;            /* the device's (core/): guards what follows but state */
    int dev;
    int state;                /* enum sn_plan_state, atomic (sn_plan_state.h's transitions) */
    int rank;                 /* which of auto's candidates the next plan is (-1: a first plan, whose
                                 candidates are then measured in turn) */
    uint64_t gen;             /* plans claimed; a job of an older one is discarded when done */
    sn_plan_work *ready;      /* made, to be installed */
    double host_ms;           /* host time spent making plans, on any thread */
    double blocked_ms;        /* ... of it on the framework's threads */
    uint64_t searches, searches_failed; /* convolution configurations measured */
    sn_exec exec;
} sn_manager;

/* The iteration was learned (the profile is complete): a first plan is
 * wanted. */
void sn_manage_want_locked(sn_manager *m);

/* A plan claimed by this thread (sn_plan_claim): its models taken from
 * trace t (the registry's and the device's locks held). Returns the work
 * to hand to sn_manage_submit, NULL when out of memory; *stale is a plan
 * made for an older claim, never installed, to be freed with
 * sn_plan_work_free once the locks are given back. */
sn_plan_work *sn_manage_prepare_locked(sn_manager *m, const sn_trace *t, const sn_exec_job_cfg *cfg,
                                       sn_plan_work **stale);
/* Hands w to the planning thread (no lock held). Returns 1 when the plan
 * is already made (SN_PLAN_WAIT=1: made here, the framework waiting; or
 * no thread could be started) and the caller is to install it now. */
int sn_manage_submit(sn_plan_work *w);
void sn_plan_work_free(sn_plan_work *w);

/* A plan made (the state taken READY -> MAKING by the caller, with
 * sn_plan_take_ready): bound to the run with the allocations known, under
 * the registry's and the device's locks. Returns the state to move to
 * (sn_plan_installed): FOLLOWED, ASIDE when the run has left the learned
 * iteration meanwhile, DEMAND when no plan could be made, or WANTED when
 * auto's candidate could not be made (its own choice again, no more
 * trials). *done is the work to free once the locks are given back. */
int sn_manage_install_locked(sn_manager *m, const sn_trace *t, const sn_exec_known *known, size_t nknown,
                             sn_plan_work **done);

/* What the plan has due at one call: taken under the device's lock
 * (sn_manage_due_locked), carried out by the core with no lock held. */
enum { SN_START_EVENTS = SN_PLAN_ITER_STATS + 1 };
typedef struct sn_plan_due {
    sn_exec_moves mv;                         /* blocks to send away and to bring in */
    int start, note;
    int gathered, sync;                       /* the plan unmaps at sync steps only; one is due */
    uint64_t boundary, timed;                 /* the iteration start claimed; iteration timed */
    void *ev_old, *ev_last, *reuse;           /* events (cudaEvent_t) at the starts that time it */
    /* a convolution's algorithm, when the plan chose one for this step */
    int conv;
    sn_exec_conv_choice conv_choice;
    uint64_t sync_ws;  /* at a sync step: the scratch the stretch from it needs */
} sn_plan_due;

void sn_manage_due_locked(sn_manager *m, int64_t pos, const sn_call *c, sn_plan_due *due);

/* An iteration start (due->start) or a noted call (due->note) was carried
 * out: now is the event recorded at the start (NULL: none), ms the time
 * of iteration due->timed (< 0: not known), the arena's running totals
 * (stall ms, bytes in and out) and mapped memory. Moves to the next of
 * auto's candidates when the one followed is measured. */
void sn_manage_measured_locked(sn_manager *m, const sn_plan_due *due, int64_t pos, void *now, double ms,
                               const sn_manage_totals *totals);

/* The configuration of a convolution was measured (n >= 0) or not tried
 * (n < 0). */
static inline void sn_manage_searched_locked(sn_manager *m, int n)
{
    if (n >= 0)
        m->searches++;
    if (n == 0)
        m->searches_failed++;
}

/* The plan's part of the end-of-run report: how it was made, followed and
 * measured, and how long planning took. */
void sn_manage_report_locked(const sn_manager *m, sn_manage_stats *ms);

#endif
