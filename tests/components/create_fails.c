/*
 * create_fails: a library of the right ABI version whose `ilrewrite_method_create`
 * fails with a message (and fills nothing of the method table).
 */
#include <string.h>

#include "ilrewrite_method.h"

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *host, ilr_method *method, ilr_error *error) {
    (void)host;
    (void)method;
    static const char text[] = "create_fails: no licence for this machine";
    size_t n = sizeof text - 1;
    if (n > error->capacity)
        n = error->capacity;
    memcpy(error->data, text, n);
    error->length = n;
    return ILR_E_FAILED;
}
