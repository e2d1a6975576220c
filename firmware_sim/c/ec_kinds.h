/*
 * ec_kinds.h - the kind table: the model kinds the runtime knows.
 *
 * One entry per kind: its switch, its operations table and its quantizer
 * (ec_kind.h says what they are; the kind's own source file defines both).
 * A kind is compiled in when EC_ALL_KINDS is 1 or its switch EC_WITH_<KIND>
 * is 1 (ec_config.h); its source file must then be linked. Adding a kind is
 * writing ec_<kind>.c and adding its entry here. ec_model.c and
 * ec_quantize.c include this file with EC_KIND_ENTRY(ops, quantize) defined
 * as they need (declarations, then the elements of their tables).
 */
#if EC_ALL_KINDS || (defined(EC_WITH_NB) && EC_WITH_NB)
EC_KIND_ENTRY(ec_nb_ops, ec_nb_quantize)       /* protected naive Bayes (1): ec_nb.c */
#endif
#if EC_ALL_KINDS || (defined(EC_WITH_ECOC) && EC_WITH_ECOC)
EC_KIND_ENTRY(ec_ecoc_ops, ec_ecoc_quantize)   /* ECOC ensembles (2): ec_ecoc.c */
#endif
#if EC_ALL_KINDS || (defined(EC_WITH_SSBC) && EC_WITH_SSBC)
EC_KIND_ENTRY(ec_ssbc_ops, ec_ssbc_quantize)   /* spectral binary codes (3): ec_ssbc.c */
#endif
#if EC_ALL_KINDS || (defined(EC_WITH_FOREST) && EC_WITH_FOREST)
EC_KIND_ENTRY(ec_forest_ops, ec_forest_quantize)   /* tree forests (4): ec_forest.c */
#endif
