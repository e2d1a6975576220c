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

/* *acc *= b if the product fits uint32 (1), else 0 (acc > 0): 16 x 16-bit
 * factors need no 64-bit product */
static int ec_mul32(uint32_t *acc, uint32_t b)
{
    uint32_t a = *acc;
    if ((a | b) <= 0xFFFFu) { *acc = a * b; return 1; }
    {
        uint64_t p = (uint64_t)a * b;
        if (p > 0xFFFFFFFFu) return 0;
        *acc = (uint32_t)p;
        return 1;
    }
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

static uint32_t ec_crc_update(uint32_t crc, const EC_ROM uint8_t *p, uint32_t n)
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

/* name: NUL-terminated within 32 bytes, NUL-padded, [A-Za-z_][A-Za-z0-9_]* */
static int ec_name_ok(const EC_ROM uint8_t *name)
{
    unsigned stop = EC_NAME_WIDTH, i;   /* (below 32: any int width) */
    for (i = 0; i < EC_NAME_WIDTH; i++) {
        if (name[i] == 0u) { stop = i; break; }
    }
    if (stop == EC_NAME_WIDTH || stop == 0u) return 0;
    for (i = stop; i < EC_NAME_WIDTH; i++) {
        if (name[i] != 0u) return 0;
    }
    if (!ec_is_alpha_(name[0])) return 0;
    for (i = 1; i < stop; i++) {
        if (!ec_is_alpha_(name[i]) && !ec_is_digit(name[i])) return 0;
    }
    return 1;
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
static int ec_utf8_ok(const EC_ROM uint8_t *p, uint32_t n)
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
EC_AVR_WORKAROUND
ec_status ec_image_open(const EC_ROM uint8_t *buf, uint32_t size, ec_image *img)
{
    uint32_t total, n, i, j, crc, data_start, last_end, cursor, nonempty;
    unsigned b;   /* below 8 */
    const EC_ROM uint8_t *e;
    const uint16_t one = 1u;

    if (buf == NULL || img == NULL) return EC_ERR_ARG;
    img->base = NULL;
    img->size = 0u;
    img->kind = 0u;
    img->n_arrays = 0u;
    img->class_names = NULL;
    img->class_names_bytes = 0u;
    /* the typed views of the arrays need a little-endian target */
    if (*(const uint8_t *)&one != 1u) return EC_ERR_ARG;
    if (((uintptr_t)buf % EC_ALIGNMENT) != 0u) return EC_ERR_ALIGN;

    /* 1-2. header length and magic (a short buffer whose bytes are not a
       prefix of the magic is "bad magic", as in read_container) */
    if (size < EC_HEADER_SIZE) {
        for (b = 0; b < size && b < 8u; b++) {
            if (buf[b] != ec_magic[b]) return EC_ERR_MAGIC;
        }
        return EC_ERR_TRUNCATED;
    }
    for (b = 0; b < 8u; b++) {
        if (buf[b] != ec_magic[b]) return EC_ERR_MAGIC;
    }
    /* 3. version */
    if (rd16(buf + 8) != 1u) return EC_ERR_VERSION;
    /* 4. declared size: the buffer may be larger (an image in a flash region);
       a file reader compares the file length with total_size itself */
    total = rd32(buf + 16);
    if ((uint64_t)total > (uint64_t)size) return EC_ERR_TRUNCATED;
    if (total < EC_HEADER_SIZE) return EC_ERR_TRUNCATED;
    /* 5. checksum */
    crc = ec_crc32_image(buf, total);
    if (crc != rd32(buf + 20)) return EC_ERR_CRC;
    /* 6. kind: one of the kind table's, compiled in (ec_kinds.h) */
    if (ec_kind_find(rd16(buf + 10)) == NULL) return EC_ERR_KIND;
    /* 7. fixed header fields */
    if (rd16(buf + 24) != EC_HEADER_SIZE || rd16(buf + 26) != EC_ENTRY_SIZE ||
        rd32(buf + 28) != 0u)
        return EC_ERR_HEADER;
    /* 8. the table fits (32-bit arithmetic from here: total < 2^32 bounds
       every offset and end once rule 9 has checked them) */
    n = rd32(buf + 12);
    if (n > (total - EC_HEADER_SIZE) / EC_ENTRY_SIZE) return EC_ERR_HEADER;
    data_start = EC_HEADER_SIZE + EC_ENTRY_SIZE * n;

    /* 9. every entry; 11. total_size is the largest end (an empty array
       counts its offset) */
    last_end = data_start;
    nonempty = 0u;
    for (i = 0, e = buf + EC_HEADER_SIZE; i < n; i++, e += EC_ENTRY_SIZE) {
        uint32_t itemsize, offset, nbytes, expected;
        unsigned code, ndim, k;   /* below 256 */
        int zero_dim = 0, too_big = 0;
        if (!ec_name_ok(e)) return EC_ERR_TABLE;
        {
            const EC_ROM uint8_t *o = buf + EC_HEADER_SIZE;
            for (j = 0; j < i; j++, o += EC_ENTRY_SIZE) {
                if (ec_name_eq(e, o)) return EC_ERR_TABLE;   /* duplicate */
            }
        }
        code = e[32];
        itemsize = ec_itemsize(code);
        if (itemsize == 0u) return EC_ERR_TABLE;
        ndim = e[33];
        if (ndim > EC_MAX_NDIM) return EC_ERR_TABLE;
        for (k = ndim; k < EC_MAX_NDIM; k++) {
            if (rd32(e + 36 + 4u * k) != 0u) return EC_ERR_TABLE;
        }
        if (rd16(e + 34) != 0u || rd32(e + 60) != 0u) return EC_ERR_TABLE;
        /* itemsize * the product of the non-zero dims fits uint32, for an
           empty array too (read_container's rule: a zero dim does not make any
           shape valid), stopping as soon as the product exceeds uint32. Then
           nbytes == itemsize * prod(shape): 0 when a dim is 0. */
        expected = itemsize;
        for (k = 0; k < ndim; k++) {
            uint32_t sz = rd32(e + 36 + 4u * k);
            if (sz == 0u) zero_dim = 1;
            else if (!too_big && !ec_mul32(&expected, sz)) too_big = 1;
        }
        if (too_big) return EC_ERR_TABLE;
        if (zero_dim) expected = 0u;
        offset = rd32(e + 52);
        nbytes = rd32(e + 56);
        if (nbytes != expected) return EC_ERR_TABLE;
        if (offset % EC_ALIGNMENT) return EC_ERR_TABLE;
        if (offset < data_start) return EC_ERR_TABLE;
        if (nbytes > total || offset > total - nbytes) return EC_ERR_TABLE;
        if (offset + nbytes > last_end) last_end = offset + nbytes;
        nonempty += nbytes != 0u;
    }
    if (last_end != total) return EC_ERR_TABLE;

    /* 10. non-empty arrays do not overlap, and 12. every data byte outside
       them is zero. Fast path, the writer's layout: the non-empty arrays in
       table order lie in address order, each at or after the previous end;
       then one pass over the table checks both, and the gaps are scanned. */
    cursor = data_start;
    for (i = 0, e = buf + EC_HEADER_SIZE; i < n; i++, e += EC_ENTRY_SIZE) {
        uint32_t st = rd32(e + 52), len = rd32(e + 56);
        if (len == 0u) continue;
        if (st < cursor) break;
        cursor = st + len;
    }
    if (i == n) {
        cursor = data_start;
        for (i = 0, e = buf + EC_HEADER_SIZE; i <= n; i++, e += EC_ENTRY_SIZE) {
            uint32_t st = total, len = 0u, at;
            if (i < n) {
                st = rd32(e + 52);
                len = rd32(e + 56);
                if (len == 0u) continue;
            }
            for (at = cursor; at < st; at++) {   /* the gap [cursor, st) */
                if (buf[at] != 0u) return EC_ERR_TABLE;
            }
            cursor = st + len;
        }
    } else {
        /* any other order: walk the arrays in address order (the next is the
           lowest start at or after the end of the previous one). Two arrays
           with the same start overlap; an array starting inside another is
           never the next one, so it is left unvisited: either way the table
           is refused. O(arrays^2) on the table. */
        cursor = data_start;
        for (;;) {
            uint32_t best = total, best_end = 0u, ties = 0u, at;
            for (i = 0, e = buf + EC_HEADER_SIZE; i < n; i++, e += EC_ENTRY_SIZE) {
                uint32_t st = rd32(e + 52), len = rd32(e + 56);
                if (len == 0u || st < cursor) continue;
                if (st < best) { best = st; best_end = st + len; ties = 0u; }
                else if (st == best) ties++;
            }
            if (ties != 0u) return EC_ERR_TABLE;
            for (at = cursor; at < best; at++) {  /* the gap [cursor, best) */
                if (buf[at] != 0u) return EC_ERR_TABLE;
            }
            if (best == total) break;
            cursor = best_end;
            if (nonempty-- == 0u) return EC_ERR_TABLE;   /* cannot happen */
        }
        if (nonempty != 0u) return EC_ERR_TABLE;         /* an array inside another */
    }

    /* 13. __meta__ is 1-d uint8 (its JSON text is not parsed on the device);
       __classes__ is 1-d uint8, not empty, ends with a NUL and is valid
       UTF-8; no other name starting with "__" */
    for (i = 0, e = buf + EC_HEADER_SIZE; i < n; i++, e += EC_ENTRY_SIZE) {
        if (e[0] == '_' && e[1] == '_') {
            int classes = ec_name_is(e, ec_classes_name);
            if (ec_name_is(e, ec_wire_name)) {     /* the wire layer: 2-d uint8 */
                if (e[32] != EC_U8 || e[33] != 2u) return EC_ERR_TABLE;
                continue;
            }
#if EC_WITH_PROTECT
            if (ec_name_is(e, ec_protect_name)) {  /* image protection: 1-d uint8 */
                if (e[32] != EC_U8 || e[33] != 1u) return EC_ERR_TABLE;
                continue;
            }
#endif
            if (!classes && !ec_name_is(e, ec_meta_name)) return EC_ERR_TABLE;
            if (e[32] != EC_U8 || e[33] != 1u) return EC_ERR_TABLE;
            if (classes) {
                const EC_ROM uint8_t *p = buf + rd32(e + 52);
                uint32_t len = rd32(e + 56);
                if (len == 0u || p[len - 1u] != 0u || !ec_utf8_ok(p, len)) return EC_ERR_TABLE;
                img->class_names = p;
                img->class_names_bytes = len;
            }
        }
    }

    img->base = buf;
    img->size = total;
    img->kind = (uint16_t)rd16(buf + 10);
    img->n_arrays = n;
    return EC_OK;
}

EC_AVR_WORKAROUND
ec_status ec_image_find(const ec_image *img, const EC_ROM char *name, ec_array *out)
{
    uint32_t i;
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
