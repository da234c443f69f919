/*
 * hostile_mod: an instrumentation method that misuses the second part of the ABI on
 * purpose (tests/clr_components_hostile_module.rs): the module_* definitions, module
 * and method data items and their destructors, and handles of the wrong kind or kept
 * past their call. Every check whose answer the ABI promises is logged as
 * "hostile_mod: WRONG <what>: status S, expected E" when the answer is another, and each
 * batch ends with "hostile_mod: <batch> done, N checks, W wrong" (a test asserts W is 0).
 * What the ABI leaves open is logged as "hostile_mod: observe <what> status S [more]" for
 * the test to assert (and document).
 *
 * Options:
 *   assembly  (string)   the assembly whose module's module_loaded is abused (others are
 *                        left alone)
 *   trick     (string)   what the edit of Answer::Get inserts at its entry:
 *                          "strings"  ldstr + Console.WriteLine(string) of each user
 *                                     string defined at load (NULs, non-ASCII, empty, a
 *                                     70,000-character one)
 *                          "spec"     ldstr + call of the MethodSpec of the non-generic
 *                                     Console.WriteLine(string) over int32 (when the host
 *                                     gave one)
 *                          "many"     ldstr + Console.WriteLine(string) of the last of
 *                                     the `many` distinct user strings ("s<many - 1>")
 *                          anything else: no change (the edits only check)
 *   many      (integer)  how many definitions of each kind module_loaded makes in the
 *                        "many" batch (0: the batch is skipped)
 *   deep      (boolean)  the 100,000-deep texts and the 1,000,000-deep blob
 *   repeat    (integer)  in Answer::Get's edit, calls edit_name, edit_module_item and
 *                        option_string that many times each and logs how much resident
 *                        memory grew during each loop (what the host keeps until the call
 *                        returns)
 *   fail_load (boolean)  module_loaded fails (ILR_E_FAILED and a message) once it set
 *                        its item: the item stays (the edits check it)
 *   lengths   (boolean)  batch "lengths": lengths and counts no array can have (SIZE_MAX,
 *                        2^62, 2^40) with real buffers whose first bytes already make the
 *                        call invalid (so that a host reading no further than it must stays
 *                        inside them): user strings, raw signatures, inserted code, a wrap's
 *                        code; and host->log of a 100,000-byte line, and of the same buffer
 *                        with the length SIZE_MAX (the host reads no more than it shows)
 *
 * module_loaded (the `assembly` module only): batch "defs": null pointers, texts that do
 * not parse, nested past the limit (and at it), tokens of the wrong table or of no row,
 * `void` and `pinned` where a type is defined, scopes and parents of the wrong table,
 * invalid UTF-8, raw signatures truncated or with trailing bytes; batch "kinds": the
 * module handle given to the edit, option and candidate functions, made-up handles, the
 * module handle on a thread of its own during the call; batch "module items": set,
 * replace, remove (null item, with and without a destructor), a destructor that calls
 * the host; batch "many". It also keeps the module handle for later, and starts a thread
 * that uses it after the call returned (joined by the edit of Answer::Get).
 *
 * edit (Program::Main, then Answer::Get): batch "edit kinds" (module functions given the
 * edit handle and its options handle, the kept module handle); in Main batch "method
 * items" (set, replace, remove, set the same pointer twice, a destructor that calls the
 * host with the handle of the call that set it); in Get batch "after" (what the
 * destructors saw and how often each ran, the late thread's statuses), then the trick.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ilrewrite_method.h"

static const ilr_host *host;

static char assembly[256];
static char trick[64];
static int64_t many = 0;
static int64_t repeats = 0;
static int32_t deep = 0;
static int32_t fail_load = 0;
static int32_t lengths = 0;
static ilr_options start_options;

static const ilr_option_spec option_table[] = {
    {"assembly", ILR_OPTION_STRING},
    {"trick", ILR_OPTION_STRING},
    {"many", ILR_OPTION_INTEGER},
    {"deep", ILR_OPTION_BOOLEAN},
    {"repeat", ILR_OPTION_INTEGER},
    {"fail_load", ILR_OPTION_BOOLEAN},
    {"lengths", ILR_OPTION_BOOLEAN},
};

#define ARG ILR_E_INVALID_ARGUMENT
#define HANDLE ILR_E_INVALID_HANDLE

static void log_line(const char *text) { host->log(text, strlen(text)); }

typedef struct checks {
    int made;
    int wrong;
} checks;

static void expect(checks *c, const char *what, ilr_status got, ilr_status want) {
    c->made++;
    if (got == want)
        return;
    c->wrong++;
    char line[512];
    snprintf(line, sizeof line, "hostile_mod: WRONG %s: status %d, expected %d", what, (int)got,
             (int)want);
    log_line(line);
}

static void expect_true(checks *c, const char *what, int ok) {
    expect(c, what, ok ? ILR_OK : ILR_E_FAILED, ILR_OK);
}

static void done(const checks *c, const char *what) {
    char line[160];
    snprintf(line, sizeof line, "hostile_mod: %s done, %d checks, %d wrong", what, c->made,
             c->wrong);
    log_line(line);
}

static void observe(const char *what, ilr_status st, const char *more) {
    char line[512];
    snprintf(line, sizeof line, "hostile_mod: observe %s status %d%s%s", what, (int)st,
             more ? " " : "", more ? more : "");
    log_line(line);
}

static int str_to(ilr_options o, const char *name, char *out, size_t size) {
    ilr_str s;
    if (host->option_string(o, name, &s) != ILR_OK || s.length >= size)
        return 0;
    memcpy(out, s.data, s.length);
    out[s.length] = 0;
    return 1;
}

static ilr_status start(void *self, ilr_options o, ilr_error *error) {
    (void)self;
    (void)error;
    start_options = o;
    str_to(o, "assembly", assembly, sizeof assembly);
    str_to(o, "trick", trick, sizeof trick);
    host->option_integer(o, "many", &many);
    host->option_boolean(o, "deep", &deep);
    host->option_integer(o, "repeat", &repeats);
    host->option_boolean(o, "fail_load", &fail_load);
    host->option_boolean(o, "lengths", &lengths);
    return ILR_OK;
}

/* ---- data items ------------------------------------------------------------------- */

/* A static item that counts its destructions (never freed: a destruction too many is
 * counted, not a crash). */
typedef struct item {
    const char *name;
    atomic_int destroyed;
} item;

static item item_a = {"A", 0}, item_b = {"B", 0}, item_c = {"C", 0}, item_d = {"D", 0},
            item_e = {"E", 0}, item_x = {"X", 0}, item_z = {"Z", 0}, item_z2 = {"Z2", 0},
            item_z3 = {"Z3", 0};
static item item_p1 = {"P1", 0}, item_p2 = {"P2", 0}, item_p3 = {"P3", 0}, item_q = {"Q", 0},
            item_y = {"Y", 0};
static atomic_int destroyed_null = 0;

static void count_destroyed(void *p) {
    if (!p) {
        atomic_fetch_add(&destroyed_null, 1);
        return;
    }
    int n = atomic_fetch_add(&((item *)p)->destroyed, 1) + 1;
    /* D and Q live until the module unloads or the profiler lets go of its methods. */
    if (p == &item_d || (p == &item_q && n == 2)) {
        char line[64];
        snprintf(line, sizeof line, "hostile_mod: %s destroyed at the end", ((item *)p)->name);
        log_line(line);
    }
}

/* What the destructors that call the host saw (-100: not run yet). */
static ilr_module kept_module;
static _Atomic ilr_edit kept_edit;
static atomic_int e_module_id = -100, e_module_item = -100, e_set_item = -100;
static atomic_int p3_set_method_item = -100, p3_body_first = -100, p3_method_item = -100,
                  p3_module_id = -100, p3_add_local = -100;

/* E (a module item): its destructor runs once module_loaded returned; it asks the host
 * with the module handle of that call, and tries to set a new item (X) with it. */
static void destroy_e(void *p) {
    uint64_t id = 0;
    void *back = NULL;
    atomic_store(&e_module_id, host->module_id(kept_module, &id));
    atomic_store(&e_module_item, host->module_item(kept_module, &back));
    atomic_store(&e_set_item, host->module_set_item(kept_module, &item_x, count_destroyed));
    log_line("hostile_mod: destructor of E ran");
    count_destroyed(p);
}

/* P3 (a method item): likewise with the edit handle of the call that set it, trying
 * to set Y. */
static void destroy_p3(void *p) {
    ilr_edit e = atomic_load(&kept_edit);
    uint32_t id = 0;
    void *back = NULL;
    uint64_t module = 0;
    uint16_t index = 0;
    atomic_store(&p3_set_method_item, host->edit_set_method_item(e, &item_y, count_destroyed));
    atomic_store(&p3_body_first, host->body_first(e, &id));
    atomic_store(&p3_method_item, host->edit_method_item(e, &back));
    atomic_store(&p3_module_id, host->module_id(e, &module));
    atomic_store(&p3_add_local, host->edit_add_local(e, "int32", &index));
    log_line("hostile_mod: destructor of P3 ran");
    count_destroyed(p);
}

/* ---- what module_loaded defines for the edits -------------------------------------- */

#define STRINGS 5
typedef struct defs {
    uint32_t wl_str;
    uint32_t strings[STRINGS];
    size_t string_lengths[STRINGS];
    uint32_t spec_bad;
    ilr_status spec_bad_status;
    uint32_t many_string;
} defs;

static defs the_defs;
static atomic_int defs_ready = 0;

/* str0: NULs inside and last; str1: non-ASCII of 2, 3 and 4 bytes (a surrogate pair in
 * UTF-16); str2: empty; str3: one NUL; str4: "str4 " and 70,000 'x'. */
static const char str0[] = "str0 a\0b\0";
static const char str1[] = "str1 \xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89";
#define LONG_X 70000
static char str4[5 + LONG_X];

/* ---- the late thread: the module handle after module_loaded returned --------------- */

static pthread_t late_thread;
static atomic_int late_started = 0, late_go = 0;
static atomic_int late_module_id = -100, late_type_ref = -100, late_set_item = -100;

static void *late(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000 && !atomic_load(&late_go); i++)
        usleep(1000);
    uint64_t id;
    uint32_t t;
    atomic_store(&late_module_id, host->module_id(kept_module, &id));
    atomic_store(&late_type_ref, host->module_type_ref(kept_module, 0x23000001, "X.Y", &t));
    atomic_store(&late_set_item, host->module_set_item(kept_module, &item_z3, count_destroyed));
    return NULL;
}

/* ---- the module handle on another thread during module_loaded ---------------------- */

typedef struct on_thread {
    ilr_module m;
    checks c;
} on_thread;

static void *elsewhere(void *arg) {
    on_thread *t = arg;
    uint64_t id;
    uint32_t tok;
    ilr_str s;
    void *p;
    expect(&t->c, "thread: module_id", host->module_id(t->m, &id), HANDLE);
    expect(&t->c, "thread: module_assembly_name", host->module_assembly_name(t->m, &s), HANDLE);
    expect(&t->c, "thread: module_type_ref", host->module_type_ref(t->m, 0x23000001, "X.Y", &tok),
           HANDLE);
    expect(&t->c, "thread: module_user_string", host->module_user_string(t->m, "x", 1, &tok),
           HANDLE);
    expect(&t->c, "thread: module_item", host->module_item(t->m, &p), HANDLE);
    expect(&t->c, "thread: module_set_item",
           host->module_set_item(t->m, &item_z2, count_destroyed), HANDLE);
    return NULL;
}

/* ---- module_loaded ----------------------------------------------------------------- */

static char *repeat(const char *head, const char *part, size_t n, const char *middle,
                    const char *close, size_t closes, const char *tail) {
    size_t size = strlen(head) + strlen(part) * n + strlen(middle) + strlen(close) * closes +
                  strlen(tail) + 1;
    char *s = malloc(size);
    if (!s)
        return NULL;
    char *at = s;
    at += sprintf(at, "%s", head);
    for (size_t i = 0; i < n; i++)
        at += sprintf(at, "%s", part);
    at += sprintf(at, "%s", middle);
    for (size_t i = 0; i < closes; i++)
        at += sprintf(at, "%s", close);
    sprintf(at, "%s", tail);
    return s;
}

static void deep_texts(checks *c, ilr_module m, uint32_t console, uint32_t list) {
    uint32_t t;
    /* At the limit (a tree 256 levels deep) and one past it. */
    char *at_limit = repeat("int32", "[]", 255, "", "", 0, "");
    char *past = repeat("int32", "[]", 256, "", "", 0, "");
    if (at_limit && past) {
        expect(c, "type_spec(int32 and 255 [])", host->module_type_spec(m, at_limit, &t), ILR_OK);
        expect(c, "type_spec(int32 and 256 [])", host->module_type_spec(m, past, &t), ARG);
    }
    free(at_limit);
    free(past);
    if (!deep)
        return;
    char generic[32];
    snprintf(generic, sizeof generic, "class 0x%08x<", (unsigned)list);
    char *texts[5] = {
        repeat("int32", "[]", 100000, "", "", 0, ""),
        repeat("", generic, 100000, "int32", ">", 100000, ""),
        repeat("!0", "*", 100000, "", "", 0, ""),
        repeat("", "method void *(", 100000, "int32", ")", 100000, ""),
        repeat("int32", " modopt(0x01000001)", 100000, "", "", 0, ""),
    };
    for (int k = 0; k < 5; k++) {
        if (!texts[k])
            continue;
        char what[64];
        snprintf(what, sizeof what, "type_spec(100,000 deep %d)", k);
        expect(c, what, host->module_type_spec(m, texts[k], &t), ARG);
        snprintf(what, sizeof what, "field_ref(100,000 deep %d)", k);
        expect(c, what, host->module_field_ref(m, console, "F", texts[k], &t), ARG);
        char *in_sig = malloc(strlen(texts[k]) + 16);
        if (in_sig) {
            sprintf(in_sig, "void (%s)", texts[k]);
            snprintf(what, sizeof what, "method_ref(void (100,000 deep %d))", k);
            expect(c, what, host->module_method_ref(m, console, "M", in_sig, &t), ARG);
            snprintf(what, sizeof what, "signature(void (100,000 deep %d))", k);
            expect(c, what, host->module_signature(m, in_sig, &t), ARG);
            free(in_sig);
        }
        free(texts[k]);
    }
    /* One word of 1,000,000 letters (which the error message quotes). */
    char *word = repeat("", "a", 1000000, "", "", 0, "");
    if (word) {
        expect(c, "type_spec(a word of 1,000,000 letters)", host->module_type_spec(m, word, &t), ARG);
        free(word);
    }
    /* A raw signature of one parameter, SZARRAY 1,000,000 times then int32. */
    size_t n = 1000000;
    uint8_t *blob = malloc(n + 4);
    if (blob) {
        blob[0] = 0x00;
        blob[1] = 0x01;
        blob[2] = 0x01;
        memset(blob + 3, 0x1D, n);
        blob[3 + n] = 0x08;
        expect(c, "signature_bytes(1,000,000 deep)", host->module_signature_bytes(m, blob, n + 4, &t),
               ARG);
        free(blob);
    }
}

static void definitions(ilr_module m) {
    checks c = {0, 0};
    static const uint8_t key[8] = {0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a};
    ilr_assembly_ref console_ref = {"System.Console", {4, 0, 0, 0}, key};
    ilr_assembly_ref collections_ref = {"System.Collections", {4, 0, 0, 0}, key};
    ilr_assembly_ref runtime_ref = {"System.Runtime", {4, 0, 0, 0}, key};
    uint32_t console_asm = 0, collections_asm = 0, runtime_asm = 0, console = 0, list = 0,
             array = 0, empty = 0, list_int32 = 0, own = 0, t = 0, t2 = 0;
    expect(&c, "assembly_ref(System.Console)", host->module_assembly_ref(m, &console_ref, &console_asm),
           ILR_OK);
    expect(&c, "assembly_ref(System.Collections)",
           host->module_assembly_ref(m, &collections_ref, &collections_asm), ILR_OK);
    expect(&c, "assembly_ref(System.Runtime)", host->module_assembly_ref(m, &runtime_ref, &runtime_asm),
           ILR_OK);
    expect(&c, "assembly_ref(System.Console) again", host->module_assembly_ref(m, &console_ref, &t),
           ILR_OK);
    expect_true(&c, "the same AssemblyRef again", t == console_asm);
    expect(&c, "type_ref(System.Console)", host->module_type_ref(m, console_asm, "System.Console", &console),
           ILR_OK);
    expect(&c, "type_ref(List`1)",
           host->module_type_ref(m, collections_asm, "System.Collections.Generic.List`1", &list),
           ILR_OK);
    expect(&c, "type_ref(System.Array)", host->module_type_ref(m, runtime_asm, "System.Array", &array),
           ILR_OK);
    expect(&c, "method_ref(WriteLine(string))",
           host->module_method_ref(m, console, "WriteLine", "void (string)", &the_defs.wl_str), ILR_OK);
    expect(&c, "method_ref(Array::Empty)",
           host->module_method_ref(m, array, "Empty", "generic 1 !!0[] ()", &empty), ILR_OK);
    char list_text[64];
    snprintf(list_text, sizeof list_text, "class 0x%08x<int32>", (unsigned)list);
    expect(&c, "type_spec(List<int32>)", host->module_type_spec(m, list_text, &list_int32), ILR_OK);
    expect(&c, "find_type(Answer)", host->module_find_type(m, "Answer", &own), ILR_OK);

    /* Null pointers, everywhere. */
    ilr_assembly_ref null_name = {NULL, {1, 0, 0, 0}, NULL};
    ilr_assembly_ref empty_name = {"", {1, 0, 0, 0}, NULL};
    ilr_assembly_ref bad_name = {"\xff\xfe", {1, 0, 0, 0}, NULL};
    ilr_str s;
    uint64_t id;
    void *p;
    static const uint8_t good_blob[] = {0x00, 0x00, 0x01};
    expect(&c, "module_id(null)", host->module_id(m, NULL), ARG);
    expect(&c, "module_assembly_name(null)", host->module_assembly_name(m, NULL), ARG);
    expect(&c, "assembly_ref(null assembly)", host->module_assembly_ref(m, NULL, &t), ARG);
    expect(&c, "assembly_ref(null token)", host->module_assembly_ref(m, &console_ref, NULL), ARG);
    expect(&c, "assembly_ref(null name)", host->module_assembly_ref(m, &null_name, &t), ARG);
    expect(&c, "assembly_ref(empty name)", host->module_assembly_ref(m, &empty_name, &t), ARG);
    expect(&c, "assembly_ref(name not UTF-8)", host->module_assembly_ref(m, &bad_name, &t), ARG);
    expect(&c, "type_ref(null name)", host->module_type_ref(m, console_asm, NULL, &t), ARG);
    expect(&c, "type_ref(null token)", host->module_type_ref(m, console_asm, "X.Y", NULL), ARG);
    expect(&c, "type_ref(empty name)", host->module_type_ref(m, console_asm, "", &t), ARG);
    expect(&c, "type_ref(name not UTF-8)", host->module_type_ref(m, console_asm, "\xc3", &t), ARG);
    expect(&c, "find_type(null name)", host->module_find_type(m, NULL, &t), ARG);
    expect(&c, "find_type(null token)", host->module_find_type(m, "Answer", NULL), ARG);
    expect(&c, "find_type(no such type)", host->module_find_type(m, "No.Such.Type", &t),
           ILR_E_NOT_FOUND);
    expect(&c, "find_type(name not UTF-8)", host->module_find_type(m, "\xff", &t), ARG);
    expect(&c, "type_spec(null text)", host->module_type_spec(m, NULL, &t), ARG);
    expect(&c, "type_spec(null token)", host->module_type_spec(m, "int32[]", NULL), ARG);
    expect(&c, "method_ref(null name)", host->module_method_ref(m, console, NULL, "void ()", &t), ARG);
    expect(&c, "method_ref(null signature)", host->module_method_ref(m, console, "M", NULL, &t), ARG);
    expect(&c, "method_ref(null token)", host->module_method_ref(m, console, "M", "void ()", NULL),
           ARG);
    expect(&c, "method_ref(empty name)", host->module_method_ref(m, console, "", "void ()", &t), ARG);
    expect(&c, "field_ref(null name)", host->module_field_ref(m, console, NULL, "int32", &t), ARG);
    expect(&c, "field_ref(null type)", host->module_field_ref(m, console, "F", NULL, &t), ARG);
    expect(&c, "field_ref(null token)", host->module_field_ref(m, console, "F", "int32", NULL), ARG);
    expect(&c, "field_ref(empty name)", host->module_field_ref(m, console, "", "int32", &t), ARG);
    expect(&c, "method_spec(null arguments)", host->module_method_spec(m, empty, NULL, &t), ARG);
    expect(&c, "method_spec(null token)", host->module_method_spec(m, empty, "int32", NULL), ARG);
    expect(&c, "user_string(null text, 5)", host->module_user_string(m, NULL, 5, &t), ARG);
    expect(&c, "user_string(null token)", host->module_user_string(m, "abc", 3, NULL), ARG);
    expect(&c, "signature(null text)", host->module_signature(m, NULL, &t), ARG);
    expect(&c, "signature(null token)", host->module_signature(m, "void ()", NULL), ARG);
    expect(&c, "signature_bytes(null blob)", host->module_signature_bytes(m, NULL, 3, &t), ARG);
    expect(&c, "signature_bytes(length 0)", host->module_signature_bytes(m, good_blob, 0, &t), ARG);
    expect(&c, "signature_bytes(null token)", host->module_signature_bytes(m, good_blob, 3, NULL), ARG);
    expect(&c, "module_item(null)", host->module_item(m, NULL), ARG);
    (void)s;
    (void)id;
    (void)p;

    /* Type texts that do not parse: as a TypeSpec and as a field's type. */
    static const char *bad_types[] = {
        "", "   ", "int33", "int32 int32", "int32[", "int32[,", "int32]", "class",
        "class 0x", "class 0x123456789", "class 0x0100000G", "class 0x06000001",
        "class 0x23000001", "class 0x0A000001", "valuetype 0x70000001", "!", "!!x", "!-1",
        "!4294967296", "method void *(", "method void (int32)", "int32\xe2\x86\x92", "\xff",
        "int32 modreq(", "int32 modreq(0x01000001", "int32 modopt()", "native", "native char",
        "int32[1...0x5]", "int32[,5]", "[]", "<int32>", "class 0x01000001<>",
        "class 0x01000001<int32", "class 0x01000001<int32,>", "int32&&&(", "void (int32)",
    };
    char what[256];
    for (size_t k = 0; k < sizeof bad_types / sizeof bad_types[0]; k++) {
        snprintf(what, sizeof what, "type_spec(\"%s\")", bad_types[k]);
        expect(&c, what, host->module_type_spec(m, bad_types[k], &t), ARG);
        snprintf(what, sizeof what, "field_ref(F, \"%s\")", bad_types[k]);
        expect(&c, what, host->module_field_ref(m, console, "F", bad_types[k], &t), ARG);
    }
    /* Method signatures that do not parse: a MemberRef's and a call site's. */
    static const char *bad_sigs[] = {
        "", "void", "void (", "void )", "(int32)", "instance", "instance void",
        "void (int32,)", "void (,)", "void (...)", "vararg void (int32, ...)",
        "generic 0 void ()", "generic void ()", "unmanaged bogus void ()", "void () extra",
        "void (void", "explicit explicit void ()", "void (int32) (int32)",
        "default vararg void ()", "\xe2\x9c\x93 ()",
    };
    for (size_t k = 0; k < sizeof bad_sigs / sizeof bad_sigs[0]; k++) {
        snprintf(what, sizeof what, "method_ref(M, \"%s\")", bad_sigs[k]);
        expect(&c, what, host->module_method_ref(m, console, "M", bad_sigs[k], &t), ARG);
        snprintf(what, sizeof what, "signature(\"%s\")", bad_sigs[k]);
        expect(&c, what, host->module_signature(m, bad_sigs[k], &t), ARG);
    }
    static const char *bad_arguments[] = {"", ",", "int32,", ", int32", "int32 string", "int32 ("};
    for (size_t k = 0; k < sizeof bad_arguments / sizeof bad_arguments[0]; k++) {
        snprintf(what, sizeof what, "method_spec(Empty, \"%s\")", bad_arguments[k]);
        expect(&c, what, host->module_method_spec(m, empty, bad_arguments[k], &t), ARG);
    }

    deep_texts(&c, m, console, list);

    /* Texts that parse, naming tokens of no row of the module. */
    char text[128];
    static const char *no_row[] = {
        "class 0x01FFFFFF", "valuetype 0x02FFFFFF", "class 0x02000000", "class 0x1BFFFFFF",
        "class 0x01000000", "int32 modreq(0x01FFFFFF)", "int32 modopt(0x1B00FFFF)",
        "method void *(class 0x01FFFFFF)", "class 0x0100FFFF[]&",
    };
    for (size_t k = 0; k < sizeof no_row / sizeof no_row[0]; k++) {
        snprintf(what, sizeof what, "type_spec(\"%s\")", no_row[k]);
        expect(&c, what, host->module_type_spec(m, no_row[k], &t), ARG);
        snprintf(what, sizeof what, "field_ref(F, \"%s\")", no_row[k]);
        expect(&c, what, host->module_field_ref(m, console, "F", no_row[k], &t), ARG);
        snprintf(text, sizeof text, "void (%s)", no_row[k]);
        snprintf(what, sizeof what, "method_ref(M, \"%s\")", text);
        expect(&c, what, host->module_method_ref(m, console, "M", text, &t), ARG);
        snprintf(what, sizeof what, "signature(\"%s\")", text);
        expect(&c, what, host->module_signature(m, text, &t), ARG);
        snprintf(what, sizeof what, "method_spec(Empty, \"%s\")", no_row[k]);
        expect(&c, what, host->module_method_spec(m, empty, no_row[k], &t), ARG);
    }
    snprintf(text, sizeof text, "class 0x%08x<class 0x01FFFFFF>", (unsigned)list);
    expect(&c, "type_spec(List<no row>)", host->module_type_spec(m, text, &t), ARG);

    /* `void` and `pinned` where a type is defined: refused outright. */
    expect(&c, "type_spec(void)", host->module_type_spec(m, "void", &t), ARG);
    expect(&c, "type_spec(int32 pinned)", host->module_type_spec(m, "int32 pinned", &t), ARG);
    expect(&c, "field_ref(F, void)", host->module_field_ref(m, console, "F", "void", &t), ARG);
    expect(&c, "field_ref(F, int32 pinned)", host->module_field_ref(m, console, "F", "int32 pinned", &t),
           ARG);
    /* Legal: a pointer to void, a byref local type as a TypeSpec. */
    expect(&c, "field_ref(F, void*)", host->module_field_ref(m, console, "F", "void*", &t), ILR_OK);
    /* `void` or `pinned` nested where no blob can hold it: the host answers a status
     * (the test asserts which one). */
    static const struct {
        const char *what;
        int kind; /* 0 type_spec, 1 field_ref, 2 method_ref, 3 signature, 4 method_spec */
        const char *text;
    } nested_void[] = {
        {"type_spec(void[])", 0, "void[]"},
        {"type_spec(void&)", 0, "void&"},
        {"type_spec(typedref[])", 0, "typedref[]"},
        {"type_spec(List<void>)", 0, NULL},
        {"field_ref(F, void[])", 1, "void[]"},
        {"field_ref(F, int32 pinned[])", 1, "int32 pinned[]"},
        {"method_ref(M, void (void))", 2, "void (void)"},
        {"method_ref(M, void (int32 pinned))", 2, "void (int32 pinned)"},
        {"signature(void (void))", 3, "void (void)"},
        {"method_spec(Empty, void)", 4, "void"},
    };
    for (size_t k = 0; k < sizeof nested_void / sizeof nested_void[0]; k++) {
        const char *tx = nested_void[k].text;
        if (!tx) {
            snprintf(text, sizeof text, "class 0x%08x<void>", (unsigned)list);
            tx = text;
        }
        ilr_status st = ILR_E_FAILED;
        switch (nested_void[k].kind) {
        case 0: st = host->module_type_spec(m, tx, &t); break;
        case 1: st = host->module_field_ref(m, console, "F", tx, &t); break;
        case 2: st = host->module_method_ref(m, console, "M", tx, &t); break;
        case 3: st = host->module_signature(m, tx, &t); break;
        default: st = host->module_method_spec(m, empty, tx, &t); break;
        }
        observe(nested_void[k].what, st, NULL);
    }

    /* Scopes of a TypeRef that are not an AssemblyRef, ModuleRef or TypeRef, or no row. */
    uint32_t scopes[] = {own, the_defs.wl_str, list_int32, 0x23000000, 0x23FFFFFF, 0x1A00FFFF,
                         0x01FFFFFF, 0, 0xFFFFFFFF, 0x70000001, 0x06000001};
    for (size_t k = 0; k < sizeof scopes / sizeof scopes[0]; k++) {
        snprintf(what, sizeof what, "type_ref(scope 0x%08x)", (unsigned)scopes[k]);
        expect(&c, what, host->module_type_ref(m, scopes[k], "X.Y", &t), ARG);
    }
    /* A nested TypeRef (scope a TypeRef) is legal. */
    expect(&c, "type_ref(nested in Console)", host->module_type_ref(m, console, "Nested", &t), ILR_OK);
    /* Parents of a MemberRef that are not a TypeRef, TypeDef, TypeSpec or ModuleRef. */
    uint32_t parents[] = {console_asm, the_defs.wl_str, 0x06000001, 0x70000001, 0x01FFFFFF,
                          0x02FFFFFF, 0x1BFFFFFF, 0x1A000000, 0, 0x04000001, 0x2B000001};
    for (size_t k = 0; k < sizeof parents / sizeof parents[0]; k++) {
        snprintf(what, sizeof what, "method_ref(parent 0x%08x)", (unsigned)parents[k]);
        expect(&c, what, host->module_method_ref(m, parents[k], "M", "void ()", &t), ARG);
        snprintf(what, sizeof what, "field_ref(parent 0x%08x)", (unsigned)parents[k]);
        expect(&c, what, host->module_field_ref(m, parents[k], "F", "int32", &t), ARG);
    }
    /* MethodSpecs: of what is no method, of no row. */
    uint32_t not_methods[] = {console, list_int32, 0x0A00FFFF, 0x0600FFFF, 0x0A000000, 0};
    for (size_t k = 0; k < sizeof not_methods / sizeof not_methods[0]; k++) {
        snprintf(what, sizeof what, "method_spec(0x%08x)", (unsigned)not_methods[k]);
        expect(&c, what, host->module_method_spec(m, not_methods[k], "int32", &t), ARG);
    }
    uint32_t empty_int32 = 0;
    expect(&c, "method_spec(Empty, int32)", host->module_method_spec(m, empty, "int32", &empty_int32),
           ILR_OK);
    expect(&c, "method_spec(a MethodSpec)", host->module_method_spec(m, empty_int32, "int32", &t), ARG);
    /* Of a method that is not generic, or with another number of arguments. */
    char more[96];
    the_defs.spec_bad_status =
        host->module_method_spec(m, the_defs.wl_str, "int32", &the_defs.spec_bad);
    snprintf(more, sizeof more, "token 0x%08x", (unsigned)the_defs.spec_bad);
    observe("method_spec(WriteLine(string), int32)", the_defs.spec_bad_status, more);
    /* Answer.exe's first MethodDef (Answer::Get): not generic either. */
    observe("method_spec(MethodDef 0x06000001, int32)",
            host->module_method_spec(m, 0x06000001, "int32", &t2), NULL);
    observe("method_spec(Empty, int32, string)",
            host->module_method_spec(m, empty, "int32, string", &t), NULL);

    /* User strings: invalid UTF-8 refused; NULs and non-ASCII taken. */
    static const char *invalid[] = {"\xff", "ok\xc3", "\xc0\x80", "\xed\xa0\x80",
                                    "ok\xf4\x90\x80\x80", "\xe2\x82"};
    for (size_t k = 0; k < sizeof invalid / sizeof invalid[0]; k++) {
        snprintf(what, sizeof what, "user_string(invalid UTF-8 %d)", (int)k);
        expect(&c, what, host->module_user_string(m, invalid[k], strlen(invalid[k]), &t), ARG);
    }
    memcpy(str4, "str4 ", 5);
    memset(str4 + 5, 'x', LONG_X);
    const char *texts[STRINGS] = {str0, str1, NULL, "\0", str4};
    size_t lengths[STRINGS] = {sizeof str0 - 1, sizeof str1 - 1, 0, 1, sizeof str4};
    for (int k = 0; k < STRINGS; k++) {
        snprintf(what, sizeof what, "user_string(%d)", k);
        expect(&c, what,
               host->module_user_string(m, texts[k], lengths[k], &the_defs.strings[k]), ILR_OK);
        the_defs.string_lengths[k] = lengths[k];
    }
    expect(&c, "user_string(str0) again", host->module_user_string(m, str0, sizeof str0 - 1, &t),
           ILR_OK);
    snprintf(more, sizeof more, "same %d", t == the_defs.strings[0]);
    observe("user_string(str0) again", ILR_OK, more);

    /* Raw signatures. */
    uint32_t void_sig = 0, void_text = 0;
    expect(&c, "signature_bytes(void ())", host->module_signature_bytes(m, good_blob, 3, &void_sig),
           ILR_OK);
    expect(&c, "signature(void ())", host->module_signature(m, "void ()", &void_text), ILR_OK);
    expect_true(&c, "the same StandAloneSig from bytes and text", void_sig == void_text);
    static const struct {
        const char *what;
        uint8_t bytes[16];
        size_t length;
    } bad_blobs[] = {
        {"truncated (no return type)", {0x00, 0x00}, 2},
        {"truncated (one byte)", {0x00}, 1},
        {"truncated (a parameter missing)", {0x00, 0x01, 0x01}, 3},
        {"truncated (a class token cut)", {0x00, 0x01, 0x01, 0x12}, 4},
        {"trailing byte", {0x00, 0x00, 0x01, 0x00}, 4},
        {"trailing bytes", {0x00, 0x00, 0x01, 0x08, 0x08, 0x08}, 6},
        {"a field signature", {0x06, 0x08}, 2},
        {"a locals signature", {0x07, 0x01, 0x08}, 3},
        {"a property signature", {0x08, 0x00, 0x08}, 3},
        {"a generic instantiation", {0x0A, 0x01, 0x08}, 3},
        {"a TypeRef of no row", {0x00, 0x01, 0x01, 0x12, 0xC0, 0x00, 0xFF, 0xFD}, 8},
        {"ELEMENT_TYPE_INTERNAL", {0x00, 0x01, 0x01, 0x21, 1, 2, 3, 4, 5, 6, 7, 8}, 12},
        {"a count of 0x1FFFFFFF", {0x00, 0xDF, 0xFF, 0xFF, 0xFF, 0x01}, 6},
        {"an element type 0xFF", {0x00, 0x00, 0xFF}, 3},
    };
    for (size_t k = 0; k < sizeof bad_blobs / sizeof bad_blobs[0]; k++) {
        snprintf(what, sizeof what, "signature_bytes(%s)", bad_blobs[k].what);
        expect(&c, what,
               host->module_signature_bytes(m, bad_blobs[k].bytes, bad_blobs[k].length, &t), ARG);
    }
    static const uint8_t void_param[] = {0x00, 0x01, 0x01, 0x01};
    observe("signature_bytes(void (void))", host->module_signature_bytes(m, void_param, 4, &t), NULL);
    static const uint8_t conv15[] = {0x0F, 0x00, 0x01};
    observe("signature_bytes(calling convention 0x0F)",
            host->module_signature_bytes(m, conv15, 3, &t), NULL);
    static const uint8_t generic0[] = {0x10, 0x00, 0x00, 0x01};
    observe("signature_bytes(generic 0)", host->module_signature_bytes(m, generic0, 4, &t), NULL);
    done(&c, "defs");
}

/* Many definitions of each kind in one call. */
static void many_definitions(ilr_module m) {
    checks c = {0, 0};
    if (many <= 0)
        return;
    static const uint8_t key[8] = {0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a};
    ilr_assembly_ref console_ref = {"System.Console", {4, 0, 0, 0}, key};
    uint32_t console_asm = 0, console = 0, t = 0, first = 0, last = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect(&c, "assembly_ref", host->module_assembly_ref(m, &console_ref, &console_asm), ILR_OK);
    expect(&c, "type_ref", host->module_type_ref(m, console_asm, "System.Console", &console), ILR_OK);
    int asm_same = 0, wl_same = 0, str_same = 0, spec_same = 0, sig_same = 0, distinct_ok = 0,
        strings_ok = 0, ascending = 1;
    uint32_t wl = 0, str = 0, spec = 0, sig = 0, previous = 0;
    char name[32];
    for (int64_t k = 0; k < many; k++) {
        snprintf(name, sizeof name, "M%lld", (long long)k);
        ilr_status st = host->module_method_ref(m, console, name, "void ()", &t);
        distinct_ok += st == ILR_OK;
        if (k == 0)
            first = t;
        if (t <= previous)
            ascending = 0;
        previous = t;
        last = t;
        snprintf(name, sizeof name, "s%lld", (long long)k);
        strings_ok += host->module_user_string(m, name, strlen(name), &the_defs.many_string) ==
                      ILR_OK;
        if (host->module_assembly_ref(m, &console_ref, &t) == ILR_OK && t == console_asm)
            asm_same++;
        if (host->module_method_ref(m, console, "WriteLine", "void (string)", &t) == ILR_OK) {
            if (k == 0)
                wl = t;
            wl_same += t == wl;
        }
        if (host->module_user_string(m, "same", 4, &t) == ILR_OK) {
            if (k == 0)
                str = t;
            str_same += t == str;
        }
        if (host->module_type_spec(m, "int32[]", &t) == ILR_OK) {
            if (k == 0)
                spec = t;
            spec_same += t == spec;
        }
        if (host->module_signature(m, "void (int32)", &t) == ILR_OK) {
            if (k == 0)
                sig = t;
            sig_same += t == sig;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    expect_true(&c, "every distinct MemberRef defined", distinct_ok == many);
    expect_true(&c, "the distinct MemberRefs are new rows, in order",
                ascending && last - first == (uint32_t)(many - 1));
    expect_true(&c, "every distinct user string defined", strings_ok == many);
    expect_true(&c, "the same AssemblyRef each time", asm_same == many);
    expect_true(&c, "the same StandAloneSig each time", sig_same == many);
    char line[256];
    snprintf(line, sizeof line,
             "hostile_mod: observe many %lld: same MemberRef %d, same user string %d, same "
             "TypeSpec %d, in %ld ms",
             (long long)many, wl_same, str_same, spec_same, ms);
    log_line(line);
    done(&c, "many");
}

/* The module handle given to the functions of other handles, and handles made up. */
static void kinds(ilr_module m) {
    checks c = {0, 0};
    uint32_t id, a;
    int32_t b;
    uint8_t e;
    ilr_str s;
    void *p;
    uint16_t index;
    int64_t v;
    uint64_t module;
    ilr_instruction nop = {0, 0x00, ILR_OPERAND_NONE, 0};
    ilr_wrap w = {sizeof w, &nop, 1, NULL, 0, NULL, 0, NULL};
    expect(&c, "body_first(module)", host->body_first(m, &id), HANDLE);
    expect(&c, "edit_name(module)", host->edit_name(m, &s), HANDLE);
    expect(&c, "edit_return_type(module)", host->edit_return_type(m, &e), HANDLE);
    expect(&c, "edit_method(module)", host->edit_method(m, &module, &id), HANDLE);
    expect(&c, "insert_at_entry(module)", host->body_insert_at_entry(m, &nop, 1, NULL), HANDLE);
    expect(&c, "edit_add_local(module)", host->edit_add_local(m, "int32", &index), HANDLE);
    expect(&c, "edit_wrap(module)", host->edit_wrap(m, &w), HANDLE);
    expect(&c, "edit_single_ret(module)", host->edit_single_ret(m, &a, &b), HANDLE);
    expect(&c, "edit_module_item(module)", host->edit_module_item(m, &p), HANDLE);
    expect(&c, "edit_method_item(module)", host->edit_method_item(m, &p), HANDLE);
    expect(&c, "edit_set_method_item(module)",
           host->edit_set_method_item(m, &item_z, count_destroyed), HANDLE);
    expect(&c, "option_integer(module)", host->option_integer(m, "many", &v), HANDLE);
    expect(&c, "candidate_name(module)", host->candidate_name(m, &s), HANDLE);
    expect(&c, "candidate_is_target(module)", host->candidate_is_target(m, &b), HANDLE);
    expect(&c, "module_id(0)", host->module_id(0, &module), HANDLE);
    expect(&c, "module_id(UINT64_MAX)", host->module_id(UINT64_MAX, &module), HANDLE);
    expect(&c, "module_id(module + 1)", host->module_id(m + 1, &module), HANDLE);
    expect(&c, "module_id(module - 1)", host->module_id(m - 1, &module), HANDLE);
    expect(&c, "module_id(start's options)", host->module_id(start_options, &module), HANDLE);
    expect(&c, "module_set_item(start's options)",
           host->module_set_item(start_options, &item_z, count_destroyed), HANDLE);
    expect(&c, "module_id(module)", host->module_id(m, &module), ILR_OK);
    on_thread th = {m, {0, 0}};
    pthread_t thread;
    if (pthread_create(&thread, NULL, elsewhere, &th) == 0) {
        pthread_join(thread, NULL);
        c.made += th.c.made;
        c.wrong += th.c.wrong;
    } else {
        expect_true(&c, "a thread", 0);
    }
    done(&c, "kinds");
}

/* Set, replace and remove the module's item. */
static void module_items(ilr_module m) {
    checks c = {0, 0};
    void *p = NULL;
    expect(&c, "module_item(none yet)", host->module_item(m, &p), ILR_E_NOT_FOUND);
    expect(&c, "set A", host->module_set_item(m, &item_a, count_destroyed), ILR_OK);
    expect(&c, "module_item is A", host->module_item(m, &p) == ILR_OK && p == &item_a ? 0 : -1,
           ILR_OK);
    expect(&c, "set B", host->module_set_item(m, &item_b, count_destroyed), ILR_OK);
    expect_true(&c, "A not destroyed during the call", atomic_load(&item_a.destroyed) == 0);
    expect_true(&c, "module_item is B", host->module_item(m, &p) == ILR_OK && p == &item_b);
    expect(&c, "set null (with a destructor)", host->module_set_item(m, NULL, count_destroyed),
           ILR_OK);
    expect(&c, "module_item after null", host->module_item(m, &p), ILR_E_NOT_FOUND);
    expect_true(&c, "B not destroyed during the call", atomic_load(&item_b.destroyed) == 0);
    expect(&c, "set null (no destructor)", host->module_set_item(m, NULL, NULL), ILR_OK);
    expect(&c, "set C (no destructor)", host->module_set_item(m, &item_c, NULL), ILR_OK);
    expect(&c, "set E (a destructor that calls the host)", host->module_set_item(m, &item_e, destroy_e),
           ILR_OK);
    expect(&c, "set D", host->module_set_item(m, &item_d, count_destroyed), ILR_OK);
    expect_true(&c, "E not destroyed during the call", atomic_load(&item_e.destroyed) == 0);
    expect_true(&c, "module_item is D", host->module_item(m, &p) == ILR_OK && p == &item_d);
    done(&c, "module items");
}

/* A 100,000-byte line for host->log: "hostile_mod: long line " then 'y's. */
static char long_line[100000];

/* Lengths no buffer can have, given with real buffers that are invalid from their first
 * bytes on. */
static void module_lengths(ilr_module m) {
    checks c = {0, 0};
    uint32_t t;
    static const char bad_utf8[64] = "a\xff";
    static const uint8_t trailing[64] = {0x00, 0x00, 0x01, 0xFF};
    expect(&c, "user_string(length SIZE_MAX)", host->module_user_string(m, bad_utf8, SIZE_MAX, &t),
           ARG);
    expect(&c, "user_string(length 2^62)",
           host->module_user_string(m, bad_utf8, (size_t)1 << 62, &t), ARG);
    expect(&c, "user_string(length 2^40)",
           host->module_user_string(m, bad_utf8, (size_t)1 << 40, &t), ARG);
    expect(&c, "signature_bytes(length SIZE_MAX)",
           host->module_signature_bytes(m, trailing, SIZE_MAX, &t), ARG);
    expect(&c, "signature_bytes(length 2^40)",
           host->module_signature_bytes(m, trailing, (size_t)1 << 40, &t), ARG);
    memset(long_line, 'y', sizeof long_line);
    memcpy(long_line, "hostile_mod: long line ", 23);
    host->log(long_line, sizeof long_line);
    host->log(long_line, SIZE_MAX);
    log_line("hostile_mod: logged the long lines");
    done(&c, "lengths");
}

static ilr_status module_loaded(void *self, ilr_module m, ilr_error *error) {
    (void)self;
    ilr_str name;
    if (host->module_assembly_name(m, &name) != ILR_OK || name.length != strlen(assembly) ||
        memcmp(name.data, assembly, name.length) != 0)
        return ILR_OK;
    kept_module = m;
    definitions(m);
    many_definitions(m);
    kinds(m);
    module_items(m);
    if (lengths)
        module_lengths(m);
    atomic_store(&defs_ready, 1);
    if (!atomic_exchange(&late_started, 1) && pthread_create(&late_thread, NULL, late, NULL) != 0)
        atomic_store(&late_started, 2);
    if (fail_load) {
        static const char message[] = "hostile_mod: module_loaded fails on purpose";
        size_t n = sizeof message - 1 < error->capacity ? sizeof message - 1 : error->capacity;
        memcpy(error->data, message, n);
        error->length = n;
        return ILR_E_FAILED;
    }
    return ILR_OK;
}

/* ---- edit -------------------------------------------------------------------------- */

#define I(op, kind, value) {0, (uint16_t)(op), (uint16_t)(kind), (int64_t)(value)}

/* The edit handle (and its options handle) given to the module functions; the module
 * handle kept from module_loaded. */
static void edit_kinds(ilr_edit e) {
    checks c = {0, 0};
    uint64_t id;
    uint32_t t;
    ilr_str s;
    void *p;
    ilr_options o = 0;
    expect(&c, "edit_options", host->edit_options(e, &o), ILR_OK);
    ilr_module handles[3] = {e, o, kept_module};
    const char *names[3] = {"edit", "edit's options", "kept module"};
    char what[128];
    for (int k = 0; k < 3; k++) {
        ilr_module h = handles[k];
        snprintf(what, sizeof what, "module_id(%s)", names[k]);
        expect(&c, what, host->module_id(h, &id), HANDLE);
        snprintf(what, sizeof what, "module_assembly_name(%s)", names[k]);
        expect(&c, what, host->module_assembly_name(h, &s), HANDLE);
        snprintf(what, sizeof what, "module_type_ref(%s)", names[k]);
        expect(&c, what, host->module_type_ref(h, 0x23000001, "X.Y", &t), HANDLE);
        snprintf(what, sizeof what, "module_user_string(%s)", names[k]);
        expect(&c, what, host->module_user_string(h, "late", 4, &t), HANDLE);
        snprintf(what, sizeof what, "module_signature(%s)", names[k]);
        expect(&c, what, host->module_signature(h, "void ()", &t), HANDLE);
        snprintf(what, sizeof what, "module_item(%s)", names[k]);
        expect(&c, what, host->module_item(h, &p), HANDLE);
        snprintf(what, sizeof what, "module_set_item(%s)", names[k]);
        expect(&c, what, host->module_set_item(h, &item_z, count_destroyed), HANDLE);
    }
    done(&c, "edit kinds");
}

/* Set, replace and remove the method's item (in Program::Main's edit). */
static void method_items(ilr_edit e) {
    checks c = {0, 0};
    void *p = NULL;
    atomic_store(&kept_edit, e);
    expect(&c, "edit_method_item(null)", host->edit_method_item(e, NULL), ARG);
    expect(&c, "edit_module_item(null)", host->edit_module_item(e, NULL), ARG);
    expect(&c, "edit_method_item(none yet)", host->edit_method_item(e, &p), ILR_E_NOT_FOUND);
    expect_true(&c, "edit_module_item is D", host->edit_module_item(e, &p) == ILR_OK && p == &item_d);
    expect(&c, "set P1", host->edit_set_method_item(e, &item_p1, count_destroyed), ILR_OK);
    expect_true(&c, "method item is P1", host->edit_method_item(e, &p) == ILR_OK && p == &item_p1);
    expect(&c, "set P2", host->edit_set_method_item(e, &item_p2, count_destroyed), ILR_OK);
    expect_true(&c, "P1 not destroyed during the call", atomic_load(&item_p1.destroyed) == 0);
    expect_true(&c, "method item is P2", host->edit_method_item(e, &p) == ILR_OK && p == &item_p2);
    expect(&c, "set null", host->edit_set_method_item(e, NULL, count_destroyed), ILR_OK);
    expect(&c, "method item after null", host->edit_method_item(e, &p), ILR_E_NOT_FOUND);
    expect(&c, "set null again, no destructor", host->edit_set_method_item(e, NULL, NULL), ILR_OK);
    expect(&c, "set P3 (a destructor that calls the host)",
           host->edit_set_method_item(e, &item_p3, destroy_p3), ILR_OK);
    /* The same pointer twice: the host takes the second as a replacement of the first,
     * whose destructor it calls (with this pointer) once this call returned. */
    expect(&c, "set Q", host->edit_set_method_item(e, &item_q, count_destroyed), ILR_OK);
    expect(&c, "set Q again", host->edit_set_method_item(e, &item_q, count_destroyed), ILR_OK);
    expect_true(&c, "method item is Q", host->edit_method_item(e, &p) == ILR_OK && p == &item_q);
    expect_true(&c, "nothing destroyed during the call",
                atomic_load(&item_p1.destroyed) + atomic_load(&item_p2.destroyed) +
                        atomic_load(&item_p3.destroyed) + atomic_load(&item_q.destroyed) ==
                    0);
    done(&c, "method items");
}

/* In Answer::Get's edit: what happened after the calls before returned. */
static void after(ilr_edit e) {
    checks c = {0, 0};
    void *p = NULL;
    expect_true(&c, "A destroyed once", atomic_load(&item_a.destroyed) == 1);
    expect_true(&c, "B destroyed once", atomic_load(&item_b.destroyed) == 1);
    expect_true(&c, "C (no destructor) never", atomic_load(&item_c.destroyed) == 0);
    expect_true(&c, "D (the module's item) not yet", atomic_load(&item_d.destroyed) == 0);
    expect_true(&c, "E destroyed once", atomic_load(&item_e.destroyed) == 1);
    expect_true(&c, "no destructor called with null", atomic_load(&destroyed_null) == 0);
    expect(&c, "E's destructor: module_id(its call's handle)", atomic_load(&e_module_id), HANDLE);
    expect(&c, "E's destructor: module_item", atomic_load(&e_module_item), HANDLE);
    expect(&c, "E's destructor: module_set_item(X)", atomic_load(&e_set_item), HANDLE);
    expect_true(&c, "X (set by a destructor) never taken", atomic_load(&item_x.destroyed) == 0);
    expect_true(&c, "Z, Z2 (refused items) never destroyed",
                atomic_load(&item_z.destroyed) + atomic_load(&item_z2.destroyed) == 0);
    expect_true(&c, "P1 destroyed once", atomic_load(&item_p1.destroyed) == 1);
    expect_true(&c, "P2 destroyed once", atomic_load(&item_p2.destroyed) == 1);
    expect_true(&c, "P3 destroyed once", atomic_load(&item_p3.destroyed) == 1);
    expect_true(&c, "Q's first registration destroyed, once",
                atomic_load(&item_q.destroyed) == 1);
    expect(&c, "P3's destructor: edit_set_method_item(Y)", atomic_load(&p3_set_method_item), HANDLE);
    expect(&c, "P3's destructor: body_first", atomic_load(&p3_body_first), HANDLE);
    expect(&c, "P3's destructor: edit_method_item", atomic_load(&p3_method_item), HANDLE);
    expect(&c, "P3's destructor: module_id(edit)", atomic_load(&p3_module_id), HANDLE);
    expect(&c, "P3's destructor: edit_add_local", atomic_load(&p3_add_local), HANDLE);
    expect_true(&c, "Y (set by a destructor) never taken", atomic_load(&item_y.destroyed) == 0);
    expect(&c, "Get's own method item", host->edit_method_item(e, &p), ILR_E_NOT_FOUND);
    /* The late thread: the module handle after its call returned, on another thread. */
    if (atomic_load(&late_started) == 1) {
        atomic_store(&late_go, 1);
        pthread_join(late_thread, NULL);
        atomic_store(&late_started, 3);
        expect(&c, "late thread: module_id", atomic_load(&late_module_id), HANDLE);
        expect(&c, "late thread: module_type_ref", atomic_load(&late_type_ref), HANDLE);
        expect(&c, "late thread: module_set_item", atomic_load(&late_set_item), HANDLE);
        expect_true(&c, "Z3 never taken", atomic_load(&item_z3.destroyed) == 0);
    } else {
        expect_true(&c, "the late thread ran", 0);
    }
    done(&c, "after");
}

/* Counts no array can have, given with a real array whose second instruction is
 * already invalid: refused, the body unchanged. */
static void edit_lengths(ilr_edit e) {
    checks c = {0, 0};
    ilr_instruction code[2] = {I(0x00 /* nop */, ILR_OPERAND_NONE, 0), I(0xFFFF, ILR_OPERAND_NONE, 0)};
    size_t counts[3] = {SIZE_MAX, (size_t)1 << 62, (size_t)1 << 40};
    char what[96];
    for (int k = 0; k < 3; k++) {
        snprintf(what, sizeof what, "insert_at_entry(count %d)", k);
        expect(&c, what, host->body_insert_at_entry(e, code, counts[k], NULL), ARG);
        snprintf(what, sizeof what, "insert_before_returns(count %d)", k);
        expect(&c, what, host->body_insert_before_returns(e, code, counts[k]), ARG);
        ilr_wrap w = {sizeof w, code, counts[k], NULL, 0, NULL, 0, NULL};
        snprintf(what, sizeof what, "wrap(entry count %d)", k);
        expect(&c, what, host->edit_wrap(e, &w), ARG);
        ilr_wrap x = {sizeof x, NULL, 0, code, counts[k], NULL, 0, NULL};
        snprintf(what, sizeof what, "wrap(exit count %d)", k);
        expect(&c, what, host->edit_wrap(e, &x), ARG);
    }
    done(&c, "edit lengths");
}

/* Resident memory, in KiB (Linux). */
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* `repeat` calls of each host function that gives something kept until the call
 * returns: the growth of resident memory while the call runs. */
static void repeated(ilr_edit e) {
    const char *names[3] = {"edit_name", "edit_module_item", "edit_options + option_string"};
    for (int k = 0; k < 3; k++) {
        long before = rss_kib();
        ilr_str s;
        void *p;
        ilr_options o;
        int ok = 0;
        for (int64_t i = 0; i < repeats; i++) {
            switch (k) {
            case 0: ok += host->edit_name(e, &s) == ILR_OK; break;
            case 1: ok += host->edit_module_item(e, &p) == ILR_OK; break;
            default:
                ok += host->edit_options(e, &o) == ILR_OK &&
                      host->option_string(o, "assembly", &s) == ILR_OK;
                break;
            }
        }
        char line[200];
        snprintf(line, sizeof line,
                 "hostile_mod: observe %lld calls of %s (%d OK): resident memory grew %ld KiB",
                 (long long)repeats, names[k], ok, rss_kib() - before);
        log_line(line);
    }
}

static void destroy(void *self) {
    (void)self;
    log_line("hostile_mod: destroy");
}

static int is_named(ilr_str name) {
    return (name.length == 13 && memcmp(name.data, "Program::Main", 13) == 0) ||
           (name.length == 11 && memcmp(name.data, "Answer::Get", 11) == 0);
}

static int32_t wants(void *self, ilr_candidate candidate) {
    (void)self;
    ilr_str name;
    if (host->candidate_name(candidate, &name) != ILR_OK)
        return ILR_WANT_NO;
    return is_named(name) ? ILR_WANT_EDIT : ILR_WANT_NO;
}

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    (void)self;
    (void)error;
    *changed = 0;
    ilr_str name;
    if (host->edit_name(e, &name) != ILR_OK || !atomic_load(&defs_ready))
        return ILR_OK;
    int is_main = name.length == 13 && memcmp(name.data, "Program::Main", 13) == 0;
    int is_get = name.length == 11 && memcmp(name.data, "Answer::Get", 11) == 0;
    if (!is_main && !is_get)
        return ILR_OK;
    edit_kinds(e);
    if (is_main) {
        method_items(e);
        return ILR_OK;
    }
    after(e);
    if (repeats > 0)
        repeated(e);
    if (lengths)
        edit_lengths(e);
    if (strcmp(trick, "strings") == 0) {
        ilr_instruction code[2 * STRINGS];
        for (int k = 0; k < STRINGS; k++) {
            code[2 * k] = (ilr_instruction)I(0x72 /* ldstr */, ILR_OPERAND_TOKEN, the_defs.strings[k]);
            code[2 * k + 1] = (ilr_instruction)I(0x28 /* call */, ILR_OPERAND_TOKEN, the_defs.wl_str);
        }
        ilr_status st = host->body_insert_at_entry(e, code, 2 * STRINGS, NULL);
        observe("strings inserted", st, NULL);
        *changed = st == ILR_OK;
    } else if (strcmp(trick, "spec") == 0 && the_defs.spec_bad_status == ILR_OK) {
        ilr_instruction code[2] = {I(0x72, ILR_OPERAND_TOKEN, the_defs.strings[1]),
                                   I(0x28, ILR_OPERAND_TOKEN, the_defs.spec_bad)};
        ilr_status st = host->body_insert_at_entry(e, code, 2, NULL);
        observe("spec inserted", st, NULL);
        *changed = st == ILR_OK;
    } else if (strcmp(trick, "many") == 0 && many > 0) {
        ilr_instruction code[2] = {I(0x72, ILR_OPERAND_TOKEN, the_defs.many_string),
                                   I(0x28, ILR_OPERAND_TOKEN, the_defs.wl_str)};
        ilr_status st = host->body_insert_at_entry(e, code, 2, NULL);
        observe("many inserted", st, NULL);
        *changed = st == ILR_OK;
    }
    return ILR_OK;
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    m->name = "hostile_mod";
    m->priority = 10;
    m->options = option_table;
    m->option_count = sizeof option_table / sizeof option_table[0];
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    m->module_loaded = module_loaded;
    m->destroy = destroy;
    return ILR_OK;
}
