/*
 * watcher: an instrumentation method that edits nothing and only subscribes to
 * callbacks (ILR_CALLBACK_*): ModuleLoadFinished, JITCompilationStarted,
 * ClassLoadFinished, JITInlining, ExceptionThrown and Shutdown. It counts each one
 * (atomics: the callbacks come on the runtime's threads, many at once) and, at
 * Shutdown, writes one line per callback through host->log:
 *
 *   watcher: <CallbackName> <count>
 *
 * then `watcher: bad <n>`, the calls whose arguments were not what the header says
 * (another count of words, a BOOL other than 0 or 1, an HRESULT not sign-extended from
 * 32 bits, a null ID, a call before `start` or with an unknown id): 0 expected.
 *
 * It asks for COR_PRF_MONITOR_EXCEPTIONS itself (`events`), and leaves the class loads'
 * flag to the host (which adds it, and logs that it does).
 *
 * Option `refuse_inlining` (boolean): JITInlining answers 0 (no) for every callee.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ilrewrite_method.h"

static const ilr_host *host;

static const ilr_option_spec options[] = {
    {"refuse_inlining", ILR_OPTION_BOOLEAN},
};

/* The callbacks it counts, in the order of its report. */
static const struct {
    uint32_t id;
    const char *name;
    uint32_t words;
} watched[] = {
    {ILR_CALLBACK_MODULE_LOAD_FINISHED, "ModuleLoadFinished", 2},
    {ILR_CALLBACK_JIT_COMPILATION_STARTED, "JITCompilationStarted", 2},
    {ILR_CALLBACK_CLASS_LOAD_FINISHED, "ClassLoadFinished", 2},
    {ILR_CALLBACK_JIT_INLINING, "JITInlining", 2},
    {ILR_CALLBACK_EXCEPTION_THROWN, "ExceptionThrown", 1},
    {ILR_CALLBACK_SHUTDOWN, "Shutdown", 0},
};
#define WATCHED (sizeof watched / sizeof watched[0])

static atomic_ullong counts[WATCHED];
static atomic_ullong bad;
static atomic_int started;
static atomic_int refuse_inlining;

static void say(const char *text) {
    host->log(text, strlen(text));
}

static ilr_status start(void *self, ilr_options opts, ilr_error *error) {
    (void)self;
    (void)error;
    int32_t refuse = 0;
    if (host->option_boolean(opts, "refuse_inlining", &refuse) == ILR_OK)
        atomic_store(&refuse_inlining, refuse != 0);
    atomic_store(&started, 1);
    say("watcher: started");
    return ILR_OK;
}

/* Whether `word` is a 32-bit value sign-extended to 64 bits (an HRESULT). */
static int sign_extended(uint64_t word) {
    return (uint64_t)(int64_t)(int32_t)(uint32_t)word == word;
}

static void report(void) {
    char line[128];
    for (size_t i = 0; i < WATCHED; i++) {
        snprintf(line, sizeof line, "watcher: %s %llu", watched[i].name,
                 (unsigned long long)atomic_load(&counts[i]));
        say(line);
    }
    snprintf(line, sizeof line, "watcher: bad %llu", (unsigned long long)atomic_load(&bad));
    say(line);
}

static void callback(void *self, uint32_t id, const uint64_t *args, uint32_t count,
                     int32_t *answer) {
    (void)self;
    size_t i = 0;
    while (i < WATCHED && watched[i].id != id)
        i++;
    int ok = i < WATCHED && atomic_load(&started) && count == watched[i].words && *answer == 1;
    if (ok) {
        switch (id) {
        case ILR_CALLBACK_MODULE_LOAD_FINISHED:
        case ILR_CALLBACK_CLASS_LOAD_FINISHED:
            ok = args[0] != 0 && sign_extended(args[1]);
            break;
        case ILR_CALLBACK_JIT_COMPILATION_STARTED:
            ok = args[0] != 0 && args[1] <= 1;
            break;
        case ILR_CALLBACK_JIT_INLINING:
            ok = args[0] != 0 && args[1] != 0;
            break;
        case ILR_CALLBACK_EXCEPTION_THROWN:
            ok = args[0] != 0;
            break;
        default:
            break;
        }
    }
    if (!ok)
        atomic_fetch_add_explicit(&bad, 1, memory_order_relaxed);
    if (i < WATCHED)
        atomic_fetch_add_explicit(&counts[i], 1, memory_order_relaxed);
    if (id == ILR_CALLBACK_JIT_INLINING && atomic_load(&refuse_inlining))
        *answer = 0;
    if (id == ILR_CALLBACK_SHUTDOWN)
        report();
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    m->self = NULL;
    m->name = "watcher";
    m->priority = 0;
    m->options = options;
    m->option_count = sizeof options / sizeof options[0];
    m->start = start;
    for (size_t i = 0; i < WATCHED; i++)
        m->callbacks[watched[i].id / 64] |= 1ull << (watched[i].id % 64);
    m->events = 0x40; /* COR_PRF_MONITOR_EXCEPTIONS */
    m->callback = callback;
    return ILR_OK;
}
