/*
 * ec_trees.h - the compact tree node format that kind forest (ec_forest.c)
 * and the tree learners of kind ecoc (ec_ecoc.c) share (issue 26;
 * docs/container_format.md, "Model kind forest", rules 3, 4 and 6-8):
 *
 *   tree_root     (T,) uint8/16/32   a leaf id r < L, or the node r - L
 *   node_feature  (n,) uint8/16/32   feature tested at a decision node
 *   node_threshold(n,) int16         go left iff q[feature] <= threshold
 *   node_left/_right (n,) one of uint8/16/32: the leaf r < L, else the node
 *                                    i + 1 + (r - L) after node i
 *
 * Decision nodes only, each tree in preorder right after the previous one.
 * L is the kind's: the forest's leaves (rows of leaf_value, or its classes),
 * the ECOC code's N symbols. Static inline functions of the including kind
 * file (no link unit of its own: a firmware compiles only what its kind uses).
 *
 * Not part of the API.
 */
#ifndef EC_TREES_H
#define EC_TREES_H

#include "ec_kind.h"

#define EC_TREES_MAX_DEPTH 64

typedef struct {
    const EC_ROM uint8_t *root;      /* (n_trees,)                         */
    const EC_ROM uint8_t *feature;   /* (n_nodes,)                         */
    const EC_ROM int16_t *threshold; /* (n_nodes,)                         */
    const EC_ROM uint8_t *left, *right; /* (n_nodes,) one dtype            */
    ec_count n_trees, n_nodes, n_leaves, n_features;
    uint8_t root_bytes, feature_bytes, ref_bytes;
} ec_trees;

/* Bytes of an unsigned dtype code (uint8/16/32), 0 for any other. */
static inline uint8_t ec_trees_unsigned_bytes(uint8_t dtype)
{
    return dtype == EC_U8 ? 1u : dtype == EC_U16 ? 2u : dtype == EC_U32 ? 4u : 0u;
}

/* Entry i of a uint8/16/32 array of `bytes` bytes per entry (the image is
 * little-endian and aligned: typed reads). */
static inline uint32_t ec_trees_rd(const EC_ROM uint8_t *p, uint8_t bytes, ec_count i)
{
    if (bytes == 1u)
        return p[i];
    if (bytes == 2u)
        return ((const EC_ROM uint16_t *)(const EC_ROM void *)p)[i];
    return ((const EC_ROM uint32_t *)(const EC_ROM void *)p)[i];
}

/* The widths an including kind file may fix before including this header
 * (1, 2 or 4; 0: any, read at run time): EC_TREES_ROOT_BYTES,
 * EC_TREES_FEATURE_BYTES, EC_TREES_REF_BYTES. A fixed width makes every read
 * of that array one typed load; the kind's opener refuses an image of
 * another width (EC_ERR_KIND: not compiled in). */
#ifndef EC_TREES_ROOT_BYTES
#define EC_TREES_ROOT_BYTES 0
#endif
#ifndef EC_TREES_FEATURE_BYTES
#define EC_TREES_FEATURE_BYTES 0
#endif
#ifndef EC_TREES_REF_BYTES
#define EC_TREES_REF_BYTES 0
#endif
/* Entry i of p, `fixed` bytes wide (a constant), else `bytes` wide. */
#define EC_TREES_RD(p, fixed, bytes, i)                                               \
    ((fixed) == 1 ? (uint32_t)(p)[i]                                                  \
     : (fixed) == 2 ? (uint32_t)((const EC_ROM uint16_t *)(const EC_ROM void *)(p))[i] \
     : (fixed) == 4 ? ((const EC_ROM uint32_t *)(const EC_ROM void *)(p))[i]          \
     : ec_trees_rd(p, bytes, i))
#define EC_TREES_ROOT(t, i) EC_TREES_RD((t)->root, EC_TREES_ROOT_BYTES, (t)->root_bytes, i)
#define EC_TREES_FEATURE(t, i)                                                        \
    EC_TREES_RD((t)->feature, EC_TREES_FEATURE_BYTES, (t)->feature_bytes, i)
#define EC_TREES_LEFT(t, i) EC_TREES_RD((t)->left, EC_TREES_REF_BYTES, (t)->ref_bytes, i)
#define EC_TREES_RIGHT(t, i) EC_TREES_RD((t)->right, EC_TREES_REF_BYTES, (t)->ref_bytes, i)
/* 1 if the widths of t are the ones fixed (or any). */
#define EC_TREES_WIDTHS_OK(t)                                                         \
    ((EC_TREES_ROOT_BYTES == 0 || (t)->root_bytes == EC_TREES_ROOT_BYTES) &&          \
     (EC_TREES_FEATURE_BYTES == 0 || (t)->feature_bytes == EC_TREES_FEATURE_BYTES) && \
     (EC_TREES_REF_BYTES == 0 || (t)->ref_bytes == EC_TREES_REF_BYTES))

/* A 1-d array of uint8/16/32 called `name`; *bytes receives its width. */
static inline ec_status ec_trees_get_unsigned(const ec_image *img, const EC_ROM char *name,
                                       ec_array *a, uint8_t *bytes)
{
    if (ec_image_find(img, name, a) != EC_OK || a->ndim != 1u)
        return EC_ERR_SCHEMA;
    *bytes = ec_trees_unsigned_bytes(a->dtype);
    return *bytes != 0u ? EC_OK : EC_ERR_SCHEMA;
}

/* Rules 3 and 4: the arrays, their dtypes and shapes (n_trees 0: any number
 * of trees, else exactly that many); EC_ERR_SCHEMA or EC_ERR_RULE (the two
 * reference dtypes differ). n_leaves and n_features are the caller's. */
static inline ec_status ec_trees_open(const ec_image *img, ec_count n_trees, ec_trees *t)
{
    ec_array a; /* one at a time: the open path's stack stays small */
    ec_status s;
    ec_count n;
    uint8_t bytes;
    if ((s = ec_trees_get_unsigned(img, EC_STR("tree_root"), &a, &t->root_bytes)) != EC_OK)
        return s;
    if (n_trees != 0u && a.shape[0] != n_trees)
        return EC_ERR_SCHEMA;
    t->root = a.data;
    t->n_trees = a.shape[0];
    if ((s = ec_trees_get_unsigned(img, EC_STR("node_feature"), &a, &t->feature_bytes)) != EC_OK)
        return s;
    t->feature = a.data;
    n = a.shape[0];
    t->n_nodes = n;
    if ((s = ec_image_require(img, EC_STR("node_threshold"), EC_I16, 1u, &a)) != EC_OK)
        return s;
    if (a.shape[0] != n)
        return EC_ERR_SCHEMA;
    t->threshold = (const EC_ROM int16_t *)(const EC_ROM void *)a.data;
    if ((s = ec_trees_get_unsigned(img, EC_STR("node_left"), &a, &t->ref_bytes)) != EC_OK)
        return s;
    if (a.shape[0] != n)
        return EC_ERR_SCHEMA;
    t->left = a.data;
    if ((s = ec_trees_get_unsigned(img, EC_STR("node_right"), &a, &bytes)) != EC_OK)
        return s;
    if (a.shape[0] != n)
        return EC_ERR_SCHEMA;
    if (bytes != t->ref_bytes)
        return EC_ERR_RULE;
    t->right = a.data;
    return EC_OK;
}

/* Rules 6-8 in one pass over the nodes, with a stack of at most
 * EC_TREES_MAX_DEPTH pending right children (320 bytes): every tree starts
 * at the next unused node and is laid out in preorder, so every node is
 * referenced exactly once, every reference points forward inside the nodes,
 * no tree is deeper than 64 levels, and every feature id is below
 * n_features; the nodes end with the last tree. 1 if so. */
static inline EC_AVR_WORKAROUND int ec_trees_layout_ok(const ec_trees *m)
{
    ec_count st_node[EC_TREES_MAX_DEPTH]; /* nodes whose right child is pending */
    uint8_t st_level[EC_TREES_MAX_DEPTH];
    const ec_count L = m->n_leaves, n = m->n_nodes, d = m->n_features;
    ec_count pos = 0u, k;
    for (k = 0u; k < m->n_trees; k++) {
        uint32_t r = EC_TREES_ROOT(m, k); /* image values: uint32 until checked */
        ec_count cur, level = 1u, sp = 0u;
        if (r < L)
            continue;
        if (r - L != pos)
            return 0;
        cur = pos;
        for (;;) {
            uint32_t lr, rr;
            if (cur >= n || level > EC_TREES_MAX_DEPTH)
                return 0;
            if (EC_TREES_FEATURE(m, cur) >= d)
                return 0;
            pos = cur + 1u;
            lr = EC_TREES_LEFT(m, cur);
            rr = EC_TREES_RIGHT(m, cur);
            if (rr >= L) { /* sp < level <= EC_TREES_MAX_DEPTH: one entry per level */
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
            /* the pending right child must be the node after the left subtree:
               its reference r - L is pos - 1 - st_node (pos > st_node: the left
               subtree's nodes were visited; 32-bit, no sum that could wrap) */
            if (EC_TREES_RIGHT(m, st_node[sp]) - L != pos - 1u - st_node[sp])
                return 0;
            cur = pos;
            level = st_level[sp];
        }
    }
    return pos == n;
}

/* The leaf id tree k reaches on frame q (any widths: the kinds with a hot
 * loop specialise it). A reference leaving the nodes (excluded by the
 * layout rule) gives n_leaves. */
static inline uint32_t ec_trees_walk(const ec_trees *m, const int16_t *q, ec_count k)
{
    const ec_count L = m->n_leaves, n = m->n_nodes;
    uint32_t r = EC_TREES_ROOT(m, k);
    ec_count node;
    if (r < L)
        return r;
    node = r - L;
    for (;;) {
        if (node >= n)
            return L;
        r = q[EC_TREES_FEATURE(m, node)] <= m->threshold[node]
                ? EC_TREES_LEFT(m, node)
                : EC_TREES_RIGHT(m, node);
        if (r < L)
            return r;
        node += 1u + (r - L);
    }
}

#endif /* EC_TREES_H */
