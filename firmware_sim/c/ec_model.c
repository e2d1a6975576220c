/*
 * ec_model.c - open an image of any kind and run it (dispatch on the kind).
 *
 * Only the kinds compiled in (EC_WITH_<KIND>, edgecode_rt.h) are dispatched to.
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "edgecode_rt.h"

/* Names in __classes__: its NUL bytes (ec_image_open checked it ends with one). */
static uint32_t ec_count_names(const ec_image *img)
{
    uint32_t i, n = 0u;
    for (i = 0; i < img->class_names_bytes; i++) n += img->class_names[i] == 0u ? 1u : 0u;
    return n;
}

ec_status ec_model_open(const uint8_t *buf, size_t size, ec_model *model)
{
    ec_status s;
    uint32_t classes = 0u;     /* the kind's class count; 0: any number of names */
    if (buf == NULL || model == NULL) return EC_ERR_ARG;
    model->kind = 0u;
    model->n_class_names = 0u;
    s = ec_image_open(buf, size, &model->image);
    if (s != EC_OK) return s;
    switch (model->image.kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB:
        s = ec_nb_open(&model->image, &model->u.nb);
        classes = 2u;
        break;
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC:
        s = ec_ecoc_open(&model->image, &model->u.ecoc);
        classes = model->u.ecoc.n_classes;
        break;
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC:
        s = ec_ssbc_open(&model->image, &model->u.ssbc);
        if (s == EC_OK && model->u.ssbc.has_table) classes = (uint32_t)model->u.ssbc.n_classes;
        break;
#endif
#if EC_WITH_FOREST
    case EC_KIND_FOREST:
        s = ec_forest_open(&model->image, &model->u.forest);
        classes = model->u.forest.n_classes;
        break;
#endif
    default: s = EC_ERR_KIND; break;
    }
    if (s != EC_OK) return s;
    /* the class names: one per class, when the kind has classes (the rule of
       check_class_names in firmware_sim/_validation.py) */
    if (model->image.class_names != NULL) {
        uint32_t names = ec_count_names(&model->image);
        if (classes != 0u && names != classes) return EC_ERR_RULE;
        model->n_class_names = names;
    }
    model->kind = model->image.kind;
    return EC_OK;
}

uint32_t ec_class_count(const ec_model *model)
{
    if (model == NULL || model->kind == 0u) return 0u;
    return model->n_class_names;
}

const char *ec_class_name(const ec_model *model, int32_t label)
{
    const uint8_t *p;
    uint32_t k;
    if (model == NULL || model->kind == 0u || label < 0 ||
        (uint32_t)label >= model->n_class_names)
        return NULL;
    p = model->image.class_names;
    for (k = 0u; k < (uint32_t)label; k++) {   /* skip `label` NUL-terminated names */
        while (*p != 0u) p++;
        p++;
    }
    return (const char *)(const void *)p;
}

uint32_t ec_frame_width(const ec_model *model)
{
    if (model == NULL) return 0u;
    switch (model->kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: return model->u.nb.total_bits;
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

uint32_t ec_decision_len(const ec_model *model)
{
    if (model == NULL) return 0u;
    switch (model->kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: return 1u;
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC: return model->u.ecoc.n_columns + model->u.ecoc.n_classes;
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC: return model->u.ssbc.n_bits + (model->u.ssbc.has_table ? 1u : 0u);
#endif
#if EC_WITH_FOREST
    case EC_KIND_FOREST: return model->u.forest.n_trees + model->u.forest.n_classes;
#endif
    default: return 0u;
    }
}

uint32_t ec_workspace_bytes(const ec_model *model)
{
    if (model == NULL) return 0u;
    switch (model->kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: return 0u;
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC: return ec_ecoc_workspace_bytes(&model->u.ecoc);
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC: return ec_ssbc_workspace_bytes(&model->u.ssbc);
#endif
#if EC_WITH_FOREST
    case EC_KIND_FOREST: return ec_forest_workspace_bytes(&model->u.forest);
#endif
    default: return 0u;
    }
}

ec_status ec_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                   int64_t *decision, void *workspace, uint32_t workspace_bytes)
{
    if (model == NULL || frame == NULL || label == NULL || decision == NULL) return EC_ERR_ARG;
    (void)workspace;          /* unused when only NB is compiled in */
    (void)workspace_bytes;
    switch (model->kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: return ec_nb_infer(&model->u.nb, frame, label, decision);
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC:
        return ec_ecoc_infer(&model->u.ecoc, frame, label, decision, workspace, workspace_bytes);
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC:
        return ec_ssbc_infer(&model->u.ssbc, frame, label, decision, workspace, workspace_bytes);
#endif
#if EC_WITH_FOREST
    case EC_KIND_FOREST: return ec_forest_infer(&model->u.forest, frame, label, decision);
#endif
    default: return EC_ERR_ARG;   /* not an opened model */
    }
}
