/*
 * hostcost.c — what the memory-management calls cost the host: the time the
 * simulated host clock advances in cudaMalloc, cudaFree, cudaHostAlloc,
 * cudaFreeHost and the VMM calls (cuMemCreate, cuMemMap, cuMemSetAccess,
 * cuMemUnmap, cuMemRelease, cuMemAddressReserve/Free), beyond any wait for
 * the device they imply (which their callers model: cudaFree and
 * cudaFreeHost wait, the others do not).
 *
 * Every constant lives in the one table below; the table in
 * docs/sim-runtime.md ("Host-side cost of memory management") gives the
 * measurements. They were taken on one GPU (bench/gpu_run.sh on an NVIDIA
 * H200, driver 580.159.04: bench/results/gpu_h200.md) and apply on every
 * profile: no measurement covers these calls on the other GPUs the profiles
 * stand for, so a per-profile split would be invented.
 */
#include "sim/simint.h"
#include "sim/simtime.h"

#define HOST_PAGE ((size_t)4096) /* the page pinned host memory is counted in */

enum cost_unit {
    PER_CALL,     /* no part that scales */
    PER_GRANULE,  /* 2 MiB of device memory (SIMGPU_GRANULARITY), rounded up */
    PER_PAGE,     /* 4 KiB of host memory, rounded up */
    PER_MAPPING,  /* each VMM mapping (physical allocation) the range covers */
};

/* fixed + unit_ns per unit + granule_ns per 2 MiB granule of the range */
struct host_cost {
    double fixed_ns;
    double unit_ns;
    enum cost_unit unit;
    double granule_ns;
};

/* Fitted to the wall-clock means of two runs of bench/gpu_run.sh on the
 * H200 (the comments give them), idle device, one object of 2 MiB, 64 MiB
 * and 1 GiB each (10 calls per size),
 * and for cuMemSetAccess and cuMemUnmap 1, 32 and 512 mappings of 2 MiB
 * (calibrate pieces): setting access costs per mapping (22 to 33 us
 * each), so a block mapped from pieces pays it once per piece. */
static const struct host_cost k_costs[SIM_HOST_OP_COUNT] = {
    /* 42.8 / 41.0 / 103.2 us */
    [SIM_HOST_MALLOC] = {40000.0, 120.0, PER_GRANULE, 0.0},
    /* 43.5 / 70.0 / 493 us, after the wait for the device */
    [SIM_HOST_FREE] = {40000.0, 880.0, PER_GRANULE, 0.0},
    /* 0.64 / 25.0 / 409.8 ms */
    [SIM_HOST_PIN] = {0.0, 1500.0, PER_PAGE, 0.0},
    /* 0.38 / 9.9 / 111.5 ms, after the wait for the device */
    [SIM_HOST_UNPIN] = {200000.0, 430.0, PER_PAGE, 0.0},
    /* 14.9 / 12.9 / 37.3 us */
    [SIM_HOST_VMM_CREATE] = {13000.0, 47.0, PER_GRANULE, 0.0},
    /* 15.3 / 39.0 / 431 us */
    [SIM_HOST_VMM_RELEASE] = {15000.0, 810.0, PER_GRANULE, 0.0},
    /* 0.9 to 3.4 us, any size */
    [SIM_HOST_VMM_RESERVE] = {2000.0, 0.0, PER_CALL, 0.0},
    [SIM_HOST_VMM_ADDRESS_FREE] = {2000.0, 0.0, PER_CALL, 0.0},
    /* 1.3 to 3.3 us, any size */
    [SIM_HOST_VMM_MAP] = {2000.0, 0.0, PER_CALL, 0.0},
    /* one mapping 34.9 / 73.4 / 94.4 us; 32 mappings 712 us, 512 16.8 ms */
    [SIM_HOST_VMM_SET_ACCESS] = {4000.0, 28000.0, PER_MAPPING, 120.0},
    /* one mapping 17.9 / 22.1 / 30.5 us; 14.6 to 22.6 us per 2 MiB mapping */
    [SIM_HOST_VMM_UNMAP] = {0.0, 17000.0, PER_MAPPING, 25.0},
};

static double units_of(enum cost_unit u, size_t bytes, size_t mappings)
{
    switch (u) {
    case PER_GRANULE: return (double)((bytes + SIMGPU_GRANULARITY - 1) / SIMGPU_GRANULARITY);
    case PER_PAGE: return (double)((bytes + HOST_PAGE - 1) / HOST_PAGE);
    case PER_MAPPING: return (double)mappings;
    case PER_CALL: break;
    }
    return 0.0;
}

uint64_t sim_host_cost_ns(enum sim_host_op op, size_t bytes, size_t mappings)
{
    const struct host_cost *c = &k_costs[op];
    return (uint64_t)(c->fixed_ns + c->unit_ns * units_of(c->unit, bytes, mappings) +
                      c->granule_ns * units_of(PER_GRANULE, bytes, mappings) + 0.5);
}

_Static_assert(SIM_HOST_OP_COUNT <= sizeof g_sim.host_op_ns / sizeof g_sim.host_op_ns[0],
               "one counter per host operation");

void sim_host_charge_locked(enum sim_host_op op, size_t bytes, size_t mappings)
{
    uint64_t ns = sim_host_cost_ns(op, bytes, mappings);
    g_sim.host_now += ns;
    g_sim.host_op_ns[op] += ns;
    g_sim.host_op_calls[op]++;
}
