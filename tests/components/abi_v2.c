/*
 * abi_v2: a library that speaks another version of the ABI (2, where the host speaks 1).
 * The host must refuse it after reading `ilrewrite_abi_version`, before calling anything
 * of it: its `ilrewrite_method_create`, if ever called, writes the file the environment
 * variable ILR_TEST_MARKER names (so a test sees that it ran) and fails.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ilrewrite_method.h"

const uint32_t ilrewrite_abi_version = 2;

ilr_status ilrewrite_method_create(const ilr_host *host, ilr_method *method, ilr_error *error) {
    (void)host;
    (void)method;
    (void)error;
    const char *marker = getenv("ILR_TEST_MARKER");
    if (marker) {
        FILE *f = fopen(marker, "w");
        if (f) {
            fputs("abi_v2: ilrewrite_method_create was called\n", f);
            fclose(f);
        }
    }
    return ILR_E_FAILED;
}
