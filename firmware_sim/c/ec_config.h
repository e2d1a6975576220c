/*
 * ec_config.h - which model kinds the runtime compiles in.
 *
 * This default compiles in every kind of the kind table (ec_kinds.h), so
 * ec_model_open accepts an image of any kind: link every kind's source file
 * (ec_nb.c, ec_ecoc.c, ec_ssbc.c, ...). `edgecode firmware` writes a copy
 * naming the model's kind only (say EC_WITH_ECOC 1, EC_ALL_KINDS 0): then only
 * that kind's source file is needed, and an image of another kind is
 * refused with EC_ERR_KIND. On the compiler's command line,
 * -DEC_ALL_KINDS=0 -DEC_WITH_<KIND>=1 selects kinds with this file.
 *
 * EC_WITH_FLOAT 1 (here or -DEC_WITH_FLOAT=1) adds ec_quantize_float and
 * ec_quantize_double (float and double raw features, computed in integers
 * from their IEEE bit patterns); without it no float type appears.
 */
#ifndef EC_CONFIG_H
#define EC_CONFIG_H
#ifndef EC_ALL_KINDS
#define EC_ALL_KINDS 1
#endif
#endif /* EC_CONFIG_H */
