/*
 * simint.h — data structures private to the simulated driver: the device
 * table, address-range bookkeeping and the timeline state. Only sim/device.c,
 * sim/vmm.c, sim/timeline.c, sim/driver.c and sim/ranges.c include it.
 */
#ifndef SIMGPU_SIMINT_H
#define SIMGPU_SIMINT_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include "sim/simcore.h"

/* Free address segments, kept sorted and coalesced (first fit). */
struct sim_range { uintptr_t base; size_t size; };
struct sim_rangeset { struct sim_range *v; size_t n, cap; };
void sim_rangeset_init(struct sim_rangeset *rs, uintptr_t base, size_t size);
uintptr_t sim_rangeset_alloc(struct sim_rangeset *rs, size_t size, size_t align); /* 0 if none */
int sim_rangeset_take(struct sim_rangeset *rs, uintptr_t base, size_t size);      /* 0 ok */
void sim_rangeset_free(struct sim_rangeset *rs, uintptr_t base, size_t size);
int sim_rangeset_containing(const struct sim_rangeset *rs, uintptr_t a, uintptr_t *base, size_t *size);

/* Live extents (heap allocations, VMM mappings, reservations, pinned host
 * buffers), kept sorted by base for interior-pointer lookup. */
enum { SIM_EXT_HEAP = 1, SIM_EXT_MAP, SIM_EXT_RESERVE, SIM_EXT_PINNED };
struct sim_extent { uintptr_t base; size_t size; int kind; int prot; void *data; };
struct sim_extset { struct sim_extent *v; size_t n, cap; };
struct sim_extent *sim_extset_find(const struct sim_extset *s, uintptr_t a);
void sim_extset_insert(struct sim_extset *s, uintptr_t base, size_t size, int kind, int prot, void *data);
void sim_extset_remove(struct sim_extset *s, uintptr_t base);

/* A VMM physical allocation (cuMemCreate). */
struct sim_phys {
    uint64_t magic;
    int dev;
    size_t offset, size;   /* in the device's memfd */
    int maps;              /* live mappings */
    int released;          /* cuMemRelease called */
};

struct simgpu_device {
    int index;
    const simgpu_profile *prof;
    size_t capacity, used, peak;
    uintptr_t heap_base, vmm_base;
    size_t heap_span, vmm_span, phys_span;
    struct sim_rangeset heap_free, vmm_free, phys_free;
    struct sim_extset live;       /* heap allocations and VMM mappings */
    struct sim_extset reserved;   /* cuMemAddressReserve ranges */
    int memfd;
    /* timeline */
    uint64_t engine_free[3];
    uint64_t busy_ns[3];
    uint64_t legacy_ready;        /* legacy default stream */
    uint64_t blocking_max;        /* max ready of blocking streams */
    uint64_t all_max;             /* max ready of every stream */
    uint64_t ops;
    uint64_t bytes_h2d, bytes_d2h, bytes_d2d;
};

struct simgpu_global {
    pthread_mutex_t lock;         /* recursive; guards everything here */
    int ndev, compute, vmm, stats;
    struct simgpu_device dev[SIMGPU_MAX_DEVICES];
    struct sim_extset pinned;
    size_t pinned_bytes;
    uint64_t host_hwm;            /* latest host time any thread reached */
};
extern struct simgpu_global g_sim;

struct simgpu_device *sim_dev(int i);
int sim_charge_locked(struct simgpu_device *d, size_t bytes);

#endif
