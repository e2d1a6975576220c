/*
 * ec_quantize.c - raw features to the frame a model expects, bit for bit as
 * firmware_sim's device.encode(X) computes it on the host.
 *
 *   NB:   x_j in {0, 1}, each written 2 r_j + 1 times (transmit);
 *   ECOC, forest: q_f = clip(rint((x_f - in_center_f) * 2^in_shift_f), -32767,
 *         32767) in IEEE double (firmware_sim.ecoc.quantize_inputs);
 *   SSBC: q = rint(clip(float32(x) * float32(2^input_shift), -32767, 32767))
 *         in IEEE float (firmware_sim.ssbc.quantize_input).
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
#include "edgecode_rt.h"

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

enum { EC_IN_I32 = 0, EC_IN_F32 = 1, EC_IN_F64 = 2 };

/* (-1)^neg * mant * 2^exp */
typedef struct {
    uint64_t mant;
    int32_t exp;
    int neg;
} ec_exact;

/* which helpers the kinds compiled in need (no unused static functions) */
#define EC_Q_AFFINE (EC_WITH_ECOC || EC_WITH_FOREST)   /* in_center / in_shift kinds */
#define EC_Q_ROUNDING (EC_Q_AFFINE || EC_WITH_SSBC)

#if EC_Q_ROUNDING
static uint32_t bit_length64(uint64_t v)
{
    uint32_t n = 0u;
    while (v != 0u) {
        v >>= 1;
        n++;
    }
    return n;
}
#endif

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

#if EC_WITH_FLOAT || EC_Q_AFFINE
/* an IEEE binary64 pattern (in_center, a double input); 0 if NaN or
   infinite */
static int ec_from_binary64(uint64_t u, ec_exact *v)
{
    uint32_t e = (uint32_t)((u >> 52) & 0x7FFu);
    uint64_t f = u & (((uint64_t)1 << 52) - 1u);
    if (e == 0x7FFu) return 0;
    v->neg = (int)(u >> 63);
    v->mant = e == 0u ? f : (f | ((uint64_t)1 << 52));
    v->exp = e == 0u ? -1074 : (int32_t)e - 1075;
    return 1;
}
#endif

/* input i of x (of type `type`) as an exact value; 0 if not finite */
static int ec_input_value(const void *x, int type, uint32_t i, ec_exact *v)
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
        return ec_from_binary64(c.u, v);
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

#if EC_WITH_SSBC
/* round the significand to `bits` significant bits, ties to even */
static void ec_round_sig(ec_exact *v, uint32_t bits)
{
    uint32_t len = bit_length64(v->mant), sh;
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
#endif

#if EC_Q_AFFINE
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
    return hi != 0u ? 64u + bit_length64(hi) : bit_length64(lo);
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

/* a + b rounded to 53 significant bits, ties to even: the IEEE double sum of
   two values exact in double (significands below 2^53) */
static ec_exact ec_add53(ec_exact a, ec_exact b)
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
#endif

#if EC_Q_ROUNDING
/* clip(rint(v), -32767, 32767), rint half to even (mant < 2^63) */
static int16_t ec_rint_clip(ec_exact v)
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
#endif

/* ---- per kind -------------------------------------------------------------- */
#if EC_WITH_NB
static int ec_is_bit(ec_exact v, uint32_t *bit)
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

static ec_status ec_nb_quantize(const ec_nb_model *m, const void *x, int type, int16_t *frame)
{
    uint32_t j, k, pos = 0u, bit = 0u;
    ec_exact v = {0u, 0, 0};
    for (j = 0; j < m->n_features; j++) {
        if (!ec_input_value(x, type, j, &v) || !ec_is_bit(v, &bit)) return EC_ERR_INPUT;
    }
    for (j = 0; j < m->n_features; j++) {
        uint32_t copies = 2u * (uint32_t)m->repetitions[j] + 1u;
        (void)ec_input_value(x, type, j, &v);
        (void)ec_is_bit(v, &bit);
        for (k = 0; k < copies; k++) frame[pos + k] = (int16_t)bit;
        pos += copies;
    }
    return EC_OK;
}
#endif

#if EC_Q_AFFINE
/* the affine quantizer of ECOC and forest images: d features, in_center as
   float64 bit patterns (finite: the kinds' rules), in_shift */
static ec_status ec_affine_quantize(const uint64_t *center_bits, const int8_t *shift, uint32_t d,
                                    const void *x, int type, int16_t *frame)
{
    uint32_t f;
    ec_exact v = {0u, 0, 0}, c = {0u, 0, 0};
    for (f = 0; f < d; f++) {
        if (!ec_input_value(x, type, f, &v)) return EC_ERR_INPUT;
    }
    for (f = 0; f < d; f++) {
        (void)ec_input_value(x, type, f, &v);
        (void)ec_from_binary64(center_bits[f], &c);             /* finite: checked at open */
        c.neg = !c.neg;                                         /* x + (-center) */
        v = ec_add53(v, c);
        v.exp += shift[f];                                      /* * 2^in_shift */
        frame[f] = ec_rint_clip(v);
    }
    return EC_OK;
}
#endif

#if EC_WITH_SSBC
static ec_status ec_ssbc_quantize(const ec_ssbc_model *m, const void *x, int type,
                                  int16_t *frame)
{
    uint32_t i;
    ec_exact v = {0u, 0, 0};
    for (i = 0; i < m->n_features; i++) {
        if (!ec_input_value(x, type, i, &v)) return EC_ERR_INPUT;
        ec_round_sig(&v, 24u);                                  /* float32(x) */
        if (v.mant != 0u && v.exp + (int32_t)bit_length64(v.mant) > 128)
            return EC_ERR_INPUT;                                /* beyond FLT_MAX: inf */
    }
    for (i = 0; i < m->n_features; i++) {
        (void)ec_input_value(x, type, i, &v);
        ec_round_sig(&v, 24u);
        v.exp += m->input_shift;                                /* * 2^input_shift */
        frame[i] = ec_rint_clip(v);
    }
    return EC_OK;
}
#endif

/* ---- dispatch ---------------------------------------------------------------- */
uint32_t ec_input_width(const ec_model *model)
{
    if (model == NULL) return 0u;
    switch (model->kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: return model->u.nb.n_features;
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC: return model->u.ecoc.n_features;
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC: return model->u.ssbc.n_features;
#endif
#if EC_WITH_FOREST
    case EC_KIND_FOREST: return model->u.forest.n_features;
#endif
    default: return 0u;
    }
}

static ec_status ec_quantize_any(const ec_model *model, const void *x, int type, int16_t *frame)
{
    if (model == NULL || x == NULL || frame == NULL) return EC_ERR_ARG;
    switch (model->kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: return ec_nb_quantize(&model->u.nb, x, type, frame);
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC:
        return ec_affine_quantize(model->u.ecoc.in_center_bits, model->u.ecoc.in_shift,
                                  model->u.ecoc.n_features, x, type, frame);
#endif
#if EC_WITH_FOREST
    case EC_KIND_FOREST:
        return ec_affine_quantize(model->u.forest.in_center_bits, model->u.forest.in_shift,
                                  model->u.forest.n_features, x, type, frame);
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC: return ec_ssbc_quantize(&model->u.ssbc, x, type, frame);
#endif
    default: return EC_ERR_ARG;   /* not an opened model */
    }
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
