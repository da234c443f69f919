//! Floor 7, components: instrumentation methods in shared libraries of their own,
//! written in C (or any language with a C ABI) against `include/ilrewrite_method.h`,
//! loaded by [`LibraryMethod::load`] and hosted by the manager like the Rust ones.
//!
//! * `abi`: the header's types, `#[repr(C)]`;
//! * `context`: the handles a library gets, valid only during the call (numbers looked
//!   up on the calling thread, never pointers);
//! * `host_fns`: the functions the library calls (`ilr_host`);
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
mod host_fns;
#[cfg(test)]
mod layout_tests;
mod library;

pub use library::{LibraryMethod, LoadError};
