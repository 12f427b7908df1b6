/*
 * sn_manage.c — the per-device manager (see sn_manage.h): the plan's life
 * from wanted to followed, and what the plan has due at each call.
 */
#include "manage/sn_manage.h"

#include <stdlib.h>

#include "common/sn_log.h"
#include "common/sn_options.h"

/* One plan being made: the job the planning thread works on, and the
 * manager it goes back to. Freed by whoever ends it (installed, or
 * discarded as stale). */
struct sn_plan_work {
    sn_planner_task task; /* first: the planner hands it back */
    sn_exec_job job;
    sn_manager *m;
    uint64_t gen;
};

void sn_plan_work_free(sn_plan_work *w)
{
    if (!w)
        return;
    sn_exec_job_free(&w->job);
    free(w);
}

void sn_manage_want_locked(sn_manager *m)
{
    m->rank = -1;
    sn_plan_want(&m->state);
}

static void sn_plan_work_run(sn_planner_task *task)
{
    sn_exec_plan_job(&((sn_plan_work *)task)->job);
}

/* The planning thread is done with w: handed over for installing, unless
 * a newer plan was claimed meanwhile (the iteration was learned anew). */
static void sn_plan_work_done(sn_planner_task *task)
{
    sn_plan_work *w = (sn_plan_work *)task;
    sn_manager *m = w->m;
    sn_lock_take(m->lock);
    m->host_ms += task->run_ms;
    if (task->here)
        m->blocked_ms += task->run_ms;
    int current = w->gen == m->gen && !m->ready && sn_plan_made(&m->state);
    if (current)
        m->ready = w;
    sn_lock_give(m->lock);
    if (!current)
        sn_plan_work_free(w);
}

sn_plan_work *sn_manage_prepare_locked(sn_manager *m, const sn_trace *t, const sn_exec_job_cfg *cfg,
                                       sn_plan_work **stale)
{
    *stale = m->ready;
    m->ready = NULL;
    sn_plan_work *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->m = m;
    w->gen = ++m->gen;
    /* (a model that could not be taken still goes through install, which
     * says no plan could be made) */
    if (!t || sn_exec_prepare(&m->exec, t, cfg, &w->job) != 0)
        sn_exec_job_free(&w->job);
    w->task.run = sn_plan_work_run;
    w->task.done = sn_plan_work_done;
    return w;
}

int sn_manage_submit(sn_plan_work *w)
{
    return sn_planner_submit(&w->task, sn_opt.plan_wait);
}

int sn_manage_install_locked(sn_manager *m, const sn_trace *t, const sn_exec_known *known, size_t nknown,
                             sn_plan_work **done)
{
    sn_plan_work *w = *done = m->ready;
    m->ready = NULL;
    int rank = w ? w->job.cfg.rank : 0;
    int rc = w && t && known ? sn_exec_install(&m->exec, &w->job, t, known, nknown) : -1;
    int again = rc != 0 && rank > 0 && t;
    if (again) {
        m->rank = 0;
        m->exec.trial.done = 1;
    }
    if (rc == 0 && m->exec.trial.n > 1)
        sn_info("device %d: candidate plan %d of %d%s (predicted %.3f ms per iteration)", m->dev,
                m->exec.trial.rank + 1, m->exec.trial.n,
                m->exec.trial.done ? ", the fastest measured, kept" : ", to be measured", m->exec.predicted_ms);
    if (rc != 0 && !again)
        sn_info("device %d: no plan could be made for SN_POLICY=%s; demand residency only", m->dev,
                sn_option_choice("SN_POLICY", sn_opt.policy));
    if (again)
        return SN_PLAN_WANTED;
    if (rc != 0)
        return SN_PLAN_DEMAND;
    return t->relearning ? SN_PLAN_ASIDE : SN_PLAN_FOLLOWED;
}

void sn_manage_due_locked(sn_manager *m, int64_t pos, const sn_call *c, sn_plan_due *due)
{
    sn_exec *ex = &m->exec;
    due->note = ex->seen_mem != NULL && pos >= 0;
    due->conv = c->conf && sn_opt.workspace != SN_WORKSPACE_KEEP &&
                sn_exec_conv(ex, pos, c->conf, c->algo, &due->conv_choice);
    due->start = 0;
    due->sync = 0;
    due->gathered = ex->plan.sync != NULL;
    if (sn_exec_due_quiet(ex, pos)) {
        /* (an iteration starts on the other path only) */
        due->mv.nout = due->mv.nin = 0;
        return;
    }
    sn_exec_due(ex, pos, &due->mv);
    due->sync = ex->sync_due;
    due->sync_ws = ex->sync_ws;
    due->start = sn_exec_claim_start(ex);
    if (!due->start)
        return;
    /* start k: the events at starts k-2 and k-1 time iteration k-2 (when
     * complete by now; else the report asks again at exit); the slot of
     * start k - SN_START_EVENTS, long forgotten, is reused */
    uint64_t b = due->boundary = ex->boundaries++;
    due->ev_old = due->ev_last = NULL;
    due->timed = UINT64_MAX;
    if (b >= 2) {
        due->ev_old = ex->start_ev[(b - 2) % SN_START_EVENTS];
        due->ev_last = ex->start_ev[(b - 1) % SN_START_EVENTS];
        due->timed = b - 2;
    }
    due->reuse = ex->start_ev[b % SN_START_EVENTS];
    ex->start_ev[b % SN_START_EVENTS] = NULL;
}

void sn_manage_measured_locked(sn_manager *m, const sn_plan_due *due, int64_t pos, void *now, double ms,
                               const sn_manage_totals *totals)
{
    sn_exec *ex = &m->exec;
    if (due->start) {
        sn_exec_measure(ex, totals);
        ex->start_ev[due->boundary % SN_START_EVENTS] = now;
        if (due->timed != UINT64_MAX && ms >= 0) {
            sn_exec_iteration_ms(ex, due->timed, ms);
            /* auto's candidates, measured in turn: the next one (or the
             * fastest, at the end) is made at the next call */
            int next = sn_exec_trial_next(ex, due->timed, ms);
            if (next >= 0 && sn_plan_next_trial(&m->state))
                m->rank = next;
        }
    }
    if (due->note)
        sn_exec_note_memory(ex, pos, totals->resident);
}

void sn_manage_report_locked(const sn_manager *m, sn_manage_stats *ms)
{
    const sn_exec *ex = &m->exec;
    ms->algo_searches = m->searches;
    ms->algo_search_failed = m->searches_failed;
    if (ex->plans && ex->active) {
        ms->has_plan = 1;
        ms->plan_policy = ex->policy;
        ms->plan_predicted_ms = ex->predicted_ms;
        ms->plan_bound_ms = ex->limit.ms;
        ms->plan_bound_compute_ms = ex->limit.compute_ms;
        ms->plan_bound_transfer_ms = ex->limit.transfer_ms;
        ms->plan_bound_stall_ms = ex->limit.stall_ms;
        ms->plan_bound_from = ex->limit.window_from;
        ms->plan_bound_to = ex->limit.window_to;
        ms->plan_unlimited_ms = ex->limit.unlimited_ms;
        ms->plan_bound_offdevice = ex->limit.offdevice_bytes;
        ms->plan_sync_steps = 0;
        for (int s = 0; ex->plan.sync && s < ex->nsteps; s++)
            ms->plan_sync_steps += ex->plan.sync[s] != 0;
        ms->plan_liveness = ex->plan.framework_liveness;
        ms->plan_why = ex->plan.predicted.feasible ? NULL : ex->plan.predicted.why;
        ms->plan_bad_step = ex->plan.predicted.feasible ? -1 : ex->plan.predicted.bad_step;
        ms->plan_iterations = ex->iterations_all;
        ms->plan_iterations_last = ex->iterations;
        ms->plan_skipped += ex->skipped_unbound;
        ms->plan_left = ex->left;
        ms->plan_rebound = ex->rebound;
        ms->plan_born_due = ex->born_due;
        ms->plan_stall_ms = ex->plan.predicted.feasible ? ex->plan.predicted.stall_ms : -1;
        ms->plan_niter = sn_exec_history(ex, ms->plan_iter);
        ms->plan_curve = ex->plan_mem;
        ms->seen_curve = ex->seen_mem;
        ms->curve_len = ex->period > 0 ? (size_t)ex->period : 0;
        ms->plan_algo_steps = ex->algo_steps;
        ms->plan_algo_up = ex->algo_up;
        ms->plan_algo_down = ex->algo_down;
        ms->plan_algo_framework = ex->algo_framework;
        ms->plan_algo_calls = __atomic_load_n(&ex->algo_calls, __ATOMIC_RELAXED);
        ms->plan_algo_scratch_calls = __atomic_load_n(&ex->algo_scratch_calls, __ATOMIC_RELAXED);
        ms->plan_algo_kept = __atomic_load_n(&ex->algo_kept, __ATOMIC_RELAXED);
        ms->plan_resumed = ex->resumed;
        ms->plan_trials = ex->trial.n;
        ms->plan_trial_kept = ex->trial.done ? ex->trial.best : ex->trial.rank;
        for (int r = 0; r < ex->trial.n; r++) {
            ms->plan_trial_pred[r] = ex->trial.pred[r];
            ms->plan_trial_ms[r] = ex->trial.ms[r];
            ms->plan_trial_model[r] = ex->trial.model[r];
        }
        ms->plans = ex->plans;
    }
    ms->plan_host_ms = m->host_ms;
    ms->plan_blocked_ms = m->blocked_ms;
    ms->plan_waited = sn_opt.plan_wait;
    int pst = sn_plan_state_get(&m->state);
    ms->plan_unfinished = pst == SN_PLAN_MAKING || pst == SN_PLAN_READY;
}
