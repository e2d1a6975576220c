/*
 * ec_model.c - open an image of any kind and run it (dispatch on the kind).
 *
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
    case EC_KIND_PROTECTED_NB: s = ec_nb_open(&model->image, &model->u.nb); break;
    case EC_KIND_ECOC: s = ec_ecoc_open(&model->image, &model->u.ecoc); break;
    case EC_KIND_SSBC: s = ec_ssbc_open(&model->image, &model->u.ssbc); break;
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
    case EC_KIND_PROTECTED_NB: return model->u.nb.total_bits;
    case EC_KIND_ECOC: return model->u.ecoc.n_features;
    case EC_KIND_SSBC: return model->u.ssbc.n_features;
    default: return 0u;
    }
}

uint32_t ec_decision_len(const ec_model *model)
{
    if (model == NULL) return 0u;
    switch (model->kind) {
    case EC_KIND_PROTECTED_NB: return 1u;
    case EC_KIND_ECOC: return model->u.ecoc.n_columns + model->u.ecoc.n_classes;
    case EC_KIND_SSBC: return model->u.ssbc.n_bits + (model->u.ssbc.has_table ? 1u : 0u);
    default: return 0u;
    }
}

uint32_t ec_workspace_bytes(const ec_model *model)
{
    if (model == NULL) return 0u;
    switch (model->kind) {
    case EC_KIND_PROTECTED_NB: return 0u;
    case EC_KIND_ECOC: return ec_ecoc_workspace_bytes(&model->u.ecoc);
    case EC_KIND_SSBC: return ec_ssbc_workspace_bytes(&model->u.ssbc);
    default: return 0u;
    }
}

ec_status ec_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                   int64_t *decision, void *workspace, uint32_t workspace_bytes)
{
    if (model == NULL || frame == NULL || label == NULL || decision == NULL) return EC_ERR_ARG;
    switch (model->kind) {
    case EC_KIND_PROTECTED_NB: return ec_nb_infer(&model->u.nb, frame, label, decision);
    case EC_KIND_ECOC:
        return ec_ecoc_infer(&model->u.ecoc, frame, label, decision, workspace, workspace_bytes);
    case EC_KIND_SSBC:
        return ec_ssbc_infer(&model->u.ssbc, frame, label, decision, workspace, workspace_bytes);
    default: return EC_ERR_ARG;   /* not an opened model */
    }
}
