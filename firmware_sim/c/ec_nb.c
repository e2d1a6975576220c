/*
 * ec_nb.c - protected naive Bayes (kind 1): open and infer.
 *
 * ec_nb_open checks every rule of firmware_sim/_validation.py
 * check_protected_nb (docs/container_format.md, "Consistency rules of
 * protected_nb" 1-4); rule 5 (metadata types) is host-side only.
 * ec_nb_infer is firmware_sim/_kernels _decode_accumulate for one frame.
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "edgecode_rt.h"

ec_status ec_nb_open(const ec_image *img, ec_nb_model *m)
{
    ec_array a;   /* one at a time: a small stack */
    const uint16_t *r;
    const int32_t *wv;
    uint32_t n, j;
    uint64_t abs_sum = 0u, rep_sum = 0u, total_bits;
    int64_t b;
    int32_t s;

    if (img == NULL || m == NULL || img->base == NULL) return EC_ERR_ARG;
    if (img->kind != EC_KIND_PROTECTED_NB) return EC_ERR_KIND;
    /* 1. schema */
    if (ec_image_require(img, "repetitions", EC_U16, 1u, &a) != EC_OK) return EC_ERR_SCHEMA;
    n = a.shape[0];
    r = (const uint16_t *)(const void *)a.data;
    if (n < 1u) return EC_ERR_SCHEMA;
    if (ec_image_require(img, "weights", EC_I32, 1u, &a) != EC_OK || a.shape[0] != n)
        return EC_ERR_SCHEMA;
    wv = (const int32_t *)(const void *)a.data;
    if (ec_image_require(img, "bias", EC_I32, 1u, &a) != EC_OK || a.shape[0] != 1u)
        return EC_ERR_SCHEMA;
    b = *(const int32_t *)(const void *)a.data;
    if (ec_image_require(img, "scale_shift", EC_I32, 1u, &a) != EC_OK || a.shape[0] != 1u)
        return EC_ERR_SCHEMA;
    s = *(const int32_t *)(const void *)a.data;
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
    return EC_OK;
}

ec_status ec_nb_infer(const ec_nb_model *m, const int16_t *frame, int32_t *label,
                      int64_t *decision)
{
    uint32_t j, k, pos = 0u;
    int32_t acc;
    if (m == NULL || frame == NULL || label == NULL || decision == NULL) return EC_ERR_ARG;
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
