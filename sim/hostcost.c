/*
 * hostcost.c — what the memory-management calls cost the host: the time the
 * simulated host clock advances in cudaMalloc, cudaFree, cudaHostAlloc,
 * cudaFreeHost and the VMM calls (cuMemCreate, cuMemMap, cuMemSetAccess,
 * cuMemUnmap, cuMemRelease, cuMemAddressReserve/Free), beyond any wait for
 * the device they imply (which their callers model).
 *
 * Every constant lives in the one table below, with its source; the table in
 * docs/sim-runtime.md ("Host-side cost of memory management") gives the
 * figures each was taken from. The same costs apply on every profile: no
 * published measurement covers these calls on more than one of the GPUs the
 * profiles stand for, so a per-profile split would be invented.
 */
#include "sim/simint.h"
#include "sim/simtime.h"

#define HOST_PAGE ((size_t)4096) /* the page the pinning measurements were taken with */

enum cost_unit {
    PER_CALL,     /* no part that scales */
    PER_GRANULE,  /* 2 MiB of device memory (SIMGPU_GRANULARITY), rounded up */
    PER_PAGE,     /* 4 KiB of host memory, rounded up */
    PER_MAPPING,  /* each VMM mapping (physical allocation) the range covers */
};

struct host_cost {
    double fixed_ns;
    double unit_ns;
    enum cost_unit unit;
};

/* Sources (docs/sim-runtime.md, "Host-side cost of memory management"):
 *   [vmm]  ovg-project/kvcached benchmarks/bench_vmm/README.md @32b7578:
 *          A100 80GB, one thread, 4096 calls on 2 MiB pages, idle device:
 *          cuMemCreate 193.32 us, cuMemMap 1.45, cuMemSetAccess 35.99,
 *          cuMemUnmap 25.63 (averages); cuMemAddressReserve of 8 GiB 19 us.
 *          A second sample of the same program (magnate3/linux-riscv-dev
 *          nccl/gpu/shm/bench_vmm/README.md, a 25 GB GPU) measured
 *          cuMemCreate at 7.58 us.
 *   [pt]   pytorch/pytorch#96995 (CUDACachingAllocator.cpp, expandable
 *          segments): mapping cost follows the number of physical
 *          allocations, not their size.
 *   [pin]  ikawrakow/ik_llama.cpp#1517: cudaMallocHost of 33.38 GiB in
 *          7956.8 ms (0.909 us per 4 KiB page); Boyer, "Memory allocation
 *          overhead" (cs.virginia.edu/~mwb7w/cuda_support): cudaMallocHost
 *          about 2,300 us per call up to 1 MB.
 *   [mal]  Cytnx-dev/Cytnx#850: cudaMalloc + empty launch + cudaFree of a
 *          small array 14.0 us per round (GTX 1660 SUPER / RTX 2080 Ti).
 *   Where no measurement was found the value is marked "assumed". */
static const struct host_cost k_costs[SIM_HOST_OP_COUNT] = {
    /* [mal] split 6 + 4 us; size term assumed (one page-table update per 2 MiB) */
    [SIM_HOST_MALLOC] = {6000.0, 2000.0, PER_GRANULE},
    [SIM_HOST_FREE] = {4000.0, 1000.0, PER_GRANULE},
    /* [pin]; unpinning assumed: cudaFree's fixed part, a tenth of pinning per page */
    [SIM_HOST_PIN] = {2300000.0, 909.0, PER_PAGE},
    [SIM_HOST_UNPIN] = {4000.0, 90.0, PER_PAGE},
    /* [vmm]: the second sample's 7.58 us as the call, the rest of the A100's per granule */
    [SIM_HOST_VMM_CREATE] = {7580.0, 185740.0, PER_GRANULE},
    /* assumed: cuMemCreate's fixed part */
    [SIM_HOST_VMM_RELEASE] = {7580.0, 0.0, PER_CALL},
    /* [vmm]; freeing the addresses assumed to cost what reserving them does */
    [SIM_HOST_VMM_RESERVE] = {19000.0, 0.0, PER_CALL},
    [SIM_HOST_VMM_ADDRESS_FREE] = {19000.0, 0.0, PER_CALL},
    /* [vmm], [pt]: cuMemMap's 1.45 us as any VMM call's own cost; setting
     * access and unmapping pay the rest of their figure per mapping */
    [SIM_HOST_VMM_MAP] = {1450.0, 0.0, PER_CALL},
    [SIM_HOST_VMM_SET_ACCESS] = {1450.0, 34540.0, PER_MAPPING},
    [SIM_HOST_VMM_UNMAP] = {1450.0, 24180.0, PER_MAPPING},
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
    return (uint64_t)(c->fixed_ns + c->unit_ns * units_of(c->unit, bytes, mappings) + 0.5);
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
