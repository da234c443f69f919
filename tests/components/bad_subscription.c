/*
 * bad_subscription: a library whose subscription the host must refuse at load. Which
 * one, the environment variable ILR_TEST_SUBSCRIPTION says (read in create):
 *
 *   get_rejit_parameters  GetReJITParameters, a callback the C ABI does not carry
 *   past_last             bit 95, one past the last callback (LoadAsNotificationOnly, 94)
 *   no_callback           ExceptionThrown, with no `callback` function
 *
 * Anything else (or nothing): ExceptionThrown, with a `callback` (accepted). Its
 * `destroy` writes `bad_subscription: destroyed` to stderr: the host calls it when it
 * refuses what `create` declared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilrewrite_method.h"

static void callback(void *self, uint32_t id, const uint64_t *args, uint32_t count,
                     int32_t *answer) {
    (void)self;
    (void)id;
    (void)args;
    (void)count;
    (void)answer;
}

static void destroy(void *self) {
    (void)self;
    fputs("bad_subscription: destroyed\n", stderr);
}

static void subscribe(ilr_method *m, uint32_t id) {
    m->callbacks[id / 64] |= 1ull << (id % 64);
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *host, ilr_method *m, ilr_error *error) {
    (void)host;
    (void)error;
    const char *which = getenv("ILR_TEST_SUBSCRIPTION");
    if (!which)
        which = "";
    m->name = "bad_subscription";
    m->destroy = destroy;
    m->callback = callback;
    if (strcmp(which, "get_rejit_parameters") == 0) {
        subscribe(m, ILR_CALLBACK_GET_REJIT_PARAMETERS);
    } else if (strcmp(which, "past_last") == 0) {
        subscribe(m, ILR_CALLBACK_LOAD_AS_NOTIFICATION_ONLY + 1);
    } else if (strcmp(which, "no_callback") == 0) {
        subscribe(m, ILR_CALLBACK_EXCEPTION_THROWN);
        m->callback = NULL;
    } else {
        subscribe(m, ILR_CALLBACK_EXCEPTION_THROWN);
    }
    return ILR_OK;
}
