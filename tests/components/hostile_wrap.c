/*
 * hostile_wrap: an instrumentation method that misuses the host's whole-body edits on
 * purpose (tests/clr_components_hostile_module.rs): edit_add_local, edit_single_ret,
 * edit_wrap and the pseudo-operands of a wrap's code, ILR_OPERAND_CODE. Each status it
 * gets is logged ("hostile_wrap: <what> status S"); the checks whose answer the ABI
 * promises are counted as hostile_mod does: "hostile_wrap: WRONG ..." and a summary
 * "hostile_wrap: <batch> done, N checks, W wrong".
 *
 * Options:
 *   assembly (string)   the assembly where module_loaded defines what the code prints
 *                       with: Console.WriteLine(string/int32/int64) and user strings
 *                       (kept in the module's item; other modules get none)
 *   method   (string)   the method it edits, by name as edit_name gives it; or
 *   prefix   (string)   every method whose name starts with it
 *   want     (integer)  what `wants` answers for them (1 by default; 2: single-ret)
 *   trick    (string)   what the edit does (below)
 *   case     (integer)  a trick's variant
 *
 * Tricks:
 *   locals       LocalsLimit's methods at the limit of 65,535 locals, `case`:
 *                0 (Full, void, 65,535): add_local int32 and int64 refused, a wrap with a
 *                  state local refused, then a wrap that needs no local (prints "full
 *                  enter" / "full exit") taken;
 *                1 (AlmostFull, int32, 65,534): add_local taken (index 65,534), a second
 *                  refused, a wrap needing a return-value local refused; the edit then
 *                  fails with the wrap's status (all rolled back);
 *                2 (AlmostFull): a wrap whose on_return prints the return-value local
 *                  (the 65,535th local) taken;
 *                3 (AlmostFull): a wrap with a state local and a return-value local
 *                  (65,536) refused; returns ILR_OK;
 *                4 (FullReturning, int32, 65,535): a wrap needing a return-value local
 *                  and add_local refused; returns ILR_OK;
 *                5 (AlmostFull): add_local taken, and nothing else (65,535 locals).
 *   local_types  add_local with type texts: null, void, unparsable, tokens of no row, a
 *                TypeDef row of another module, 100,000 deep; then legal ones (byref,
 *                pinned, typedref, void*, a class of the module); then `+ 1000` before
 *                every ret (answer 1041).
 *   single_ret   edit_single_ret: null pointers; without having asked (want 1): logs
 *                the status ("single_ret without having asked"); having asked (want 2):
 *                the epilogue, then `+ 1000` through the return-value local before it.
 *   ret_after_wrap  (want 2) a wrap (entry prints "hostile_wrap enter"), then
 *                edit_single_ret, then the return-value local printed before the
 *                epilogue (ILR_REDIRECT).
 *   wrap_twice   two wraps in one edit: the first prints "w1 enter", "w1 exit" and the
 *                return value; the second (its `size` 64 bytes larger than the struct, as
 *                a newer library's) prints "w2 enter", "w2 exit" and adds 100 to the
 *                return value.
 *   plain        the same simple wrap of every method edited (state local set in entry,
 *                read in exit, the return-value local read in on_return): nothing
 *                observable; logs "hostile_wrap: wrap NAME status S".
 *   print        a wrap printing "hostile_wrap enter" and "hostile_wrap exit" (and
 *                nothing on return); logs the status.
 *   misuse       every misuse of ilr_wrap and its pseudo-operands (each refused, the
 *                body unchanged), then a valid wrap whose entry prints the method id and
 *                module id (METHOD_ID, MODULE_ID), runs a backward ILR_OPERAND_CODE loop,
 *                and whose on_return adds 1000 to the return value (or prints "void
 *                ret" for a void method); logs "hostile_wrap: method T module M".
 *   exit_leaves  a wrap whose exit leaves an int32 on the stack; returns ILR_OK.
 *   entry_leaves a wrap whose entry leaves an int32 on the stack; returns ILR_OK.
 *   localloc     `case` 0: a wrap whose exit (a finally handler) does `ldc.i4.4;
 *                localloc; pop`; 1: the same in the entry (before the try); logs the
 *                status, returns ILR_OK.
 *   self_loop    `case` 0: a wrap whose entry has a `br` to itself; 1: the same code
 *                inserted at the entry; logs the status, then fails (rolled back).
 *   huge         a wrap whose entry is `case` nops; logs the status and milliseconds.
 *   nop          a `nop` inserted at the entry (with want = 2: the single-ret kept);
 *                logs "hostile_wrap: nop NAME status S".
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ilrewrite_method.h"

static const ilr_host *host;

static char assembly[256];
static char method[256];
static char prefix[256];
static char trick[64];
static int64_t want = ILR_WANT_EDIT;
static int64_t which = 0;

static const ilr_option_spec option_table[] = {
    {"assembly", ILR_OPTION_STRING}, {"method", ILR_OPTION_STRING},
    {"prefix", ILR_OPTION_STRING},   {"want", ILR_OPTION_INTEGER},
    {"trick", ILR_OPTION_STRING},    {"case", ILR_OPTION_INTEGER},
};

#define ARG ILR_E_INVALID_ARGUMENT
#define REFUSED ILR_E_REFUSED

static void log_line(const char *text) { host->log(text, strlen(text)); }

typedef struct checks {
    int made;
    int wrong;
} checks;

static void expect(checks *c, const char *what, ilr_status got, ilr_status want_status) {
    c->made++;
    if (got == want_status)
        return;
    c->wrong++;
    char line[512];
    snprintf(line, sizeof line, "hostile_wrap: WRONG %s: status %d, expected %d", what, (int)got,
             (int)want_status);
    log_line(line);
}

static void expect2(checks *c, const char *what, ilr_status got, ilr_status a, ilr_status b) {
    expect(c, what, got == b ? a : got, a);
}

static void done(const checks *c, const char *what) {
    char line[160];
    snprintf(line, sizeof line, "hostile_wrap: %s done, %d checks, %d wrong", what, c->made,
             c->wrong);
    log_line(line);
}

static void status(const char *what, ilr_status st) {
    char line[512];
    snprintf(line, sizeof line, "hostile_wrap: %s status %d", what, (int)st);
    log_line(line);
}

static void say(ilr_error *error, const char *text) {
    size_t n = strlen(text);
    if (n > error->capacity)
        n = error->capacity;
    memcpy(error->data, text, n);
    error->length = n;
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
    str_to(o, "assembly", assembly, sizeof assembly);
    str_to(o, "method", method, sizeof method);
    str_to(o, "prefix", prefix, sizeof prefix);
    str_to(o, "trick", trick, sizeof trick);
    host->option_integer(o, "want", &want);
    host->option_integer(o, "case", &which);
    return ILR_OK;
}

static int selected(ilr_str name) {
    if (method[0])
        return name.length == strlen(method) && memcmp(name.data, method, name.length) == 0;
    size_t n = strlen(prefix);
    return n > 0 && name.length >= n && memcmp(name.data, prefix, n) == 0;
}

static int32_t wants(void *self, ilr_candidate candidate) {
    (void)self;
    ilr_str name;
    if (host->candidate_name(candidate, &name) != ILR_OK || !selected(name))
        return ILR_WANT_NO;
    return (int32_t)want;
}

/* ---- module_loaded: what the code prints with -------------------------------------- */

enum { S_ENTER, S_EXIT, S_W1_ENTER, S_W1_EXIT, S_W2_ENTER, S_W2_EXIT, S_FULL_ENTER, S_FULL_EXIT,
       S_VOID_RET, S_COUNT };
static const char *const string_texts[S_COUNT] = {
    "hostile_wrap enter", "hostile_wrap exit", "w1 enter",  "w1 exit",      "w2 enter",
    "w2 exit",            "full enter",        "full exit", "void ret",
};

typedef struct defs {
    uint32_t wl_str, wl_i4, wl_i8;
    uint32_t strings[S_COUNT];
} defs;

static ilr_status module_loaded(void *self, ilr_module m, ilr_error *error) {
    (void)self;
    ilr_str name;
    if (host->module_assembly_name(m, &name) != ILR_OK || name.length != strlen(assembly) ||
        memcmp(name.data, assembly, name.length) != 0)
        return ILR_OK;
    static const uint8_t key[8] = {0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a};
    ilr_assembly_ref a = {"System.Console", {4, 0, 0, 0}, key};
    uint32_t console_asm = 0, console = 0;
    defs *d = calloc(1, sizeof *d);
    if (!d)
        return ILR_E_FAILED;
    int ok = host->module_assembly_ref(m, &a, &console_asm) == ILR_OK &&
             host->module_type_ref(m, console_asm, "System.Console", &console) == ILR_OK &&
             host->module_method_ref(m, console, "WriteLine", "void (string)", &d->wl_str) ==
                 ILR_OK &&
             host->module_method_ref(m, console, "WriteLine", "void (int32)", &d->wl_i4) ==
                 ILR_OK &&
             host->module_method_ref(m, console, "WriteLine", "void (int64)", &d->wl_i8) == ILR_OK;
    for (int k = 0; ok && k < S_COUNT; k++)
        ok = host->module_user_string(m, string_texts[k], strlen(string_texts[k]),
                                      &d->strings[k]) == ILR_OK;
    if (!ok || host->module_set_item(m, d, free) != ILR_OK) {
        free(d);
        say(error, "hostile_wrap: a definition failed");
        return ILR_E_FAILED;
    }
    return ILR_OK;
}

/* ---- helpers ----------------------------------------------------------------------- */

#define I(op, kind, value) {0, (uint16_t)(op), (uint16_t)(kind), (int64_t)(value)}
#define N(op) I(op, ILR_OPERAND_NONE, 0)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define NOP 0x00
#define LDARG_0 0x02
#define LDC_I4_1 0x17
#define LDC_I4_3 0x19
#define LDC_I4_S 0x1F
#define LDC_I4 0x20
#define LDC_I8 0x21
#define POP 0x26
#define JMP 0x27
#define CALL 0x28
#define RET 0x2A
#define BR_S 0x2B
#define BRTRUE_S 0x2D
#define BR 0x38
#define SWITCH 0x45
#define ADD 0x58
#define SUB 0x59
#define DUP 0x25
#define LDSTR 0x72
#define THROW 0x7A
#define ENDFINALLY 0xDC
#define LEAVE 0xDD
#define LEAVE_S 0xDE
#define STARG_S 0x10
#define LDLOC 0xFE0C
#define LDLOC_S 0x11
#define STLOC 0xFE0E
#define TAIL 0xFE14
#define RETHROW 0xFE1A
#define ARGLIST 0xFE00
#define VOLATILE 0xFE13
#define NEWOBJ 0x73
#define CALLVIRT 0x6F
#define LDC_I4_4 0x1A
#define LOCALLOC 0xFE0F

/* A copy of the body, instruction by instruction (the first 256). */
typedef struct snapshot {
    uint32_t count;
    ilr_instruction code[256];
} snapshot;

static void take(ilr_edit e, snapshot *s) {
    uint32_t id = 0;
    s->count = 0;
    host->body_first(e, &id);
    while (id != 0 && s->count < 256) {
        host->body_get(e, id, &s->code[s->count++]);
        if (host->body_next(e, id, &id) != ILR_OK)
            break;
    }
}

static int same(const snapshot *a, const snapshot *b) {
    return a->count == b->count && memcmp(a->code, b->code, a->count * sizeof a->code[0]) == 0;
}

static ilr_wrap wrap_of(const ilr_instruction *entry, size_t entry_count,
                        const ilr_instruction *exit_code, size_t exit_count,
                        const ilr_instruction *on_return, size_t on_return_count,
                        const char *state_local) {
    ilr_wrap w = {sizeof w, entry, entry_count, exit_code, exit_count, on_return,
                  on_return_count, state_local};
    return w;
}

static int returns_value(ilr_edit e) {
    uint8_t ret = 0;
    return host->edit_return_type(e, &ret) == ILR_OK && ret != 0x01;
}

/* ---- tricks ------------------------------------------------------------------------ */

static ilr_status locals(const defs *d, ilr_edit e, int32_t *changed, ilr_error *error) {
    uint16_t index = 0;
    char line[128];
    ilr_instruction print_ret[] = {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), I(CALL, ILR_OPERAND_TOKEN, d->wl_i4)};
    ilr_instruction set_state[] = {N(LDC_I4_1), I(STLOC, ILR_OPERAND_STATE_LOCAL, 0)};
    ilr_wrap w;
    ilr_status st;
    switch (which) {
    case 0: {
        status("locals 0 add_local int32", host->edit_add_local(e, "int32", &index));
        status("locals 0 add_local int64", host->edit_add_local(e, "int64", &index));
        w = wrap_of(set_state, 2, NULL, 0, NULL, 0, "int32");
        status("locals 0 wrap with a state local", host->edit_wrap(e, &w));
        ilr_instruction entry[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_FULL_ENTER]),
                                   I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
        ilr_instruction exit_code[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_FULL_EXIT]),
                                       I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
        w = wrap_of(entry, 2, exit_code, 2, NULL, 0, NULL);
        st = host->edit_wrap(e, &w);
        status("locals 0 wrap without locals", st);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    case 1:
        st = host->edit_add_local(e, "int32", &index);
        snprintf(line, sizeof line, "locals 1 add_local int32 (index %u)", (unsigned)index);
        status(line, st);
        status("locals 1 add_local int32 again", host->edit_add_local(e, "int32", &index));
        w = wrap_of(NULL, 0, NULL, 0, print_ret, 2, NULL);
        st = host->edit_wrap(e, &w);
        status("locals 1 wrap with a return-value local", st);
        if (st != ILR_OK) {
            say(error, "hostile_wrap: the wrap was refused, the edit fails");
            return st;
        }
        *changed = 1;
        return ILR_OK;
    case 2:
        w = wrap_of(NULL, 0, NULL, 0, print_ret, 2, NULL);
        st = host->edit_wrap(e, &w);
        status("locals 2 wrap with a return-value local", st);
        *changed = st == ILR_OK;
        return ILR_OK;
    case 3:
        w = wrap_of(set_state, 2, NULL, 0, print_ret, 2, "int32");
        status("locals 3 wrap with a state and a return-value local", host->edit_wrap(e, &w));
        return ILR_OK;
    case 4:
        w = wrap_of(NULL, 0, NULL, 0, print_ret, 2, NULL);
        status("locals 4 wrap with a return-value local", host->edit_wrap(e, &w));
        status("locals 4 add_local int32", host->edit_add_local(e, "int32", &index));
        return ILR_OK;
    default:
        st = host->edit_add_local(e, "int32", &index);
        snprintf(line, sizeof line, "locals 5 add_local int32 (index %u)", (unsigned)index);
        status(line, st);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
}

static ilr_status plus_1000(ilr_edit e, int32_t *changed) {
    ilr_instruction code[] = {I(LDC_I4, ILR_OPERAND_INT, 1000), N(ADD)};
    ilr_status st = host->body_insert_before_returns(e, code, 2);
    *changed = st == ILR_OK;
    return st;
}

static char *deep_text(size_t n) {
    char *s = malloc(5 + 2 * n + 1);
    if (!s)
        return NULL;
    memcpy(s, "int32", 5);
    for (size_t k = 0; k < n; k++)
        memcpy(s + 5 + 2 * k, "[]", 2);
    s[5 + 2 * n] = 0;
    return s;
}

static ilr_status local_types(ilr_edit e, int32_t *changed) {
    checks c = {0, 0};
    snapshot before, after;
    take(e, &before);
    uint16_t index = 0, first = 0;
    expect(&c, "add_local(null type)", host->edit_add_local(e, NULL, &index), ARG);
    expect(&c, "add_local(null index)", host->edit_add_local(e, "int32", NULL), ARG);
    static const char *bad[] = {"", "void", "int32 (", "class 0x01FFFFFF", "valuetype 0x02000000",
                                "class 0x1B00FFFF", "class 0x06000001", "void[]", "void&",
                                "int32 int32", "\xff", "class 0x02000400",
                                "int32 modreq(0x0100FFFF)"};
    char what[128];
    for (size_t k = 0; k < COUNT(bad); k++) {
        snprintf(what, sizeof what, "add_local(\"%s\")", bad[k]);
        expect(&c, what, host->edit_add_local(e, bad[k], &index), ARG);
    }
    char *deep = deep_text(100000);
    if (deep) {
        expect(&c, "add_local(100,000 deep)", host->edit_add_local(e, deep, &index), ARG);
        free(deep);
    }
    take(e, &after);
    expect(&c, "the body as it was", same(&before, &after) ? ILR_OK : ILR_E_FAILED, ILR_OK);
    static const char *good[] = {"int32&", "typedref", "void*", "class 0x02000002",
                                 "object[,]", "method int32 *(int32)", "int64"};
    for (size_t k = 0; k < COUNT(good); k++) {
        snprintf(what, sizeof what, "add_local(\"%s\")", good[k]);
        uint16_t got = 0;
        expect(&c, what, host->edit_add_local(e, good[k], &got), ILR_OK);
        if (k == 0)
            first = got;
        else
            expect(&c, "indices in order", got == first + k ? ILR_OK : ILR_E_FAILED, ILR_OK);
    }
    /* A pinned local: legal in a LocalVarSig (what `fixed` compiles to). */
    status("add_local(\"object pinned\")", host->edit_add_local(e, "object pinned", &index));
    status("add_local(\"int32& pinned\")", host->edit_add_local(e, "int32& pinned", &index));
    done(&c, "local_types");
    return plus_1000(e, changed);
}

static ilr_status single_ret(ilr_edit e, int32_t *changed) {
    checks c = {0, 0};
    uint32_t epilogue = 0;
    int32_t local = -7;
    expect(&c, "single_ret(null epilogue)", host->edit_single_ret(e, NULL, &local), ARG);
    expect(&c, "single_ret(null local)", host->edit_single_ret(e, &epilogue, NULL), ARG);
    ilr_status st = host->edit_single_ret(e, &epilogue, &local);
    if (want != ILR_WANT_EDIT_SINGLE_RET) {
        /* ILR_E_NOT_FOUND, unless another instrumentation method asked (the test says). */
        status("single_ret without having asked", st);
        done(&c, "single_ret");
        return ILR_OK;
    }
    expect(&c, "single_ret having asked", st, ILR_OK);
    ilr_instruction code[] = {I(LDLOC, ILR_OPERAND_VAR, local), I(LDC_I4, ILR_OPERAND_INT, 1000),
                              N(ADD), I(STLOC, ILR_OPERAND_VAR, local)};
    st = host->body_insert_before(e, epilogue, ILR_REDIRECT, code, COUNT(code), NULL);
    expect(&c, "+ 1000 before the epilogue", st, ILR_OK);
    *changed = st == ILR_OK;
    done(&c, "single_ret");
    return ILR_OK;
}

static ilr_status ret_after_wrap(const defs *d, ilr_edit e, int32_t *changed) {
    ilr_instruction entry[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_ENTER]),
                               I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_instruction exit_code[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_EXIT]),
                                   I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_wrap w = wrap_of(entry, 2, exit_code, which == 0 ? 2 : 0, NULL, 0, NULL);
    ilr_status st = host->edit_wrap(e, &w);
    status("ret_after_wrap wrap", st);
    uint32_t epilogue = 0;
    int32_t local = -7;
    st = host->edit_single_ret(e, &epilogue, &local);
    char line[128];
    ilr_instruction at = {0, 0, 0, 0};
    host->body_get(e, epilogue, &at);
    snprintf(line, sizeof line,
             "ret_after_wrap single_ret (local %d, epilogue opcode 0x%x operand kind %u operand "
             "%lld)",
             (int)local, (unsigned)at.opcode, (unsigned)at.operand_kind, (long long)at.operand);
    status(line, st);
    if (st != ILR_OK || local < 0) {
        *changed = 1;
        return ILR_OK;
    }
    ilr_instruction code[] = {I(LDLOC, ILR_OPERAND_VAR, local), I(CALL, ILR_OPERAND_TOKEN, d->wl_i4)};
    st = host->body_insert_before(e, epilogue, ILR_REDIRECT, code, 2, NULL);
    status("ret_after_wrap print before the epilogue", st);
    *changed = 1;
    return ILR_OK;
}

static ilr_status wrap_twice(const defs *d, ilr_edit e, int32_t *changed) {
    ilr_instruction entry1[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_W1_ENTER]),
                                I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_instruction exit1[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_W1_EXIT]),
                               I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_instruction ret1[] = {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), I(CALL, ILR_OPERAND_TOKEN, d->wl_i4)};
    ilr_wrap w1 = wrap_of(entry1, 2, exit1, 2, ret1, 2, NULL);
    ilr_status st = host->edit_wrap(e, &w1);
    status("wrap_twice first", st);
    ilr_instruction entry2[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_W2_ENTER]),
                                I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_instruction exit2[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_W2_EXIT]),
                               I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_instruction ret2[] = {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), I(LDC_I4, ILR_OPERAND_INT, 100),
                              N(ADD), I(STLOC, ILR_OPERAND_RETURN_LOCAL, 0)};
    /* As a library built against a newer header would give it: bigger. */
    struct {
        ilr_wrap w;
        uint8_t newer[64];
    } w2;
    memset(&w2, 0xAB, sizeof w2);
    w2.w = wrap_of(entry2, 2, exit2, 2, ret2, 4, NULL);
    w2.w.size = sizeof w2;
    st = host->edit_wrap(e, &w2.w);
    status("wrap_twice second", st);
    *changed = 1;
    return ILR_OK;
}

static ilr_status plain(ilr_edit e, int32_t *changed) {
    ilr_instruction entry[] = {I(LDC_I4, ILR_OPERAND_INT, 7), I(STLOC, ILR_OPERAND_STATE_LOCAL, 0)};
    ilr_instruction exit_code[] = {I(LDLOC, ILR_OPERAND_STATE_LOCAL, 0), N(POP)};
    ilr_instruction on_return[] = {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), N(POP)};
    ilr_wrap w = wrap_of(entry, 2, exit_code, 2, on_return, returns_value(e) ? 2 : 0, "int32");
    ilr_status st = host->edit_wrap(e, &w);
    ilr_str name;
    char line[400];
    if (host->edit_name(e, &name) == ILR_OK) {
        snprintf(line, sizeof line, "wrap %.*s", (int)name.length, name.data);
        status(line, st);
    }
    *changed = st == ILR_OK;
    return ILR_OK;
}

static ilr_status print(const defs *d, ilr_edit e, int32_t *changed) {
    ilr_instruction entry[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_ENTER]),
                               I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_instruction exit_code[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_EXIT]),
                                   I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    ilr_wrap w = wrap_of(entry, 2, exit_code, 2, NULL, 0, NULL);
    ilr_status st = host->edit_wrap(e, &w);
    ilr_str name;
    char line[400];
    if (host->edit_name(e, &name) == ILR_OK) {
        snprintf(line, sizeof line, "print %.*s", (int)name.length, name.data);
        status(line, st);
    }
    *changed = st == ILR_OK;
    return ILR_OK;
}

/* One wrap of `entry` (as the entry, the exit or the on_return code, `where` 0-2). */
static ilr_status wrap_in(ilr_edit e, int where, const ilr_instruction *code, size_t count,
                          const char *state_local) {
    ilr_wrap w = wrap_of(where == 0 ? code : NULL, where == 0 ? count : 0,
                         where == 1 ? code : NULL, where == 1 ? count : 0,
                         where == 2 ? code : NULL, where == 2 ? count : 0, state_local);
    return host->edit_wrap(e, &w);
}

static ilr_status misuse(const defs *d, ilr_edit e, int32_t *changed, ilr_error *error) {
    checks c = {0, 0};
    snapshot before, after;
    take(e, &before);
    int value = returns_value(e);
    ilr_instruction nop = N(NOP);
    ilr_wrap w = wrap_of(&nop, 1, NULL, 0, NULL, 0, NULL);
    expect(&c, "wrap(null)", host->edit_wrap(e, NULL), ARG);
    uint32_t sizes[] = {0, 4, (uint32_t)sizeof w - 1, 8};
    for (size_t k = 0; k < COUNT(sizes); k++) {
        char what[64];
        snprintf(what, sizeof what, "wrap(size %u)", (unsigned)sizes[k]);
        w.size = sizes[k];
        expect(&c, what, host->edit_wrap(e, &w), ARG);
    }
    w = wrap_of(NULL, 3, NULL, 0, NULL, 0, NULL);
    expect(&c, "wrap(null entry, count 3)", host->edit_wrap(e, &w), ARG);
    w = wrap_of(NULL, 0, NULL, 2, NULL, 0, NULL);
    expect(&c, "wrap(null exit, count 2)", host->edit_wrap(e, &w), ARG);
    w = wrap_of(&nop, 1, NULL, 0, NULL, 1, NULL);
    expect(&c, "wrap(null on_return, count 1)", host->edit_wrap(e, &w), ARG);

    uint64_t module = 0;
    uint32_t token = 0;
    host->edit_method(e, &module, &token);
    /* Code each place refuses, with what else is needed to be valid. */
    const struct {
        const char *what;
        int where; /* 0 entry, 1 exit, 2 on_return */
        const char *state;
        size_t count;
        ilr_instruction code[4];
    } bad[] = {
        {"METHOD_ID on ldc.i4.s", 0, NULL, 2, {I(LDC_I4_S, ILR_OPERAND_METHOD_ID, 0), N(POP)}},
        {"METHOD_ID on ldc.i8", 0, NULL, 2, {I(LDC_I8, ILR_OPERAND_METHOD_ID, 0), N(POP)}},
        {"METHOD_ID on nop", 0, NULL, 1, {I(NOP, ILR_OPERAND_METHOD_ID, 0)}},
        {"METHOD_ID on call", 0, NULL, 1, {I(CALL, ILR_OPERAND_METHOD_ID, 0)}},
        {"MODULE_ID on ldc.i4", 0, NULL, 2, {I(LDC_I4, ILR_OPERAND_MODULE_ID, 0), N(POP)}},
        {"MODULE_ID on ldc.i4.s", 1, NULL, 2, {I(LDC_I4_S, ILR_OPERAND_MODULE_ID, 0), N(POP)}},
        {"MODULE_ID on nop", 1, NULL, 1, {I(NOP, ILR_OPERAND_MODULE_ID, 0)}},
        {"STATE_LOCAL without a state_local type", 0, NULL, 2,
         {N(LDC_I4_1), I(STLOC, ILR_OPERAND_STATE_LOCAL, 0)}},
        {"STATE_LOCAL on add", 0, "int32", 3, {N(LDC_I4_1), N(LDC_I4_1), I(ADD, ILR_OPERAND_STATE_LOCAL, 0)}},
        {"STATE_LOCAL on ldarg.0", 1, "int32", 2, {I(LDARG_0, ILR_OPERAND_STATE_LOCAL, 0), N(POP)}},
        {"STATE_LOCAL on starg.s", 1, "int32", 2, {N(LDC_I4_1), I(STARG_S, ILR_OPERAND_STATE_LOCAL, 0)}},
        {"RETURN_LOCAL in entry", 0, NULL, 2, {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), N(POP)}},
        {"RETURN_LOCAL in exit", 1, NULL, 2, {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), N(POP)}},
        {"RETURN_LOCAL on add", 2, NULL, 3, {N(LDC_I4_1), N(LDC_I4_1), I(ADD, ILR_OPERAND_RETURN_LOCAL, 0)}},
        {"CODE past the end", 0, NULL, 2, {I(BR_S, ILR_OPERAND_CODE, 2), N(NOP)}},
        {"CODE -1", 0, NULL, 2, {I(BR_S, ILR_OPERAND_CODE, -1), N(NOP)}},
        {"CODE 2^40", 0, NULL, 2, {I(BR, ILR_OPERAND_CODE, (int64_t)1 << 40), N(NOP)}},
        {"CODE on ldc.i4", 0, NULL, 2, {I(LDC_I4, ILR_OPERAND_CODE, 1), N(POP)}},
        {"CODE on leave", 0, NULL, 2, {I(LEAVE_S, ILR_OPERAND_CODE, 1), N(NOP)}},
        {"CODE on switch", 0, NULL, 3, {N(LDC_I4_1), I(SWITCH, ILR_OPERAND_CODE, 2), N(NOP)}},
        {"TARGET (an id of the body)", 0, NULL, 2, {I(BR_S, ILR_OPERAND_TARGET, 1), N(NOP)}},
        {"ret in entry", 0, NULL, 2, {N(NOP), N(RET)}},
        {"ret in the middle of exit", 1, NULL, 2, {N(RET), N(NOP)}},
        {"throw last", 0, NULL, 2, {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_ENTER]), N(THROW)}},
        {"tail. call", 0, NULL, 3,
         {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_ENTER]), N(TAIL), I(CALL, ILR_OPERAND_TOKEN, d->wl_str)}},
        {"jmp", 0, NULL, 2, {I(JMP, ILR_OPERAND_TOKEN, d->wl_str), N(NOP)}},
        {"endfinally", 1, NULL, 2, {N(NOP), N(ENDFINALLY)}},
        {"leave to the body", 0, NULL, 2, {I(LEAVE, ILR_OPERAND_TARGET, 1), N(NOP)}},
        {"rethrow", 1, NULL, 2, {N(RETHROW), N(NOP)}},
        {"opcode 0xFE99", 1, NULL, 1, {N(0xFE99)}},
        {"operand kind 99", 0, NULL, 1, {I(NOP, 99, 0)}},
        {"ldloc 1000 (no such local)", 0, NULL, 2, {I(LDLOC, ILR_OPERAND_VAR, 1000), N(POP)}},
        {"call of no row", 0, NULL, 1, {I(CALL, ILR_OPERAND_TOKEN, 0x0A00FFFF)}},
        {"ldstr of a MethodDef", 0, NULL, 2, {I(LDSTR, ILR_OPERAND_TOKEN, 0x06000001), N(POP)}},
        {"arglist without varargs", 0, NULL, 2, {N(ARGLIST), N(POP)}},
        {"volatile. before nop", 1, NULL, 2, {N(VOLATILE), N(NOP)}},
        {"volatile. last", 1, NULL, 1, {N(VOLATILE)}},
        {"newobj of the (static) method", 0, NULL, 1, {I(NEWOBJ, ILR_OPERAND_TOKEN, token)}},
        {"callvirt of the (static) method", 2, NULL, 1, {I(CALLVIRT, ILR_OPERAND_TOKEN, token)}},
    };
    char what[160];
    for (size_t k = 0; k < COUNT(bad); k++) {
        snprintf(what, sizeof what, "wrap(%s)", bad[k].what);
        expect(&c, what, wrap_in(e, bad[k].where, bad[k].code, bad[k].count, bad[k].state), ARG);
    }
    /* RETURN_LOCAL in the on_return of a void method. */
    ilr_instruction read_ret[] = {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), N(POP)};
    if (!value)
        expect(&c, "wrap(RETURN_LOCAL in a void method)", wrap_in(e, 2, read_ret, 2, NULL), ARG);
    /* Unusable state local types. */
    static const char *bad_states[] = {"void", "class 0x01FFFFFF", "int32 (", "", "\xff", "void[]"};
    ilr_instruction set_state[] = {N(LDC_I4_1), I(STLOC, ILR_OPERAND_STATE_LOCAL, 0)};
    for (size_t k = 0; k < COUNT(bad_states); k++) {
        snprintf(what, sizeof what, "wrap(state_local \"%s\")", bad_states[k]);
        expect(&c, what, wrap_in(e, 0, set_state, 2, bad_states[k]), ARG);
    }
    /* Code that keeps no balance: refused by the verification, the body restored. */
    ilr_instruction one[] = {N(LDC_I4_1)};
    ilr_instruction pop[] = {N(POP)};
    expect(&c, "wrap(entry leaves a value)", wrap_in(e, 0, one, 1, NULL), REFUSED);
    expect(&c, "wrap(entry pops the empty stack)", wrap_in(e, 0, pop, 1, NULL), REFUSED);
    expect(&c, "wrap(on_return leaves a value)", wrap_in(e, 2, one, 1, NULL), REFUSED);
    expect(&c, "wrap(exit pops the empty stack)", wrap_in(e, 1, pop, 1, NULL), REFUSED);
    /* Nothing at all: taken or refused, but the body as it was. */
    w = wrap_of(NULL, 0, NULL, 0, NULL, 0, NULL);
    expect2(&c, "wrap(nothing)", host->edit_wrap(e, &w), ILR_OK, ARG);
    take(e, &after);
    expect(&c, "the body as it was", same(&before, &after) ? ILR_OK : ILR_E_FAILED, ILR_OK);

    /* The control: method and module ids printed, a backward loop in the entry (3
     * times through the state local), and + 1000 to the return value. */
    char line[128];
    snprintf(line, sizeof line, "hostile_wrap: method %u module %llu", (unsigned)token,
             (unsigned long long)module);
    log_line(line);
    ilr_instruction entry[] = {
        I(LDC_I4, ILR_OPERAND_METHOD_ID, 12345),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i4),
        I(LDC_I8, ILR_OPERAND_MODULE_ID, 12345),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i8),
        N(LDC_I4_3),
        I(STLOC, ILR_OPERAND_STATE_LOCAL, 0),
        /* 6: */ I(LDLOC, ILR_OPERAND_STATE_LOCAL, 0),
        I(CALL, ILR_OPERAND_TOKEN, d->wl_i4),
        I(LDLOC, ILR_OPERAND_STATE_LOCAL, 0),
        N(LDC_I4_1),
        N(SUB),
        N(DUP),
        I(STLOC, ILR_OPERAND_STATE_LOCAL, 0),
        I(BRTRUE_S, ILR_OPERAND_CODE, 6),
    };
    ilr_instruction plus[] = {I(LDLOC, ILR_OPERAND_RETURN_LOCAL, 0), I(LDC_I4, ILR_OPERAND_INT, 1000),
                              N(ADD), I(STLOC, ILR_OPERAND_RETURN_LOCAL, 0)};
    ilr_instruction void_ret[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[S_VOID_RET]),
                                  I(CALL, ILR_OPERAND_TOKEN, d->wl_str)};
    w = wrap_of(entry, COUNT(entry), NULL, 0, value ? plus : void_ret, value ? 4 : 2, "int32");
    ilr_status st = host->edit_wrap(e, &w);
    expect(&c, "the valid wrap", st, ILR_OK);
    done(&c, "misuse");
    if (st != ILR_OK) {
        say(error, "hostile_wrap: the valid wrap was refused");
        return st;
    }
    *changed = 1;
    return ILR_OK;
}

static ilr_status leaves(const defs *d, ilr_edit e, int32_t *changed, int where) {
    ilr_instruction code[] = {I(LDSTR, ILR_OPERAND_TOKEN, d->strings[where ? S_EXIT : S_ENTER]),
                              I(CALL, ILR_OPERAND_TOKEN, d->wl_str), N(LDC_I4_1)};
    ilr_status st = wrap_in(e, where, code, COUNT(code), NULL);
    status(where ? "exit_leaves" : "entry_leaves", st);
    *changed = st == ILR_OK;
    return ILR_OK;
}

static ilr_status localloc_exit(ilr_edit e, int32_t *changed) {
    ilr_instruction code[] = {N(LDC_I4_4), N(LOCALLOC), N(POP)};
    ilr_status st = wrap_in(e, which == 0 ? 1 : 0, code, COUNT(code), NULL);
    status(which == 0 ? "localloc in exit" : "localloc in entry", st);
    *changed = st == ILR_OK;
    return ILR_OK;
}

static ilr_status self_loop(ilr_edit e, ilr_error *error) {
    ilr_instruction code[] = {N(NOP), I(BR_S, ILR_OPERAND_CODE, 1), N(NOP)};
    ilr_status st = which == 0 ? wrap_in(e, 0, code, 3, NULL)
                               : host->body_insert_at_entry(e, code, 3, NULL);
    status(which == 0 ? "self_loop wrap" : "self_loop insert", st);
    say(error, "hostile_wrap: self_loop rolls its edit back");
    return ILR_E_FAILED;
}

static ilr_status huge(ilr_edit e, int32_t *changed) {
    size_t n = which > 0 ? (size_t)which : 1;
    ilr_instruction *code = calloc(n, sizeof *code);
    if (!code)
        return ILR_E_FAILED;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ilr_status st = wrap_in(e, 0, code, n, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(code);
    long ms = (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    char line[128];
    snprintf(line, sizeof line, "hostile_wrap: huge %zu status %d in %ld ms", n, (int)st, ms);
    log_line(line);
    *changed = st == ILR_OK;
    return ILR_OK;
}

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    (void)self;
    *changed = 0;
    void *item = NULL;
    if (host->edit_module_item(e, &item) != ILR_OK)
        return ILR_OK;
    const defs *d = item;
    if (strcmp(trick, "locals") == 0)
        return locals(d, e, changed, error);
    if (strcmp(trick, "local_types") == 0)
        return local_types(e, changed);
    if (strcmp(trick, "single_ret") == 0)
        return single_ret(e, changed);
    if (strcmp(trick, "ret_after_wrap") == 0)
        return ret_after_wrap(d, e, changed);
    if (strcmp(trick, "wrap_twice") == 0)
        return wrap_twice(d, e, changed);
    if (strcmp(trick, "plain") == 0)
        return plain(e, changed);
    if (strcmp(trick, "print") == 0)
        return print(d, e, changed);
    if (strcmp(trick, "misuse") == 0)
        return misuse(d, e, changed, error);
    if (strcmp(trick, "exit_leaves") == 0)
        return leaves(d, e, changed, 1);
    if (strcmp(trick, "entry_leaves") == 0)
        return leaves(d, e, changed, 0);
    if (strcmp(trick, "self_loop") == 0)
        return self_loop(e, error);
    if (strcmp(trick, "localloc") == 0)
        return localloc_exit(e, changed);
    if (strcmp(trick, "huge") == 0)
        return huge(e, changed);
    if (strcmp(trick, "nop") == 0) {
        ilr_instruction nop = N(NOP);
        ilr_status st = host->body_insert_at_entry(e, &nop, 1, NULL);
        ilr_str name;
        char line[400];
        if (host->edit_name(e, &name) == ILR_OK) {
            snprintf(line, sizeof line, "nop %.*s", (int)name.length, name.data);
            status(line, st);
        }
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    return ILR_OK;
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    m->name = "hostile_wrap";
    m->priority = 10;
    m->options = option_table;
    m->option_count = COUNT(option_table);
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    m->module_loaded = module_loaded;
    return ILR_OK;
}
