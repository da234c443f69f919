//! The runtime's callbacks through the C ABI: the [`Profiler`] implementation of
//! [`LibraryMethod`] (what it subscribes to is read at load by `subscriptions`), which
//! hands each callback to the library's `callback` as `ILR_CALLBACK_x` and its
//! arguments as words. Both come from the crate's one callback list
//! (`for_each_callback!`): the ids are [`Callback`]'s, and the forwarding methods are
//! generated from the list's entries.

use core::ffi::c_void;

use super::library::LibraryMethod;
use crate::clr::profiler::{Callback, Profiler, for_each_callback};
use crate::clr::sys::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use crate::clr::sys::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use crate::clr::sys::{Guid, HResult};

/// The most words a callback's arguments take (`EventPipeEventDelivered`'s twelve).
const MOST_WORDS: usize = 12;

/// A callback's arguments as the words of `args`: on the stack, at most
/// [`MOST_WORDS`] (the length is exact for each callback: the sum of its arguments'
/// [`Word::COUNT`]).
struct Args<const N: usize> {
    words: [u64; N],
    length: usize,
}

impl<const N: usize> Args<N> {
    const FITS: () = assert!(N <= MOST_WORDS);

    fn new() -> Args<N> {
        let () = Self::FITS;
        Args {
            words: [0; N],
            length: 0,
        }
    }

    /// Appends `word` (there is room for every argument: `N` is their count).
    fn push(&mut self, word: u64) {
        if let Some(slot) = self.words.get_mut(self.length) {
            *slot = word;
            self.length += 1;
        }
    }

    fn as_slice(&self) -> &[u64] {
        self.words.get(..self.length).unwrap_or(&[])
    }
}

/// An argument type of a carried callback, as `args` words (the header's
/// conventions): IDs, `usize` and pointers their value or address, `u32` (tokens, the
/// `COR_PRF_*` enumerations) zero-extended, `i32` and [`HResult`] sign-extended, `bool`
/// 0 or 1, a string or byte slice its address and length. None of them can fail.
trait Word {
    /// How many words.
    const COUNT: usize;
    /// Appends them to `args`.
    fn put<const N: usize>(self, args: &mut Args<N>);
}

impl Word for usize {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        args.push(self as u64);
    }
}

impl Word for u32 {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        args.push(u64::from(self));
    }
}

impl Word for i32 {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        args.push(i64::from(self) as u64);
    }
}

impl Word for bool {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        args.push(u64::from(self));
    }
}

impl Word for HResult {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        self.0.put(args);
    }
}

impl<T> Word for *mut T {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        self.addr().put(args);
    }
}

impl<T> Word for *const T {
    const COUNT: usize = 1;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        self.addr().put(args);
    }
}

impl Word for &str {
    const COUNT: usize = 2;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        self.as_ptr().put(args);
        self.len().put(args);
    }
}

impl Word for &[u8] {
    const COUNT: usize = 2;
    fn put<const N: usize>(self, args: &mut Args<N>) {
        self.as_ptr().put(args);
        self.len().put(args);
    }
}

/// A callback's result from the library's `*answer` (which arrives 1): a `bool`
/// callback answers `false` for 0; the others succeed whatever it is.
trait Answer {
    fn from_answer(answer: i32) -> Self;
}

impl Answer for Result<(), HResult> {
    fn from_answer(_: i32) -> Self {
        Ok(())
    }
}

impl Answer for () {
    fn from_answer(_: i32) -> Self {}
}

impl Answer for bool {
    fn from_answer(answer: i32) -> Self {
        answer != 0
    }
}

/// One method of [`LibraryMethod`]'s [`Profiler`] implementation, from its entry in
/// the list: its arguments as words, handed to the library's `callback` with the
/// callback's id. The callbacks of [`NOT_CARRIED`] keep the trait's default.
macro_rules! forward_method {
    (Initialize $($entry:tt)*) => {};
    (InitializeForAttach $($entry:tt)*) => {};
    (GetReJITParameters $($entry:tt)*) => {};
    (GetAssemblyReferences $($entry:tt)*) => {};
    (LoadAsNotificationOnly $($entry:tt)*) => {};
    (
        $slot:ident $thunk:tt
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        fn $method(&self $(, $arg: $ty)*) -> $ret {
            #[allow(unused_mut, reason = "a callback without arguments puts none")]
            let mut args = Args::<{ 0 $(+ <$ty as Word>::COUNT)* }>::new();
            $(Word::put($arg, &mut args);)*
            Answer::from_answer(self.call(Callback::$slot, args.as_slice()))
        }
    };
}

/// Every callback the C ABI carries, to the library's `callback`. The manager calls a
/// method only for the callbacks it subscribes to (its routing), so none is filtered
/// here.
#[allow(clippy::too_many_arguments)]
impl Profiler for LibraryMethod {
    for_each_callback!(forward_method);
}

/// The names of `callback`'s arguments, in order (for the header's comments).
#[cfg(test)]
pub(super) fn argument_names(callback: Callback) -> &'static [&'static str] {
    macro_rules! names {
        (
            $slot:ident $thunk:tt
            $(#[$doc:meta])*
            fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
        ) => {
            if callback == Callback::$slot {
                return &[$(stringify!($arg)),*];
            }
        };
    }
    for_each_callback!(names);
    &[]
}

#[cfg(test)]
mod tests {
    use core::cell::{Cell, RefCell};

    use super::*;
    use crate::clr::InstrumentationMethod;
    use crate::clr::component::abi::MethodApi;
    use crate::clr::component::subscriptions::{NOT_CARRIED, c_name};
    use crate::clr::host::Events;
    use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor};

    #[test]
    fn c_names_are_the_slots_in_upper_snake_case() {
        for (callback, name) in [
            (Callback::Initialize, "ILR_CALLBACK_INITIALIZE"),
            (
                Callback::ModuleLoadFinished,
                "ILR_CALLBACK_MODULE_LOAD_FINISHED",
            ),
            (
                Callback::JITCompilationStarted,
                "ILR_CALLBACK_JIT_COMPILATION_STARTED",
            ),
            (Callback::ExceptionThrown, "ILR_CALLBACK_EXCEPTION_THROWN"),
            (
                Callback::ExceptionCLRCatcherFound,
                "ILR_CALLBACK_EXCEPTION_CLR_CATCHER_FOUND",
            ),
            (
                Callback::ExceptionOSHandlerEnter,
                "ILR_CALLBACK_EXCEPTION_OS_HANDLER_ENTER",
            ),
            (
                Callback::COMClassicVTableCreated,
                "ILR_CALLBACK_COM_CLASSIC_VTABLE_CREATED",
            ),
            (
                Callback::GetReJITParameters,
                "ILR_CALLBACK_GET_REJIT_PARAMETERS",
            ),
            (Callback::RootReferences2, "ILR_CALLBACK_ROOT_REFERENCES2"),
            (
                Callback::DynamicMethodJITCompilationStarted,
                "ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_STARTED",
            ),
        ] {
            assert_eq!(c_name(callback), name);
        }
        let mut names: Vec<String> = Callback::ALL.iter().map(|&c| c_name(c)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Callback::ALL.len(), "two callbacks, one name");
    }

    #[test]
    fn arguments_become_words() {
        fn words<T: Word>(value: T) -> Vec<u64> {
            let mut args = Args::<MOST_WORDS>::new();
            value.put(&mut args);
            args.as_slice().to_vec()
        }
        assert_eq!(words(0x1234usize), [0x1234]);
        assert_eq!(words(u32::MAX), [0xFFFF_FFFF]);
        assert_eq!(words(-2i32), [u64::MAX - 1]);
        assert_eq!(words(true), [1]);
        assert_eq!(words(false), [0]);
        assert_eq!(
            words(HResult::from_u32(0x8007_0057)),
            [0xFFFF_FFFF_8007_0057]
        );
        assert_eq!(words(HResult::S_FALSE), [1]);
        let guid = Guid::default();
        let at = core::ptr::from_ref(&guid);
        assert_eq!(words(at), [at as usize as u64]);
        assert_eq!(words(core::ptr::null_mut::<c_void>()), [0]);
        let text = "héllo";
        assert_eq!(words(text), [text.as_ptr() as usize as u64, 6]);
        let bytes: &[u8] = &[1, 2, 3];
        assert_eq!(words(bytes), [bytes.as_ptr() as usize as u64, 3]);
        // Past the room, words are dropped, never written out of bounds.
        let mut full = Args::<1>::new();
        full.push(1);
        full.push(2);
        assert_eq!(full.as_slice(), [1]);
    }

    thread_local! {
        /// The calls of [`record`] on this thread: (id, words).
        static CALLS: RefCell<Vec<(u32, Vec<u64>)>> = const { RefCell::new(Vec::new()) };
        /// What [`record`] answers (`None`: leaves `*answer` as it came).
        static ANSWER: Cell<Option<i32>> = const { Cell::new(None) };
    }

    /// A library's `callback`: records the call, answers [`ANSWER`].
    unsafe extern "C" fn record(
        _: *mut c_void,
        id: u32,
        args: *const u64,
        count: u32,
        answer: *mut i32,
    ) {
        let words = match count {
            0 => Vec::new(),
            // SAFETY: `count` words at `args`, valid for the call (the host's contract).
            n => unsafe { core::slice::from_raw_parts(args, n as usize) }.to_vec(),
        };
        CALLS.with_borrow_mut(|calls| calls.push((id, words)));
        // SAFETY: a valid out-parameter (the host's contract); its value arrives 1.
        unsafe {
            assert_eq!(*answer, 1, "answer arrives 1");
            if let Some(value) = ANSWER.get() {
                *answer = value;
            }
        }
    }

    /// A table as `create` fills it: `record` as `callback`, the given subscriptions.
    fn table(callbacks: [u64; 2], events: u32, events_high: u32, with_callback: bool) -> MethodApi {
        MethodApi {
            size: 0,
            this: core::ptr::null_mut(),
            name: c"recorder".as_ptr(),
            priority: 0,
            options: core::ptr::null(),
            option_count: 0,
            start: None,
            check_options: None,
            wants: None,
            edit: None,
            destroy: None,
            targets: None,
            module_loaded: None,
            events,
            events_high,
            callbacks,
            callback: match with_callback {
                true => Some(record),
                false => None,
            },
        }
    }

    /// `callbacks` with the bits of `subscribed`.
    fn bits(subscribed: &[Callback]) -> [u64; 2] {
        let mut bits = [0u64; 2];
        for &c in subscribed {
            let id = c as usize;
            bits[id / 64] |= 1 << (id % 64);
        }
        bits
    }

    fn take_calls() -> Vec<(u32, Vec<u64>)> {
        CALLS.with_borrow_mut(core::mem::take)
    }

    /// A value of each argument type, for calling every callback.
    trait Sample {
        fn sample() -> Self;
    }
    impl Sample for usize {
        fn sample() -> Self {
            0x1000
        }
    }
    impl Sample for u32 {
        fn sample() -> Self {
            7
        }
    }
    impl Sample for i32 {
        fn sample() -> Self {
            -1
        }
    }
    impl Sample for bool {
        fn sample() -> Self {
            true
        }
    }
    impl Sample for HResult {
        fn sample() -> Self {
            HResult::E_FAIL
        }
    }
    impl<T> Sample for *mut T {
        fn sample() -> Self {
            core::ptr::null_mut()
        }
    }
    impl<T> Sample for *const T {
        fn sample() -> Self {
            core::ptr::null()
        }
    }

    /// Calls every callback the ABI carries on `method` with sample arguments, each
    /// with the words its arguments take: (callback, words expected).
    fn call_every_carried(method: &LibraryMethod) -> Vec<(Callback, usize)> {
        let mut called = Vec::new();
        macro_rules! call {
            (Initialize $($entry:tt)*) => {};
            (InitializeForAttach $($entry:tt)*) => {};
            (GetReJITParameters $($entry:tt)*) => {};
            (GetAssemblyReferences $($entry:tt)*) => {};
            (LoadAsNotificationOnly $($entry:tt)*) => {};
            (
                $slot:ident $thunk:tt
                $(#[$doc:meta])*
                fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
            ) => {
                let _ = Profiler::$method(method $(, <$ty as Sample>::sample())*);
                called.push((Callback::$slot, 0 $(+ <$ty as Word>::COUNT)*));
            };
        }
        for_each_callback!(call);
        called
    }

    /// Every callback the ABI carries reaches the library's `callback` with its id and
    /// as many words as its arguments take; those it does not carry are neither
    /// forwarded nor accepted as subscriptions.
    #[test]
    fn every_carried_callback_reaches_the_library_with_its_id() {
        let carried: Vec<Callback> = Callback::ALL
            .iter()
            .copied()
            .filter(|c| !NOT_CARRIED.contains(c))
            .collect();
        let method = LibraryMethod::of_table(table(bits(&carried), 0, 0, true))
            .expect("every carried callback may be subscribed to");
        assert_eq!(method.callbacks().len() as usize, carried.len());
        take_calls();
        let called = call_every_carried(&method);
        let calls = take_calls();
        assert_eq!(
            called.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
            carried,
            "the forwarding has a method for each carried callback, no other"
        );
        assert_eq!(calls.len(), called.len());
        for ((callback, count), (id, words)) in called.iter().zip(&calls) {
            assert_eq!(*id, *callback as u32, "{callback:?}");
            assert_eq!(words.len(), *count, "{callback:?}");
        }
        // Not carried: the trait's default, the library not called.
        assert!(!method.load_as_notification_only());
        assert!(take_calls().is_empty());
    }

    /// The words of some callbacks, and the answers of the two that answer.
    #[test]
    fn arguments_and_answers_cross_as_the_header_says() {
        let subscribed = [
            Callback::ModuleLoadFinished,
            Callback::JITCompilationStarted,
            Callback::GarbageCollectionStarted,
            Callback::JITInlining,
            Callback::JITCachedFunctionSearchStarted,
            Callback::Shutdown,
            Callback::EventPipeEventDelivered,
        ];
        let method = LibraryMethod::of_table(table(bits(&subscribed), 0, 0, true)).unwrap();
        take_calls();
        let invalid = HResult::from_u32(0x8007_0057);
        method.module_load_finished(0x1234, invalid).unwrap();
        method.jit_compilation_started(0x5678, false).unwrap();
        let mut collected = [1i32, 0];
        method
            .garbage_collection_started(2, collected.as_mut_ptr(), 1)
            .unwrap();
        method.shutdown();
        let guid = Guid::default();
        let mut frames = [0usize; 2];
        method
            .event_pipe_event_delivered(
                9,
                1,
                2,
                3,
                core::ptr::null(),
                4,
                core::ptr::null(),
                &guid,
                core::ptr::null(),
                0xAB,
                2,
                frames.as_mut_ptr(),
            )
            .unwrap();
        let guid_at = core::ptr::from_ref(&guid).addr() as u64;
        let frames_at = frames.as_ptr().addr() as u64;
        assert_eq!(
            take_calls(),
            [
                (11, vec![0x1234, 0xFFFF_FFFF_8007_0057]),
                (20, vec![0x5678, 0]),
                (70, vec![2, collected.as_ptr().addr() as u64, 1]),
                (1, vec![]),
                (
                    92,
                    vec![9, 1, 2, 3, 0, 4, 0, guid_at, 0, 0xAB, 2, frames_at]
                ),
            ]
        );
        // Untouched, the answer is yes; 0 is no; any other value yes.
        assert!(method.jit_inlining(1, 2));
        assert!(method.jit_cached_function_search_started(3));
        ANSWER.set(Some(0));
        assert!(!method.jit_inlining(1, 2));
        assert!(!method.jit_cached_function_search_started(3));
        ANSWER.set(Some(-5));
        assert!(method.jit_inlining(1, 2));
        ANSWER.set(None);
        assert_eq!(
            take_calls(),
            [
                (25, vec![1, 2]),
                (22, vec![3]),
                (25, vec![1, 2]),
                (22, vec![3]),
                (25, vec![1, 2]),
            ]
        );
    }

    /// What a table subscribes to becomes the method's callbacks and events; what it
    /// cannot have refuses it, naming the callback.
    #[test]
    fn subscriptions_are_read_at_load_or_refused() {
        let subscribed = [Callback::ExceptionThrown, Callback::ClassLoadFinished];
        let gc = CorPrfMonitor::MONITOR_GC;
        let basic = CorPrfHighMonitor::BASIC_GC;
        let method =
            LibraryMethod::of_table(table(bits(&subscribed), gc.bits(), basic.bits(), true))
                .unwrap();
        assert_eq!(method.callbacks(), subscribed.into_iter().collect());
        assert_eq!(
            method.events(),
            Events {
                low: gc,
                high: basic
            }
        );
        let none = LibraryMethod::of_table(table([0; 2], 0, 0, false)).unwrap();
        assert!(none.callbacks().is_empty());
        assert_eq!(none.events(), Events::default());

        let refused = |api: MethodApi| LibraryMethod::of_table(api).unwrap_err();
        for callback in NOT_CARRIED {
            let why = refused(table(bits(&[callback]), 0, 0, true));
            assert!(
                why.contains(callback.name()) && why.contains(&c_name(callback)),
                "{why}"
            );
            assert!(why.contains("does not carry"), "{why}");
        }
        let why = refused(table([0, 1 << 31], 0, 0, true));
        assert_eq!(
            why,
            "it subscribes to callback 95 (bit 31 of callbacks[1]), which is no callback: \
             the ids go from 0 to 94 (ILR_CALLBACK_LOAD_AS_NOTIFICATION_ONLY)"
        );
        let why = refused(table([0, 1 << 63], 0, 0, true));
        assert!(
            why.contains("callback 127 (bit 63 of callbacks[1])"),
            "{why}"
        );
        let why = refused(table(bits(&subscribed), 0, 0, false));
        assert_eq!(
            why,
            "it subscribes to ClassLoadFinished (ILR_CALLBACK_CLASS_LOAD_FINISHED) and gives \
             no `callback` function"
        );
        let why = refused(table([0; 2], 0, 0x8000_0010, false));
        assert_eq!(
            why,
            "events_high 0x80000010 has flags this host does not know (0x80000000)"
        );
    }
}
