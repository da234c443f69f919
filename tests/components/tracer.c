/*
 * tracer_c: an ilrewrite instrumentation method in C (tests/components) that uses the
 * second part of the ABI: metadata defined by value while a module loads, data items
 * with destructors on modules and methods, a new local, the single-ret's epilogue and
 * return-value local, and a wrap of the whole body with a state local.
 *
 * Options:
 *   assembly   (string)     the assembly whose modules it defines references in (others
 *                           get no item, so their methods are left alone)
 *   methods    (selectors)  its targets
 *   single_ret (strings)    names (as edit_name gives them) edited through the
 *                           single-ret instead of wrapped
 *
 * Module load (its assembly only): AssemblyRefs to System.Console and
 * System.Collections, TypeRefs System.Console, System.Array and
 * System.Collections.Generic.List`1, MemberRefs Console::WriteLine(string/int32/int64),
 * Array::Empty<T>() and, on the TypeSpec List<int32>, .ctor and get_Count, the
 * MethodSpec Array::Empty<int32>, user strings; all kept in a module item (destructor:
 * logs "tracer_c: module item destroyed N").
 *
 * A wrapped method, per call, prints (Console.WriteLine, in the program's stdout):
 *   "tracer enter"                    entry
 *   "tracer exit →✓"                  finally, every exit (exceptions too)
 *   7001                              the state local: 7000 set at entry, + 1 in exit
 *   40002                             the added int64 local: 40000 set at entry, + 2
 *   "tracer ret" and the value        after a normal return of an int32/int64 method
 * A single-ret method prints, before its one epilogue: "tracer ret", the value,
 * "tracer small" when it is below 45 (a branch inside the inserted code), and 900
 * (Array.Empty<int32>().Length + new List<int32>().Count + 900).
 *
 * Each method's item counts its compilations (destructor: "tracer_c: method item
 * destroyed"). Every edit also calls the host with the last module_loaded's handle,
 * long returned, and logs the status once ("tracer_c: stale module handle -1").
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilrewrite_method.h"

static const ilr_host *host;

typedef struct defs {
    uint32_t wl_str, wl_i4, wl_i8;
    uint32_t s_enter, s_exit, s_ret, s_small;
    uint32_t empty_int32, list_ctor, list_count;
} defs;

typedef struct state {
    char assembly[256];
    char target_text[8][256];
    const char *targets[8];
    uint32_t target_count;
    char single[8][256];
    uint32_t single_count;
    atomic_ullong stale_module;
    atomic_int stale_logged;
    atomic_int modules_destroyed;
    atomic_int methods_destroyed;
} state;

static state the_state;

static const ilr_option_spec options[] = {
    {"assembly", ILR_OPTION_STRING},
    {"methods", ILR_OPTION_SELECTORS},
    {"single_ret", ILR_OPTION_STRINGS},
};

static void say(ilr_error *error, const char *text) {
    size_t n = strlen(text);
    if (n > error->capacity)
        n = error->capacity;
    memcpy(error->data, text, n);
    error->length = n;
}

static void log_line(const char *text) { host->log(text, strlen(text)); }

static int copy(char *to, size_t capacity, ilr_str from) {
    if (from.length >= capacity)
        return 0;
    memcpy(to, from.data, from.length);
    to[from.length] = 0;
    return 1;
}

static ilr_status start(void *self, ilr_options opts, ilr_error *error) {
    state *s = self;
    ilr_str text;
    if (host->option_string(opts, "assembly", &text) != ILR_OK ||
        !copy(s->assembly, sizeof s->assembly, text)) {
        say(error, "tracer_c: option `assembly` is needed");
        return ILR_E_FAILED;
    }
    while (s->target_count < 8 &&
           host->option_string_at(opts, "methods", s->target_count, &text) == ILR_OK) {
        if (!copy(s->target_text[s->target_count], sizeof s->target_text[0], text)) {
            say(error, "tracer_c: a selector longer than 255 bytes");
            return ILR_E_FAILED;
        }
        s->targets[s->target_count] = s->target_text[s->target_count];
        s->target_count++;
    }
    while (s->single_count < 8 &&
           host->option_string_at(opts, "single_ret", s->single_count, &text) == ILR_OK) {
        if (!copy(s->single[s->single_count], sizeof s->single[0], text)) {
            say(error, "tracer_c: a name longer than 255 bytes");
            return ILR_E_FAILED;
        }
        s->single_count++;
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

static void destroy_module_item(void *item) {
    free(item);
    int n = atomic_fetch_add(&the_state.modules_destroyed, 1) + 1;
    char line[64];
    snprintf(line, sizeof line, "tracer_c: module item destroyed %d", n);
    log_line(line);
}

static void destroy_method_item(void *item) {
    free(item);
    atomic_fetch_add(&the_state.methods_destroyed, 1);
    log_line("tracer_c: method item destroyed");
}

/* Runs `call`; on failure says which definition failed, with its status. */
#define DEFINE(call, what)                                                              \
    do {                                                                                \
        ilr_status st_ = (call);                                                        \
        if (st_ != ILR_OK) {                                                            \
            char m_[128];                                                               \
            snprintf(m_, sizeof m_, "tracer_c: %s failed with %d", what, (int)st_);     \
            say(error, m_);                                                             \
            free(d);                                                                    \
            return st_;                                                                 \
        }                                                                               \
    } while (0)

static ilr_status module_loaded(void *self, ilr_module module, ilr_error *error) {
    state *s = self;
    ilr_str name;
    if (host->module_assembly_name(module, &name) != ILR_OK)
        return ILR_OK; /* no manifest: not ours */
    if (name.length != strlen(s->assembly) || memcmp(name.data, s->assembly, name.length) != 0)
        return ILR_OK;
    atomic_store(&s->stale_module, module);
    static const uint8_t key[8] = {0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a};
    defs *d = calloc(1, sizeof *d);
    if (!d) {
        say(error, "tracer_c: out of memory");
        return ILR_E_FAILED;
    }
    uint32_t console_asm, collections_asm, console, array, list, list_int32, empty;
    ilr_assembly_ref a = {"System.Console", {4, 0, 0, 0}, key};
    DEFINE(host->module_assembly_ref(module, &a, &console_asm), "assembly ref");
    ilr_assembly_ref c = {"System.Collections", {4, 0, 0, 0}, key};
    DEFINE(host->module_assembly_ref(module, &c, &collections_asm), "assembly ref");
    uint32_t corlib;
    ilr_assembly_ref r = {"System.Runtime", {4, 0, 0, 0}, key};
    DEFINE(host->module_assembly_ref(module, &r, &corlib), "assembly ref");
    DEFINE(host->module_type_ref(module, console_asm, "System.Console", &console), "type ref");
    DEFINE(host->module_type_ref(module, corlib, "System.Array", &array), "type ref");
    DEFINE(host->module_type_ref(module, collections_asm, "System.Collections.Generic.List`1", &list),
           "type ref");
    DEFINE(host->module_method_ref(module, console, "WriteLine", "void (string)", &d->wl_str),
           "member ref");
    DEFINE(host->module_method_ref(module, console, "WriteLine", "void(int32)", &d->wl_i4),
           "member ref");
    DEFINE(host->module_method_ref(module, console, "WriteLine", "void (int64)", &d->wl_i8),
           "member ref");
    DEFINE(host->module_method_ref(module, array, "Empty", "generic 1 !!0[] ()", &empty),
           "member ref");
    DEFINE(host->module_method_spec(module, empty, "int32", &d->empty_int32), "method spec");
    char list_text[64];
    snprintf(list_text, sizeof list_text, "class 0x%08x<int32>", (unsigned)list);
    DEFINE(host->module_type_spec(module, list_text, &list_int32), "type spec");
    DEFINE(host->module_method_ref(module, list_int32, ".ctor", "instance void ()", &d->list_ctor),
           "member ref");
    DEFINE(host->module_method_ref(module, list_int32, "get_Count", "instance int32 ()",
                                   &d->list_count),
           "member ref");
    static const char enter[] = "tracer enter";
    static const char exit_text[] = "tracer exit \xe2\x86\x92\xe2\x9c\x93"; /* →✓ */
    static const char ret[] = "tracer ret";
    static const char small[] = "tracer small";
    DEFINE(host->module_user_string(module, enter, sizeof enter - 1, &d->s_enter), "string");
    DEFINE(host->module_user_string(module, exit_text, sizeof exit_text - 1, &d->s_exit), "string");
    DEFINE(host->module_user_string(module, ret, sizeof ret - 1, &d->s_ret), "string");
    DEFINE(host->module_user_string(module, small, sizeof small - 1, &d->s_small), "string");
    ilr_status st = host->module_set_item(module, d, destroy_module_item);
    if (st != ILR_OK) {
        free(d);
        say(error, "tracer_c: module_set_item failed");
        return st;
    }
    void *back = NULL;
    if (host->module_item(module, &back) != ILR_OK || back != d) {
        say(error, "tracer_c: module_item does not give back the item");
        return ILR_E_FAILED;
    }
    return ILR_OK;
}

static int is_single(state *s, ilr_str name) {
    for (uint32_t i = 0; i < s->single_count; i++)
        if (strlen(s->single[i]) == name.length && memcmp(s->single[i], name.data, name.length) == 0)
            return 1;
    return 0;
}

static int32_t wants(void *self, ilr_candidate candidate) {
    state *s = self;
    int32_t is_target = 0;
    ilr_str name;
    if (host->candidate_is_target(candidate, &is_target) != ILR_OK || !is_target)
        return ILR_WANT_NO;
    if (host->candidate_name(candidate, &name) == ILR_OK && is_single(s, name))
        return ILR_WANT_EDIT_SINGLE_RET;
    return ILR_WANT_EDIT;
}

#define I(op, kind, value) {0, (uint16_t)(op), (uint16_t)(kind), (int64_t)(value)}
#define CALL 0x28
#define LDSTR 0x72
#define LDC_I4 0x20
#define LDC_I8 0x21
#define ADD 0x58
#define STLOC 0xFE0E
#define LDLOC 0xFE0C
#define LDLEN 0x8E
#define CONV_I4 0x69
#define NEWOBJ 0x73
#define CALLVIRT 0x6F
#define BGE_S 0x2F
#define NOP 0x00

static ilr_status count_compilation(ilr_edit e) {
    void *item = NULL;
    ilr_status st = host->edit_method_item(e, &item);
    if (st == ILR_E_NOT_FOUND) {
        item = calloc(1, sizeof(atomic_int));
        if (!item)
            return ILR_E_FAILED;
        st = host->edit_set_method_item(e, item, destroy_method_item);
        if (st != ILR_OK) {
            free(item);
            return st;
        }
    } else if (st != ILR_OK) {
        return st;
    }
    atomic_fetch_add((atomic_int *)item, 1);
    return ILR_OK;
}

static ilr_status edit_single_ret(const defs *d, ilr_edit e, ilr_error *error) {
    uint32_t epilogue = 0;
    int32_t local = -1;
    ilr_status st = host->edit_single_ret(e, &epilogue, &local);
    if (st != ILR_OK || local < 0) {
        say(error, "tracer_c: no single-ret with a return-value local");
        return st != ILR_OK ? st : ILR_E_FAILED;
    }
    ilr_instruction code[] = {
        I(LDSTR, ILR_OPERAND_TOKEN, d->s_ret),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_str),
        I(LDLOC, ILR_OPERAND_VAR, local),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i4),
        I(LDLOC, ILR_OPERAND_VAR, local),
        I(LDC_I4, ILR_OPERAND_INT, 45),
        I(BGE_S, ILR_OPERAND_CODE, 9),
        I(LDSTR, ILR_OPERAND_TOKEN, d->s_small),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_str),
        /* 9: */ I(CALL, ILR_OPERAND_TOKEN, d->empty_int32),
        I(LDLEN, ILR_OPERAND_NONE, 0),
        I(CONV_I4, ILR_OPERAND_NONE, 0),
        I(NEWOBJ, ILR_OPERAND_TOKEN, d->list_ctor),
        I(CALLVIRT, ILR_OPERAND_TOKEN, d->list_count),
        I(ADD, ILR_OPERAND_NONE, 0),
        I(LDC_I4, ILR_OPERAND_INT, 900),
        I(ADD, ILR_OPERAND_NONE, 0),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i4),
    };
    return host->body_insert_before(e, epilogue, ILR_REDIRECT, code, sizeof code / sizeof code[0],
                                    NULL);
}

static ilr_status edit_wrap(const defs *d, ilr_edit e) {
    uint16_t extra = 0;
    ilr_status st = host->edit_add_local(e, "int64", &extra);
    if (st != ILR_OK)
        return st;
    uint8_t ret = 0;
    st = host->edit_return_type(e, &ret);
    if (st != ILR_OK)
        return st;
    ilr_instruction entry[] = {
        I(LDSTR, ILR_OPERAND_TOKEN, d->s_enter),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_str),
        I(LDC_I4, ILR_OPERAND_INT, 7000),
        I(STLOC, ILR_OPERAND_STATE_LOCAL, 0),
        I(LDC_I8, ILR_OPERAND_LONG, 40000),
        I(STLOC, ILR_OPERAND_VAR, extra),
    };
    ilr_instruction exit_code[] = {
        I(LDSTR, ILR_OPERAND_TOKEN, d->s_exit),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_str),
        I(LDLOC, ILR_OPERAND_STATE_LOCAL, 0),
        I(LDC_I4, ILR_OPERAND_INT, 1),
        I(ADD, ILR_OPERAND_NONE, 0),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i4),
        I(LDLOC, ILR_OPERAND_VAR, extra),
        I(LDC_I8, ILR_OPERAND_LONG, 2),
        I(ADD, ILR_OPERAND_NONE, 0),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i8),
    };
    ilr_instruction on_return[] = {
        I(LDSTR, ILR_OPERAND_TOKEN, d->s_ret),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_str),
        I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0),
        I(CALL, ILR_OPERAND_TOKEN, ret == 0x0A ? d->wl_i8 : d->wl_i4),
    };
    ilr_wrap wrap = {sizeof wrap,
                     entry,
                     sizeof entry / sizeof entry[0],
                     exit_code,
                     sizeof exit_code / sizeof exit_code[0],
                     on_return,
                     (ret == 0x08 || ret == 0x0A) ? sizeof on_return / sizeof on_return[0] : 0,
                     "int32"};
    return host->edit_wrap(e, &wrap);
}

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    state *s = self;
    *changed = 0;
    ilr_module stale = atomic_load(&s->stale_module);
    if (stale && atomic_exchange(&s->stale_logged, 1) == 0) {
        uint64_t id = 0;
        char line[64];
        snprintf(line, sizeof line, "tracer_c: stale module handle %d",
                 (int)host->module_id(stale, &id));
        log_line(line);
    }
    void *item = NULL;
    ilr_status st = host->edit_module_item(e, &item);
    if (st == ILR_E_NOT_FOUND)
        return ILR_OK; /* not a module of its assembly */
    if (st != ILR_OK) {
        say(error, "tracer_c: edit_module_item failed");
        return st;
    }
    const defs *d = item;
    st = count_compilation(e);
    if (st != ILR_OK) {
        say(error, "tracer_c: the method item failed");
        return st;
    }
    ilr_str name;
    st = host->edit_name(e, &name);
    if (st != ILR_OK)
        return st;
    st = is_single(s, name) ? edit_single_ret(d, e, error) : edit_wrap(d, e);
    if (st != ILR_OK) {
        if (error->length == 0) {
            char line[96];
            snprintf(line, sizeof line, "tracer_c: the edit failed with %d", (int)st);
            say(error, line);
        }
        return st;
    }
    *changed = 1;
    return ILR_OK;
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    if (h->size < sizeof(ilr_host) || m->size < sizeof(ilr_method)) {
        say(error, "tracer_c needs the second part of ABI v1");
        return ILR_E_FAILED;
    }
    host = h;
    m->self = &the_state;
    m->name = "tracer_c";
    m->priority = 5;
    m->options = options;
    m->option_count = sizeof options / sizeof options[0];
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    m->targets = targets;
    m->module_loaded = module_loaded;
    return ILR_OK;
}
