/*
 * ec_container.c - open an edgecode container in place and verify it.
 *
 * Mirrors firmware_sim/artifact.py read_container rule by rule
 * (docs/container_format.md, "Validation rules" 1-13) on the bytes: header,
 * CRC-32, every table entry, overlaps, unaccounted bytes, zero padding,
 * __meta__ being 1-d uint8 and no other reserved name. The JSON text of
 * __meta__ is not parsed here (the metadata type rules are host-side only).
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 * Multi-byte header and table fields are read byte by byte (little-endian);
 * every size computation is checked against total_size (< 2^32) before it is
 * made, so no image can make the reader overflow or read outside
 * buf[0 .. total_size). One CRC pass over the image, then O(arrays^2) work on
 * the table only (plus the padding bytes), in 32-bit arithmetic.
 */
#include "ec_kind.h"

#define EC_HEADER_SIZE 32u
#define EC_ENTRY_SIZE 64u
#define EC_NAME_WIDTH 32u
#define EC_MAX_NDIM 4u
#define EC_ALIGNMENT 16u

static const EC_ROM uint8_t ec_magic[8] = {0x89u, 0x45u, 0x43u, 0x46u, 0x0Du, 0x0Au, 0x1Au, 0x0Au};

static uint32_t rd16(const EC_ROM uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
}

static uint32_t rd32(const EC_ROM uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/* *acc *= b if the product fits uint32 (1), else 0: shift and add, in 32-bit
 * words (no 64-bit product, so no libgcc helper on small cores) */
static int ec_mul32(uint32_t *acc, uint32_t b)
{
    uint32_t a = *acc, p = 0u;
    for (; b != 0u; b >>= 1) {
        if (b & 1u) {
            p += a;
            if (p < a) return 0;
        }
        if (b > 1u && a > 0x7FFFFFFFu) return 0;   /* 2a times what is left of b */
        a <<= 1;
    }
    *acc = p;
    return 1;
}

/* itemsize of a dtype code, 0 for an unknown code */
static uint32_t ec_itemsize(unsigned code)
{
    switch (code) {
    case EC_U8: case EC_I8: return 1u;
    case EC_U16: case EC_I16: return 2u;
    case EC_U32: case EC_I32: case EC_F32: return 4u;
    case EC_U64: case EC_I64: case EC_F64: return 8u;
    default: return 0u;
    }
}

/* ---- CRC-32 (IEEE 802.3 / zlib), reflected, a byte per step --------------
 * The byte-wise table T[x] (x = 0..255) is linear over GF(2), so T[x] =
 * T[x & 0x0F] ^ T[x & 0xF0]: two 16-entry tables (128 bytes instead of 1 KB)
 * and one 8-bit shift per byte (a register move on 8-bit cores). */
static const EC_ROM uint32_t ec_crc_low[16] = {     /* T[i]      */
    0x00000000u, 0x77073096u, 0xEE0E612Cu, 0x990951BAu,
    0x076DC419u, 0x706AF48Fu, 0xE963A535u, 0x9E6495A3u,
    0x0EDB8832u, 0x79DCB8A4u, 0xE0D5E91Eu, 0x97D2D988u,
    0x09B64C2Bu, 0x7EB17CBDu, 0xE7B82D07u, 0x90BF1D91u
};
static const EC_ROM uint32_t ec_crc_high[16] = {    /* T[i << 4] */
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
    0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu
};

static EC_NOINLINE uint32_t ec_crc_update(uint32_t crc, const EC_ROM uint8_t *p, uint32_t n)
{
    const EC_ROM uint8_t *end = p + n;
    while (p != end) {
        uint8_t x = (uint8_t)((uint8_t)crc ^ *p++);
        crc = (crc >> 8) ^ ec_crc_low[x & 0x0Fu] ^ ec_crc_high[x >> 4];
    }
    return crc;
}

uint32_t ec_crc32_image(const EC_ROM uint8_t *buf, uint32_t size)
{
    uint32_t crc = 0xFFFFFFFFu;
    if (buf == NULL) return 0u;
    crc = ec_crc_update(crc, buf, size < 20u ? size : 20u);
    if (size > 24u) crc = ec_crc_update(crc, buf + 24, size - 24u);
    return crc ^ 0xFFFFFFFFu;
}

/* ---- table entries --------------------------------------------------------- */
static const EC_ROM uint8_t *ec_entry(const EC_ROM uint8_t *base, uint32_t i)
{
    return base + (EC_HEADER_SIZE + EC_ENTRY_SIZE * i);
}

static int ec_is_alpha_(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int ec_is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

/* name: NUL-terminated within 32 bytes, NUL-padded, [A-Za-z_][A-Za-z0-9_]*
 * (one pass: `end` is set from the terminating NUL on) */
static int ec_name_ok(const EC_ROM uint8_t *name)
{
    unsigned i;   /* below 32: any int width */
    uint8_t end = 0u;
    for (i = 0; i < EC_NAME_WIDTH; i++) {
        uint8_t c = name[i];
        if (end) {
            if (c != 0u) return 0;                     /* not NUL-padded */
        } else if (c == 0u) {
            if (i == 0u) return 0;                     /* empty */
            end = 1u;
        } else if (!ec_is_alpha_(c) && (i == 0u || !ec_is_digit(c))) {
            return 0;
        }
    }
    return end;                                        /* 0: no NUL */
}

static int ec_name_eq(const EC_ROM uint8_t *a, const EC_ROM uint8_t *b)
{
    unsigned i;
    for (i = 0; i < EC_NAME_WIDTH; i++) {
        if (a[i] != b[i]) return 0;
    }
    return 1;
}

/* a validated name field against a C string */
static int ec_name_is(const EC_ROM uint8_t *field, const EC_ROM char *name)
{
    unsigned i;
    for (i = 0; i < EC_NAME_WIDTH; i++) {
        uint8_t c = (uint8_t)name[i];
        if (field[i] != c) return 0;
        if (c == 0u) return 1;
    }
    return 0;   /* name longer than 31 characters: never stored */
}

static const EC_ROM char ec_meta_name[] = "__meta__";
static const EC_ROM char ec_classes_name[] = "__classes__";
static const EC_ROM char ec_wire_name[] = "__wire_copies__";   /* ec_wire.c checks it */
#if EC_WITH_PROTECT
static const EC_ROM char ec_protect_name[] = "__protect__";     /* ec_protect.c checks it */
#endif

/* 1 if p[0..n) is well-formed UTF-8 (what Python's strict decoder accepts: no
   overlong forms, no surrogates, nothing above U+10FFFF), else 0 */
static int ec_utf8_ok(const EC_ROM uint8_t *p, ec_count n)
{
    const EC_ROM uint8_t *end = p + n;
    while (p != end) {
        uint8_t c = *p++, more;
        uint8_t lo = 0x80u, hi = 0xBFu;      /* range of the second byte */
        if (c < 0x80u) continue;
        if (c >= 0xC2u && c <= 0xDFu) more = 1u;
        else if (c >= 0xE0u && c <= 0xEFu) {
            more = 2u;
            if (c == 0xE0u) lo = 0xA0u;          /* overlong */
            if (c == 0xEDu) hi = 0x9Fu;          /* surrogates */
        } else if (c >= 0xF0u && c <= 0xF4u) {
            more = 3u;
            if (c == 0xF0u) lo = 0x90u;          /* overlong */
            if (c == 0xF4u) hi = 0x8Fu;          /* above U+10FFFF */
        } else return 0;
        if (end - p < (ptrdiff_t)more) return 0;
        for (; more != 0u; more--, p++, lo = 0x80u, hi = 0xBFu)   /* then 0x80..0xBF */
            if (*p < lo || *p > hi) return 0;
    }
    return 1;
}

/* ---- ec_image_open ------------------------------------------------------------ */

/* Words 0..5 of an entry from byte 36 on: shape[0..3], offset, nbytes. */
#define EC_W_OFFSET 4u
#define EC_W_NBYTES 5u

/* Rule 9 for entry i at e (the entries before it are checked): name, unique,
 * dtype, ndim, unused shape slots and reserved fields 0, itemsize * the
 * product of the non-zero dims fits uint32 (for an empty array too:
 * read_container's rule, a zero dim does not make any shape valid), nbytes ==
 * itemsize * prod(shape) (0 when a dim is 0), offset aligned, after the table
 * and inside total. *end receives offset + nbytes. 1 if so. */
static int ec_entry_ok(const EC_ROM uint8_t *buf, const EC_ROM uint8_t *e, uint32_t data_start,
                       uint32_t total, uint32_t *end)
{
    const EC_ROM uint8_t *o;
    /* the 4-byte aligned fields from byte 36 (the image is 16-byte aligned
       and little-endian, both checked) */
    const EC_ROM uint32_t *w = (const EC_ROM uint32_t *)(const EC_ROM void *)(e + 36);
    uint32_t expected;
    unsigned k, ndim;   /* below 256 */
    uint8_t zero_dim = 0u;
    if (!ec_name_ok(e)) return 0;
    for (o = buf + EC_HEADER_SIZE; o != e; o += EC_ENTRY_SIZE) {
        if (ec_name_eq(e, o)) return 0;                /* duplicate */
    }
    expected = ec_itemsize(e[32]);
    ndim = e[33];
    if (expected == 0u || ndim > EC_MAX_NDIM) return 0;
    if (rd16(e + 34) != 0u || rd32(e + 60) != 0u) return 0;
    for (k = 0; k < EC_MAX_NDIM; k++) {
        if (k >= ndim) {
            if (w[k] != 0u) return 0;                  /* unused slot */
        } else if (w[k] == 0u) {
            zero_dim = 1u;
        } else if (!ec_mul32(&expected, w[k])) {
            return 0;                                  /* beyond uint32 */
        }
    }
    if (zero_dim) expected = 0u;
    if (w[EC_W_NBYTES] != expected) return 0;
    if (w[EC_W_OFFSET] % EC_ALIGNMENT != 0u || w[EC_W_OFFSET] < data_start) return 0;
    if (expected > total || w[EC_W_OFFSET] > total - expected) return 0;
    *end = w[EC_W_OFFSET] + expected;
    return 1;
}

/* Rules 10 and 12 (every entry passed rule 9 and total is the largest end):
 * walk the non-empty arrays in address order, the next being the lowest
 * start at or after the end of the previous one, and check that every byte
 * between them is zero. Two arrays with the same start overlap; an array
 * starting inside another is never the next one, so fewer arrays are visited
 * than there are: either way the table is refused. O(arrays^2) on the table
 * (no allocation), one pass over the gap bytes. 1 if so. */
static int ec_layout_ok(const EC_ROM uint8_t *buf, ec_count n, ec_count data_start,
                        ec_count total)
{
    const EC_ROM uint8_t *first = buf + EC_HEADER_SIZE, *stop = first + EC_ENTRY_SIZE * n, *e;
    ec_count cursor = data_start, visited = 0u;
    for (;;) {
        ec_count best = total, best_end = 0u;
        uint8_t tie = 0u;
        for (e = first; e != stop; e += EC_ENTRY_SIZE) {
            /* checked by rule 9: offset + nbytes <= total, an ec_count */
            ec_count st = (ec_count)rd32(e + 52), len = (ec_count)rd32(e + 56);
            if (len == 0u || st < cursor) continue;
            if (st < best) {
                best = st;
                best_end = st + len;
                tie = 0u;
            } else if (st == best) {
                tie = 1u;
            }
        }
        if (tie) return 0;
        for (; cursor < best; cursor++) {              /* the gap [cursor, best) */
            if (buf[cursor] != 0u) return 0;
        }
        if (best == total) break;
        cursor = best_end;
        visited++;
    }
    for (e = first; e != stop; e += EC_ENTRY_SIZE) {  /* every non-empty array visited */
        if (rd32(e + 56) != 0u) visited--;
    }
    return visited == 0u;
}

/* Rule 13: __meta__ is 1-d uint8 (its JSON text is not parsed on the device);
 * __classes__ is 1-d uint8, not empty, ends with a NUL and is valid UTF-8;
 * __wire_copies__ (ec_wire.c checks the rest) is 2-d uint8; no other name
 * starting with "__". 1 if so; img receives the class names. */
static int ec_reserved_ok(const EC_ROM uint8_t *buf, ec_count n, ec_image *img)
{
    const EC_ROM uint8_t *e = buf + EC_HEADER_SIZE, *stop = e + EC_ENTRY_SIZE * n;
    for (; e != stop; e += EC_ENTRY_SIZE) {
        uint8_t ndim = 1u;
        if (e[0] != '_' || e[1] != '_') continue;
        if (ec_name_is(e, ec_wire_name)) ndim = 2u;
#if EC_WITH_PROTECT
        else if (ec_name_is(e, ec_protect_name)) { /* image protection: ec_protect.c */ }
#endif
        else if (!ec_name_is(e, ec_classes_name) && !ec_name_is(e, ec_meta_name)) return 0;
        if (e[32] != EC_U8 || e[33] != ndim) return 0;
        if (e[2] == 'c') {                             /* __classes__ */
            const EC_ROM uint8_t *p = buf + rd32(e + 52);
            ec_count len = (ec_count)rd32(e + 56);   /* <= total (rule 9) */
            if (len == 0u || p[len - 1u] != 0u || !ec_utf8_ok(p, len)) return 0;
            img->class_names = p;
            img->class_names_bytes = len;
        }
    }
    return 1;
}

EC_AVR_WORKAROUND
ec_status ec_image_open(const EC_ROM uint8_t *buf, uint32_t size, ec_image *img)
{
    uint32_t total, data_start, last_end;
    ec_count n, i;
    unsigned b;   /* below 8 */
    const EC_ROM uint8_t *e;
    const uint16_t one = 1u;

    if (buf == NULL || img == NULL) return EC_ERR_ARG;
    {   /* every field 0 or NULL (all bits zero on every target of the runtime) */
        unsigned char *p = (unsigned char *)(void *)img, *end = p + sizeof *img;
        for (; p != end; p++) *p = 0u;
    }
    /* the typed views of the arrays need a little-endian target */
    if (*(const uint8_t *)&one != 1u) return EC_ERR_ARG;
    if (((uintptr_t)buf % EC_ALIGNMENT) != 0u) return EC_ERR_ALIGN;

    /* 1-2. header length and magic (a short buffer whose bytes are not a
       prefix of the magic is "bad magic", as in read_container) */
    for (b = 0; b < 8u && b < size; b++) {
        if (buf[b] != ec_magic[b]) return EC_ERR_MAGIC;
    }
    if (size < EC_HEADER_SIZE) return EC_ERR_TRUNCATED;
    /* 3. version */
    if (rd16(buf + 8) != 1u) return EC_ERR_VERSION;
    /* 4. declared size: the buffer may be larger (an image in a flash region);
       a file reader compares the file length with total_size itself */
    total = rd32(buf + 16);
    if (total > size || total < EC_HEADER_SIZE) return EC_ERR_TRUNCATED;
#if SIZE_MAX < 0xFFFFFFFFu
    /* the image must lie in the address space (AVR: the 64 KB __flash
       reaches), so that every count of its arrays fits ec_count (ec_kind.h) */
    if (total > SIZE_MAX) return EC_ERR_ARG;
#endif
    /* 5. checksum */
    if (ec_crc32_image(buf, total) != rd32(buf + 20)) return EC_ERR_CRC;
    /* 6. kind: one of the kind table's, compiled in (ec_kinds.h) */
    if (ec_kind_find(rd16(buf + 10)) == NULL) return EC_ERR_KIND;
    /* 7. fixed header fields */
    if (rd16(buf + 24) != EC_HEADER_SIZE || rd16(buf + 26) != EC_ENTRY_SIZE ||
        rd32(buf + 28) != 0u)
        return EC_ERR_HEADER;
    /* 8. the table fits (32-bit arithmetic from here: total < 2^32 bounds
       every offset and end once rule 9 has checked them) */
    if (rd32(buf + 12) > (total - EC_HEADER_SIZE) / EC_ENTRY_SIZE) return EC_ERR_HEADER;
    n = (ec_count)rd32(buf + 12);
    data_start = EC_HEADER_SIZE + EC_ENTRY_SIZE * (uint32_t)n;

    /* 9. every entry; 11. total_size is the largest end (an empty array
       counts its offset) */
    last_end = data_start;
    for (i = 0, e = buf + EC_HEADER_SIZE; i < n; i++, e += EC_ENTRY_SIZE) {
        uint32_t end;
        if (!ec_entry_ok(buf, e, data_start, total, &end)) return EC_ERR_TABLE;
        if (end > last_end) last_end = end;
    }
    if (last_end != total) return EC_ERR_TABLE;
    /* 10. no overlap, 12. zero padding; 13. the reserved names */
    if (!ec_layout_ok(buf, n, (ec_count)data_start, (ec_count)total) ||
        !ec_reserved_ok(buf, n, img))
        return EC_ERR_TABLE;

    img->base = buf;
    img->size = total;
    img->kind = (uint16_t)rd16(buf + 10);
    img->n_arrays = n;
    return EC_OK;
}

ec_status ec_image_find(const ec_image *img, const EC_ROM char *name, ec_array *out)
{
    ec_count i;   /* n_arrays fits: ec_image_open checked it */
    unsigned k;
    if (img == NULL || name == NULL || img->base == NULL) return EC_ERR_ARG;
    for (i = 0; i < img->n_arrays; i++) {
        const EC_ROM uint8_t *e = ec_entry(img->base, i);
        if (!ec_name_is(e, name)) continue;
        if (out != NULL) {
            out->data = img->base + rd32(e + 52);
            out->nbytes = rd32(e + 56);
            out->dtype = e[32];
            out->ndim = e[33];
            for (k = 0; k < EC_MAX_NDIM; k++) out->shape[k] = rd32(e + 36 + 4u * k);
        }
        return EC_OK;
    }
    return EC_ERR_SCHEMA;
}

ec_status ec_image_require(const ec_image *img, const EC_ROM char *name, uint8_t dtype,
                           uint8_t ndim, ec_array *out)
{
    if (ec_image_find(img, name, out) != EC_OK) return EC_ERR_SCHEMA;
    if (out->dtype != dtype || out->ndim != ndim) return EC_ERR_SCHEMA;
    return EC_OK;
}

int ec_image_has(const ec_image *img, const EC_ROM char *name)
{
    return ec_image_find(img, name, NULL) == EC_OK;
}

const char *ec_status_name(ec_status s)
{
    switch (s) {
    case EC_OK: return "ok";
    case EC_ERR_ARG: return "argument";
    case EC_ERR_ALIGN: return "alignment";
    case EC_ERR_TRUNCATED: return "truncated";
    case EC_ERR_MAGIC: return "magic";
    case EC_ERR_VERSION: return "version";
    case EC_ERR_HEADER: return "header";
    case EC_ERR_CRC: return "checksum";
    case EC_ERR_TABLE: return "table";
    case EC_ERR_KIND: return "kind";
    case EC_ERR_SCHEMA: return "schema";
    case EC_ERR_RULE: return "rule";
    case EC_ERR_FRAME: return "frame";
    case EC_ERR_WORKSPACE: return "workspace";
    case EC_ERR_INPUT: return "input";
#if EC_WITH_PROTECT
    case EC_ERR_PROTECT: return "protect";
    case EC_ERR_UPSET: return "upset";
    case EC_ERR_READONLY: return "readonly";
#endif
    default: return "unknown";
    }
}
