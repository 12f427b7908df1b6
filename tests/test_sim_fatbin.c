/*
 * test_sim_fatbin.c — the fat-binary reader (sim/fatbin.c) on fat binaries
 * built here byte by byte, as nvcc 13 lays them out: cubins with their
 * .nv.info records (both parameter record forms, nvcc's reverse order), PTX
 * entry lists, entries compressed with zstd and LZ4, and damaged ones. The
 * layouts of real nvcc output are checked against the ABI in
 * tests/test_sim_nvcc.sh; this test covers what nvcc does not produce on
 * demand (every kind of damage) and runs where nvcc is not installed. Each
 * image is allocated to its exact size, so a read past its end is caught
 * under AddressSanitizer.
 */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fatbinary_section.h>
#include <lz4.h>
#include <zstd.h>

#include "sim/fatbin.h"

/* ---- byte buffers --------------------------------------------------------- */

struct buf {
    unsigned char *p;
    size_t n;
};

static void put(struct buf *b, const void *src, size_t n)
{
    b->p = realloc(b->p, b->n + n);
    assert_non_null(b->p);
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put16(struct buf *b, uint16_t v) { put(b, &v, 2); }
static void put32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void pad(struct buf *b, size_t align)
{
    static const unsigned char zero[16];
    while (b->n % align)
        put(b, zero, 1);
}

/* ---- .nv.info records ---------------------------------------------------------- */

static void rec_kparam(struct buf *b, uint16_t ordinal, uint16_t offset, uint32_t size)
{
    put(b, (unsigned char[]){4, 0x17}, 2);
    put16(b, 12);
    put32(b, 0);
    put16(b, ordinal);
    put16(b, offset);
    put32(b, size << 18 | 0x1f000); /* constant bank 31, as nvcc writes */
}

static void rec_kparam_v2(struct buf *b, uint16_t ordinal, uint16_t offset, uint16_t size)
{
    put(b, (unsigned char[]){4, 0x45}, 2);
    put16(b, 12);
    put32(b, 0);
    put16(b, ordinal);
    put16(b, offset);
    put32(b, size);
}

static void rec_hval(struct buf *b, uint8_t attr, uint16_t v)
{
    put(b, (unsigned char[]){3, attr}, 2);
    put16(b, v);
}

static void rec_cbank_size(struct buf *b, uint16_t v) { rec_hval(b, 0x19, v); }

/* Other records nvcc writes, which the reader must step over. */
static void rec_others(struct buf *b)
{
    put(b, (unsigned char[]){4, 0x37}, 2); /* EIATTR_CUDA_API_VERSION */
    put16(b, 4);
    put32(b, 0x82);
    rec_hval(b, 0x1b, 0xff);               /* EIATTR_MAXREG_COUNT */
    put(b, (unsigned char[]){1, 0x36, 0, 0}, 4);
}

/* ---- cubins --------------------------------------------------------------------- */

struct section { const char *kernel; struct buf info; };

/* A cubin with one .nv.info.<kernel> section per entry of secs. */
static struct buf make_elf(struct section *secs, int n)
{
    struct buf strs = {0}, img = {0};
    put(&strs, "\0.shstrtab", 11);
    uint32_t name_at[16];
    for (int i = 0; i < n; i++) {
        name_at[i] = (uint32_t)strs.n;
        put(&strs, ".nv.info.", 9);
        put(&strs, secs[i].kernel, strlen(secs[i].kernel) + 1);
    }
    Elf64_Ehdr eh = {0};
    put(&img, &eh, sizeof eh);
    size_t str_off = img.n;
    put(&img, strs.p, strs.n);
    size_t off[16];
    for (int i = 0; i < n; i++) {
        pad(&img, 4);
        off[i] = img.n;
        put(&img, secs[i].info.p, secs[i].info.n);
    }
    pad(&img, 8);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = 190; /* EM_CUDA */
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = img.n;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = (uint16_t)(n + 2);
    eh.e_shstrndx = 1;
    memcpy(img.p, &eh, sizeof eh);
    Elf64_Shdr sh = {0};
    put(&img, &sh, sizeof sh);
    sh.sh_name = 1;
    sh.sh_type = SHT_STRTAB;
    sh.sh_offset = str_off;
    sh.sh_size = strs.n;
    put(&img, &sh, sizeof sh);
    for (int i = 0; i < n; i++) {
        sh.sh_name = name_at[i];
        sh.sh_type = SHT_LOPROC; /* SHT_CUDA_INFO */
        sh.sh_offset = off[i];
        sh.sh_size = secs[i].info.n;
        put(&img, &sh, sizeof sh);
        free(secs[i].info.p);
    }
    free(strs.p);
    return img;
}

/* ---- fat binaries --------------------------------------------------------------------- */

enum { PTX = 1, ELF = 2 };
enum { PLAIN, ZSTD, LZ4 };

struct entry { int kind, packing; struct buf payload; };

/* A fat binary of the given entries, allocated to its exact size. */
static unsigned char *make_fatbin(struct entry *es, int n)
{
    struct buf b = {0};
    put32(&b, 0xBA55ED50);
    put16(&b, 1);
    put16(&b, 16);
    put64(&b, 0); /* size, patched below */
    for (int i = 0; i < n; i++) {
        struct buf data = es[i].payload;
        uint64_t flags = 0x11, dsize = 0;
        uint32_t csize = 0;
        if (es[i].packing != PLAIN) {
            size_t room = es[i].packing == ZSTD ? ZSTD_compressBound(data.n) : (size_t)LZ4_compressBound((int)data.n);
            unsigned char *c = malloc(room);
            assert_non_null(c);
            size_t got;
            if (es[i].packing == ZSTD) {
                got = ZSTD_compress(c, room, data.p, data.n, 3);
                assert_false(ZSTD_isError(got));
                flags |= 0x8000;
            } else {
                got = (size_t)LZ4_compress_default((const char *)data.p, (char *)c, (int)data.n, (int)room);
                assert_true(got > 0);
                flags |= 0x2000;
            }
            dsize = data.n;
            csize = (uint32_t)got;
            data = (struct buf){c, got};
        }
        size_t psize = (data.n + 7) / 8 * 8;
        uint32_t hsize = es[i].kind == PTX ? 80 : 64;
        put16(&b, (uint16_t)es[i].kind);
        put16(&b, 0x101);
        put32(&b, hsize);
        put64(&b, psize);
        put32(&b, csize);
        put32(&b, es[i].kind == PTX ? 64 : 0);
        put16(&b, 8);
        put16(&b, 1);
        put32(&b, 90);
        put32(&b, 0);
        put32(&b, 0);
        put64(&b, flags);
        put64(&b, 0);
        put64(&b, dsize);
        if (es[i].kind == PTX) {
            put64(&b, 0);
            put64(&b, 0);
        }
        put(&b, data.p, data.n);
        pad(&b, 8);
        if (data.p != es[i].payload.p)
            free(data.p);
        free(es[i].payload.p);
    }
    uint64_t size = b.n - 16;
    memcpy(b.p + 8, &size, 8);
    return b.p;
}

static struct buf text(const char *s)
{
    struct buf b = {0};
    put(&b, s, strlen(s));
    return b;
}

static __fatBinC_Wrapper_t wrap(const unsigned char *fatbin)
{
    return (__fatBinC_Wrapper_t){FATBINC_MAGIC, 1, (const unsigned long long *)fatbin, NULL};
}

/* The layout of name as "off:size off:size ...", "none" for no parameters,
 * "unknown" when the reader has none. */
static const char *layout(simfb *fb, const char *name)
{
    static char out[512];
    struct simfb_param *ps;
    int n = simfb_params(fb, name, &ps);
    if (n < 0) {
        assert_null(ps);
        return "unknown";
    }
    if (n == 0) {
        assert_null(ps);
        return "none";
    }
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, sizeof out - at, "%s%u:%u", i ? " " : "", ps[i].offset, ps[i].size);
    free(ps);
    return out;
}

/* ---- cubin records ------------------------------------------------------------------- */

/* k(float *, int, Small{int,char,float}, double), records in nvcc's
 * reverse order, between records of other kinds. */
static struct buf info_k(void)
{
    struct buf b = {0};
    rec_others(&b);
    rec_cbank_size(&b, 32);
    rec_kparam(&b, 3, 24, 8);
    rec_kparam(&b, 2, 12, 12);
    rec_kparam(&b, 1, 8, 4);
    rec_kparam(&b, 0, 0, 8);
    rec_hval(&b, 0x1b, 0xff);
    return b;
}

static void test_cubin_layouts(void **state)
{
    (void)state;
    const char *long_name = "_ZN85a_rather_long_namespace_name_that_makes_the_mangled_symbol_long_and_longer_than_128"
                            "_chars10k_templateIdLi3EEEvNS_6HolderIT_XT0_EEES2_PKS3_PS3_";
    struct buf big = {0}, none = {0}, lng = {0};
    rec_cbank_size(&big, 20008);
    rec_kparam_v2(&big, 2, 20000, 8);
    rec_kparam_v2(&big, 1, 4, 19996);
    rec_kparam_v2(&big, 0, 0, 4);
    rec_others(&none);
    rec_kparam(&lng, 0, 0, 8);
    struct section secs[] = {{"_Z1kPfi5Smalld", info_k()}, {"_Z3bigi4Hugef", big}, {"_Z4nonev", none},
                             {long_name, lng}};
    struct entry e = {ELF, PLAIN, make_elf(secs, 4)};
    unsigned char *fat = make_fatbin(&e, 1);
    __fatBinC_Wrapper_t w = wrap(fat);
    simfb *fb = simfb_load(&w);
    assert_non_null(fb);
    assert_string_equal(layout(fb, "_Z1kPfi5Smalld"), "0:8 8:4 12:12 24:8");
    assert_string_equal(layout(fb, "_Z3bigi4Hugef"), "0:4 4:19996 20000:8");
    assert_string_equal(layout(fb, "_Z4nonev"), "none");
    assert_string_equal(layout(fb, long_name), "0:8");
    /* Names are matched whole. */
    assert_string_equal(layout(fb, "_Z1kPfi5Small"), "unknown");
    assert_string_equal(layout(fb, "_Z1k"), "unknown");
    assert_string_equal(layout(fb, "_Z7missingv"), "unknown");
    simfb_free(fb);
    free(fat);
}

/* One kernel "_Z1kv" described by records b, alone in a cubin. */
static const char *layout_of_records(struct buf b)
{
    struct section s = {"_Z1kv", b};
    struct entry e = {ELF, PLAIN, make_elf(&s, 1)};
    unsigned char *fat = make_fatbin(&e, 1);
    __fatBinC_Wrapper_t w = wrap(fat);
    simfb *fb = simfb_load(&w);
    assert_non_null(fb);
    const char *r = layout(fb, "_Z1kv");
    simfb_free(fb);
    free(fat);
    return r;
}

static void test_cubin_damaged_records(void **state)
{
    (void)state;
    struct buf b = {0};
    /* Sound, for contrast. */
    rec_kparam(&b, 1, 8, 4);
    rec_kparam(&b, 0, 0, 8);
    assert_string_equal(layout_of_records(b), "0:8 8:4");
    /* Parameters that overlap. */
    b = (struct buf){0};
    rec_kparam(&b, 1, 4, 4);
    rec_kparam(&b, 0, 0, 8);
    assert_string_equal(layout_of_records(b), "unknown");
    /* An ordinal twice, and one missing. */
    b = (struct buf){0};
    rec_kparam(&b, 0, 8, 4);
    rec_kparam(&b, 0, 0, 8);
    assert_string_equal(layout_of_records(b), "unknown");
    b = (struct buf){0};
    rec_kparam(&b, 2, 8, 4);
    rec_kparam(&b, 0, 0, 8);
    assert_string_equal(layout_of_records(b), "unknown");
    /* Parameters that do not fit the block the kernel declares. */
    b = (struct buf){0};
    rec_cbank_size(&b, 8);
    rec_kparam(&b, 1, 8, 4);
    rec_kparam(&b, 0, 0, 8);
    assert_string_equal(layout_of_records(b), "unknown");
    /* A parameter block but no parameter records: not "no parameters". */
    b = (struct buf){0};
    rec_cbank_size(&b, 16);
    rec_others(&b);
    assert_string_equal(layout_of_records(b), "unknown");
    /* A record whose length runs past the section. */
    b = (struct buf){0};
    rec_kparam(&b, 0, 0, 8);
    b.p[2] = 200;
    assert_string_equal(layout_of_records(b), "unknown");
    /* A parameter record too short to hold one. */
    b = (struct buf){0};
    put(&b, (unsigned char[]){4, 0x17}, 2);
    put16(&b, 8);
    put64(&b, 0);
    assert_string_equal(layout_of_records(b), "unknown");
    /* A record format nobody knows, and a section cut mid-record. */
    b = (struct buf){0};
    rec_kparam(&b, 0, 0, 8);
    put(&b, (unsigned char[]){9, 0x17, 0, 0}, 4);
    assert_string_equal(layout_of_records(b), "unknown");
    b = (struct buf){0};
    rec_kparam(&b, 0, 0, 8);
    put(&b, (unsigned char[]){3, 0x1b}, 2);
    assert_string_equal(layout_of_records(b), "unknown");
}

/* ---- PTX ------------------------------------------------------------------------------------- */

static const char ptx_text[] =
    "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0\n.target sm_90\n.address_size 64\n\n"
    "\t// .globl\t_Z1kPfi5Smalld\n"
    ".visible .entry _Z1kPfi5Smalld(\n"
    "\t.param .u64 _Z1kPfi5Smalld_param_0,\n"
    "\t.param .u32 _Z1kPfi5Smalld_param_1,\n"
    "\t.param .align 4 .b8 _Z1kPfi5Smalld_param_2[12],\n"
    "\t.param .f64 _Z1kPfi5Smalld_param_3\n"
    ")\n{\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [_Z1kPfi5Smalld_param_0];\n\tret;\n}\n"
    ".visible .entry _Z3vecc6float4t(\n"
    "\t.param .u8 _Z3vecc6float4t_param_0, // a char\n"
    "\t.param .align 16 .b8 _Z3vecc6float4t_param_1[16], /* a float4 */\n"
    "\t.param .u16 _Z3vecc6float4t_param_2,\n"
    "\t.param .u64 .ptr .global .align 16 _Z3vecc6float4t_param_3,\n"
    "\t.param .f32 _Z3vecc6float4t_param_4 [1]\n"
    ")\n.maxntid 256, 1, 1\n{\n\tret;\n}\n"
    ".visible .entry _Z4nonev()\n{\n\tret;\n}\n"
    ".visible .entry _Z3badi(\n\t.param .q32 _Z3badi_param_0\n)\n{\n\tret;\n}\n"
    ".visible .entry _Z5shortv(\n\t.param .u32 _Z5shortv_param_0,\n";

static void check_ptx(simfb *fb)
{
    assert_string_equal(layout(fb, "_Z1kPfi5Smalld"), "0:8 8:4 12:12 24:8");
    assert_string_equal(layout(fb, "_Z3vecc6float4t"), "0:1 16:16 32:2 40:8 48:4");
    assert_string_equal(layout(fb, "_Z4nonev"), "none");
    /* What does not parse has no layout. */
    assert_string_equal(layout(fb, "_Z3badi"), "unknown");
    assert_string_equal(layout(fb, "_Z5shortv"), "unknown");
    /* A name in a comment or an instruction is not an entry. */
    assert_string_equal(layout(fb, "_Z1kPfi5Smalld_param_0"), "unknown");
}

static void test_ptx_layouts(void **state)
{
    (void)state;
    for (int packing = PLAIN; packing <= LZ4; packing++) {
        struct entry e = {PTX, packing, text(ptx_text)};
        unsigned char *fat = make_fatbin(&e, 1);
        __fatBinC_Wrapper_t w = wrap(fat);
        simfb *fb = simfb_load(&w);
        assert_non_null(fb);
        check_ptx(fb);
        simfb_free(fb);
        free(fat);
    }
}

/* The cubin answers where it can; PTX where it has nothing. */
static void test_cubin_before_ptx(void **state)
{
    (void)state;
    struct buf odd = {0};
    rec_kparam(&odd, 0, 0, 16); /* differs from the PTX, to tell who answered */
    struct section s = {"_Z1kPfi5Smalld", odd};
    struct entry es[] = {{PTX, ZSTD, text(ptx_text)}, {ELF, PLAIN, make_elf(&s, 1)}};
    unsigned char *fat = make_fatbin(es, 2);
    __fatBinC_Wrapper_t w = wrap(fat);
    simfb *fb = simfb_load(&w);
    assert_non_null(fb);
    assert_string_equal(layout(fb, "_Z1kPfi5Smalld"), "0:16");
    assert_string_equal(layout(fb, "_Z3vecc6float4t"), "0:1 16:16 32:2 40:8 48:4");
    simfb_free(fb);
    free(fat);
}

static void test_compressed_cubins(void **state)
{
    (void)state;
    for (int packing = ZSTD; packing <= LZ4; packing++) {
        struct section s = {"_Z1kPfi5Smalld", info_k()};
        struct entry e = {ELF, packing, make_elf(&s, 1)};
        unsigned char *fat = make_fatbin(&e, 1);
        __fatBinC_Wrapper_t w = wrap(fat);
        simfb *fb = simfb_load(&w);
        assert_non_null(fb);
        assert_string_equal(layout(fb, "_Z1kPfi5Smalld"), "0:8 8:4 12:12 24:8");
        simfb_free(fb);
        free(fat);
    }
}

/* ---- damaged fat binaries -------------------------------------------------------------------- */

/* Offsets in a one-entry fat binary: its header, then the entry's. */
#define ENTRY 16
#define PAYLOAD (ENTRY + 64)

static unsigned char *one_cubin(int packing)
{
    struct section s = {"_Z1kPfi5Smalld", info_k()};
    struct entry e = {ELF, packing, make_elf(&s, 1)};
    return make_fatbin(&e, 1);
}

static const char *layout_after(unsigned char *fat)
{
    __fatBinC_Wrapper_t w = wrap(fat);
    simfb *fb = simfb_load(&w);
    const char *r = fb ? layout(fb, "_Z1kPfi5Smalld") : "not a fat binary";
    simfb_free(fb);
    free(fat);
    return r;
}

static void test_damaged_fatbins(void **state)
{
    (void)state;
    assert_string_equal(layout_after(one_cubin(PLAIN)), "0:8 8:4 12:12 24:8");
    /* Wrappers that are not nvcc's: only their magic is read. */
    static char short_handle[4];
    assert_null(simfb_load(short_handle));
    assert_null(simfb_load(NULL));
    __fatBinC_Wrapper_t w = wrap(NULL);
    assert_null(simfb_load(&w));
    unsigned char *fat = one_cubin(PLAIN);
    fat[0] ^= 1; /* fat binary magic */
    assert_string_equal(layout_after(fat), "not a fat binary");
    fat = one_cubin(PLAIN);
    fat[4] = 2; /* version */
    assert_string_equal(layout_after(fat), "not a fat binary");
    /* Entries whose sizes run past the fat binary. */
    fat = one_cubin(PLAIN);
    memset(fat + ENTRY + 8, 0xff, 8);
    assert_string_equal(layout_after(fat), "unknown");
    fat = one_cubin(PLAIN);
    memset(fat + ENTRY + 4, 0xff, 4);
    assert_string_equal(layout_after(fat), "unknown");
    fat = one_cubin(PLAIN);
    memset(fat + ENTRY + 4, 0, 4);
    assert_string_equal(layout_after(fat), "unknown");
    /* A fat binary that claims more than it holds past the entry is read up
     * to what its entries say. */
    fat = one_cubin(PLAIN);
    uint64_t more;
    memcpy(&more, fat + 8, 8);
    more += 4;
    memcpy(fat + 8, &more, 8);
    assert_string_equal(layout_after(fat), "0:8 8:4 12:12 24:8");
    /* A cubin whose section table lies outside it, whose names are not
     * terminated, or whose info section runs past it. */
    fat = one_cubin(PLAIN);
    Elf64_Ehdr eh;
    memcpy(&eh, fat + PAYLOAD, sizeof eh);
    eh.e_shoff += 1u << 20;
    memcpy(fat + PAYLOAD, &eh, sizeof eh);
    assert_string_equal(layout_after(fat), "unknown");
    fat = one_cubin(PLAIN);
    memcpy(&eh, fat + PAYLOAD, sizeof eh);
    Elf64_Shdr strs, info;
    memcpy(&strs, fat + PAYLOAD + eh.e_shoff + sizeof strs, sizeof strs);
    strs.sh_size -= 1; /* cut the last name's terminator */
    memcpy(fat + PAYLOAD + eh.e_shoff + sizeof strs, &strs, sizeof strs);
    assert_string_equal(layout_after(fat), "unknown");
    fat = one_cubin(PLAIN);
    memcpy(&info, fat + PAYLOAD + eh.e_shoff + 2 * sizeof info, sizeof info);
    info.sh_size += 1u << 20;
    memcpy(fat + PAYLOAD + eh.e_shoff + 2 * sizeof info, &info, sizeof info);
    assert_string_equal(layout_after(fat), "unknown");
    fat = one_cubin(PLAIN);
    fat[PAYLOAD + EI_CLASS] = ELFCLASS32;
    assert_string_equal(layout_after(fat), "unknown");
    /* Compressed payloads that are corrupt, or claim absurd sizes. */
    for (int packing = ZSTD; packing <= LZ4; packing++) {
        fat = one_cubin(packing);
        memset(fat + PAYLOAD, 0x5a, 16);
        assert_string_equal(layout_after(fat), "unknown");
        fat = one_cubin(packing);
        memset(fat + ENTRY + 56, 0xff, 8); /* decompressed size */
        assert_string_equal(layout_after(fat), "unknown");
        fat = one_cubin(packing);
        memset(fat + ENTRY + 56, 0, 8);
        memset(fat + ENTRY + 56, 100, 1); /* smaller than the cubin */
        assert_string_equal(layout_after(fat), "unknown");
        fat = one_cubin(packing);
        memset(fat + ENTRY + 16, 0xff, 4); /* compressed size past the payload */
        assert_string_equal(layout_after(fat), "unknown");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubin_layouts),
        cmocka_unit_test(test_cubin_damaged_records),
        cmocka_unit_test(test_ptx_layouts),
        cmocka_unit_test(test_cubin_before_ptx),
        cmocka_unit_test(test_compressed_cubins),
        cmocka_unit_test(test_damaged_fatbins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
