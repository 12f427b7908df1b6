/*
 * fatbin.h — kernel parameter layouts read from a registered fat binary.
 *
 * The real driver answers cudaFuncGetParamInfo for an nvcc-built kernel from
 * the metadata nvcc leaves in the fat binary; the simulated runtime does the
 * same with these functions (format notes in sim/fatbin.c and
 * docs/sim-runtime.md). A fat binary is read once, when the first layout of
 * one of its kernels is asked for, and stays indexed until it is
 * unregistered.
 */
#ifndef SIMGPU_FATBIN_H
#define SIMGPU_FATBIN_H

#include <stdint.h>

struct simfb_param {
    uint32_t offset, size;
};

typedef struct simfb simfb;

/* Reads the fat binary that nvcc's start-up code registers (the
 * __fatBinC_Wrapper_t handed to __cudaRegisterFatBinary): unpacks its
 * entries and indexes the kernels they describe. NULL when it is not a fat
 * binary this reader understands (or memory runs out): then no kernel of it
 * has a known layout. */
simfb *simfb_load(const void *wrapper);

/* The layout of the kernel whose device symbol is name: the number of
 * parameters (0 for none), with *params a malloc'd array of that many
 * (NULL for none) that the caller frees. -1 when the fat binary says
 * nothing readable about the kernel. The cubins answer first; PTX entries
 * are unpacked the first time they do not. Not thread-safe: the caller
 * serialises the calls on one fat binary. */
int simfb_params(simfb *fb, const char *name, struct simfb_param **params);

void simfb_free(simfb *fb);

#endif
