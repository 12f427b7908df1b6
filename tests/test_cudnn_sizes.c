/*
 * test_cudnn_sizes.c — descriptor size arithmetic of the simulated cuDNN at
 * the limits: tensors, filters and convolution/pooling output shapes whose
 * element counts or extents overflow 32 or even 64 bits. cuDNN refuses a
 * tensor of more than 2 Giga-elements (CUDNN_STATUS_NOT_SUPPORTED) and
 * shapes it cannot represent (CUDNN_STATUS_BAD_PARAM); the simulator must
 * do the same, compute legal large sizes exactly, and never overflow a
 * signed integer on the way (the undefined-behaviour build aborts on that).
 *
 * Descriptors are host objects: nothing here touches device memory.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/test_cudnn_util.h"

static void test_tensor_element_count_overflowing_int32(void **state)
{
    (void)state;
    cudnnTensorDescriptor_t t;
    CHECK_DNN(cudnnCreateTensorDescriptor(&t));
    /* 4 x 1024^3 = 2^32 elements: the packed strides of N no longer fit. */
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 4, 1024, 1024, 1024),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 4, 1024, 1024, 1024),
                     CUDNN_STATUS_NOT_SUPPORTED);
    int dim5[5] = {2, 1024, 1024, 1024, 1};
    assert_int_equal(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 5, dim5),
                     CUDNN_STATUS_NOT_SUPPORTED);
    /* The largest count cuDNN takes is INT_MAX; one more element is refused. */
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, INT_MAX),
                     CUDNN_STATUS_SUCCESS);
    size_t bytes = 0;
    CHECK_DNN(cudnnGetTensorSizeInBytes(t, &bytes));
    assert_true(bytes == (size_t)INT_MAX * 4);
    assert_int_equal(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, INT_MAX / 2 + 1),
                     CUDNN_STATUS_NOT_SUPPORTED);
    CHECK_DNN(cudnnDestroyTensorDescriptor(t));
}

static void test_tensor_element_count_overflowing_int64(void **state)
{
    (void)state;
    cudnnTensorDescriptor_t t;
    CHECK_DNN(cudnnCreateTensorDescriptor(&t));
    /* Eight dimensions of 2^16: 2^128 elements. */
    int dim[8], stride[8];
    for (int i = 0; i < 8; i++) {
        dim[i] = 1 << 16;
        stride[i] = 1;
    }
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 8, dim, stride), CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, dim),
                     CUDNN_STATUS_NOT_SUPPORTED);
    for (int i = 0; i < 8; i++)
        dim[i] = INT_MAX;
    assert_int_equal(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_DOUBLE, 8, dim),
                     CUDNN_STATUS_NOT_SUPPORTED);
    /* A refused set leaves the descriptor unset. */
    size_t bytes;
    assert_int_equal(cudnnGetTensorSizeInBytes(t, &bytes), CUDNN_STATUS_BAD_PARAM);
    CHECK_DNN(cudnnDestroyTensorDescriptor(t));
}

static void test_tensor_span_in_64_bits(void **state)
{
    (void)state;
    cudnnTensorDescriptor_t t;
    CHECK_DNN(cudnnCreateTensorDescriptor(&t));
    /* Two elements INT_MAX apart: an 8 GiB span, exact only in 64 bits. */
    int dim[3] = {2, 1, 1}, stride[3] = {INT_MAX, 1, 1};
    CHECK_DNN(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 3, dim, stride));
    size_t bytes = 0;
    CHECK_DNN(cudnnGetTensorSizeInBytes(t, &bytes));
    assert_true(bytes == ((size_t)INT_MAX + 1) * 4);
    /* INT_MAX elements INT_MAX apart: about 2^64 bytes, which nothing can
     * address; refused rather than wrapped. */
    int far_dim[3] = {INT_MAX, 1, 1}, far_stride[3] = {INT_MAX, 1, 1};
    assert_int_equal(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 3, far_dim, far_stride), CUDNN_STATUS_BAD_PARAM);
    CHECK_DNN(cudnnDestroyTensorDescriptor(t));
}

static void test_filter_element_count(void **state)
{
    (void)state;
    cudnnFilterDescriptor_t f;
    CHECK_DNN(cudnnCreateFilterDescriptor(&f));
    /* 65536 x 65536 x 3 x 3: more than 2^35 elements. */
    assert_int_equal(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 65536, 65536, 3, 3),
                     CUDNN_STATUS_BAD_PARAM);
    int dim[8];
    for (int i = 0; i < 8; i++)
        dim[i] = 1 << 16;
    assert_int_equal(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, dim),
                     CUDNN_STATUS_BAD_PARAM);
    size_t bytes;
    assert_int_equal(cudnnGetFilterSizeInBytes(f, &bytes), CUDNN_STATUS_BAD_PARAM); /* still unset */
    CHECK_DNN(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, INT_MAX));
    CHECK_DNN(cudnnGetFilterSizeInBytes(f, &bytes));
    assert_true(bytes == (size_t)INT_MAX * 4);
    CHECK_DNN(cudnnDestroyFilterDescriptor(f));
}

static void test_convolution_output_shape_limits(void **state)
{
    (void)state;
    cudnnTensorDescriptor_t x;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    CHECK_DNN(cudnnCreateTensorDescriptor(&x));
    CHECK_DNN(cudnnCreateFilterDescriptor(&w));
    CHECK_DNN(cudnnCreateConvolutionDescriptor(&c));
    CHECK_DNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1 << 30));
    CHECK_DNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, 3));
    int n, ch, h, wd;

    /* Padded width 2^30 + 2^31: an output width past INT_MAX. */
    CHECK_DNN(cudnnSetConvolution2dDescriptor(c, 0, 1 << 30, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    assert_int_equal(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd), CUDNN_STATUS_BAD_PARAM);

    /* Padded width exactly 2^31: the output width 2^31 - 2 still fits. */
    CHECK_DNN(cudnnSetConvolution2dDescriptor(c, 0, 1 << 29, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CHECK_DNN(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd));
    assert_int_equal(n, 1);
    assert_int_equal(ch, 1);
    assert_int_equal(h, 1);
    assert_int_equal(wd, INT_MAX - 1);

    /* A dilation that stretches a 3-tap filter over 2^32 inputs. */
    CHECK_DNN(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, INT_MAX, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    assert_int_equal(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd), CUDNN_STATUS_BAD_PARAM);

    /* Filter channels times groups past INT_MAX cannot equal the input's. */
    CHECK_DNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 65536, 1, 1));
    CHECK_DNN(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CHECK_DNN(cudnnSetConvolutionGroupCount(c, 65536));
    CHECK_DNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
    assert_int_equal(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd), CUDNN_STATUS_BAD_PARAM);

    CHECK_DNN(cudnnDestroyConvolutionDescriptor(c));
    CHECK_DNN(cudnnDestroyFilterDescriptor(w));
    CHECK_DNN(cudnnDestroyTensorDescriptor(x));
}

static void test_pooling_output_shape_limits(void **state)
{
    (void)state;
    cudnnTensorDescriptor_t x;
    cudnnPoolingDescriptor_t p;
    CHECK_DNN(cudnnCreateTensorDescriptor(&x));
    CHECK_DNN(cudnnCreatePoolingDescriptor(&p));
    CHECK_DNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 8));
    int n, c, h, w;
    /* Padded width 8 + 2^31, stride 1: an output width past INT_MAX. */
    CHECK_DNN(cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 1, 2, 0, 1 << 30, 1, 1));
    assert_int_equal(cudnnGetPooling2dForwardOutputDim(p, x, &n, &c, &h, &w), CUDNN_STATUS_BAD_PARAM);
    /* The same with stride 2 halves it: 1 + (2^31 + 6) / 2 fits. */
    CHECK_DNN(cudnnSetPooling2dDescriptor(p, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 1, 2, 0, 1 << 30, 1, 2));
    CHECK_DNN(cudnnGetPooling2dForwardOutputDim(p, x, &n, &c, &h, &w));
    assert_int_equal(w, (1 << 30) + 4);
    assert_int_equal(h, 1);
    CHECK_DNN(cudnnDestroyPoolingDescriptor(p));
    CHECK_DNN(cudnnDestroyTensorDescriptor(x));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_element_count_overflowing_int32),
        cmocka_unit_test(test_tensor_element_count_overflowing_int64),
        cmocka_unit_test(test_tensor_span_in_64_bits),
        cmocka_unit_test(test_filter_element_count),
        cmocka_unit_test(test_convolution_output_shape_limits),
        cmocka_unit_test(test_pooling_output_shape_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
