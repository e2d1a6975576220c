/*
 * ec_config.h - which model kinds the runtime compiles in.
 *
 * This default defines none, so edgecode_rt.h compiles in every kind and
 * ec_model_open accepts an image of any kind (link all of ec_nb.c,
 * ec_ecoc.c and ec_ssbc.c). `edgecode firmware` writes a copy naming the
 * model's kind only (say EC_WITH_ECOC 1): then only that kind's source file
 * is needed, and an image of another kind is refused with EC_ERR_KIND.
 * A -DEC_WITH_<KIND>=1 on the compiler's command line overrides this file.
 *
 * EC_WITH_FLOAT 1 (here or -DEC_WITH_FLOAT=1) adds ec_quantize_float and
 * ec_quantize_double (float and double raw features, computed in integers
 * from their IEEE bit patterns); without it no float type appears.
 */
#ifndef EC_CONFIG_H
#define EC_CONFIG_H
#endif /* EC_CONFIG_H */
