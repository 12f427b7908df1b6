/*
 * main.c — sntrain's command line and its output, which scripts and tests
 * parse (format documented in docs/trainer.md; keep it stable):
 *
 *   iter <i> loss <loss> time <ms> ms     one line per iteration, stdout
 *   phases <i> data <ms> forward <ms> backward <ms> update <ms>
 *                                         after it, with --phase-times
 *   eval <i> loss <loss> accuracy <a> time <ms> ms
 *                                         after it, with --eval-every
 *   checksum <16 hex digits>              FNV-1a of all learned weights
 *   peak <N> MiB                          largest device memory in use
 *   images/s <rate>                       over iterations 2.. (all if one)
 *
 * Everything else (the network summary, warnings, errors) goes to stderr.
 */
#include "bench/sntrain/trainer.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sntrain --net alexnet|vgg|resnet|inception|densenet [options]\n"
            "\n"
            "Trains a network on deterministic synthetic data through cuDNN and cuBLAS and\n"
            "prints one line per iteration, then the checksum of the learned weights, the\n"
            "peak device memory and the throughput.\n"
            "\n"
            "  --net NAME            network to train (required)\n"
            "  --depth D             layers: alexnet 8; vgg 16, 19, 116, 216, 316, 416, any >= 8;\n"
            "                        resnet 6n+2 for inputs <= 64 (CIFAR), else 18, 34, 50, 101,\n"
            "                        152 or any 3k+2 >= 56; inception: number of Inception\n"
            "                        blocks (14 = Inception-v4); densenet 6n+4 for inputs <= 64,\n"
            "                        else 121, 169, 201, 264 or an odd depth >= 77\n"
            "  --width W             base channel count; all channels scale with it\n"
            "                        (alexnet 96, vgg 64, resnet 64 or 16, inception 32,\n"
            "                        densenet growth rate 32 or 12)\n"
            "  --batch B             images per iteration\n"
            "  --input PIXELS        image height and width (alexnet 227, vgg/resnet/densenet\n"
            "                        224, inception 299)\n"
            "  --classes K           output classes (10 for inputs <= 64, else 1000)\n"
            "  --iters I             iterations to train (default 10)\n"
            "  --alloc STYLE         caffe (default), darknet or dynamic device allocation\n"
            "  --seed S              seed of the weights, data and dropout (default 1)\n"
            "  --lr R                learning rate (default 0.01)\n"
            "  --momentum M          SGD momentum (default 0.9)\n"
            "  --weight-decay W      L2 weight decay (default 0.0005)\n"
            "  --workspace-limit MiB largest convolution workspace per algorithm choice\n"
            "                        (default: caffe 8, darknet and dynamic 1024)\n"
            "  --kernels             do the SGD update and the loss gradient as kernel\n"
            "                        launches of host functions (simulated device only)\n"
            "  --phase-times         after each iteration line, print the device time of\n"
            "                        its data loading, forward, backward and update steps\n"
            "  --dump-graph FILE     write the layer list (type, shapes, inputs, outputs)\n"
            "  --log-allocs FILE     write every device allocation and free the trainer\n"
            "                        makes, with the buffer's role (weight, activation,\n"
            "                        gradient, workspace, ...), and a line per iteration\n"
            "  --eval-every N        after every N-th iteration, a forward-only evaluation\n"
            "                        pass over a held-out batch (batch norm with its running\n"
            "                        statistics, no dropout), printed as an 'eval' line\n"
            "  --eval-batch B        the evaluation pass's batch (default: the training\n"
            "                        batch in effect)\n"
            "  --rebatch AT:B        from iteration AT on, train at batch B; buffers are\n"
            "                        reshaped as the --alloc style's framework does\n"
            "  --prefetch MODE       the caffe style's prefetch thread: async (default, as\n"
            "                        Caffe: its copies fall among the training thread's calls\n"
            "                        wherever the scheduler puts them) or lockstep (each batch\n"
            "                        is copied while the training thread waits, so a run is\n"
            "                        the same call sequence every time; the benches use it)\n"
            "  --help                this text\n"
            "\n"
            "Defaults for --depth, --width, --batch, --input and --classes depend on the\n"
            "network (the canonical full-size configuration). Exit status: 0 success,\n"
            "1 CUDA/cuDNN/cuBLAS error, 2 bad usage, 3 out of device memory.\n");
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "sntrain: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_float(const char *opt, const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || v < 0) {
        fprintf(stderr, "sntrain: %s expects a non-negative number, got '%s'\n", opt, s);
        return -1;
    }
    *out = (float)v;
    return 0;
}

int main(int argc, char **argv)
{
    train_options o;
    memset(&o, 0, sizeof o);
    o.iters = 10;
    o.alloc = ALLOC_CAFFE;
    o.seed = 1;
    o.lr = 0.01f;
    o.momentum = 0.9f;
    o.weight_decay = 0.0005f;
    o.workspace_limit_mib = -1;
    int eval_batch_given = 0;

    enum { O_NET = 256, O_DEPTH, O_WIDTH, O_BATCH, O_INPUT, O_CLASSES, O_ITERS, O_ALLOC, O_SEED,
           O_LR, O_MOM, O_WD, O_WS, O_KERNELS, O_PHASES, O_DUMP, O_LOG_ALLOCS, O_EVAL_EVERY,
           O_EVAL_BATCH, O_REBATCH, O_PREFETCH, O_HELP };
    static const struct option longopts[] = {
        {"net", required_argument, 0, O_NET},
        {"depth", required_argument, 0, O_DEPTH},
        {"width", required_argument, 0, O_WIDTH},
        {"batch", required_argument, 0, O_BATCH},
        {"input", required_argument, 0, O_INPUT},
        {"classes", required_argument, 0, O_CLASSES},
        {"iters", required_argument, 0, O_ITERS},
        {"alloc", required_argument, 0, O_ALLOC},
        {"seed", required_argument, 0, O_SEED},
        {"lr", required_argument, 0, O_LR},
        {"momentum", required_argument, 0, O_MOM},
        {"weight-decay", required_argument, 0, O_WD},
        {"workspace-limit", required_argument, 0, O_WS},
        {"kernels", no_argument, 0, O_KERNELS},
        {"phase-times", no_argument, 0, O_PHASES},
        {"dump-graph", required_argument, 0, O_DUMP},
        {"log-allocs", required_argument, 0, O_LOG_ALLOCS},
        {"eval-every", required_argument, 0, O_EVAL_EVERY},
        {"eval-batch", required_argument, 0, O_EVAL_BATCH},
        {"rebatch", required_argument, 0, O_REBATCH},
        {"prefetch", required_argument, 0, O_PREFETCH},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    long v;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_NET: o.net.kind = optarg; break;
        case O_DEPTH:
            if (parse_long("--depth", optarg, 1, 100000, &v)) return EXIT_USAGE;
            o.net.depth = (int)v;
            break;
        case O_WIDTH:
            if (parse_long("--width", optarg, 1, 65536, &v)) return EXIT_USAGE;
            o.net.width = (int)v;
            break;
        case O_BATCH:
            if (parse_long("--batch", optarg, 1, 1 << 20, &v)) return EXIT_USAGE;
            o.net.batch = (int)v;
            break;
        case O_INPUT:
            if (parse_long("--input", optarg, 1, 65536, &v)) return EXIT_USAGE;
            o.net.input = (int)v;
            break;
        case O_CLASSES:
            if (parse_long("--classes", optarg, 2, 1 << 20, &v)) return EXIT_USAGE;
            o.net.classes = (int)v;
            break;
        case O_ITERS:
            if (parse_long("--iters", optarg, 1, 1 << 30, &v)) return EXIT_USAGE;
            o.iters = (int)v;
            break;
        case O_ALLOC:
            if (strcmp(optarg, "caffe") == 0) o.alloc = ALLOC_CAFFE;
            else if (strcmp(optarg, "darknet") == 0) o.alloc = ALLOC_DARKNET;
            else if (strcmp(optarg, "dynamic") == 0) o.alloc = ALLOC_DYNAMIC;
            else {
                fprintf(stderr, "sntrain: --alloc expects caffe, darknet or dynamic\n");
                return EXIT_USAGE;
            }
            break;
        case O_SEED:
            if (parse_long("--seed", optarg, 0, 0x7fffffffL, &v)) return EXIT_USAGE;
            o.seed = (uint64_t)v;
            break;
        case O_LR:
            if (parse_float("--lr", optarg, &o.lr)) return EXIT_USAGE;
            break;
        case O_MOM:
            if (parse_float("--momentum", optarg, &o.momentum)) return EXIT_USAGE;
            break;
        case O_WD:
            if (parse_float("--weight-decay", optarg, &o.weight_decay)) return EXIT_USAGE;
            break;
        case O_WS:
            if (parse_long("--workspace-limit", optarg, 0, 1L << 30, &v)) return EXIT_USAGE;
            o.workspace_limit_mib = v;
            break;
        case O_KERNELS: o.kernels = 1; break;
        case O_PHASES: o.phase_times = 1; break;
        case O_DUMP: o.dump_graph = optarg; break;
        case O_LOG_ALLOCS: o.log_allocs = optarg; break;
        case O_EVAL_EVERY:
            if (parse_long("--eval-every", optarg, 1, 1 << 30, &v)) return EXIT_USAGE;
            o.eval_every = (int)v;
            break;
        case O_EVAL_BATCH:
            if (parse_long("--eval-batch", optarg, 1, 1 << 20, &v)) return EXIT_USAGE;
            o.eval_batch = (int)v;
            eval_batch_given = 1;
            break;
        case O_REBATCH: {
            char *colon = strchr(optarg, ':');
            if (!colon) {
                fprintf(stderr, "sntrain: --rebatch expects AT:B (from iteration AT on, batch B), "
                                "got '%s'\n", optarg);
                return EXIT_USAGE;
            }
            *colon = 0;
            long b;
            if (parse_long("--rebatch AT", optarg, 1, 1 << 30, &v) ||
                parse_long("--rebatch B", colon + 1, 1, 1 << 20, &b))
                return EXIT_USAGE;
            o.rebatch_at = (int)v;
            o.rebatch = (int)b;
            break;
        }
        case O_PREFETCH:
            if (strcmp(optarg, "async") == 0)
                o.prefetch_lockstep = 0;
            else if (strcmp(optarg, "lockstep") == 0)
                o.prefetch_lockstep = 1;
            else {
                fprintf(stderr, "sntrain: --prefetch expects async or lockstep\n");
                return EXIT_USAGE;
            }
            break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sntrain: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (eval_batch_given && !o.eval_every) {
        fprintf(stderr, "sntrain: --eval-batch needs --eval-every\n");
        return EXIT_USAGE;
    }
    if (!o.net.kind) {
        fprintf(stderr, "sntrain: --net is required\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!network_known(o.net.kind)) {
        fprintf(stderr, "sntrain: unknown network '%s' (alexnet, vgg, resnet, inception, "
                        "densenet)\n",
                o.net.kind);
        return EXIT_USAGE;
    }

    net *n = build_network(&o.net);
    if (!n)
        return EXIT_USAGE;
    fprintf(stderr,
            "sntrain: %s, batch %d, input %dx%d, %d classes, %d layers, %zu weights "
            "(%.1f MiB), %s allocation%s\n",
            n->variant, n->input.n, n->input.h, n->input.w, n->classes, n->nlayers,
            net_param_count(n), net_param_count(n) * 4 / 1048576.0, alloc_style_name(o.alloc),
            o.kernels ? ", host-function kernels" : "");
    if (o.dump_graph && net_dump(n, o.dump_graph, alloc_style_name(o.alloc)) != 0) {
        net_free(n);
        return EXIT_USAGE;
    }

    trainer tr;
    int rc = trainer_setup(&tr, &o, n);
    if (rc != 0) {
        trainer_exit(rc);
    }
    double total_ms = 0, timed_ms = 0, timed_images = 0;
    for (int i = 0; i < o.iters; i++) {
        float ms = trainer_iteration(&tr);
        total_ms += ms;
        if (i > 0 || o.iters == 1) {
            timed_ms += ms;
            timed_images += n->input.n;
        }
        printf("iter %d loss %.6f time %.3f ms\n", i + 1, tr.loss, ms);
        if (o.phase_times)
            printf("phases %d data %.3f forward %.3f backward %.3f update %.3f ms\n", i + 1,
                   tr.phase_ms[0], tr.phase_ms[1], tr.phase_ms[2], tr.phase_ms[3]);
        if (o.eval_every && (i + 1) % o.eval_every == 0) {
            float ems = trainer_eval(&tr);
            total_ms += ems;
            printf("eval %d loss %.6f accuracy %.4f time %.3f ms\n", i + 1, tr.eval_loss,
                   tr.eval_accuracy, ems);
        }
        fflush(stdout);
        /* the second iteration is the steady one (the first clears momentum) */
        if (o.dump_graph && (i == 1 || o.iters == 1) && trainer_dump_steps(&tr, o.dump_graph) != 0)
            trainer_exit(EXIT_USAGE);
    }
    if (trainer_close_log(&tr) != 0)
        trainer_exit(EXIT_USAGE);
    uint64_t sum = trainer_checksum(&tr);
    trainer_sample_memory(&tr);
    double rate = timed_ms > 0 ? timed_images / (timed_ms / 1000.0) : 0.0;
    printf("checksum %016" PRIx64 "\n", sum);
    printf("peak %zu MiB\n", (tr.peak_used + (1u << 20) - 1) >> 20);
    printf("images/s %.1f\n", rate);
    fprintf(stderr, "sntrain: %d iterations in %.3f ms of device time\n", o.iters, total_ms);
    trainer_teardown(&tr);
    net_free(n);
    return 0;
}
