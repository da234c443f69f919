//! What a library subscribes to, read from its table at load: the callbacks
//! (`ilr_method.callbacks`, each bit a [`Callback`]) and the events beyond theirs
//! (`events`, `events_high`), and the header's name of each callback's id.

use super::abi::MethodApi;
use crate::clr::host::Events;
use crate::clr::profiler::{Callback, Callbacks};
use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor};

/// The callbacks the C ABI does not carry: their arguments are the host's objects
/// (`ProfilerInfo`, `FunctionControl`, `AssemblyReferenceProvider`) or the manager
/// answers them itself. A library that subscribes to one is refused at load; the
/// forwarding below has no method for them (the trait's defaults, never called).
pub(super) const NOT_CARRIED: [Callback; 5] = [
    Callback::Initialize,
    Callback::InitializeForAttach,
    Callback::GetReJITParameters,
    Callback::GetAssemblyReferences,
    Callback::LoadAsNotificationOnly,
];

/// The header's name of `callback`'s id: `ILR_CALLBACK_` and the slot's name in upper
/// snake case (`JITCompilationStarted` is `ILR_CALLBACK_JIT_COMPILATION_STARTED`). A
/// word starts at a capital after a lower-case letter or a digit, and at the last
/// capital of a run followed by a lower-case letter (`CLRCatcher` is `CLR_CATCHER`);
/// `ReJIT` and `VTable` are one word each (`ILR_CALLBACK_REJIT_ERROR`).
pub(crate) fn c_name(callback: Callback) -> String {
    let slot = callback
        .name()
        .replace("ReJIT", "Rejit")
        .replace("VTable", "Vtable");
    let chars: Vec<char> = slot.chars().collect();
    let mut name = String::from("ILR_CALLBACK_");
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let after = chars.get(i + 1).copied();
        let starts_word = c.is_ascii_uppercase()
            && before.is_some_and(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || (b.is_ascii_uppercase() && after.is_some_and(|a| a.is_ascii_lowercase()))
            });
        if starts_word {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// What a library subscribes to, from its table: its callbacks (`callbacks`, each bit
/// a [`Callback`]) and the events it asks for beyond theirs (`events`,
/// `events_high`), or why it cannot have them: a bit that is no callback, a callback
/// the ABI does not carry ([`NOT_CARRIED`]), a subscription without a `callback`
/// function, a high event flag the crate does not know.
pub(super) fn subscriptions(api: &MethodApi) -> Result<(Callbacks, Events), String> {
    let mut callbacks = Callbacks::empty();
    for (word, &bits) in api.callbacks.iter().enumerate() {
        for bit in (0..64).filter(|b| bits & (1u64 << b) != 0) {
            let id = word * 64 + bit;
            let Some(&callback) = Callback::ALL.get(id) else {
                let last = Callback::ALL.len() - 1;
                return Err(format!(
                    "it subscribes to callback {id} (bit {bit} of callbacks[{word}]), which is \
                     no callback: the ids go from 0 to {last} ({})",
                    Callback::ALL
                        .get(last)
                        .map_or_else(String::new, |&c| c_name(c))
                ));
            };
            if NOT_CARRIED.contains(&callback) {
                return Err(format!(
                    "it subscribes to {} ({}), which the C ABI does not carry (the host \
                     answers it itself)",
                    callback.name(),
                    c_name(callback)
                ));
            }
            callbacks = callbacks.with(callback);
        }
    }
    if api.callback.is_none()
        && let Some(first) = Callback::ALL.iter().find(|&&c| callbacks.contains(c))
    {
        return Err(format!(
            "it subscribes to {} ({}) and gives no `callback` function",
            first.name(),
            c_name(*first)
        ));
    }
    let Some(high) = CorPrfHighMonitor::from_bits(api.events_high) else {
        return Err(format!(
            "events_high {:#x} has flags this host does not know ({:#x})",
            api.events_high,
            api.events_high & !CorPrfHighMonitor::all().bits()
        ));
    };
    let events = Events {
        low: CorPrfMonitor::from_bits_retain(api.events),
        high,
    };
    Ok((callbacks, events))
}
