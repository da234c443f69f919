/*
 * The ELT stub harness for arm64 Linux: checks the crate's enter/leave/tailcall stubs
 * (src/clr/hooks/arch/aarch64_linux/stubs.s, the dispatcher placeholder replaced by
 * `harness_dispatch`) without a runtime. Built with aarch64-linux-gnu-gcc -static and run
 * under qemu-aarch64 by tests/hooks_cross.rs.
 *
 * For each stub, `harness_call` (the .S half) sets x0-x29 and q0-q31 (both 64-bit halves)
 * to distinct values (the id in x10 and a fake caller SP in x11, where the JIT puts them),
 * calls the stub with `blr`, and stores every register afterwards. `harness_dispatch`,
 * called by the stub, records what it got and clobbers every register an AAPCS64
 * function may. Checked here:
 *   - every register of the contract (x0-x8, q0-q7 in full, fp), the callee-saved ones
 *     (x19-x28, the low halves of v8-v15) and sp have their values from before;
 *   - the dispatcher was called once, with the right kind and id, a 16-byte aligned SP,
 *     and a 16-byte aligned frame inside the stub's stack holding exactly x0-x8, q0-q7
 *     and x11;
 *   - the 64 bytes at the caller's SP are untouched.
 * Prints one line per stub; exits 0 when all hold, else prints each difference (naming
 * the register) and exits 1.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* x[0..30] are x0-x30, x[31] is sp. */
#define SP 31
struct regs {
    uint64_t x[32];
    uint8_t v[32][16];
};
_Static_assert(offsetof(struct regs, v) == 256, "struct regs: the .S half's offsets");
_Static_assert(sizeof(struct regs) == 768, "struct regs: the .S half's offsets");

/* The frame record, as src/clr/hooks/arch/aarch64_linux/stubs.s documents it. */
struct elt_frame {
    uint8_t q[8][16];
    uint64_t x[9];
    uint64_t sp;
    uint32_t kind;
    uint32_t reserved[3];
};
_Static_assert(offsetof(struct elt_frame, x) == 128, "frame layout");
_Static_assert(offsetof(struct elt_frame, sp) == 200, "frame layout");
_Static_assert(offsetof(struct elt_frame, kind) == 208, "frame layout");
_Static_assert(sizeof(struct elt_frame) == 224, "frame layout (14 pairs copied)");

/* The .S half and what it shares. */
void harness_call(void (*stub)(void), const struct regs *in, struct regs *out);
uint64_t harness_stub, harness_out, harness_saved_sp, harness_call_sp;
uint64_t harness_canary[8], harness_canary_after[8];
uint64_t hd_entry_sp, hd_kind, hd_id, hd_frame, hd_calls;
struct elt_frame hd_frame_copy;
uint8_t hd_garbage_v[32][16];

/* The stubs under test. */
void ilrewrite_elt_enter3(void);
void ilrewrite_elt_leave3(void);
void ilrewrite_elt_tailcall3(void);

/* Register numbers in the checks: 0-31 the x registers and sp as in struct regs, 32 + i
 * for qi (all 128 bits), 64 + i for di (the low 64 bits of vi). */
#define Q(i) (32 + (i))
#define D(i) (64 + (i))

static int must_keep(int r) {
    if (r <= 8)
        return 1; /* x0-x8: the contract */
    if (r >= 19 && r <= 29)
        return 1; /* x19-x28 callee-saved, x29 fp: the contract and AAPCS64 */
    if (r == SP)
        return 1;
    if (r >= Q(0) && r <= Q(7))
        return 1; /* q0-q7: the contract */
    if (r >= D(8) && r <= D(15))
        return 1; /* d8-d15: AAPCS64 */
    return 0;
}

static void reg_name(int r, char *buf, size_t len) {
    if (r == SP)
        snprintf(buf, len, "SP");
    else if (r == 29)
        snprintf(buf, len, "X29 (FP)");
    else if (r < 32)
        snprintf(buf, len, "X%d", r);
    else if (r < 64)
        snprintf(buf, len, "Q%d", r - 32);
    else
        snprintf(buf, len, "D%d", r - 64);
}

static void hex16(const uint8_t *v, char *buf, size_t len) {
    size_t at = (size_t)snprintf(buf, len, "0x");
    for (int b = 15; b >= 0 && at < len; b--)
        at += (size_t)snprintf(buf + at, len - at, "%02x", v[b]);
}

static int same(const struct regs *a, const struct regs *b, int r) {
    if (r < 32)
        return a->x[r] == b->x[r];
    if (r < 64)
        return memcmp(a->v[r - 32], b->v[r - 32], 16) == 0;
    return memcmp(a->v[r - 64], b->v[r - 64], 8) == 0;
}

static void value(const struct regs *s, int r, char *buf, size_t len) {
    if (r < 32)
        snprintf(buf, len, "0x%016" PRIx64, s->x[r]);
    else if (r < 64)
        hex16(s->v[r - 32], buf, len);
    else {
        uint64_t d;
        memcpy(&d, s->v[r - 64], 8);
        snprintf(buf, len, "0x%016" PRIx64, d);
    }
}

struct stub {
    const char *name;
    void (*fn)(void);
    uint32_t kind;
};

static const struct stub STUBS[3] = {
    {"enter", ilrewrite_elt_enter3, 0},
    {"leave", ilrewrite_elt_leave3, 1},
    {"tailcall", ilrewrite_elt_tailcall3, 2},
};

static int failures;

#define FAIL(label, ...)                                                                   \
    do {                                                                                   \
        printf("FAIL %s: ", label);                                                        \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
        failures++;                                                                        \
        ok = 0;                                                                            \
    } while (0)

static void run(const struct stub *s) {
    const char *label = s->name;
    int ok = 1;
    struct regs in, out;
    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    for (int r = 0; r < 31; r++)
        in.x[r] = 0xC0DE000000000000u | ((uint64_t)(s->kind + 1) << 40) | ((uint64_t)r << 8) |
                  0xA5u;
    for (int v = 0; v < 32; v++)
        for (int b = 0; b < 16; b++)
            in.v[v][b] = (uint8_t)(0x40 + 5 * v + b + 0x11 * s->kind);
    const uint64_t id = 0x1D00000000000000u | ((uint64_t)s->kind << 16) | 0xF00Du;
    const uint64_t sp = 0x0000FFFF00000000u | ((uint64_t)s->kind << 12) | 0x0A0u;
    in.x[10] = id;
    in.x[11] = sp;
    for (int i = 0; i < 8; i++)
        harness_canary[i] = 0xCA4A41E500000000u | (uint64_t)i;
    memset(harness_canary_after, 0, sizeof harness_canary_after);
    for (int v = 0; v < 32; v++)
        for (int b = 0; b < 16; b++)
            hd_garbage_v[v][b] = (uint8_t)(0xE0 ^ (v * 7 + b));
    /* Garbage that happens to equal a register's value would hide a clobber. */
    for (int v = 0; v < 32; v++)
        if (memcmp(hd_garbage_v[v], in.v[v], 16) == 0)
            hd_garbage_v[v][0] ^= 0xFF;
    hd_entry_sp = hd_kind = hd_id = hd_frame = hd_calls = 0;
    memset(&hd_frame_copy, 0xEE, sizeof hd_frame_copy);

    harness_call(s->fn, &in, &out);
    in.x[SP] = harness_call_sp;

    /* Preservation: every register, each either kept as it must be, or listed free. */
    char name[16], was[40], now[40], clobbered[400] = "";
    for (int r = 0; r < 96; r++) {
        if (r == 30)
            continue; /* lr: the call's return address, not compared */
        if (r >= D(0) && (r < D(8) || r > D(15)))
            continue; /* the low halves are compared for v8-v15 only */
        if (r >= Q(8) && r <= Q(15)) {
            /* In full only to list it as free; its low half is checked as Dn. */
            if (!same(&in, &out, r) && same(&in, &out, r - 32 + 64)) {
                snprintf(name, sizeof name, " Q%d[127:64]", r - 32);
                strncat(clobbered, name, sizeof clobbered - strlen(clobbered) - 1);
            }
            continue;
        }
        if (same(&in, &out, r))
            continue;
        reg_name(r, name, sizeof name);
        if (must_keep(r)) {
            value(&in, r, was, sizeof was);
            value(&out, r, now, sizeof now);
            FAIL(label, "%s not preserved: was %s, now %s", name, was, now);
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
        FAIL(label, "the dispatcher got id 0x%" PRIx64 ", not 0x%" PRIx64 " (from X10)", hd_id,
             id);
    if (hd_entry_sp % 16 != 0)
        FAIL(label, "the dispatcher was entered with sp%%16=%" PRIu64, hd_entry_sp % 16);
    if (hd_frame % 16 != 0)
        FAIL(label, "the frame at 0x%" PRIx64 " is not 16-byte aligned", hd_frame);
    if (!(hd_frame >= hd_entry_sp && hd_frame + sizeof(struct elt_frame) <= harness_call_sp))
        FAIL(label, "the frame at 0x%" PRIx64 " is not in the stub's stack (0x%" PRIx64
                    " .. 0x%" PRIx64 ")",
             hd_frame, hd_entry_sp, harness_call_sp);

    /* The frame's contents: the same for the three kinds. */
    const struct elt_frame *f = &hd_frame_copy;
    if (f->kind != s->kind)
        FAIL(label, "frame kind %" PRIu32 ", not %" PRIu32, f->kind, s->kind);
    if (f->sp != sp)
        FAIL(label, "frame sp 0x%" PRIx64 ", not X11 0x%" PRIx64, f->sp, sp);
    for (int i = 0; i < 9; i++)
        if (f->x[i] != in.x[i])
            FAIL(label, "frame x[%d] (X%d) is 0x%016" PRIx64 ", the register was 0x%016" PRIx64,
                 i, i, f->x[i], in.x[i]);
    for (int i = 0; i < 8; i++)
        if (memcmp(f->q[i], in.v[i], 16) != 0) {
            hex16(f->q[i], now, sizeof now);
            hex16(in.v[i], was, sizeof was);
            FAIL(label, "frame q[%d] (Q%d) is %s, the register was %s", i, i, now, was);
        }

    /* The caller's stack. */
    for (int i = 0; i < 8; i++)
        if (harness_canary_after[i] != harness_canary[i])
            FAIL(label, "the caller's stack at sp + %d was written (0x%016" PRIx64 ")", 8 * i,
                 harness_canary_after[i]);

    if (ok)
        printf("ok   %-9s kept: X0-X8 Q0-Q7 X29 (FP) + X19-X28 D8-D15 SP; dispatcher: kind "
               "%" PRIu32 ", id 0x%" PRIx64 ", sp%%16=0, frame ok; clobbered (free):%s\n",
               label, s->kind, id, clobbered);
}

int main(void) {
    for (int i = 0; i < 3; i++)
        run(&STUBS[i]);
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("all stubs keep their contract\n");
    return 0;
}
