/*
 * no_symbols: a shared library that exports neither `ilrewrite_abi_version` nor
 * `ilrewrite_method_create`: not an instrumentation method library at all.
 */
int no_symbols_answer(void);

int no_symbols_answer(void) { return 42; }
