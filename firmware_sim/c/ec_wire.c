/*
 * ec_wire.c - the wire protection layer of any kind with int16 features
 * (issue 27; firmware_sim/wire.py is the reference, bit for bit).
 *
 * An image holding "__wire_copies__" (uint8 (n_features, 16): the copies of
 * bit b of feature f, odd, 1..255) receives its frames as wire bits (one
 * int16 0/1 per bit): feature-major, bit 0 first within a feature, a bit's
 * copies together. ec_infer majority-decodes them (a bit is 1 when more than
 * half of its copies are) into the int16 frame of the kind, in the front of
 * the workspace, then runs the kind's infer on it; ec_quantize writes the
 * kind's frame and repeats its bits. Compiled in when EC_WITH_WIRE is 1
 * (every all-kinds build; `edgecode firmware` sets it for a protected
 * model); without it an image with the layer is refused (EC_ERR_SCHEMA).
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "ec_kind.h"

#if EC_WITH_WIRE

/* Check the layer of an opened kind (n_features int16 values per frame) and
   record it in the model: 0 or an error. */
ec_status ec_wire_open(ec_model *model, uint32_t n_features)
{
    ec_array a;
    uint32_t i, total = 0u;
    if (ec_image_require(&model->image, EC_STR("__wire_copies__"), EC_U8, 2u, &a) != EC_OK)
        return EC_ERR_SCHEMA;
    if (a.shape[0] != n_features || a.shape[1] != 16u) return EC_ERR_SCHEMA;
    for (i = 0; i < 16u * n_features; i++) {
        uint8_t c = a.data[i];
        if ((c & 1u) == 0u) return EC_ERR_RULE;     /* odd, 1..255 */
        total += c;
    }
    model->wire_copies = a.data;
    model->wire_bits = total;
    return EC_OK;
}

/* Majority-decode wire bits into n_features int16 values (one pass: a bit
   that is not 0/1 refuses the frame, EC_ERR_FRAME; 8-bit counters, since a
   bit has at most 255 copies). */
ec_status ec_wire_decode(const ec_model *model, uint32_t n_features, const int16_t *bits,
                         int16_t *frame)
{
    const EC_ROM uint8_t *c = model->wire_copies;
    uint32_t f;
    for (f = 0; f < n_features; f++) {
        uint16_t v = 0u, mask = 1u;
        uint8_t b;
        for (b = 0; b < 16u; b++, mask = (uint16_t)(mask << 1)) {
            uint8_t copies = *c++, k, ones = 0u;
            for (k = 0; k < copies; k++) {
                uint16_t x = (uint16_t)*bits++;
                if (x > 1u) return EC_ERR_FRAME;
                ones = (uint8_t)(ones + x);
            }
            if (ones > (uint8_t)(copies >> 1)) v = (uint16_t)(v | mask);
        }
        frame[f] = v >= 0x8000u ? (int16_t)((int32_t)v - 65536) : (int16_t)v;
    }
    return EC_OK;
}

/* frame[0 .. n_features) (the kind's values) -> the wire bits, in place
   (the last feature first: its bits start at or after its own value). */
void ec_wire_repeat(const ec_model *model, uint32_t n_features, int16_t *frame)
{
    const EC_ROM uint8_t *c = model->wire_copies;
    uint32_t f = n_features, pos = model->wire_bits;
    while (f-- > 0u) {
        uint16_t v = (uint16_t)frame[f];
        uint32_t b = 16u;
        while (b-- > 0u) {
            uint32_t copies = c[16u * f + b];
            int16_t bit = (int16_t)((v >> b) & 1u);
            while (copies-- > 0u) frame[--pos] = bit;
        }
    }
}

#endif /* EC_WITH_WIRE */
