/*
 * ec_config.h - which model kinds the runtime compiles in.
 *
 * This default defines none, so edgecode_rt.h compiles in every kind and
 * ec_model_open accepts an image of any kind (link all of ec_nb.c,
 * ec_ecoc.c, ec_ssbc.c and ec_forest.c). `edgecode firmware` writes a copy
 * naming the model's kind only (say EC_WITH_ECOC 1): then only that kind's
 * source file is needed, and an image of another kind is refused with
 * EC_ERR_KIND. For a forest it also names the model's node widths
 * (EC_FOREST_FEATURE_BYTES, EC_FOREST_REF_BYTES: 1, 2 or 4), so that only
 * that walk is compiled in.
 * A -DEC_WITH_<KIND>=1 on the compiler's command line overrides this file.
 *
 * EC_WITH_FLOAT 1 (here or -DEC_WITH_FLOAT=1) adds ec_quantize_float and
 * ec_quantize_double (float and double raw features, computed in integers
 * from their IEEE bit patterns); without it no float type appears.
 */
#ifndef EC_CONFIG_H
#define EC_CONFIG_H
#endif /* EC_CONFIG_H */
