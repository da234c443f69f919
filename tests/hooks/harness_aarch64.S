// The assembler half of the arm64 ELT stub harness (see harness_aarch64.c): a caller
// that calls a stub as the JIT does, every register set to a known value, and a hostile
// dispatcher. AAPCS64, Linux ELF; GNU assembler (aarch64-linux-gnu-gcc -c).
//
// struct regs (harness_aarch64.c): x[32] at 0 (x0 .. x30, then sp; 8 bytes each),
// v[32] at 256 (q0 .. q31, 16 bytes each); 768 bytes.

        .text

// void harness_call(void (*stub)(void), const struct regs *in, struct regs *out)
//
// Keeps its own callee-saved registers, reserves 64 bytes of canary above the SP it
// calls the stub with (filled from harness_canary, copied to harness_canary_after
// afterwards), records that SP in harness_call_sp, loads q0-q31 and x0-x29 from `in`,
// calls `stub` with `blr` (x30 the return address, as for the JIT's call), then stores
// x0-x29, sp and q0-q31 into `out` (x30 is not stored: a call clobbers it).
        .p2align 4
        .globl harness_call
        .type harness_call, %function
harness_call:
        stp x29, x30, [sp, #-176]!
        mov x29, sp
        stp x19, x20, [sp, #16]
        stp x21, x22, [sp, #32]
        stp x23, x24, [sp, #48]
        stp x25, x26, [sp, #64]
        stp x27, x28, [sp, #80]
        stp d8, d9, [sp, #96]
        stp d10, d11, [sp, #112]
        stp d12, d13, [sp, #128]
        stp d14, d15, [sp, #144]

        adrp x9, harness_stub
        str x0, [x9, :lo12:harness_stub]
        adrp x9, harness_out
        str x2, [x9, :lo12:harness_out]
        mov x9, sp
        adrp x10, harness_saved_sp
        str x9, [x10, :lo12:harness_saved_sp]

        // The canary: the 64 bytes at the stub's SP.
        sub sp, sp, #64
        adrp x9, harness_canary
        add x9, x9, :lo12:harness_canary
        ldp x10, x11, [x9, #0]
        stp x10, x11, [sp, #0]
        ldp x10, x11, [x9, #16]
        stp x10, x11, [sp, #16]
        ldp x10, x11, [x9, #32]
        stp x10, x11, [sp, #32]
        ldp x10, x11, [x9, #48]
        stp x10, x11, [sp, #48]
        mov x9, sp
        adrp x10, harness_call_sp
        str x9, [x10, :lo12:harness_call_sp]

        mov x30, x1
        ldp q0, q1, [x30, #256 + 0 * 16]
        ldp q2, q3, [x30, #256 + 2 * 16]
        ldp q4, q5, [x30, #256 + 4 * 16]
        ldp q6, q7, [x30, #256 + 6 * 16]
        ldp q8, q9, [x30, #256 + 8 * 16]
        ldp q10, q11, [x30, #256 + 10 * 16]
        ldp q12, q13, [x30, #256 + 12 * 16]
        ldp q14, q15, [x30, #256 + 14 * 16]
        ldp q16, q17, [x30, #256 + 16 * 16]
        ldp q18, q19, [x30, #256 + 18 * 16]
        ldp q20, q21, [x30, #256 + 20 * 16]
        ldp q22, q23, [x30, #256 + 22 * 16]
        ldp q24, q25, [x30, #256 + 24 * 16]
        ldp q26, q27, [x30, #256 + 26 * 16]
        ldp q28, q29, [x30, #256 + 28 * 16]
        ldp q30, q31, [x30, #256 + 30 * 16]
        ldp x0, x1, [x30, #0 * 8]
        ldp x2, x3, [x30, #2 * 8]
        ldp x4, x5, [x30, #4 * 8]
        ldp x6, x7, [x30, #6 * 8]
        ldp x8, x9, [x30, #8 * 8]
        ldp x10, x11, [x30, #10 * 8]
        ldp x12, x13, [x30, #12 * 8]
        ldp x14, x15, [x30, #14 * 8]
        ldp x16, x17, [x30, #16 * 8]
        ldp x18, x19, [x30, #18 * 8]
        ldp x20, x21, [x30, #20 * 8]
        ldp x22, x23, [x30, #22 * 8]
        ldp x24, x25, [x30, #24 * 8]
        ldp x26, x27, [x30, #26 * 8]
        ldp x28, x29, [x30, #28 * 8]
        adrp x30, harness_stub
        ldr x30, [x30, :lo12:harness_stub]

        blr x30

        adrp x30, harness_out
        ldr x30, [x30, :lo12:harness_out]
        stp x0, x1, [x30, #0 * 8]
        stp x2, x3, [x30, #2 * 8]
        stp x4, x5, [x30, #4 * 8]
        stp x6, x7, [x30, #6 * 8]
        stp x8, x9, [x30, #8 * 8]
        stp x10, x11, [x30, #10 * 8]
        stp x12, x13, [x30, #12 * 8]
        stp x14, x15, [x30, #14 * 8]
        stp x16, x17, [x30, #16 * 8]
        stp x18, x19, [x30, #18 * 8]
        stp x20, x21, [x30, #20 * 8]
        stp x22, x23, [x30, #22 * 8]
        stp x24, x25, [x30, #24 * 8]
        stp x26, x27, [x30, #26 * 8]
        stp x28, x29, [x30, #28 * 8]
        mov x0, sp
        str x0, [x30, #31 * 8]
        stp q0, q1, [x30, #256 + 0 * 16]
        stp q2, q3, [x30, #256 + 2 * 16]
        stp q4, q5, [x30, #256 + 4 * 16]
        stp q6, q7, [x30, #256 + 6 * 16]
        stp q8, q9, [x30, #256 + 8 * 16]
        stp q10, q11, [x30, #256 + 10 * 16]
        stp q12, q13, [x30, #256 + 12 * 16]
        stp q14, q15, [x30, #256 + 14 * 16]
        stp q16, q17, [x30, #256 + 16 * 16]
        stp q18, q19, [x30, #256 + 18 * 16]
        stp q20, q21, [x30, #256 + 20 * 16]
        stp q22, q23, [x30, #256 + 22 * 16]
        stp q24, q25, [x30, #256 + 24 * 16]
        stp q26, q27, [x30, #256 + 26 * 16]
        stp q28, q29, [x30, #256 + 28 * 16]
        stp q30, q31, [x30, #256 + 30 * 16]

        // Copy the canary back (SP is the stub's SP again, if the stub kept it).
        adrp x9, harness_canary_after
        add x9, x9, :lo12:harness_canary_after
        ldp x10, x11, [sp, #0]
        stp x10, x11, [x9, #0]
        ldp x10, x11, [sp, #16]
        stp x10, x11, [x9, #16]
        ldp x10, x11, [sp, #32]
        stp x10, x11, [x9, #32]
        ldp x10, x11, [sp, #48]
        stp x10, x11, [x9, #48]

        adrp x9, harness_saved_sp
        ldr x9, [x9, :lo12:harness_saved_sp]
        mov sp, x9
        ldp x19, x20, [sp, #16]
        ldp x21, x22, [sp, #32]
        ldp x23, x24, [sp, #48]
        ldp x25, x26, [sp, #64]
        ldp x27, x28, [sp, #80]
        ldp d8, d9, [sp, #96]
        ldp d10, d11, [sp, #112]
        ldp d12, d13, [sp, #128]
        ldp d14, d15, [sp, #144]
        ldp x29, x30, [sp], #176
        ret
        .size harness_call, . - harness_call

// void harness_dispatch(uint32_t kind, uintptr_t id, const struct elt_frame *frame)
//
// What the stubs call in place of the crate's dispatcher: an AAPCS64 function that
// records its entry SP, kind, id, the frame's address and a copy of the frame (224
// bytes), then does what any C function may: writes 512 bytes of stack below SP and
// overwrites x0-x18, q0-q7 and q16-q31 (all 128 bits), the upper 64 bits of q8-q15, and
// NZCV with garbage. It keeps x19-x29, sp, the low 64 bits of v8-v15 (d8-d15), and
// returns through x30, as AAPCS64 says.
        .p2align 4
        .globl harness_dispatch
        .type harness_dispatch, %function
harness_dispatch:
        adrp x9, hd_entry_sp
        mov x10, sp
        str x10, [x9, :lo12:hd_entry_sp]
        adrp x9, hd_kind
        mov w0, w0
        str x0, [x9, :lo12:hd_kind]
        adrp x9, hd_id
        str x1, [x9, :lo12:hd_id]
        adrp x9, hd_frame
        str x2, [x9, :lo12:hd_frame]
        adrp x9, hd_calls
        ldr x10, [x9, :lo12:hd_calls]
        add x10, x10, #1
        str x10, [x9, :lo12:hd_calls]

        // The frame, 14 pairs of quadwords.
        adrp x9, hd_frame_copy
        add x9, x9, :lo12:hd_frame_copy
        mov x11, #14
1:
        ldp x12, x13, [x2], #16
        stp x12, x13, [x9], #16
        subs x11, x11, #1
        b.ne 1b

        // 512 bytes of garbage below SP.
        sub x9, sp, #512
        movz x12, #0xAB1E
        movk x12, #0x5CA1, lsl #16
        movk x12, #0xAB1E, lsl #32
        movk x12, #0x5CA1, lsl #48
        mov x11, #32
2:
        stp x12, x12, [x9], #16
        subs x11, x11, #1
        b.ne 2b

        adrp x9, hd_garbage_v
        add x9, x9, :lo12:hd_garbage_v
        ldp q0, q1, [x9, #0 * 16]
        ldp q2, q3, [x9, #2 * 16]
        ldp q4, q5, [x9, #4 * 16]
        ldp q6, q7, [x9, #6 * 16]
        ldp q16, q17, [x9, #16 * 16]
        ldp q18, q19, [x9, #18 * 16]
        ldp q20, q21, [x9, #20 * 16]
        ldp q22, q23, [x9, #22 * 16]
        ldp q24, q25, [x9, #24 * 16]
        ldp q26, q27, [x9, #26 * 16]
        ldp q28, q29, [x9, #28 * 16]
        ldp q30, q31, [x9, #30 * 16]
        // The upper halves of v8-v15: AAPCS64 keeps only their low 64 bits.
        movz x12, #0xBAD0, lsl #48
        movk x12, #0x00F8
        mov v8.d[1], x12
        add x12, x12, #1
        mov v9.d[1], x12
        add x12, x12, #1
        mov v10.d[1], x12
        add x12, x12, #1
        mov v11.d[1], x12
        add x12, x12, #1
        mov v12.d[1], x12
        add x12, x12, #1
        mov v13.d[1], x12
        add x12, x12, #1
        mov v14.d[1], x12
        add x12, x12, #1
        mov v15.d[1], x12

        // x0-x18 (x18 is an ordinary temporary on Linux).
        movz x0, #0xBAD0, lsl #48
        add x1, x0, #1
        add x2, x0, #2
        add x3, x0, #3
        add x4, x0, #4
        add x5, x0, #5
        add x6, x0, #6
        add x7, x0, #7
        add x8, x0, #8
        add x9, x0, #9
        add x10, x0, #10
        add x11, x0, #11
        add x12, x0, #12
        add x13, x0, #13
        add x14, x0, #14
        add x15, x0, #15
        add x16, x0, #16
        add x17, x0, #17
        add x18, x0, #18
        cmp x0, x1
        ret
        .size harness_dispatch, . - harness_dispatch

        .section .note.GNU-stack,"",@progbits
