/*
 * test_trainer_models.c — the trainer's networks are the published ones.
 *
 * Parameter counts of the full-size networks are compared with the figures
 * of the reference implementations (torchvision for ResNet and DenseNet,
 * the VGG paper, Caffe's AlexNet without groups), and the shapes at the
 * Inception-v4 block boundaries with the paper's. Depth formulas (VGG's
 * deep variants, CIFAR ResNet, SuperNeurons-style deep ResNet) are checked
 * by counting weighted layers. No device is involved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench/sntrain/net.h"

static net *build(const char *kind, int depth, int input, int batch)
{
    net_options o = {.kind = kind, .depth = depth, .input = input, .batch = batch};
    net *n = build_network(&o);
    assert_non_null(n);
    return n;
}

static int count_layers(const net *n, enum layer_type t, const char *skip_substring)
{
    int c = 0;
    for (int i = 0; i < n->nlayers; i++)
        if (n->layers[i].type == t &&
            !(skip_substring && strstr(n->layers[i].name, skip_substring)))
            c++;
    return c;
}

static const tensor *find_tensor(const net *n, const char *name)
{
    for (int t = 0; t < n->ntensors; t++)
        if (strcmp(n->tensors[t].name, name) == 0)
            return &n->tensors[t];
    fail_msg("no tensor %s", name);
    return NULL;
}

static void expect_params(const char *kind, int depth, int input, size_t expected)
{
    net *n = build(kind, depth, input, 2);
    size_t got = net_param_count(n);
    if (got != expected)
        fail_msg("%s-%d: %zu parameters, expected %zu", kind, depth, got, expected);
    net_free(n);
}

static void test_vgg_parameter_counts(void **state)
{
    (void)state;
    expect_params("vgg", 16, 224, 138357544);
    expect_params("vgg", 19, 224, 143667240);
}

static void test_alexnet_parameter_count(void **state)
{
    (void)state;
    /* bvlc_alexnet has 60,965,224; without its two-group convolutions
     * conv2, conv4 and conv5 see all input channels: +1,413,120. */
    expect_params("alexnet", 8, 227, 62378344);
}

static void test_resnet_parameter_counts(void **state)
{
    (void)state;
    expect_params("resnet", 18, 224, 11689512);
    expect_params("resnet", 34, 224, 21797672);
    expect_params("resnet", 50, 224, 25557032);
    expect_params("resnet", 101, 224, 44549160);
    expect_params("resnet", 152, 224, 60192808);
}

static void test_densenet_parameter_count(void **state)
{
    (void)state;
    expect_params("densenet", 121, 224, 7978856);
}

static void test_inception_v4_shapes(void **state)
{
    (void)state;
    net *n = build("inception", 14, 299, 2);
    const tensor *stem = find_tensor(n, "stem.join3.concat");
    assert_int_equal(stem->s.c, 384);
    assert_int_equal(stem->s.h, 35);
    const tensor *ra = find_tensor(n, "redA.concat");
    assert_int_equal(ra->s.c, 1024);
    assert_int_equal(ra->s.h, 17);
    const tensor *rb = find_tensor(n, "redB.concat");
    assert_int_equal(rb->s.c, 1536);
    assert_int_equal(rb->s.h, 8);
    const tensor *c3 = find_tensor(n, "incC3.concat");
    assert_int_equal(c3->s.c, 1536);
    /* 4 A, 7 B, 3 C blocks, each joined by one concatenation. */
    assert_int_equal(count_layers(n, L_CONCAT, "stem"), 4 + 1 + 7 + 1 + 3);
    net_free(n);
}

static void test_depth_formulas(void **state)
{
    (void)state;
    /* VGG-D: D-3 convolutions and 3 FC layers, also for the deep variants. */
    int depths[] = {11, 16, 19, 116, 416};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        net *n = build("vgg", depths[i], 32, 2);
        assert_int_equal(count_layers(n, L_CONV, NULL), depths[i] - 3);
        assert_int_equal(count_layers(n, L_FC, NULL), 3);
        net_free(n);
    }
    /* CIFAR ResNet 6n+2: 6n+1 convolutions besides the projections + 1 FC. */
    net *n = build("resnet", 56, 32, 2);
    assert_int_equal(count_layers(n, L_CONV, ".proj"), 55);
    assert_int_equal(count_layers(n, L_ADD, NULL), 27);
    net_free(n);
    /* SuperNeurons-style deep bottleneck ResNet: stages {3, 8, N, 3}. */
    n = build("resnet", 1919, 224, 1);
    assert_int_equal(count_layers(n, L_CONV, ".proj") + 1, 1919);
    net_free(n);
    /* DenseNet-BC for CIFAR: depth 6n+4. */
    n = build("densenet", 100, 32, 2);
    assert_int_equal(count_layers(n, L_CONV, NULL) + 1, 100);
    net_free(n);
}

static void test_every_tensor_is_consumed_and_in_order(void **state)
{
    (void)state;
    const char *kinds[] = {"alexnet", "vgg", "resnet", "inception", "densenet"};
    for (size_t k = 0; k < 5; k++) {
        net_options o = {.kind = kinds[k]};
        net *n = build_network(&o);
        assert_non_null(n);
        for (int i = 0; i < n->nlayers; i++)
            for (int j = 0; j < n->layers[i].nin; j++)
                assert_true(n->tensors[n->layers[i].in[j]].producer < i ||
                            n->layers[i].in[j] == n->label_tensor);
        assert_int_equal(n->layers[n->nlayers - 1].type, L_SOFTMAX_LOSS);
        net_free(n);
    }
}

static void test_small_variants_build(void **state)
{
    (void)state;
    /* The sizes the trainer tests use must stay valid networks. */
    net_options opts[] = {
        {.kind = "alexnet", .input = 67, .width = 8, .batch = 4, .classes = 10},
        {.kind = "vgg", .depth = 11, .input = 32, .width = 4, .batch = 4},
        {.kind = "resnet", .depth = 8, .input = 16, .width = 4, .batch = 4},
        {.kind = "inception", .depth = 3, .input = 16, .width = 2, .batch = 4},
        {.kind = "densenet", .depth = 10, .input = 16, .width = 4, .batch = 4},
    };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        net *n = build_network(&opts[i]);
        assert_non_null(n);
        assert_int_equal(n->classes, 10);
        net_free(n);
    }
}

static void test_dump_graph_lists_layers(void **state)
{
    (void)state;
    net *n = build("resnet", 8, 16, 2);
    char path[] = "/tmp/sntrain-graph-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(net_dump(n, path, "caffe"), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int layers = 0, tensors = 0, params = 0, header = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "layer ", 6) == 0) layers++;
        if (strncmp(line, "tensor ", 7) == 0) tensors++;
        if (strncmp(line, "param ", 6) == 0) params++;
        if (strncmp(line, "net resnet ", 11) == 0) header++;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(header, 1);
    assert_int_equal(layers, n->nlayers);
    assert_int_equal(tensors, n->ntensors);
    assert_int_equal(params, n->nparams);
    net_free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vgg_parameter_counts),
        cmocka_unit_test(test_alexnet_parameter_count),
        cmocka_unit_test(test_resnet_parameter_counts),
        cmocka_unit_test(test_densenet_parameter_count),
        cmocka_unit_test(test_inception_v4_shapes),
        cmocka_unit_test(test_depth_formulas),
        cmocka_unit_test(test_every_tensor_is_consumed_and_in_order),
        cmocka_unit_test(test_small_variants_build),
        cmocka_unit_test(test_dump_graph_lists_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
