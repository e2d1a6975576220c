/*
 * ec_ssbc.c - streaming spectral binary codes (kind 3): the operations table
 * ec_ssbc_ops.
 *
 * ssbc_open checks every rule of firmware_sim/_validation.py check_ssbc
 * (docs/container_format.md, "Consistency rules of ssbc" 1-10); rule 11
 * (metadata types) is host-side only. Rule 5 (exp_mult is a nearest integer
 * to the IEEE double 2^56 log2(e) / (sigma 4^input_shift)) is evaluated with
 * integer arithmetic that reproduces the two IEEE-754 double operations
 * Python performs (a multiplication by a power of two, then a division, both
 * rounded to nearest, ties to even, with subnormals and overflow), so the
 * opener needs no floating point either.
 *
 * ssbc_infer is firmware_sim/_kernels/ssbc.py (_ssbc_bits, _q15_exp_neg,
 * _hamming_knn) for one frame, with the same integer results, computed in
 * 16- and 32-bit operations where that is exact (ssbc_affinity; 64-bit ones
 * only for exp_mult >= 2^32; docs/firmware.md, "Narrow arithmetic");
 * ec_ssbc_quantize is device.encode (firmware_sim.ssbc.quantize_input).
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "ec_kind.h"

/* the fields of an opened model (model->state) */
typedef struct {
    const EC_ROM int16_t *anchors;        /* (m, d)                            */
    const EC_ROM uint16_t *exp_lut;       /* (257,)                            */
    const EC_ROM int16_t *projection;     /* (m, k)                            */
    const EC_ROM int64_t *thresholds;     /* (k,)                              */
    const EC_ROM uint8_t *table_codes;    /* (T, ceil(k/8)), LSB first         */
    const EC_ROM int32_t *table_labels;   /* (T,)                              */
    int64_t exp_mult, dist_clamp;
    uint32_t zero_hi, zero_lo;            /* ceil(2^60 / exp_mult) (< 2^61): affinity
                                             0 from this squared distance on */
    uint32_t n_anchors, n_features, n_bits;   /* m, d, k                       */
    int32_t input_shift, projection_shift;
    uint32_t table_size;                  /* T                                 */
    int32_t n_classes, knn_k;
    int has_table;
    uint8_t mult32;                       /* exp_mult < 2^32: 32 x 32 -> 64 products */
} ec_ssbc_state;
EC_STATE_FITS(ec_ssbc_state);

#define SSBC_EXP_SHIFT 40
#define SSBC_T_MAX 17
#define SSBC_LUT_LEN 257u

/* round(2^15 * 2^(-i/256)), i = 0..256 (firmware_sim._validation.ssbc_exp_lut) */
static const EC_ROM uint16_t ssbc_lut[SSBC_LUT_LEN] = {
    32768, 32679, 32591, 32503, 32415, 32327, 32240, 32153, 32066, 31979, 31893, 31806,
    31720, 31635, 31549, 31464, 31379, 31294, 31209, 31125, 31041, 30957, 30873, 30790,
    30706, 30623, 30541, 30458, 30376, 30293, 30212, 30130, 30048, 29967, 29886, 29805,
    29725, 29644, 29564, 29484, 29405, 29325, 29246, 29167, 29088, 29009, 28931, 28852,
    28774, 28697, 28619, 28542, 28464, 28388, 28311, 28234, 28158, 28082, 28006, 27930,
    27855, 27779, 27704, 27629, 27554, 27480, 27406, 27332, 27258, 27184, 27110, 27037,
    26964, 26891, 26818, 26746, 26674, 26601, 26530, 26458, 26386, 26315, 26244, 26173,
    26102, 26031, 25961, 25891, 25821, 25751, 25681, 25612, 25543, 25474, 25405, 25336,
    25268, 25199, 25131, 25063, 24995, 24928, 24860, 24793, 24726, 24659, 24593, 24526,
    24460, 24394, 24328, 24262, 24196, 24131, 24066, 24001, 23936, 23871, 23806, 23742,
    23678, 23614, 23550, 23486, 23423, 23359, 23296, 23233, 23170, 23108, 23045, 22983,
    22921, 22859, 22797, 22735, 22674, 22613, 22552, 22491, 22430, 22369, 22309, 22248,
    22188, 22128, 22068, 22009, 21949, 21890, 21831, 21772, 21713, 21654, 21595, 21537,
    21479, 21421, 21363, 21305, 21247, 21190, 21133, 21076, 21019, 20962, 20905, 20849,
    20792, 20736, 20680, 20624, 20568, 20513, 20457, 20402, 20347, 20292, 20237, 20182,
    20127, 20073, 20019, 19965, 19911, 19857, 19803, 19750, 19696, 19643, 19590, 19537,
    19484, 19431, 19379, 19326, 19274, 19222, 19170, 19118, 19066, 19015, 18963, 18912,
    18861, 18810, 18759, 18708, 18658, 18607, 18557, 18507, 18457, 18407, 18357, 18308,
    18258, 18209, 18160, 18110, 18061, 18013, 17964, 17915, 17867, 17819, 17770, 17722,
    17674, 17627, 17579, 17531, 17484, 17437, 17390, 17343, 17296, 17249, 17202, 17156,
    17109, 17063, 17017, 16971, 16925, 16879, 16834, 16788, 16743, 16697, 16652, 16607,
    16562, 16518, 16473, 16428, 16384
};

/* a shape-(1,) scalar */
static ec_status ssbc_scalar(const ec_image *img, const EC_ROM char *name, uint8_t dtype,
                             ec_array *a)
{
    if (ec_image_require(img, name, dtype, 1u, a) != EC_OK || a->shape[0] != 1u)
        return EC_ERR_SCHEMA;
    return EC_OK;
}

/* ---- rule 5 in integers ------------------------------------------------------
 * Python: sigma_q = sigma * 4.0**input_shift
 *         exact = 2.0**56 * math.log2(math.e) / sigma_q   (inf unless sigma_q
 *                 is finite and > 0)
 *         ok iff exact is finite and |exp_mult - exact| <= 1/2 (exactly).
 * Doubles are handled as (M, E) with value M * 2^E, M < 2^53. */

/* math.log2(math.e) = 0x3FF71547652B82FE = 0x171547652B82FE * 2^-52 */
#define SSBC_LOG2E_MANT ((uint64_t)0x171547652B82FEu)
#define SSBC_LOG2E_EXP (-52)

/* M in [2^52, 2^53) by shifting left (M > 0) */
static void ssbc_normalize(uint64_t *M, int32_t *E)
{
    while (*M < ((uint64_t)1 << 52)) {
        *M <<= 1;
        *E -= 1;
    }
}

/* M >> sh rounded to nearest, ties to even (sh >= 1) */
static uint64_t ssbc_shift_round(uint64_t M, int32_t sh)
{
    uint64_t q, rem, half;
    if (sh >= 64) return 0u;   /* M < 2^53 <= 2^63: below half of one unit */
    q = M >> sh;
    rem = M & (((uint64_t)1 << sh) - 1u);
    half = (uint64_t)1 << (sh - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return q;
}

static int ssbc_exp_mult_ok(uint64_t sigma_bits, int32_t input_shift, int64_t mult)
{
    uint64_t M, q = 0u, r, keep, dropped, half, two_mult;
    int32_t E, Er, w, i;
    uint32_t bexp = (uint32_t)((sigma_bits >> 52) & 0x7FFu);
    uint64_t frac = sigma_bits & (((uint64_t)1 << 52) - 1u);
    int sticky;

    if ((sigma_bits >> 63) != 0u || bexp == 0x7FFu || sigma_bits == 0u) return 0;
    if (mult < 1 || mult > (int64_t)(((uint64_t)1 << 62) - 1u)) return 0;
    /* sigma = M * 2^E */
    if (bexp == 0u) { M = frac; E = -1074; }
    else { M = frac | ((uint64_t)1 << 52); E = (int32_t)bexp - 1075; }
    ssbc_normalize(&M, &E);
    /* sigma_q = sigma * 2^(2 input_shift): exact unless it over- or underflows */
    E += 2 * input_shift;
    if (E + 52 > 1023) return 0;                 /* inf */
    if (E < -1074) {                             /* subnormal: round to 2^-1074 units */
        M = ssbc_shift_round(M, -1074 - E);
        if (M == 0u) return 0;                   /* sigma_q == 0 */
        E = -1074;
        ssbc_normalize(&M, &E);                  /* same value, for the division */
    }
    /* Q = (LM * 2^(LE + 56)) / (M * 2^E): q = floor(LM * 2^55 / M), remainder r */
    q = SSBC_LOG2E_MANT / M;                     /* 0 or 1: LM / M in (1/2, 2) */
    r = SSBC_LOG2E_MANT % M;
    for (i = 0; i < 55; i++) {
        r <<= 1;                                 /* r < M < 2^53 */
        q <<= 1;
        if (r >= M) { r -= M; q |= 1u; }
    }
    /* Q = (q + r / M) * 2^(LE + 56 - E - 55), q in [2^54, 2^56) */
    Er = SSBC_LOG2E_EXP + 56 - E - 55;
    w = q >= ((uint64_t)1 << 55) ? 3 : 2;        /* bits dropped to keep 53 */
    keep = q >> w;
    dropped = q & (((uint64_t)1 << w) - 1u);
    Er += w;
    half = (uint64_t)1 << (w - 1);
    sticky = (dropped & (half - 1u)) != 0u || r != 0u;
    if ((dropped & half) && (sticky || (keep & 1u))) keep++;
    if (keep == ((uint64_t)1 << 53)) { keep >>= 1; Er += 1; }
    if (Er + 52 > 1023) return 0;                /* exact = inf */
    /* (Er + 52 >= -968 here: Q is never subnormal) */
    /* |mult - keep 2^Er| <= 1/2, i.e. |2 mult - keep 2^(Er + 1)| <= 1 */
    two_mult = 2u * (uint64_t)mult;              /* mult < 2^63 */
    if (Er >= 0) {
        if (Er + 52 >= 63) return 0;             /* Q >= 2^63 > mult + 1/2 */
        return (uint64_t)mult == (keep << Er);   /* Q is an integer */
    } else {
        int32_t s2 = -Er - 1;                    /* 2Q = keep / 2^s2 */
        uint64_t F, rest;
        if (s2 == 0) { F = keep; rest = 0u; }
        else if (s2 >= 64) { F = 0u; rest = keep; }
        else { F = keep >> s2; rest = keep & (((uint64_t)1 << s2) - 1u); }
        if (rest == 0u)                          /* 2Q = F: |2 mult - F| <= 1 */
            return two_mult + 1u >= F && two_mult <= F + 1u;
        return two_mult >= F && two_mult <= F + 1u;   /* F < 2Q < F + 1 */
    }
}

static ec_status ssbc_open(const ec_image *img, ec_model *model, uint32_t *n_classes)
{
    ec_ssbc_state *m = EC_STATE(ec_ssbc_state, model);
    ec_array a;   /* one at a time: a small stack */
    const EC_ROM int16_t *pv;
    uint32_t mm, d, k, i;
    uint64_t n, sigma_bits;
    int64_t mult, clamp;
    int32_t input_shift, projection_shift;
    const EC_ROM int16_t *av;
    const EC_ROM int64_t *tv;
    const EC_ROM uint16_t *lv;
    /* 1. anchors int16 (m, d), m, d >= 1, entries in [-32767, 32767] */
    if (ec_image_require(img, EC_STR("anchors"), EC_I16, 2u, &a) != EC_OK) return EC_ERR_SCHEMA;
    mm = a.shape[0];
    d = a.shape[1];
    if (mm < 1u || d < 1u) return EC_ERR_SCHEMA;
    av = (const EC_ROM int16_t *)(const EC_ROM void *)a.data;
    n = (uint64_t)mm * d;
    for (i = 0; i < n; i++) {
        if (av[i] == -32768) return EC_ERR_RULE;
    }
    /* 2. input_shift in [-30, 30] */
    if (ssbc_scalar(img, EC_STR("input_shift"), EC_I32, &a) != EC_OK) return EC_ERR_SCHEMA;
    input_shift = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
    if (input_shift < -30 || input_shift > 30) return EC_ERR_RULE;
    /* 3. sigma finite and > 0 (bit tests: sign 0, exponent not all ones, not 0) */
    if (ssbc_scalar(img, EC_STR("sigma"), EC_F64, &a) != EC_OK) return EC_ERR_SCHEMA;
    sigma_bits = *(const EC_ROM uint64_t *)(const EC_ROM void *)a.data;
    if ((sigma_bits >> 63) != 0u || ((sigma_bits >> 52) & 0x7FFu) == 0x7FFu || sigma_bits == 0u)
        return EC_ERR_RULE;
    /* 4. exp_mult in [1, 2^62 - 1]; dist_clamp >= 0; product in [17 2^56, 2^63) */
    if (ssbc_scalar(img, EC_STR("exp_mult"), EC_I64, &a) != EC_OK) return EC_ERR_SCHEMA;
    mult = *(const EC_ROM int64_t *)(const EC_ROM void *)a.data;
    if (mult < 1 || mult > (int64_t)(((uint64_t)1 << 62) - 1u)) return EC_ERR_RULE;
    if (ssbc_scalar(img, EC_STR("dist_clamp"), EC_I64, &a) != EC_OK) return EC_ERR_SCHEMA;
    clamp = *(const EC_ROM int64_t *)(const EC_ROM void *)a.data;
    if (clamp < 0) return EC_ERR_RULE;
    if (clamp > INT64_MAX / mult) return EC_ERR_RULE;             /* product >= 2^63 */
    if (clamp * mult < ((int64_t)SSBC_T_MAX << (SSBC_EXP_SHIFT + 16))) return EC_ERR_RULE;
    /* 5. exp_mult is round(2^56 log2(e) / (sigma 4^input_shift)) in IEEE double */
    if (!ssbc_exp_mult_ok(sigma_bits, input_shift, mult)) return EC_ERR_RULE;
    /* 6. dist_clamp == ceil(17 2^56 / exp_mult) */
    {
        uint64_t num = (uint64_t)SSBC_T_MAX << (SSBC_EXP_SHIFT + 16);
        uint64_t want = (num + (uint64_t)mult - 1u) / (uint64_t)mult;
        if ((uint64_t)clamp != want) return EC_ERR_RULE;
    }
    /* 7. exp_lut is the table */
    if (ec_image_require(img, EC_STR("exp_lut"), EC_U16, 1u, &a) != EC_OK || a.shape[0] != SSBC_LUT_LEN)
        return EC_ERR_SCHEMA;
    lv = (const EC_ROM uint16_t *)(const EC_ROM void *)a.data;
    for (i = 0; i < SSBC_LUT_LEN; i++) {
        if (lv[i] != ssbc_lut[i]) return EC_ERR_RULE;
    }
    /* 8. projection int16 (m, k), k >= 1; projection_shift; |thresholds| < 2^62 */
    if (ec_image_require(img, EC_STR("projection"), EC_I16, 2u, &a) != EC_OK || a.shape[0] != mm)
        return EC_ERR_SCHEMA;
    k = a.shape[1];
    pv = (const EC_ROM int16_t *)(const EC_ROM void *)a.data;
    if (k < 1u) return EC_ERR_SCHEMA;
    if (ssbc_scalar(img, EC_STR("projection_shift"), EC_I32, &a) != EC_OK) return EC_ERR_SCHEMA;
    projection_shift = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
    if (projection_shift < -30 || projection_shift > 30) return EC_ERR_RULE;
    if (ec_image_require(img, EC_STR("thresholds"), EC_I64, 1u, &a) != EC_OK || a.shape[0] != k)
        return EC_ERR_SCHEMA;
    tv = (const EC_ROM int64_t *)(const EC_ROM void *)a.data;
    for (i = 0; i < k; i++) {
        int64_t lim = (int64_t)(((uint64_t)1 << 62) - 1u);
        if (tv[i] < -lim || tv[i] > lim) return EC_ERR_RULE;
    }
    /* 9. m 2^30 < 2^62: the int64 accumulators cannot overflow */
    if (((uint64_t)mm << 30) >= ((uint64_t)1 << 62)) return EC_ERR_RULE;

    m->n_anchors = mm;
    m->n_features = d;
    m->n_bits = k;
    m->anchors = av;
    m->input_shift = input_shift;
    m->projection_shift = projection_shift;
    m->exp_mult = mult;
    m->dist_clamp = clamp;
    m->exp_lut = lv;
    m->projection = pv;
    m->thresholds = tv;
    /* narrow arithmetic (docs/firmware.md, "Narrow arithmetic"): the affinity
       is 0 from dist * exp_mult >= 2^60 (a shift of 16 or more), at or below
       dist_clamp (rule 4: dist_clamp exp_mult >= 17 2^56); below it, a 32-bit
       exp_mult takes one 32 x 32 -> 64-bit product and 32-bit sums */
    {
        uint64_t zf = (((uint64_t)1 << 60) + (uint64_t)mult - 1u) / (uint64_t)mult;
        m->zero_hi = (uint32_t)(zf >> 32);
        m->zero_lo = (uint32_t)zf;
    }
    m->mult32 = EC_NARROW && (uint64_t)mult <= 0xFFFFFFFFu;
    m->has_table = 0;
    m->table_codes = NULL;
    m->table_labels = NULL;
    m->table_size = 0u;
    m->n_classes = 0;
    m->knn_k = 0;

    /* 10. the optional labelled table */
    if (ec_image_has(img, EC_STR("table_codes"))) {
        uint64_t nb = ((uint64_t)k + 7u) / 8u;
        uint32_t T, t, pad = k % 8u;
        int32_t nc, knn_k;
        const EC_ROM int32_t *labels;
        const EC_ROM uint8_t *codes;
        if (ec_image_require(img, EC_STR("table_codes"), EC_U8, 2u, &a) != EC_OK || a.shape[1] != nb)
            return EC_ERR_SCHEMA;
        T = a.shape[0];
        codes = a.data;
        if (T < 1u) return EC_ERR_SCHEMA;
        if (pad) {
            for (t = 0; t < T; t++) {
                if ((codes[(uint64_t)t * nb + nb - 1u] >> pad) != 0u) return EC_ERR_RULE;
            }
        }
        if (ec_image_require(img, EC_STR("table_labels"), EC_I32, 1u, &a) != EC_OK || a.shape[0] != T)
            return EC_ERR_SCHEMA;
        labels = (const EC_ROM int32_t *)(const EC_ROM void *)a.data;
        if (ssbc_scalar(img, EC_STR("n_classes"), EC_I32, &a) != EC_OK) return EC_ERR_SCHEMA;
        nc = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
        if (nc < 1 || (int64_t)nc > (int64_t)T) return EC_ERR_RULE;
        for (t = 0; t < T; t++) {
            if (labels[t] < 0 || labels[t] >= nc) return EC_ERR_RULE;
        }
        if (ssbc_scalar(img, EC_STR("knn_k"), EC_I32, &a) != EC_OK) return EC_ERR_SCHEMA;
        knn_k = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
        if (knn_k < 1 || (int64_t)knn_k > (int64_t)T) return EC_ERR_RULE;
        m->has_table = 1;
        m->table_codes = codes;
        m->table_labels = labels;
        m->table_size = T;
        m->n_classes = nc;
        m->knn_k = knn_k;
    } else {
        if (ec_image_has(img, EC_STR("table_labels")) || ec_image_has(img, EC_STR("n_classes")) ||
            ec_image_has(img, EC_STR("knn_k")))
            return EC_ERR_SCHEMA;
    }
    *n_classes = m->has_table ? (uint32_t)m->n_classes : 0u;
    return EC_OK;
}

/* ---- workspace ----------------------------------------------------------------
 * int64 acc[k] (reused for the packed code, ceil(k/8) <= 8k bytes, once the bits
 * are out), then with a table uint32 best_d[knn_k], int32 best_label[knn_k] and
 * uint32 votes[n_classes], each rounded up to 8 bytes. */
static uint64_t ssbc_round8(uint64_t x)
{
    return (x + 7u) & ~(uint64_t)7u;
}

static uint64_t ssbc_workspace64(const ec_ssbc_state *m)
{
    uint64_t need = 8u * (uint64_t)m->n_bits;
    if (m->has_table) {
        need += 2u * ssbc_round8(4u * (uint64_t)(uint32_t)m->knn_k);
        need += ssbc_round8(4u * (uint64_t)(uint32_t)m->n_classes);
    }
    return need;
}

static uint32_t ssbc_workspace_bytes(const ec_model *model)
{
    uint64_t need = ssbc_workspace64(EC_CSTATE(ec_ssbc_state, model));
    /* only an image near 4 GiB could need more: such a model cannot run */
    return need > 0xFFFFFFF8u ? 0xFFFFFFF8u : (uint32_t)need;
}

/* set bits of a byte, in 8-bit operations (one register on AVR) */
static uint8_t ssbc_popcount8(uint8_t x)
{
    x = (uint8_t)(x - ((x >> 1) & 0x55u));
    x = (uint8_t)((x & 0x33u) + ((x >> 2) & 0x33u));
    return (uint8_t)((x + (x >> 4)) & 0x0Fu);
}

/* The upper 32 bits of the 64-bit product a b, from four 16 x 16 -> 32-bit
 * products (8-bit cores have no 32 x 32 multiply; their 64-bit one is slow). */
static uint32_t ssbc_mulhi32(uint32_t a, uint32_t b)
{
    uint16_t a0 = (uint16_t)a, a1 = (uint16_t)(a >> 16), b0 = (uint16_t)b, b1 = (uint16_t)(b >> 16);
    uint32_t p00 = (uint32_t)a0 * b0, p01 = (uint32_t)a0 * b1;
    uint32_t p10 = (uint32_t)a1 * b0, p11 = (uint32_t)a1 * b1;
    uint32_t mid = (p00 >> 16) + (p01 & 0xFFFFu) + (p10 & 0xFFFFu);   /* < 3 2^16 */
    return p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16);
}

/* The Q15 affinity (0 .. 32768) of anchor a, _q15_exp_neg of the squared
 * distance, computed without 64-bit operations when exp_mult < 2^32.
 *
 * The squared distance sum_i (frame[i] - a[i])^2 is exact in two 32-bit
 * words: each square is a product of 16-bit magnitudes (|frame[i] - a[i]| <=
 * 65535, the square < 2^32) added to the low word, whose carries the high
 * word counts. The kernel clamps dist at dist_clamp, takes t = (dist
 * exp_mult) >> 40 and returns w(t mod 2^16) >> min(t >> 16, 16), which is 0
 * once t >= 2^20 (w <= 32768): exactly when dist >= zero (= ceil(2^60 /
 * exp_mult) <= dist_clamp, rule 4). Below it t < 2^20, and with dist = hi
 * 2^32 + lo, t = (hi exp_mult + mulhi32(lo, exp_mult)) >> 8 (the low word of
 * lo exp_mult is below 2^32, which does not reach bit 40). */
static uint16_t ssbc_affinity(const ec_ssbc_state *m, const int16_t *frame,
                              const EC_ROM int16_t *a)
{
    const EC_ROM uint16_t *lut = m->exp_lut;
    const int16_t *end = frame + m->n_features;
    uint32_t lo = 0u, hi = 0u, t, sh, f, idx, r, w;
    while (frame != end) {
        int16_t x = *frame++, y = *a++;
        /* |x - y| in 16 bits: the larger minus the smaller modulo 2^16 is exact */
        uint16_t e = x >= y ? (uint16_t)((uint16_t)x - (uint16_t)y)
                            : (uint16_t)((uint16_t)y - (uint16_t)x);
        uint32_t sq = (uint32_t)e * e;
        lo += sq;
        if (lo < sq)
            hi++;
    }
    if (hi > m->zero_hi || (hi == m->zero_hi && lo >= m->zero_lo))
        return 0u;
    if (m->mult32) {
        uint32_t mu = (uint32_t)m->exp_mult;
        t = (hi * mu + ssbc_mulhi32(lo, mu)) >> 8;
    } else {
        uint64_t dist = ((uint64_t)hi << 32) | lo;
        t = (uint32_t)((dist * (uint64_t)m->exp_mult) >> SSBC_EXP_SHIFT);
    }
    sh = t >> 16;
    f = t & 0xFFFFu;
    idx = f >> 8;
    r = f & 0xFFu;
    w = ((uint32_t)lut[idx] * (256u - r) + (uint32_t)lut[idx + 1] * r) >> 8;
    return (uint16_t)(w >> sh);
}

/* Hamming k-NN vote (_hamming_knn): the knn_k nearest rows (distance, then
   lower row index) vote; most votes wins, ties to the lower class index. Its
   own function (not inlined): the scan keeps its variables in registers. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int32_t ssbc_knn(const ec_ssbc_state *m, int64_t *decision, void *workspace)
{
    uint32_t i, k = m->n_bits;
    uint32_t nb = (uint32_t)(((uint64_t)k + 7u) / 8u);
    uint32_t K = (uint32_t)m->knn_k, T = m->table_size;
    uint32_t cnt = 0u, t, q, c, win, worst = 0u;
    const EC_ROM uint8_t *row = m->table_codes;
    uint8_t *code = (uint8_t *)workspace;   /* acc is no longer needed */
    uint8_t *base = (uint8_t *)workspace + 8u * (uint64_t)k;
    uint32_t *best_d = (uint32_t *)(void *)base;
    int32_t *best_lab = (int32_t *)(void *)(base + ssbc_round8(4u * (uint64_t)K));
    uint32_t *votes = (uint32_t *)(void *)(base + 2u * ssbc_round8(4u * (uint64_t)K));

    for (i = 0; i < nb; i++) {
        uint32_t byte = 0u, bit;
        for (bit = 0; bit < 8u && 8u * i + bit < k; bit++)
            byte |= (uint32_t)decision[8u * i + bit] << bit;
        code[i] = (uint8_t)byte;
    }
    for (t = 0; t < T; t++, row += nb) {
        const EC_ROM uint8_t *r = row;
        const uint8_t *cd = code, *cend = code + nb;
        uint32_t dd = 0u, pos;
        while (cd != cend) dd += ssbc_popcount8((uint8_t)(*cd++ ^ *r++));
        /* insert (dd, t) into the sorted best list; later rows lose ties */
        if (cnt < K) {
            pos = cnt;
            cnt++;
        } else if (dd < worst) {
            pos = K - 1u;
        } else {
            continue;
        }
        while (pos > 0u && best_d[pos - 1u] > dd) {
            best_d[pos] = best_d[pos - 1u];
            best_lab[pos] = best_lab[pos - 1u];
            pos--;
        }
        best_d[pos] = dd;
        best_lab[pos] = m->table_labels[t];
        worst = best_d[cnt - 1u];
    }
    /* votes of the classes that got any (only those entries are zeroed);
       the winner is the lowest class index among the most voted, which is
       what firmware_sim's scan over every class (strictly greater wins)
       returns, since the most voted class has at least one vote */
    for (q = 0; q < cnt; q++) votes[(uint32_t)best_lab[q]] = 0u;
    for (q = 0; q < cnt; q++) votes[(uint32_t)best_lab[q]]++;
    win = (uint32_t)best_lab[0];
    for (q = 1; q < cnt; q++) {
        c = (uint32_t)best_lab[q];
        if (votes[c] > votes[win] || (votes[c] == votes[win] && c < win)) win = c;
    }
    decision[k] = (int64_t)best_d[0];
    return (int32_t)win;
}

static ec_status ssbc_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                           int64_t *decision, void *workspace, uint32_t workspace_bytes)
{
    const ec_ssbc_state *m = EC_CSTATE(ec_ssbc_state, model);
    uint32_t j, b, k, d;
    if (workspace == NULL) return EC_ERR_ARG;
    if (((uintptr_t)workspace % EC_ALIGN_INT64) != 0u) return EC_ERR_ALIGN;
    if ((uint64_t)workspace_bytes < ssbc_workspace64(m)) return EC_ERR_WORKSPACE;
    k = m->n_bits;
    d = m->n_features;

    /* affinity -> projection -> bits (_ssbc_bits) */
    /* acc[b] = sum_j w_j P[j, b]: each term a 16 x 16 -> 32-bit product (|w p|
       <= 2^30), the sum (|sum| < m 2^30) in two 32-bit words per bit, low
       then high, the low word's carries and the terms' signs going into the
       high word. Anchor 0 assigns them (no zeroing loop that a compiler could
       turn into a call to memset). */
    {
        uint32_t *acc32 = (uint32_t *)workspace;
        const EC_ROM int16_t *anchor = m->anchors, *p = m->projection;
        for (j = 0; j < m->n_anchors; j++, anchor += d, p += k) {
            uint16_t w = ssbc_affinity(m, frame, anchor);
            uint32_t *ac = acc32;
            if (j == 0) {
                for (b = 0; b < k; b++, ac += 2) {
                    int32_t v = (int32_t)w * p[b];
                    ac[0] = (uint32_t)v;
                    ac[1] = v < 0 ? 0xFFFFFFFFu : 0u;
                }
            } else if (w != 0u) {
                for (b = 0; b < k; b++, ac += 2) {
                    int32_t v = (int32_t)w * p[b];
                    uint32_t lo = ac[0] + (uint32_t)v;
                    ac[1] += (v < 0 ? 0xFFFFFFFFu : 0u) + (lo < (uint32_t)v);
                    ac[0] = lo;
                }
            }
        }
        for (b = 0; b < k; b++) {
            int64_t sum = (int64_t)(((uint64_t)acc32[2u * b + 1u] << 32) | acc32[2u * b]);
            decision[b] = sum > m->thresholds[b] ? 1 : 0;
        }
    }
    if (!m->has_table) {
        *label = -1;
        return EC_OK;
    }

    *label = ssbc_knn(m, decision, workspace);
    return EC_OK;
}

ec_quantize_fn ec_ssbc_quantize;

ec_status ec_ssbc_quantize(const ec_model *model, const void *x, int type, int16_t *frame)
{
    const ec_ssbc_state *m = EC_CSTATE(ec_ssbc_state, model);
    uint32_t i;
    ec_exact v = {0u, 0, 0};
    for (i = 0; i < m->n_features; i++) {
        if (!ec_q_input(x, type, i, &v)) return EC_ERR_INPUT;
        ec_q_round_sig(&v, 24u);                                /* float32(x) */
        if (v.mant != 0u && v.exp + (int32_t)ec_q_bit_length(v.mant) > 128)
            return EC_ERR_INPUT;                                /* beyond FLT_MAX: inf */
    }
    for (i = 0; i < m->n_features; i++) {
        (void)ec_q_input(x, type, i, &v);
        ec_q_round_sig(&v, 24u);
        v.exp += m->input_shift;                                /* * 2^input_shift */
        frame[i] = ec_q_rint_clip(v);
    }
    return EC_OK;
}

static uint32_t ssbc_features(const ec_model *model)
{
    return EC_CSTATE(ec_ssbc_state, model)->n_features;   /* input and frame alike */
}

static uint32_t ssbc_decision_len(const ec_model *model)
{
    const ec_ssbc_state *m = EC_CSTATE(ec_ssbc_state, model);
    return m->n_bits + (m->has_table ? 1u : 0u);          /* code bits, nearest distance */
}

const EC_ROM ec_kind_ops ec_ssbc_ops = {
    EC_KIND_SSBC, ssbc_open, ssbc_features, ssbc_features, ssbc_decision_len,
    ssbc_workspace_bytes, ssbc_infer
#if EC_WITH_PROTECT
    , NULL   /* no erasure fallback: a detected upset refuses the image */
#endif
};
