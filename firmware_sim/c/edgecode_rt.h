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
 * bytes (8-byte aligned).
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
    EC_ERR_ARG = -1,        /* NULL pointer or bad argument                  */
    EC_ERR_ALIGN = -2,      /* image not 16-byte aligned in memory           */
    EC_ERR_TRUNCATED = -3,  /* buffer shorter than the header or total_size  */
    EC_ERR_MAGIC = -4,      /* magic bytes                                    */
    EC_ERR_VERSION = -5,    /* format version                                 */
    EC_ERR_HEADER = -6,     /* header_size/entry_size/reserved/n_arrays/size  */
    EC_ERR_CRC = -7,        /* CRC-32 mismatch                                */
    EC_ERR_TABLE = -8,      /* table entry: name, dtype, ndim, shape, offset,
                               nbytes, overlap, padding not zero             */
    EC_ERR_KIND = -9,       /* kind code has no runtime                       */
    EC_ERR_SCHEMA = -10,    /* missing array, wrong dtype or shape            */
    EC_ERR_RULE = -11,      /* a consistency rule of the kind is broken      */
    EC_ERR_FRAME = -12,     /* frame value the device cannot read (NB: not 0/1) */
    EC_ERR_WORKSPACE = -13, /* workspace too small                            */
    EC_ERR_INPUT = -14      /* raw feature ec_quantize cannot encode (NaN or
                               infinity; SSBC: beyond float32; NB: not 0/1) */
} ec_status;

/* kind codes of the container header */
#define EC_KIND_PROTECTED_NB 1u
#define EC_KIND_ECOC 2u
#define EC_KIND_SSBC 3u
#define EC_KIND_FOREST 4u

/* Kinds compiled in (ec_config.h). A firmware for one model defines the
 * one it needs (EC_WITH_<KIND> 1) and compiles only that kind's source
 * file; with none defined every kind is compiled in and ec_model_open
 * accepts any image. An image of a kind not compiled in is refused with
 * EC_ERR_KIND. */
#include "ec_config.h"
#if !defined(EC_WITH_NB) && !defined(EC_WITH_ECOC) && !defined(EC_WITH_SSBC) && \
    !defined(EC_WITH_FOREST)
#define EC_WITH_NB 1
#define EC_WITH_ECOC 1
#define EC_WITH_SSBC 1
#define EC_WITH_FOREST 1
#endif
#ifndef EC_WITH_NB
#define EC_WITH_NB 0
#endif
#ifndef EC_WITH_ECOC
#define EC_WITH_ECOC 0
#endif
#ifndef EC_WITH_SSBC
#define EC_WITH_SSBC 0
#endif
#ifndef EC_WITH_FOREST
#define EC_WITH_FOREST 0
#endif
/* EC_WITH_FLOAT 1 adds ec_quantize_float / ec_quantize_double (float and
 * double raw features; they read the IEEE bit patterns and compute in
 * integers, so no FPU or soft-float library is needed). Default 0: no
 * floating-point type appears anywhere in the runtime. */
#ifndef EC_WITH_FLOAT
#define EC_WITH_FLOAT 0
#endif

/* dtype codes of the container table */
enum {
    EC_U8 = 1, EC_I8 = 2, EC_U16 = 3, EC_I16 = 4, EC_U32 = 5,
    EC_I32 = 6, EC_U64 = 7, EC_I64 = 8, EC_F32 = 9, EC_F64 = 10
};

/* ---- the container ----------------------------------------------------- */
typedef struct {
    const uint8_t *data;    /* first byte of the array (in the image)        */
    uint32_t nbytes;
    uint8_t dtype;
    uint8_t ndim;
    uint32_t shape[4];
} ec_array;

typedef struct {
    const uint8_t *base;    /* the image (16-byte aligned)                    */
    uint32_t size;          /* total_size                                     */
    uint16_t kind;
    uint32_t n_arrays;      /* table entries, __meta__ included               */
    const uint8_t *class_names;  /* __classes__: NUL-terminated UTF-8 names, or
                                    NULL when the image has none               */
    uint32_t class_names_bytes;
} ec_image;

/* Verify header, table and CRC-32 of buf[0..size) and fill *img. */
ec_status ec_image_open(const uint8_t *buf, size_t size, ec_image *img);
/* Find array `name` (NUL-terminated); EC_ERR_SCHEMA if absent. */
ec_status ec_image_find(const ec_image *img, const char *name, ec_array *out);
/* Array `name` with `dtype` and `ndim` dimensions; EC_ERR_SCHEMA if absent
 * or of another dtype or rank (the kinds' openers check the shape). */
ec_status ec_image_require(const ec_image *img, const char *name, uint8_t dtype, uint8_t ndim,
                           ec_array *out);
/* 1 if the image has an array called `name`, else 0. */
int ec_image_has(const ec_image *img, const char *name);
/* CRC-32 (IEEE 802.3, zlib) of the image skipping bytes 20..23. */
uint32_t ec_crc32_image(const uint8_t *buf, uint32_t size);

/* ---- per-kind models (fields are the validated arrays, read in place) -- */
typedef struct {
    uint32_t n_features, total_bits;
    const uint16_t *repetitions;   /* (n,)                                     */
    const int32_t *weights;        /* (n,)                                     */
    int32_t bias;
    int32_t scale_shift;
} ec_nb_model;

typedef struct {
    uint32_t n_classes, n_columns, n_symbols, n_features;
    uint8_t learner_kind;          /* 1 linear, 2 tree                         */
    const int16_t *code;           /* (c, m), -1 = unused                      */
    const int32_t *unused_count;   /* (c,)                                     */
    const int32_t *col_cls_offset, *col_n_cls; /* (m,)                         */
    const int16_t *col_classes;    /* (sum col_n_cls,)                         */
    const uint64_t *code_bits, *code_used; /* (c, words) when n_symbols == 2   */
    const uint64_t *in_center_bits; /* (d,) the float64 centers, as bit patterns */
    const int8_t *in_shift;        /* (d,) input quantizer exponents           */
    uint32_t code_words;
    /* linear */
    const int32_t *lin_weights;    /* (d, k)                                   */
    const int64_t *lin_bias;       /* (k,)                                     */
    const int32_t *col_out_offset, *col_n_out; /* (m,)                         */
    uint32_t n_outputs;            /* k                                        */
    /* trees */
    const int32_t *tree_feature, *tree_threshold, *tree_left, *tree_right;
    const int16_t *tree_leaf;
    const int32_t *tree_root;      /* (m,)                                     */
    uint32_t n_nodes;
} ec_ecoc_model;

typedef struct {
    uint32_t n_anchors, n_features, n_bits;   /* m, d, k                       */
    const int16_t *anchors;        /* (m, d)                                   */
    int32_t input_shift, projection_shift;
    int64_t exp_mult, dist_clamp;
    const uint16_t *exp_lut;       /* (257,)                                   */
    const int16_t *projection;     /* (m, k)                                   */
    const int64_t *thresholds;     /* (k,)                                     */
    int has_table;
    const uint8_t *table_codes;    /* (T, ceil(k/8)), LSB first                */
    const int32_t *table_labels;   /* (T,)                                     */
    uint32_t table_size;           /* T                                        */
    int32_t n_classes, knn_k;
} ec_ssbc_model;

/* Decision levels a forest's tree may have (its opener checks the layout
 * with a stack of this many entries). */
#define EC_FOREST_MAX_DEPTH 64

typedef struct {
    uint32_t n_features, n_classes, n_trees, n_nodes, n_leaves; /* d, C, T, n, L        */
    const uint64_t *in_center_bits; /* (d,) the float64 centers, as bit patterns       */
    const int8_t *in_shift;        /* (d,) input quantizer exponents                   */
    const uint8_t *tree_root;      /* (T,) uint8/16/32: a leaf id, or L + root node    */
    const uint8_t *node_feature;   /* (n,) uint8/16/32                                 */
    const int16_t *node_threshold; /* (n,) go left iff q[feature] <= threshold         */
    const uint8_t *node_left, *node_right; /* (n,) uint8/16/32 child references        */
    const uint8_t *leaf_value;     /* (L, C) uint8/16 quantized probabilities, or NULL:
                                      class leaves (the leaf id is the class)          */
    uint8_t root_bytes, feature_bytes, ref_bytes, leaf_bytes; /* entry widths         */
    uint8_t walk;                  /* the walk compiled for these widths (0: closed)   */
} ec_forest_model;

typedef struct {
    uint16_t kind;
    ec_image image;
    uint32_t n_class_names;        /* names in __classes__ (0: none)           */
    union {
        ec_nb_model nb;
        ec_ecoc_model ecoc;
        ec_ssbc_model ssbc;
        ec_forest_model forest;
    } u;
} ec_model;

/* Open and validate an image of any registered kind. */
ec_status ec_model_open(const uint8_t *buf, size_t size, ec_model *model);
/* Kind-specific openers (ec_model_open dispatches on the header's kind). */
ec_status ec_nb_open(const ec_image *img, ec_nb_model *m);
ec_status ec_ecoc_open(const ec_image *img, ec_ecoc_model *m);
ec_status ec_ssbc_open(const ec_image *img, ec_ssbc_model *m);
ec_status ec_forest_open(const ec_image *img, ec_forest_model *m);

/* Entries per frame: NB total_bits (0/1 values), ECOC/SSBC n_features
 * (int16 values). Frames are passed as int16_t for every kind. */
uint32_t ec_frame_width(const ec_model *model);
/* Number of decision integers ec_infer writes:
 *   NB:   1                (accumulator)
 *   ECOC: m + c            (learner symbols, then doubled distances)
 *   SSBC: k (+ 1)          (code bits, then, with a table, nearest distance)
 *   forest: T + C          (the leaf id of every tree, then the votes)
 */
uint32_t ec_decision_len(const ec_model *model);
/* Workspace bytes ec_infer needs (a multiple of 8). */
uint32_t ec_workspace_bytes(const ec_model *model);

/* Raw features per example that ec_quantize reads: NB n (the 0/1 features,
 * before repetition), ECOC, SSBC and forest d. */
uint32_t ec_input_width(const ec_model *model);
/* Raw features x[0 .. ec_input_width) -> frame[0 .. ec_frame_width), exactly
 * as firmware_sim's device.encode(X) does on the host (bit for bit):
 *   NB:   each feature must be 0 or 1; feature j is written 2 r_j + 1 times
 *         (binarizing real inputs, e.g. x > meta "binarize", is the caller's);
 *   ECOC, forest: q_f = clip(rint((x_f - in_center_f) * 2^in_shift_f), +-32767),
 *         the subtraction rounded as IEEE double does, rint half to even;
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
ec_status ec_nb_infer(const ec_nb_model *m, const int16_t *frame, int32_t *label,
                      int64_t *decision);
ec_status ec_ecoc_infer(const ec_ecoc_model *m, const int16_t *frame, int32_t *label,
                        int64_t *decision, void *workspace, uint32_t workspace_bytes);
ec_status ec_ssbc_infer(const ec_ssbc_model *m, const int16_t *frame, int32_t *label,
                        int64_t *decision, void *workspace, uint32_t workspace_bytes);
ec_status ec_forest_infer(const ec_forest_model *m, const int16_t *frame, int32_t *label,
                          int64_t *decision);
uint32_t ec_ecoc_workspace_bytes(const ec_ecoc_model *m);
uint32_t ec_ssbc_workspace_bytes(const ec_ssbc_model *m);
uint32_t ec_forest_workspace_bytes(const ec_forest_model *m);

/* Class names (the image's __classes__ array, written from the artifact's
 * meta["classes"]; ec_model_open has checked there is one per class).
 * ec_class_count: how many names the image holds (0: none).
 * ec_class_name: the NUL-terminated UTF-8 name of class `label` (the label
 * ec_infer returns), a pointer into the image; NULL when the image has no
 * names or `label` is not a class index (SSBC without a table: -1). */
uint32_t ec_class_count(const ec_model *model);
const char *ec_class_name(const ec_model *model, int32_t label);

/* Short English name of a status code (a static string). */
const char *ec_status_name(ec_status s);

#ifdef __cplusplus
}
#endif
#endif /* EDGECODE_RT_H */
