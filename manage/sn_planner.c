/*
 * sn_planner.c — the planning thread (see sn_planner.h): a FIFO of tasks
 * under one mutex and a condition the thread waits on. The mutex is a
 * plain pthread one, outside libsn's lock ranks: nothing is
 * called under it but the queue's own bookkeeping.
 */
#include "manage/sn_planner.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "common/sn_log.h"

static pthread_mutex_t sn_planner_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sn_planner_work = PTHREAD_COND_INITIALIZER;
static sn_planner_task *sn_planner_head, *sn_planner_tail;
static int sn_planner_started; /* 1 running, -1 could not be started */

double sn_planner_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sn_planner_run_one(sn_planner_task *task)
{
    double t0 = sn_planner_now_ms();
    task->run(task);
    task->run_ms = sn_planner_now_ms() - t0;
    /* the task is the done hook's from here on: it may be handed to
     * another thread and freed before the hook returns */
    if (task->done)
        task->done(task);
}

static void *sn_planner_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&sn_planner_mu);
        while (!sn_planner_head)
            pthread_cond_wait(&sn_planner_work, &sn_planner_mu);
        sn_planner_task *task = sn_planner_head;
        sn_planner_head = task->next;
        if (!sn_planner_head)
            sn_planner_tail = NULL;
        pthread_mutex_unlock(&sn_planner_mu);
        sn_planner_run_one(task);
    }
    return NULL;
}

/* Called with the mutex held. The thread blocks every signal: the
 * framework's handlers expect to run on its own threads. */
static int sn_planner_start_locked(void)
{
    if (sn_planner_started)
        return sn_planner_started > 0 ? 0 : -1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, sn_planner_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    sn_planner_started = rc == 0 ? 1 : -1;
    if (rc != 0)
        sn_warn("cannot start the planning thread (error %d): plans are made on the framework's thread", rc);
    return rc == 0 ? 0 : -1;
}

int sn_planner_submit(sn_planner_task *task, int here)
{
    task->next = NULL;
    task->run_ms = 0;
    task->here = 1;
    if (here) {
        sn_planner_run_one(task);
        return 1;
    }
    pthread_mutex_lock(&sn_planner_mu);
    if (sn_planner_start_locked() != 0) {
        pthread_mutex_unlock(&sn_planner_mu);
        sn_planner_run_one(task);
        return 1;
    }
    task->here = 0;
    if (sn_planner_tail)
        sn_planner_tail->next = task;
    else
        sn_planner_head = task;
    sn_planner_tail = task;
    pthread_cond_signal(&sn_planner_work);
    pthread_mutex_unlock(&sn_planner_mu);
    return 0;
}
