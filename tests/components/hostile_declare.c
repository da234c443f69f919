/*
 * hostile_declare: a library that declares what the host cannot use
 * (tests/clr_components_hostile.rs). Each must be refused at load or at start with one
 * clear line, and then nothing runs: its `wants` and `edit` log
 * "hostile_declare: wants called" / "edit called" if they ever are (a test checks they
 * are not), and `destroy` logs "hostile_declare: destroy".
 *
 * `ilrewrite_method_create` returns ILR_OK but plays the trick named by the environment
 * variable ILR_HOSTILE_CREATE (create takes no options):
 *   null_name         `name` left null;
 *   empty_name        `name` "";
 *   non_utf8_name     `name` "hostile\xff";
 *   kind99            an option of kind 99;
 *   count_null_table  option_count 5, `options` null;
 *   null_option_name  an option whose name is null;
 *   non_utf8_option   an option whose name is not UTF-8;
 *   duplicate_option  the option `mode` declared twice (integer, then string);
 *   (unset)           a usable declaration (name "hostile_declare", option `mode`,
 *                     a string).
 * With a usable declaration, `targets` plays the trick the option `mode` names:
 *   bad_selector      returns a selector that does not parse (`Answer::Get(`);
 *   null_array        *count 3 and a null array;
 *   null_entry        two selectors, the second null;
 *   non_utf8_entry    a selector that is not UTF-8;
 *   targets_fail      fails with ILR_E_FAILED and a message;
 *   (other)           one good selector, `Answer::Get` (a control: it edits nothing,
 *                     but `wants` is called).
 */
#include <stdlib.h>
#include <string.h>

#include "ilrewrite_method.h"

static const ilr_host *host;
static char mode[64];

static void log_line(const char *text) { host->log(text, strlen(text)); }

static int is(const char *trick, const char *name) { return trick && strcmp(trick, name) == 0; }

static const ilr_option_spec good_options[] = {{"mode", ILR_OPTION_STRING}};
static const ilr_option_spec kind99[] = {{"mode", 99}};
static const ilr_option_spec null_option_name[] = {{"mode", ILR_OPTION_STRING},
                                                   {NULL, ILR_OPTION_INTEGER}};
static const ilr_option_spec non_utf8_option[] = {{"mode\xc3", ILR_OPTION_STRING}};
static const ilr_option_spec duplicate_option[] = {{"mode", ILR_OPTION_INTEGER},
                                                   {"mode", ILR_OPTION_STRING}};

static ilr_status start(void *self, ilr_options o, ilr_error *error) {
    (void)self;
    (void)error;
    ilr_str s;
    if (host->option_string(o, "mode", &s) == ILR_OK && s.length < sizeof mode) {
        memcpy(mode, s.data, s.length);
        mode[s.length] = 0;
    }
    return ILR_OK;
}

static const char *const bad_selector[] = {"Answer::Get("};
static const char *const null_entry[] = {"Answer::Get", NULL};
static const char *const non_utf8_entry[] = {"Answer::G\xfft"};
static const char *const good[] = {"Answer::Get"};

static ilr_status targets(void *self, const char *const **selectors, uint32_t *count,
                          ilr_error *error) {
    (void)self;
    if (is(mode, "bad_selector")) {
        *selectors = bad_selector;
        *count = 1;
    } else if (is(mode, "null_array")) {
        *selectors = NULL;
        *count = 3;
    } else if (is(mode, "null_entry")) {
        *selectors = null_entry;
        *count = 2;
    } else if (is(mode, "non_utf8_entry")) {
        *selectors = non_utf8_entry;
        *count = 1;
    } else if (is(mode, "targets_fail")) {
        const char *m = "hostile_declare: no targets today";
        size_t n = strlen(m) < error->capacity ? strlen(m) : error->capacity;
        memcpy(error->data, m, n);
        error->length = n;
        return ILR_E_FAILED;
    } else {
        *selectors = good;
        *count = 1;
    }
    return ILR_OK;
}

static int32_t wants(void *self, ilr_candidate candidate) {
    (void)self;
    (void)candidate;
    log_line("hostile_declare: wants called");
    return ILR_WANT_NO;
}

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    (void)self;
    (void)e;
    (void)error;
    log_line("hostile_declare: edit called");
    *changed = 0;
    return ILR_OK;
}

static void destroy(void *self) {
    (void)self;
    log_line("hostile_declare: destroy");
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    const char *trick = getenv("ILR_HOSTILE_CREATE");
    m->name = "hostile_declare";
    m->options = good_options;
    m->option_count = 1;
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    m->destroy = destroy;
    m->targets = targets;
    if (is(trick, "null_name"))
        m->name = NULL;
    else if (is(trick, "empty_name"))
        m->name = "";
    else if (is(trick, "non_utf8_name"))
        m->name = "hostile\xff";
    else if (is(trick, "kind99"))
        m->options = kind99;
    else if (is(trick, "count_null_table")) {
        m->options = NULL;
        m->option_count = 5;
    } else if (is(trick, "null_option_name")) {
        m->options = null_option_name;
        m->option_count = 2;
    } else if (is(trick, "non_utf8_option"))
        m->options = non_utf8_option;
    else if (is(trick, "duplicate_option")) {
        m->options = duplicate_option;
        m->option_count = 2;
    }
    return ILR_OK;
}
