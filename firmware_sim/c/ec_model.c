/*
 * ec_model.c - open an image of any kind compiled in and run it: every call
 * goes through the operations table of the image's kind (the kind table,
 * ec_kinds.h; ec_kind.h says what a kind implements).
 *
 * <stdint.h>/<stddef.h> only; no allocation, no recursion, no floating point.
 */
#include "ec_kind.h"

/* the kinds compiled in (ec_kinds.h, selected by ec_config.h) */
#define EC_KIND_ENTRY(ops, quantize) extern const EC_ROM ec_kind_ops ops;
#include "ec_kinds.h"
#undef EC_KIND_ENTRY

#define EC_KIND_ENTRY(ops, quantize) &ops,
static const EC_ROM ec_kind_ops *const EC_ROM ec_kind_table[] = {
#include "ec_kinds.h"
    NULL   /* the end (and an element when no kind is compiled in) */
};
#undef EC_KIND_ENTRY

const EC_ROM ec_kind_ops *ec_kind_find(uint32_t kind)
{
    uint32_t i;
    for (i = 0; ec_kind_table[i] != NULL; i++) {
        if (ec_kind_table[i]->kind == kind) return ec_kind_table[i];
    }
    return NULL;
}

/* Names in __classes__: its NUL bytes (ec_image_open checked it ends with one). */
static uint32_t ec_count_names(const ec_image *img)
{
    const EC_ROM uint8_t *p = img->class_names, *end = p + img->class_names_bytes;
    uint32_t n = 0u;
    for (; p != end; p++) n += *p == 0u;
    return n;
}

#if EC_WITH_PROTECT
static ec_status ec_model_open_any(const EC_ROM uint8_t *buf, uint32_t size, ec_model *model,
                                   uint8_t *rw)
#else
ec_status ec_model_open(const EC_ROM uint8_t *buf, uint32_t size, ec_model *model)
#endif
{
    ec_status s;
    const EC_ROM ec_kind_ops *ops;
    uint32_t classes = 0u;     /* the kind's class count; 0: any number of names */
    if (buf == NULL || model == NULL) return EC_ERR_ARG;
    model->kind = 0u;
    model->ops = NULL;
    model->n_class_names = 0u;
    model->wire_copies = NULL;
    model->wire_bits = 0u;
    s = ec_image_open(buf, size, &model->image);
    if (s != EC_OK) return s;
    ops = ec_kind_find(model->image.kind);
    if (ops == NULL) return EC_ERR_KIND;    /* (ec_image_open refused it already) */
#if EC_WITH_PROTECT
    /* image protection: decoded before the kind's rules (they run on the
       corrected arrays, as in firmware_sim.load) */
    s = ec_protect_open(model, rw);
    if (s != EC_OK) return s;
#endif
    s = ops->open(&model->image, model, &classes);
    if (s != EC_OK) return s;
    if (ec_image_has(&model->image, EC_STR("__wire_copies__"))) {
#if EC_WITH_WIRE
        s = ec_wire_open(model, ops->frame_width(model));
        if (s != EC_OK) return s;
#else
        return EC_ERR_SCHEMA;   /* a wire-protected image: build with EC_WITH_WIRE */
#endif
    }
    /* the class names: one per class, when the kind has classes (the rule of
       check_class_names in firmware_sim/_validation.py) */
    if (model->image.class_names != NULL) {
        uint32_t names = ec_count_names(&model->image);
        if (classes != 0u && names != classes) return EC_ERR_RULE;
        model->n_class_names = names;
    }
    model->ops = ops;
    model->kind = model->image.kind;
    return EC_OK;
}

#if EC_WITH_PROTECT
ec_status ec_model_open(const EC_ROM uint8_t *buf, uint32_t size, ec_model *model)
{
    return ec_model_open_any(buf, size, model, NULL);
}

#if !defined(EC_ROM_IS_FLASH)
ec_status ec_model_open_rw(uint8_t *buf, uint32_t size, ec_model *model)
{
    return ec_model_open_any(buf, size, model, buf);
}
#endif
#endif

/* the operations of an opened model, else NULL */
static const EC_ROM ec_kind_ops *ec_ops(const ec_model *model)
{
    return model == NULL || model->kind == 0u ? NULL : model->ops;
}

uint32_t ec_class_count(const ec_model *model)
{
    return ec_ops(model) == NULL ? 0u : model->n_class_names;
}

const EC_ROM char *ec_class_name(const ec_model *model, int32_t label)
{
    const EC_ROM uint8_t *p;
    uint32_t k;
    if (ec_ops(model) == NULL || label < 0 || (uint32_t)label >= model->n_class_names)
        return NULL;
    p = model->image.class_names;
    for (k = 0u; k < (uint32_t)label; k++) {   /* skip `label` NUL-terminated names */
        while (*p != 0u) p++;
        p++;
    }
    return (const EC_ROM char *)(const EC_ROM void *)p;
}

uint32_t ec_input_width(const ec_model *model)
{
    const EC_ROM ec_kind_ops *ops = ec_ops(model);
    return ops == NULL ? 0u : ops->input_width(model);
}

uint32_t ec_frame_width(const ec_model *model)
{
    const EC_ROM ec_kind_ops *ops = ec_ops(model);
    if (ops != NULL && model->wire_bits != 0u) return model->wire_bits;
    return ops == NULL ? 0u : ops->frame_width(model);
}

/* workspace bytes in front of the kind's that hold the decoded frame (wire layer) */
static uint32_t ec_wire_front(const ec_model *model, const EC_ROM ec_kind_ops *ops)
{
    return model->wire_bits == 0u ? 0u : (2u * ops->frame_width(model) + 7u) / 8u * 8u;
}

uint32_t ec_decision_len(const ec_model *model)
{
    const EC_ROM ec_kind_ops *ops = ec_ops(model);
    return ops == NULL ? 0u : ops->decision_len(model);
}

uint32_t ec_workspace_bytes(const ec_model *model)
{
    const EC_ROM ec_kind_ops *ops = ec_ops(model);
    return ops == NULL ? 0u : ec_wire_front(model, ops) + ops->workspace_bytes(model);
}

ec_status ec_infer(const ec_model *model, const int16_t *frame, int32_t *label,
                   int64_t *decision, void *workspace, uint32_t workspace_bytes)
{
    const EC_ROM ec_kind_ops *ops = ec_ops(model);
    if (ops == NULL || frame == NULL || label == NULL || decision == NULL) return EC_ERR_ARG;
#if EC_WITH_WIRE
    if (model->wire_bits != 0u) {   /* majority-decode the wire bits in front of the workspace */
        uint32_t front = ec_wire_front(model, ops);
        ec_status s;
        if (workspace == NULL || workspace_bytes < front) return EC_ERR_WORKSPACE;
        s = ec_wire_decode(model, ops->frame_width(model), frame, (int16_t *)workspace);
        if (s != EC_OK) return s;
        return ops->infer(model, (const int16_t *)workspace, label, decision,
                          (void *)((unsigned char *)workspace + front), workspace_bytes - front);
    }
#endif
    return ops->infer(model, frame, label, decision, workspace, workspace_bytes);
}
