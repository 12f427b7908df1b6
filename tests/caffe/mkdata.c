/* The Caffe test's data files, from the records tests/caffe/nets.py
 * writes (Debian packages no command-line writer for either format, nor a
 * Python binding by default; liblmdb-dev and libhdf5-dev are Caffe's own
 * build dependencies):
 *
 *   mkdata lmdb DIR RECORDS   an LMDB in DIR (created) holding RECORDS: a
 *                             sequence of (u32 key length, key, u32 value
 *                             length, value), little-endian
 *   mkdata hdf5 FILE RAW      an HDF5 file with the datasets "data"
 *                             (N x C x H x W floats) and "label" (N floats)
 *                             from RAW: u32 N, C, H, W, then the data, then
 *                             the labels, little-endian floats
 *
 * Built by tests/test_caffe.sh with
 *   gcc mkdata.c -I/usr/include/hdf5/serial -L/usr/lib/<multiarch>/hdf5/serial -lhdf5_hl -lhdf5 -llmdb
 * Exit status 0, or 1 with a message on stderr. */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            unsigned char *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

static uint32_t u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        int rc_ = (call);                                                                              \
        if (rc_ != 0) {                                                                                \
            fprintf(stderr, "mkdata: %s: %s\n", #call, mdb_strerror(rc_));                             \
            return 1;                                                                                  \
        }                                                                                              \
    } while (0)

static int make_lmdb(const char *dir, const unsigned char *p, size_t len)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    mkdir(dir, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)64 << 20));
    CHECK(mdb_env_open(env, dir, 0, 0664));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    size_t off = 0, n = 0;
    while (off + 4 <= len) {
        MDB_val key, val;
        key.mv_size = u32(p + off);
        key.mv_data = (void *)(p + off + 4);
        off += 4 + key.mv_size;
        if (off + 4 > len)
            break;
        val.mv_size = u32(p + off);
        val.mv_data = (void *)(p + off + 4);
        off += 4 + val.mv_size;
        if (off > len)
            break;
        CHECK(mdb_put(txn, dbi, &key, &val, 0));
        n++;
    }
    if (off != len) {
        fprintf(stderr, "mkdata: truncated record after %zu records\n", n);
        return 1;
    }
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
    return 0;
}

static int make_hdf5(const char *path, const unsigned char *p, size_t len)
{
    if (len < 16)
        return fprintf(stderr, "mkdata: no header\n"), 1;
    hsize_t dims[4] = {u32(p), u32(p + 4), u32(p + 8), u32(p + 12)};
    size_t count = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
    if (len != 16 + 4 * (count + dims[0]))
        return fprintf(stderr, "mkdata: %zu bytes, not a %llux%llux%llux%llu set\n", len,
                       (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2],
                       (unsigned long long)dims[3]), 1;
    float *data = malloc(4 * (count + dims[0]));
    if (!data)
        return fprintf(stderr, "mkdata: out of memory\n"), 1;
    memcpy(data, p + 16, 4 * (count + dims[0])); /* little-endian host */
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    int bad = f < 0 || H5LTmake_dataset_float(f, "data", 4, dims, data) < 0 ||
              H5LTmake_dataset_float(f, "label", 1, dims, data + count) < 0;
    if (f >= 0 && H5Fclose(f) < 0)
        bad = 1;
    free(data);
    if (bad)
        fprintf(stderr, "mkdata: could not write %s\n", path);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "lmdb") != 0 && strcmp(argv[1], "hdf5") != 0)) {
        fprintf(stderr, "usage: mkdata lmdb DIR RECORDS | mkdata hdf5 FILE RAW\n");
        return 2;
    }
    size_t len;
    unsigned char *p = slurp(argv[3], &len);
    if (!p) {
        perror(argv[3]);
        return 1;
    }
    int rc = strcmp(argv[1], "lmdb") == 0 ? make_lmdb(argv[2], p, len) : make_hdf5(argv[2], p, len);
    free(p);
    return rc;
}
