//! The live dial's commands carried out by the manager's ReJIT ([`ReJitControl`] as a
//! [`Dial`]).

use super::rejit_control::{Change, ReJitControl};
use crate::clr::rewrite::control::{Command, Dial, Selector};

impl ReJitControl {
    fn selected(&self, selector: &Selector) -> Result<Vec<super::super::rejit::MethodKey>, String> {
        let keys = self.select(&selector.type_name, selector.method.as_deref());
        if keys.is_empty() {
            let method = selector.method.as_deref().unwrap_or("*");
            return Err(format!(
                "no loaded module has a method {}::{method}; nothing was changed",
                selector.type_name
            ));
        }
        Ok(keys)
    }
}

/// `instrument`, `revert`, `original` and `flags` select methods among the loaded
/// modules and change what they run ([`ReJitControl::apply`], which waits until the
/// runtime was asked); `state` lists [`ReJitControl::states`]. A command that selects
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
        let keys = self.selected(selector)?;
        let count = self.apply(&keys, &change)?;
        Ok(vec![format!("changed {count} method(s)")])
    }
}
