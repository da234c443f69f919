/*
 * hostile_items: method items replaced by many threads at once
 * (tests/clr_components_hostile_module.rs, with Concurrency.exe, whose 32 threads make
 * the runtime compile instantiations of one method definition at the same moment).
 *
 * Every edit of a method whose name starts with the option `prefix` reads the method's
 * item (edit_method_item), holds it (every other edit for `hold` microseconds, 2,000 by
 * default) and checks it is still alive and the method's, then sets a new item of its own
 * (replacing the one another thread may be holding): the host must keep every item it
 * handed out alive until the call that got it returns, and destroy each replaced item
 * exactly once. Items are
 * never freed (a destroyed one is marked dead), so a use after destruction or a second
 * destruction is seen, not a crash.
 *
 * Lines: "hostile_items: WRONG ..." at once for a destruction of a dead item or of an item
 * a call is holding; at the runtime's Shutdown, "hostile_items: created C destroyed D
 * alive A methods M edits E held H replaced while held R wrong W": C items set, D
 * destroyed, A alive, M methods (module and token) that had one, E edits, H of them found
 * an item to hold, R of those saw another thread replace it while they held it, W checks
 * that failed (a held item dead or another method's, a status other than the ABI's).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ilrewrite_method.h"

static const ilr_host *host;
static char prefix[256];
static int64_t hold = 2000;

#define ALIVE 0x11A11BEu
#define DEAD 0xDEADu

typedef struct item {
    atomic_uint magic;
    atomic_int readers;
    uint64_t module;
    uint32_t token;
} item;

#define MAX_ITEMS 200000
static item *all[MAX_ITEMS];
static atomic_int created = 0, destroyed = 0, edits = 0, held = 0, overlaps = 0, wrong = 0;
static atomic_int in_flight = 0, most_in_flight = 0;

static const ilr_option_spec option_table[] = {
    {"prefix", ILR_OPTION_STRING},
    {"hold", ILR_OPTION_INTEGER},
};

static void log_line(const char *text) { host->log(text, strlen(text)); }

static void wrong_line(const char *what) {
    atomic_fetch_add(&wrong, 1);
    char line[256];
    snprintf(line, sizeof line, "hostile_items: WRONG %s", what);
    log_line(line);
}

static ilr_status start(void *self, ilr_options o, ilr_error *error) {
    (void)self;
    (void)error;
    ilr_str s;
    if (host->option_string(o, "prefix", &s) == ILR_OK && s.length < sizeof prefix) {
        memcpy(prefix, s.data, s.length);
        prefix[s.length] = 0;
    }
    host->option_integer(o, "hold", &hold);
    return ILR_OK;
}

static int32_t wants(void *self, ilr_candidate candidate) {
    (void)self;
    ilr_str name;
    size_t n = strlen(prefix);
    if (n == 0 || host->candidate_name(candidate, &name) != ILR_OK || name.length < n ||
        memcmp(name.data, prefix, n) != 0)
        return ILR_WANT_NO;
    return ILR_WANT_EDIT;
}

static void destroy(void *p) {
    item *it = p;
    if (atomic_exchange(&it->magic, DEAD) != ALIVE)
        wrong_line("an item destroyed twice (or never set)");
    if (atomic_load(&it->readers) != 0)
        wrong_line("an item destroyed while a call holds it");
    atomic_fetch_add(&destroyed, 1);
}

static ilr_status edit_held(ilr_edit e);

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    (void)self;
    (void)error;
    *changed = 0;
    atomic_fetch_add(&edits, 1);
    int now_in = atomic_fetch_add(&in_flight, 1) + 1;
    int most = atomic_load(&most_in_flight);
    while (now_in > most && !atomic_compare_exchange_weak(&most_in_flight, &most, now_in)) {
    }
    ilr_status result = edit_held(e);
    atomic_fetch_sub(&in_flight, 1);
    return result;
}

static ilr_status edit_held(ilr_edit e) {
    uint64_t module = 0;
    uint32_t token = 0;
    if (host->edit_method(e, &module, &token) != ILR_OK) {
        wrong_line("edit_method failed");
        return ILR_OK;
    }
    void *p = NULL;
    ilr_status st = host->edit_method_item(e, &p);
    if (st == ILR_OK) {
        item *it = p;
        atomic_fetch_add(&held, 1);
        atomic_fetch_add(&it->readers, 1);
        if (atomic_load(&it->magic) != ALIVE)
            wrong_line("edit_method_item gave a dead item");
        /* Every other edit holds the item `hold` microseconds, so that edits of the same
         * method on other threads replace it meanwhile. */
        if (atomic_load(&edits) % 2 == 0) {
            struct timespec t = {(time_t)(hold / 1000000), (long)(hold % 1000000) * 1000};
            nanosleep(&t, NULL);
        }
        if (atomic_load(&it->magic) != ALIVE)
            wrong_line("an item died while a call held it");
        if (it->module != module || it->token != token)
            wrong_line("edit_method_item gave another method's item");
        /* Another thread replaced it meanwhile: the host holds it for this call. */
        void *now = NULL;
        if (host->edit_method_item(e, &now) == ILR_OK && now != p)
            atomic_fetch_add(&overlaps, 1);
        if (atomic_load(&it->magic) != ALIVE)
            wrong_line("an item died while a call held it (after another replaced it)");
        atomic_fetch_sub(&it->readers, 1);
    } else if (st != ILR_E_NOT_FOUND) {
        wrong_line("edit_method_item answered neither OK nor NOT_FOUND");
    }
    int at = atomic_fetch_add(&created, 1);
    if (at >= MAX_ITEMS) {
        atomic_fetch_sub(&created, 1);
        return ILR_OK;
    }
    item *n = calloc(1, sizeof *n);
    if (!n) {
        atomic_fetch_sub(&created, 1);
        return ILR_OK;
    }
    atomic_store(&n->magic, ALIVE);
    n->module = module;
    n->token = token;
    all[at] = n;
    if (host->edit_set_method_item(e, n, destroy) != ILR_OK)
        wrong_line("edit_set_method_item failed");
    /* What is there now: this one, or one a thread set since: alive either way. */
    if (host->edit_method_item(e, &p) != ILR_OK || atomic_load(&((item *)p)->magic) != ALIVE)
        wrong_line("the item just set is not there, or dead");
    return ILR_OK;
}

static int cmp_key(const void *a, const void *b) {
    const item *x = *(item *const *)a, *y = *(item *const *)b;
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    return x->token < y->token ? -1 : x->token > y->token;
}

static void report(void) {
    int n = atomic_load(&created);
    if (n > MAX_ITEMS)
        n = MAX_ITEMS;
    item **alive = calloc((size_t)n + 1, sizeof *alive);
    item **keys = calloc((size_t)n + 1, sizeof *keys);
    if (!alive || !keys) {
        log_line("hostile_items: out of memory");
        return;
    }
    int a = 0, k = 0;
    for (int i = 0; i < n; i++) {
        if (!all[i])
            continue;
        keys[k++] = all[i];
        if (atomic_load(&all[i]->magic) == ALIVE)
            alive[a++] = all[i];
    }
    qsort(keys, (size_t)k, sizeof *keys, cmp_key);
    int methods = 0;
    for (int i = 0; i < k; i++)
        methods += i == 0 || cmp_key(&keys[i - 1], &keys[i]) != 0;
    qsort(alive, (size_t)a, sizeof *alive, cmp_key);
    for (int i = 1; i < a; i++)
        if (cmp_key(&alive[i - 1], &alive[i]) == 0)
            wrong_line("two items alive for one method");
    char line[256];
    snprintf(line, sizeof line,
             "hostile_items: created %d destroyed %d alive %d methods %d edits %d held %d "
             "replaced while held %d most in flight %d wrong %d",
             n, atomic_load(&destroyed), a, methods, atomic_load(&edits), atomic_load(&held),
             atomic_load(&overlaps), atomic_load(&most_in_flight), atomic_load(&wrong));
    log_line(line);
    free(alive);
    free(keys);
}

static void callback(void *self, uint32_t id, const uint64_t *args, uint32_t count,
                     int32_t *answer) {
    (void)self;
    (void)args;
    (void)count;
    (void)answer;
    if (id == ILR_CALLBACK_SHUTDOWN)
        report();
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    m->name = "hostile_items";
    m->priority = 10;
    m->options = option_table;
    m->option_count = sizeof option_table / sizeof option_table[0];
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    m->callbacks[ILR_CALLBACK_SHUTDOWN / 64] |= 1ull << (ILR_CALLBACK_SHUTDOWN % 64);
    m->callback = callback;
    return ILR_OK;
}
