# The CoreCLR enter/leave/tailcall hooks (FunctionEnter3, FunctionLeave3,
# FunctionTailcall3; the fast path, without WithInfo) for Windows x64 (PE/COFF).
#
# One file, assembled two ways:
#   * by the crate, with `global_asm!(include_str!(".../stubs.s"), dispatch = sym ...)`
#     (mod.rs beside this file);
#   * by tests/hooks_cross.rs, with binutils-mingw-w64's x86_64-w64-mingw32-as, after
#     replacing the placeholder DISPATCH (written in braces below) by `harness_dispatch`.
#     That test only assembles and inspects (symbols, unwind tables, instructions): no
#     Windows runs these stubs in the project's tests.
# So the file holds no braces other than the placeholders (global_asm would read them as
# operands), and only `#` comments.
#
# The register contract, read in the runtime's sources (dotnet/coreclr release/3.1; the
# defines are the same in dotnet/runtime main's src/coreclr/jit/targetamd64.h):
#   * src/jit/codegencommon.cpp, genProfilingEnterCallback and genProfilingLeaveCallback,
#     the !UNIX_AMD64_ABI branches: the JIT passes the id in RCX (REG_ARG_0) and the
#     caller's SP in RDX (REG_ARG_1, `lea rdx, [frame pointer + offset]`), and calls the
#     hook from the prolog after the outgoing argument area is allocated (RSP 16-byte
#     aligned at the call, so RSP % 16 == 8 at the hook's entry). At enter it first
#     stores the method's register arguments (RCX RDX R8 R9, or XMM0-XMM3 for
#     floating-point ones) to their home slots, the 32 bytes at the caller's SP, and
#     reloads every one of them after the hook returns.
#   * src/jit/target.h (AMD64): RBM_PROFILER_ENTER_TRASH is RBM_CALLEE_TRASH (every
#     volatile register: RAX RCX RDX R8-R11, XMM0-XMM5), RBM_PROFILER_LEAVE_TRASH and
#     RBM_PROFILER_TAILCALL_TRASH are RBM_CALLEE_TRASH less RAX and XMM0 (the return
#     value: Windows x64 returns in RAX or XMM0 only, larger values through a buffer
#     whose address comes back in RAX).
#   * src/vm/amd64/AsmHelpers.asm, ProfileEnterNaked/ProfileLeaveNaked/
#     ProfileTailcallNaked (the runtime's own hooks for the WithInfo path): "rcx =
#     clientInfo, rdx = profiledRsp" on entry; preserved: the non-volatile registers,
#     RAX and XMM0; not preserved: RCX RDX R8 R9, XMM1-XMM3, R10 R11, XMM4 XMM5.
#     src/vm/amd64/profiler.cpp reads the (homed) register arguments at profiledRsp.
#
#   hook      id in  SP in  the contract keeps  the stub also keeps (cheap insurance)
#   enter     RCX    RDX    (nothing volatile)  RAX RCX RDX R8 R9 R10 R11, XMM0-XMM3
#   leave     RCX    RDX    RAX XMM0            -
#   tailcall  RCX    RDX    RAX XMM0            -
# and the non-volatile registers (RBX RBP RDI RSI RSP R12-R15, XMM6-XMM15) by the Windows
# x64 ABI, which the dispatcher, a Windows x64 function, keeps too: the stubs never touch
# XMM6-XMM15, so they need no .seh_savexmm. At enter the stub keeps the argument
# registers although the JIT reloads them (a JIT that stops reloading would need them,
# and R10/R11 are where a stub's secret argument and a dispatch cell travel), and copies
# the four home slots into the frame record: they hold the method's first four arguments.
# The upper halves of YMM/ZMM registers are not saved (legacy SSE moves).
#
# Each stub: `push rbp; mov rbp, rsp` (RBP the frame register of its unwind info), a
# fixed allocation, then `and rsp, -16` in the body (the stub does not rely on the
# entry alignment; the unwinder recovers RSP from RBP, the frame register, whatever the
# body does to RSP); the 32-byte shadow space for the dispatcher at RSP, the frame record
# above it; `dispatch(kind: u32, id: usize, frame: *const EltFrame)` called with the
# Windows x64 C ABI (ECX kind 0 enter, 1 leave, 2 tailcall; RDX id; R8 frame); the
# epilog `lea rsp, [rbp]; pop rbp; ret`, a form the Windows unwinder recognizes.
#
# The frame record (mirrored by `EltFrame` in frame.rs, whose offsets are
# checked at compile time), at a 16-byte aligned address:
#   offset  size  field     enter                        leave / tailcall
#   0       64    xmm[4]    XMM0-XMM3                    xmm[0] = XMM0, rest not written
#   64      32    home[4]   the qwords at RDX+0 .. +24   not written
#   96      8     ret       not written                  RAX
#   104     8     sp        RDX                          RDX
#   112     4     kind      0                            1 / 2
#   116     12    (reserved, not written)
#   128           size
#
# Assembled with the symbol ILREWRITE_ELT_BROKEN defined (as --defsym ...), the enter
# stub does not save or restore R8 and the leave stub not XMM0: the negative control of
# the test, never built into the crate.

        .intel_syntax noprefix

        .set ILREWRITE_WF_XMM, 0
        .set ILREWRITE_WF_HOME, 64
        .set ILREWRITE_WF_RET, 96
        .set ILREWRITE_WF_SP, 104
        .set ILREWRITE_WF_KIND, 112
        .set ILREWRITE_WF_SIZE, 128

        # The stubs' stacks: the dispatcher's shadow space at RSP, the frame record above
        # it; the enter stub's save area (RAX RCX RDX R8 R9 R10 R11) above that.
        .set ILREWRITE_W_SHADOW, 32
        .set ILREWRITE_W_EF, ILREWRITE_W_SHADOW
        .set ILREWRITE_W_SAVE, ILREWRITE_W_EF + ILREWRITE_WF_SIZE
        .set ILREWRITE_W_ENTER_STACK, ILREWRITE_W_SAVE + 64
        .set ILREWRITE_W_RETURN_STACK, ILREWRITE_W_EF + ILREWRITE_WF_SIZE

.ifdef ILREWRITE_ELT_BROKEN
        .set ILREWRITE_DROP, 1
.else
        .set ILREWRITE_DROP, 0
.endif

        # The literal sizes in the prologs (.seh_stackalloc takes a plain number).
.if ILREWRITE_W_ENTER_STACK - 224
        .error "the enter stub's stack size changed: update its prolog"
.endif
.if ILREWRITE_W_RETURN_STACK - 160
        .error "the leave stub's stack size changed: update its prolog"
.endif

        .section .text$ilrewrite_elt,"xr"

# ---------------------------------------------------------------------------------------
# ilrewrite_elt_enter3: id in RCX, caller SP in RDX.
        .p2align 4
        .globl ilrewrite_elt_enter3
        .def ilrewrite_elt_enter3
        .scl 2
        .type 32
        .endef
ilrewrite_elt_enter3:
        .seh_proc ilrewrite_elt_enter3
        push rbp
        .seh_pushreg rbp
        mov rbp, rsp
        .seh_setframe rbp, 0
        sub rsp, 224
        .seh_stackalloc 224
        .seh_endprologue
        and rsp, -16

        mov qword ptr [rsp + ILREWRITE_W_SAVE + 0], rax
        mov qword ptr [rsp + ILREWRITE_W_SAVE + 8], rcx
        mov qword ptr [rsp + ILREWRITE_W_SAVE + 16], rdx
.if ILREWRITE_DROP == 0
        mov qword ptr [rsp + ILREWRITE_W_SAVE + 24], r8
.endif
        mov qword ptr [rsp + ILREWRITE_W_SAVE + 32], r9
        mov qword ptr [rsp + ILREWRITE_W_SAVE + 40], r10
        mov qword ptr [rsp + ILREWRITE_W_SAVE + 48], r11
        movaps xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 0], xmm0
        movaps xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 16], xmm1
        movaps xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 32], xmm2
        movaps xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 48], xmm3
        # The home slots, through RAX (saved above).
        mov rax, qword ptr [rdx + 0]
        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_HOME + 0], rax
        mov rax, qword ptr [rdx + 8]
        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_HOME + 8], rax
        mov rax, qword ptr [rdx + 16]
        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_HOME + 16], rax
        mov rax, qword ptr [rdx + 24]
        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_HOME + 24], rax
        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_SP], rdx
        mov dword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_KIND], 0

        mov rdx, rcx
        xor ecx, ecx
        lea r8, [rsp + ILREWRITE_W_EF]
        call {dispatch}

        movaps xmm0, xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 0]
        movaps xmm1, xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 16]
        movaps xmm2, xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 32]
        movaps xmm3, xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 48]
        mov rax, qword ptr [rsp + ILREWRITE_W_SAVE + 0]
        mov rcx, qword ptr [rsp + ILREWRITE_W_SAVE + 8]
        mov rdx, qword ptr [rsp + ILREWRITE_W_SAVE + 16]
.if ILREWRITE_DROP == 0
        mov r8, qword ptr [rsp + ILREWRITE_W_SAVE + 24]
.endif
        mov r9, qword ptr [rsp + ILREWRITE_W_SAVE + 32]
        mov r10, qword ptr [rsp + ILREWRITE_W_SAVE + 40]
        mov r11, qword ptr [rsp + ILREWRITE_W_SAVE + 48]

        lea rsp, [rbp]
        pop rbp
        ret
        .seh_endproc

# ---------------------------------------------------------------------------------------
# ilrewrite_elt_leave3 and ilrewrite_elt_tailcall3: id in RCX, SP in RDX; the return
# value (RAX or XMM0) is live.
        .macro ILREWRITE_ELT_RETURN_STUB name, kind
        .p2align 4
        .globl \name
        .def \name
        .scl 2
        .type 32
        .endef
\name:
        .seh_proc \name
        push rbp
        .seh_pushreg rbp
        mov rbp, rsp
        .seh_setframe rbp, 0
        sub rsp, 160
        .seh_stackalloc 160
        .seh_endprologue
        and rsp, -16

        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_RET], rax
.if ILREWRITE_DROP && (\kind == 1)
.else
        movaps xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 0], xmm0
.endif
        mov qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_SP], rdx
        mov dword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_KIND], \kind

        mov rdx, rcx
        mov ecx, \kind
        lea r8, [rsp + ILREWRITE_W_EF]
        call {dispatch}

        mov rax, qword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_RET]
.if ILREWRITE_DROP && (\kind == 1)
.else
        movaps xmm0, xmmword ptr [rsp + ILREWRITE_W_EF + ILREWRITE_WF_XMM + 0]
.endif

        lea rsp, [rbp]
        pop rbp
        ret
        .seh_endproc
        .endm

        ILREWRITE_ELT_RETURN_STUB ilrewrite_elt_leave3, 1
        ILREWRITE_ELT_RETURN_STUB ilrewrite_elt_tailcall3, 2

        .purgem ILREWRITE_ELT_RETURN_STUB
        .text
        .att_syntax
