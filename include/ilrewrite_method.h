/*
 * ilrewrite_method.h: the C ABI of an ilrewrite instrumentation method in a library of
 * its own, loaded by a profiler built on the ilrewrite crate (its configuration names
 * the library: `library = "path"`). ABI version 1.
 *
 * A library exports two symbols:
 *
 *   const uint32_t ilrewrite_abi_version;          read before any call: must equal
 *                                                  ILR_ABI_VERSION of the host's header
 *   ilr_status ilrewrite_method_create(const ilr_host *host, ilr_method *method,
 *                                      ilr_error *error);
 *
 * `ilrewrite_method_create` is called once, after the version matched. `host` stays
 * valid for the life of the process (also after `destroy`, for the item destructors
 * that run later and log). `method` arrives zeroed with `method->size` set
 * to the size of `ilr_method` the host knows; the library fills the fields it knows up
 * to that size (a newer host's extra fields stay zero: absent). The library may keep
 * the `host` pointer.
 *
 * Threading: free-threaded. The host calls `wants` and `edit` on many threads at once
 * (one per method being compiled), and `callback` on the runtime's threads, many at
 * once; the library does its own locking.
 *
 * Handles (ilr_options, ilr_candidate, ilr_edit) are numbers, valid only during the
 * call that received them and only on that thread. A handle used after its call
 * returned, or on another thread, gets ILR_E_INVALID_HANDLE: never undefined behaviour.
 * Handles are never reused.
 *
 * Strings are UTF-8. An ilr_str the host gives (not NUL-terminated) stays valid until
 * the library's call that received the handle it came from returns. Strings the
 * library gives (name, option names) are NUL-terminated and must stay valid until
 * `destroy` returns.
 *
 * Nothing may unwind across this boundary: a library written in C++ catches its
 * exceptions; one written in Rust catches panics.
 */
#ifndef ILREWRITE_METHOD_H
#define ILREWRITE_METHOD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ILR_ABI_VERSION 1u

/* ---- status codes ------------------------------------------------------------------ */

typedef int32_t ilr_status;

#define ILR_OK 0
/* A handle used outside the call that received it (or on another thread). */
#define ILR_E_INVALID_HANDLE (-1)
/* An argument the host cannot take: a null pointer, an unknown id, an operand that does
 * not fit its opcode or the method (an argument or local it does not have, a token of
 * another table or of no row of the module, `newobj` of anything but an instance
 * constructor, `callvirt` of a static method), a prefix without the instruction it
 * prefixes after it in the same code, a name that is not UTF-8. Nothing was changed. */
#define ILR_E_INVALID_ARGUMENT (-2)
/* What was asked for is not there (an option not given). */
#define ILR_E_NOT_FOUND (-3)
/* The host refused the edit (it would break the body); nothing was changed. */
#define ILR_E_REFUSED (-5)
/* The library's own failure (returned by the library; its message in the ilr_error). */
#define ILR_E_FAILED (-6)

/* A message buffer the host provides: the library writes at most `capacity` bytes of
 * UTF-8 to `data` and sets `length`. */
typedef struct ilr_error {
    char *data;
    size_t capacity;
    size_t length;
} ilr_error;

/* A UTF-8 string the host lends until the library's current call returns. */
typedef struct ilr_str {
    const char *data;
    size_t length;
} ilr_str;

/* ---- handles ----------------------------------------------------------------------- */

typedef uint64_t ilr_options;   /* an instrumentation method's options */
typedef uint64_t ilr_candidate; /* a method being asked about (wants) */
typedef uint64_t ilr_edit;      /* a method body being edited */
typedef uint64_t ilr_module;    /* a module that finished loading (module_loaded) */

/* ---- options ----------------------------------------------------------------------- */

#define ILR_OPTION_INTEGER 1u
#define ILR_OPTION_BOOLEAN 2u
#define ILR_OPTION_STRING 3u
#define ILR_OPTION_STRINGS 4u
#define ILR_OPTION_SELECTORS 5u

/* One option the library takes: the configuration may give only these, of this kind
 * (checked by the host before `start`). */
typedef struct ilr_option_spec {
    const char *name;
    uint32_t kind;
} ilr_option_spec;

/* ---- instructions ------------------------------------------------------------------ */

#define ILR_OPERAND_NONE 0u
#define ILR_OPERAND_INT 1u     /* ldc.i4(.s), unaligned., no.: the value */
#define ILR_OPERAND_LONG 2u    /* ldc.i8 */
#define ILR_OPERAND_FLOAT32 3u /* ldc.r4: IEEE-754 bits in the low 32 bits */
#define ILR_OPERAND_FLOAT64 4u /* ldc.r8: IEEE-754 bits */
#define ILR_OPERAND_VAR 5u     /* an argument or local index */
#define ILR_OPERAND_TOKEN 6u   /* a metadata token */
#define ILR_OPERAND_TARGET 7u  /* a branch: the id of the target instruction */
#define ILR_OPERAND_SWITCH 8u  /* switch: the number of targets (read only) */
/* Only in code the library inserts (insert_* and ilr_wrap): a branch to the
 * instruction at this index (from 0) of the same code array, which must be in it. */
#define ILR_OPERAND_CODE 13u
/* Only in the code of an ilr_wrap (insert only): */
#define ILR_OPERAND_STATE_LOCAL 9u  /* ldloc/ldloca/stloc of the wrap's state local */
#define ILR_OPERAND_RETURN_LOCAL 10u /* ldloc/ldloca/stloc of the return-value local */
#define ILR_OPERAND_METHOD_ID 11u   /* ldc.i4: the method's MethodDef token */
#define ILR_OPERAND_MODULE_ID 12u   /* ldc.i8: the module's ModuleID */

/* One instruction. `id` names an instruction of the body (ids are 1 or more, stable for
 * the edit call); 0 in new code. `opcode` is the ECMA-335 value: one byte, or
 * 0xFE00 | the second byte for the two-byte opcodes. */
typedef struct ilr_instruction {
    uint32_t id;
    uint16_t opcode;
    uint16_t operand_kind;
    int64_t operand;
} ilr_instruction;

/* ---- module-load definitions and data items -------------------------------------- */

/* An assembly a module's new references resolve in (culture neutral). */
typedef struct ilr_assembly_ref {
    const char *name;                /* simple name, UTF-8, NUL-terminated */
    uint16_t version[4];             /* major, minor, build, revision */
    const uint8_t *public_key_token; /* 8 bytes, or null for none */
} ilr_assembly_ref;

/* A data item's destructor: called once, on any thread, when the item is replaced or
 * removed (once the call that did it returned), or when what it belongs to goes (the
 * module unloads; the runtime's Shutdown, for the modules still loaded). It may run
 * after `destroy`; the library stays loaded until the last item is destroyed. */
typedef void (*ilr_item_destructor)(void *item);

/* Code run around the whole body (ilr_host.edit_wrap): `entry` before it, `exit` in a
 * finally on every way out (return, exception), `on_return` after `exit` on a normal
 * return only. The code may use the ILR_OPERAND_STATE_LOCAL, _RETURN_LOCAL, _METHOD_ID
 * and _MODULE_ID pseudo-operands; the state local exists when `state_local` names its
 * type. */
typedef struct ilr_wrap {
    /* sizeof(ilr_wrap) as the library knows it. */
    uint32_t size;
    const ilr_instruction *entry;
    size_t entry_count;
    const ilr_instruction *exit;
    size_t exit_count;
    const ilr_instruction *on_return;
    size_t on_return_count;
    /* The state local's type as text (docs/components.md, "Types as text"), or null. */
    const char *state_local;
} ilr_wrap;

/* ---- what the host gives ----------------------------------------------------------- */

#define ILR_REDIRECT 1u /* insert_before: branches and regions that named the
                           instruction now name the first new one */
#define ILR_KEEP 0u     /* insert_before: they keep naming the old instruction */

typedef struct ilr_host {
    /* sizeof(ilr_host) as the host knows it; fields past it are absent. */
    uint32_t size;
    uint32_t abi_version;

    /* A line in the profiler's log, as given (the host cannot tell which library calls:
     * name your method in the line); at most its first 64 KiB are read and written, then
     * "... (N bytes)". */
    void (*log)(const char *message, size_t length);

    /* An option's value; ILR_E_NOT_FOUND when the configuration does not give it. */
    ilr_status (*option_integer)(ilr_options options, const char *name, int64_t *value);
    ilr_status (*option_boolean)(ilr_options options, const char *name, int32_t *value);
    ilr_status (*option_string)(ilr_options options, const char *name, ilr_str *value);

    /* The candidate's module id and MethodDef token; its name as
     * `Namespace.Type::Method` (nested types `Outer/Inner`). */
    ilr_status (*candidate_method)(ilr_candidate candidate, uint64_t *module, uint32_t *token);
    ilr_status (*candidate_name)(ilr_candidate candidate, ilr_str *name);

    /* The edited method: module id and token, name, the options of this edit (the
     * configured ones, or a live request's), the ECMA-335 element type of its return
     * type (0x01 void, 0x08 int32, ...). */
    ilr_status (*edit_method)(ilr_edit edit, uint64_t *module, uint32_t *token);
    ilr_status (*edit_name)(ilr_edit edit, ilr_str *name);
    ilr_status (*edit_options)(ilr_edit edit, ilr_options *options);
    ilr_status (*edit_return_type)(ilr_edit edit, uint8_t *element_type);

    /* Walking the body in order: the first instruction's id, the one after `id` (0 at
     * the end), an instruction by id. */
    ilr_status (*body_first)(ilr_edit edit, uint32_t *id);
    ilr_status (*body_next)(ilr_edit edit, uint32_t id, uint32_t *next);
    ilr_status (*body_get)(ilr_edit edit, uint32_t id, ilr_instruction *instruction);

    /* Inserting `count` instructions (their `id` fields ignored); `ids`, when not null,
     * receives the new instructions' ids (`count` of them). All or nothing: on an error
     * the body is as it was.
     * - insert_before: right before instruction `at`; `incoming` ILR_REDIRECT or ILR_KEEP.
     * - insert_after: right after `at`; nothing that names `at` changes.
     * - insert_at_entry: before the first instruction, branches to it kept (a loop back
     *   to the start does not run the new code again).
     * - insert_before_returns: before every `ret` (the return value, if any, on the
     *   stack), branches to the `ret` redirected to the new code; `count` must be such
     *   that each copy leaves the stack as it found it. */
    ilr_status (*body_insert_before)(ilr_edit edit, uint32_t at, uint32_t incoming,
                                     const ilr_instruction *code, size_t count, uint32_t *ids);
    ilr_status (*body_insert_after)(ilr_edit edit, uint32_t at, const ilr_instruction *code,
                                    size_t count, uint32_t *ids);
    ilr_status (*body_insert_at_entry)(ilr_edit edit, const ilr_instruction *code, size_t count,
                                       uint32_t *ids);
    ilr_status (*body_insert_before_returns)(ilr_edit edit, const ilr_instruction *code,
                                             size_t count);

    /* Item `index` (from 0) of a strings or selectors option (a selector as written);
     * ILR_E_NOT_FOUND when the option is not given or has no such item. */
    ilr_status (*option_string_at)(ilr_options options, const char *name, uint32_t index,
                                   ilr_str *value);
    /* Whether the candidate is one of the library's `targets` (1 or 0). */
    ilr_status (*candidate_is_target)(ilr_candidate candidate, int32_t *is_target);

    /* ---- during module_loaded: the module's metadata, by value ----
     * Types and signatures are text (docs/components.md, "Types as text"):
     * `int32`, `class 0x01000005<string>`, `!!0[]`; `instance void (int32, string&)`.
     * Each definition answers the existing row when the module has one. */
    /* The module's ModuleID, and the simple name of its assembly. */
    ilr_status (*module_id)(ilr_module module, uint64_t *id);
    ilr_status (*module_assembly_name)(ilr_module module, ilr_str *name);
    /* An AssemblyRef (the existing one of that name, else a new row). */
    ilr_status (*module_assembly_ref)(ilr_module module, const ilr_assembly_ref *assembly,
                                      uint32_t *token);
    /* A TypeRef to `name` (`Namespace.Type`) in `scope` (an AssemblyRef, ModuleRef or,
     * for a nested type, its enclosing TypeRef). */
    ilr_status (*module_type_ref)(ilr_module module, uint32_t scope, const char *name,
                                  uint32_t *token);
    /* The module's own TypeDef `name` (nested `Outer/Inner`); ILR_E_NOT_FOUND. */
    ilr_status (*module_find_type)(ilr_module module, const char *name, uint32_t *token);
    /* A TypeSpec of a type (`class 0x01000005<int32>`, `!0[]`). */
    ilr_status (*module_type_spec)(ilr_module module, const char *type, uint32_t *token);
    /* A MemberRef to method `name` of `parent` (TypeRef, TypeDef, TypeSpec) with
     * `signature` (`instance void (int32)`), or to a field of `type`. */
    ilr_status (*module_method_ref)(ilr_module module, uint32_t parent, const char *name,
                                    const char *signature, uint32_t *token);
    ilr_status (*module_field_ref)(ilr_module module, uint32_t parent, const char *name,
                                   const char *type, uint32_t *token);
    /* A MethodSpec of generic method `method` (MethodDef or MemberRef) with `arguments`
     * (`int32, string`), as many as it has type parameters (else
     * ILR_E_INVALID_ARGUMENT: the runtime would fail only when the JIT loads it). */
    ilr_status (*module_method_spec)(ilr_module module, uint32_t method, const char *arguments,
                                     uint32_t *token);
    /* A user string (`ldstr`) of `length` bytes of UTF-8 (NULs allowed). */
    ilr_status (*module_user_string)(ilr_module module, const char *text, size_t length,
                                     uint32_t *token);
    /* A StandAloneSig of a call-site signature (`calli`), as text, or as raw signature
     * bytes (checked to be one method signature). */
    ilr_status (*module_signature)(ilr_module module, const char *signature, uint32_t *token);
    ilr_status (*module_signature_bytes)(ilr_module module, const uint8_t *blob, size_t length,
                                         uint32_t *token);
    /* The library's data item on the module: set (replacing, and destroying, the one
     * before; null `item` removes it) during module_loaded, read then and in edits. */
    ilr_status (*module_set_item)(ilr_module module, void *item, ilr_item_destructor destroy);
    ilr_status (*module_item)(ilr_module module, void **item);

    /* ---- during edit ----
     * The library's item on the edited method's module (ILR_E_NOT_FOUND when unset). */
    ilr_status (*edit_module_item)(ilr_edit edit, void **item);
    /* The library's item on the edited method, kept across its compilations (generic
     * instantiations, tier-up, ReJIT) while its module is loaded; set replaces (and
     * destroys) the one before, a null `item` removes it; on an error the item stays
     * the library's. ILR_E_REFUSED for a method added while the program runs, which
     * keeps no items (nor module items: its module_loaded is never called). */
    ilr_status (*edit_method_item)(ilr_edit edit, void **item);
    ilr_status (*edit_set_method_item)(ilr_edit edit, void *item, ilr_item_destructor destroy);
    /* A new local of `type` (text); its index. Kept only if the edit succeeds. */
    ilr_status (*edit_add_local)(ilr_edit edit, const char *type, uint16_t *index);
    /* With `wants` answering ILR_WANT_EDIT_SINGLE_RET: the body has one `ret`, reached
     * by every return; `*epilogue` is the id of the epilogue's first instruction (the
     * return value, if any, is stored in the return-value local before it),
     * `*return_local` that local's index or -1 for a `void` method. ILR_E_NOT_FOUND when
     * no instrumentation method asked for it (one that did not ask gets it too when
     * another one did: the body is single-ret for all). */
    ilr_status (*edit_single_ret)(ilr_edit edit, uint32_t *epilogue, int32_t *return_local);
    /* Wraps the whole body: `entry; try { body } finally { exit }`, then `on_return`
     * (ilr_wrap). All or nothing; afterwards the body's instruction ids are new (walk it
     * again). */
    ilr_status (*edit_wrap)(ilr_edit edit, const ilr_wrap *wrap);
} ilr_host;

/* ---- callbacks --------------------------------------------------------------------- */

/* The runtime's callbacks (ICorProfilerCallback .. ICorProfilerCallback11), one id each
 * in the interfaces' slot order: ILR_CALLBACK_ and the slot's name in upper snake case
 * (ReJIT and VTable one word each). Bit ILR_CALLBACK_x of ilr_method.callbacks[x / 64]
 * subscribes to callback x; ilr_method.callback then receives it with `id` x, and its
 * arguments in `args`, one uint64_t word each, in the order the comment gives:
 *   - IDs (ModuleID, FunctionID, ObjectID, ...), uintptr_t, EVENTPIPE_PROVIDER: the value;
 *   - pointers: the address (what it points to is valid during the call only);
 *   - uint32_t, mdMethodDef and the COR_PRF_* enumerations: zero-extended;
 *   - int32_t and HRESULT: sign-extended (a failure is negative as int64_t);
 *   - BOOL: 0 or 1.
 * The callbacks marked "not carried" are the host's own (their arguments are its
 * objects): a library that subscribes to one is refused at load, as one that sets a bit
 * past the last id or subscribes without a `callback` function. */
#define ILR_CALLBACK_INITIALIZE 0 /* not carried (the host answers it) */
#define ILR_CALLBACK_SHUTDOWN 1 /* no arguments */
#define ILR_CALLBACK_APP_DOMAIN_CREATION_STARTED 2 /* AppDomainID app_domain */
#define ILR_CALLBACK_APP_DOMAIN_CREATION_FINISHED 3
    /* AppDomainID app_domain, HRESULT status */
#define ILR_CALLBACK_APP_DOMAIN_SHUTDOWN_STARTED 4 /* AppDomainID app_domain */
#define ILR_CALLBACK_APP_DOMAIN_SHUTDOWN_FINISHED 5
    /* AppDomainID app_domain, HRESULT status */
#define ILR_CALLBACK_ASSEMBLY_LOAD_STARTED 6 /* AssemblyID assembly */
#define ILR_CALLBACK_ASSEMBLY_LOAD_FINISHED 7 /* AssemblyID assembly, HRESULT status */
#define ILR_CALLBACK_ASSEMBLY_UNLOAD_STARTED 8 /* AssemblyID assembly */
#define ILR_CALLBACK_ASSEMBLY_UNLOAD_FINISHED 9 /* AssemblyID assembly, HRESULT status */
#define ILR_CALLBACK_MODULE_LOAD_STARTED 10 /* ModuleID module */
#define ILR_CALLBACK_MODULE_LOAD_FINISHED 11 /* ModuleID module, HRESULT status */
#define ILR_CALLBACK_MODULE_UNLOAD_STARTED 12 /* ModuleID module */
#define ILR_CALLBACK_MODULE_UNLOAD_FINISHED 13 /* ModuleID module, HRESULT status */
#define ILR_CALLBACK_MODULE_ATTACHED_TO_ASSEMBLY 14
    /* ModuleID module, AssemblyID assembly */
#define ILR_CALLBACK_CLASS_LOAD_STARTED 15 /* ClassID class */
#define ILR_CALLBACK_CLASS_LOAD_FINISHED 16 /* ClassID class, HRESULT status */
#define ILR_CALLBACK_CLASS_UNLOAD_STARTED 17 /* ClassID class */
#define ILR_CALLBACK_CLASS_UNLOAD_FINISHED 18 /* ClassID class, HRESULT status */
#define ILR_CALLBACK_FUNCTION_UNLOAD_STARTED 19 /* FunctionID function */
#define ILR_CALLBACK_JIT_COMPILATION_STARTED 20
    /* FunctionID function, BOOL is_safe_to_block */
#define ILR_CALLBACK_JIT_COMPILATION_FINISHED 21
    /* FunctionID function, HRESULT status, BOOL is_safe_to_block */
#define ILR_CALLBACK_JIT_CACHED_FUNCTION_SEARCH_STARTED 22 /* FunctionID function */
#define ILR_CALLBACK_JIT_CACHED_FUNCTION_SEARCH_FINISHED 23
    /* FunctionID function, COR_PRF_JIT_CACHE result */
#define ILR_CALLBACK_JIT_FUNCTION_PITCHED 24 /* FunctionID function */
#define ILR_CALLBACK_JIT_INLINING 25 /* FunctionID caller, FunctionID callee */
#define ILR_CALLBACK_THREAD_CREATED 26 /* ThreadID thread */
#define ILR_CALLBACK_THREAD_DESTROYED 27 /* ThreadID thread */
#define ILR_CALLBACK_THREAD_ASSIGNED_TO_OS_THREAD 28
    /* ThreadID thread, uint32_t os_thread */
#define ILR_CALLBACK_REMOTING_CLIENT_INVOCATION_STARTED 29 /* no arguments */
#define ILR_CALLBACK_REMOTING_CLIENT_SENDING_MESSAGE 30 /* GUID *cookie, BOOL is_async */
#define ILR_CALLBACK_REMOTING_CLIENT_RECEIVING_REPLY 31 /* GUID *cookie, BOOL is_async */
#define ILR_CALLBACK_REMOTING_CLIENT_INVOCATION_FINISHED 32 /* no arguments */
#define ILR_CALLBACK_REMOTING_SERVER_RECEIVING_MESSAGE 33 /* GUID *cookie, BOOL is_async */
#define ILR_CALLBACK_REMOTING_SERVER_INVOCATION_STARTED 34 /* no arguments */
#define ILR_CALLBACK_REMOTING_SERVER_INVOCATION_RETURNED 35 /* no arguments */
#define ILR_CALLBACK_REMOTING_SERVER_SENDING_REPLY 36 /* GUID *cookie, BOOL is_async */
#define ILR_CALLBACK_UNMANAGED_TO_MANAGED_TRANSITION 37
    /* FunctionID function, COR_PRF_TRANSITION_REASON reason */
#define ILR_CALLBACK_MANAGED_TO_UNMANAGED_TRANSITION 38
    /* FunctionID function, COR_PRF_TRANSITION_REASON reason */
#define ILR_CALLBACK_RUNTIME_SUSPEND_STARTED 39 /* COR_PRF_SUSPEND_REASON reason */
#define ILR_CALLBACK_RUNTIME_SUSPEND_FINISHED 40 /* no arguments */
#define ILR_CALLBACK_RUNTIME_SUSPEND_ABORTED 41 /* no arguments */
#define ILR_CALLBACK_RUNTIME_RESUME_STARTED 42 /* no arguments */
#define ILR_CALLBACK_RUNTIME_RESUME_FINISHED 43 /* no arguments */
#define ILR_CALLBACK_RUNTIME_THREAD_SUSPENDED 44 /* ThreadID thread */
#define ILR_CALLBACK_RUNTIME_THREAD_RESUMED 45 /* ThreadID thread */
#define ILR_CALLBACK_MOVED_REFERENCES 46
    /* uint32_t range_count, ObjectID *old_starts, ObjectID *new_starts,
       uint32_t *lengths */
#define ILR_CALLBACK_OBJECT_ALLOCATED 47 /* ObjectID object, ClassID class */
#define ILR_CALLBACK_OBJECTS_ALLOCATED_BY_CLASS 48
    /* uint32_t class_count, ClassID *classes, uint32_t *counts */
#define ILR_CALLBACK_OBJECT_REFERENCES 49
    /* ObjectID object, ClassID class, uint32_t ref_count, ObjectID *refs */
#define ILR_CALLBACK_ROOT_REFERENCES 50 /* uint32_t root_count, ObjectID *roots */
#define ILR_CALLBACK_EXCEPTION_THROWN 51 /* ObjectID thrown */
#define ILR_CALLBACK_EXCEPTION_SEARCH_FUNCTION_ENTER 52 /* FunctionID function */
#define ILR_CALLBACK_EXCEPTION_SEARCH_FUNCTION_LEAVE 53 /* no arguments */
#define ILR_CALLBACK_EXCEPTION_SEARCH_FILTER_ENTER 54 /* FunctionID function */
#define ILR_CALLBACK_EXCEPTION_SEARCH_FILTER_LEAVE 55 /* no arguments */
#define ILR_CALLBACK_EXCEPTION_SEARCH_CATCHER_FOUND 56 /* FunctionID function */
#define ILR_CALLBACK_EXCEPTION_OS_HANDLER_ENTER 57 /* uintptr_t unused */
#define ILR_CALLBACK_EXCEPTION_OS_HANDLER_LEAVE 58 /* uintptr_t unused */
#define ILR_CALLBACK_EXCEPTION_UNWIND_FUNCTION_ENTER 59 /* FunctionID function */
#define ILR_CALLBACK_EXCEPTION_UNWIND_FUNCTION_LEAVE 60 /* no arguments */
#define ILR_CALLBACK_EXCEPTION_UNWIND_FINALLY_ENTER 61 /* FunctionID function */
#define ILR_CALLBACK_EXCEPTION_UNWIND_FINALLY_LEAVE 62 /* no arguments */
#define ILR_CALLBACK_EXCEPTION_CATCHER_ENTER 63 /* FunctionID function, ObjectID object */
#define ILR_CALLBACK_EXCEPTION_CATCHER_LEAVE 64 /* no arguments */
#define ILR_CALLBACK_COM_CLASSIC_VTABLE_CREATED 65
    /* ClassID class, const GUID *iid, void *vtable, uint32_t slots */
#define ILR_CALLBACK_COM_CLASSIC_VTABLE_DESTROYED 66
    /* ClassID class, const GUID *iid, void *vtable */
#define ILR_CALLBACK_EXCEPTION_CLR_CATCHER_FOUND 67 /* no arguments */
#define ILR_CALLBACK_EXCEPTION_CLR_CATCHER_EXECUTE 68 /* no arguments */
#define ILR_CALLBACK_THREAD_NAME_CHANGED 69
    /* ThreadID thread, uint32_t name_len, WCHAR *name */
#define ILR_CALLBACK_GARBAGE_COLLECTION_STARTED 70
    /* int32_t generation_count, int32_t *generation_collected, COR_PRF_GC_REASON reason */
#define ILR_CALLBACK_SURVIVING_REFERENCES 71
    /* uint32_t range_count, ObjectID *starts, uint32_t *lengths */
#define ILR_CALLBACK_GARBAGE_COLLECTION_FINISHED 72 /* no arguments */
#define ILR_CALLBACK_FINALIZEABLE_OBJECT_QUEUED 73
    /* uint32_t finalizer_flags, ObjectID object */
#define ILR_CALLBACK_ROOT_REFERENCES2 74
    /* uint32_t root_count, ObjectID *roots, COR_PRF_GC_ROOT_KIND *kinds,
       COR_PRF_GC_ROOT_FLAGS *flags, uintptr_t *root_ids */
#define ILR_CALLBACK_HANDLE_CREATED 75 /* GCHandleID handle, ObjectID initial_object */
#define ILR_CALLBACK_HANDLE_DESTROYED 76 /* GCHandleID handle */
#define ILR_CALLBACK_INITIALIZE_FOR_ATTACH 77 /* not carried (the host answers it) */
#define ILR_CALLBACK_PROFILER_ATTACH_COMPLETE 78 /* no arguments */
#define ILR_CALLBACK_PROFILER_DETACH_SUCCEEDED 79 /* no arguments */
#define ILR_CALLBACK_REJIT_COMPILATION_STARTED 80
    /* FunctionID function, ReJITID rejit, BOOL is_safe_to_block */
#define ILR_CALLBACK_GET_REJIT_PARAMETERS 81 /* not carried (the host answers it) */
#define ILR_CALLBACK_REJIT_COMPILATION_FINISHED 82
    /* FunctionID function, ReJITID rejit, HRESULT status, BOOL is_safe_to_block */
#define ILR_CALLBACK_REJIT_ERROR 83
    /* ModuleID module, mdMethodDef method, FunctionID function, HRESULT status */
#define ILR_CALLBACK_MOVED_REFERENCES2 84
    /* uint32_t range_count, ObjectID *old_starts, ObjectID *new_starts,
       uintptr_t *lengths */
#define ILR_CALLBACK_SURVIVING_REFERENCES2 85
    /* uint32_t range_count, ObjectID *starts, uintptr_t *lengths */
#define ILR_CALLBACK_CONDITIONAL_WEAK_TABLE_ELEMENT_REFERENCES 86
    /* uint32_t root_count, ObjectID *keys, ObjectID *values, GCHandleID *root_ids */
#define ILR_CALLBACK_GET_ASSEMBLY_REFERENCES 87 /* not carried (the host answers it) */
#define ILR_CALLBACK_MODULE_IN_MEMORY_SYMBOLS_UPDATED 88 /* ModuleID module */
#define ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_STARTED 89
    /* FunctionID function, BOOL is_safe_to_block, const BYTE *il_header,
       uint32_t il_header_len */
#define ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_FINISHED 90
    /* FunctionID function, HRESULT status, BOOL is_safe_to_block */
#define ILR_CALLBACK_DYNAMIC_METHOD_UNLOADED 91 /* FunctionID function */
#define ILR_CALLBACK_EVENT_PIPE_EVENT_DELIVERED 92
    /* EVENTPIPE_PROVIDER provider, uint32_t event_id, uint32_t event_version,
       uint32_t metadata_len, const BYTE *metadata, uint32_t data_len, const BYTE *data,
       const GUID *activity_id, const GUID *related_activity_id, ThreadID thread,
       uint32_t frame_count, uintptr_t *frames */
#define ILR_CALLBACK_EVENT_PIPE_PROVIDER_CREATED 93 /* EVENTPIPE_PROVIDER provider */
#define ILR_CALLBACK_LOAD_AS_NOTIFICATION_ONLY 94 /* not carried (the host answers it) */


/* ---- what the library gives -------------------------------------------------------- */

#define ILR_WANT_NO 0
#define ILR_WANT_EDIT 1
/* Edit it after the host made it single-ret (ilr_host.edit_single_ret). */
#define ILR_WANT_EDIT_SINGLE_RET 2

typedef struct ilr_method {
    /* sizeof(ilr_method) as the host knows it (set by the host). */
    uint32_t size;
    /* The library's own state, passed back to every function. */
    void *self;
    /* The name configurations and logs use (unique in a profiler). */
    const char *name;
    /* The default priority (higher edits first; a configuration may override it). */
    int32_t priority;
    /* The options it takes. */
    const ilr_option_spec *options;
    uint32_t option_count;

    /* Once, before anything else, with the configured options; an error stops the
     * profiler's start (nothing is rewritten). Null: nothing to do. */
    ilr_status (*start)(void *self, ilr_options options, ilr_error *error);
    /* Options of a live request (already checked against `options`); an error refuses
     * the request. Null: every such request is accepted. */
    ilr_status (*check_options)(void *self, ilr_options options, ilr_error *error);
    /* Whether it edits this method: ILR_WANT_EDIT, ILR_WANT_EDIT_SINGLE_RET or
     * ILR_WANT_NO (any other answer is taken as ILR_WANT_NO). Cheap: called at every
     * method's first JIT. */
    int32_t (*wants)(void *self, ilr_candidate candidate);
    /* Edits the body through the host's body_* functions; sets *changed to 1 when it
     * changed something. An error (or a body the host cannot verify afterwards) rolls
     * back this library's edits alone: the others' stand. The host verifies the body
     * right after the call whenever it was changed, whatever *changed says. */
    ilr_status (*edit)(void *self, ilr_edit edit, int32_t *changed, ilr_error *error);
    /* Last: the profiler is done with it. Called when the profiler releases its
     * instrumentation methods; a runtime that ends the process without releasing the
     * profiler (.NET 8 does) never calls it: free memory here, never flush data that
     * must not be lost. Null: nothing to free. */
    void (*destroy)(void *self);

    /* After `start`, once: the methods it edits, by name, as selectors
     * (`Namespace.Type::Method`, `Namespace.Type::*`, nested types `Outer/Inner`, an
     * overload by its parameters `Type::Method(int32,string)`), in an array of
     * `*count` NUL-terminated strings valid until `destroy`. The host finds them as
     * modules load and asks `wants` only of them (`wants` null: it edits them all);
     * precompiled (ReadyToRun) ones are compiled again with the edits. A selector the
     * host cannot read stops the start. Null, or *count 0: no targets; `wants` is asked
     * of every method the JIT compiles (precompiled code is not seen). */
    ilr_status (*targets)(void *self, const char *const **selectors, uint32_t *count,
                          ilr_error *error);

    /* A module finished loading: define the metadata later edits name (the
     * ilr_host.module_* functions, valid during this call) and keep tokens in the
     * module's data item. Called on many threads at once, for modules loaded before
     * and after the library's start. An error is logged; the item stays as the call
     * left it. Null: nothing to define. */
    ilr_status (*module_loaded)(void *self, ilr_module module, ilr_error *error);

    /* The runtime events it needs beyond those of its callbacks (COR_PRF_MONITOR and
     * COR_PRF_HIGH_MONITOR flags; a high flag the host does not know refuses the
     * library at load). */
    uint32_t events;
    uint32_t events_high;
    /* The callbacks it receives: bit ILR_CALLBACK_x of callbacks[x / 64]. The host asks
     * the runtime for the events they need (and logs each flag it adds); the ReJIT
     * callbacks need the host's own ReJIT, without which the profiler does not start. */
    uint64_t callbacks[2];
    /* Each subscribed callback, on the runtime's thread (many at once: free-threaded),
     * after `start` succeeded: `id` ILR_CALLBACK_x, `args` the callback's arguments as
     * words (see "callbacks" above), `count` of them (`args` is not to be read when
     * `count` is 0). `*answer` arrives 1; a callback that answers (JITInlining: may the
     * callee be inlined; JITCachedFunctionSearchStarted: may the precompiled code be
     * used) says no by writing 0, and the answers of every instrumentation method
     * combine (no if any says no); the others ignore it. Required when a bit of
     * `callbacks` is set. */
    void (*callback)(void *self, uint32_t id, const uint64_t *args, uint32_t count,
                     int32_t *answer);
} ilr_method;

/* The library's exports. */
typedef ilr_status (*ilr_method_create_fn)(const ilr_host *host, ilr_method *method,
                                           ilr_error *error);

#ifdef __cplusplus
}
#endif

#endif /* ILREWRITE_METHOD_H */
