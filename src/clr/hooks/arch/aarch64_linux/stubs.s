// The CoreCLR enter/leave/tailcall hooks (FunctionEnter3, FunctionLeave3,
// FunctionTailcall3; the fast path, without WithInfo) for arm64 Linux (AAPCS64, ELF).
//
// One file, assembled two ways:
//   * by the crate, with `global_asm!(include_str!(".../stubs.s"), dispatch = sym ...)`
//     (mod.rs beside this file);
//   * by tests/hooks_cross.rs, with Debian's aarch64-linux-gnu-gcc, after replacing the
//     placeholder DISPATCH (written in braces below) by `harness_dispatch`, and run under
//     qemu-aarch64.
// So the file holds no braces other than the placeholders (global_asm would read them as
// operands), and only `//` comments (the comment both assemblers take on arm64; `#` is
// an immediate's prefix here).
//
// The register contract, read in the runtime's sources (dotnet/runtime main; .NET Core
// 3.1's JIT emits no profiler callbacks on arm64: its codegencommon.cpp
// genProfilingEnterCallback/genProfilingLeaveCallback end in NYI for arm64, so these stubs
// are for .NET 5 and later):
//   * src/coreclr/jit/targetarm64.h: REG_PROFILER_ENTER_ARG_FUNC_ID and
//     REG_PROFILER_LEAVE_ARG_FUNC_ID are x10, REG_PROFILER_ENTER_ARG_CALLER_SP and
//     REG_PROFILER_LEAVE_ARG_CALLER_SP are x11, for enter, leave and tailcall alike; the
//     registers the JIT takes as trashed by all three hooks
//     (AllRegsMask_PROFILER_ENTER_TRASH, LEAVE and TAILCALL the same) are its callee-trash
//     set (x0-x15, ip0 ip1 = x16 x17, lr, v0-v7, v16-v31) less the argument registers
//     x0-x7, the return-buffer register x8, fp, and the floating-point argument
//     registers v0-v7. x18 is in neither set: the JIT never uses it.
//   * src/coreclr/vm/arm64/asmhelpers.S, GenerateProfileHelper (ProfileEnterNaked,
//     ProfileLeaveNaked, ProfileTailcallNaked, the runtime's own hooks for the WithInfo
//     path): on entry x10 = functionIDOrClientID, x11 = the profiled (caller's) SP; on
//     exit "x0-x8, q0-q7, fp are preserved", the other volatile registers not. Its
//     PROFILE_PLATFORM_SPECIFIC_DATA saves x8 and x0-x7 and the eight q registers
//     (SAVE_FLOAT_ARGUMENT_REGISTERS) at all three hooks.
// The JIT calls a hook with `bl`/`blr` from the prolog (enter) or before the epilog
// (leave, tailcall), SP 16-byte aligned (as AAPCS64 requires at any call; SP itself may
// never be misaligned on arm64 Linux, whose kernel enables the SP alignment check).
//
//   hook      id in  SP in  the stub preserves (besides x19-x28, d8-d15, sp by AAPCS64)
//   enter     x10    x11    x0-x8, q0-q7 (all 128 bits), fp (x29)
//   leave     x10    x11    x0-x8, q0-q7, fp
//   tailcall  x10    x11    x0-x8, q0-q7, fp
//
// At leave the return value is live: x0 (x1 too for a 16-byte struct), q0-q3 for an HFA
// or HVA of up to four floats, doubles or vectors, and the contract keeps x8 (the
// return-buffer address a method got) and the rest of x0-x7/q0-q7 as well. Not preserved:
// x9-x18, lr (x30: the stub returns through it, the caller reloads its own), the upper
// halves of v8-v15 and all of v16-v31, NZCV. The stubs spend the same stores on all three
// hooks (eight stp of q, four stp and a str of x): one path, and every kind's frame holds
// x0-x8 and q0-q7.
//
// Each stub pushes an AAPCS64 frame record (fp, lr) with the frame record below it on its
// own stack (stack walkers and debuggers see a normal frame, and CFI says so), calls
// `dispatch(kind: u32 /* 0 enter, 1 leave, 2 tailcall */, id: usize, frame: *const
// EltFrame)` with the C ABI, restores and returns. The dispatcher keeps x19-x28, fp, sp
// and d8-d15 by AAPCS64.
//
// The frame record (mirrored by `EltFrame` in frame.rs, whose offsets are checked
// at compile time), at a 16-byte aligned address, the same for the three kinds:
//   offset  size  field        what
//   0       128   q[8]         q0-q7, 16 bytes each
//   128     72    x[9]         x0-x8
//   200     8     sp           x11 (the caller's SP the JIT passed)
//   208     4     kind         0 / 1 / 2
//   212     12    (reserved, not written)
//   224           size
//
// Assembled with the symbol ILREWRITE_ELT_BROKEN defined (gcc -Wa,--defsym,...), the
// enter stub does not save or restore q5 and the leave stub not x1: the negative control
// of the test harness, never built into the crate.

        .set ILREWRITE_EF_Q, 0
        .set ILREWRITE_EF_X, 128
        .set ILREWRITE_EF_SP, 200
        .set ILREWRITE_EF_KIND, 208
        .set ILREWRITE_EF_SIZE, 224

        // The stub's stack: the saved fp and lr at sp, the frame record above them.
        .set ILREWRITE_STUB_EF, 16
        .set ILREWRITE_STUB_STACK, ILREWRITE_STUB_EF + ILREWRITE_EF_SIZE

        // The negative control's two omissions (0 in every real build).
.ifdef ILREWRITE_ELT_BROKEN
        .set ILREWRITE_DROP, 1
.else
        .set ILREWRITE_DROP, 0
.endif

        .pushsection .text.ilrewrite_elt,"ax",@progbits

// ---------------------------------------------------------------------------------------
// One stub: `kind` 0 enter, 1 leave, 2 tailcall. Id in x10, caller SP in x11.
        .macro ILREWRITE_ELT_STUB name, kind
        .p2align 4
        .globl \name
        .hidden \name
        .type \name, %function
\name:
        .cfi_startproc
        stp x29, x30, [sp, #-ILREWRITE_STUB_STACK]!
        .cfi_def_cfa_offset ILREWRITE_STUB_STACK
        .cfi_offset x29, -ILREWRITE_STUB_STACK
        .cfi_offset x30, -ILREWRITE_STUB_STACK + 8
        mov x29, sp

        stp q0, q1, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 0]
        stp q2, q3, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 32]
.if ILREWRITE_DROP && (\kind == 0)
        str q4, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 64]
.else
        stp q4, q5, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 64]
.endif
        stp q6, q7, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 96]
.if ILREWRITE_DROP && (\kind == 1)
        str x0, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 0]
.else
        stp x0, x1, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 0]
.endif
        stp x2, x3, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 16]
        stp x4, x5, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 32]
        stp x6, x7, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 48]
        str x8, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 64]
        str x11, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_SP]
        mov w9, #\kind
        str w9, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_KIND]

        mov w0, #\kind
        mov x1, x10
        add x2, sp, #ILREWRITE_STUB_EF
        bl {dispatch}

        ldp q0, q1, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 0]
        ldp q2, q3, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 32]
.if ILREWRITE_DROP && (\kind == 0)
        ldr q4, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 64]
.else
        ldp q4, q5, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 64]
.endif
        ldp q6, q7, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_Q + 96]
.if ILREWRITE_DROP && (\kind == 1)
        ldr x0, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 0]
.else
        ldp x0, x1, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 0]
.endif
        ldp x2, x3, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 16]
        ldp x4, x5, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 32]
        ldp x6, x7, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 48]
        ldr x8, [sp, #ILREWRITE_STUB_EF + ILREWRITE_EF_X + 64]

        ldp x29, x30, [sp], #ILREWRITE_STUB_STACK
        .cfi_def_cfa_offset 0
        .cfi_restore x29
        .cfi_restore x30
        ret
        .cfi_endproc
        .size \name, . - \name
        .endm

        ILREWRITE_ELT_STUB ilrewrite_elt_enter3, 0
        ILREWRITE_ELT_STUB ilrewrite_elt_leave3, 1
        ILREWRITE_ELT_STUB ilrewrite_elt_tailcall3, 2

        .purgem ILREWRITE_ELT_STUB
        .popsection
