/*
 * ec_forest.c - tree forests (kind 4) on the device, the operations table
 * ec_forest_ops: open and verify an image in place, then walk every tree on
 * one frame and vote, bit for bit as firmware_sim.kinds.forest does
 * (docs/container_format.md, "Model kind forest").
 *
 * The format: decision nodes only, trees one after the other, each in
 * preorder, as narrow typed arrays read in place (node_feature uint8/16/32,
 * node_threshold int16, node_left/node_right one of uint8/16/32). A child
 * reference r names leaf r when r < L (the leaves: rows of leaf_value, or
 * the classes without it) and otherwise the node i + 1 + (r - L) after
 * node i; a root reference names a leaf, or the node r - L.
 *
 * forest_open checks the rules of check_forest (firmware_sim/kinds/forest.py)
 * except the metadata rule: one pass over the nodes with a stack of at most
 * FOREST_MAX_DEPTH pending right children (320 bytes) checks that every tree
 * starts at the next unused node and is laid out in preorder, so every node
 * is referenced exactly once, every reference points forward inside the
 * nodes, and no tree is deeper than 64 levels. A missing array or a wrong
 * dtype/shape is EC_ERR_SCHEMA; a broken rule is EC_ERR_RULE.
 *
 * forest_infer writes the leaf id of every tree to decision[0..T) and the
 * votes to decision[T..T+C) (int64: the number of trees, or the summed
 * quantized probabilities), and the first class with the most votes to
 * *label. No workspace. The walk is compiled once per (feature width,
 * reference width) pair; EC_FOREST_FEATURE_BYTES and EC_FOREST_REF_BYTES
 * (1, 2 or 4; ec_config.h or -D; `edgecode firmware` writes the model's)
 * keep only that pair, and an image of other widths is then refused with
 * EC_ERR_KIND (not compiled in). ec_forest_quantize is device.encode (the
 * affine quantizer of firmware_sim.ecoc.quantize_inputs).
 *
 * The kind's code in the container header is 4 (EC_KIND_FOREST below).
 * Image arrays are read in place through EC_ROM pointers (no copy).
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "ec_kind.h"
#include "ec_trees.h"

#define EC_KIND_FOREST 4u
#define FOREST_MAX_CLASSES 65535
#define FOREST_MAX_DEPTH EC_TREES_MAX_DEPTH
#ifndef EC_FOREST_FEATURE_BYTES
#define EC_FOREST_FEATURE_BYTES 0 /* 0: every width */
#endif
#ifndef EC_FOREST_REF_BYTES
#define EC_FOREST_REF_BYTES 0
#endif

/* the fields of an opened model (model->state) */
typedef struct {
    const EC_ROM uint64_t *in_center_bits; /* (d,) float64 centers, as bit patterns */
    const EC_ROM int8_t *in_shift;         /* (d,)                                  */
    ec_trees t;                            /* the nodes (ec_trees.h)                */
    const EC_ROM uint8_t *leaf_value;      /* (L, C) uint8/16, NULL: class leaves   */
    uint32_t n_classes;
    uint8_t leaf_bytes;
    uint8_t walk;                          /* index of the compiled walk (1..9)     */
} ec_forest_state;
EC_STATE_FITS(ec_forest_state);

#define FOREST_ANY(w, want) ((want) == 0 || (want) == (w))

/* ---- narrow unsigned arrays: ec_trees.h (shared with ECOC trees) -------- */
#define unsigned_bytes ec_trees_unsigned_bytes
#define rd_unsigned ec_trees_rd

/* ---- the walk, one per (feature, reference) width ------------------------ */

/* Walk from node `node` to a leaf: *leaf receives its id. A reference that
 * would leave the nodes (excluded by the layout rule) returns EC_ERR_RULE. */
#define FOREST_WALK(NAME, FT, RT)                                                         \
    static ec_status NAME(const ec_forest_state *m, const int16_t *q, uint32_t node,      \
                          uint32_t *leaf)                                                 \
    {                                                                                     \
        const EC_ROM FT *feat = (const EC_ROM FT *)(const EC_ROM void *)m->t.feature;     \
        const EC_ROM RT *left = (const EC_ROM RT *)(const EC_ROM void *)m->t.left;        \
        const EC_ROM RT *right = (const EC_ROM RT *)(const EC_ROM void *)m->t.right;      \
        const EC_ROM int16_t *thr = m->t.threshold;                                       \
        const uint32_t L = m->t.n_leaves, n = m->t.n_nodes;                               \
        for (;;) {                                                                        \
            uint32_t r = q[feat[node]] <= thr[node] ? (uint32_t)left[node]                \
                                                     : (uint32_t)right[node];             \
            if (r < L) {                                                                  \
                *leaf = r;                                                                \
                return EC_OK;                                                             \
            }                                                                             \
            if (r - L >= n - node - 1u)                                                   \
                return EC_ERR_RULE;                                                       \
            node += 1u + (r - L);                                                         \
        }                                                                                 \
    }

/* Every (index, feature type, reference type, feature bytes, reference bytes). */
#define FOREST_WALKS(X)                                                                   \
    X(1, uint8_t, uint8_t, 1, 1) X(2, uint8_t, uint16_t, 1, 2)                            \
    X(3, uint8_t, uint32_t, 1, 4) X(4, uint16_t, uint8_t, 2, 1)                           \
    X(5, uint16_t, uint16_t, 2, 2) X(6, uint16_t, uint32_t, 2, 4)                         \
    X(7, uint32_t, uint8_t, 4, 1) X(8, uint32_t, uint16_t, 4, 2)                          \
    X(9, uint32_t, uint32_t, 4, 4)

/* Is the walk of these widths compiled in (a constant: the optimizer drops the
 * others, and --gc-sections their code)? */
#define FOREST_WANTED(fb, rb) (FOREST_ANY(fb, EC_FOREST_FEATURE_BYTES) && \
                               FOREST_ANY(rb, EC_FOREST_REF_BYTES))

#define FOREST_DEFINE(i, FT, RT, fb, rb) FOREST_WALK(walk_##i, FT, RT)
FOREST_WALKS(FOREST_DEFINE)
#undef FOREST_DEFINE

/* The walk of this model's widths (0: not compiled in). */
static uint8_t walk_index(uint8_t feature_bytes, uint8_t ref_bytes)
{
#define FOREST_INDEX(i, FT, RT, fb, rb)                                                   \
    if (FOREST_WANTED(fb, rb) && feature_bytes == (fb) && ref_bytes == (rb))              \
        return (uint8_t)(i);
    FOREST_WALKS(FOREST_INDEX)
#undef FOREST_INDEX
    return 0u;
}

static ec_status walk(const ec_forest_state *m, const int16_t *q, uint32_t node, uint32_t *leaf)
{
#define FOREST_CALL(i, FT, RT, fb, rb)                                                    \
    if (FOREST_WANTED(fb, rb) && m->walk == (i))                                          \
        return walk_##i(m, q, node, leaf);
    FOREST_WALKS(FOREST_CALL)
#undef FOREST_CALL
    return EC_ERR_ARG; /* not an opened model */
}

/* ---- the operations ------------------------------------------------------- */

static ec_status forest_open(const ec_image *img, ec_model *model, uint32_t *n_classes)
{
    ec_forest_state *m = EC_STATE(ec_forest_state, model);
    ec_array a; /* one at a time: the open path's stack stays small */
    ec_status s;
    const EC_ROM uint64_t *center;
    uint32_t d, f;
    int32_t classes;

    /* rule 1: classes */
    if ((s = ec_image_require(img, EC_STR("n_classes"), EC_I32, 1u, &a)) != EC_OK)
        return s;
    if (a.shape[0] != 1u)
        return EC_ERR_SCHEMA;
    classes = *(const EC_ROM int32_t *)(const EC_ROM void *)a.data;
    if (classes < 1 || classes > FOREST_MAX_CLASSES)
        return EC_ERR_RULE;
    m->n_classes = (uint32_t)classes;
    /* rule 2: the input quantizer (host side; only finiteness matters here) */
    if ((s = ec_image_require(img, EC_STR("in_center"), EC_F64, 1u, &a)) != EC_OK)
        return s;
    d = a.shape[0];
    center = (const EC_ROM uint64_t *)(const EC_ROM void *)a.data;
    if (d < 1u)
        return EC_ERR_RULE;
    for (f = 0u; f < d; f++)
        if (((center[f] >> 52) & 0x7FFu) == 0x7FFu) /* NaN or infinity */
            return EC_ERR_RULE;
    if ((s = ec_image_require(img, EC_STR("in_shift"), EC_I8, 1u, &a)) != EC_OK)
        return s;
    if (a.shape[0] != d)
        return EC_ERR_SCHEMA;
    m->in_center_bits = center;
    m->in_shift = (const EC_ROM int8_t *)(const EC_ROM void *)a.data;
    /* rules 3 and 4: the trees' roots and decision nodes (ec_trees.h) */
    if ((s = ec_trees_open(img, 0u, &m->t)) != EC_OK)
        return s;
    if (m->t.n_trees < 1u)
        return EC_ERR_RULE;
    /* rule 5: the leaves (a shared table of quantized probabilities, or the classes) */
    m->leaf_value = NULL;
    m->leaf_bytes = 0u;
    if (ec_image_find(img, EC_STR("leaf_value"), &a) == EC_OK) {
        if (a.ndim != 2u || (a.dtype != EC_U8 && a.dtype != EC_U16) || a.shape[1] != m->n_classes)
            return EC_ERR_SCHEMA;
        if (a.shape[0] < 1u)
            return EC_ERR_RULE;
        m->leaf_value = a.data;
        m->leaf_bytes = unsigned_bytes(a.dtype);
        m->t.n_leaves = a.shape[0];
    } else {
        m->t.n_leaves = m->n_classes;
    }
    m->t.n_features = d;
    /* rules 6-8: features, references, preorder, depth */
    if (!ec_trees_layout_ok(&m->t))
        return EC_ERR_RULE;
    m->walk = walk_index(m->t.feature_bytes, m->t.ref_bytes);
    if (m->walk == 0u)
        return EC_ERR_KIND; /* these widths are not compiled in */
    *n_classes = m->n_classes;
    return EC_OK;
}

static uint32_t forest_workspace_bytes(const ec_model *model)
{
    (void)model; /* leaves and votes go straight into the decision buffer */
    return 0u;
}

static EC_AVR_WORKAROUND ec_status forest_infer(const ec_model *model, const int16_t *frame,
                                                int32_t *label, int64_t *decision,
                                                void *workspace, uint32_t workspace_bytes)
{
    const ec_forest_state *m = EC_CSTATE(ec_forest_state, model);
    uint32_t k, c, C, L;
    int64_t *votes, best;
    int32_t arg;
    (void)workspace;
    (void)workspace_bytes;
    C = m->n_classes;
    L = m->t.n_leaves;
    votes = decision + m->t.n_trees;
    for (c = 0u; c < C; c++)
        votes[c] = 0;
    for (k = 0u; k < m->t.n_trees; k++) {
        uint32_t leaf = rd_unsigned(m->t.root, m->t.root_bytes, k);
        if (leaf >= L) {
            ec_status s;
            if (leaf - L >= m->t.n_nodes) /* excluded by the layout rule */
                return EC_ERR_RULE;
            s = walk(m, frame, leaf - L, &leaf);
            if (s != EC_OK)
                return s;
        }
        decision[k] = (int64_t)leaf;
#if EC_WITH_PROTECT
        if (EC_ERASED(model, k))
            continue; /* erased by a detected upset: out of the vote */
#endif
        if (m->leaf_value == NULL) {
            votes[leaf] += 1;
        } else {
            const uint32_t row = leaf * C; /* < L C: inside the image */
            if (m->leaf_bytes == 1u)
                for (c = 0u; c < C; c++)
                    votes[c] += m->leaf_value[row + c];
            else
                for (c = 0u; c < C; c++)
                    votes[c] += ((const EC_ROM uint16_t *)(const EC_ROM void *)m->leaf_value)
                        [row + c];
        }
    }
    arg = 0;
    best = votes[0];
    for (c = 1u; c < C; c++)
        if (votes[c] > best) {
            best = votes[c];
            arg = (int32_t)c;
        }
    *label = arg;
    return EC_OK;
}

#if EC_WITH_PROTECT
/* image protection's fallback (ForestDevice.erasure_owners): a detected
   leaf_value element reads 0; a detected node_threshold erases the tree
   holding the node (trees in preorder: tree k owns the nodes from its first
   node to the next tree's; the largest start <= the node wins, a later tree
   on a tie; a node before every start has no tree) */
static ec_status forest_erasure_owner(const ec_image *img, const EC_ROM uint8_t *entry,
                                      uint32_t element, int32_t *unit)
{
    ec_array thr, roots, a;
    int64_t n_leaves = 0, best = -1;
    uint32_t k;
    *unit = -1;
    if (ec_entry_is(entry, "leaf_value")) return EC_OK;
    if (!ec_entry_is(entry, "node_threshold") ||
        ec_image_find(img, EC_STR("tree_root"), &roots) != EC_OK)
        return EC_ERR_UPSET;
    (void)ec_image_find(img, EC_STR("node_threshold"), &thr);
    if (ec_image_find(img, EC_STR("leaf_value"), &a) == EC_OK && a.ndim == 2u)
        n_leaves = a.shape[0];
    else if (ec_image_find(img, EC_STR("n_classes"), &a) == EC_OK && a.nbytes != 0u)
        n_leaves = ec_array_int(&a, 0u);
    {
        uint32_t n = ec_array_count(&thr), nr = ec_array_count(&roots);
        for (k = 0u; k < nr; k++) {
            int64_t st = ec_array_int(&roots, k) - n_leaves;
            if (ec_array_int(&roots, k) < n_leaves || st >= (int64_t)n) continue;
            if (st <= (int64_t)element && st >= best) {
                best = st;
                *unit = (int32_t)k;
            }
        }
    }
    return EC_OK;
}
#endif

ec_quantize_fn ec_forest_quantize;

/* q_f = clip(rint((x_f - in_center_f) 2^in_shift_f), +-32767), the subtraction
 * rounded as IEEE double does: firmware_sim.ecoc.quantize_inputs */
ec_status ec_forest_quantize(const ec_model *model, const void *x, int type, int16_t *frame)
{
    const ec_forest_state *m = EC_CSTATE(ec_forest_state, model);
    uint32_t f;
    ec_exact v = {0u, 0, 0}, c = {0u, 0, 0};
    for (f = 0; f < m->t.n_features; f++) {
        if (!ec_q_input(x, type, f, &v))
            return EC_ERR_INPUT;
    }
    for (f = 0; f < m->t.n_features; f++) {
        (void)ec_q_input(x, type, f, &v);
        (void)ec_q_from_binary64(m->in_center_bits[f], &c); /* finite: rule 2 */
        c.neg = !c.neg;                                      /* x + (-center) */
        v = ec_q_add53(v, c);
        v.exp += m->in_shift[f];                             /* * 2^in_shift */
        frame[f] = ec_q_rint_clip(v);
    }
    return EC_OK;
}

static uint32_t forest_features(const ec_model *model)
{
    return EC_CSTATE(ec_forest_state, model)->t.n_features; /* input and frame alike */
}

static uint32_t forest_decision_len(const ec_model *model)
{
    const ec_forest_state *m = EC_CSTATE(ec_forest_state, model);
    return m->t.n_trees + m->n_classes; /* leaves, then votes */
}

const EC_ROM ec_kind_ops ec_forest_ops = {
    EC_KIND_FOREST, forest_open, forest_features, forest_features, forest_decision_len,
    forest_workspace_bytes, forest_infer
#if EC_WITH_PROTECT
    , forest_erasure_owner
#endif
};
