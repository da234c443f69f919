//! Floor 4, the profiler: the [`Profiler`] trait a user implements (one method per
//! callback, from one callback list), [`CallbackObject`] (the COM object the runtime
//! calls, whose thunks enter the call-sequence guard's callback scope and keep panics
//! from unwinding into the runtime), and the COM server around it ([`ClassFactory`],
//! [`get_class_object`] and [`export_profiler!`](crate::export_profiler), the entry points
//! a profiler `cdylib` exports).
#![allow(unsafe_code)]

mod callback_set;
mod callbacks;
mod server;
#[cfg(test)]
mod testing;
mod thunks;

pub use callback_set::{Callback, CallbackEvents, Callbacks};
pub use callbacks::Profiler;
pub(crate) use callbacks::for_each_callback;
pub use server::{ClassFactory, get_class_object};
pub use thunks::CallbackObject;
