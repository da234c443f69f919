/*
 * offset_c: an ilrewrite instrumentation method in C (tests/components). It adds its
 * option `addend` (1 by default) to the int32 result of every method whose name
 * contains its option `filter`, before each `ret`.
 *
 * Test switches (options): `fail_start = true` makes `start` fail with a message;
 * `stale = true` keeps the handle of each edit and, at the next edit, calls the host
 * with the old one, logging the status it got ("offset_c: stale handle status -1").
 *
 * Added for tests/clr_components.rs: `concurrency = true` counts the calls of `wants`
 * and `edit` in flight at once (C11 atomics: the calls are free-threaded) and logs each
 * new highest count ("offset_c: calls at once 2"), so a test sees calls overlap.
 *
 * Targets by name: `targets = ["Ns.Type::Method", ...]` (at most 8) are returned by its
 * `targets` function after `start`; then `wants` asks the host whether the candidate is
 * one of them (instead of comparing names with `filter`). `verbose = true` logs each
 * edit: "offset_c: edit NAME".
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ilrewrite_method.h"

static const ilr_host *host;

typedef struct state {
    int64_t addend;
    const char *filter; /* copied at start */
    char filter_copy[256];
    int stale;
    ilr_edit kept; /* the previous edit's handle, with `stale` */
    int concurrency;
    atomic_int in_flight; /* calls of wants and edit now, with `concurrency` */
    atomic_int most;      /* the highest in_flight seen */
    char target_text[8][256];
    const char *targets[8];
    uint32_t target_count;
    int verbose;
} state;

static state the_state;

static const ilr_option_spec options[] = {
    {"filter", ILR_OPTION_STRING},
    {"addend", ILR_OPTION_INTEGER},
    {"fail_start", ILR_OPTION_BOOLEAN},
    {"stale", ILR_OPTION_BOOLEAN},
    {"concurrency", ILR_OPTION_BOOLEAN},
    {"targets", ILR_OPTION_SELECTORS},
    {"verbose", ILR_OPTION_BOOLEAN},
};

static void say(ilr_error *error, const char *text) {
    size_t n = strlen(text);
    if (n > error->capacity)
        n = error->capacity;
    memcpy(error->data, text, n);
    error->length = n;
}

static void log_line(const char *text) { host->log(text, strlen(text)); }

/* With `concurrency`: one more call in flight; logs a new highest count. */
static void enter(state *s) {
    if (!s->concurrency)
        return;
    int now = atomic_fetch_add(&s->in_flight, 1) + 1;
    int most = atomic_load(&s->most);
    while (now > most) {
        if (atomic_compare_exchange_weak(&s->most, &most, now)) {
            char line[64];
            snprintf(line, sizeof line, "offset_c: calls at once %d", now);
            log_line(line);
            break;
        }
    }
}

static void leave(state *s) {
    if (s->concurrency)
        atomic_fetch_sub(&s->in_flight, 1);
}

static ilr_status start(void *self, ilr_options opts, ilr_error *error) {
    state *s = self;
    int32_t fail = 0;
    if (host->option_boolean(opts, "fail_start", &fail) == ILR_OK && fail) {
        say(error, "offset_c refuses to start (fail_start)");
        return ILR_E_FAILED;
    }
    int64_t addend = 1;
    if (host->option_integer(opts, "addend", &addend) == ILR_OK)
        s->addend = addend;
    else
        s->addend = 1;
    ilr_str filter;
    if (host->option_string(opts, "filter", &filter) == ILR_OK && filter.length < sizeof s->filter_copy) {
        memcpy(s->filter_copy, filter.data, filter.length);
        s->filter_copy[filter.length] = 0;
        s->filter = s->filter_copy;
    }
    int32_t stale = 0;
    if (host->option_boolean(opts, "stale", &stale) == ILR_OK)
        s->stale = stale;
    int32_t concurrency = 0;
    if (host->option_boolean(opts, "concurrency", &concurrency) == ILR_OK)
        s->concurrency = concurrency;
    int32_t verbose = 0;
    if (host->option_boolean(opts, "verbose", &verbose) == ILR_OK)
        s->verbose = verbose;
    ilr_str target;
    s->target_count = 0;
    while (s->target_count < 8 &&
           host->option_string_at(opts, "targets", s->target_count, &target) == ILR_OK) {
        if (target.length >= sizeof s->target_text[0]) {
            say(error, "offset_c: a target longer than 255 bytes");
            return ILR_E_FAILED;
        }
        memcpy(s->target_text[s->target_count], target.data, target.length);
        s->target_text[s->target_count][target.length] = 0;
        s->targets[s->target_count] = s->target_text[s->target_count];
        s->target_count++;
    }
    return ILR_OK;
}

static ilr_status targets(void *self, const char *const **selectors, uint32_t *count,
                          ilr_error *error) {
    state *s = self;
    (void)error;
    *selectors = s->targets;
    *count = s->target_count;
    return ILR_OK;
}

static int contains(ilr_str name, const char *part) {
    size_t n = strlen(part);
    if (n == 0 || n > name.length)
        return 0;
    for (size_t i = 0; i + n <= name.length; i++)
        if (memcmp(name.data + i, part, n) == 0)
            return 1;
    return 0;
}

static int32_t wants(void *self, ilr_candidate candidate) {
    state *s = self;
    ilr_str name;
    enter(s);
    int32_t answer = ILR_WANT_NO;
    int32_t is_target = 0;
    if (s->target_count > 0) {
        if (host->candidate_is_target(candidate, &is_target) == ILR_OK && is_target)
            answer = ILR_WANT_EDIT;
    } else if (s->filter && host->candidate_name(candidate, &name) == ILR_OK &&
               contains(name, s->filter)) {
        answer = ILR_WANT_EDIT;
    }
    leave(s);
    return answer;
}

static ilr_status edit_body(state *s, ilr_edit e, int32_t *changed, ilr_error *error) {
    *changed = 0;
    if (s->verbose) {
        ilr_str name;
        if (host->edit_name(e, &name) == ILR_OK) {
            char line[320];
            snprintf(line, sizeof line, "offset_c: edit %.*s", (int)name.length, name.data);
            log_line(line);
        }
    }
    if (s->stale) {
        if (s->kept) {
            uint32_t first = 0;
            ilr_status old = host->body_first(s->kept, &first);
            char line[64];
            snprintf(line, sizeof line, "offset_c: stale handle status %d", (int)old);
            log_line(line);
        }
        s->kept = e;
    }
    uint8_t ret = 0;
    ilr_status st = host->edit_return_type(e, &ret);
    if (st != ILR_OK) {
        say(error, "edit_return_type failed");
        return st;
    }
    if (ret != 0x08) /* ELEMENT_TYPE_I4 */
        return ILR_OK;
    ilr_instruction code[2] = {
        {0, 0x20 /* ldc.i4 */, ILR_OPERAND_INT, s->addend},
        {0, 0x58 /* add */, ILR_OPERAND_NONE, 0},
    };
    st = host->body_insert_before_returns(e, code, 2);
    if (st != ILR_OK) {
        say(error, "body_insert_before_returns failed");
        return st;
    }
    *changed = 1;
    return ILR_OK;
}

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    state *s = self;
    enter(s);
    ilr_status st = edit_body(s, e, changed, error);
    leave(s);
    return st;
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    m->self = &the_state;
    m->name = "offset_c";
    m->priority = 10;
    m->options = options;
    m->option_count = sizeof options / sizeof options[0];
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    m->targets = targets;
    return ILR_OK;
}
