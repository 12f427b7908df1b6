/*
 * sn_policy.h — what the policies behind sn_plan_make share, internal to
 * policy/: the model indexed by step, when a tensor's contents are dead,
 * actions under construction and how they become a plan the timeline
 * accepts, the memory a plan holds at each step if copies took no time,
 * the tensor cache that evicts under a budget (least recently used or
 * farthest next use), the feature-map swap the seed systems share, and
 * moving prefetches earlier as far as memory allows.
 *
 * A policy is one function from the indexed model to actions and per-step
 * algorithm choices; sn_plan.c checks the input, dispatches, and fills the
 * rest of the plan. Policies may emit actions loosely (an offload of what
 * is already off, a prefetch whose need is not the next access):
 * sn_pol_normalize turns them into the exact sequence sn_plan.h defines,
 * so every policy's plan is one the timeline and the executor can follow.
 */
#ifndef SN_POLICY_H
#define SN_POLICY_H

#include <stdint.h>

#include "policy/sn_plan.h"
#include "policy/sn_plan_int.h"

/* The model indexed once per sn_plan_make. */
typedef struct sn_pol {
    const sn_plan_model *m;
    uint64_t budget;
    int ns, nt;
    int *acc_off;       /* ns + 1: step s's accesses are [acc_off[s], acc_off[s + 1]) */
    int *acc_t;         /* the tensor of each */
    uint8_t *acc_mode;  /* its mode */
    int *born_off, *born_t; /* bounded tensors by alloc_step, the same way */
    int *gone_off, *gone_t; /* bounded tensors by free_step */
    int *gtbm;          /* per tensor: enum sn_gtbm_class */
    /* 1: the seed policies that leave freeing to the framework (vDNN,
     * moDNN, PoocH, Dymem) add liveness drops first, as their frameworks
     * freed a tensor between its last read and its next overwrite
     * (sn_plan_make sets it when their plan as made does not fit) */
    int framework_liveness;
    /* auto: which of its candidates to hand back (0: its own choice), and
     * where to say what they were (may be NULL) */
    int auto_rank;
    sn_plan_trials_cfg trials_cfg;
    struct sn_pol_trials *trials;
} sn_pol;

typedef struct sn_pol_trials {
    int n;                              /* candidates worth measuring, rank 0 first */
    double ms[SN_PLAN_TRIALS];          /* their predicted iteration times */
    int found;                          /* the rank asked for exists */
} sn_pol_trials;

int sn_pol_init(sn_pol *P, const sn_plan_model *m, uint64_t budget);
void sn_pol_fini(sn_pol *P);

/* Actions under construction. */
typedef struct sn_pol_acts {
    sn_plan_action *a;
    int n, cap;
    uint8_t *sync;      /* nsync (the steps) flags, or NULL: sn_plan.h's sync */
    int nsync;
} sn_pol_acts;

int sn_pol_push(sn_pol_acts *A, int op, int t, int step, int need);
int sn_pol_copy(sn_pol_acts *dst, const sn_pol_acts *src);
void sn_pol_acts_free(sn_pol_acts *A);

/* ---- the model ---------------------------------------------------------------- */

/* Mode of t's access at step s, 0 when it has none. */
unsigned sn_pol_mode_at(const sn_pol *P, int t, int s);
/* The step of t's first access strictly after s, or -1: the next
 * iteration's first access for a tensor that lives throughout, none past
 * its free for a bounded one. mode receives its mode when not NULL. */
int sn_pol_next_use(const sn_pol *P, int t, int s, unsigned *mode);
/* The step of t's last access strictly before s, looking back into the
 * previous iteration for a tensor that lives throughout; -1 when none. */
int sn_pol_prev_use(const sn_pol *P, int t, int s);
/* 1 when t's contents after step s are never read: its next access maps
 * it fresh, or it is freed first (or never accessed at all). */
int sn_pol_dead_after(const sn_pol *P, int t, int s);
/* Steps from a to b going forward around the iteration (0 when equal). */
int sn_pol_dist(const sn_pol *P, int a, int b);

/* Workspace here is always memory beyond the buffer the step names
 * itself (sn_plan_extra_workspace): what choosing an algorithm costs.
 * sn_pol_extra: algorithm a of step s; sn_pol_ws: the one algo[] picks (0
 * without a choice). The fastest algorithm (least workspace on a tie) and
 * the memory-optimal one (least workspace, fastest on a tie); -1 without a
 * choice. */
uint64_t sn_pol_extra(const sn_pol *P, int s, int a);
uint64_t sn_pol_ws(const sn_pol *P, const int *algo, int s);
int sn_pol_algo_fastest(const sn_pol *P, int s);
int sn_pol_algo_minws(const sn_pol *P, int s);
double sn_pol_ms(const sn_pol *P, const int *algo, int s);
/* algo[] set to the framework's choice (every policy's starting point). */
void sn_pol_algo_framework(const sn_pol *P, int *algo);
/* P with each step's workspace held for the step only (the model's
 * scratch_held off), as the seed systems free a layer's workspace and as a
 * stretch of a gathered plan holds it: P itself when it is so already,
 * else *P0 over the model copy *m0. */
const sn_pol *sn_pol_step_workspace(const sn_pol *P, sn_plan_model *m0, sn_pol *P0);

/* ---- plans ---------------------------------------------------------------------- */

/* Makes A a plan the timeline accepts and sorts it (by step, prefetches
 * first, the sooner needed first): in the steady state each prefetch finds
 * its tensor off and names its next access as need; an offload or drop
 * finds it on; a drop whose contents are read again becomes an offload; an
 * access that needs contents that are off gets a prefetch at its step;
 * actions on pinned tensors, outside a bounded tensor's life or
 * duplicating another's effect go. Returns 0 or -1 (out of memory). */
int sn_pol_normalize(const sn_pol *P, sn_pol_acts *A);
/* Sorts A as sn_pol_normalize does, changing nothing else. */
int sn_pol_sort(const sn_pol *P, sn_pol_acts *A);

/* A gathered copy of the normalized plan A (sn_policy_gather.c): sync
 * steps splitting the iteration into about `windows` stretches of equal
 * compute time, every prefetch issued at the last sync step before it,
 * and every tensor written fresh while it is off mapped there too, so that
 * with remap_drains the device waits at those steps only. With pace, an
 * offload whose copy would outlast its stretch (after the copies out
 * before it there) is issued at the next sync step instead, up to a few
 * stretches on, while its tensor is not used nor brought back in between.
 * Returns 0 or -1 (out of memory). */
int sn_pol_gather(const sn_pol *P, const sn_pol_acts *A, const int *algo, int windows, int pace, sn_pol_acts *out);
/* The same at the sync steps given (ns flags; step 0 always is one, and
 * a prefetch may add its own). */
int sn_pol_gather_at(const sn_pol *P, const sn_pol_acts *A, const int *algo, const uint8_t *sync, int pace,
                     sn_pol_acts *out);
/* Paces the gathered plan G (feasible, predicted *ms under P's budget):
 * copies moved one at a time where the timeline predicts that faster, at
 * most max_tries timelines: a copy issued in a stretch whose closing sync
 * step waits, to that sync step (an offload while its tensor is not used
 * nor brought back in between, a prefetch while that step still comes
 * before its use); a prefetch whose use waits, to the sync step before its
 * own (while its tensor has left by then). G and *ms are updated.
 * Returns the number of moves kept, or -1 (out of memory). */
int sn_pol_pace(const sn_pol *P, const int *algo, int max_tries, sn_pol_acts *G, double *ms);

/* A tensor's state while a step runs, as the profile and the cache track it. */
enum { SN_POL_OFF = 0, SN_POL_ON = 1, SN_POL_COMING = 2 };

/* Memory in use while each step runs under the normalized plan A with
 * algorithms algo, as the timeline counts it if every offload completed
 * when its step did: exceeding the budget here is exactly what makes the
 * timeline call the plan infeasible. mem (ns entries) may be NULL. Returns
 * the peak, or UINT64_MAX when out of memory. */
uint64_t sn_pol_profile(const sn_pol *P, const sn_pol_acts *A, const int *algo, uint64_t *mem);

/* sn_plan_simulate of the normalized plan A, algo under budget. Returns 0
 * or -1 (invalid, out of memory). */
int sn_pol_eval(const sn_pol *P, const sn_pol_acts *A, const int *algo, uint64_t budget,
                sn_plan_timeline *tl, uint64_t *step_mem);

/* 1 when plan a predicts better than plan b: feasible before infeasible,
 * then the shorter iteration, then fewer bytes copied (a prediction that
 * copies less leans less on the copy model), then the lower peak. */
int sn_pol_better(const sn_plan_timeline *a, const sn_plan_timeline *b);

/* ---- building blocks -------------------------------------------------------------- */

enum { SN_POL_LRU, SN_POL_BELADY, SN_POL_BELADY_COST };

/* The tensor cache: while some step of the steady state holds more than
 * budget, evicts tensors that step does not use (not pinned, not on their
 * way in), least recently used first (LRU: the eviction follows the step
 * before) or used farthest in the future first (BELADY: the eviction
 * follows the tensor's last use, contents about to be overwritten before
 * anything else; BELADY_COST measures the future in compute time and
 * subtracts the tensor's own round trip over the copy links, so that a
 * large tensor on a slow link is not the first to go). Contents still to
 * be read are offloaded and come back by
 * a prefetch at their next use (a demand miss); dead ones are dropped. A
 * step that cannot fit even with everything else gone is left as it is.
 * A is normalized on return. */
int sn_pol_cache(const sn_pol *P, sn_pol_acts *A, const int *algo, uint64_t budget, int rule);

/* A feature map's forward/backward split: its last forward access and its
 * first backward access, which reads it. 1 when t is a feature map that
 * can leave the device in between (not pinned, not empty, at least one
 * step in between), 0 otherwise. */
int sn_pol_swappable(const sn_pol *P, int t, int *lf, int *fb);
/* The step vDNN prefetches for a backward use at fb: the first backward
 * step of the layer whose backward runs just before fb's layer (fb's own
 * layer's first step when it runs first). */
int sn_pol_layer_ahead(const sn_pol *P, int fb);
/* Swaps t (sn_pol_swappable): offload after lf, prefetch at pf (need fb),
 * and, as the seed systems release a layer's input once its backward has
 * used it, drop it after its last backward use when nothing reads it
 * before it is overwritten. */
int sn_pol_swap(const sn_pol *P, sn_pol_acts *A, int t, int lf, int pf, int fb);
/* Drops t after step s when nothing reads it before its next whole
 * overwrite (or its free) and that leaves it off for at least a step. */
int sn_pol_drop_dead(const sn_pol *P, sn_pol_acts *A, int t, int s);
/* Liveness (SuperNeurons' first rule): drops every tensor after each
 * access whose contents nothing reads before the next whole overwrite,
 * when the gap is at least one step. */
int sn_pol_liveness(const sn_pol *P, sn_pol_acts *A);

enum { SN_POL_EARLY, SN_POL_JIT };

/* Moves each prefetch of A earlier, in order of need, as far as the memory
 * profile under budget allows and never before its tensor has left (EARLY),
 * or only as far as needed for the copy to finish before the use by the
 * steps' own times, memory permitting (JIT). With not_before >= 0, a prefetch
 * for a use at or after not_before is not moved before not_before (the seed systems
 * bring feature maps back during the backward pass, not in the forward
 * pass whose peak their offload relieved). A is normalized on return. */
int sn_pol_place(const sn_pol *P, sn_pol_acts *A, const int *algo, uint64_t budget, int mode,
                 int not_before);

/* ---- the policies (each fills A, normalized, and algo) ----------------------------- */

int sn_policy_run(const sn_pol *P, int policy, sn_pol_acts *A, int *algo);
int sn_policy_lru(const sn_pol *P, sn_pol_acts *A, int *algo);
int sn_policy_vdnn(const sn_pol *P, int conv_only, sn_pol_acts *A, int *algo);
int sn_policy_vdnn_dyn(const sn_pol *P, sn_pol_acts *A, int *algo);
int sn_policy_superneurons(const sn_pol *P, sn_pol_acts *A, int *algo);
int sn_policy_modnn(const sn_pol *P, sn_pol_acts *A, int *algo);
int sn_policy_pooch(const sn_pol *P, sn_pol_acts *A, int *algo);
int sn_policy_dymem(const sn_pol *P, sn_pol_acts *A, int *algo);
int sn_policy_auto(const sn_pol *P, sn_pol_acts *A, int *algo);
/* auto before its safety net: libsn's own rules only; tl receives the
 * prediction. */
int sn_policy_auto_own(const sn_pol *P, sn_pol_acts *A, int *algo, sn_plan_timeline *tl);

#endif
