//! The live dial's commands carried out by the manager's ReJIT ([`ReJitControl`] as a
//! [`Dial`]).

use super::rejit_control::{Change, ReJitControl};
use crate::clr::rewrite::control::{Command, Dial};

/// `instrument`, `revert`, `original` and `flags` select methods among the loaded
/// modules and change what they run ([`ReJitControl::select_and_apply`], which waits
/// until the runtime was asked); `state` lists [`ReJitControl::states`]. A command that selects
/// nothing or names an instrumentation method or options the manager refuses changes
/// nothing and says why.
impl Dial for ReJitControl {
    fn execute(&self, command: &Command) -> Result<Vec<String>, String> {
        let (selector, change) = match command {
            Command::State => return Ok(self.states()),
            Command::Help => return Ok(crate::clr::rewrite::control::help_lines()),
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
        let method = selector.method.as_deref();
        let count = self.select_and_apply(&selector.type_name, method, &change)?;
        Ok(vec![format!("changed {count} method(s)")])
    }
}
