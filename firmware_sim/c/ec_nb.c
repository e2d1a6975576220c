/*
 * ec_nb.c - protected naive Bayes (kind 1): the operations table ec_nb_ops.
 *
 * nb_open checks every rule of firmware_sim/_validation.py
 * check_protected_nb (docs/container_format.md, "Consistency rules of
 * protected_nb" 1-4); rule 5 (metadata types) is host-side only.
 * nb_infer is firmware_sim/_kernels _decode_accumulate for one frame;
 * ec_nb_quantize is device.encode (transmit: feature j written 2 r_j + 1 times).
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "ec_kind.h"

/* the fields of an opened model (model->state) */
typedef struct {
    const EC_ROM uint16_t *repetitions;  /* (n,)                                */
    const EC_ROM int32_t *weights;       /* (n,)                                */
    uint32_t n_features, total_bits;
    int32_t bias;
    int32_t scale_shift;
} ec_nb_state;
EC_STATE_FITS(ec_nb_state);

static ec_status nb_open(const ec_image *img, ec_model *model, uint32_t *n_classes)
{
    ec_nb_state *m = EC_STATE(ec_nb_state, model);
    ec_array a;   /* one at a time: a small stack */
    const EC_ROM uint16_t *r;
    const EC_ROM int32_t *wv;
    uint32_t n, j;
    uint64_t abs_sum = 0u, rep_sum = 0u, total_bits;
    int64_t b;
    int32_t s;

    /* 1. schema */
    if (ec_image_require(img, EC_STR("repetitions"), EC_U16, 1u, &a) != EC_OK) return EC_ERR_SCHEMA;
    n = a.shape[0];
    r = (const EC_ROM uint16_t *)(const EC_ROM void *)a.data;
    if (n < 1u) return EC_ERR_SCHEMA;
    if (ec_image_require(img, EC_STR("weights"), EC_I32, 1u, &a) != EC_OK || a.shape[0] != n)
        return EC_ERR_SCHEMA;
    wv = (const EC_ROM int32_t *)(const EC_ROM void *)a.data;
    if (ec_image_require(img, EC_STR("bias"), EC_I32, 1u, &a) != EC_OK || a.shape[0] != 1u)
        return EC_ERR_SCHEMA;
    b = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
    if (ec_image_require(img, EC_STR("scale_shift"), EC_I32, 1u, &a) != EC_OK || a.shape[0] != 1u)
        return EC_ERR_SCHEMA;
    s = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
    /* 2. scale_shift in [0, 62] */
    if (s < 0 || s > 62) return EC_ERR_RULE;
    /* 3. sum |w_j| + |bias| < 2^31 (n < 2^30, |w_j| <= 2^31: no uint64 overflow) */
    for (j = 0; j < n; j++) {
        int64_t v = wv[j];
        abs_sum += (uint64_t)(v < 0 ? -v : v);
    }
    abs_sum += (uint64_t)(b < 0 ? -b : b);
    if (abs_sum >= ((uint64_t)1 << 31)) return EC_ERR_RULE;
    /* 4. sum (2 r_j + 1) < 2^32 */
    for (j = 0; j < n; j++) rep_sum += r[j];
    total_bits = 2u * rep_sum + n;
    if (total_bits >= ((uint64_t)1 << 32)) return EC_ERR_RULE;

    m->n_features = n;
    m->total_bits = (uint32_t)total_bits;
    m->repetitions = r;
    m->weights = wv;
    m->bias = (int32_t)b;
    m->scale_shift = s;
    *n_classes = 2u;
    return EC_OK;
}

static ec_status nb_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                          int64_t *decision, void *workspace, uint32_t workspace_bytes)
{
    const ec_nb_state *m = EC_CSTATE(ec_nb_state, model);
    uint32_t j, k, pos = 0u;
    int32_t acc;
    (void)workspace;      /* none needed */
    (void)workspace_bytes;
    /* a frame holds received bits: anything but 0/1 is refused (FrameError) */
    for (j = 0; j < m->total_bits; j++) {
        if (frame[j] != 0 && frame[j] != 1) return EC_ERR_FRAME;
    }
    /* majority-decode each feature, add its weight when it decodes to 1; the
       int32 accumulator cannot overflow (sum |w| + |bias| < 2^31, checked) */
    acc = m->bias;
    for (j = 0; j < m->n_features; j++) {
        uint32_t copies = 2u * (uint32_t)m->repetitions[j] + 1u, count = 0u;
        for (k = 0; k < copies; k++) count += frame[pos + k] == 1 ? 1u : 0u;
        pos += copies;
        if (count > m->repetitions[j]) acc += m->weights[j];
    }
    *label = acc > 0 ? 1 : 0;
    decision[0] = acc;
    return EC_OK;
}

/* raw feature as a bit: 0 or 1 exactly (-0.0 is 0) */
static int nb_is_bit(ec_exact v, uint32_t *bit)
{
    if (v.mant == 0u) { *bit = 0u; return 1; }
    if (v.neg) return 0;
    while ((v.mant & 1u) == 0u) {
        v.mant >>= 1;
        v.exp += 1;
    }
    if (v.mant != 1u || v.exp != 0) return 0;
    *bit = 1u;
    return 1;
}

ec_quantize_fn ec_nb_quantize;

ec_status ec_nb_quantize(const ec_model *model, const void *x, int type, int16_t *frame)
{
    const ec_nb_state *m = EC_CSTATE(ec_nb_state, model);
    uint32_t j, k, pos = 0u, bit = 0u;
    ec_exact v = {0u, 0, 0};
    for (j = 0; j < m->n_features; j++) {
        if (!ec_q_input(x, type, j, &v) || !nb_is_bit(v, &bit)) return EC_ERR_INPUT;
    }
    for (j = 0; j < m->n_features; j++) {
        uint32_t copies = 2u * (uint32_t)m->repetitions[j] + 1u;
        (void)ec_q_input(x, type, j, &v);
        (void)nb_is_bit(v, &bit);
        for (k = 0; k < copies; k++) frame[pos + k] = (int16_t)bit;
        pos += copies;
    }
    return EC_OK;
}

static uint32_t nb_input_width(const ec_model *model)
{
    return EC_CSTATE(ec_nb_state, model)->n_features;
}

static uint32_t nb_frame_width(const ec_model *model)
{
    return EC_CSTATE(ec_nb_state, model)->total_bits;
}

static uint32_t nb_decision_len(const ec_model *model)
{
    (void)model;
    return 1u;                    /* the accumulator */
}

static uint32_t nb_workspace_bytes(const ec_model *model)
{
    (void)model;
    return 0u;
}

#if EC_WITH_PROTECT
/* image protection's fallback (ProtectedNBDevice.erasure_owners): a detected
   weight or bias reads 0; nothing else has one */
static ec_status nb_erasure_owner(const ec_image *img, const EC_ROM uint8_t *entry,
                                  uint32_t element, int32_t *unit)
{
    (void)img;
    (void)element;
    *unit = -1;
    return ec_entry_is(entry, "weights") || ec_entry_is(entry, "bias") ? EC_OK : EC_ERR_UPSET;
}
#endif

const EC_ROM ec_kind_ops ec_nb_ops = {
    EC_KIND_PROTECTED_NB, nb_open, nb_input_width, nb_frame_width, nb_decision_len,
    nb_workspace_bytes, nb_infer
#if EC_WITH_PROTECT
    , nb_erasure_owner
#endif
};
