# The assembler half of the ELT stub harness (see harness_x86_64.c): a caller that calls
# a stub as the JIT does, every register set to a known value, and a hostile dispatcher.
# x86_64 System V, Linux ELF; GNU assembler, Intel syntax.
#
# struct regs (harness_x86_64.c): gpr[16] at 0 (RAX RBX RCX RDX RSI RDI RBP RSP R8 .. R15,
# 8 bytes each), xmm[16] at 128 (16 bytes each); 384 bytes.

        .intel_syntax noprefix
        .text

# void harness_call(void (*stub)(void), const struct regs *in, struct regs *out,
#                   int misalign)
#
# Loads every general register but RSP and XMM0-XMM15 from `in`, calls `stub` with
# `rsp % 16 == 8` at its entry (`rsp % 16 == 0` if `misalign`), then stores every
# register into `out` (RSP as it is after the call). The 64 bytes above the return
# address are filled from harness_canary before the call and copied to
# harness_canary_after after it. Records the RSP of the call in harness_call_rsp.
        .p2align 4
        .globl harness_call
        .type harness_call, @function
harness_call:
        push rbx
        push rbp
        push r12
        push r13
        push r14
        push r15
        mov qword ptr [rip + harness_saved_rsp], rsp
        mov qword ptr [rip + harness_stub], rdi
        mov qword ptr [rip + harness_out], rdx
        and rsp, -16
        sub rsp, 64
        test ecx, ecx
        jz 1f
        sub rsp, 8
1:
        # The canary: the 64 bytes at RSP, just above the stub's return address.
        mov rax, rsi
        lea rsi, [rip + harness_canary]
        mov rdi, rsp
        mov ecx, 8
        rep movsq
        mov qword ptr [rip + harness_call_rsp], rsp

        movups xmm0, xmmword ptr [rax + 128 + 0 * 16]
        movups xmm1, xmmword ptr [rax + 128 + 1 * 16]
        movups xmm2, xmmword ptr [rax + 128 + 2 * 16]
        movups xmm3, xmmword ptr [rax + 128 + 3 * 16]
        movups xmm4, xmmword ptr [rax + 128 + 4 * 16]
        movups xmm5, xmmword ptr [rax + 128 + 5 * 16]
        movups xmm6, xmmword ptr [rax + 128 + 6 * 16]
        movups xmm7, xmmword ptr [rax + 128 + 7 * 16]
        movups xmm8, xmmword ptr [rax + 128 + 8 * 16]
        movups xmm9, xmmword ptr [rax + 128 + 9 * 16]
        movups xmm10, xmmword ptr [rax + 128 + 10 * 16]
        movups xmm11, xmmword ptr [rax + 128 + 11 * 16]
        movups xmm12, xmmword ptr [rax + 128 + 12 * 16]
        movups xmm13, xmmword ptr [rax + 128 + 13 * 16]
        movups xmm14, xmmword ptr [rax + 128 + 14 * 16]
        movups xmm15, xmmword ptr [rax + 128 + 15 * 16]
        mov rbx, qword ptr [rax + 1 * 8]
        mov rcx, qword ptr [rax + 2 * 8]
        mov rdx, qword ptr [rax + 3 * 8]
        mov rsi, qword ptr [rax + 4 * 8]
        mov rdi, qword ptr [rax + 5 * 8]
        mov rbp, qword ptr [rax + 6 * 8]
        mov r8, qword ptr [rax + 8 * 8]
        mov r9, qword ptr [rax + 9 * 8]
        mov r10, qword ptr [rax + 10 * 8]
        mov r11, qword ptr [rax + 11 * 8]
        mov r12, qword ptr [rax + 12 * 8]
        mov r13, qword ptr [rax + 13 * 8]
        mov r14, qword ptr [rax + 14 * 8]
        mov r15, qword ptr [rax + 15 * 8]
        mov rax, qword ptr [rax + 0 * 8]

        call qword ptr [rip + harness_stub]

        mov qword ptr [rip + harness_scratch], rax
        mov rax, qword ptr [rip + harness_out]
        mov qword ptr [rax + 1 * 8], rbx
        mov qword ptr [rax + 2 * 8], rcx
        mov qword ptr [rax + 3 * 8], rdx
        mov qword ptr [rax + 4 * 8], rsi
        mov qword ptr [rax + 5 * 8], rdi
        mov qword ptr [rax + 6 * 8], rbp
        mov qword ptr [rax + 7 * 8], rsp
        mov qword ptr [rax + 8 * 8], r8
        mov qword ptr [rax + 9 * 8], r9
        mov qword ptr [rax + 10 * 8], r10
        mov qword ptr [rax + 11 * 8], r11
        mov qword ptr [rax + 12 * 8], r12
        mov qword ptr [rax + 13 * 8], r13
        mov qword ptr [rax + 14 * 8], r14
        mov qword ptr [rax + 15 * 8], r15
        movups xmmword ptr [rax + 128 + 0 * 16], xmm0
        movups xmmword ptr [rax + 128 + 1 * 16], xmm1
        movups xmmword ptr [rax + 128 + 2 * 16], xmm2
        movups xmmword ptr [rax + 128 + 3 * 16], xmm3
        movups xmmword ptr [rax + 128 + 4 * 16], xmm4
        movups xmmword ptr [rax + 128 + 5 * 16], xmm5
        movups xmmword ptr [rax + 128 + 6 * 16], xmm6
        movups xmmword ptr [rax + 128 + 7 * 16], xmm7
        movups xmmword ptr [rax + 128 + 8 * 16], xmm8
        movups xmmword ptr [rax + 128 + 9 * 16], xmm9
        movups xmmword ptr [rax + 128 + 10 * 16], xmm10
        movups xmmword ptr [rax + 128 + 11 * 16], xmm11
        movups xmmword ptr [rax + 128 + 12 * 16], xmm12
        movups xmmword ptr [rax + 128 + 13 * 16], xmm13
        movups xmmword ptr [rax + 128 + 14 * 16], xmm14
        movups xmmword ptr [rax + 128 + 15 * 16], xmm15
        mov rcx, qword ptr [rip + harness_scratch]
        mov qword ptr [rax + 0 * 8], rcx

        mov rsi, rsp
        lea rdi, [rip + harness_canary_after]
        mov ecx, 8
        rep movsq

        mov rsp, qword ptr [rip + harness_saved_rsp]
        pop r15
        pop r14
        pop r13
        pop r12
        pop rbp
        pop rbx
        ret
        .size harness_call, . - harness_call

# void harness_dispatch(uint32_t kind, uintptr_t id, const struct elt_frame *frame)
#
# What the stubs call in place of the crate's dispatcher: a SysV function that records
# its entry RSP, kind, id, the frame's address and a copy of the frame (208 bytes), then
# does what any C function may: writes 512 bytes of its stack below RSP and overwrites
# RAX RCX RDX RSI RDI R8-R11, XMM0-XMM15 and the flags with garbage. It keeps RBX RBP
# R12-R15, as the ABI says.
        .p2align 4
        .globl harness_dispatch
        .type harness_dispatch, @function
harness_dispatch:
        mov qword ptr [rip + hd_entry_rsp], rsp
        mov qword ptr [rip + hd_kind], rdi
        mov qword ptr [rip + hd_id], rsi
        mov qword ptr [rip + hd_frame], rdx
        add qword ptr [rip + hd_calls], 1

        mov rsi, rdx
        lea rdi, [rip + hd_frame_copy]
        mov ecx, 26
        rep movsq

        lea rdi, [rsp - 512]
        mov ecx, 64
        movabs rax, 0x5CA1AB1E5CA1AB1E
        rep stosq

        movups xmm0, xmmword ptr [rip + hd_garbage_xmm + 0 * 16]
        movups xmm1, xmmword ptr [rip + hd_garbage_xmm + 1 * 16]
        movups xmm2, xmmword ptr [rip + hd_garbage_xmm + 2 * 16]
        movups xmm3, xmmword ptr [rip + hd_garbage_xmm + 3 * 16]
        movups xmm4, xmmword ptr [rip + hd_garbage_xmm + 4 * 16]
        movups xmm5, xmmword ptr [rip + hd_garbage_xmm + 5 * 16]
        movups xmm6, xmmword ptr [rip + hd_garbage_xmm + 6 * 16]
        movups xmm7, xmmword ptr [rip + hd_garbage_xmm + 7 * 16]
        movups xmm8, xmmword ptr [rip + hd_garbage_xmm + 8 * 16]
        movups xmm9, xmmword ptr [rip + hd_garbage_xmm + 9 * 16]
        movups xmm10, xmmword ptr [rip + hd_garbage_xmm + 10 * 16]
        movups xmm11, xmmword ptr [rip + hd_garbage_xmm + 11 * 16]
        movups xmm12, xmmword ptr [rip + hd_garbage_xmm + 12 * 16]
        movups xmm13, xmmword ptr [rip + hd_garbage_xmm + 13 * 16]
        movups xmm14, xmmword ptr [rip + hd_garbage_xmm + 14 * 16]
        movups xmm15, xmmword ptr [rip + hd_garbage_xmm + 15 * 16]
        movabs rax, 0xBAD0BAD0BAD000A0
        movabs rcx, 0xBAD0BAD0BAD000C0
        movabs rdx, 0xBAD0BAD0BAD000D0
        movabs rsi, 0xBAD0BAD0BAD0005E
        movabs rdi, 0xBAD0BAD0BAD000D1
        movabs r8, 0xBAD0BAD0BAD00008
        movabs r9, 0xBAD0BAD0BAD00009
        movabs r10, 0xBAD0BAD0BAD00010
        movabs r11, 0xBAD0BAD0BAD00011
        cmp rax, rcx
        ret
        .size harness_dispatch, . - harness_dispatch

        .section .note.GNU-stack,"",@progbits
        .att_syntax
