/*
 * allocations_c: an instrumentation method that asks for COR_PRF_MONITOR_OBJECT_ALLOCATED
 * and COR_PRF_ENABLE_OBJECT_ALLOCATED (0x100 | 0x800000), events the runtime takes only
 * at start-up: loaded at start it runs (and edits nothing); attached to a running
 * process, the manager refuses it before asking the runtime.
 */
#include "ilrewrite_method.h"

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

static int the_state;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)h;
    (void)error;
    m->self = &the_state;
    m->name = "allocations_c";
    m->events = 0x00000100u | 0x00800000u;
    return ILR_OK;
}
