/*
 * vmm.c — CUDA virtual memory management on the simulated device.
 *
 * cuMemAddressReserve carves addresses from the device's VMM region (which
 * stays PROT_NONE); cuMemCreate takes a physical piece of the device's memfd
 * and charges its size against capacity; cuMemMap maps that piece at the
 * reserved address with no access; cuMemSetAccess opens it; cuMemUnmap
 * restores the PROT_NONE reservation. Touching a reserved range that is not
 * mapped and accessible therefore faults, in the arithmetic (a real SIGSEGV)
 * and in simgpu_check_range (compute off), as a GPU raises an illegal address.
 * The rules follow the driver documentation: offset 0 only, sizes and
 * addresses aligned to the granularity, maps only inside one reservation,
 * unmap of whole mappings, release deferred until the last unmap. None
 * of the calls waits for the device (an H200 returned from each while
 * earlier work still ran), so cuMemUnmap of a range that work in flight
 * still uses is an illegal address (sim_hazard_unmap_locked), as it is on
 * a GPU. Each call also costs the host its own time (sim/hostcost.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>

#include "sim/simint.h"
#include "sim/simtime.h"

static int aligned(size_t v) { return v % SIMGPU_GRANULARITY == 0; }

/* Caller holds g_sim.lock. */
static struct sim_phys *phys_of(CUmemGenericAllocationHandle h)
{
    struct sim_phys *p = (struct sim_phys *)(uintptr_t)h;
    return (p && sim_handle_has(&g_sim.phys, p)) ? p : NULL;
}

static struct simgpu_device *vmm_device_locked(uintptr_t a)
{
    struct simgpu_device *d = sim_device_of_locked(a);
    return (d && a >= d->vmm_base) ? d : NULL;
}

static void phys_free_locked(struct sim_phys *p)
{
    struct simgpu_device *d = &g_sim.dev[p->dev];
    if (d->memfd >= 0)
        fallocate(d->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)p->offset, (off_t)p->size);
    sim_rangeset_free(&d->phys_free, p->offset, p->size);
    d->used -= p->size;
    sim_handle_del(&g_sim.phys, p);
    free(p);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    (void)option;
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = SIMGPU_GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    (void)flags;
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!ptr || size == 0 || !aligned(size) || (alignment && (alignment & (alignment - 1))))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < SIMGPU_GRANULARITY)
        alignment = SIMGPU_GRANULARITY;
    struct simgpu_device *d = sim_dev(simgpu_current_device());
    pthread_mutex_lock(&g_sim.lock);
    uintptr_t a = 0;
    /* The address is a hint: honoured when free, ignored otherwise. */
    if (addr && addr % alignment == 0 && sim_rangeset_take(&d->vmm_free, addr, size) == 0)
        a = addr;
    if (!a)
        a = sim_rangeset_alloc(&d->vmm_free, size, alignment);
    if (a)
        sim_extset_insert(&d->reserved, a, size, SIM_EXT_RESERVE, 0, NULL);
    sim_host_charge_locked(SIM_HOST_VMM_RESERVE, size, 0);
    pthread_mutex_unlock(&g_sim.lock);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)a;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = vmm_device_locked(ptr);
    struct sim_extent *r = d ? sim_extset_find(&d->reserved, ptr) : NULL;
    if (r && r->base == ptr && r->size == size) {
        /* Freeing addresses that still have memory mapped is an error. */
        int busy = 0;
        for (size_t i = 0; !busy && i < d->live.n; i++)
            if (d->live.v[i].base >= ptr && d->live.v[i].base < ptr + size)
                busy = 1;
        if (!busy) {
            sim_extset_remove(&d->reserved, ptr);
            sim_rangeset_free(&d->vmm_free, ptr, size);
            sim_host_charge_locked(SIM_HOST_VMM_ADDRESS_FREE, size, 0);
            rc = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!handle || !prop || flags || size == 0 || !aligned(size))
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    struct simgpu_device *d = sim_dev(prop->location.id);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_phys *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_sim.lock);
    if (sim_fault_alloc_locked() || sim_charge_locked(d, size) != 0) {
        sim_host_charge_locked(SIM_HOST_VMM_CREATE, 0, 0);
        pthread_mutex_unlock(&g_sim.lock);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uintptr_t off = sim_rangeset_alloc(&d->phys_free, size, SIMGPU_GRANULARITY);
    if (!off) {
        d->used -= size;
        sim_host_charge_locked(SIM_HOST_VMM_CREATE, 0, 0);
        pthread_mutex_unlock(&g_sim.lock);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = (struct sim_phys){d->index, off, size, 0, 0};
    sim_handle_add(&g_sim.phys, p);
    sim_host_charge_locked(SIM_HOST_VMM_CREATE, size, 0);
    pthread_mutex_unlock(&g_sim.lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_phys *p = phys_of(handle);
    if (!p || p->released) {
        pthread_mutex_unlock(&g_sim.lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    p->released = 1;
    sim_host_charge_locked(SIM_HOST_VMM_RELEASE, p->size, 0);
    if (p->maps == 0)
        phys_free_locked(p);
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (offset != 0 || flags || size == 0 || !aligned(size) || !aligned(ptr))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct sim_phys *p = phys_of(handle);
    struct simgpu_device *d = vmm_device_locked(ptr);
    struct sim_extent *r = d ? sim_extset_find(&d->reserved, ptr) : NULL;
    if (!p || p->released || size > p->size || !r || ptr + size > r->base + r->size)
        goto out;
    for (uintptr_t a = ptr; a < ptr + size; a += SIMGPU_GRANULARITY)
        if (sim_extset_find(&d->live, a))
            goto out; /* already mapped */
    if (g_sim.compute && g_sim.dev[p->dev].memfd >= 0) {
        void *m = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, g_sim.dev[p->dev].memfd,
                       (off_t)p->offset);
        if (m == MAP_FAILED) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto out;
        }
    }
    sim_extset_insert(&d->live, ptr, size, SIM_EXT_MAP, 0, p);
    p->maps++;
    sim_host_charge_locked(SIM_HOST_VMM_MAP, size, 1);
    rc = CUDA_SUCCESS;
out:
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}


CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (size == 0 || !aligned(size) || !aligned(ptr))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = vmm_device_locked(ptr);
    if (!d)
        goto bad;
    /* The range must be exactly a run of whole mappings. */
    size_t maps = 0;
    for (uintptr_t a = ptr; a < ptr + size; maps++) {
        struct sim_extent *m = sim_extset_find(&d->live, a);
        if (!m || m->base != a || m->kind != SIM_EXT_MAP || a + m->size > ptr + size)
            goto bad;
        a += m->size;
    }
    /* No wait for the device: work still using the range is a fault
     * (sim_hazard_unmap_locked). Then the call's own cost, which follows
     * the number of mappings (sim/hostcost.c). */
    sim_hazard_unmap_locked(d, ptr, size);
    sim_host_charge_locked(SIM_HOST_VMM_UNMAP, size, maps);
    for (uintptr_t a = ptr; a < ptr + size;) {
        struct sim_extent *m = sim_extset_find(&d->live, a);
        struct sim_phys *p = m->data;
        size_t ms = m->size;
        sim_extset_remove(&d->live, a);
        sim_hazard_forget_locked(d, a, ms);
        if (g_sim.compute && d->memfd >= 0)
            mmap((void *)a, ms, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        if (--p->maps == 0 && p->released)
            phys_free_locked(p);
        a += ms;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
bad:
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = -1;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !sim_dev(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        int pr = desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? (PROT_READ | PROT_WRITE)
                 : desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                 : desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE    ? 0
                                                                      : -1;
        if (pr < 0)
            return CUDA_ERROR_INVALID_VALUE;
        /* The simulated devices share one address space: the widest access
         * granted to any device is what the CPU-side arithmetic gets. */
        if (pr > prot)
            prot = pr;
    }
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = vmm_device_locked(ptr);
    if (!d)
        goto bad;
    size_t maps = 0;
    for (uintptr_t a = ptr; a < ptr + size; maps++) {
        struct sim_extent *m = sim_extset_find(&d->live, a);
        if (!m || m->kind != SIM_EXT_MAP)
            goto bad;
        a = m->base + m->size;
    }
    /* no wait for the device (measured on an H200: the call returns while
     * earlier work still runs) */
    sim_host_charge_locked(SIM_HOST_VMM_SET_ACCESS, size, maps);
    for (uintptr_t a = ptr; a < ptr + size;) {
        struct sim_extent *m = sim_extset_find(&d->live, a);
        m->prot = prot;
        if (g_sim.compute && d->memfd >= 0)
            mprotect((void *)m->base, m->size, prot);
        a = m->base + m->size;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_SUCCESS;
bad:
    pthread_mutex_unlock(&g_sim.lock);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    CUresult need = sim_need_init();
    if (need != CUDA_SUCCESS)
        return need;
    simgpu_init();
    if (!g_sim.vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_sim.lock);
    struct simgpu_device *d = vmm_device_locked(ptr);
    struct sim_extent *m = d ? sim_extset_find(&d->live, ptr) : NULL;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (m && m->kind == SIM_EXT_MAP) {
        *flags = m->prot == (PROT_READ | PROT_WRITE) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : m->prot == PROT_READ              ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                                      : CU_MEM_ACCESS_FLAGS_PROT_NONE;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&g_sim.lock);
    return rc;
}
