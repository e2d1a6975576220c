/*
 * ec_ecoc.c - ECOC ensembles (kind 2) on the device, the operations table
 * ec_ecoc_ops: open and verify an image in place, then run one frame in
 * integers, bit for bit as firmware_sim.ecoc does (docs/container_format.md,
 * "Model kind ecoc").
 *
 * ecoc_open checks the consistency rules of check_ecoc
 * (firmware_sim/_validation.py) in the same order, except the metadata
 * rule (16: the runtime does not parse __meta__) and the float rules
 * beyond the finiteness of in_center (tested on the bit pattern). A
 * missing array or a wrong dtype/shape is EC_ERR_SCHEMA; a broken rule is
 * EC_ERR_RULE. Nothing is copied and nothing is allocated. Tree learners
 * use the compact node format of kind forest (ec_trees.h: decision nodes
 * only, each tree in preorder, narrow unsigned fields, int16 thresholds;
 * the N symbols are the leaves): its one-pass layout check (every node
 * referenced once and forward, at most 64 levels, features below d) and,
 * per column, the symbols its tree can reach are its learner's.
 *
 * ecoc_infer streams: each score is accumulated, compared and
 * forgotten, the learner symbols go straight into decision[0..m), and each
 * class's doubled distance, counted along its row of the code, into
 * decision[m..m+c). No workspace is needed. Linear scores
 * take the narrowest exact arithmetic the image allows (EC_LIN_*, chosen in
 * rule 10's pass; docs/firmware.md, "Narrow arithmetic").
 *
 * The learner kinds are a table (ecoc_learners below: each kind's opener
 * and its symbols pass), compiled in by EC_ECOC_LINEAR and EC_ECOC_TREES
 * (ec_config.h or -D; both 1 by default; `edgecode firmware` writes the
 * model's learner kind only, issue 26): an image whose learner kind is not
 * compiled in is refused with EC_ERR_KIND once the rules both kinds share
 * (1-8) hold.
 *
 * C99, <stdint.h>/<stddef.h> only, no floats, no recursion, no malloc; on
 * AVR one inline-assembly multiply-accumulate (EC_MAC16).
 * Arrays are read through typed pointers into the image (16-byte aligned,
 * little-endian: the host, Cortex-M, AVR and RISC-V alike).
 */
#include "ec_kind.h"

/* the learner kinds compiled in (1: yes); without a setting, both */
#ifndef EC_ECOC_LINEAR
#define EC_ECOC_LINEAR 1
#endif
#ifndef EC_ECOC_TREES
#define EC_ECOC_TREES 1
#endif
/* the arithmetic of linear scores compiled in (1: yes; each 1 without a
 * setting; `edgecode firmware` writes the model's one, the
 * export.ecoc.linear_accumulator of its image): EC_ECOC_ACC32 (16 x 16-bit
 * products, 32-bit sums), EC_ECOC_W16 (the same products, 64-bit sums in two
 * 32-bit words) and EC_ECOC_I64 (int64 products and sums, which runs any
 * image). The open takes the narrowest one compiled in that the image's
 * bounds allow, and refuses the image with EC_ERR_KIND when there is none. */
#ifndef EC_ECOC_ACC32
#define EC_ECOC_ACC32 1
#endif
#ifndef EC_ECOC_W16
#define EC_ECOC_W16 1
#endif
#ifndef EC_ECOC_I64
#define EC_ECOC_I64 1
#endif

/* the node widths of tree learners compiled in (1, 2 or 4 bytes; 0, the
 * default: any width, read at run time; `edgecode firmware` writes the
 * model's): an image of other widths is refused with EC_ERR_KIND */
#ifndef EC_ECOC_ROOT_BYTES
#define EC_ECOC_ROOT_BYTES 0
#endif
#ifndef EC_ECOC_FEATURE_BYTES
#define EC_ECOC_FEATURE_BYTES 0
#endif
#ifndef EC_ECOC_REF_BYTES
#define EC_ECOC_REF_BYTES 0
#endif
#define EC_TREES_ROOT_BYTES EC_ECOC_ROOT_BYTES
#define EC_TREES_FEATURE_BYTES EC_ECOC_FEATURE_BYTES
#define EC_TREES_REF_BYTES EC_ECOC_REF_BYTES
#include "ec_trees.h"

typedef struct ecoc_learner ecoc_learner;

/* the fields of an opened model (model->state) */
typedef struct {
    const EC_ROM int16_t *code;           /* (c, m), -1 = unused               */
    const EC_ROM int32_t *unused_count;   /* (c,)                              */
    const EC_ROM int32_t *col_cls_offset, *col_n_cls; /* (m,)                  */
    const EC_ROM int16_t *col_classes;    /* (sum col_n_cls,)                  */
    const EC_ROM uint64_t *in_center_bits; /* (d,) the float64 centers, as bit patterns */
    const EC_ROM int8_t *in_shift;        /* (d,) input quantizer exponents    */
    /* linear */
    const EC_ROM int32_t *lin_weights;    /* (d, k)                            */
    const EC_ROM int64_t *lin_bias;       /* (k,)                              */
    const EC_ROM int32_t *col_out_offset, *col_n_out; /* (m,)                  */
    /* trees: the compact node format (ec_trees.h), one tree per column */
    ec_trees trees;
    ec_count n_classes, n_columns, n_symbols, n_features;
    ec_count n_outputs;                   /* k                                 */
    const EC_ROM ecoc_learner *learner;   /* its kind's entry of ecoc_learners */
    uint8_t lin_mode;                     /* EC_LIN_*: the scores' arithmetic  */
} ec_ecoc_state;
EC_STATE_FITS(ec_ecoc_state);

#define EC_INT64_MAX_U ((uint64_t)0x7FFFFFFFFFFFFFFFull)
/* Linear scores B + sum_f q_f W[f, o] (docs/firmware.md, "Narrow arithmetic"),
 * chosen at open from the image: every weight in int16 and every output's
 * |B| + 32768 sum_f |W| < 2^31: 16 x 16 -> 32-bit products, a 32-bit sum;
 * every weight in int16: the same products, summed in two 32-bit words; else
 * int64 products and sums. All exact: the same score as one int64 sum. */
#define EC_LIN_WIDE 0u
#define EC_LIN_W16 1u
#define EC_LIN_ACC32 2u
#define EC_Q_ABS_MAX 32768u /* |q| of an int16 frame value, -32768 included */

/* ---- array access -------------------------------------------------------- */

/* The loop bounds, sizes and offsets of the rules are ec_count (size_t):
 * ec_image_open has checked that every array lies inside the image, whose
 * total_size is a uint32 and at most SIZE_MAX (on AVR 65,535), so an array of
 * n entries of b bytes has n b <= total_size (the code (c, m): c m <
 * 2^31 entries, on AVR < 2^15; in_center: d < 2^29; col_classes: fewer than
 * 2^31 symbols; lin_bias: k < 2^29). A running sum is compared with such a
 * bound before it could wrap. Values read from the image (int32 offsets,
 * counts, references) are checked before they become an ec_count. */
#define EC_ANY ((ec_count)-1) /* any length (no array has SIZE_MAX entries of >= 2 bytes) */

/* Array `name` of `dtype`, shape (n0,) or, with n1 given, (n0, n1); EC_ANY
 * accepts any length. EC_ERR_SCHEMA unless so. */
static ec_status get_array(const ec_image *img, const EC_ROM char *name, uint8_t dtype,
                           ec_count n0, ec_count n1, ec_array *a)
{
    ec_status s = ec_image_require(img, name, dtype, n1 == 0u ? 1u : 2u, a);
    if (s != EC_OK)
        return s;
#if SIZE_MAX < 0xFFFFFFFFu
    /* a dimension beyond ec_count (AVR: 65,535): only an empty 2-d array can
       declare one, and each such array of this kind breaks a rule (code (c,
       0) or (0, m); lin_weights (0, k) with d >= 1; code_bits (c >= 2, words)) */
    if (a->shape[0] > SIZE_MAX || a->shape[1] > SIZE_MAX)
        return EC_ERR_SCHEMA;
#endif
    if ((n0 != EC_ANY && a->shape[0] != n0) || (n1 != 0u && n1 != EC_ANY && a->shape[1] != n1))
        return EC_ERR_SCHEMA;
    return EC_OK;
}
#define get_vector(img, name, dtype, n, a) get_array(img, name, dtype, n, 0u, a)

/* Rules 4 and 9: off[j] is cnt[0] + .. + cnt[j - 1] for every column j < m and
 * the m counts add up to `total` (< 2^31); each count in [0, 32768] (the
 * caller's rule), so the sum, compared with total at every step, never wraps. */
static int running_sums_ok(const EC_ROM int32_t *off, const EC_ROM int32_t *cnt, ec_count m,
                           ec_count total)
{
    const EC_ROM int32_t *end = off + m;
    ec_count sum = 0u; /* total + 32768 fits: total < 2^15 entries on AVR */
    for (; off != end; off++, cnt++) {
        if ((uint32_t)*off != sum)
            return 0;
        sum += (ec_count)*cnt;
        if (sum > total)
            return 0;
    }
    return sum == total;
}

#define AS(type, arr) ((const EC_ROM type *)(const EC_ROM void *)(arr).data)

/* ---- linear learners (rules 9, 10) ---------------------------------------- */
#if EC_ECOC_LINEAR

/* |v| of an int64 as uint64 (2^63 for INT64_MIN). */
static uint64_t abs64(int64_t v)
{
    return v < 0 ? (uint64_t)(-(v + 1)) + 1u : (uint64_t)v;
}

/* sum_f |p[f stride]| for d entries (in two 32-bit words: < d 2^31), and
 * *mode = EC_LIN_WIDE when one of them is outside int16. Its own function,
 * not inlined: the loop keeps its variables in registers. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static uint64_t column_abs_sum(const EC_ROM int32_t *p, ec_count d, ec_count stride,
                               uint8_t *mode)
{
    uint32_t lo = 0u, hi = 0u;
    ec_count f;
    uint8_t wide = 0u;
    for (f = 0; f < d; f++, p += stride) {
        int32_t v = *p;
        uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
        lo += a;
        if (lo < a)
            hi++;
        if (a > 32767u && v != -32768)
            wide = 1u;
    }
    if (wide)
        *mode = EC_LIN_WIDE;
    return ((uint64_t)hi << 32) | lo;
}

static ec_status open_linear(const ec_image *img, ec_ecoc_state *mo)
{
    const EC_ROM int32_t *n_cls = mo->col_n_cls;
    ec_array a; /* one at a time: the open path's stack stays small */
    ec_status s;
    const EC_ROM int32_t *w, *n_out, *out_off;
    const EC_ROM int64_t *b;
    ec_count m = mo->n_columns, d = mo->n_features, k, j, o;
    uint8_t mode;

    if ((s = get_array(img, EC_STR("lin_weights"), EC_I32, d, EC_ANY, &a)) != EC_OK)
        return s;
    k = a.shape[1]; /* 4 d k < 2^32 */
    w = AS(int32_t, a);
    if ((s = get_vector(img, EC_STR("lin_bias"), EC_I64, k, &a)) != EC_OK)
        return s;
    b = AS(int64_t, a);
    if ((s = get_vector(img, EC_STR("col_n_out"), EC_I32, m, &a)) != EC_OK)
        return s;
    n_out = AS(int32_t, a);
    if ((s = get_vector(img, EC_STR("col_out_offset"), EC_I32, m, &a)) != EC_OK)
        return s;
    out_off = AS(int32_t, a);

    /* 0 scores: constant learner; 1: sign (two symbols); else one per symbol
     * (so each count is in [0, 32768]); the counts add up to k, the offsets
     * are their running sums */
    for (j = 0; j < m; j++) {
        int32_t nc = n_cls[j], no = n_out[j];
        int ok = nc == 1 ? no == 0 : (no == nc || (nc == 2 && no == 1));
        if (!ok)
            return EC_ERR_RULE;
    }
    if (!running_sums_ok(out_off, n_out, m, k))
        return EC_ERR_RULE;
    /* |lin_bias[o]| + 32768 sum_f |lin_weights[f, o]| <= 2^63 - 1; the sum is
     * below d 2^31 < 2^61 (d 8-byte in_center entries fit a 4 GiB file). The
     * same pass picks the arithmetic of the scores (EC_LIN_*). */
    mode = EC_LIN_ACC32;
    for (o = 0; o < k; o++) {
        uint64_t absb = abs64(b[o]), abs_w = column_abs_sum(w + o, d, k, &mode);
        if (absb > EC_INT64_MAX_U || abs_w > (EC_INT64_MAX_U - absb) / EC_Q_ABS_MAX)
            return EC_ERR_RULE;
        if (mode == EC_LIN_ACC32 && absb + EC_Q_ABS_MAX * abs_w > 0x7FFFFFFFu)
            mode = EC_LIN_W16;
    }
    if (!EC_NARROW)
        mode = EC_LIN_WIDE;
    if (mode == EC_LIN_ACC32 && !EC_ECOC_ACC32)
        mode = EC_LIN_W16; /* exact too: the same products, a wider sum */
    if (mode == EC_LIN_W16 && !EC_ECOC_W16)
        mode = EC_LIN_WIDE;
    if (mode == EC_LIN_WIDE && !EC_ECOC_I64)
        return EC_ERR_KIND; /* the image needs an arithmetic not compiled in */
    mo->lin_mode = mode;
    mo->lin_weights = w;
    mo->lin_bias = b;
    mo->col_n_out = n_out;
    mo->col_out_offset = out_off;
    mo->n_outputs = k;
    return EC_OK;
}
#endif /* EC_ECOC_LINEAR */

/* ---- decision trees (rules 11, 12, 14, 15) --------------------------------- */
#if EC_ECOC_TREES

/* 1 if reference r is a decision node (r >= L) or a symbol among the
 * column's learner symbols cls[0 .. n). */
static EC_NOINLINE int leaf_ok(const EC_ROM int16_t *cls, int32_t n, uint32_t r, ec_count L)
{
    int32_t i;
    if (r >= L)
        return 1;
    for (i = 0; i < n; i++)
        if ((uint32_t)(int32_t)cls[i] == r)
            return 1;
    return 0;
}

static ec_status open_trees(const ec_image *img, ec_ecoc_state *mo)
{
    ec_trees *t = &mo->trees;
    ec_status s;
    ec_count m = mo->n_columns, L = mo->n_symbols, j, next;

    /* rule 11: the node arrays, one tree per column */
    if ((s = ec_trees_open(img, m, t)) != EC_OK)
        return s;
    if (!EC_TREES_WIDTHS_OK(t))
        return EC_ERR_KIND; /* node widths not compiled in */
    t->n_leaves = L; /* a reference r < N is the leaf of symbol r */
    t->n_features = mo->n_features;
    /* rules 12 and 14: features, preorder, every node referenced once, depth */
    if (!ec_trees_layout_ok(t))
        return EC_ERR_RULE;
    /* rule 15: every leaf a column's tree can reach is one of its learner's
     * symbols (columns whose learner has all N symbols need no test). Tree j's
     * nodes run from its root to the next tree's (the layout is checked): one
     * forward pointer, O(m + n) */
    for (j = 0, next = 0; j < m; j++) {
        const EC_ROM int16_t *cls = mo->col_classes + mo->col_cls_offset[j];
        int32_t ncls = mo->col_n_cls[j];
        uint32_t r = EC_TREES_ROOT(t, j); /* an image value */
        ec_count i, a, b;
        if (ncls >= (int32_t)L)
            continue;
        if (r < L) { /* a one-leaf tree */
            if (!leaf_ok(cls, ncls, r, L))
                return EC_ERR_RULE;
            continue;
        }
        if (next <= j)
            next = j + 1u;
        while (next < m && EC_TREES_ROOT(t, next) < L)
            next++;
        a = r - L;
        b = next < m ? EC_TREES_ROOT(t, next) - L : t->n_nodes;
        for (i = a; i < b; i++) {
            if (!leaf_ok(cls, ncls, EC_TREES_LEFT(t, i), L) ||
                !leaf_ok(cls, ncls, EC_TREES_RIGHT(t, i), L))
                return EC_ERR_RULE;
        }
    }
    return EC_OK;
}
#endif /* EC_ECOC_TREES */

/* ---- the learner kinds ------------------------------------------------------ */

/* A learner kind: the value of learner_kind, its opener (its rules, after
 * rules 1-8) and its symbols pass (every column's learner symbol on frame q
 * into decision[0 .. m)). One entry per kind compiled in. */
struct ecoc_learner {
    uint8_t kind;
    ec_status (*open)(const ec_image *img, ec_ecoc_state *mo);
    ec_status (*symbols)(const ec_ecoc_state *m, const int16_t *q, int64_t *decision);
};

#if EC_ECOC_LINEAR
static ec_status linear_symbols(const ec_ecoc_state *m, const int16_t *q, int64_t *decision);
#endif
#if EC_ECOC_TREES
static ec_status tree_symbols(const ec_ecoc_state *m, const int16_t *q, int64_t *decision);
#endif

static const EC_ROM ecoc_learner ecoc_learners[] = {
#if EC_ECOC_LINEAR
    {1u, open_linear, linear_symbols},
#endif
#if EC_ECOC_TREES
    {2u, open_trees, tree_symbols},
#endif
    {0u, 0, 0} /* the end (and an element when neither is compiled in) */
};

/* The arrays of each learner kind (kind 1, then 2): NUL-terminated names, then
 * an empty one. Rule 8 refuses the other kinds' arrays, compiled in or not. */
static const EC_ROM char learner_arrays[] =
    "lin_weights\0lin_bias\0col_out_offset\0col_n_out\0\0"
    "tree_root\0node_feature\0node_threshold\0node_left\0node_right\0";

/* ---- ec_ecoc_open ---------------------------------------------------------- */

/* Every size 0, every pointer NULL (all bits zero on every target of the
 * runtime), a byte at a time: no temporary state on the stack. */
static void clear_model(ec_ecoc_state *mo)
{
    unsigned char *p = (unsigned char *)(void *)mo, *end = p + sizeof *mo;
    for (; p != end; p++)
        *p = 0u;
}

static EC_AVR_WORKAROUND ec_status open_checked(const ec_image *img, ec_ecoc_state *mo)
{
    ec_array a; /* one at a time: the open path's stack stays small */
    ec_status s;
    const EC_ROM int16_t *code, *cls, *e, *end;
    const EC_ROM int32_t *unused, *n_cls, *cls_off, *p, *pend;
    const EC_ROM uint64_t *center;
    ec_count c, m, d, r, words, total;
    int32_t n_sym;
    int16_t max_code; /* then N - 1 (N <= 32768) */
    uint8_t kind, lk;
    const EC_ROM char *name;
    const EC_ROM ecoc_learner *learner;

    /* rule 1: the code */
    if ((s = get_array(img, EC_STR("code"), EC_I16, EC_ANY, EC_ANY, &a)) != EC_OK)
        return s;
    c = a.shape[0];
    m = a.shape[1];
    code = AS(int16_t, a);
    if (c < 2u || m < 1u)
        return EC_ERR_RULE;
    max_code = -1;
    for (e = code, end = code + c * m; e != end; e++) { /* c m < 2^31 */
        int16_t v = *e;
        if (v < -1)
            return EC_ERR_RULE;
        if (v > max_code)
            max_code = v;
    }
    /* rule 2: the alphabet (N <= 32768) */
    if ((s = get_vector(img, EC_STR("n_symbols"), EC_I32, 1u, &a)) != EC_OK)
        return s;
    n_sym = AS(int32_t, a)[0];
    if (max_code < 1)
        max_code = 1;
    if (n_sym != (int32_t)max_code + 1)
        return EC_ERR_RULE;
    /* rule 3: unused entries per row */
    if ((s = get_vector(img, EC_STR("unused_count"), EC_I32, c, &a)) != EC_OK)
        return s;
    unused = AS(int32_t, a);
    for (p = unused, pend = unused + c, e = code; p != pend; p++) {
        int32_t cnt = 0;
        for (end = e + m; e != end; e++)
            if (*e == -1) /* (rule 1: no entry below -1) */
                cnt++;
        if (*p != cnt)
            return EC_ERR_RULE;
    }
    /* rules 4 and 5: learner symbol counts in [1, N], their table (the counts'
     * sum of int16 symbols) and its running offsets; each column's symbols in
     * [0, N), strictly increasing: one pass, the table read in order */
    if ((s = get_vector(img, EC_STR("col_n_cls"), EC_I32, m, &a)) != EC_OK)
        return s;
    n_cls = AS(int32_t, a);
    if ((s = get_vector(img, EC_STR("col_classes"), EC_I16, EC_ANY, &a)) != EC_OK)
        return s;
    cls = AS(int16_t, a);
    total = a.shape[0];
    if ((s = get_vector(img, EC_STR("col_cls_offset"), EC_I32, m, &a)) != EC_OK)
        return s;
    cls_off = AS(int32_t, a);
    for (p = n_cls, pend = n_cls + m; p != pend; p++)
        if (*p < 1 || *p > n_sym)
            return EC_ERR_RULE;
    if (!running_sums_ok(cls_off, n_cls, m, total))
        return EC_ERR_RULE;
    for (p = n_cls, e = cls; p != pend; p++) { /* e: the column's symbols, in the table */
        const EC_ROM int16_t *first = e;
        for (end = e + *p; e != end; e++)
            if (*e < 0 || *e > max_code || (e != first && *e <= e[-1]))
                return EC_ERR_RULE;
    }
    /* rule 6: the input quantizer (host side; only finiteness matters here) */
    if ((s = get_vector(img, EC_STR("in_center"), EC_F64, EC_ANY, &a)) != EC_OK)
        return s;
    d = a.shape[0];
    center = AS(uint64_t, a);
    if (d < 1u)
        return EC_ERR_RULE;
    {   /* NaN or infinity: exponent bits 52..62 all set, i.e. bits 4..14 of
           the top 16-bit half (little-endian) */
        const EC_ROM uint16_t *top = (const EC_ROM uint16_t *)(const EC_ROM void *)center + 3;
        const EC_ROM uint16_t *top_end = top + 4u * d;
        for (; top != top_end; top += 4)
            if ((*top & 0x7FF0u) == 0x7FF0u)
                return EC_ERR_RULE;
    }
    if ((s = get_vector(img, EC_STR("in_shift"), EC_I8, d, &a)) != EC_OK)
        return s;
    mo->in_center_bits = center;          /* for ec_quantize (host side of the contract) */
    mo->in_shift = AS(int8_t, a);

    mo->n_classes = c;
    mo->n_columns = m;
    mo->n_symbols = (ec_count)n_sym;
    mo->n_features = d;
    mo->code = code;
    mo->unused_count = unused;
    mo->col_cls_offset = cls_off;
    mo->col_n_cls = n_cls;
    mo->col_classes = cls;

    /* rule 7: the packed binary code, only for N = 2 */
    if (n_sym == 2) {
        const EC_ROM uint8_t *pb, *pu; /* the rows as bytes (little-endian words) */
        ec_count nbytes;
        words = (m + 63u) / 64u; /* m < 2^31 */
        if ((s = get_array(img, EC_STR("code_bits"), EC_U64, c, words, &a)) != EC_OK)
            return s;
        pb = a.data;
        if ((s = get_array(img, EC_STR("code_used"), EC_U64, c, words, &a)) != EC_OK)
            return s;
        pu = a.data;
        /* bit j of a row is bit j % 8 of its byte j / 8; the bits from m to 64
           words are 0 */
        nbytes = 8u * words;
        for (r = 0, e = code; r < c; r++) {
            const EC_ROM int16_t *row_end = e + m;
            const EC_ROM uint8_t *pb_end = pb + nbytes;
            for (; pb != pb_end; pb++, pu++) {   /* a byte of 8 columns */
                uint8_t want_b = 0u, want_u = 0u, bit;
                for (bit = 1u; bit != 0u && e != row_end; bit = (uint8_t)(bit << 1), e++) {
                    if (*e == 1)
                        want_b |= bit;
                    if (*e != -1)
                        want_u |= bit;
                }
                if (*pb != want_b || *pu != want_u)
                    return EC_ERR_RULE;
            }
        }
    } else if (ec_image_has(img, EC_STR("code_bits")) || ec_image_has(img, EC_STR("code_used"))) {
        return EC_ERR_RULE;
    }

    /* rule 8: the learner kind, without the other kind's arrays */
    if ((s = get_vector(img, EC_STR("learner_kind"), EC_U8, 1u, &a)) != EC_OK)
        return s;
    kind = a.data[0];
    if (kind != 1u && kind != 2u)
        return EC_ERR_RULE;
    for (name = learner_arrays, lk = 1u; lk <= 2u; lk++, name++) { /* kind lk's names */
        while (*name != 0) {
            if (lk != kind && ec_image_has(img, name))
                return EC_ERR_RULE;
            while (*name++ != 0) /* past this name */
                ;
        }
    }
    for (learner = ecoc_learners; learner->kind != kind; learner++)
        if (learner->kind == 0u)
            return EC_ERR_KIND; /* this learner kind is not compiled in */
    mo->learner = learner;
    return EC_OK;
}

static ec_status ecoc_open(const ec_image *img, ec_model *model, uint32_t *n_classes)
{
    ec_ecoc_state *m = EC_STATE(ec_ecoc_state, model);
    ec_status s;
    clear_model(m);
    s = open_checked(img, m); /* rules 1-8, then the learner kind's (one frame at a time) */
    if (s == EC_OK)
        s = m->learner->open(img, m);
    if (s != EC_OK)
        clear_model(m);
    *n_classes = m->n_classes;
    return s;
}

/* ---- inference ------------------------------------------------------------- */

static uint32_t ecoc_workspace_bytes(const ec_model *model)
{
    (void)model; /* everything streams: scores, symbols and distances */
    return 0u;
}

#if EC_ECOC_LINEAR
/* acc += x y for an int32 acc and int16 x, y whose partial sums stay in int32.
 * On AVR cores with a multiplier, the four 8 x 8-bit products added in place
 * (the signed multiply-accumulate of Atmel's application note AVR201): about
 * 25 cycles, against about 70 for the call to libgcc's 16 x 16 -> 32-bit
 * multiply and the 32-bit add; elsewhere plain C. */
#if defined(__AVR__) && defined(__GNUC__) && defined(__AVR_HAVE_MUL__)
#define EC_MAC16(acc, x, y)                                                    \
    do {                                                                       \
        int16_t x_ = (x), y_ = (y);                                            \
        uint8_t z_;                                                            \
        __asm__("clr %[z]\n\t"                                                 \
                "muls %B[a], %B[b]\n\t"                                        \
                "add %C[s], __tmp_reg__\n\t"                                   \
                "adc %D[s], __zero_reg__\n\t"                                  \
                "mul %A[a], %A[b]\n\t"                                         \
                "add %A[s], __tmp_reg__\n\t"                                   \
                "adc %B[s], __zero_reg__\n\t"                                  \
                "adc %C[s], %[z]\n\t"                                          \
                "adc %D[s], %[z]\n\t"                                          \
                "mulsu %B[a], %A[b]\n\t"                                       \
                "sbc %D[s], %[z]\n\t"                                          \
                "add %B[s], __tmp_reg__\n\t"                                   \
                "adc %C[s], __zero_reg__\n\t"                                  \
                "adc %D[s], %[z]\n\t"                                          \
                "mulsu %B[b], %A[a]\n\t"                                       \
                "sbc %D[s], %[z]\n\t"                                          \
                "add %B[s], __tmp_reg__\n\t"                                   \
                "adc %C[s], __zero_reg__\n\t"                                  \
                "adc %D[s], %[z]\n\t"                                          \
                "clr __zero_reg__"                                             \
                : [s] "+r"(acc), [z] "=&r"(z_)                                 \
                : [a] "a"(x_), [b] "a"(y_));                                   \
    } while (0)
#else
#define EC_MAC16(acc, x, y) ((acc) += (int32_t)(x) * (int16_t)(y))
#endif

/* (*lo, *hi) += v: a 64-bit sum in two 32-bit words, the low word's carry
 * and v's sign going into the high word (modulo 2^64). */
#define EC_ADD2W(lo, hi, v)                                                    \
    do {                                                                       \
        int32_t v_ = (v);                                                      \
        uint32_t l_ = (lo) + (uint32_t)v_;                                     \
        (hi) += (v_ < 0 ? 0xFFFFFFFFu : 0u) + (l_ < (uint32_t)v_);             \
        (lo) = l_;                                                             \
    } while (0)

/* b + sum q[f] w[f stride], the int16 weights read as the low halves
 * (little-endian) of the int32 entries, in 32 bits (EC_LIN_ACC32). Its own
 * function, not inlined: the loop keeps every variable in a register. */
#if EC_ECOC_ACC32
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int32_t linear_score32(const int16_t *q, const int16_t *end, const EC_ROM int32_t *w,
                              ec_count stride, int32_t acc)
{
    const EC_ROM int16_t *w16 = (const EC_ROM int16_t *)(const EC_ROM void *)w;
    stride *= 2u;
    for (; q != end; q++, w16 += stride)
        EC_MAC16(acc, *q, *w16);
    return acc;
}
#endif

/* A score: int32 when the 32-bit sums are the only arithmetic compiled in. */
#if EC_ECOC_W16 || EC_ECOC_I64
typedef int64_t ecoc_score;
#else
typedef int32_t ecoc_score;
#endif

/* lin_bias[o] + sum_f q_f lin_weights[f, o], exactly (rule 10 bounds every
 * partial sum by 2^63 - 1), in the arithmetic lin_mode says. */
static ecoc_score linear_score(const ec_ecoc_state *m, const int16_t *q, ec_count o)
{
    const EC_ROM int32_t *w = m->lin_weights + o;
    const int16_t *end = q + m->n_features;
    ec_count k = m->n_outputs;
#if EC_ECOC_ACC32
    if (m->lin_mode == EC_LIN_ACC32) /* |partial sums| < 2^31 */
        return linear_score32(q, end, w, k, (int32_t)m->lin_bias[o]);
#endif
#if EC_ECOC_W16
    if (m->lin_mode == EC_LIN_W16) {
        uint32_t lo = 0u, hi = 0u;
        for (; q != end; q++, w += k)
            EC_ADD2W(lo, hi, (int32_t)*q * (int16_t)*w);
        /* modulo 2^64: the exact score fits int64 */
        return (int64_t)((uint64_t)m->lin_bias[o] + (((uint64_t)hi << 32) | lo));
    }
#endif
#if EC_ECOC_I64
    {
        int64_t acc = m->lin_bias[o];
        for (; q != end; q++, w += k)
            acc += (int64_t)*q * (int64_t)*w;
        return acc;
    }
#else
    (void)end;
    (void)w;
    (void)k;
    return 0; /* not reached: the open picks a path compiled in */
#endif
}

/* Each column's symbol: the sign of its one score, or its first argmax. */
static ec_status linear_symbols(const ec_ecoc_state *m, const int16_t *q, int64_t *decision)
{
    ec_count j, n = m->n_columns;
    for (j = 0; j < n; j++) {
        const EC_ROM int16_t *cls = m->col_classes + m->col_cls_offset[j];
        int32_t k = m->col_n_out[j];
        ec_count o = (ec_count)m->col_out_offset[j];
        int32_t pick = 0;
        if (k == 1) {
            pick = linear_score(m, q, o) > 0;
        } else if (k > 1) { /* first argmax */
            ecoc_score top = linear_score(m, q, o);
            int32_t t;
            for (t = 1; t < k; t++) {
                ecoc_score v = linear_score(m, q, o + (ec_count)t);
                if (v > top) {
                    top = v;
                    pick = t;
                }
            }
        }
        decision[j] = cls[pick];
    }
    return EC_OK;
}
#endif

#if EC_ECOC_TREES
/* Each column's symbol: the leaf its tree reaches. */
static ec_status tree_symbols(const ec_ecoc_state *m, const int16_t *q, int64_t *decision)
{
    ec_count j, n = m->n_columns;
    for (j = 0; j < n; j++) {
        uint32_t sym = ec_trees_walk(&m->trees, q, j);
        if (sym >= m->n_symbols) /* excluded by the layout rule */
            return EC_ERR_RULE;
        decision[j] = (int64_t)sym; /* the leaf is the symbol */
    }
    return EC_OK;
}
#endif

#if EC_WITH_PROTECT
/* Image protection (issue 27): learners erased by a detected upset are left
 * out of the Hamming distance, as ECOCDevice.erase does (their code entries
 * become unused: each counts 1 instead of 0 or 2). The distances in
 * decision[n ..] are adjusted; returns the first class with the smallest. */
static int32_t ecoc_erased(const ec_model *model, const ec_ecoc_state *m, int64_t *decision)
{
    uint32_t c = m->n_classes, n = m->n_columns, r, j;
    int64_t *dist = decision + n, best = 0;
    int32_t arg = 0;
    for (r = 0; r < c; r++) {
        for (j = 0; j < n; j++) {
            int16_t v;
            if (!EC_ERASED(model, j))
                continue;
            v = m->code[r * n + j];
            if (v >= 0)
                dist[r] += v != (int16_t)decision[j] ? -1 : 1;
        }
        if (r == 0u || dist[r] < best) {
            best = dist[r];
            arg = (int32_t)r;
        }
    }
    return arg;
}

/* Image protection's fallback (ECOCDevice.erasure_owners): a detected element
 * of lin_weights / lin_bias erases the learner owning its score, one of a
 * tree's node_threshold the learner owning the tree (trees in preorder, the
 * first at node 0); anything else has no fallback. */
static ec_status ecoc_erasure_owner(const ec_image *img, const EC_ROM uint8_t *entry,
                                    uint32_t element, int32_t *unit)
{
    ec_array a, b;
    uint32_t j, m;
    int64_t k = 0, o, sum = 0, pos;
    *unit = -1;
    if (ec_entry_is(entry, "lin_weights") || ec_entry_is(entry, "lin_bias")) {
        if (ec_image_find(img, EC_STR("lin_weights"), &a) != EC_OK ||
            ec_image_find(img, EC_STR("col_n_out"), &b) != EC_OK)
            return EC_ERR_UPSET;
        m = ec_array_count(&b);
        for (j = 0; j < m; j++) {
            if (ec_array_int(&b, j) < 0) return EC_ERR_UPSET;
            sum += ec_array_int(&b, j);
        }
        k = ec_image_find(img, EC_STR("lin_bias"), &a) == EC_OK ? (int64_t)ec_array_count(&a)
                                                              : sum;
        if (sum != k || k == 0) return EC_ERR_UPSET;
        o = ec_entry_is(entry, "lin_bias") ? (int64_t)element : (int64_t)element % k;
        if (!ec_entry_is(entry, "lin_bias")) {
            (void)ec_image_find(img, EC_STR("lin_weights"), &a);
            if ((int64_t)element >= (int64_t)ec_array_count(&a) / k * k) return EC_ERR_UPSET;
        }
        for (j = 0, pos = 0; j < m; j++) {
            pos += ec_array_int(&b, j);
            if (o < pos) {
                *unit = (int32_t)j;
                return EC_OK;
            }
        }
        return EC_ERR_UPSET;
    }
    if (ec_entry_is(entry, "node_threshold")) {
        int64_t prev = -1, n_sym, best = -1;
        uint32_t n, cnt = 0u;
        if (ec_image_find(img, EC_STR("tree_root"), &a) != EC_OK ||
            ec_image_find(img, EC_STR("n_symbols"), &b) != EC_OK || b.nbytes == 0u)
            return EC_ERR_UPSET;
        n_sym = ec_array_int(&b, 0u);
        (void)ec_image_find(img, EC_STR("node_threshold"), &b);
        n = ec_array_count(&b);
        m = ec_array_count(&a);
        /* the starts (roots beyond the symbols) in increasing column order must
           be 0, then strictly increasing, all below n (_tree_owners) once
           sorted: checked as a set (first 0, distinct, < n) */
        for (j = 0; j < m; j++) {
            int64_t st = ec_array_int(&a, j) - n_sym, j2;
            if (st < 0) continue;
            if (st >= (int64_t)n) return EC_ERR_UPSET;
            for (j2 = 0; j2 < (int64_t)j; j2++)
                if (ec_array_int(&a, (uint32_t)j2) - n_sym == st) return EC_ERR_UPSET;
            if (st == 0) prev = 0;
            cnt++;
            if (st <= (int64_t)element && st > best) {
                best = st;
                *unit = (int32_t)j;
            }
        }
        if (n == 0u || cnt == 0u || prev != 0) return EC_ERR_UPSET;
        return EC_OK;
    }
    return EC_ERR_UPSET;
}
#endif

static ec_status ecoc_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                           int64_t *decision, void *workspace, uint32_t workspace_bytes)
{
    const ec_ecoc_state *m = EC_CSTATE(ec_ecoc_state, model);
    ec_count c, n, r;
    uint32_t best;
    int64_t *dist;
    int32_t arg;
    ec_status s;

    (void)workspace;
    (void)workspace_bytes;
    if (m->code == 0 || m->learner == 0)
        return EC_ERR_ARG;
    c = m->n_classes;
    n = m->n_columns;
    dist = decision + n;

    /* learner symbols -> decision[0 .. n) */
    if ((s = m->learner->symbols(m, frame, decision)) != EC_OK)
        return s;

    /* doubled distances -> decision[n .. n + c) and the first class with the
       smallest, in 32 bits: 2 cnt + unused_count[r] <= 2 n <= 2^32 - 2 (the
       unused entries are never counted; n < 2^31, rule 1), below best's
       start. The code's int16 rows serve every alphabet (for N = 2 they hold
       what the packed rows do, rule 7). */
    {
        const EC_ROM int16_t *row = m->code;
        best = 0xFFFFFFFFu;
        arg = 0;
        for (r = 0; r < c; r++) {
            const EC_ROM int16_t *end = row + n;
            const int64_t *dj = decision;
            ec_count cnt = 0u;
            uint32_t dd;
            for (; row != end; row++, dj++) {
                int16_t v = *row;
                cnt += v >= 0 && v != (int16_t)*dj;
            }
            dd = 2u * (uint32_t)cnt + (uint32_t)m->unused_count[r];
            dist[r] = (int64_t)dd;
            if (dd < best) {
                best = dd;
                arg = (int32_t)r;
            }
        }
    }
#if EC_WITH_PROTECT
    if (model->n_erased != 0u)
        arg = ecoc_erased(model, m, decision);
#endif
    *label = arg;
    return EC_OK;
}

/* ---- quantizer and sizes ------------------------------------------------------ */

ec_quantize_fn ec_ecoc_quantize;

ec_status ec_ecoc_quantize(const ec_model *model, const void *x, int type, int16_t *frame)
{
    const ec_ecoc_state *m = EC_CSTATE(ec_ecoc_state, model);
    ec_count f;
    ec_exact v = {0u, 0, 0}, c = {0u, 0, 0};
    for (f = 0; f < m->n_features; f++) {
        if (!ec_q_input(x, type, f, &v))
            return EC_ERR_INPUT;
    }
    for (f = 0; f < m->n_features; f++) {
        (void)ec_q_input(x, type, f, &v);
        (void)ec_q_from_binary64(m->in_center_bits[f], &c); /* finite: rule 6 */
        c.neg = !c.neg;                                      /* x + (-center) */
        v = ec_q_add53(v, c);
        v.exp += m->in_shift[f];                             /* * 2^in_shift */
        frame[f] = ec_q_rint_clip(v);
    }
    return EC_OK;
}

static uint32_t ecoc_features(const ec_model *model)
{
    return EC_CSTATE(ec_ecoc_state, model)->n_features; /* input and frame alike */
}

static uint32_t ecoc_decision_len(const ec_model *model)
{
    const ec_ecoc_state *m = EC_CSTATE(ec_ecoc_state, model);
    return m->n_columns + m->n_classes; /* symbols, then doubled distances */
}

const EC_ROM ec_kind_ops ec_ecoc_ops = {
    EC_KIND_ECOC, ecoc_open, ecoc_features, ecoc_features, ecoc_decision_len,
    ecoc_workspace_bytes, ecoc_infer
#if EC_WITH_PROTECT
    , ecoc_erasure_owner
#endif
};
