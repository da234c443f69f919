//! The live dial's commands carried out by the manager's ReJIT ([`ReJitControl`] as a
//! [`Dial`]).

use super::change::Change;
use super::rejit_control::ReJitControl;
use crate::clr::dial::{Command, Dial};
use crate::clr::runtime::guard::is_shutting_down;

/// The answer to a command once the runtime is shutting down.
const SHUTTING_DOWN: &str = "the profiler is shutting down";

/// `instrument`, `revert`, `original` and `flags` select methods among the loaded
/// modules and change what they run ([`ReJitControl::select_and_apply`], which waits
/// until the runtime was asked); `state` lists [`ReJitControl::states`]. A command that selects
/// nothing or names an instrumentation method or options the manager refuses changes
/// nothing and says why.
///
/// Once the runtime's `Shutdown` arrived, every command but `help` is answered
/// `error: the profiler is shutting down` without a call into the runtime (a command
/// carried out meanwhile gets that answer, or its connection is closed).
impl Dial for ReJitControl {
    fn execute(&self, command: &Command) -> Result<Vec<String>, String> {
        if is_shutting_down() && !matches!(command, Command::Help) {
            return Err(SHUTTING_DOWN.to_owned());
        }
        let (selector, change) = match command {
            Command::State => {
                let states = self.states();
                return match is_shutting_down() {
                    // Names read after Shutdown arrived were refused ("?").
                    true => Err(SHUTTING_DOWN.to_owned()),
                    false => Ok(states),
                };
            }
            Command::Help => return Ok(crate::clr::dial::help_lines()),
            Command::Detach => {
                return self
                    .detach()
                    .map(|count| vec![format!("detaching; {count} method(s) back to their own IL")])
                    .map_err(|why| why.to_string());
            }
            Command::Add {
                selector,
                library,
                priority,
                options,
            } => {
                let path = std::path::Path::new(library);
                return self
                    .add_library(path, *priority, options, selector)
                    .map(|count| vec![format!("added; compiled again {count} method(s)")])
                    .map_err(|why| why.to_string());
            }
            Command::Remove { method } => {
                return self
                    .remove_method(method)
                    .map(|count| vec![format!("removed; compiled again {count} method(s)")])
                    .map_err(|why| why.to_string());
            }
            Command::Instrument {
                selector,
                method,
                options,
                flags,
            } => (
                selector,
                Change::Instrument {
                    method: method.clone(),
                    options: options.clone(),
                    flags: *flags,
                },
            ),
            Command::Revert { selector } => (selector, Change::Configured),
            Command::Original { selector } => (selector, Change::File),
            Command::Flags { selector, flags } => (selector, Change::Flags(*flags)),
        };
        match self.select_and_apply(selector, &change) {
            Ok(count) => Ok(vec![format!("changed {count} method(s)")]),
            // Shutdown arrived while it was carried out: its runtime calls were refused,
            // which is why it failed.
            Err(_) if is_shutting_down() => Err(SHUTTING_DOWN.to_owned()),
            // The channel's answer line: where the typed error becomes text.
            Err(why) => Err(why.to_string()),
        }
    }
}
