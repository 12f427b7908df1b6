/*
 * fatbin.c — reads kernel parameter layouts out of an nvcc fat binary, so
 * that cudaFuncGetParamInfo answers for nvcc-built kernels as the real
 * driver does (it reads the same metadata).
 *
 * NVIDIA documents only the wrapper (fatbinary_section.h); the rest was
 * read from CUDA 13.0's nvcc output and agrees with the open-source readers
 * listed in docs/sim-runtime.md. Little-endian throughout:
 *
 *   fat binary:  u32 magic 0xBA55ED50, u16 version 1, u16 header size,
 *                u64 size of the entries that follow the header
 *   entry:       u16 kind (1 PTX, 2 ELF cubin), u16, u32 header size,
 *                u64 payload size, u32 compressed size (at 16), ...,
 *                u64 flags (at 40), u64 decompressed size (at 56);
 *                the payload follows the entry's header
 *   flags:       0x2000 the payload is an LZ4 block, 0x8000 a zstd frame
 *                (nvcc 13 compresses PTX with zstd by default, cubins only
 *                with -compress-all or -compress-mode=size)
 *
 * In a cubin, section ".nv.info.<kernel>" holds the kernel's attribute
 * records: u8 format, u8 attribute, then a u16 value (formats 1-3) or a u16
 * length and that many bytes (format 4, EIFMT_SVAL). EIATTR_KPARAM_INFO
 * (0x17) gives one parameter: u32 index, u16 ordinal, u16 offset, u32 whose
 * top 14 bits are the size; parameters of 16 KiB and more come as
 * EIATTR_KPARAM_INFO_V2 (0x45): the same but a plain u16 size.
 * EIATTR_CBANK_PARAM_SIZE (0x19) is the size of the whole parameter block.
 * Where no cubin describes a kernel, its PTX entry does: ".entry name(
 * .param .u64 name_param_0, .param .align 16 .b8 name_param_1[16], ...)",
 * laid out in order, each parameter at its alignment (the .align before the
 * type, else the type's size).
 *
 * Everything read is bounds-checked against the entry it came from; what
 * does not parse cleanly leaves the kernel without a layout, never with a
 * wrong one.
 */
#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <fatbinary_section.h>
#include <lz4.h>
#include <uthash.h>
#include <zstd.h>

#include "sim/fatbin.h"

#define FB_MAGIC 0xBA55ED50u
#define FB_ENTRY_HEADER 64          /* the smallest entry header (a cubin's) */
#define FB_KIND_PTX 1
#define FB_KIND_ELF 2
#define FB_FLAG_LZ4 0x2000ull
#define FB_FLAG_ZSTD 0x8000ull
#define FB_MAX_IMAGE ((uint64_t)1 << 30) /* larger "decompressed sizes" are corrupt */
#define FB_MAX_PARAM_BYTES 65536u        /* CUDA allows 32764 */

#define EIFMT_NVAL 1
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define EIATTR_KPARAM_INFO_V2 0x45

#define NV_INFO_PREFIX ".nv.info."

struct fb_kernel {
    const char *name;             /* key: points into an image, not terminated */
    size_t name_len;
    const unsigned char *info;    /* ELF: the .nv.info section; PTX: what follows the name */
    size_t info_len;
    UT_hash_handle hh;
};

struct fb_buffer {
    struct fb_buffer *next;
    unsigned char data[];
};

struct simfb {
    const unsigned char *base;    /* the fat binary, in the program's image */
    size_t header_size;
    uint64_t size;
    struct fb_kernel *elf, *ptx;
    int ptx_indexed;              /* PTX is unpacked only when a cubin lacks a kernel */
    struct fb_buffer *buffers;    /* decompressed entries */
};

static uint16_t rd16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void add_kernel(struct fb_kernel **table, const char *name, size_t name_len, const unsigned char *info,
                       size_t info_len)
{
    struct fb_kernel *k;
    /* The first image that describes a kernel answers for it: every
     * architecture's cubin has the same parameter layout. */
    HASH_FIND(hh, *table, name, name_len, k);
    if (k)
        return;
    k = calloc(1, sizeof *k);
    if (!k)
        return;
    k->name = name;
    k->name_len = name_len;
    k->info = info;
    k->info_len = info_len;
    HASH_ADD_KEYPTR(hh, *table, k->name, k->name_len, k);
}

/* The entry's payload, decompressed into a buffer the fat binary keeps when
 * it is compressed. NULL when it cannot be unpacked. */
static const unsigned char *entry_image(simfb *fb, const unsigned char *e, uint32_t header_size, uint64_t size,
                                        size_t *len)
{
    const unsigned char *payload = e + header_size;
    uint64_t flags = rd64(e + 40);
    if (!(flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD))) {
        *len = (size_t)size;
        return payload;
    }
    uint32_t csize = rd32(e + 16);
    uint64_t dsize = rd64(e + 56);
    if (csize == 0 || csize > size || dsize == 0 || dsize > FB_MAX_IMAGE)
        return NULL;
    struct fb_buffer *b = malloc(sizeof *b + dsize);
    if (!b)
        return NULL;
    size_t got;
    if (flags & FB_FLAG_ZSTD) {
        size_t r = ZSTD_decompress(b->data, (size_t)dsize, payload, csize);
        if (ZSTD_isError(r))
            goto fail;
        got = r;
    } else {
        if (csize > INT_MAX || dsize > INT_MAX)
            goto fail;
        int r = LZ4_decompress_safe((const char *)payload, (char *)b->data, (int)csize, (int)dsize);
        if (r < 0)
            goto fail;
        got = (size_t)r;
    }
    b->next = fb->buffers;
    fb->buffers = b;
    *len = got;
    return b->data;
fail:
    free(b);
    return NULL;
}

static int section_header(const unsigned char *img, size_t len, const Elf64_Ehdr *eh, size_t i, Elf64_Shdr *sh)
{
    uint64_t at = eh->e_shoff + (uint64_t)i * eh->e_shentsize;
    if (at > len || len - at < sizeof *sh)
        return -1;
    memcpy(sh, img + at, sizeof *sh);
    return 0;
}

static int section_in_image(const Elf64_Shdr *sh, size_t len)
{
    return sh->sh_type != SHT_NOBITS && sh->sh_offset <= len && sh->sh_size <= len - sh->sh_offset;
}

/* Indexes the .nv.info.<kernel> sections of a cubin. */
static void index_elf(simfb *fb, const unsigned char *img, size_t len)
{
    Elf64_Ehdr eh;
    if (len < sizeof eh)
        return;
    memcpy(&eh, img, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize < sizeof(Elf64_Shdr))
        return;
    Elf64_Shdr sh0;
    if (section_header(img, len, &eh, 0, &sh0) != 0)
        return;
    /* ELF's escape for more than 0xff00 sections. */
    uint64_t shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
    uint64_t shstrndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
    if (shnum > (len - eh.e_shoff) / eh.e_shentsize || shstrndx >= shnum)
        return;
    Elf64_Shdr strs;
    if (section_header(img, len, &eh, shstrndx, &strs) != 0 || !section_in_image(&strs, len))
        return;
    const char *names = (const char *)img + strs.sh_offset;
    const size_t prefix = sizeof NV_INFO_PREFIX - 1;
    for (uint64_t i = 1; i < shnum; i++) {
        Elf64_Shdr sh;
        if (section_header(img, len, &eh, i, &sh) != 0 || sh.sh_name >= strs.sh_size)
            continue;
        const char *name = names + sh.sh_name;
        size_t room = strs.sh_size - sh.sh_name;
        size_t name_len = strnlen(name, room);
        if (name_len == room || name_len <= prefix || memcmp(name, NV_INFO_PREFIX, prefix) != 0 ||
            !section_in_image(&sh, len))
            continue;
        add_kernel(&fb->elf, name + prefix, name_len - prefix, img + sh.sh_offset, sh.sh_size);
    }
}

static int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_ident(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           c == '%';
}

/* Indexes the .entry directives of a PTX text. */
static void index_ptx(simfb *fb, const unsigned char *t, size_t len)
{
    static const char kw[] = ".entry";
    const size_t kwlen = sizeof kw - 1;
    for (size_t i = 0; i + kwlen < len; i++) {
        if (t[i] != '.' || memcmp(t + i, kw, kwlen) != 0 || (i > 0 && !is_blank(t[i - 1])) ||
            !is_blank(t[i + kwlen]))
            continue;
        size_t p = i + kwlen;
        while (p < len && is_blank(t[p]))
            p++;
        size_t start = p;
        while (p < len && is_ident(t[p]))
            p++;
        if (p > start)
            add_kernel(&fb->ptx, (const char *)t + start, p - start, t + p, len - p);
        i = p - 1;
    }
}

/* Walks the entries of one kind, unpacking each and handing it to fn. */
static void index_entries(simfb *fb, unsigned kind, void (*fn)(simfb *, const unsigned char *, size_t))
{
    uint64_t end = fb->header_size + fb->size;
    for (uint64_t off = fb->header_size; off < end && end - off >= FB_ENTRY_HEADER;) {
        const unsigned char *e = fb->base + off;
        uint32_t header_size = rd32(e + 4);
        uint64_t size = rd64(e + 8);
        if (header_size < FB_ENTRY_HEADER || header_size > end - off || size > end - off - header_size)
            break;
        if (rd16(e) == kind) {
            size_t len;
            const unsigned char *img = entry_image(fb, e, header_size, size, &len);
            if (img)
                fn(fb, img, len);
        }
        off += header_size + size;
    }
}

simfb *simfb_load(const void *wrapper)
{
    const __fatBinC_Wrapper_t *w = wrapper;
    /* Only the magic is known to be there: a foreign handle may be short. */
    if (!w || (unsigned)w->magic != FATBINC_MAGIC || !w->data)
        return NULL;
    const unsigned char *base = (const unsigned char *)w->data;
    if (rd32(base) != FB_MAGIC || rd16(base + 4) != 1 || rd16(base + 6) < 16)
        return NULL;
    simfb *fb = calloc(1, sizeof *fb);
    if (!fb)
        return NULL;
    fb->base = base;
    fb->header_size = rd16(base + 6);
    fb->size = rd64(base + 8);
    index_entries(fb, FB_KIND_ELF, index_elf);
    return fb;
}

/* ---- layouts -------------------------------------------------------------- */

/* From a cubin's .nv.info.<kernel> records. */
static int elf_params(const unsigned char *b, size_t n, struct simfb_param **out)
{
    size_t count = 0;
    long cbank = -1;
    for (size_t p = 0; p < n;) {
        if (n - p < 4)
            return -1;
        unsigned fmt = b[p], attr = b[p + 1];
        if (fmt == EIFMT_SVAL) {
            size_t l = rd16(b + p + 2);
            if (l > n - p - 4)
                return -1;
            if (attr == EIATTR_KPARAM_INFO || attr == EIATTR_KPARAM_INFO_V2) {
                if (l < 12)
                    return -1;
                count++;
            }
            p += 4 + l;
        } else if (fmt >= EIFMT_NVAL && fmt <= EIFMT_HVAL) {
            if (fmt == EIFMT_HVAL && attr == EIATTR_CBANK_PARAM_SIZE)
                cbank = rd16(b + p + 2);
            p += 4;
        } else {
            return -1;
        }
    }
    if (count == 0) {
        *out = NULL;
        return cbank > 0 ? -1 : 0;
    }
    struct simfb_param *ps = calloc(count, sizeof *ps);
    unsigned char *seen = calloc(count, 1);
    if (!ps || !seen)
        goto fail;
    for (size_t p = 0; p < n;) {
        unsigned fmt = b[p], attr = b[p + 1];
        if (fmt != EIFMT_SVAL) {
            p += 4;
            continue;
        }
        size_t l = rd16(b + p + 2);
        const unsigned char *d = b + p + 4;
        p += 4 + l;
        if (attr != EIATTR_KPARAM_INFO && attr != EIATTR_KPARAM_INFO_V2)
            continue;
        unsigned ordinal = rd16(d + 4);
        if (ordinal >= count || seen[ordinal])
            goto fail;
        seen[ordinal] = 1;
        ps[ordinal].offset = rd16(d + 6);
        ps[ordinal].size = attr == EIATTR_KPARAM_INFO ? rd32(d + 8) >> 18 : rd16(d + 8);
    }
    /* Parameters follow one another without overlapping and fit the block. */
    for (size_t i = 1; i < count; i++)
        if (ps[i].offset < ps[i - 1].offset + ps[i - 1].size)
            goto fail;
    if (cbank >= 0 && ps[count - 1].offset + ps[count - 1].size > (unsigned long)cbank)
        goto fail;
    free(seen);
    *out = ps;
    return (int)count;
fail:
    free(ps);
    free(seen);
    return -1;
}

/* Skips blanks and comments. */
static size_t ptx_skip(const unsigned char *t, size_t n, size_t p)
{
    for (;;) {
        while (p < n && is_blank(t[p]))
            p++;
        if (n - p >= 2 && t[p] == '/' && t[p + 1] == '/') {
            while (p < n && t[p] != '\n')
                p++;
        } else if (n - p >= 2 && t[p] == '/' && t[p + 1] == '*') {
            p += 2;
            while (p < n && !(n - p >= 2 && t[p] == '*' && t[p + 1] == '/'))
                p++;
            p = p < n ? p + 2 : n;
        } else {
            return p;
        }
    }
}

static int tok_is(const unsigned char *tok, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(tok, word, len) == 0;
}

/* A decimal number of the whole token; 0 when it is not one (or absurd). */
static uint32_t tok_number(const unsigned char *tok, size_t len)
{
    uint32_t v = 0;
    if (len == 0 || len > 9)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] < '0' || tok[i] > '9')
            return 0;
        v = v * 10 + (uint32_t)(tok[i] - '0');
    }
    return v;
}

static uint32_t ptx_type_size(const unsigned char *tok, size_t len)
{
    static const struct { const char *name; uint32_t size; } types[] = {
        {".b8", 1},   {".s8", 1},     {".u8", 1},     {".b16", 2},    {".s16", 2},  {".u16", 2},   {".f16", 2},
        {".bf16", 2}, {".b32", 4},    {".s32", 4},    {".u32", 4},    {".f32", 4},  {".f16x2", 4}, {".bf16x2", 4},
        {".b64", 8},  {".s64", 8},    {".u64", 8},    {".f64", 8},    {".b128", 16},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (tok_is(tok, len, types[i].name))
            return types[i].size;
    return 0;
}

/* "[N]" at the end of a parameter's name: N (>= 1); 1 without brackets;
 * 0 when malformed. */
static uint32_t ptx_array_count(const unsigned char *tok, size_t len)
{
    const unsigned char *open = memchr(tok, '[', len);
    if (!open)
        return 1;
    size_t at = (size_t)(open - tok);
    if (tok[len - 1] != ']' || len - at < 3)
        return 0;
    return tok_number(open + 1, len - at - 2);
}

/* From the parameter list that follows an .entry's name. */
static int ptx_params(const unsigned char *t, size_t n, struct simfb_param **out)
{
    *out = NULL;
    size_t p = ptx_skip(t, n, 0);
    if (p < n && (t[p] == '{' || t[p] == '.'))
        return 0; /* no list: the body or a performance directive follows */
    if (p >= n || t[p] != '(')
        return -1;
    p++;
    struct simfb_param *ps = NULL;
    size_t count = 0, cap = 0;
    uint32_t end = 0;
    p = ptx_skip(t, n, p);
    if (p < n && t[p] == ')')
        return 0;
    for (;;) {
        uint32_t align = 0, tsize = 0, elems = 0;
        int is_param = 0, is_ptr = 0, bracketed = 0;
        for (;;) {
            p = ptx_skip(t, n, p);
            if (p >= n)
                goto fail;
            if (t[p] == ',' || t[p] == ')')
                break;
            size_t q = p;
            while (q < n && !is_blank(t[q]) && t[q] != ',' && t[q] != ')' && t[q] != '/')
                q++;
            const unsigned char *tok = t + p;
            size_t len = q - p;
            p = q;
            if (len == 0)
                goto fail;
            if (tok_is(tok, len, ".param")) {
                is_param = 1;
            } else if (tok_is(tok, len, ".align")) {
                p = ptx_skip(t, n, p);
                q = p;
                while (q < n && t[q] >= '0' && t[q] <= '9')
                    q++;
                uint32_t a = tok_number(t + p, q - p);
                p = q;
                if (a == 0 || (a & (a - 1)) != 0)
                    goto fail;
                /* After .ptr, .align is the pointee's, not the parameter's. */
                if (!is_ptr)
                    align = a;
            } else if (tok_is(tok, len, ".ptr")) {
                is_ptr = 1;
            } else if (is_ptr && (tok_is(tok, len, ".global") || tok_is(tok, len, ".const") ||
                                  tok_is(tok, len, ".local") || tok_is(tok, len, ".shared"))) {
                continue;
            } else if (tok[0] == '.') {
                if (tsize || !(tsize = ptx_type_size(tok, len)))
                    goto fail;
            } else if (tok[0] == '[') {
                /* "name [N]", written apart */
                if (!elems || bracketed || !(elems = ptx_array_count(tok, len)))
                    goto fail;
                bracketed = 1;
            } else {
                if (elems || !(elems = ptx_array_count(tok, len)))
                    goto fail;
                bracketed = memchr(tok, '[', len) != NULL;
            }
        }
        if (!is_param || !tsize || !elems)
            goto fail;
        uint32_t a = align ? align : tsize;
        uint64_t off = ((uint64_t)end + a - 1) / a * a;
        uint64_t size = (uint64_t)tsize * elems;
        if (off + size > FB_MAX_PARAM_BYTES)
            goto fail;
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct simfb_param *np = realloc(ps, ncap * sizeof *np);
            if (!np)
                goto fail;
            ps = np;
            cap = ncap;
        }
        ps[count].offset = (uint32_t)off;
        ps[count].size = (uint32_t)size;
        count++;
        end = (uint32_t)(off + size);
        if (t[p++] == ')')
            break;
    }
    *out = ps;
    return (int)count;
fail:
    free(ps);
    return -1;
}

int simfb_params(simfb *fb, const char *name, struct simfb_param **params)
{
    *params = NULL;
    if (!fb || !name)
        return -1;
    size_t len = strlen(name);
    struct fb_kernel *k;
    HASH_FIND(hh, fb->elf, name, len, k);
    if (k) {
        int n = elf_params(k->info, k->info_len, params);
        if (n >= 0)
            return n;
    }
    if (!fb->ptx_indexed) {
        fb->ptx_indexed = 1;
        index_entries(fb, FB_KIND_PTX, index_ptx);
    }
    HASH_FIND(hh, fb->ptx, name, len, k);
    return k ? ptx_params(k->info, k->info_len, params) : -1;
}

static void free_table(struct fb_kernel **table)
{
    struct fb_kernel *k, *tmp;
    HASH_ITER(hh, *table, k, tmp) {
        HASH_DEL(*table, k);
        free(k);
    }
}

void simfb_free(simfb *fb)
{
    if (!fb)
        return;
    free_table(&fb->elf);
    free_table(&fb->ptx);
    while (fb->buffers) {
        struct fb_buffer *b = fb->buffers;
        fb->buffers = b->next;
        free(b);
    }
    free(fb);
}
