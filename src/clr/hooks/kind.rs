//! [`HookKind`]: which of the three hooks the runtime called. The stubs of every
//! platform pass it to the dispatcher as a number, and every frame record holds it.

use std::fmt;

/// Which hook the runtime called.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookKind {
    /// `FunctionEnter3`: in a method's prolog, its arguments live.
    Enter = 0,
    /// `FunctionLeave3`: in a method's epilog, its return value live.
    Leave = 1,
    /// `FunctionTailcall3`: before a method tail-calls another (no return value).
    Tailcall = 2,
}

impl HookKind {
    /// The kind the stubs pass as `kind` (0 enter, 1 leave, 2 tailcall), if valid.
    #[inline]
    pub const fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            0 => Some(Self::Enter),
            1 => Some(Self::Leave),
            2 => Some(Self::Tailcall),
            _ => None,
        }
    }

    /// The hook's name: `enter`, `leave` or `tailcall`.
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Enter => "enter",
            Self::Leave => "leave",
            Self::Tailcall => "tailcall",
        }
    }
}

impl fmt::Display for HookKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
