/*
 * ec_protect.c - image protection (`__protect__`, issue 27) in the C runtime:
 * the rules of the table and the four decoders (parity, SEC-DED, TMR, BCH),
 * bit for bit as firmware_sim/protection.py and firmware_sim/_bch.py
 * (docs/container_format.md, "Image protection").
 *
 * Compiled in with EC_WITH_PROTECT (every all-kinds build; `edgecode
 * firmware` sets it for a protected image only, so unprotected firmware does
 * not grow). ec_model.c calls ec_protect_open after ec_image_open and before
 * the kind's opener, so the kind's rules run on the corrected arrays, as in
 * firmware_sim.load:
 *
 *  - image in writable memory (ec_model_open_rw): a "scrub" in place. Pass 1
 *    corrects every correctable word / block (data and its check bits) and
 *    votes every TMR byte (the three copies rewritten); pass 2 (only when
 *    pass 1 met an uncorrectable word) finds the words that are still
 *    detected, asks the kind who owns each element they cover
 *    (ec_kind_ops.erasure_owner: an ECOC learner, a forest tree, or -1),
 *    sets the element to 0 and records the unit in model->erased, which the
 *    kind's inference reads (the learner left out of the Hamming distance,
 *    the tree out of the vote). An element of an array without a fallback
 *    refuses the image (EC_ERR_UPSET).
 *  - image in read-only memory (ec_model_open, the image in flash): the
 *    table is checked and every word decoded without writing; a word whose
 *    data needs a correction or an erasure refuses the image with
 *    EC_ERR_READONLY (open a RAM copy with ec_model_open_rw); upsets that
 *    touch only check bits or one TMR copy leave the data right and open.
 *
 * No table of GF(2^m) is stored: the field is computed (shift and reduce),
 * the generator g(x) is built at open from the primitive polynomials, and a
 * block is first checked by re-encoding its data (an LFSR over its bits:
 * the stored check bits equal x^r d(x) mod g(x) for a clean block); only a
 * block that differs gets syndromes, Berlekamp-Massey and a Chien search.
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "ec_kind.h"

#if EC_WITH_PROTECT

#define PR_ENTRY 4u
#define PR_NAME 32u
/* the largest BCH code this build decodes (edgecode_rt.h: EC_PROTECT_M_MAX,
   EC_PROTECT_T_MAX; the format allows m <= 13, t <= 32): they size the
   decoder's stack (at 13 and 32 about 700 bytes) */
#define PR_MMAX ((unsigned)EC_PROTECT_M_MAX)
#define PR_TMAX ((unsigned)EC_PROTECT_T_MAX)
#define PR_RMAX (PR_MMAX * PR_TMAX)          /* deg g <= m t <= 416 */
#define PR_GW ((PR_RMAX + 1u + 31u) / 32u)   /* 32-bit words of a polynomial of degree <= 416 */
#define PR_CMAX (2u * PR_TMAX + 2u)          /* Berlekamp-Massey's polynomials */

/* what a pass does: check the table only; decode without writing (an image
   in read-only memory); correct in place; erase what is still detected */
enum { PR_TABLE = 0, PR_CHECK = 1, PR_FIX = 2, PR_ERASE = 3 };

#if EC_PROTECT_BCH
static const EC_ROM uint16_t pr_primitive[14] = {
    0, 0, 0, 0xB, 0x13, 0x25, 0x43, 0x83, 0x11D, 0x211, 0x409, 0x805, 0x1053, 0x201B
};
#endif

static uint32_t pr_rd32(const EC_ROM uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static uint8_t pr_vote(uint8_t a, uint8_t b, uint8_t c)
{
    return (uint8_t)((a & b) | (a & c) | (b & c));
}

/* a table entry's name is `s` (NUL-terminated, < 32 characters) */
static int pr_name_is(const EC_ROM uint8_t *e, const char *s)
{
    unsigned i;
    for (i = 0; i < PR_NAME; i++) {
        if (e[i] != (uint8_t)s[i]) return 0;
        if (s[i] == '\0') return 1;
    }
    return 0;
}

/* the reserved arrays that protection indices skip (Container.arrays has
   neither __meta__, __classes__ nor __protect__) */
static int pr_reserved(const EC_ROM uint8_t *e)
{
    return e[0] == '_' && e[1] == '_' &&
           (pr_name_is(e, "__meta__") || pr_name_is(e, "__classes__") ||
            pr_name_is(e, "__protect__"));
}

static uint32_t pr_itemsize(uint8_t code)
{
    return code <= 2u ? 1u : code <= 4u ? 2u : (code <= 6u || code == 9u) ? 4u : 8u;
}

/* the protection context: the image, its writable twin, the table */
typedef struct {
    const ec_image *img;
    uint8_t *rw;                         /* the image's bytes, writable, or NULL */
    ec_model *model;
    const EC_ROM uint8_t *p;             /* __protect__                          */
    uint32_t psize;
    uint32_t n_names;                    /* arrays that indices count            */
    int mode;
    uint32_t pending;                    /* pass 1: words left detected          */
} pr_ctx;

/* table entry of the idx-th array protection counts (reserved names left out) */
static const EC_ROM uint8_t *pr_array(const pr_ctx *c, uint32_t idx)
{
    uint32_t i;
    const EC_ROM uint8_t *e = c->img->base + 32u;
    for (i = 0; i < c->img->n_arrays; i++, e += 64u) {
        if (pr_reserved(e)) continue;
        if (idx-- == 0u) return e;
    }
    return NULL;
}

static const EC_ROM uint8_t *pr_data(const pr_ctx *c, const EC_ROM uint8_t *e)
{
    return c->img->base + pr_rd32(e + 52);
}

/* ---- erasing an element --------------------------------------------------- */
static ec_status pr_erase(pr_ctx *c, const EC_ROM uint8_t *e, uint32_t element)
{
    int32_t unit = -1;
    uint32_t isz = pr_itemsize(e[32]), b;
    uint8_t *w;
    const EC_ROM ec_kind_ops *ops = ec_kind_find(c->img->kind);
    ec_status s;
    if (ops == NULL || ops->erasure_owner == NULL) return EC_ERR_UPSET;
    s = ops->erasure_owner(c->img, e, element, &unit);
    if (s != EC_OK) return s;
    w = c->rw + pr_rd32(e + 52) + element * isz;
    for (b = 0; b < isz; b++) w[b] = 0u;
    if (unit >= 0) {
        if ((uint32_t)unit >= (uint32_t)EC_PROTECT_UNITS) return EC_ERR_PROTECT;
        if (!(c->model->erased[(uint32_t)unit >> 3] & (1u << ((uint32_t)unit & 7u)))) {
            c->model->erased[(uint32_t)unit >> 3] |= (uint8_t)(1u << ((uint32_t)unit & 7u));
            c->model->n_erased++;
        }
    }
    return EC_OK;
}

/* bytes [lo, hi) of the stream over arrays first .. first + span - 1 were
   detected: erase every element they touch (an element is erased when any
   of its bytes is) */
static ec_status pr_erase_bytes(pr_ctx *c, uint32_t first, uint32_t span, uint32_t lo,
                                uint32_t hi)
{
    uint32_t a, start = 0u;
    for (a = 0; a < span && start < hi; a++) {
        const EC_ROM uint8_t *e = pr_array(c, first + a);
        uint32_t nb = pr_rd32(e + 56), end = start + nb;
        if (nb != 0u && lo < end && hi > start) {
            uint32_t isz = pr_itemsize(e[32]);
            uint32_t x0 = (lo > start ? lo : start) - start;
            uint32_t x1 = (hi < end ? hi : end) - start;   /* > x0 */
            uint32_t el;
            for (el = x0 / isz; el <= (x1 - 1u) / isz; el++) {
                ec_status s = pr_erase(c, e, el);
                if (s != EC_OK) return s;
            }
        }
        start = end;
    }
    return EC_OK;
}

/* ---- words: parity and SEC-DED -------------------------------------------- */
/* bit `pos` of a LSB-first bit stream */
static uint32_t pr_bits(const EC_ROM uint8_t *p, uint32_t pos, unsigned width)
{
    uint32_t v = 0u;
    unsigned i;
    for (i = 0; i < width; i++, pos++)
        v |= (uint32_t)((p[pos >> 3] >> (pos & 7u)) & 1u) << i;
    return v;
}

static void pr_put_bits(uint8_t *p, uint32_t pos, unsigned width, uint32_t v)
{
    unsigned i;
    for (i = 0; i < width; i++, pos++) {
        uint8_t m = (uint8_t)(1u << (pos & 7u));
        if ((v >> i) & 1u) p[pos >> 3] |= m;
        else p[pos >> 3] &= (uint8_t)~m;
    }
}

static unsigned pr_parity8(uint8_t x)
{
    x ^= (uint8_t)(x >> 4);
    x ^= (uint8_t)(x >> 2);
    x ^= (uint8_t)(x >> 1);
    return x & 1u;
}

/* Hamming syndrome of a word's bytes (data bit j at the j-th position in 3,
   5, 6, 7, 9, ... that is not a power of two), and its parity */
static uint32_t pr_syndrome(const uint8_t *wd, unsigned wb, unsigned *parity)
{
    uint32_t h = 0u, pos = 2u;
    unsigned b, i, par = 0u;
    for (b = 0; b < wb; b++) {
        uint8_t x = wd[b];
        par ^= pr_parity8(x);
        for (i = 0; i < 8u; i++) {
            do pos++; while ((pos & (pos - 1u)) == 0u);
            if ((x >> i) & 1u) h ^= pos;
        }
    }
    *parity = par;
    return h;
}

static unsigned pr_parity32(uint32_t v)
{
    return pr_parity8((uint8_t)(v ^ (v >> 8) ^ (v >> 16) ^ (v >> 24)));
}

/* check bits r (Hamming) of a word of wb bytes: 4, 5, 6, 7 */
static unsigned pr_hamming_r(unsigned wb)
{
    return wb == 1u ? 4u : wb == 2u ? 5u : wb == 4u ? 6u : 7u;
}

/* data bit at Hamming position s, or -1 (a power of two, 0, beyond the word) */
static int32_t pr_data_bit(uint32_t s, unsigned k)
{
    uint32_t pos = 2u;
    unsigned j;
    for (j = 0; j < k; j++) {
        do pos++; while ((pos & (pos - 1u)) == 0u);
        if (pos == s) return (int32_t)j;
        if (pos > s) return -1;
    }
    return -1;
}

/* Erasures are decided on the words (blocks) as read: zeroing a detected
 * word's elements may reach into the next words (an element wider than a
 * word, or straddling two BCH blocks), so the detection of every word such
 * an element touches is computed before it is zeroed. The flags of the
 * units [base, base + 128) ahead are kept here. */
typedef struct {
    uint32_t bits[4];
    uint32_t base, next;
} pr_window;

static void pr_win_init(pr_window *w)
{
    w->bits[0] = w->bits[1] = w->bits[2] = w->bits[3] = 0u;
    w->base = w->next = 0u;
}

static void pr_win_put(pr_window *w, int v)   /* the flag of unit w->next */
{
    uint32_t j = w->next++ - w->base;
    if (v) w->bits[j >> 5] |= (uint32_t)1 << (j & 31u);
}

static int pr_win_take(pr_window *w)          /* the flag of unit w->base, then advance */
{
    int v = (int)(w->bits[0] & 1u);
    unsigned i;
    for (i = 0; i < 3u; i++) w->bits[i] = (w->bits[i] >> 1) | (w->bits[i + 1u] << 31);
    w->bits[3] >>= 1;
    w->base++;
    return v;
}

/* word w of an array (parity: scheme 1, SEC-DED: 2): 1 when detected and not
   corrected, else 0; PR_FIX corrects it in place (data and check bits);
   PR_CHECK sets *st to EC_ERR_READONLY when its data would need a fix */
static int pr_word(pr_ctx *c, const EC_ROM uint8_t *data, uint32_t nbytes,
                   const EC_ROM uint8_t *chk, unsigned scheme, unsigned wb, uint32_t w,
                   ec_status *st)
{
    uint8_t wd[8];
    unsigned r = pr_hamming_r(wb), width = scheme == 1u ? 1u : r + 1u, k = 8u * wb, b, par;
    uint32_t at = w * wb, nb = nbytes - at < wb ? nbytes - at : wb, stored;
    uint32_t sh, s, lim;
    unsigned overall;
    int32_t bit;
    for (b = 0; b < wb; b++) wd[b] = b < nb ? data[at + b] : 0u;
    stored = pr_bits(chk, w * width, width);
    if (scheme == 1u) {                              /* parity: detects an odd count */
        par = 0u;
        for (b = 0; b < wb; b++) par ^= pr_parity8(wd[b]);
        return par != stored;
    }
    /* SEC-DED, as secded_decode: syndrome s, overall parity */
    sh = stored & ((1u << r) - 1u);
    s = pr_syndrome(wd, wb, &par) ^ sh;
    overall = par ^ pr_parity32(sh) ^ ((stored >> r) & 1u);
    lim = k + r + 2u;                                /* firmware_sim's lookup table size */
    bit = s < lim ? pr_data_bit(s, k) : -1;
    if (overall == 0u) return s != 0u;               /* clean, or two upsets */
    if (!(s == 0u || ((s & (s - 1u)) == 0u && s < lim) || bit >= 0))
        return 1;                                    /* a position beyond the word */
    if (c->mode == PR_CHECK && bit >= 0) *st = EC_ERR_READONLY;
    if (c->mode == PR_FIX) {                         /* one upset: correct it */
        uint32_t h;
        if (bit >= 0) {
            wd[(uint32_t)bit >> 3] ^= (uint8_t)(1u << ((uint32_t)bit & 7u));
            c->rw[(uint32_t)(data - c->img->base) + at + ((uint32_t)bit >> 3)] =
                wd[(uint32_t)bit >> 3];
        }
        h = pr_syndrome(wd, wb, &par);
        pr_put_bits(c->rw + (uint32_t)(chk - c->img->base), w * width, width,
                    h | ((uint32_t)(par ^ pr_parity32(h)) << r));
    }
    return 0;
}

static ec_status pr_words(pr_ctx *c, uint32_t idx, unsigned scheme, unsigned wb,
                          const EC_ROM uint8_t *chk)
{
    const EC_ROM uint8_t *e = pr_array(c, idx);
    const EC_ROM uint8_t *data = pr_data(c, e);
    uint32_t nbytes = pr_rd32(e + 56), nw = (nbytes + wb - 1u) / wb, w;
    uint32_t isz = pr_itemsize(e[32]);
    ec_status st = EC_OK;
    pr_window win;
    pr_win_init(&win);
    for (w = 0; w < nw; w++) {
        uint32_t at = w * wb, end = at + wb < nbytes ? at + wb : nbytes;
        if (c->mode != PR_ERASE) {
            int bad = pr_word(c, data, nbytes, chk, scheme, wb, w, &st);
            if (st != EC_OK) return st;
            if (bad) {
                if (c->mode == PR_CHECK) return EC_ERR_READONLY;
                c->pending++;
            }
            continue;
        }
        {   /* the words the elements of word w reach, decided before any is zeroed */
            uint32_t reach = (end + isz - 1u) / isz * isz;
            uint32_t last = ((reach < nbytes ? reach : nbytes) - 1u) / wb;
            while (win.next <= last) pr_win_put(&win, pr_word(c, data, nbytes, chk, scheme,
                                                              wb, win.next, &st));
        }
        if (pr_win_take(&win)) {
            st = pr_erase_bytes(c, idx, 1u, at, end);
            if (st != EC_OK) return st;
        }
    }
    return EC_OK;
}

/* ---- TMR --------------------------------------------------------------------- */
static ec_status pr_tmr(pr_ctx *c, uint32_t idx, const EC_ROM uint8_t *chk)
{
    const EC_ROM uint8_t *e = pr_array(c, idx);
    const EC_ROM uint8_t *data = pr_data(c, e);
    uint32_t n = pr_rd32(e + 56), i;
    for (i = 0; i < n; i++) {
        uint8_t a = data[i], b = chk[i], d = chk[n + i], v = pr_vote(a, b, d);
        if (v == a && v == b && v == d) continue;
        if (c->mode == PR_CHECK) {
            if (v != a) return EC_ERR_READONLY;
        } else if (c->mode == PR_FIX) {
            uint32_t o = (uint32_t)(chk - c->img->base);
            c->rw[(uint32_t)(data - c->img->base) + i] = v;
            c->rw[o + i] = v;
            c->rw[o + n + i] = v;
        }
    }
    return EC_OK;
}

/* ---- BCH --------------------------------------------------------------------- */
#if EC_PROTECT_BCH
typedef struct {
    unsigned m, t, r;
    uint32_t n, k;                      /* 2^m - 1, data bits per block          */
    uint16_t poly;                      /* the primitive polynomial              */
    uint32_t g[PR_GW];                  /* generator, bit i = coefficient of x^i */
} pr_bch;

static uint16_t pr_gf_mul(uint16_t a, uint16_t b, const pr_bch *q)
{
    uint16_t out = 0u, top = (uint16_t)(1u << q->m);
    while (b != 0u) {
        if (b & 1u) out ^= a;
        b >>= 1;
        a = (uint16_t)(a << 1);
        if (a & top) a ^= q->poly;
    }
    return out;
}

static uint16_t pr_gf_pow(uint32_t e, const pr_bch *q)   /* alpha^e */
{
    uint16_t x = 1u, base = 2u;
    e %= q->n;
    while (e != 0u) {
        if (e & 1u) x = pr_gf_mul(x, base, q);
        base = pr_gf_mul(base, base, q);
        e >>= 1;
    }
    return x;
}

/* the generator: the product of the minimal polynomials of alpha^1 .. alpha^2t
   (one per cyclotomic coset), as firmware_sim._bch.generator */
static void pr_bch_init(pr_bch *q, unsigned m, unsigned t)
{
    uint32_t i, j, w;
    unsigned deg = 0u;
    uint32_t seen[(2u * PR_TMAX + 1u + 31u) / 32u];
    q->m = m;
    q->t = t;
    q->n = (1u << m) - 1u;
    q->poly = pr_primitive[m];
    for (w = 0; w < (uint32_t)(sizeof seen / sizeof seen[0]); w++) seen[w] = 0u;
    for (w = 0; w < PR_GW; w++) q->g[w] = 0u;
    q->g[0] = 1u;
    for (i = 1; i <= 2u * t; i++) {
        uint16_t mp[PR_MMAX + 1u];            /* GF(2^m) coefficients, low first */
        unsigned len = 1u, l, dm;
        if (seen[i >> 5] & ((uint32_t)1 << (i & 31u))) continue;
        mp[0] = 1u;
        j = i;
        do {                                  /* mp *= (x + alpha^j) */
            uint16_t root = pr_gf_pow(j, q);
            mp[len] = 0u;
            for (l = len; l > 0u; l--) mp[l] = (uint16_t)(mp[l - 1u] ^ pr_gf_mul(mp[l], root, q));
            mp[0] = pr_gf_mul(mp[0], root, q);
            len++;
            if (j <= 2u * t) seen[j >> 5] |= (uint32_t)1 << (j & 31u);
            j = (2u * j) % q->n;
        } while (j != i);
        dm = len - 1u;                        /* g *= mp (binary coefficients) */
        {
            uint32_t prod[PR_GW];
            for (w = 0; w < PR_GW; w++) prod[w] = 0u;
            for (l = 0; l <= dm; l++) {
                if (!(mp[l] & 1u)) continue;
                for (w = 0; w <= deg; w++)    /* prod ^= g << l */
                    if (q->g[w >> 5] & ((uint32_t)1 << (w & 31u)))
                        prod[(w + l) >> 5] ^= (uint32_t)1 << ((w + l) & 31u);
            }
            for (w = 0; w < PR_GW; w++) q->g[w] = prod[w];
        }
        deg += dm;
    }
    q->r = deg;
    q->k = q->n - deg;
}

/* the stream of a span: bit `pos` of arrays first .. first + span - 1
   concatenated (a cursor walks it in order) */
typedef struct {
    const pr_ctx *c;
    uint32_t first, span, a;            /* current array                       */
    uint32_t start, nbytes;             /* its first stream byte, its bytes    */
    const EC_ROM uint8_t *data;
} pr_stream;

static void pr_stream_seek(pr_stream *s, uint32_t byte)
{
    if (byte < s->start) {
        s->a = 0u;
        s->start = 0u;
        s->nbytes = pr_rd32(pr_array(s->c, s->first) + 56);
        s->data = pr_data(s->c, pr_array(s->c, s->first));
    }
    while (byte >= s->start + s->nbytes && s->a + 1u < s->span) {
        const EC_ROM uint8_t *e;
        s->start += s->nbytes;
        s->a++;
        e = pr_array(s->c, s->first + s->a);
        s->nbytes = pr_rd32(e + 56);
        s->data = pr_data(s->c, e);
    }
}

static uint8_t pr_stream_byte(pr_stream *s, uint32_t byte)
{
    pr_stream_seek(s, byte);
    return s->data[byte - s->start];
}

/* x^r d(x) mod g(x) of data bits [b0, b0 + kb) of the stream, into rem */
static void pr_bch_encode(const pr_bch *q, pr_stream *s, uint32_t b0, uint32_t kb,
                          uint32_t *rem)
{
    uint32_t cur[PR_GW], j, w, nw = (q->r + 31u) / 32u;
    uint32_t topw = (q->r - 1u) >> 5, topb = (uint32_t)1 << ((q->r - 1u) & 31u);
    uint8_t byte = 0u;
    for (w = 0; w < PR_GW; w++) {
        rem[w] = 0u;
        cur[w] = q->g[w];                 /* x^r mod g = g - x^r: its low r bits */
    }
    if (q->r & 31u) cur[nw - 1u] &= ((uint32_t)1 << (q->r & 31u)) - 1u;
    for (j = 0; j < kb; j++) {
        uint32_t bit = b0 + j, top;
        if (j == 0u || (bit & 7u) == 0u) byte = pr_stream_byte(s, bit >> 3);
        if ((byte >> (bit & 7u)) & 1u)
            for (w = 0; w < nw; w++) rem[w] ^= cur[w];
        top = cur[topw] & topb;                    /* cur *= x mod g */
        for (w = nw; w-- > 1u;) cur[w] = (cur[w] << 1) | (cur[w - 1u] >> 31);
        cur[0] <<= 1;
        if (q->r & 31u) cur[nw - 1u] &= ((uint32_t)1 << (q->r & 31u)) - 1u;
        if (top) {                                 /* + (g - x^r): its low r bits */
            for (w = 0; w < nw; w++) cur[w] ^= q->g[w];
            if (q->r & 31u) cur[nw - 1u] &= ((uint32_t)1 << (q->r & 31u)) - 1u;
        }
    }
}

/* decode one block whose remainder rem (= c(x) mod g(x)) is not zero; on a
   correctable block, *nerr positions (0 .. r + kb - 1) go to err[] */
static int pr_bch_locate(const pr_bch *q, const uint32_t *rem, uint32_t length,
                         uint16_t *err, unsigned *nerr)
{
    uint16_t S[2u * PR_TMAX], C[PR_CMAX], B[PR_CMAX], T[PR_CMAX];
    unsigned i, j, L = 0u, shift = 1u, lenC = 1u, lenB = 1u, deg, found = 0u;
    uint16_t b = 1u;
    uint32_t pos;
    /* syndromes S_j = rem(alpha^j), j = 1 .. 2t: odd ones by Horner, even
       ones as squares (S_2j = S_j^2 for a binary word) */
    for (j = 1; j <= 2u * q->t; j++) {
        uint16_t v = 0u, aj;
        if ((j & 1u) == 0u) {
            S[j - 1u] = pr_gf_mul(S[j / 2u - 1u], S[j / 2u - 1u], q);
            continue;
        }
        aj = pr_gf_pow(j, q);
        for (pos = q->r; pos-- > 0u;) {
            v = pr_gf_mul(v, aj, q);
            if ((rem[pos >> 5] >> (pos & 31u)) & 1u) v ^= 1u;
        }
        S[j - 1u] = v;
    }
    /* Berlekamp-Massey: C(x) of length <= t + 1 while L <= t (longer: refuse) */
    C[0] = 1u;
    B[0] = 1u;
    for (i = 0; i < 2u * q->t; i++) {
        uint16_t d = S[i], coef;
        unsigned need;
        for (j = 1; j <= L && j < lenC; j++) d ^= pr_gf_mul(C[j], S[i - j], q);
        if (d == 0u) { shift++; continue; }
        {
            /* coef = d / b: b^-1 = b^(n - 1) (b != 0, its order divides n) */
            uint16_t inv = 1u, base = b;
            uint32_t e = q->n - 1u;
            while (e != 0u) {
                if (e & 1u) inv = pr_gf_mul(inv, base, q);
                base = pr_gf_mul(base, base, q);
                e >>= 1;
            }
            coef = pr_gf_mul(d, inv, q);
        }
        need = lenB + shift;
        if (need > PR_CMAX) return 0;                /* (never: need <= i + 2) */
        for (j = 0; j < lenC; j++) T[j] = C[j];
        {
            unsigned lenT = lenC;
            while (lenC < need) C[lenC++] = 0u;
            for (j = 0; j < lenB; j++) C[j + shift] ^= pr_gf_mul(coef, B[j], q);
            if (2u * L <= i) {
                L = i + 1u - L;
                for (j = 0; j < lenT; j++) B[j] = T[j];
                lenB = lenT;
                b = d;
                shift = 1u;
            } else shift++;
        }
    }
    while (lenC > 1u && C[lenC - 1u] == 0u) lenC--;
    deg = lenC - 1u;
    if (deg != L || L > q->t) return 0;
    /* Chien search: position i is in error iff C(alpha^-i) = 0 */
    {
        uint16_t term[PR_TMAX + 1u], step[PR_TMAX + 1u];
        for (j = 0; j <= deg; j++) {
            term[j] = C[j];
            step[j] = pr_gf_pow((q->n - (j % q->n)) % q->n, q);   /* alpha^-j */
        }
        for (pos = 0; pos < length; pos++) {
            uint16_t v = 0u;
            for (j = 0; j <= deg; j++) v ^= term[j];
            if (v == 0u) {
                if (found == deg) return 0;
                err[found++] = (uint16_t)pos;
            }
            for (j = 1; j <= deg; j++) term[j] = pr_gf_mul(term[j], step[j], q);
        }
    }
    if (found != deg) return 0;
    *nerr = found;
    return 1;
}

/* the remainder c(x) mod g(x) of block b (its data re-encoded, XOR its stored
   check bits): all zero for a codeword; returns whether any bit is set */
static int pr_bch_rem(const pr_bch *q, pr_stream *s, const EC_ROM uint8_t *cb, uint32_t b,
                      uint32_t nbits, uint32_t *rem)
{
    uint32_t b0 = b * q->k, kb = nbits - b0 < q->k ? nbits - b0 : q->k, i, any = 0u;
    pr_bch_encode(q, s, b0, kb, rem);
    for (i = 0; i < q->r; i++) {
        uint32_t at = b * q->r + i;
        if ((cb[at >> 3] >> (at & 7u)) & 1u) rem[i >> 5] ^= (uint32_t)1 << (i & 31u);
    }
    for (i = 0; i < (q->r + 31u) / 32u; i++) any |= rem[i];
    return any != 0u;
}

static ec_status pr_bch_span(pr_ctx *c, uint32_t idx, unsigned m, unsigned t, uint32_t span,
                             uint32_t nbytes, const EC_ROM uint8_t *chk)
{
    pr_bch q;
    pr_stream s;
    pr_window win;
    uint32_t nbits = 8u * nbytes, nb, b, rem[PR_GW];
    const EC_ROM uint8_t *cb = chk + 3;          /* the check stream, after the span */
    pr_bch_init(&q, m, t);
    nb = (nbits + q.k - 1u) / q.k;
    s.c = c;
    s.first = idx;
    s.span = span;
    s.a = 0u;
    s.start = 1u;                                /* past byte 0: the seek rewinds */
    s.nbytes = 0u;
    s.data = NULL;
    pr_stream_seek(&s, 0u);
    pr_win_init(&win);
    for (b = 0; b < nb; b++) {
        uint32_t b0 = b * q.k, kb = nbits - b0 < q.k ? nbits - b0 : q.k;
        if (c->mode == PR_ERASE) {
            /* a block still detected erases the elements it covers; the blocks
               those elements reach (up to 7 bytes on) are decided first */
            uint32_t lo = b0 >> 3, hi = (b0 + kb + 7u) >> 3, reach, last;
            if (hi > nbytes) hi = nbytes;
            reach = hi + 7u < nbytes ? hi + 7u : nbytes;
            last = (8u * reach - 1u) / q.k;
            while (win.next <= last) {
                pr_win_put(&win, pr_bch_rem(&q, &s, cb, win.next, nbits, rem));
            }
            if (pr_win_take(&win)) {
                ec_status st = pr_erase_bytes(c, idx, span, lo, hi);
                if (st != EC_OK) return st;
            }
            continue;
        }
        if (!pr_bch_rem(&q, &s, cb, b, nbits, rem)) continue;
        {
            uint16_t err[PR_TMAX];
            unsigned ne = 0u, x;
            if (pr_bch_locate(&q, rem, q.r + kb, err, &ne)) {
                for (x = 0; x < ne; x++) {
                    uint32_t at = err[x];
                    if (at < q.r) {                          /* a check bit */
                        if (c->mode == PR_FIX) {
                            uint32_t cbit = b * q.r + at;
                            c->rw[(uint32_t)(cb - c->img->base) + (cbit >> 3)] ^=
                                (uint8_t)(1u << (cbit & 7u));
                        }
                    } else {                                 /* a data bit */
                        uint32_t bit = b0 + at - q.r;
                        if (c->mode == PR_CHECK) return EC_ERR_READONLY;
                        pr_stream_seek(&s, bit >> 3);
                        c->rw[(uint32_t)(s.data - c->img->base) + (bit >> 3) - s.start] ^=
                            (uint8_t)(1u << (bit & 7u));
                    }
                }
                continue;
            }
            if (c->mode == PR_CHECK) return EC_ERR_READONLY;
            c->pending++;
        }
    }
    return EC_OK;
}

#endif /* EC_PROTECT_BCH */

/* ---- the table ---------------------------------------------------------- */
/* the voted entry `row` (4 bytes) */
static void pr_entry(const pr_ctx *c, uint32_t n, uint32_t row, uint8_t *out)
{
    unsigned i;
    uint32_t e = PR_ENTRY * n, o = 3u + PR_ENTRY * row;
    for (i = 0; i < PR_ENTRY; i++)
        out[i] = pr_vote(c->p[o + i], c->p[o + e + i], c->p[o + 2u * e + i]);
}

/* one pass over the entries: check them (as _parse_table and _layout) and run
   `mode` on each */
static ec_status pr_pass(pr_ctx *c)
{
    uint32_t n, row, need, last = 0u, pos;
    int first = 1;
    if (c->psize < 3u) return EC_ERR_PROTECT;
    n = pr_vote(c->p[0], c->p[1], c->p[2]);
    if (n == 0u) return EC_ERR_PROTECT;
    need = 3u + 3u * PR_ENTRY * n;
    if (c->psize < need) return EC_ERR_PROTECT;
    /* _parse_table: every entry, before any check byte is read */
    for (row = 0; row < n; row++) {
        uint8_t en[PR_ENTRY];
        pr_entry(c, n, row, en);
        if (en[0] >= c->n_names) return EC_ERR_PROTECT;
        if (!first && en[0] <= last) return EC_ERR_PROTECT;
        first = 0;
        last = en[0];
        if (en[1] < 1u || en[1] > 4u) return EC_ERR_PROTECT;
        if (en[1] == 4u) {
            unsigned hi;
            if (en[2] < 3u || en[2] > 13u) return EC_ERR_PROTECT;
            hi = (1u << (en[2] - 1u)) - 1u;
            if (hi > 32u) hi = 32u;
            if (en[3] < 1u || en[3] > hi) return EC_ERR_PROTECT;
            /* a code beyond this build's decoder (EC_PROTECT_M_MAX / _T_MAX) */
            if (en[2] > PR_MMAX || en[3] > PR_TMAX) return EC_ERR_PROTECT;
        } else if (en[2] > 3u || en[3] != 0u) return EC_ERR_PROTECT;
    }
    /* _layout: each entry's check bytes in turn; the length must be exact.
       32-bit arithmetic: pos <= psize < 2^32 throughout, and a size is
       compared with what is left before it is added */
    pos = need;
    for (row = 0; row < n; row++) {
        uint8_t en[PR_ENTRY];
        uint32_t idx, nbytes, size, left = c->psize - pos;
        pr_entry(c, n, row, en);
        idx = en[0];
        nbytes = pr_rd32(pr_array(c, idx) + 56);
        if (en[1] == 4u) {
#if EC_PROTECT_BCH
            uint32_t span, nxt, a, blocks;
            pr_bch q;
            if (left < 3u) return EC_ERR_PROTECT;
            span = pr_vote(c->p[pos], c->p[pos + 1u], c->p[pos + 2u]);
            if (row + 1u < n) {
                uint8_t nx[PR_ENTRY];
                pr_entry(c, n, row + 1u, nx);
                nxt = nx[0];
            } else nxt = c->n_names;
            if (span < 1u || span > nxt - idx) return EC_ERR_PROTECT;
            for (a = 1; a < span; a++) nbytes += pr_rd32(pr_array(c, idx + a) + 56);
            /* a stream of 2^29 bytes or more (bit indices beyond 32 bits) */
            if (nbytes >= 0x20000000u) return EC_ERR_PROTECT;
            pr_bch_init(&q, en[2], en[3]);
            blocks = (8u * nbytes + q.k - 1u) / q.k;
            /* 3 + ceil(blocks r / 8), compared without overflow */
            if (blocks > (left - 3u) / q.r * 8u + 8u) return EC_ERR_PROTECT;
            size = 3u + (blocks / 8u) * q.r + ((blocks % 8u) * q.r + 7u) / 8u;
            if (size > left) return EC_ERR_PROTECT;
            if (c->mode != PR_TABLE) {
                ec_status s = pr_bch_span(c, idx, en[2], en[3], span, nbytes, c->p + pos);
                if (s != EC_OK) return s;
            }
#else
            return EC_ERR_PROTECT;          /* BCH not compiled in (EC_PROTECT_BCH 0) */
#endif
        } else {
            unsigned wb = 1u << en[2];
            if (en[1] == 3u) {
                if (nbytes > left / 2u) return EC_ERR_PROTECT;
                size = 2u * nbytes;
            } else {
                uint32_t words = nbytes / wb + (nbytes % wb != 0u);
                unsigned width = en[1] == 1u ? 1u : pr_hamming_r(wb) + 1u;
                size = (words / 8u) * width + ((words % 8u) * width + 7u) / 8u;
            }
            if (size > left) return EC_ERR_PROTECT;
            if (c->mode != PR_TABLE) {
                ec_status s = en[1] == 3u ? pr_tmr(c, idx, c->p + pos)
                                          : pr_words(c, idx, en[1], wb, c->p + pos);
                if (s != EC_OK) return s;
            }
        }
        pos += size;
    }
    if (pos != c->psize) return EC_ERR_PROTECT;
    return EC_OK;
}

int ec_entry_is(const EC_ROM uint8_t *entry, const char *s)
{
    return pr_name_is(entry, s);
}

uint32_t ec_array_count(const ec_array *a)
{
    return a->nbytes / pr_itemsize(a->dtype);
}

int64_t ec_array_int(const ec_array *a, uint32_t i)
{
    const EC_ROM uint8_t *p = a->data;
    switch (a->dtype) {
    case EC_U8: return p[i];
    case EC_I8: return ((const EC_ROM int8_t *)(const EC_ROM void *)p)[i];
    case EC_U16: return ((const EC_ROM uint16_t *)(const EC_ROM void *)p)[i];
    case EC_I16: return ((const EC_ROM int16_t *)(const EC_ROM void *)p)[i];
    case EC_U32: return ((const EC_ROM uint32_t *)(const EC_ROM void *)p)[i];
    case EC_I32: return ((const EC_ROM int32_t *)(const EC_ROM void *)p)[i];
    case EC_I64: return ((const EC_ROM int64_t *)(const EC_ROM void *)p)[i];
    case EC_U64: return (int64_t)((const EC_ROM uint64_t *)(const EC_ROM void *)p)[i];
    default: return 0;
    }
}

ec_status ec_protect_open(ec_model *model, uint8_t *rw)
{
    pr_ctx c;
    uint32_t i;
    const EC_ROM uint8_t *e;
    ec_status s;
    c.img = &model->image;
    c.rw = rw;
    c.model = model;
    c.p = NULL;
    c.psize = 0u;
    c.n_names = 0u;
    c.pending = 0u;
    model->n_erased = 0u;
    for (i = 0; i < (uint32_t)sizeof model->erased; i++) model->erased[i] = 0u;
    for (i = 0, e = c.img->base + 32u; i < c.img->n_arrays; i++, e += 64u) {
        if (pr_name_is(e, "__protect__")) {
            c.p = c.img->base + pr_rd32(e + 52);
            c.psize = pr_rd32(e + 56);
        } else if (!pr_reserved(e)) c.n_names++;
    }
    if (c.p == NULL) return EC_OK;
    /* the whole table and layout first, so that a malformed table refuses the
       image before a byte is written (firmware_sim checks it all first too) */
    c.mode = PR_TABLE;
    s = pr_pass(&c);
    if (s != EC_OK) return s;
    c.mode = rw == NULL ? PR_CHECK : PR_FIX;
    s = pr_pass(&c);
    if (s != EC_OK || c.pending == 0u) return s;
    c.mode = PR_ERASE;
    return pr_pass(&c);
}

#endif /* EC_WITH_PROTECT */
