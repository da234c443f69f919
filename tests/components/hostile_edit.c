/*
 * hostile_edit: an instrumentation method that misuses the host on purpose
 * (tests/clr_components_hostile.rs). It edits the methods whose name contains its option
 * `filter`, playing the trick its option `trick` names; every check it makes of the
 * host's answers is logged as "hostile: WRONG <what>: status S, expected E" when the
 * answer is not the promised one, and each trick ends with a summary line
 * "hostile: <trick> done, N checks, W wrong" (so a test asserts W is 0).
 *
 * Edits that break the body, returned as ILR_OK with changed = 1 (the host's
 * verification must roll them back alone):
 *   pop_empty     `pop` at the entry: the stack underflows;
 *   ret_height    `ldc.i4.1` before every `ret`: `ret` with two values on the stack;
 *   branch_empty  `br <the ret>` at the entry: `ret` reached with an empty stack;
 *   lie           `pop` at the entry, but *changed left 0;
 *   bad_operand   inserts at the entry the pair its option `case` (0-9) names: an
 *                 operand of the right kind that does not fit the method or the module
 *                 (`ldarg 1000`, `ldloc 1000`, `ldarga.s 5`, `ldstr` of a MethodDef
 *                 token, `ldstr` past the string heap, `ldtoken` of a TypeDef past the
 *                 table, `call` of a MemberRef past the table, `ldarg.3`, `ldloc.0`,
 *                 `box` of a TypeRef past the table) and `pop` or `nop`, logging
 *                 "hostile: bad_operand K status S"; case 10 is the control:
 *                 `ldtoken` of the method's own token, and `pop` (it fits); 11 and 12
 *                 `newobj` and `callvirt` of the method's own (static) token; 13 `ldftn`
 *                 of it (fits); 14 `newobj` of the first MemberRef the host takes (an
 *                 instance constructor: fits);
 *   bad_code      inserts at the entry the code its option `case` (0-6) names, which
 *                 keeps the stack's height but the JIT rejects: `tail.` or `volatile.`
 *                 before `nop`, `endfinally`, `rethrow` outside a handler, `arglist` in
 *                 a method without varargs, `endfilter`, `volatile.` last in the code;
 *                 logs "hostile: bad_code K status S";
 *   branch_to     inserts at the entry `br` to the instruction at position `case`
 *                 (from 1) of the body, logging "hostile: branch_to K status S";
 *   localloc_at   inserts `ldc.i4.4; localloc; pop` before the instruction at
 *                 position `case`, logging "hostile: localloc_at K status S";
 *   deep_stack    inserts at the entry `case` times `ldc.i4.0` then as many `pop`
 *                 (the stack `case` deep), logging "hostile: deep_stack N status S".
 * Other edits:
 *   bad_args      calls every host function with null pointers, unknown ids, huge
 *                 counts with null code, unknown opcodes, operands of the wrong kind or
 *                 out of range, targets not in the body, `switch`, bad `incoming`:
 *                 each must answer ILR_E_INVALID_ARGUMENT (or ILR_E_REFUSED) and leave
 *                 the body as it was (compared instruction by instruction); then makes
 *                 one valid edit: `ldc.i4 addend; add` before every `ret`;
 *   handles       uses made-up handles (0, 1, UINT64_MAX), the options handle of
 *                 `start`, a candidate handle of `wants`, an edit handle as options and
 *                 the edit's options handle as an edit, the edit handle on a thread of
 *                 its own (joined inside the call): each must answer
 *                 ILR_E_INVALID_HANDLE; `wants` checks the same of its own handle;
 *                 then the valid edit;
 *   long_error    makes the valid edit, then fails with a message of 5000 'x' written
 *                 up to the buffer's capacity and `length` set to 5000 (more than the
 *                 capacity): the host must cut the message at its buffer and roll
 *                 the edit back;
 *   valid         the valid edit alone (a control).
 * `wants` answers the integer option `answer` (1 by default) for the filtered methods,
 * so a test can give it 7 or -1. `start` logs through a null message pointer first
 * (`host->log(NULL, 10)`: nothing is written). Every call of `edit` logs
 * "hostile: edit NAME".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ilrewrite_method.h"

static const ilr_host *host;

static char filter[256];
static char trick[64];
static int64_t addend = 1000;
static int64_t answer = ILR_WANT_EDIT;
static int64_t which = 0;
/* The options handle of `start` and a candidate handle of `wants`, kept on purpose. */
static ilr_options start_options;
static _Atomic ilr_candidate kept_candidate;
/* Checks made and answers wrong in `wants` (many threads). */
static atomic_int wants_wrong;

static const ilr_option_spec option_table[] = {
    {"filter", ILR_OPTION_STRING},
    {"trick", ILR_OPTION_STRING},
    {"addend", ILR_OPTION_INTEGER},
    {"answer", ILR_OPTION_INTEGER},
    {"case", ILR_OPTION_INTEGER},
};

static void log_line(const char *text) { host->log(text, strlen(text)); }

/* The checks of one call: how many, how many wrong. */
typedef struct checks {
    int made;
    int wrong;
} checks;

static void expect(checks *c, const char *what, ilr_status got, ilr_status want) {
    c->made++;
    if (got == want)
        return;
    c->wrong++;
    char line[256];
    snprintf(line, sizeof line, "hostile: WRONG %s: status %d, expected %d", what, (int)got,
             (int)want);
    log_line(line);
}

/* As `expect`, but either of two statuses will do. */
static void expect2(checks *c, const char *what, ilr_status got, ilr_status a, ilr_status b) {
    expect(c, what, got == b ? a : got, a);
}

static void done(const checks *c, const char *what) {
    char line[128];
    snprintf(line, sizeof line, "hostile: %s done, %d checks, %d wrong", what, c->made, c->wrong);
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
    host->log(NULL, 10);
    host->log(NULL, 0);
    start_options = o;
    str_to(o, "filter", filter, sizeof filter);
    str_to(o, "trick", trick, sizeof trick);
    host->option_integer(o, "addend", &addend);
    host->option_integer(o, "answer", &answer);
    host->option_integer(o, "case", &which);
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
    (void)self;
    ilr_str name;
    if (host->candidate_name(candidate, &name) != ILR_OK || !contains(name, filter))
        return ILR_WANT_NO;
    if (strcmp(trick, "handles") == 0) {
        checks c = {0, 0};
        uint32_t id;
        int64_t v;
        expect(&c, "wants: body_first(candidate)", host->body_first(candidate, &id),
               ILR_E_INVALID_HANDLE);
        expect(&c, "wants: edit_name(candidate)", host->edit_name(candidate, &name),
               ILR_E_INVALID_HANDLE);
        expect(&c, "wants: option_integer(candidate)",
               host->option_integer(candidate, "answer", &v), ILR_E_INVALID_HANDLE);
        expect(&c, "wants: option_integer(start's options)",
               host->option_integer(start_options, "answer", &v), ILR_E_INVALID_HANDLE);
        atomic_fetch_add(&wants_wrong, c.wrong);
        atomic_store(&kept_candidate, candidate);
    }
    return (int32_t)answer;
}

/* A copy of the body, instruction by instruction. */
typedef struct snapshot {
    uint32_t count;
    ilr_instruction code[64];
} snapshot;

static void take(ilr_edit e, snapshot *s) {
    uint32_t id = 0;
    s->count = 0;
    host->body_first(e, &id);
    while (id != 0 && s->count < 64) {
        host->body_get(e, id, &s->code[s->count++]);
        if (host->body_next(e, id, &id) != ILR_OK)
            break;
    }
}

static int same(const snapshot *a, const snapshot *b) {
    return a->count == b->count && memcmp(a->code, b->code, a->count * sizeof a->code[0]) == 0;
}

/* The id of the first `ret` (0 without). */
static uint32_t first_ret(ilr_edit e) {
    uint32_t id = 0;
    host->body_first(e, &id);
    while (id != 0) {
        ilr_instruction i;
        if (host->body_get(e, id, &i) != ILR_OK)
            return 0;
        if (i.opcode == 0x2A)
            return id;
        if (host->body_next(e, id, &id) != ILR_OK)
            return 0;
    }
    return 0;
}

static ilr_status valid_edit(ilr_edit e, int32_t *changed, ilr_error *error) {
    ilr_instruction code[2] = {
        {0, 0x20 /* ldc.i4 */, ILR_OPERAND_INT, addend},
        {0, 0x58 /* add */, ILR_OPERAND_NONE, 0},
    };
    ilr_status st = host->body_insert_before_returns(e, code, 2);
    if (st != ILR_OK) {
        const char *m = "hostile: the valid edit was refused";
        error->length = strlen(m) < error->capacity ? strlen(m) : error->capacity;
        memcpy(error->data, m, error->length);
        return st;
    }
    *changed = 1;
    return ILR_OK;
}

#define I(op, kind, value) {0, (uint16_t)(op), (uint16_t)(kind), (int64_t)(value)}

static ilr_status bad_args(ilr_edit e, int32_t *changed, ilr_error *error) {
    checks c = {0, 0};
    snapshot before, after;
    take(e, &before);
    uint32_t first = 0, id = 0, tok = 0;
    uint64_t module = 0;
    uint8_t rt = 0;
    int64_t v = 0;
    ilr_str s;
    ilr_instruction got;
    ilr_options o = 0;
    const ilr_status ARG = ILR_E_INVALID_ARGUMENT;
    host->body_first(e, &first);
    uint32_t ret = first_ret(e);

    expect(&c, "body_first(null)", host->body_first(e, NULL), ARG);
    expect(&c, "body_next(null)", host->body_next(e, first, NULL), ARG);
    expect(&c, "body_next(id 0)", host->body_next(e, 0, &id), ARG);
    expect(&c, "body_next(id 999999)", host->body_next(e, 999999, &id), ARG);
    expect(&c, "body_next(id UINT32_MAX)", host->body_next(e, UINT32_MAX, &id), ARG);
    expect(&c, "body_get(null)", host->body_get(e, first, NULL), ARG);
    expect(&c, "body_get(id 0)", host->body_get(e, 0, &got), ARG);
    expect(&c, "body_get(id 999999)", host->body_get(e, 999999, &got), ARG);
    expect(&c, "edit_method(null module)", host->edit_method(e, NULL, &tok), ARG);
    expect(&c, "edit_method(null token)", host->edit_method(e, &module, NULL), ARG);
    expect(&c, "edit_name(null)", host->edit_name(e, NULL), ARG);
    expect(&c, "edit_options(null)", host->edit_options(e, NULL), ARG);
    expect(&c, "edit_return_type(null)", host->edit_return_type(e, NULL), ARG);
    expect(&c, "edit_options", host->edit_options(e, &o), ILR_OK);
    expect(&c, "option_integer(null name)", host->option_integer(o, NULL, &v), ARG);
    expect(&c, "option_boolean(null value)", host->option_boolean(o, "no_such_option", NULL), ARG);
    expect(&c, "option_string_at(null value)", host->option_string_at(o, "filter", 0, NULL), ARG);
    expect(&c, "option_integer(not given, null value)",
           host->option_integer(o, "no_such_option", NULL), ARG);
    expect(&c, "option_integer(non-UTF-8 name)", host->option_integer(o, "\xff\xfe", &v), ARG);
    expect(&c, "option_boolean(non-UTF-8 name)",
           host->option_boolean(o, "a\xc3(", (int32_t *)&v), ARG);
    expect(&c, "option_string(non-UTF-8 name)", host->option_string(o, "\x80", &s), ARG);
    expect(&c, "option_string(null value)", host->option_string(o, "filter", NULL), ARG);
    expect(&c, "option_string_at(null name)", host->option_string_at(o, NULL, 0, &s), ARG);
    expect(&c, "option_string_at(non-UTF-8 name)", host->option_string_at(o, "\xed\xa0\x80", 0, &s),
           ARG);

    /* Where to insert. */
    ilr_instruction nop = I(0x00, ILR_OPERAND_NONE, 0);
    expect(&c, "insert_before(at 0)", host->body_insert_before(e, 0, ILR_KEEP, &nop, 1, NULL), ARG);
    expect(&c, "insert_before(at 999999)",
           host->body_insert_before(e, 999999, ILR_KEEP, &nop, 1, NULL), ARG);
    expect(&c, "insert_before(incoming 2)", host->body_insert_before(e, first, 2, &nop, 1, NULL),
           ARG);
    expect(&c, "insert_before(incoming UINT32_MAX)",
           host->body_insert_before(e, first, UINT32_MAX, &nop, 1, NULL), ARG);
    expect(&c, "insert_after(at 0)", host->body_insert_after(e, 0, &nop, 1, NULL), ARG);
    /* Huge counts with null code. */
    expect(&c, "insert_before(null code, count 5)",
           host->body_insert_before(e, first, ILR_KEEP, NULL, 5, NULL), ARG);
    expect(&c, "insert_after(null code, count SIZE_MAX)",
           host->body_insert_after(e, first, NULL, SIZE_MAX, NULL), ARG);
    expect(&c, "insert_at_entry(null code, count SIZE_MAX)",
           host->body_insert_at_entry(e, NULL, SIZE_MAX, NULL), ARG);
    expect(&c, "insert_before_returns(null code, count 3)",
           host->body_insert_before_returns(e, NULL, 3), ARG);

    /* Instructions the host cannot take, alone and after a good one (all or nothing). */
    struct {
        const char *what;
        ilr_instruction i;
    } bad[] = {
        {"opcode 0xFE99", I(0xFE99, ILR_OPERAND_NONE, 0)},
        {"opcode 0x24", I(0x24, ILR_OPERAND_NONE, 0)},
        {"opcode 0x0100", I(0x0100, ILR_OPERAND_NONE, 0)},
        {"opcode 0xFFFF", I(0xFFFF, ILR_OPERAND_NONE, 0)},
        {"nop with an INT operand", I(0x00, ILR_OPERAND_INT, 1)},
        {"operand kind 99", I(0x00, 99, 0)},
        {"ldc.i4.s 300", I(0x1F, ILR_OPERAND_INT, 300)},
        {"ldc.i4.s -129", I(0x1F, ILR_OPERAND_INT, -129)},
        {"ldc.i4.s as LONG", I(0x1F, ILR_OPERAND_LONG, 1)},
        {"ldc.i4 2^40", I(0x20, ILR_OPERAND_INT, (int64_t)1 << 40)},
        {"ldc.i8 as INT", I(0x21, ILR_OPERAND_INT, 1)},
        {"ldc.r4 -1", I(0x22, ILR_OPERAND_FLOAT32, -1)},
        {"ldc.r4 2^32", I(0x22, ILR_OPERAND_FLOAT32, (int64_t)1 << 32)},
        {"ldarg.s 1000", I(0x0E, ILR_OPERAND_VAR, 1000)},
        {"ldarg.s -1", I(0x0E, ILR_OPERAND_VAR, -1)},
        {"ldarg 70000", I(0xFE09, ILR_OPERAND_VAR, 70000)},
        {"ldloc.s as INT", I(0x11, ILR_OPERAND_INT, 0)},
        {"br target 0", I(0x38, ILR_OPERAND_TARGET, 0)},
        {"br target 999999", I(0x38, ILR_OPERAND_TARGET, 999999)},
        {"br target -1", I(0x38, ILR_OPERAND_TARGET, -1)},
        {"br target 2^32+first", I(0x38, ILR_OPERAND_TARGET, ((int64_t)1 << 32) + first)},
        {"br.s target as INT", I(0x2B, ILR_OPERAND_INT, first)},
        {"switch", I(0x45, ILR_OPERAND_SWITCH, 1)},
        {"switch as NONE", I(0x45, ILR_OPERAND_NONE, 0)},
        {"call as INT", I(0x28, ILR_OPERAND_INT, 0x0A000001)},
        {"call token -1", I(0x28, ILR_OPERAND_TOKEN, -1)},
        {"call token 2^32", I(0x28, ILR_OPERAND_TOKEN, (int64_t)1 << 32)},
        {"ret with a TOKEN", I(0x2A, ILR_OPERAND_TOKEN, 1)},
    };
    char what[128];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ilr_instruction pair[2] = {nop, bad[k].i};
        uint32_t ids[2] = {77, 77};
        snprintf(what, sizeof what, "insert_before(%s)", bad[k].what);
        expect(&c, what, host->body_insert_before(e, first, ILR_REDIRECT, &bad[k].i, 1, ids), ARG);
        snprintf(what, sizeof what, "insert_after(nop, %s)", bad[k].what);
        expect(&c, what, host->body_insert_after(e, first, pair, 2, ids), ARG);
        snprintf(what, sizeof what, "insert_at_entry(nop, %s)", bad[k].what);
        expect(&c, what, host->body_insert_at_entry(e, pair, 2, ids), ARG);
        snprintf(what, sizeof what, "insert_before_returns(nop, %s)", bad[k].what);
        expect(&c, what, host->body_insert_before_returns(e, pair, 2), ARG);
        snprintf(what, sizeof what, "ids untouched after %s", bad[k].what);
        expect(&c, what, ids[0] == 77 && ids[1] == 77 ? ILR_OK : ILR_E_FAILED, ILR_OK);
    }
    /* Nothing to insert: any answer but a crash, and the body as it was. */
    expect2(&c, "insert_before(count 0, null code)",
            host->body_insert_before(e, first, ILR_REDIRECT, NULL, 0, NULL), ILR_OK,
            ILR_E_REFUSED);
    expect2(&c, "insert_before_returns(count 0)", host->body_insert_before_returns(e, NULL, 0),
            ILR_OK, ILR_E_REFUSED);
    expect2(&c, "insert_at_entry(count 0)", host->body_insert_at_entry(e, NULL, 0, NULL), ILR_OK,
            ILR_E_REFUSED);
    (void)ret;
    (void)rt;

    take(e, &after);
    expect(&c, "the body as it was", same(&before, &after) ? ILR_OK : ILR_E_FAILED, ILR_OK);
    done(&c, "bad_args");
    return valid_edit(e, changed, error);
}

typedef struct on_thread {
    ilr_edit e;
    checks c;
} on_thread;

static void *use_elsewhere(void *arg) {
    on_thread *t = arg;
    uint32_t id;
    ilr_str name;
    ilr_options o;
    ilr_instruction pop = I(0x26, ILR_OPERAND_NONE, 0);
    expect(&t->c, "thread: body_first(edit)", host->body_first(t->e, &id), ILR_E_INVALID_HANDLE);
    expect(&t->c, "thread: edit_name(edit)", host->edit_name(t->e, &name), ILR_E_INVALID_HANDLE);
    expect(&t->c, "thread: edit_options(edit)", host->edit_options(t->e, &o),
           ILR_E_INVALID_HANDLE);
    expect(&t->c, "thread: insert_at_entry(edit, pop)", host->body_insert_at_entry(t->e, &pop, 1, NULL),
           ILR_E_INVALID_HANDLE);
    return NULL;
}

static ilr_status handles(ilr_edit e, int32_t *changed, ilr_error *error) {
    checks c = {0, 0};
    snapshot before, after;
    take(e, &before);
    uint32_t id;
    int64_t v;
    ilr_str s;
    int32_t t;
    ilr_options o = 0;
    const ilr_status H = ILR_E_INVALID_HANDLE;
    expect(&c, "body_first(0)", host->body_first(0, &id), H);
    expect(&c, "body_first(1)", host->body_first(1, &id), H);
    expect(&c, "body_first(UINT64_MAX)", host->body_first(UINT64_MAX, &id), H);
    expect(&c, "option_integer(0)", host->option_integer(0, "addend", &v), H);
    expect(&c, "option_integer(UINT64_MAX)", host->option_integer(UINT64_MAX, "addend", &v), H);
    expect(&c, "candidate_name(UINT64_MAX)", host->candidate_name(UINT64_MAX, &s), H);
    expect(&c, "option_integer(start's options)", host->option_integer(start_options, "addend", &v),
           H);
    expect(&c, "body_first(start's options)", host->body_first(start_options, &id), H);
    ilr_candidate kept = atomic_load(&kept_candidate);
    expect(&c, "candidate_name(a candidate of wants)", host->candidate_name(kept, &s), H);
    expect(&c, "candidate_is_target(a candidate of wants)", host->candidate_is_target(kept, &t), H);
    expect(&c, "option_integer(edit as options)", host->option_integer(e, "addend", &v), H);
    expect(&c, "candidate_name(edit as candidate)", host->candidate_name(e, &s), H);
    expect(&c, "edit_options", host->edit_options(e, &o), ILR_OK);
    expect(&c, "body_first(edit's options as edit)", host->body_first(o, &id), H);
    expect(&c, "edit_name(edit's options as edit)", host->edit_name(o, &s), H);
    expect(&c, "option_string(edit's options)", host->option_string(o, "filter", &s), ILR_OK);
    /* The bad handle is checked before the null pointer, or after: either status. */
    expect2(&c, "body_first(0, null)", host->body_first(0, NULL), H, ILR_E_INVALID_ARGUMENT);

    on_thread th = {e, {0, 0}};
    pthread_t thread;
    if (pthread_create(&thread, NULL, use_elsewhere, &th) == 0) {
        pthread_join(thread, NULL);
        c.made += th.c.made;
        c.wrong += th.c.wrong;
    } else {
        log_line("hostile: WRONG no thread");
        c.wrong++;
    }
    c.made++;
    c.wrong += atomic_load(&wants_wrong);
    take(e, &after);
    expect(&c, "the body as it was", same(&before, &after) ? ILR_OK : ILR_E_FAILED, ILR_OK);
    done(&c, "handles");
    return valid_edit(e, changed, error);
}

static ilr_status edit(void *self, ilr_edit e, int32_t *changed, ilr_error *error) {
    (void)self;
    ilr_str name;
    if (host->edit_name(e, &name) == ILR_OK) {
        char line[320];
        snprintf(line, sizeof line, "hostile: edit %.*s", (int)name.length, name.data);
        log_line(line);
    }
    *changed = 0;
    ilr_instruction pop = I(0x26, ILR_OPERAND_NONE, 0);
    if (strcmp(trick, "pop_empty") == 0 || strcmp(trick, "lie") == 0) {
        ilr_status st = host->body_insert_at_entry(e, &pop, 1, NULL);
        *changed = strcmp(trick, "lie") != 0 && st == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "ret_height") == 0) {
        ilr_instruction one = I(0x17 /* ldc.i4.1 */, ILR_OPERAND_NONE, 0);
        *changed = host->body_insert_before_returns(e, &one, 1) == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "branch_empty") == 0) {
        ilr_instruction br = I(0x38 /* br */, ILR_OPERAND_TARGET, first_ret(e));
        *changed = host->body_insert_at_entry(e, &br, 1, NULL) == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "bad_operand") == 0) {
        /* Operands that fit their opcode's kind but not the method or the module. */
        static const ilr_instruction cases[][2] = {
            {I(0xFE09 /* ldarg */, ILR_OPERAND_VAR, 1000), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0xFE0C /* ldloc */, ILR_OPERAND_VAR, 1000), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0x0F /* ldarga.s */, ILR_OPERAND_VAR, 5), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0x72 /* ldstr */, ILR_OPERAND_TOKEN, 0x06000001), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0x72 /* ldstr */, ILR_OPERAND_TOKEN, 0x70FFFFF0), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0xD0 /* ldtoken */, ILR_OPERAND_TOKEN, 0x02FFFFFF), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0x28 /* call */, ILR_OPERAND_TOKEN, 0x0A00FFFF), I(0x00, ILR_OPERAND_NONE, 0)},
            {I(0x05 /* ldarg.3 */, ILR_OPERAND_NONE, 0), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0x06 /* ldloc.0 */, ILR_OPERAND_NONE, 0), I(0x26, ILR_OPERAND_NONE, 0)},
            {I(0x8C /* box */, ILR_OPERAND_TOKEN, 0x01FFFFFF), I(0x26, ILR_OPERAND_NONE, 0)},
        };
        size_t k = (size_t)which;
        ilr_status st;
        if (k < sizeof cases / sizeof cases[0]) {
            st = host->body_insert_at_entry(e, cases[k], 2, NULL);
        } else if (k == 14) {
            /* The control of `newobj`: the first MemberRef the host takes for it (the
             * module's `object::.ctor`), each other one refused. */
            st = ILR_E_NOT_FOUND;
            for (uint32_t row = 1; row <= 32 && st != ILR_OK; row++) {
                ilr_instruction obj[2] = {I(0x73, ILR_OPERAND_TOKEN, 0x0A000000u | row),
                                          I(0x26, ILR_OPERAND_NONE, 0)};
                st = host->body_insert_at_entry(e, obj, 2, NULL);
                if (st != ILR_OK && st != ILR_E_INVALID_ARGUMENT)
                    break;
            }
        } else {
            /* Case 10, the control: `ldtoken` of the method's own MethodDef token fits;
             * 11: `newobj` of it, 12: `callvirt` of it (a static method), 13: `ldftn`
             * of it then `pop`. */
            static const uint16_t ops[] = {0xD0, 0x73, 0x6F, 0xFE06};
            uint64_t module = 0;
            uint32_t token = 0;
            host->edit_method(e, &module, &token);
            ilr_instruction own[2] = {I(ops[(k - 10) % 4], ILR_OPERAND_TOKEN, token),
                                      I(0x26, ILR_OPERAND_NONE, 0)};
            st = host->body_insert_at_entry(e, own, 2, NULL);
        }
        char line[96];
        snprintf(line, sizeof line, "hostile: bad_operand %d status %d", (int)k, (int)st);
        log_line(line);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "bad_code") == 0) {
        /* Code that keeps the stack's height but that the JIT rejects, at the entry. */
        static const struct {
            size_t count;
            ilr_instruction code[2];
        } cases[] = {
            {2, {I(0xFE14 /* tail. */, ILR_OPERAND_NONE, 0), I(0x00, ILR_OPERAND_NONE, 0)}},
            {2, {I(0xFE13 /* volatile. */, ILR_OPERAND_NONE, 0), I(0x00, ILR_OPERAND_NONE, 0)}},
            {2, {I(0xDC /* endfinally */, ILR_OPERAND_NONE, 0), I(0x00, ILR_OPERAND_NONE, 0)}},
            {2, {I(0xFE1A /* rethrow */, ILR_OPERAND_NONE, 0), I(0x00, ILR_OPERAND_NONE, 0)}},
            {2, {I(0xFE00 /* arglist */, ILR_OPERAND_NONE, 0), I(0x26, ILR_OPERAND_NONE, 0)}},
            {2, {I(0xFE11 /* endfilter */, ILR_OPERAND_NONE, 0), I(0x00, ILR_OPERAND_NONE, 0)}},
            {1, {I(0xFE13 /* volatile., last */, ILR_OPERAND_NONE, 0)}},
        };
        size_t k = (size_t)which % (sizeof cases / sizeof cases[0]);
        ilr_status st = host->body_insert_at_entry(e, cases[k].code, cases[k].count, NULL);
        char line[96];
        snprintf(line, sizeof line, "hostile: bad_code %d status %d", (int)k, (int)st);
        log_line(line);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "branch_to") == 0) {
        /* `br` at the entry to the instruction at position `case` (from 1). */
        uint32_t id = 0;
        host->body_first(e, &id);
        for (int64_t k = 1; k < which && id != 0; k++)
            host->body_next(e, id, &id);
        ilr_instruction br = I(0x38 /* br */, ILR_OPERAND_TARGET, id);
        ilr_status st = host->body_insert_at_entry(e, &br, 1, NULL);
        char line[96];
        snprintf(line, sizeof line, "hostile: branch_to %d status %d", (int)which, (int)st);
        log_line(line);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "localloc_at") == 0) {
        /* `ldc.i4.4; localloc; pop` before the instruction at position `case`. */
        uint32_t id = 0;
        host->body_first(e, &id);
        for (int64_t k = 1; k < which && id != 0; k++)
            host->body_next(e, id, &id);
        ilr_instruction code[3] = {I(0x1A /* ldc.i4.4 */, ILR_OPERAND_NONE, 0),
                                   I(0xFE0F /* localloc */, ILR_OPERAND_NONE, 0),
                                   I(0x26 /* pop */, ILR_OPERAND_NONE, 0)};
        ilr_status st = host->body_insert_before(e, id, ILR_KEEP, code, 3, NULL);
        char line[96];
        snprintf(line, sizeof line, "hostile: localloc_at %d status %d", (int)which, (int)st);
        log_line(line);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "deep_stack") == 0) {
        /* `case` times `ldc.i4.0`, then as many `pop`, at the entry (at most 100000). */
        static ilr_instruction code[200000];
        size_t n = which > 0 && which <= 100000 ? (size_t)which : 1;
        for (size_t k = 0; k < n; k++) {
            code[k] = (ilr_instruction)I(0x16 /* ldc.i4.0 */, ILR_OPERAND_NONE, 0);
            code[n + k] = (ilr_instruction)I(0x26 /* pop */, ILR_OPERAND_NONE, 0);
        }
        ilr_status st = host->body_insert_at_entry(e, code, 2 * n, NULL);
        char line[96];
        snprintf(line, sizeof line, "hostile: deep_stack %d status %d", (int)n, (int)st);
        log_line(line);
        *changed = st == ILR_OK;
        return ILR_OK;
    }
    if (strcmp(trick, "bad_args") == 0)
        return bad_args(e, changed, error);
    if (strcmp(trick, "handles") == 0)
        return handles(e, changed, error);
    if (strcmp(trick, "long_error") == 0) {
        ilr_status st = valid_edit(e, changed, error);
        if (st != ILR_OK)
            return st;
        memset(error->data, 'x', error->capacity);
        error->length = 5000;
        return ILR_E_FAILED;
    }
    return valid_edit(e, changed, error);
}

const uint32_t ilrewrite_abi_version = ILR_ABI_VERSION;

ilr_status ilrewrite_method_create(const ilr_host *h, ilr_method *m, ilr_error *error) {
    (void)error;
    host = h;
    m->name = "hostile";
    m->priority = 10;
    m->options = option_table;
    m->option_count = sizeof option_table / sizeof option_table[0];
    m->start = start;
    m->wants = wants;
    m->edit = edit;
    return ILR_OK;
}
