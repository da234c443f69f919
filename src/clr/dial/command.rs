//! What one line of the dial means ([`Command`], naming methods by [`Selector`]) and
//! what carries it out ([`Dial`]).

use core::fmt;

use crate::clr::runtime::CodegenFlags;
use crate::selector::Selector;

/// One command of the dial, as parsed from one line.
///
/// [`Display`](fmt::Display) writes the line that [`parse`](super::parse) reads back as
/// the same command (for a command `parse` gave).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `instrument SELECTOR METHOD [KEY=VALUE ...]`: the selected methods run the
    /// configured instrumentation plus instrumentation method `method` with these
    /// options (checked against what it declares), from their next call. The key
    /// `flags` is not an option: it sets the code-generation flags
    /// (`none`, `no-inlining`, `no-optimizations`, or both joined by a comma).
    Instrument {
        /// The methods.
        selector: Selector,
        /// The instrumentation method's name.
        method: String,
        /// Its options, as written (`key`, `value`), in order.
        options: Vec<(String, String)>,
        /// The code-generation flags (`flags=`; none by default).
        flags: CodegenFlags,
    },
    /// `revert SELECTOR`: back to what their first JIT gives (the configured
    /// instrumentation only, no flags).
    Revert {
        /// The methods.
        selector: Selector,
    },
    /// `original SELECTOR`: the file's own IL, without any instrumentation (also the
    /// configured one).
    Original {
        /// The methods.
        selector: Selector,
    },
    /// `flags SELECTOR FLAGS`: what they run now, compiled with these flags.
    Flags {
        /// The methods.
        selector: Selector,
        /// The flags.
        flags: CodegenFlags,
    },
    /// `add SELECTOR LIBRARY PRIORITY [KEY=VALUE ...]`: loads the instrumentation method
    /// of the shared library at path LIBRARY (one word), starts it with these options,
    /// and has it edit, with this priority, every method it wants from its next
    /// compilation; the selected methods are compiled again now.
    Add {
        /// The methods compiled again now.
        selector: Selector,
        /// The library's path.
        library: String,
        /// Its priority among the instrumentation methods.
        priority: i32,
        /// Its options, as written (`key`, `value`), in order.
        options: Vec<(String, String)>,
    },
    /// `remove METHOD`: an instrumentation method added with `add` edits nothing from
    /// now on; the methods it changed are compiled again without it.
    Remove {
        /// Its name.
        method: String,
    },
    /// `state`: one line per method the dial or the runtime has a record of.
    State,
    /// `detach`: every method the profiler changed back to its own IL, nothing more
    /// rewritten, and the runtime asked to detach the profiler (which unloads it once no
    /// thread is in a callback); the dial stops with it.
    Detach,
    /// `help`: the commands.
    Help,
}

impl Command {
    /// The command's first word (`instrument`, `revert`, `original`, `flags`, `add`,
    /// `remove`, `state`, `help`).
    pub fn verb(&self) -> &'static str {
        match self {
            Command::Instrument { .. } => "instrument",
            Command::Revert { .. } => "revert",
            Command::Original { .. } => "original",
            Command::Flags { .. } => "flags",
            Command::Add { .. } => "add",
            Command::Remove { .. } => "remove",
            Command::State => "state",
            Command::Detach => "detach",
            Command::Help => "help",
        }
    }

    /// The methods it names; `None` for `remove`, `state` and `help`.
    pub fn selector(&self) -> Option<&Selector> {
        match self {
            Command::Instrument { selector, .. }
            | Command::Revert { selector }
            | Command::Original { selector }
            | Command::Flags { selector, .. }
            | Command::Add { selector, .. } => Some(selector),
            Command::Remove { .. } | Command::State | Command::Detach | Command::Help => None,
        }
    }
}

/// The command's line: its words joined by single spaces; `instrument` writes its
/// options in order, then `flags=...` unless the flags are none.
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.verb())?;
        if let Some(selector) = self.selector() {
            write!(f, " {selector}")?;
        }
        match self {
            Command::Instrument {
                method,
                options,
                flags,
                ..
            } => {
                write!(f, " {method}")?;
                for (key, value) in options {
                    write!(f, " {key}={value}")?;
                }
                if *flags != CodegenFlags::NONE {
                    write!(f, " flags={flags}")?;
                }
                Ok(())
            }
            Command::Flags { flags, .. } => write!(f, " {flags}"),
            Command::Add {
                library,
                priority,
                options,
                ..
            } => {
                write!(f, " {library} {priority}")?;
                for (key, value) in options {
                    write!(f, " {key}={value}")?;
                }
                Ok(())
            }
            Command::Remove { method } => write!(f, " {method}"),
            Command::Revert { .. }
            | Command::Original { .. }
            | Command::State
            | Command::Detach
            | Command::Help => Ok(()),
        }
    }
}

/// What carries the dial's commands out.
///
/// The [`ControlServer`](super::ControlServer) calls [`execute`](Dial::execute) for
/// every line that parses (`help` included: [`help_lines`](super::help_lines) is the
/// channel's text for it), from one thread per connection, so calls from two
/// connections may run at once. A panic is caught and answered as an internal error.
pub trait Dial: Send + Sync {
    /// Carries `command` out. `Ok` holds the answer's lines (each without a newline;
    /// the channel ends them with a final `ok` line), `Err` one line saying why
    /// nothing was changed.
    ///
    /// # Errors
    /// A command that cannot be carried out (an unknown instrumentation method, an
    /// option it refuses, a selector that names no loaded method): nothing changed.
    fn execute(&self, command: &Command) -> Result<Vec<String>, String>;
}
