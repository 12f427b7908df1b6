/*
 * sn_init.c — libsn's lifecycle: per-thread state, lazy thread-safe
 * initialisation on the first intercepted call, and the load-time reading
 * of the SN_* options (so that SN_HELP and malformed values are reported
 * even by a program that never reaches CUDA).
 *
 * Initialisation resolves the real functions and sets up the core; it calls
 * no CUDA function, so it cannot recurse into a wrapper. A thread arriving
 * while another initialises waits; the initialising thread itself passes
 * straight through.
 *
 * A forked child steps aside for good: it has one thread, and every lock
 * another thread of the parent held at the fork stays held in it forever,
 * so the child never takes one. Its wrappers pass straight through, it
 * writes no report (the parent's is the run's) and it touches none of the
 * parent's CUDA state (events, streams) that libsn holds.
 */
#include "shim/sn_entry.h"

#include <pthread.h>
#include <sched.h>

#include "core/sn_core.h"
#include "common/sn_log.h"
#include "common/sn_options.h"

/* (the per-thread state and sn_forked_child are common/'s: the core reads
 * them too) */
int sn_init_state;
int sn_active;

int sn_init_slow(void)
{
    int s = __atomic_load_n(&sn_init_state, __ATOMIC_ACQUIRE);
    if (s == SN_READY)
        return 1;
    if (sn_thread.initialising)
        return 0;
    int expected = SN_UNINIT;
    if (__atomic_compare_exchange_n(&sn_init_state, &expected, SN_INITIALISING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        sn_thread.initialising = 1;
        sn_options_load();
        int found = sn_resolve_all();
        sn_debug("resolved %d of %d real functions", found, SN_HOOK_COUNT);
        if (sn_opt.mode != SN_MODE_OFF) {
            sn_core_init();
            __atomic_store_n(&sn_active, 1, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&sn_init_state, SN_READY, __ATOMIC_RELEASE);
        sn_thread.initialising = 0;
        return 1;
    }
    while (__atomic_load_n(&sn_init_state, __ATOMIC_ACQUIRE) != SN_READY)
        sched_yield();
    return 1;
}

static void sn_on_fork_child(void)
{
    __atomic_store_n(&sn_forked_child, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&sn_active, 0, __ATOMIC_RELEASE);
    /* an initialisation another thread had begun will never finish here */
    __atomic_store_n(&sn_init_state, SN_READY, __ATOMIC_RELEASE);
    sn_thread.depth = 0;
    sn_thread.initialising = 0;
}

__attribute__((constructor)) static void sn_on_load(void)
{
    sn_options_load();
    pthread_atfork(NULL, NULL, sn_on_fork_child);
}

__attribute__((destructor)) static void sn_on_unload(void)
{
    /* also when libsn never saw a call: the report then says why */
    if (!__atomic_load_n(&sn_forked_child, __ATOMIC_ACQUIRE) && sn_opt.mode != SN_MODE_OFF)
        sn_core_finish_unloading();
}
