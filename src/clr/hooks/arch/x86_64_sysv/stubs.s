# The CoreCLR enter/leave/tailcall hooks (FunctionEnter3, FunctionLeave3,
# FunctionTailcall3; the fast path, without WithInfo) for x86_64 System V (Linux ELF).
#
# One file, assembled two ways:
#   * by the crate, with `global_asm!(include_str!(".../stubs.s"), dispatch = sym ...)`
#     (mod.rs beside this file);
#   * by tests/hooks_native.rs, with the system assembler, after replacing the
#     placeholder DISPATCH (written in braces below) by `harness_dispatch`.
# So the file holds no braces other than the placeholders (global_asm would read
# them as operands), and only `#` comments (the comment both assemblers accept).
#
# The JIT calls a hook from a method's prolog or epilog (`movabs r11, cell; call [r11]`),
# not with the C calling convention: the registers it keeps live across the call must
# come back unchanged. Each stub saves them in a frame record on its own stack, calls the
# dispatcher `dispatch(kind: u32, id: usize, frame: *const EltFrame)` in the SysV C ABI
# (kind 0 enter, 1 leave, 2 tailcall), restores them and returns. The dispatcher, a SysV
# function, keeps RBX RBP RSP R12-R15 by the ABI; the stubs use RBP as a frame pointer
# (saved and restored) and align RSP to 16 themselves, whatever its alignment on entry.
#
#   hook      id in   SP in   the stub preserves (besides RBX RBP RSP R12-R15)
#   enter     R14     R15     RDI RSI RDX RCX R8 R9 XMM0-XMM7 (contract), RAX R10 R11
#   leave     RDI     RSI     RAX RDX XMM0 XMM1
#   tailcall  RDI     RSI     RAX RDX XMM0 XMM1
#
# Not preserved: flags; at enter XMM8-XMM15; at leave and tailcall RCX RSI RDI R8-R11
# and XMM2-XMM15. The upper halves of YMM/ZMM registers are not saved (the stubs use
# legacy SSE moves, which leave them as the dispatcher does).
#
# The frame record (mirrored by `EltFrame` in frame.rs, whose offsets are checked at
# compile time), at a 16-byte aligned address:
#   offset  size  field    enter             leave / tailcall
#   0       128   xmm[8]   XMM0-XMM7         xmm[0] = XMM0, xmm[1] = XMM1, rest not written
#   128     48    args[6]  RDI RSI RDX RCX   not written
#                          R8 R9
#   176     16    ret[2]   not written       RAX, RDX
#   192     8     sp       R15               RSI
#   200     4     kind     0                 1 / 2
#   204     4     (reserved, not written)
#   208           size
#
# Assembled with the symbol ILREWRITE_ELT_BROKEN set to 1 (gcc -Wa,--defsym,...), the
# enter stub does not save or restore XMM3 and the leave stub not RDX: the negative
# control of the test harness. With ILREWRITE_ELT_RENAMED also 1, the stubs are named
# ilrewrite_elt_broken_enter3 etc.: the crate's feature `elt-test-modes` assembles this
# file a second time that way (each global_asm! block sets both symbols itself, so the
# order of the blocks does not matter), for the negative control inside a runtime.

        .intel_syntax noprefix

.ifndef ILREWRITE_ELT_BROKEN
        .set ILREWRITE_ELT_BROKEN, 0
.endif
.ifndef ILREWRITE_ELT_RENAMED
        .set ILREWRITE_ELT_RENAMED, 0
.endif

        .set ILREWRITE_EF_XMM, 0
        .set ILREWRITE_EF_ARGS, 128
        .set ILREWRITE_EF_RET, 176
        .set ILREWRITE_EF_SP, 192
        .set ILREWRITE_EF_KIND, 200
        .set ILREWRITE_EF_SIZE, 208

        # The enter stub's stack: the frame record, then RAX R10 R11, padded to 16.
        .set ILREWRITE_ENTER_RAX, ILREWRITE_EF_SIZE
        .set ILREWRITE_ENTER_R10, ILREWRITE_EF_SIZE + 8
        .set ILREWRITE_ENTER_R11, ILREWRITE_EF_SIZE + 16
        .set ILREWRITE_ENTER_STACK, ILREWRITE_EF_SIZE + 32

        .pushsection .text.ilrewrite_elt,"ax",@progbits

# ---------------------------------------------------------------------------------------
# ilrewrite_elt_enter3: id in R14, caller SP in R15; the method's arguments are live.
        .macro ILREWRITE_ELT_ENTER_STUB name
        .p2align 4
        .globl \name
        .hidden \name
        .type \name, @function
\name:
        .cfi_startproc
        push rbp
        .cfi_def_cfa_offset 16
        .cfi_offset rbp, -16
        mov rbp, rsp
        .cfi_def_cfa_register rbp
        and rsp, -16
        sub rsp, ILREWRITE_ENTER_STACK

        mov qword ptr [rsp + ILREWRITE_EF_ARGS + 0], rdi
        mov qword ptr [rsp + ILREWRITE_EF_ARGS + 8], rsi
        mov qword ptr [rsp + ILREWRITE_EF_ARGS + 16], rdx
        mov qword ptr [rsp + ILREWRITE_EF_ARGS + 24], rcx
        mov qword ptr [rsp + ILREWRITE_EF_ARGS + 32], r8
        mov qword ptr [rsp + ILREWRITE_EF_ARGS + 40], r9
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 0], xmm0
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 16], xmm1
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 32], xmm2
.if ILREWRITE_ELT_BROKEN == 0
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 48], xmm3
.endif
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 64], xmm4
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 80], xmm5
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 96], xmm6
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 112], xmm7
        mov qword ptr [rsp + ILREWRITE_EF_SP], r15
        mov dword ptr [rsp + ILREWRITE_EF_KIND], 0
        mov qword ptr [rsp + ILREWRITE_ENTER_RAX], rax
        mov qword ptr [rsp + ILREWRITE_ENTER_R10], r10
        mov qword ptr [rsp + ILREWRITE_ENTER_R11], r11

        xor edi, edi
        mov rsi, r14
        mov rdx, rsp
        call {dispatch}

        mov rdi, qword ptr [rsp + ILREWRITE_EF_ARGS + 0]
        mov rsi, qword ptr [rsp + ILREWRITE_EF_ARGS + 8]
        mov rdx, qword ptr [rsp + ILREWRITE_EF_ARGS + 16]
        mov rcx, qword ptr [rsp + ILREWRITE_EF_ARGS + 24]
        mov r8, qword ptr [rsp + ILREWRITE_EF_ARGS + 32]
        mov r9, qword ptr [rsp + ILREWRITE_EF_ARGS + 40]
        movaps xmm0, xmmword ptr [rsp + ILREWRITE_EF_XMM + 0]
        movaps xmm1, xmmword ptr [rsp + ILREWRITE_EF_XMM + 16]
        movaps xmm2, xmmword ptr [rsp + ILREWRITE_EF_XMM + 32]
.if ILREWRITE_ELT_BROKEN == 0
        movaps xmm3, xmmword ptr [rsp + ILREWRITE_EF_XMM + 48]
.endif
        movaps xmm4, xmmword ptr [rsp + ILREWRITE_EF_XMM + 64]
        movaps xmm5, xmmword ptr [rsp + ILREWRITE_EF_XMM + 80]
        movaps xmm6, xmmword ptr [rsp + ILREWRITE_EF_XMM + 96]
        movaps xmm7, xmmword ptr [rsp + ILREWRITE_EF_XMM + 112]
        mov rax, qword ptr [rsp + ILREWRITE_ENTER_RAX]
        mov r10, qword ptr [rsp + ILREWRITE_ENTER_R10]
        mov r11, qword ptr [rsp + ILREWRITE_ENTER_R11]

        mov rsp, rbp
        .cfi_def_cfa_register rsp
        pop rbp
        .cfi_def_cfa_offset 8
        .cfi_restore rbp
        ret
        .cfi_endproc
        .size \name, . - \name
        .endm

# ---------------------------------------------------------------------------------------
# ilrewrite_elt_leave3 and ilrewrite_elt_tailcall3: id in RDI, SP in RSI; the return
# value (RAX RDX XMM0 XMM1, any two of them for a 16-byte struct) is live.
        .macro ILREWRITE_ELT_RETURN_STUB name, kind
        .p2align 4
        .globl \name
        .hidden \name
        .type \name, @function
\name:
        .cfi_startproc
        push rbp
        .cfi_def_cfa_offset 16
        .cfi_offset rbp, -16
        mov rbp, rsp
        .cfi_def_cfa_register rbp
        and rsp, -16
        sub rsp, ILREWRITE_EF_SIZE

        mov qword ptr [rsp + ILREWRITE_EF_RET + 0], rax
.if (ILREWRITE_ELT_BROKEN == 0) || (\kind != 1)
        mov qword ptr [rsp + ILREWRITE_EF_RET + 8], rdx
.endif
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 0], xmm0
        movaps xmmword ptr [rsp + ILREWRITE_EF_XMM + 16], xmm1
        mov qword ptr [rsp + ILREWRITE_EF_SP], rsi
        mov dword ptr [rsp + ILREWRITE_EF_KIND], \kind

        mov rsi, rdi
        mov edi, \kind
        mov rdx, rsp
        call {dispatch}

        mov rax, qword ptr [rsp + ILREWRITE_EF_RET + 0]
.if (ILREWRITE_ELT_BROKEN == 0) || (\kind != 1)
        mov rdx, qword ptr [rsp + ILREWRITE_EF_RET + 8]
.endif
        movaps xmm0, xmmword ptr [rsp + ILREWRITE_EF_XMM + 0]
        movaps xmm1, xmmword ptr [rsp + ILREWRITE_EF_XMM + 16]

        mov rsp, rbp
        .cfi_def_cfa_register rsp
        pop rbp
        .cfi_def_cfa_offset 8
        .cfi_restore rbp
        ret
        .cfi_endproc
        .size \name, . - \name
        .endm

.if ILREWRITE_ELT_RENAMED
        ILREWRITE_ELT_ENTER_STUB ilrewrite_elt_broken_enter3
        ILREWRITE_ELT_RETURN_STUB ilrewrite_elt_broken_leave3, 1
        ILREWRITE_ELT_RETURN_STUB ilrewrite_elt_broken_tailcall3, 2
.else
        ILREWRITE_ELT_ENTER_STUB ilrewrite_elt_enter3
        ILREWRITE_ELT_RETURN_STUB ilrewrite_elt_leave3, 1
        ILREWRITE_ELT_RETURN_STUB ilrewrite_elt_tailcall3, 2
.endif

        .purgem ILREWRITE_ELT_ENTER_STUB
        .purgem ILREWRITE_ELT_RETURN_STUB
        .popsection
        .att_syntax
