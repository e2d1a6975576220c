/*
 * ec_forest.c - tree forests (kind 4) on the device: open and verify an image
 * in place, then walk every tree on one frame and vote, bit for bit as
 * firmware_sim.kinds.forest does (docs/container_format.md, "Model kind
 * forest").
 *
 * The format: decision nodes only, trees one after the other, each in
 * preorder, as narrow typed arrays read in place (node_feature uint8/16/32,
 * node_threshold int16, node_left/node_right one of uint8/16/32). A child
 * reference r names leaf r when r < L (the leaves: rows of leaf_value, or
 * the classes without it) and otherwise the node i + 1 + (r - L) after
 * node i; a root reference names a leaf, or the node r - L.
 *
 * ec_forest_open checks the rules of check_forest (firmware_sim/kinds/
 * forest.py) except the metadata rule: one pass over the nodes with a stack
 * of at most EC_FOREST_MAX_DEPTH pending right children (320 bytes) checks
 * that every tree starts at the next unused node and is laid out in
 * preorder, so every node is referenced exactly once, every reference
 * points forward inside the nodes, and no tree is deeper than 64 levels.
 * A missing array or a wrong dtype/shape is EC_ERR_SCHEMA; a broken rule is
 * EC_ERR_RULE.
 *
 * ec_forest_infer writes the leaf id of every tree to decision[0..T) and
 * the votes to decision[T..T+C) (int64: the number of trees, or the summed
 * quantized probabilities), and the first class with the most votes to
 * *label. No workspace. The walk is compiled once per (feature width,
 * reference width) pair; EC_FOREST_FEATURE_BYTES and EC_FOREST_REF_BYTES
 * (1, 2 or 4; ec_config.h or -D) keep only the model's own pair, and an
 * image of other widths is then refused with EC_ERR_KIND (not compiled in).
 *
 * Image arrays are read through pointers into the image only (no copy).
 * C99, <stdint.h>/<stddef.h> only, no floats, no recursion, no malloc.
 */
#include "edgecode_rt.h"

#define EC_FOREST_MAX_CLASSES 65535
#ifndef EC_FOREST_FEATURE_BYTES
#define EC_FOREST_FEATURE_BYTES 0 /* 0: every width */
#endif
#ifndef EC_FOREST_REF_BYTES
#define EC_FOREST_REF_BYTES 0
#endif

#define EC_FW_ANY(w, want) ((want) == 0 || (want) == (w))

/* ---- narrow unsigned arrays ---------------------------------------------- */

/* Bytes of an unsigned dtype code (uint8/16/32), 0 for any other. */
static uint8_t unsigned_bytes(uint8_t dtype)
{
    return dtype == EC_U8 ? 1u : dtype == EC_U16 ? 2u : dtype == EC_U32 ? 4u : 0u;
}

/* Entry i of a uint8/16/32 array of `bytes` bytes per entry (the image is
 * little-endian and aligned: typed reads). */
static uint32_t rd_unsigned(const uint8_t *p, uint8_t bytes, uint32_t i)
{
    if (bytes == 1u)
        return p[i];
    if (bytes == 2u)
        return ((const uint16_t *)(const void *)p)[i];
    return ((const uint32_t *)(const void *)p)[i];
}

/* A 1-d array of uint8/16/32 called `name`; *bytes receives its width. */
static ec_status get_unsigned(const ec_image *img, const char *name, ec_array *a, uint8_t *bytes)
{
    if (ec_image_find(img, name, a) != EC_OK || a->ndim != 1u)
        return EC_ERR_SCHEMA;
    *bytes = unsigned_bytes(a->dtype);
    return *bytes != 0u ? EC_OK : EC_ERR_SCHEMA;
}

/* ---- the walk, one per (feature, reference) width ------------------------ */

/* Walk from node `node` to a leaf: *leaf receives its id. A reference that
 * would leave the nodes (excluded by the layout rule) returns EC_ERR_RULE. */
#define EC_FOREST_WALK(NAME, FT, RT)                                                      \
    static ec_status NAME(const ec_forest_model *m, const int16_t *q, uint32_t node,      \
                          uint32_t *leaf)                                                 \
    {                                                                                     \
        const FT *feat = (const FT *)(const void *)m->node_feature;                      \
        const RT *left = (const RT *)(const void *)m->node_left;                         \
        const RT *right = (const RT *)(const void *)m->node_right;                       \
        const int16_t *thr = m->node_threshold;                                           \
        const uint32_t L = m->n_leaves, n = m->n_nodes;                                   \
        for (;;) {                                                                        \
            uint32_t r = q[feat[node]] <= thr[node] ? (uint32_t)left[node]               \
                                                     : (uint32_t)right[node];            \
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
#define EC_FOREST_WALKS(X)                                                                \
    X(1, uint8_t, uint8_t, 1, 1) X(2, uint8_t, uint16_t, 1, 2)                            \
    X(3, uint8_t, uint32_t, 1, 4) X(4, uint16_t, uint8_t, 2, 1)                           \
    X(5, uint16_t, uint16_t, 2, 2) X(6, uint16_t, uint32_t, 2, 4)                         \
    X(7, uint32_t, uint8_t, 4, 1) X(8, uint32_t, uint16_t, 4, 2)                          \
    X(9, uint32_t, uint32_t, 4, 4)

/* Is the walk of these widths compiled in (a constant: the optimizer drops the
 * others, and --gc-sections their code)? */
#define EC_FW_WANTED(fb, rb) (EC_FW_ANY(fb, EC_FOREST_FEATURE_BYTES) && \
                              EC_FW_ANY(rb, EC_FOREST_REF_BYTES))

#define EC_FW_DEFINE(i, FT, RT, fb, rb) EC_FOREST_WALK(walk_##i, FT, RT)
EC_FOREST_WALKS(EC_FW_DEFINE)

/* The walk of this model's widths (0: not compiled in). */
static uint8_t walk_index(uint8_t feature_bytes, uint8_t ref_bytes)
{
#define EC_FW_INDEX(i, FT, RT, fb, rb)                                                    \
    if (EC_FW_WANTED(fb, rb) && feature_bytes == (fb) && ref_bytes == (rb))               \
        return (uint8_t)(i);
    EC_FOREST_WALKS(EC_FW_INDEX)
#undef EC_FW_INDEX
    return 0u;
}

static ec_status walk(const ec_forest_model *m, const int16_t *q, uint32_t node, uint32_t *leaf)
{
#define EC_FW_CALL(i, FT, RT, fb, rb)                                                     \
    if (EC_FW_WANTED(fb, rb) && m->walk == (i))                                           \
        return walk_##i(m, q, node, leaf);
    EC_FOREST_WALKS(EC_FW_CALL)
#undef EC_FW_CALL
    return EC_ERR_ARG; /* not an opened model */
}

/* ---- rules 6-8: the preorder layout in one pass --------------------------- */

static int layout_ok(const ec_forest_model *m)
{
    uint32_t st_node[EC_FOREST_MAX_DEPTH]; /* nodes whose right child is pending */
    uint8_t st_level[EC_FOREST_MAX_DEPTH];
    const uint32_t L = m->n_leaves, n = m->n_nodes, d = m->n_features;
    const uint8_t fb = m->feature_bytes, rb = m->ref_bytes;
    uint32_t pos = 0u, k;
    for (k = 0u; k < m->n_trees; k++) {
        uint32_t r = rd_unsigned(m->tree_root, m->root_bytes, k), cur, level = 1u, sp = 0u;
        if (r < L)
            continue;
        if (r - L != pos)
            return 0;
        cur = pos;
        for (;;) {
            uint32_t lr, rr;
            if (cur >= n || level > EC_FOREST_MAX_DEPTH)
                return 0;
            if (rd_unsigned(m->node_feature, fb, cur) >= d)
                return 0;
            pos = cur + 1u;
            lr = rd_unsigned(m->node_left, rb, cur);
            rr = rd_unsigned(m->node_right, rb, cur);
            if (rr >= L) { /* sp < level <= EC_FOREST_MAX_DEPTH: one entry per level */
                st_node[sp] = cur;
                st_level[sp] = (uint8_t)(level + 1u);
                sp++;
            }
            if (lr >= L) {
                if (lr != L)
                    return 0;
                cur = pos;
                level++;
                continue;
            }
            if (sp == 0u)
                break;
            sp--;
            /* the pending right child must be the node after the left subtree */
            if ((uint64_t)st_node[sp] + 1u +
                    (uint64_t)(rd_unsigned(m->node_right, rb, st_node[sp]) - L) != (uint64_t)pos)
                return 0;
            cur = pos;
            level = st_level[sp];
        }
    }
    return pos == n;
}

/* ---- ec_forest_open --------------------------------------------------------- */

static void clear_model(ec_forest_model *m)
{
    m->n_features = m->n_classes = m->n_trees = m->n_nodes = m->n_leaves = 0u;
    m->in_center_bits = 0;
    m->in_shift = 0;
    m->tree_root = m->node_feature = m->node_left = m->node_right = m->leaf_value = 0;
    m->node_threshold = 0;
    m->root_bytes = m->feature_bytes = m->ref_bytes = m->leaf_bytes = 0u;
    m->walk = 0u;
}

static ec_status open_checked(const ec_image *img, ec_forest_model *m)
{
    ec_array a; /* one at a time: the open path's stack stays small */
    ec_status s;
    const uint64_t *center;
    uint32_t d, f, n;
    int32_t n_classes;
    uint8_t bytes;

    /* rule 1: classes */
    if ((s = ec_image_require(img, "n_classes", EC_I32, 1u, &a)) != EC_OK)
        return s;
    if (a.shape[0] != 1u)
        return EC_ERR_SCHEMA;
    n_classes = ((const int32_t *)(const void *)a.data)[0];
    if (n_classes < 1 || n_classes > EC_FOREST_MAX_CLASSES)
        return EC_ERR_RULE;
    m->n_classes = (uint32_t)n_classes;
    /* rule 2: the input quantizer (host side; only finiteness matters here) */
    if ((s = ec_image_require(img, "in_center", EC_F64, 1u, &a)) != EC_OK)
        return s;
    d = a.shape[0];
    center = (const uint64_t *)(const void *)a.data;
    if (d < 1u)
        return EC_ERR_RULE;
    for (f = 0u; f < d; f++)
        if (((center[f] >> 52) & 0x7FFu) == 0x7FFu) /* NaN or infinity */
            return EC_ERR_RULE;
    if ((s = ec_image_require(img, "in_shift", EC_I8, 1u, &a)) != EC_OK)
        return s;
    if (a.shape[0] != d)
        return EC_ERR_SCHEMA;
    m->in_center_bits = center;
    m->in_shift = (const int8_t *)(const void *)a.data;
    m->n_features = d;
    /* rule 3: trees */
    if ((s = get_unsigned(img, "tree_root", &a, &m->root_bytes)) != EC_OK)
        return s;
    m->tree_root = a.data;
    m->n_trees = a.shape[0];
    if (m->n_trees < 1u)
        return EC_ERR_RULE;
    /* rule 4: the decision nodes */
    if ((s = get_unsigned(img, "node_feature", &a, &m->feature_bytes)) != EC_OK)
        return s;
    m->node_feature = a.data;
    n = a.shape[0];
    m->n_nodes = n;
    if ((s = ec_image_require(img, "node_threshold", EC_I16, 1u, &a)) != EC_OK)
        return s;
    if (a.shape[0] != n)
        return EC_ERR_SCHEMA;
    m->node_threshold = (const int16_t *)(const void *)a.data;
    if ((s = get_unsigned(img, "node_left", &a, &m->ref_bytes)) != EC_OK)
        return s;
    if (a.shape[0] != n)
        return EC_ERR_SCHEMA;
    m->node_left = a.data;
    if ((s = get_unsigned(img, "node_right", &a, &bytes)) != EC_OK)
        return s;
    if (a.shape[0] != n)
        return EC_ERR_SCHEMA;
    if (bytes != m->ref_bytes)
        return EC_ERR_RULE;
    m->node_right = a.data;
    /* rule 5: the leaves (a shared table of quantized probabilities, or the classes) */
    if (ec_image_find(img, "leaf_value", &a) == EC_OK) {
        if (a.ndim != 2u || (a.dtype != EC_U8 && a.dtype != EC_U16) || a.shape[1] != m->n_classes)
            return EC_ERR_SCHEMA;
        if (a.shape[0] < 1u)
            return EC_ERR_RULE;
        m->leaf_value = a.data;
        m->leaf_bytes = unsigned_bytes(a.dtype);
        m->n_leaves = a.shape[0];
    } else {
        m->n_leaves = m->n_classes;
    }
    /* rules 6-8: features, references, preorder, depth */
    if (!layout_ok(m))
        return EC_ERR_RULE;
    m->walk = walk_index(m->feature_bytes, m->ref_bytes);
    return m->walk != 0u ? EC_OK : EC_ERR_KIND; /* these widths are not compiled in */
}

ec_status ec_forest_open(const ec_image *img, ec_forest_model *m)
{
    ec_status s;
    if (img == 0 || m == 0)
        return EC_ERR_ARG;
    clear_model(m);
    if (img->kind != EC_KIND_FOREST)
        return EC_ERR_KIND;
    s = open_checked(img, m);
    if (s != EC_OK)
        clear_model(m);
    return s;
}

/* ---- inference -------------------------------------------------------------- */

uint32_t ec_forest_workspace_bytes(const ec_forest_model *m)
{
    (void)m; /* leaves and votes go straight into the decision buffer */
    return 0u;
}

ec_status ec_forest_infer(const ec_forest_model *m, const int16_t *frame, int32_t *label,
                          int64_t *decision)
{
    uint32_t k, c, C, L;
    int64_t *votes, best;
    int32_t arg;
    if (m == 0 || frame == 0 || label == 0 || decision == 0 || m->walk == 0u)
        return EC_ERR_ARG;
    C = m->n_classes;
    L = m->n_leaves;
    votes = decision + m->n_trees;
    for (c = 0u; c < C; c++)
        votes[c] = 0;
    for (k = 0u; k < m->n_trees; k++) {
        uint32_t leaf = rd_unsigned(m->tree_root, m->root_bytes, k);
        if (leaf >= L) {
            ec_status s;
            if (leaf - L >= m->n_nodes) /* excluded by the layout rule */
                return EC_ERR_RULE;
            s = walk(m, frame, leaf - L, &leaf);
            if (s != EC_OK)
                return s;
        }
        decision[k] = (int64_t)leaf;
        if (m->leaf_value == 0) {
            votes[leaf] += 1;
        } else {
            const size_t row = (size_t)leaf * C;
            if (m->leaf_bytes == 1u)
                for (c = 0u; c < C; c++)
                    votes[c] += m->leaf_value[row + c];
            else
                for (c = 0u; c < C; c++)
                    votes[c] += ((const uint16_t *)(const void *)m->leaf_value)[row + c];
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
