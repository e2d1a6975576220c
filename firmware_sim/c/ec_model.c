/*
 * ec_model.c - open an image of any kind and run it (dispatch on the kind).
 *
 * Only the kinds compiled in (EC_WITH_<KIND>, edgecode_rt.h) are dispatched to.
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "edgecode_rt.h"

ec_status ec_model_open(const uint8_t *buf, size_t size, ec_model *model)
{
    ec_status s;
    if (buf == NULL || model == NULL) return EC_ERR_ARG;
    model->kind = 0u;
    s = ec_image_open(buf, size, &model->image);
    if (s != EC_OK) return s;
    switch (model->image.kind) {
#if EC_WITH_NB
    case EC_KIND_PROTECTED_NB: s = ec_nb_open(&model->image, &model->u.nb); break;
#endif
#if EC_WITH_ECOC
    case EC_KIND_ECOC: s = ec_ecoc_open(&model->image, &model->u.ecoc); break;
#endif
#if EC_WITH_SSBC
    case EC_KIND_SSBC: s = ec_ssbc_open(&model->image, &model->u.ssbc); break;
#endif
    default: s = EC_ERR_KIND; break;
    }
    if (s != EC_OK) return s;
    model->kind = model->image.kind;
    return EC_OK;
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
    default: return EC_ERR_ARG;   /* not an opened model */
    }
}
