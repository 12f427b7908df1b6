/*
 * sn_planner.h — libsn's planning thread. Making a plan takes seconds of
 * host time for a large network (ResNet-101 b128: about 20 s per
 * candidate); made on the framework's thread it would hold every thread
 * of the framework that touches CUDA for that long. Instead the framework
 * hands a task to this thread and runs on under demand residency; the
 * task's done hook publishes the result (manage mode swaps it in at a
 * later call). Tasks run one at a time, in the order given.
 *
 * The thread holds no libsn lock while a task runs and makes no CUDA
 * call; a task's done hook may take libsn's locks (it holds nothing else).
 * The thread is started at the first task, so a run that never plans
 * never has it.
 */
#ifndef SN_PLANNER_H
#define SN_PLANNER_H

typedef struct sn_planner_task sn_planner_task;
struct sn_planner_task {
    void (*run)(sn_planner_task *);  /* the work, no lock held */
    void (*done)(sn_planner_task *); /* then, on the same thread */
    sn_planner_task *next;           /* (the queue's) */
    double run_ms;                   /* host time run took (for done) */
    int here;                        /* run on the caller's thread (for done) */
};

/* Runs task (run and done set by the caller; the caller holds no libsn
 * lock): on the planning thread, or, with here set or when no thread
 * could be started, on the caller's, done hook included, before
 * returning. From then on the task belongs to its done hook, which may
 * hand it on: the planner never touches it after the hook is called.
 * Returns 1 when the task ran on the caller's thread, 0 when it was
 * queued. */
int sn_planner_submit(sn_planner_task *task, int here);
/* Milliseconds on a monotonic clock (never a hooked call). */
double sn_planner_now_ms(void);

#endif
