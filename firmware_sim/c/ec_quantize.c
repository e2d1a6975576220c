/*
 * ec_quantize.c - raw features to the frame a model expects, bit for bit as
 * firmware_sim's device.encode(X) computes it on the host: the entry points
 * ec_quantize / ec_quantize_float / ec_quantize_double (dispatched to the
 * quantize operation of the model's kind, ec_kind.h) and the exact
 * arithmetic the kinds' quantizers share:
 *
 *   NB:   x_j in {0, 1}, each written 2 r_j + 1 times (transmit; ec_nb.c);
 *   ECOC: q_f = clip(rint((x_f - in_center_f) * 2^in_shift_f), -32767, 32767)
 *         in IEEE double (firmware_sim.ecoc.quantize_inputs; ec_ecoc.c);
 *   SSBC: q = rint(clip(float32(x) * float32(2^input_shift), -32767, 32767))
 *         in IEEE float (firmware_sim.ssbc.quantize_input; ec_ssbc.c).
 *
 * No floating-point arithmetic: every input is first turned into an exact
 * value (-1)^neg * mant * 2^exp (an int32 directly; a float or double from its
 * IEEE bit pattern, with EC_WITH_FLOAT), then the IEEE operations the host
 * performs are reproduced exactly in 64-bit integers: the rounding of
 * x - center to 53 bits (the double subtraction), of x to 24 bits (the
 * conversion to float32), the exact scaling by a power of two, and rint
 * (round half to even). Overflow and underflow of the host's intermediate
 * results cannot change the int16 outcome (an overflow clips to +-32767, a
 * subnormal rounds to 0), except the float32 conversion of a double beyond
 * FLT_MAX, which the host refuses (EC_ERR_INPUT), as it refuses NaN and
 * infinities.
 *
 * <stdint.h>/<stddef.h> only (and <float.h> with EC_WITH_FLOAT, to check the
 * formats); no allocation, no recursion, no floating-point arithmetic.
 */
#include "ec_kind.h"

#if EC_WITH_FLOAT
#include <float.h>
#if FLT_RADIX != 2 || FLT_MANT_DIG != 24 || FLT_MAX_EXP != 128
#error "EC_WITH_FLOAT needs float to be IEEE 754 binary32"
#endif
#if !((DBL_MANT_DIG == 53 && DBL_MAX_EXP == 1024) || (DBL_MANT_DIG == 24 && DBL_MAX_EXP == 128))
#error "EC_WITH_FLOAT needs double to be IEEE 754 binary64 (or binary32, as avr-gcc's default)"
#endif
typedef char ec_float_is_32_bits[sizeof(float) == 4 ? 1 : -1];
typedef char ec_double_is_ieee[sizeof(double) == 8 || sizeof(double) == 4 ? 1 : -1];
#endif

#define EC_Q_LIMIT 32767u

uint32_t ec_q_bit_length(uint64_t v)
{
    uint32_t n = 0u;
    while (v != 0u) {
        v >>= 1;
        n++;
    }
    return n;
}

#if EC_WITH_FLOAT
/* an IEEE binary32 pattern; 0 if NaN or infinite */
static int ec_from_binary32(uint32_t u, ec_exact *v)
{
    uint32_t e = (u >> 23) & 0xFFu, f = u & 0x7FFFFFu;
    if (e == 0xFFu) return 0;
    v->neg = (int)(u >> 31);
    v->mant = e == 0u ? f : (f | 0x800000u);
    v->exp = e == 0u ? -149 : (int32_t)e - 150;
    return 1;
}
#endif

int ec_q_from_binary64(uint64_t u, ec_exact *v)
{
    uint32_t e = (uint32_t)((u >> 52) & 0x7FFu);
    uint64_t f = u & (((uint64_t)1 << 52) - 1u);
    if (e == 0x7FFu) return 0;
    v->neg = (int)(u >> 63);
    v->mant = e == 0u ? f : (f | ((uint64_t)1 << 52));
    v->exp = e == 0u ? -1074 : (int32_t)e - 1075;
    return 1;
}

int ec_q_input(const void *x, int type, uint32_t i, ec_exact *v)
{
    if (type == EC_IN_I32) {
        int32_t a = ((const int32_t *)x)[i];
        v->neg = a < 0;
        v->mant = a < 0 ? (uint64_t)(-(int64_t)a) : (uint64_t)a;
        v->exp = 0;
        return 1;
    }
#if EC_WITH_FLOAT
    if (type == EC_IN_F32) {
        union { float f; uint32_t u; } c;
        c.f = ((const float *)x)[i];
        return ec_from_binary32(c.u, v);
    }
    if (sizeof(double) == 8) {
        union { double d; uint64_t u; } c;
        c.d = ((const double *)x)[i];
        return ec_q_from_binary64(c.u, v);
    } else {
        union { double d; uint32_t u; } c;
        c.d = ((const double *)x)[i];
        return ec_from_binary32(c.u, v);
    }
#else
    (void)x;
    (void)i;
    (void)v;
    return 0;
#endif
}

void ec_q_round_sig(ec_exact *v, uint32_t bits)
{
    uint32_t len = ec_q_bit_length(v->mant), sh;
    uint64_t q, rem, half;
    if (len <= bits) return;
    sh = len - bits;                              /* 1 .. 63 */
    q = v->mant >> sh;
    rem = v->mant & (((uint64_t)1 << sh) - 1u);
    half = (uint64_t)1 << (sh - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    if ((q >> bits) != 0u) {                      /* carried into 2^bits */
        q >>= 1;
        sh++;
    }
    v->mant = q;
    v->exp += (int32_t)sh;
}

/* significand in [2^52, 2^53) (mant != 0, mant < 2^53) */
static void ec_normalize53(ec_exact *v)
{
    while (v->mant < ((uint64_t)1 << 52)) {
        v->mant <<= 1;
        v->exp -= 1;
    }
}

/* 128-bit helpers on (hi, lo) */
static uint32_t bit_length128(uint64_t hi, uint64_t lo)
{
    return hi != 0u ? 64u + ec_q_bit_length(hi) : ec_q_bit_length(lo);
}

static uint64_t shr128_lo(uint64_t hi, uint64_t lo, uint32_t s)
{
    if (s == 0u) return lo;
    if (s < 64u) return (lo >> s) | (hi << (64u - s));
    if (s == 64u) return hi;
    return hi >> (s - 64u);
}

static int bit128(uint64_t hi, uint64_t lo, uint32_t k)
{
    return (int)(k < 64u ? (lo >> k) & 1u : (hi >> (k - 64u)) & 1u);
}

/* any of bits 0 .. k-1 set */
static int below128(uint64_t hi, uint64_t lo, uint32_t k)
{
    if (k == 0u) return 0;
    if (k < 64u) return (lo & (((uint64_t)1 << k) - 1u)) != 0u;
    if (lo != 0u) return 1;
    if (k == 64u) return 0;
    return (hi & (((uint64_t)1 << (k - 64u)) - 1u)) != 0u;
}

ec_exact ec_q_add53(ec_exact a, ec_exact b)
{
    ec_exact out;
    uint64_t hi, lo;
    uint32_t d, len, sh;
    if (a.mant == 0u) return b;
    if (b.mant == 0u) return a;
    ec_normalize53(&a);
    ec_normalize53(&b);
    if (a.exp < b.exp) {
        ec_exact t = a;
        a = b;
        b = t;
    }
    d = (uint32_t)(a.exp - b.exp);
    /* b below a quarter of a's last place: a is the nearest double */
    if (d > 64u) return a;
    /* exact N = A 2^d +- B, in units of 2^b.exp */
    if (d == 0u) { hi = 0u; lo = a.mant; }
    else if (d < 64u) { lo = a.mant << d; hi = a.mant >> (64u - d); }
    else { hi = a.mant; lo = 0u; }
    out.neg = a.neg;
    if (a.neg == b.neg) {
        uint64_t s = lo + b.mant;
        hi += s < lo ? 1u : 0u;
        lo = s;
    } else if (hi == 0u && lo < b.mant) {       /* only when d == 0 */
        lo = b.mant - lo;
        out.neg = b.neg;
    } else {
        hi -= lo < b.mant ? 1u : 0u;
        lo -= b.mant;
    }
    out.exp = b.exp;
    len = bit_length128(hi, lo);
    if (len == 0u) {
        out.mant = 0u;
        out.neg = 0;
        return out;
    }
    if (len <= 53u) {
        out.mant = lo;
        return out;
    }
    sh = len - 53u;                                /* 1 .. 65 */
    out.mant = shr128_lo(hi, lo, sh);
    if (bit128(hi, lo, sh - 1u) && (below128(hi, lo, sh - 1u) || (out.mant & 1u)))
        out.mant++;
    if (out.mant == ((uint64_t)1 << 53)) {
        out.mant >>= 1;
        sh++;
    }
    out.exp += (int32_t)sh;
    return out;
}

int16_t ec_q_rint_clip(ec_exact v)
{
    uint64_t w;
    if (v.mant == 0u) return 0;
    if (v.exp >= 0) {
        if (v.exp > 15 || v.mant > (EC_Q_LIMIT >> v.exp)) w = EC_Q_LIMIT;
        else w = v.mant << v.exp;
    } else if (v.exp <= -64) {
        w = 0u;                                    /* below 1/2 */
    } else {
        uint32_t k = (uint32_t)(-v.exp);
        uint64_t rem = v.mant & (((uint64_t)1 << k) - 1u), half = (uint64_t)1 << (k - 1u);
        w = v.mant >> k;
        if (rem > half || (rem == half && (w & 1u))) w++;
        if (w > EC_Q_LIMIT) w = EC_Q_LIMIT;
    }
    return v.neg ? (int16_t)(-(int32_t)w) : (int16_t)w;
}

/* ---- entry points: the quantizer of the model's kind ---------------------- */
/* (not in an inline build, EC_INLINE_MODEL: its generated ec_inline.c defines
   them for its one model; firmware_sim/c_inline.py) */
#if !(defined(EC_INLINE_MODEL) && EC_INLINE_MODEL)
/* the kinds compiled in (ec_kinds.h): operations table -> quantizer */
#define EC_KIND_ENTRY(ops, quantize) \
    extern const EC_ROM ec_kind_ops ops; \
    ec_quantize_fn quantize;
#include "ec_kinds.h"
#undef EC_KIND_ENTRY

typedef struct {
    const EC_ROM ec_kind_ops *ops;
    ec_quantize_fn *quantize;
} ec_quantizer;

#define EC_KIND_ENTRY(ops, quantize) {&ops, quantize},
static const EC_ROM ec_quantizer ec_quantizers[] = {
#include "ec_kinds.h"
    {NULL, NULL}
};
#undef EC_KIND_ENTRY

static ec_status ec_quantize_any(const ec_model *model, const void *x, int type, int16_t *frame)
{
    uint32_t i;
    if (model == NULL || model->kind == 0u || x == NULL || frame == NULL)
        return EC_ERR_ARG;   /* not an opened model */
    for (i = 0; ec_quantizers[i].ops != NULL; i++) {
        if (ec_quantizers[i].ops == model->ops)
        {
            ec_status s = ec_quantizers[i].quantize(model, x, type, frame);
#if EC_WITH_WIRE
            if (s == EC_OK && model->wire_bits != 0u)   /* the wire layer: repeat the bits */
                ec_wire_repeat(model, model->ops->frame_width(model), frame);
#endif
            return s;
        }
    }
    return EC_ERR_ARG;
}

ec_status ec_quantize(const ec_model *model, const int32_t *x, int16_t *frame)
{
    return ec_quantize_any(model, x, EC_IN_I32, frame);
}

#if EC_WITH_FLOAT
ec_status ec_quantize_float(const ec_model *model, const float *x, int16_t *frame)
{
    return ec_quantize_any(model, x, EC_IN_F32, frame);
}

ec_status ec_quantize_double(const ec_model *model, const double *x, int16_t *frame)
{
    return ec_quantize_any(model, x, EC_IN_F64, frame);
}
#endif
#endif /* !EC_INLINE_MODEL */
