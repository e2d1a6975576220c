/*
 * ec_kind.h - what a model kind's source file implements and may use.
 *
 * A kind is one source file (ec_nb.c, ec_ecoc.c, ec_ssbc.c, ...) that
 * defines its operations table `const EC_ROM ec_kind_ops ec_<kind>_ops` and
 * its quantizer `ec_quantize_fn ec_<kind>_quantize`, plus one entry in the
 * kind table (ec_kinds.h). ec_model.c dispatches every
 * call of the API through the table of the image's kind; nothing else in the
 * runtime names a kind. The kind keeps its fields (pointers into the image,
 * sizes) in model->state, viewed through its own struct type (EC_STATE).
 *
 * Not part of the API: integrators include edgecode_rt.h only.
 */
#ifndef EC_KIND_H
#define EC_KIND_H

#include "edgecode_rt.h"

/* Raw feature types of ec_quantize / _float / _double. */
enum { EC_IN_I32 = 0, EC_IN_F32 = 1, EC_IN_F64 = 2 };

struct ec_kind_ops {
    uint16_t kind;  /* the container header's kind code */
    /* Verify the kind's schema and every consistency rule on the opened image
     * and fill model->state. *n_classes: the number of class names the image
     * must hold when it has any (0: any number). Called only for an image of
     * this kind; on failure the model is left unopened. */
    ec_status (*open)(const ec_image *img, ec_model *model, uint32_t *n_classes);
    /* raw features ec_quantize reads, int16 values per frame, decision
     * integers per frame, workspace bytes ec_infer needs (a multiple of 8) */
    uint32_t (*input_width)(const ec_model *model);
    uint32_t (*frame_width)(const ec_model *model);
    uint32_t (*decision_len)(const ec_model *model);
    uint32_t (*workspace_bytes)(const ec_model *model);
    /* One frame: the label and decision[0 .. decision_len), as firmware_sim's
     * device.infer (arguments checked non-NULL by ec_infer). */
    ec_status (*infer)(const ec_model *model, const int16_t *frame, int32_t *label,
                       int64_t *decision, void *workspace, uint32_t workspace_bytes);
#if EC_WITH_PROTECT
    /* Image protection's fallback (firmware_sim's erasure_owners): element
     * `element` of the array whose table entry is `entry` was detected bad
     * and is about to read 0; *unit receives the unit that inference then
     * leaves out (an ECOC learner, a forest tree), or -1 when reading 0 is
     * the whole fallback. EC_ERR_UPSET: the array has no fallback. Called
     * before the kind's opener (on the corrected arrays). NULL: no fallback. */
    ec_status (*erasure_owner)(const ec_image *img, const EC_ROM uint8_t *entry,
                               uint32_t element, int32_t *unit);
#endif
};

/* The kind's quantizer, ec_<kind>_quantize (its second name in the kind
 * table; not in the operations table, so that a firmware that never calls
 * ec_quantize drops it with --gc-sections): raw features x (of type EC_IN_*)
 * to the frame, as device.encode; every input is checked before the frame is
 * written (EC_ERR_INPUT leaves it untouched). */
typedef ec_status ec_quantize_fn(const ec_model *model, const void *x, int type,
                                 int16_t *frame);

/* The alignment of int64_t (8 on 32- and 64-bit cores, 1 on AVR): what
 * ec_infer asks of the workspace. */
typedef struct {
    char c;
    int64_t v;
} ec_align_int64;
#define EC_ALIGN_INT64 ((uintptr_t)offsetof(ec_align_int64, v))

/* EC_STR("name"): a string constant in ROM (the array names the openers
 * look up), of type const EC_ROM char *: on AVR a static __flash array (a
 * literal would be copied into RAM), elsewhere the literal itself. */
#if defined(EC_ROM_IS_FLASH)
#define EC_STR(s) (__extension__({ static const EC_ROM char ec_str_[] = s; &ec_str_[0]; }))
#else
#define EC_STR(s) (s)
#endif

/* EC_NARROW 1 (default): ECOC linear scores and SSBC affinities take the
 * narrowest exact arithmetic the image allows (docs/firmware.md, "Narrow
 * arithmetic"); 0 forces the 64-bit paths (the tests compare the two). */
#ifndef EC_NARROW
#define EC_NARROW 1
#endif

/* avr-gcc 5.4 (Debian's gcc-avr) crashes in its induction-variable pass on
 * some loops over __flash data (an internal compiler error): the functions
 * concerned carry EC_AVR_WORKAROUND, which turns that pass off for them. */
#if defined(__AVR__) && defined(__GNUC__)
#define EC_AVR_WORKAROUND __attribute__((optimize("no-ivopts")))
#else
#define EC_AVR_WORKAROUND
#endif

/* ec_count: the entry count of an array of the image, or an index into it.
 * Every array lies inside the image and the image inside the address space
 * (ec_image_open refuses a total_size above SIZE_MAX), so size_t holds it:
 * 16 bits on AVR (whose __flash reaches 64 KB: one-register loop counters),
 * 32 or 64 elsewhere. Values read from the image stay uint32_t until checked
 * against such a count. */
typedef size_t ec_count;

/* EC_NOINLINE: a helper kept out of its caller. On 8-bit cores a big
 * function whose 32-bit values outnumber the registers spills them to the
 * stack at every use; its parts as separate functions keep theirs in
 * registers, which is smaller (and seldom slower on the open path). */
#if defined(__GNUC__)
#define EC_NOINLINE __attribute__((noinline))
#else
#define EC_NOINLINE
#endif

/* The wire protection layer (ec_wire.c, issue 27): compiled in with every kind
 * (EC_ALL_KINDS) or when the firmware's ec_config.h sets EC_WITH_WIRE. */
#ifndef EC_WITH_WIRE
#define EC_WITH_WIRE EC_ALL_KINDS
#endif
#if EC_WITH_WIRE
ec_status ec_wire_open(ec_model *model, uint32_t n_features);
ec_status ec_wire_decode(const ec_model *model, uint32_t n_features, const int16_t *bits,
                         int16_t *frame);
void ec_wire_repeat(const ec_model *model, uint32_t n_features, int16_t *frame);
#endif

#if EC_WITH_PROTECT
/* ec_protect.c: check __protect__ and decode it (rw: the image's bytes,
   writable, or NULL for a read-only image); EC_OK when there is none */
ec_status ec_protect_open(ec_model *model, uint8_t *rw);
/* unit u (an ECOC learner, a forest tree) was erased at open */
#define EC_ERASED(model, u) \
    ((model)->n_erased != 0u && (u) < (uint32_t)EC_PROTECT_UNITS && \
     ((model)->erased[(u) >> 3] >> ((u) & 7u)) & 1u)
/* the name of a table entry is `s` (for the kinds' erasure_owner) */
int ec_entry_is(const EC_ROM uint8_t *entry, const char *s);
/* element i of a 1-d integer array of any integer dtype, as int64 */
int64_t ec_array_int(const ec_array *a, uint32_t i);
/* its number of elements */
uint32_t ec_array_count(const ec_array *a);
#endif

/* The kind table (ec_model.c): the operations of a compiled-in kind, NULL
 * for any other code. */
const EC_ROM ec_kind_ops *ec_kind_find(uint32_t kind);

/* The kind's fields in model->state: EC_STATE(ec_nb_state, model) is an
 * `ec_nb_state *` (EC_CSTATE: a const one). The storage is only ever accessed
 * through that one type. EC_STATE_FITS(type) fails to compile when the fields
 * outgrow the room (raise EC_STATE_POINTERS / EC_STATE_BYTES then). */
#define EC_STATE(type, model) ((type *)(void *)&(model)->state)
#define EC_CSTATE(type, model) ((const type *)(const void *)&(model)->state)
#define EC_STATE_FITS(type) \
    typedef char type##_fits_ec_kind_state[sizeof(type) <= sizeof(ec_kind_state) ? 1 : -1]

/* ---- exact arithmetic for the quantizers (ec_quantize.c) ---------------- */
/* (-1)^neg * mant * 2^exp */
typedef struct {
    uint64_t mant;
    int32_t exp;
    int neg;
} ec_exact;

/* input i of x (of type EC_IN_*) as an exact value; 0 if not finite (or a
   float type without EC_WITH_FLOAT) */
int ec_q_input(const void *x, int type, uint32_t i, ec_exact *v);
/* an IEEE binary64 bit pattern; 0 if NaN or infinite */
int ec_q_from_binary64(uint64_t u, ec_exact *v);
/* number of significant bits of v (0 for 0) */
uint32_t ec_q_bit_length(uint64_t v);
/* round the significand to `bits` significant bits, ties to even */
void ec_q_round_sig(ec_exact *v, uint32_t bits);
/* a + b rounded to 53 significant bits, ties to even: the IEEE double sum of
   two values exact in double (significands below 2^53) */
ec_exact ec_q_add53(ec_exact a, ec_exact b);
/* clip(rint(v), -32767, 32767), rint half to even (mant < 2^63) */
int16_t ec_q_rint_clip(ec_exact v);

#endif /* EC_KIND_H */
