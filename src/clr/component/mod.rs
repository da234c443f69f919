//! Floor 7, components: instrumentation methods in shared libraries of their own,
//! written in C (or any language with a C ABI) against `include/ilrewrite_method.h`,
//! loaded by [`LibraryMethod::load`] and hosted by the manager like the Rust ones.
//!
//! * `abi`: the header's types, `#[repr(C)]`;
//! * `context`: the handles a library gets, valid only during the call (numbers looked
//!   up on the calling thread, never pointers);
//! * `host_fns`: the functions the library calls (`ilr_host`) to read options,
//!   candidates and the body and insert code; `module_fns` those that define a
//!   module's metadata while it loads; `edit_fns` those for items, locals, the
//!   single-ret and wrapping; `items`: a library's data items and their destructors;
//! * `library`: loading, the version check before any call, and the adapter to
//!   [`InstrumentationMethod`](super::InstrumentationMethod);
//! * `callbacks`: the callbacks a library subscribes to (`ILR_CALLBACK_*`) and the
//!   events it asks for, and the [`Profiler`](super::Profiler) implementation that hands
//!   them to its `callback` function, generated from the crate's callback list.
//!
//! `unsafe` is allowed here: the library's table is called through raw function
//! pointers, and what it lends is read through raw pointers; each block says why.
#![allow(unsafe_code)]

pub(crate) mod abi;
mod callbacks;
mod context;
mod edit_fns;
mod host_fns;
mod items;
#[cfg(test)]
mod layout_tests;
mod library;
mod module_fns;
mod subscriptions;
mod table;

pub use library::{LibraryMethod, LoadError};
