/*
 * The ELT stub harness (x86_64 System V, Linux): checks the crate's enter/leave/tailcall
 * stubs (src/clr/hooks/arch/x86_64_sysv/stubs.s, the dispatcher placeholder replaced by
 * `harness_dispatch`) without a runtime. Built and run by tests/hooks_native.rs.
 *
 * For each stub, entered once with `rsp % 16 == 8` (as the JIT calls it) and once with
 * `rsp % 16 == 0` (the stubs align the stack themselves), `harness_call` (the .s half)
 * sets every general register but RSP and XMM0-XMM15 to distinct values (the id in R14
 * and a fake SP in R15 for enter, in RDI and RSI for leave and tailcall), calls the stub,
 * and stores every register afterwards. `harness_dispatch`, called by the stub, records
 * what it got and clobbers every register a SysV function may. Checked here:
 *   - every register of the stub's contract, the callee-saved ones and RSP have their
 *     values from before (and the registers the stub promises beyond the contract);
 *   - the dispatcher was called once, with the right kind and id, `rsp % 16 == 8` at its
 *     entry, a 16-byte aligned frame inside the stub's stack, holding exactly the
 *     registers' values (arguments at enter, return registers at leave and tailcall);
 *   - the 64 bytes of the caller's stack above the return address are untouched.
 * Prints one line per stub and entry alignment; exits 0 when all hold, else prints each
 * difference (naming the register) and exits 1.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Register numbers: the index in struct regs' gpr. */
enum { RAX, RBX, RCX, RDX, RSI, RDI, RBP, RSP, R8, R9, R10, R11, R12, R13, R14, R15 };
static const char *const GPR_NAMES[16] = {"RAX", "RBX", "RCX", "RDX", "RSI", "RDI",
                                          "RBP", "RSP", "R8",  "R9",  "R10", "R11",
                                          "R12", "R13", "R14", "R15"};

struct regs {
    uint64_t gpr[16];
    uint8_t xmm[16][16];
};
_Static_assert(offsetof(struct regs, xmm) == 128, "struct regs: the .s half's offsets");
_Static_assert(sizeof(struct regs) == 384, "struct regs: the .s half's offsets");

/* The frame record, as src/clr/hooks/arch/x86_64_sysv/stubs.s documents it. */
struct elt_frame {
    uint8_t xmm[8][16];
    uint64_t args[6];
    uint64_t ret[2];
    uint64_t sp;
    uint32_t kind;
    uint32_t reserved;
};
_Static_assert(offsetof(struct elt_frame, args) == 128, "frame layout");
_Static_assert(offsetof(struct elt_frame, ret) == 176, "frame layout");
_Static_assert(offsetof(struct elt_frame, sp) == 192, "frame layout");
_Static_assert(offsetof(struct elt_frame, kind) == 200, "frame layout");
_Static_assert(sizeof(struct elt_frame) == 208, "frame layout (26 quadwords copied)");

/* The .s half. */
void harness_call(void (*stub)(void), const struct regs *in, struct regs *out, int misalign);
uint64_t harness_saved_rsp, harness_stub, harness_out, harness_scratch, harness_call_rsp;
uint64_t harness_canary[8], harness_canary_after[8];
uint64_t hd_entry_rsp, hd_kind, hd_id, hd_frame, hd_calls;
struct elt_frame hd_frame_copy;
uint8_t hd_garbage_xmm[16][16];

/* The stubs under test. */
void ilrewrite_elt_enter3(void);
void ilrewrite_elt_leave3(void);
void ilrewrite_elt_tailcall3(void);

/* A register set: bit i for gpr i, bit 16 + i for XMMi. */
typedef uint32_t regset;
#define G(r) ((regset)1 << (r))
#define X(i) ((regset)1 << (16 + (i)))
#define CALLEE_SAVED (G(RBX) | G(RBP) | G(RSP) | G(R12) | G(R13) | G(R14) | G(R15))
#define ENTER_ARGS (G(RDI) | G(RSI) | G(RDX) | G(RCX) | G(R8) | G(R9))
#define XMM0_7 (X(0) | X(1) | X(2) | X(3) | X(4) | X(5) | X(6) | X(7))
#define RETURN_REGS (G(RAX) | G(RDX) | X(0) | X(1))

struct stub {
    const char *name;
    void (*fn)(void);
    uint32_t kind;
    int id_reg, sp_reg;
    regset contract; /* what the runtime needs kept (besides CALLEE_SAVED) */
    regset promised; /* what the stub keeps beyond the contract */
};

static const struct stub STUBS[3] = {
    {"enter", ilrewrite_elt_enter3, 0, R14, R15, ENTER_ARGS | XMM0_7, G(RAX) | G(R10) | G(R11)},
    {"leave", ilrewrite_elt_leave3, 1, RDI, RSI, RETURN_REGS, 0},
    {"tailcall", ilrewrite_elt_tailcall3, 2, RDI, RSI, RETURN_REGS, 0},
};

static int failures;

static void reg_name(int r, char *buf, size_t len) {
    if (r < 16)
        snprintf(buf, len, "%s", GPR_NAMES[r]);
    else
        snprintf(buf, len, "XMM%d", r - 16);
}

static void hex16(const uint8_t *x, char *buf, size_t len) {
    /* little-endian: most significant byte first */
    size_t at = 0;
    at += (size_t)snprintf(buf + at, len - at, "0x");
    for (int b = 15; b >= 0 && at < len; b--)
        at += (size_t)snprintf(buf + at, len - at, "%02x", x[b]);
}

#define FAIL(label, ...)                                                                   \
    do {                                                                                   \
        printf("FAIL %s: ", label);                                                        \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
        failures++;                                                                        \
        ok = 0;                                                                            \
    } while (0)

/* Whether register r (gpr index, or 16 + XMM index) has the same value in a and b. */
static int same(const struct regs *a, const struct regs *b, int r) {
    if (r < 16)
        return a->gpr[r] == b->gpr[r];
    return memcmp(a->xmm[r - 16], b->xmm[r - 16], 16) == 0;
}

static int run(const struct stub *s, int misalign) {
    char label[64];
    snprintf(label, sizeof label, "%s (entry rsp%%16=%d)", s->name, misalign ? 0 : 8);
    int ok = 1;

    struct regs in, out;
    memset(&out, 0, sizeof out);
    for (int r = 0; r < 16; r++)
        in.gpr[r] = 0xC0DE000000000000u | ((uint64_t)(s->kind + 1) << 40) |
                    ((uint64_t)misalign << 36) | ((uint64_t)r << 8) | 0x5Au;
    for (int x = 0; x < 16; x++)
        for (int b = 0; b < 16; b++)
            in.xmm[x][b] = (uint8_t)(0x10 * (x + 1) + b + 0x3 * s->kind + misalign);
    const uint64_t id = 0x1D00000000000000u | ((uint64_t)s->kind << 16) | 0xF00Du;
    const uint64_t sp = 0x00007FFD00000000u | ((uint64_t)s->kind << 12) | 0x0A8u;
    in.gpr[s->id_reg] = id;
    in.gpr[s->sp_reg] = sp;
    in.gpr[RSP] = 0;
    for (int i = 0; i < 8; i++)
        harness_canary[i] = 0xCA4A41E500000000u | (uint64_t)i;
    memset(harness_canary_after, 0, sizeof harness_canary_after);
    for (int x = 0; x < 16; x++)
        for (int b = 0; b < 16; b++)
            hd_garbage_xmm[x][b] = (uint8_t)(0xE0 ^ (x * 7 + b));
    hd_entry_rsp = hd_kind = hd_id = hd_frame = hd_calls = 0;
    memset(&hd_frame_copy, 0xEE, sizeof hd_frame_copy);

    harness_call(s->fn, &in, &out, misalign);
    in.gpr[RSP] = harness_call_rsp; /* RSP after the call: as at the call */

    /* Preservation. */
    const regset keep = s->contract | CALLEE_SAVED | s->promised;
    char name[8], was[40], now[40];
    char clobbered[160] = "";
    for (int r = 0; r < 32; r++) {
        reg_name(r, name, sizeof name);
        if (same(&in, &out, r))
            continue;
        if (keep & ((regset)1 << r)) {
            if (r < 16) {
                snprintf(was, sizeof was, "0x%016" PRIx64, in.gpr[r]);
                snprintf(now, sizeof now, "0x%016" PRIx64, out.gpr[r]);
            } else {
                hex16(in.xmm[r - 16], was, sizeof was);
                hex16(out.xmm[r - 16], now, sizeof now);
            }
            FAIL(label, "%s not preserved%s: was %s, now %s", name,
                 (s->promised & ((regset)1 << r)) ? " (beyond the contract, promised)" : "",
                 was, now);
        } else {
            strncat(clobbered, " ", sizeof clobbered - strlen(clobbered) - 1);
            strncat(clobbered, name, sizeof clobbered - strlen(clobbered) - 1);
        }
    }

    /* The dispatcher's view. */
    if (hd_calls != 1)
        FAIL(label, "the dispatcher was called %" PRIu64 " times", hd_calls);
    if ((uint32_t)hd_kind != s->kind)
        FAIL(label, "the dispatcher got kind %" PRIu32 ", not %" PRIu32, (uint32_t)hd_kind,
             s->kind);
    if (hd_id != id)
        FAIL(label, "the dispatcher got id 0x%" PRIx64 ", not 0x%" PRIx64 " (from %s)", hd_id,
             id, GPR_NAMES[s->id_reg]);
    if (hd_entry_rsp % 16 != 8)
        FAIL(label, "the dispatcher was entered with rsp%%16=%" PRIu64 ", not 8",
             hd_entry_rsp % 16);
    if (hd_frame % 16 != 0)
        FAIL(label, "the frame at 0x%" PRIx64 " is not 16-byte aligned", hd_frame);
    if (!(hd_frame > hd_entry_rsp && hd_frame + sizeof(struct elt_frame) <= harness_call_rsp - 8))
        FAIL(label, "the frame at 0x%" PRIx64 " is not in the stub's stack (0x%" PRIx64
                    " .. 0x%" PRIx64 ")",
             hd_frame, hd_entry_rsp, harness_call_rsp - 8);

    /* The frame's contents. */
    const struct elt_frame *f = &hd_frame_copy;
    if (f->kind != s->kind)
        FAIL(label, "frame kind %" PRIu32 ", not %" PRIu32, f->kind, s->kind);
    if (f->sp != sp)
        FAIL(label, "frame sp 0x%" PRIx64 ", not %s 0x%" PRIx64, f->sp, GPR_NAMES[s->sp_reg],
             sp);
    if (s->kind == 0) {
        static const int ARG_REGS[6] = {RDI, RSI, RDX, RCX, R8, R9};
        for (int i = 0; i < 6; i++)
            if (f->args[i] != in.gpr[ARG_REGS[i]])
                FAIL(label, "frame args[%d] (%s) is 0x%016" PRIx64 ", the register was 0x%016" PRIx64,
                     i, GPR_NAMES[ARG_REGS[i]], f->args[i], in.gpr[ARG_REGS[i]]);
    } else {
        static const int RET_REGS[2] = {RAX, RDX};
        for (int i = 0; i < 2; i++)
            if (f->ret[i] != in.gpr[RET_REGS[i]])
                FAIL(label, "frame ret[%d] (%s) is 0x%016" PRIx64 ", the register was 0x%016" PRIx64,
                     i, GPR_NAMES[RET_REGS[i]], f->ret[i], in.gpr[RET_REGS[i]]);
    }
    const int saved_xmm = s->kind == 0 ? 8 : 2;
    for (int i = 0; i < saved_xmm; i++)
        if (memcmp(f->xmm[i], in.xmm[i], 16) != 0) {
            hex16(f->xmm[i], now, sizeof now);
            hex16(in.xmm[i], was, sizeof was);
            FAIL(label, "frame xmm[%d] (XMM%d) is %s, the register was %s", i, i, now, was);
        }

    /* The caller's stack. */
    for (int i = 0; i < 8; i++)
        if (harness_canary_after[i] != harness_canary[i])
            FAIL(label, "the caller's stack at return address + %d was written (0x%016" PRIx64 ")",
                 8 + 8 * i, harness_canary_after[i]);

    if (ok) {
        char kept[200] = "", beyond[80] = "";
        for (int r = 0; r < 32; r++) {
            char *list = (s->contract & ((regset)1 << r))   ? kept
                         : (s->promised & ((regset)1 << r)) ? beyond
                                                             : NULL;
            size_t len = list == kept ? sizeof kept : sizeof beyond;
            if (list) {
                reg_name(r, name, sizeof name);
                strncat(list, " ", len - strlen(list) - 1);
                strncat(list, name, len - strlen(list) - 1);
            }
        }
        printf("ok   %-26s kept:%s + callee-saved%s%s; dispatcher: kind %" PRIu32
               ", id 0x%" PRIx64 ", rsp%%16=8, frame ok; clobbered (free):%s\n",
               label, kept, *beyond ? "; also kept (beyond the contract):" : "", beyond,
               s->kind, id, clobbered);
    }
    return ok;
}

int main(void) {
    for (int i = 0; i < 3; i++)
        for (int misalign = 0; misalign < 2; misalign++)
            run(&STUBS[i], misalign);
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("all stubs keep their contract\n");
    return 0;
}
