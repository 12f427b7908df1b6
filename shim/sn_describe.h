/*
 * sn_describe.h — turning cuDNN and cuBLAS arguments into sn_call ranges.
 *
 * Descriptors are read back through the real cuDNN getters, so the extents
 * are whatever the library itself will use (strides included). A value of
 * beta other than zero means the output is read as well as written.
 */
#ifndef SN_DESCRIBE_H
#define SN_DESCRIBE_H

#include "common/sn_hooks.h"
#include "common/sn_call.h"

/* Descriptors and handles are read back once and cached per thread; any
 * change to a descriptor or a handle's stream or pointer mode (all of which
 * libsn intercepts) invalidates the caches. */
void sn_describe_invalidate(void);

/* Stream of a cuDNN / cuBLAS handle (NULL, the legacy stream, on failure). */
void *sn_dnn_stream(cudnnHandle_t handle);
void *sn_blas_stream(cublasHandle_t handle);

/* Adds the tensor's range with mode and its shape. Returns the data type
 * (CUDNN_DATA_FLOAT if unknown), and through dense whether it is packed. */
cudnnDataType_t sn_dnn_tensor(sn_call *c, cudnnTensorDescriptor_t desc, const void *p,
                              unsigned mode, int *dense);
/* An output tensor scaled by *beta: read too when beta != 0; overwritten
 * entirely when beta == 0 and the layout is dense. */
void sn_dnn_output(sn_call *c, cudnnTensorDescriptor_t desc, void *p, const void *beta);
/* Filter (weights) range and shape. */
void sn_dnn_filter(sn_call *c, cudnnFilterDescriptor_t desc, const void *p, unsigned mode);
/* Output filter (weight gradient) scaled by *beta. */
void sn_dnn_filter_output(sn_call *c, cudnnFilterDescriptor_t desc, void *p, const void *beta);
/* Whether a host scaling factor is non-zero: float for float/half data,
 * double for double data (cuDNN's rule). NULL counts as non-zero. */
int sn_dnn_scale_nonzero(const void *scale, cudnnDataType_t type);

/* The configuration of a convolution call c already described (its
 * tensors' shapes and layouts are in c): c's operation with those and the
 * convolution descriptor's padding, strides, dilation, mode, compute type,
 * group count and math type, what the library's algorithms depend on; 0
 * when the descriptor cannot be read, or when no plan chooses algorithms
 * (not manage mode, SN_WORKSPACE=keep, SN_POLICY=lru). */
uint64_t sn_dnn_conv_conf(const sn_call *c, cudnnConvolutionDescriptor_t conv);

/* cuBLAS: 1 if *beta may be non-zero (device pointer mode counts as yes). */
int sn_blas_beta_nonzero(cublasHandle_t handle, const float *beta);
/* cublasPointerMode_t of the handle. */
int sn_blas_pointer_mode(cublasHandle_t handle);

#endif
