/*
 * edgecode_rt.h - portable C99 device runtime for edgecode containers.
 *
 * Implements the device contract of firmware_sim (docs/architecture.md):
 * open an image in place (no copy, no malloc), verify it rule by rule as
 * firmware_sim's loader does (docs/container_format.md), then run the
 * kind's integer inference on one frame, returning the label and the
 * decision integers that firmware_sim's device.infer returns.
 *
 * The runtime uses <stdint.h> and <stddef.h> only: no libc calls, no
 * floating point on the inference path, no recursion, no dynamic memory.
 * Scratch memory is a caller-provided workspace of ec_workspace_bytes()
 * bytes (aligned as int64_t: 8 bytes, 1 on AVR; a uint64_t array is).
 */
#ifndef EDGECODE_RT_H
#define EDGECODE_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes (0 = success; every failure is negative) ---------- */
typedef enum {
    EC_OK = 0,
    EC_ERR_ARG = -1,        /* NULL pointer or bad argument (an image larger
                               than the address space: AVR 64 KB)            */
    EC_ERR_ALIGN = -2,      /* image not 16-byte aligned in memory           */
    EC_ERR_TRUNCATED = -3,  /* buffer shorter than the header or total_size  */
    EC_ERR_MAGIC = -4,      /* magic bytes                                    */
    EC_ERR_VERSION = -5,    /* format version                                 */
    EC_ERR_HEADER = -6,     /* header_size/entry_size/reserved/n_arrays/size  */
    EC_ERR_CRC = -7,        /* CRC-32 mismatch                                */
    EC_ERR_TABLE = -8,      /* table entry: name, dtype, ndim, shape, offset,
                               nbytes, overlap, padding not zero             */
    EC_ERR_KIND = -9,       /* kind code has no runtime, or the image's form of
                               its kind is not compiled in (forest node widths,
                               ECOC learner kind: ec_config.h)                */
    EC_ERR_SCHEMA = -10,    /* missing array, wrong dtype or shape            */
    EC_ERR_RULE = -11,      /* a consistency rule of the kind is broken      */
    EC_ERR_FRAME = -12,     /* frame value the device cannot read (NB: not 0/1) */
    EC_ERR_WORKSPACE = -13, /* workspace too small                            */
    EC_ERR_INPUT = -14,     /* raw feature ec_quantize cannot encode (NaN or
                               infinity; SSBC: beyond float32; NB: not 0/1) */
    EC_ERR_PROTECT = -15,   /* __protect__ malformed (its table, a BCH span,
                               its length), or more erased units than
                               EC_PROTECT_UNITS (image protection, issue 27) */
    EC_ERR_UPSET = -16,     /* an upset detected and not corrected in an
                               array the kind has no fallback for          */
    EC_ERR_READONLY = -17   /* a protected image opened read-only (in flash)
                               needs a correction or an erasure: open a RAM
                               copy with ec_model_open_rw                   */
} ec_status;

/* kind codes of the container header */
#define EC_KIND_PROTECTED_NB 1u
#define EC_KIND_ECOC 2u
#define EC_KIND_SSBC 3u

/* Kinds compiled in (ec_config.h): the kinds of the kind table (ec_kinds.h)
 * whose switch EC_WITH_<KIND> is 1, or every kind when EC_ALL_KINDS is 1. A
 * firmware for one model defines its kind's switch only (`edgecode firmware`
 * writes such an ec_config.h) and compiles only that kind's source file; an
 * image of a kind not compiled in is refused with EC_ERR_KIND. The default
 * ec_config.h of firmware_sim/c sets EC_ALL_KINDS 1. */
#include "ec_config.h"
#ifndef EC_ALL_KINDS
#define EC_ALL_KINDS 0
#endif
/* EC_WITH_FLOAT 1 adds ec_quantize_float / ec_quantize_double (float and
 * double raw features; they read the IEEE bit patterns and compute in
 * integers, so no FPU or soft-float library is needed). Default 0: no
 * floating-point type appears anywhere in the runtime. */
#ifndef EC_WITH_FLOAT
#define EC_WITH_FLOAT 0
#endif

/* EC_WITH_PROTECT 1 compiles in image protection (ec_protect.c, issue 27):
 * images carrying __protect__ are decoded at open (ec_model_open_rw corrects
 * a RAM image in place). Default: with every kind (EC_ALL_KINDS); `edgecode
 * firmware` sets it for a protected image only. Without it a protected image
 * is refused (EC_ERR_TABLE: an unknown reserved array). EC_PROTECT_UNITS:
 * the units (ECOC learners, forest trees) a detected upset may erase; the
 * model keeps one bit per unit. */
#ifndef EC_WITH_PROTECT
#define EC_WITH_PROTECT EC_ALL_KINDS
#endif
#if EC_WITH_PROTECT && !defined(EC_PROTECT_UNITS)
#define EC_PROTECT_UNITS 4096
#endif
/* The largest BCH code (m, t) the decoder takes (the format's: 13, 32); they
 * size its stack. `edgecode firmware` sets the image's; an image with a
 * larger code is refused with EC_ERR_PROTECT. */
#ifndef EC_PROTECT_BCH
#define EC_PROTECT_BCH 1     /* 0: no BCH decoder (an image without BCH entries) */
#endif
#ifndef EC_PROTECT_M_MAX
#define EC_PROTECT_M_MAX 13
#endif
#ifndef EC_PROTECT_T_MAX
#define EC_PROTECT_T_MAX 32
#endif

/* EC_ROM: the address space of the image and of the runtime's constant
 * tables, carried by every pointer into them. Empty (plain memory) except on
 * AVR, where const data would otherwise be copied into the few KB of RAM:
 * there it is __flash, read in place with LPM from the first 64 KB of flash
 * (the image and the runtime's tables must lie there; the code may go
 * above, as on the ATmega2560). __flash is a GNU C extension (ISO/IEC TR
 * 18037 named address spaces): compile the runtime as GNU C (-std=gnu99),
 * not strict C99 nor C++. A project may define EC_ROM itself (say, empty on
 * AVR for an image received into RAM). */
#ifndef EC_ROM
#if defined(__AVR__) && defined(__FLASH)
#if defined(__STRICT_ANSI__)
#error "edgecode on AVR reads the image from flash through __flash: compile with -std=gnu99"
#endif
#define EC_ROM __flash
#define EC_ROM_IS_FLASH 1
#else
#define EC_ROM
#endif
#endif

/* dtype codes of the container table */
enum {
    EC_U8 = 1, EC_I8 = 2, EC_U16 = 3, EC_I16 = 4, EC_U32 = 5,
    EC_I32 = 6, EC_U64 = 7, EC_I64 = 8, EC_F32 = 9, EC_F64 = 10
};

/* ---- the container ----------------------------------------------------- */
typedef struct {
    const EC_ROM uint8_t *data;  /* first byte of the array (in the image)   */
    uint32_t nbytes;
    uint8_t dtype;
    uint8_t ndim;
    uint32_t shape[4];
} ec_array;

typedef struct {
    const EC_ROM uint8_t *base;  /* the image (16-byte aligned)               */
    uint32_t size;          /* total_size                                     */
    uint16_t kind;
    uint32_t n_arrays;      /* table entries, __meta__ included               */
    const EC_ROM uint8_t *class_names;  /* __classes__: NUL-terminated UTF-8
                                    names, or NULL when the image has none    */
    uint32_t class_names_bytes;
} ec_image;

/* Verify header, table and CRC-32 of buf[0..size) and fill *img; the kind
 * must be one compiled in (EC_ERR_KIND otherwise). */
ec_status ec_image_open(const EC_ROM uint8_t *buf, uint32_t size, ec_image *img);
/* Find array `name` (NUL-terminated, in ROM: EC_STR in ec_kind.h); EC_ERR_SCHEMA
 * if absent. */
ec_status ec_image_find(const ec_image *img, const EC_ROM char *name, ec_array *out);
/* Array `name` with `dtype` and `ndim` dimensions; EC_ERR_SCHEMA if absent
 * or of another dtype or rank (the kinds' openers check the shape). */
ec_status ec_image_require(const ec_image *img, const EC_ROM char *name, uint8_t dtype,
                           uint8_t ndim, ec_array *out);
/* 1 if the image has an array called `name`, else 0. */
int ec_image_has(const ec_image *img, const EC_ROM char *name);
/* CRC-32 (IEEE 802.3, zlib) of the image skipping bytes 20..23. */
uint32_t ec_crc32_image(const EC_ROM uint8_t *buf, uint32_t size);

/* ---- the model ---------------------------------------------------------- */
/* A kind's operations (ec_kind.h): one table per kind, found by kind code. */
typedef struct ec_kind_ops ec_kind_ops;

/* Room for a kind's own fields (pointers into the image, sizes), which only
 * the kind's source file knows (it views the bytes as its own struct type,
 * and only through that type): EC_STATE_POINTERS image pointers,
 * EC_STATE_COUNTS array counts (size_t: their width follows the address
 * space) plus EC_STATE_BYTES bytes of integers. Each kind checks at compile
 * time that its fields fit. */
#define EC_STATE_POINTERS 20
#define EC_STATE_COUNTS 4
#define EC_STATE_BYTES 48
typedef union {
    unsigned char bytes[EC_STATE_POINTERS * sizeof(const EC_ROM void *) +
                        EC_STATE_COUNTS * sizeof(size_t) + EC_STATE_BYTES];
    const EC_ROM void *align_pointer;
    uint64_t align_integer;
} ec_kind_state;

typedef struct {
    uint16_t kind;                 /* kind code, 0 until opened                */
    const EC_ROM ec_kind_ops *ops; /* the kind's operations (in ROM)           */
    ec_image image;
    uint32_t n_class_names;        /* names in __classes__ (0: none)           */
    const EC_ROM uint8_t *wire_copies; /* __wire_copies__ (ec_wire.c), or NULL */
    uint32_t wire_bits;            /* wire bits per frame (0: no wire layer)   */
    ec_kind_state state;           /* the kind's fields (read in place)        */
#if EC_WITH_PROTECT
    uint32_t n_erased;             /* units erased by detected upsets (issue 27) */
    uint8_t erased[(EC_PROTECT_UNITS + 7) / 8];  /* bit u: unit u is erased     */
#endif
} ec_model;

/* Open and validate an image of any kind compiled in: buf[0 .. size) holds
 * it (size >= its total_size; a larger flash region is fine). */
ec_status ec_model_open(const EC_ROM uint8_t *buf, uint32_t size, ec_model *model);

#if EC_WITH_PROTECT && !defined(EC_ROM_IS_FLASH)
/* Open an image held in writable memory. A protected image (__protect__) is
 * scrubbed in place first, as firmware_sim.load decodes it: correctable
 * upsets corrected (data and check bits), TMR copies voted, the elements of
 * a word or block detected and not corrected set to 0 and their units erased
 * (the kind's fallback at inference). ec_model_open on a protected image
 * checks it without writing and refuses one that needs a correction or an
 * erasure (EC_ERR_READONLY). Not on AVR with the image in flash (__flash):
 * there define EC_ROM empty and keep the image in RAM. On a refusal the
 * buffer may have been partly corrected. */
ec_status ec_model_open_rw(uint8_t *buf, uint32_t size, ec_model *model);
#endif

/* Entries per frame: NB total_bits (0/1 values), ECOC/SSBC n_features
 * (int16 values). Frames are passed as int16_t for every kind. */
uint32_t ec_frame_width(const ec_model *model);
/* Number of decision integers ec_infer writes:
 *   NB:   1                (accumulator)
 *   ECOC: m + c            (learner symbols, then doubled distances)
 *   SSBC: k (+ 1)          (code bits, then, with a table, nearest distance)
 */
uint32_t ec_decision_len(const ec_model *model);
/* Workspace bytes ec_infer needs (a multiple of 8). */
uint32_t ec_workspace_bytes(const ec_model *model);

/* Raw features per example that ec_quantize reads: NB n (the 0/1 features,
 * before repetition), ECOC and SSBC d. */
uint32_t ec_input_width(const ec_model *model);
/* Raw features x[0 .. ec_input_width) -> frame[0 .. ec_frame_width), exactly
 * as firmware_sim's device.encode(X) does on the host (bit for bit):
 *   NB:   each feature must be 0 or 1; feature j is written 2 r_j + 1 times
 *         (binarizing real inputs, e.g. x > meta "binarize", is the caller's);
 *   ECOC: q_f = clip(rint((x_f - in_center_f) * 2^in_shift_f), +-32767), the
 *         subtraction rounded as IEEE double does, rint half to even;
 *   SSBC: q = clip(rint(float32(x) * 2^input_shift), +-32767), float32(x)
 *         rounded as IEEE float does.
 * ec_quantize takes int32 features (what device.encode gives for the same
 * integers); with EC_WITH_FLOAT, ec_quantize_float and ec_quantize_double
 * take float / double ones (device.encode of a float32 / float64 array; a
 * 32-bit double, avr-gcc's default, is read as binary32). A value that cannot
 * be encoded (device.encode raises) returns EC_ERR_INPUT and leaves the frame
 * untouched. */
ec_status ec_quantize(const ec_model *model, const int32_t *x, int16_t *frame);
#if EC_WITH_FLOAT
ec_status ec_quantize_float(const ec_model *model, const float *x, int16_t *frame);
ec_status ec_quantize_double(const ec_model *model, const double *x, int16_t *frame);
#endif

/* Run one frame. *label is the class index (-1 for SSBC without a table);
 * decision[0 .. ec_decision_len) receives the decision integers in the
 * order documented above. */
ec_status ec_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                   int64_t *decision, void *workspace, uint32_t workspace_bytes);

/* Class names (the image's __classes__ array, written from the artifact's
 * meta["classes"]; ec_model_open has checked there is one per class).
 * ec_class_count: how many names the image holds (0: none).
 * ec_class_name: the NUL-terminated UTF-8 name of class `label` (the label
 * ec_infer returns), a pointer into the image; NULL when the image has no
 * names or `label` is not a class index (SSBC without a table: -1). */
uint32_t ec_class_count(const ec_model *model);
const EC_ROM char *ec_class_name(const ec_model *model, int32_t label);

/* Short English name of a status code (a static string). */
const char *ec_status_name(ec_status s);

#ifdef __cplusplus
}
#endif
#endif /* EDGECODE_RT_H */
