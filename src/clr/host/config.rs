//! The configuration file of a [`Manager`](super::Manager): which of the instrumentation
//! methods compiled into a profiler run, their priorities, and each one's options.
//!
//! ```toml
//! # Listed means enabled; ties in priority edit in the order listed.
//! [[method]]
//! name = "scale"          # required: one the profiler offers
//! priority = 20           # optional: the instrumentation method's own by default
//! enabled = true          # optional: true by default
//! [method.options]        # optional: checked against what it declares
//! method = "Answer::Get"
//! factor = 2
//! ```
//!
//! Every mistake is a [`ConfigError`] naming the file, line and column: a file that is
//! not TOML, a key this format does not have, a name the profiler does not offer, a name
//! listed twice, an option the instrumentation method does not declare, an option of the
//! wrong type, a selector that does not read as one.

use std::sync::Arc;

use crate::selector::Selector;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::ready_to_run::ReadyToRun;

/// Where something is in a configuration file: 1-based line and column (in
/// characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, in characters.
    pub column: u32,
}

/// A mistake in a configuration: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{}: {message}", at.map(|p| format!(":{}:{}", p.line, p.column)).unwrap_or_default())]
pub struct ConfigError {
    /// The file (or whatever the text came from).
    pub origin: String,
    /// Where in it, when the mistake has a place (a file that cannot be read has
    /// none).
    pub at: Option<Position>,
    /// What is wrong.
    pub message: String,
}

/// The type of an instrumentation method's option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// A TOML integer (64-bit).
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A TOML string.
    String,
    /// An array of strings.
    Strings,
    /// Methods named by [`Selector`]s: one string or an array of strings, each read
    /// by [`Selector::parse`] (`"App.Orders::Place"`,
    /// `["System.String::Concat(string, string)", "App.Orders::*"]`); a string that
    /// does not read as a selector is an error at its place in the file. From the dial
    /// (`key=value` words), the selectors are separated by commas outside their
    /// parameter lists. Read with [`Options::selectors`].
    Selectors,
}

impl OptionKind {
    fn describe(self) -> &'static str {
        match self {
            OptionKind::Integer => "an integer",
            OptionKind::Boolean => "a boolean",
            OptionKind::String => "a string",
            OptionKind::Strings => "an array of strings",
            OptionKind::Selectors => "a selector or an array of selectors (strings)",
        }
    }
}

/// An option an instrumentation method takes
/// ([`InstrumentationMethod::options`](super::InstrumentationMethod::options)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// Its key in the `options` table.
    pub name: &'static str,
    /// Its type.
    pub kind: OptionKind,
}

impl OptionSpec {
    /// An option `name` of type `kind`.
    pub const fn new(name: &'static str, kind: OptionKind) -> OptionSpec {
        OptionSpec { name, kind }
    }
}

/// An option's value as written.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Integer(i64),
    Boolean(bool),
    String(String),
    Strings(Vec<String>),
    /// Selectors, read from a string or strings when checked against an
    /// [`OptionKind::Selectors`].
    Selectors(Vec<Selector>),
    /// A value of a type no option takes (float, date, table, mixed array): its TOML
    /// type, for the error.
    Other(&'static str),
}

impl Value {
    fn describe(&self) -> &'static str {
        match self {
            Value::Integer(_) => "an integer",
            Value::Boolean(_) => "a boolean",
            Value::String(_) => "a string",
            Value::Strings(_) => "an array of strings",
            Value::Selectors(_) => "selectors",
            Value::Other(kind) => kind,
        }
    }

    fn is(&self, kind: OptionKind) -> bool {
        matches!(
            (self, kind),
            (Value::Integer(_), OptionKind::Integer)
                | (Value::Boolean(_), OptionKind::Boolean)
                | (Value::String(_), OptionKind::String)
                | (Value::Strings(_), OptionKind::Strings)
                | (
                    Value::String(_) | Value::Strings(_) | Value::Selectors(_),
                    OptionKind::Selectors
                )
        )
    }
}

#[derive(Debug, Clone)]
struct OptionEntry {
    key: String,
    key_at: Position,
    value: Value,
    value_at: Position,
    /// Where each string of an array of strings is (none for other values and for
    /// options written as words).
    items_at: Vec<Position>,
}

/// The options one instrumentation method was given, checked against what it declares
/// (every key declared, every value of its declared type): handed to it at
/// [`start`](super::InstrumentationMethod::start).
#[derive(Debug, Clone, Default)]
pub struct Options {
    origin: Arc<str>,
    entries: Vec<OptionEntry>,
}

impl Options {
    fn get(&self, name: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|e| e.key == name)
            .map(|e| &e.value)
    }

    /// Whether no option was given.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Integer option `name`, if given.
    pub fn integer(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Value::Integer(v) => Some(*v),
            _ => None,
        }
    }

    /// Boolean option `name`, if given.
    pub fn boolean(&self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Value::Boolean(v) => Some(*v),
            _ => None,
        }
    }

    /// String option `name`, if given.
    pub fn string(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            Value::String(v) => Some(v),
            _ => None,
        }
    }

    /// String-array option `name`, if given.
    pub fn strings(&self, name: &str) -> Option<&[String]> {
        match self.get(name)? {
            Value::Strings(v) => Some(v),
            _ => None,
        }
    }

    /// Selectors option `name` ([`OptionKind::Selectors`]), if given: each string read
    /// by [`Selector::parse`], in the order written (one for a single string). `None`
    /// for an option not declared as selectors.
    pub fn selectors(&self, name: &str) -> Option<&[Selector]> {
        match self.get(name)? {
            Value::Selectors(v) => Some(v),
            _ => None,
        }
    }

    /// An error about option `name`'s value (one the type allows but the instrumentation
    /// method does not, a factor of 0 say), at its place in the file: for
    /// [`start`](super::InstrumentationMethod::start) to return.
    pub fn invalid(&self, name: &str, why: &str) -> ConfigError {
        let at = self
            .entries
            .iter()
            .find(|e| e.key == name)
            .map(|e| e.value_at);
        ConfigError {
            origin: self.origin.to_string(),
            at,
            message: format!("option `{name}`: {why}"),
        }
    }

    /// Options written as `key=value` words (a live request, not a file), each value
    /// read as the type `specs` declares for its key: an integer, `true` or `false`, a
    /// string as written, strings separated by commas. Errors name `origin`.
    ///
    /// # Errors
    /// A key instrumentation method `method` does not declare, a key given twice, a
    /// value that is not of the key's type.
    pub fn from_words(
        origin: &str,
        method: &str,
        specs: &[OptionSpec],
        words: &[(String, String)],
    ) -> Result<Options, ConfigError> {
        let error = |message: String| ConfigError {
            origin: origin.to_owned(),
            at: None,
            message,
        };
        let mut entries: Vec<OptionEntry> = Vec::with_capacity(words.len());
        for (key, text) in words {
            if entries.iter().any(|e| e.key == *key) {
                return Err(error(format!("option `{key}` is given twice")));
            }
            let kind = specs.iter().find(|s| s.name == key).map(|s| s.kind);
            let value = match kind {
                // Not declared: `check` below says so, listing what it takes.
                None => Value::String(text.clone()),
                Some(OptionKind::Integer) => Value::Integer(text.parse().map_err(|_| {
                    error(format!(
                        "option `{key}` of {method:?} must be an integer, not {text:?}"
                    ))
                })?),
                Some(OptionKind::Boolean) => match text.as_str() {
                    "true" => Value::Boolean(true),
                    "false" => Value::Boolean(false),
                    _ => {
                        return Err(error(format!(
                            "option `{key}` of {method:?} must be true or false, not {text:?}"
                        )));
                    }
                },
                Some(OptionKind::String) => Value::String(text.clone()),
                Some(OptionKind::Strings) => {
                    Value::Strings(text.split(',').map(str::to_owned).collect())
                }
                Some(OptionKind::Selectors) => Value::Strings(split_selectors(text)),
            };
            entries.push(OptionEntry {
                key: key.clone(),
                key_at: Position::default(),
                value,
                value_at: Position::default(),
                items_at: Vec::new(),
            });
        }
        let options = Options {
            origin: origin.into(),
            entries,
        };
        options.checked(method, specs)
    }

    /// Whether both give the same keys the same values (in any order; where they were
    /// written does not count).
    pub fn same_values(&self, other: &Options) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .all(|e| other.get(&e.key) == Some(&e.value))
    }

    /// `key=value` words in the order given (strings joined by commas): how the dial's
    /// state listing shows them.
    pub fn words(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| {
                let value = match &e.value {
                    Value::Integer(v) => v.to_string(),
                    Value::Boolean(v) => v.to_string(),
                    Value::String(v) => v.clone(),
                    Value::Strings(v) => v.join(","),
                    Value::Selectors(v) => v
                        .iter()
                        .map(Selector::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    Value::Other(kind) => format!("<{kind}>"),
                };
                format!("{}={value}", e.key)
            })
            .collect()
    }

    /// These options checked against `specs`, the options instrumentation method
    /// `method` declares (every key declared, every value of its type), with the values
    /// of [`OptionKind::Selectors`] options read as selectors.
    pub(crate) fn checked(
        &self,
        method: &str,
        specs: &[OptionSpec],
    ) -> Result<Options, ConfigError> {
        let mut checked = self.clone();
        for entry in &mut checked.entries {
            let Some(spec) = specs.iter().find(|s| s.name == entry.key) else {
                let declared: Vec<&str> = specs.iter().map(|s| s.name).collect();
                let declared = match declared.is_empty() {
                    true => "it takes none".to_owned(),
                    false => format!("it takes {}", declared.join(", ")),
                };
                return Err(ConfigError {
                    origin: self.origin.to_string(),
                    at: placed(entry.key_at),
                    message: format!(
                        "instrumentation method {method:?} has no option `{}` ({declared})",
                        entry.key
                    ),
                });
            };
            if !entry.value.is(spec.kind) {
                return Err(ConfigError {
                    origin: self.origin.to_string(),
                    at: placed(entry.value_at),
                    message: format!(
                        "option `{}` of {method:?} must be {}, not {}",
                        entry.key,
                        spec.kind.describe(),
                        entry.value.describe()
                    ),
                });
            }
            if spec.kind == OptionKind::Selectors {
                entry.value = Value::Selectors(self.selectors_of(entry, method)?);
            }
        }
        Ok(checked)
    }

    /// The selectors of `entry`, a string or strings, each read by [`Selector::parse`];
    /// the first that does not read is an error at its place.
    fn selectors_of(
        &self,
        entry: &OptionEntry,
        method: &str,
    ) -> Result<Vec<Selector>, ConfigError> {
        let texts: &[String] = match &entry.value {
            Value::Selectors(selectors) => return Ok(selectors.clone()),
            Value::String(text) => core::slice::from_ref(text),
            Value::Strings(texts) => texts,
            _ => &[],
        };
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                Selector::parse(text).map_err(|e| {
                    let at = entry.items_at.get(i).copied().unwrap_or(entry.value_at);
                    let which = match &entry.value {
                        Value::Strings(_) => format!(" (item {})", i + 1),
                        _ => String::new(),
                    };
                    ConfigError {
                        origin: self.origin.to_string(),
                        at: placed(at),
                        message: format!("option `{}` of {method:?}{which}: {e}", entry.key),
                    }
                })
            })
            .collect()
    }
}

/// Selectors written in one word (`a::M(x,y),b::*`): split at the commas outside
/// brackets and quotes.
fn split_selectors(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if quoted {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '\'') => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' if depth > 0 => quoted = true,
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(text[start..at].to_owned());
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(text[start..].to_owned());
    items
}

/// A place in a file, or none for options that come from elsewhere (written as words:
/// their positions are the default, which no place in a file has).
fn placed(at: Position) -> Option<Position> {
    (at != Position::default()).then_some(at)
}

/// One `[[method]]` of a configuration.
#[derive(Debug, Clone)]
pub struct MethodEntry {
    /// The instrumentation method's name.
    pub name: String,
    /// Where the name is written.
    pub at: Position,
    /// Its priority, if the file gives one.
    pub priority: Option<i32>,
    /// Whether it runs (`enabled = false` lists it without running it).
    pub enabled: bool,
    /// Its options.
    pub options: Options,
    /// The shared library it is in (`library = "path"`, relative to the configuration
    /// file's directory): an instrumentation method of its own library, loaded by a
    /// profiler that loads libraries ([`Manager::configured_with_loader`](super::Manager::configured_with_loader)).
    pub library: Option<std::path::PathBuf>,
}

/// A configuration file, read and checked for its own format; the names and options
/// are checked against the instrumentation methods a profiler offers when a
/// [`Manager`](super::Manager) is made from it
/// ([`Manager::configured`](super::Manager::configured)).
#[derive(Debug, Clone)]
pub struct Configuration {
    origin: Arc<str>,
    methods: Vec<MethodEntry>,
    manager: ManagerTable,
}

/// What a `[manager]` table says.
#[derive(Debug, Clone, Default)]
struct ManagerTable {
    /// `ready_to_run = "keep" | "disable"`.
    ready_to_run: Option<ReadyToRun>,
    /// `show_il = ["selector", ...]`.
    show_il: Vec<Selector>,
}

impl Configuration {
    /// Reads and checks the file at `path`.
    ///
    /// # Errors
    /// A file that cannot be read or is not UTF-8, and every error of
    /// [`Configuration::parse`].
    pub fn read(path: &std::path::Path) -> Result<Configuration, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            at: None,
            message: format!("cannot read the configuration: {e}"),
        })?;
        let mut configuration = Configuration::parse(&text, &origin)?;
        let dir = path.parent().unwrap_or(std::path::Path::new(""));
        for entry in &mut configuration.methods {
            if let Some(library) = &mut entry.library
                && library.is_relative()
            {
                *library = dir.join(&*library);
            }
        }
        Ok(configuration)
    }

    /// Checks `text`, a configuration whose errors name `origin`.
    ///
    /// # Errors
    /// Text that is not TOML; a top-level key other than `method`; a `method` that is
    /// not an array of tables; an entry without a string `name`, with a key other than
    /// `name`, `priority`, `enabled` and `options`, a priority that is not an `i32`, an
    /// `enabled` that is not a boolean, `options` that are not a table; a name listed
    /// twice.
    pub fn parse(text: &str, origin: &str) -> Result<Configuration, ConfigError> {
        let lines = Lines::new(text, origin);
        let root = DeTable::parse(text).map_err(|e| {
            let at = e.span().map(|span| lines.position(span.start));
            lines.error_at(at, e.message().trim_end().to_owned())
        })?;
        let mut methods: Vec<MethodEntry> = Vec::new();
        let mut manager = ManagerTable::default();
        for (key, value) in in_file_order(root.get_ref()) {
            if key.get_ref().as_ref() == "manager" {
                manager = lines.manager(value)?;
                continue;
            }
            if key.get_ref().as_ref() != "method" {
                return Err(lines.error(
                    key.span().start,
                    format!(
                        "unknown key `{}` (expected [manager] or [[method]])",
                        key.get_ref()
                    ),
                ));
            }
            let DeValue::Array(array) = value.get_ref() else {
                return Err(lines.error(
                    value.span().start,
                    "`method` must be an array of tables, written [[method]]".to_owned(),
                ));
            };
            for table in array.iter() {
                let entry = lines.method_entry(table)?;
                if let Some(first) = methods.iter().find(|m| m.name == entry.name) {
                    return Err(lines.error_at(
                        Some(entry.at),
                        format!(
                            "instrumentation method {:?} is listed twice (first at line {}, \
                             column {})",
                            entry.name, first.at.line, first.at.column
                        ),
                    ));
                }
                methods.push(entry);
            }
        }
        Ok(Configuration {
            origin: lines.origin.clone(),
            methods,
            manager,
        })
    }

    /// What its `[manager]` table says of ReadyToRun code (`ready_to_run = "keep"` or
    /// `"disable"`), if it says anything.
    pub fn ready_to_run(&self) -> Option<ReadyToRun> {
        self.manager.ready_to_run
    }

    /// The methods its `[manager]` table's `show_il` selects (an array of selectors,
    /// [`Selector::parse`]): the IL handed over for each is logged as a listing.
    pub fn show_il(&self) -> &[Selector] {
        &self.manager.show_il
    }

    /// Where it was read from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Its `[[method]]` entries, in the order written.
    pub fn methods(&self) -> &[MethodEntry] {
        &self.methods
    }

    /// An error at `at` in this configuration.
    pub(crate) fn error(&self, at: Position, message: String) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            at: Some(at),
            message,
        }
    }
}

/// A text's line starts, to turn byte offsets into positions.
struct Lines<'t> {
    text: &'t str,
    origin: Arc<str>,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str, origin: &str) -> Lines<'t> {
        let starts = core::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines {
            text,
            origin: origin.into(),
            starts,
        }
    }

    fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        Position {
            line: line as u32 + 1,
            column: column as u32 + 1,
        }
    }

    fn error_at(&self, at: Option<Position>, message: String) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            at,
            message,
        }
    }

    fn error(&self, offset: usize, message: String) -> ConfigError {
        self.error_at(Some(self.position(offset)), message)
    }

    /// The `[manager]` table: its keys are `ready_to_run` and `show_il`.
    fn manager(&self, table: &Spanned<DeValue<'_>>) -> Result<ManagerTable, ConfigError> {
        let DeValue::Table(fields) = table.get_ref() else {
            return Err(self.error(
                table.span().start,
                "`manager` must be a table, written [manager]".to_owned(),
            ));
        };
        let mut manager = ManagerTable::default();
        for (key, value) in in_file_order(fields) {
            let at = value.span().start;
            match (key.get_ref().as_ref(), value.get_ref()) {
                ("show_il", DeValue::Array(items)) => manager.show_il = self.show_il(items)?,
                ("show_il", other) => {
                    return Err(self.error(
                        at,
                        format!(
                            "`show_il` must be an array of selectors (strings), not {}",
                            value_type(other)
                        ),
                    ));
                }
                ("ready_to_run", DeValue::String(s)) => {
                    manager.ready_to_run = Some(ReadyToRun::parse(s).ok_or_else(|| {
                        self.error(
                            at,
                            format!("ready_to_run is \"keep\" or \"disable\", not {s:?}"),
                        )
                    })?);
                }
                ("ready_to_run", other) => {
                    return Err(self.error(
                        at,
                        format!("`ready_to_run` must be a string, not {}", value_type(other)),
                    ));
                }
                (other, _) => {
                    return Err(self.error(
                        key.span().start,
                        format!(
                            "unknown key `{other}` in [manager] (expected ready_to_run or show_il)"
                        ),
                    ));
                }
            }
        }
        Ok(manager)
    }

    /// The selectors of `[manager]`'s `show_il`; an item that is not a string or does not
    /// read is an error at its place.
    fn show_il(&self, items: &[Spanned<DeValue<'_>>]) -> Result<Vec<Selector>, ConfigError> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = item.span().start;
                let text = item.get_ref().as_str().ok_or_else(|| {
                    let kind = value_type(item.get_ref());
                    self.error(
                        at,
                        format!("show_il item {}: a selector is a string, not {kind}", i + 1),
                    )
                })?;
                Selector::parse(text)
                    .map_err(|e| self.error(at, format!("show_il item {}: {e}", i + 1)))
            })
            .collect()
    }

    /// One `[[method]]` table.
    fn method_entry(&self, table: &Spanned<DeValue<'_>>) -> Result<MethodEntry, ConfigError> {
        let DeValue::Table(fields) = table.get_ref() else {
            return Err(self.error(
                table.span().start,
                "each `method` must be a table, written [[method]]".to_owned(),
            ));
        };
        let mut name = None;
        let mut priority = None;
        let mut enabled = true;
        let mut library = None;
        let mut options = Options {
            origin: self.origin.clone(),
            entries: Vec::new(),
        };
        for (key, value) in in_file_order(fields) {
            let at = value.span().start;
            match (key.get_ref().as_ref(), value.get_ref()) {
                ("name", DeValue::String(s)) => name = Some((s.to_string(), self.position(at))),
                ("priority", DeValue::Integer(i)) => {
                    let parsed = i64::from_str_radix(i.as_str(), i.radix())
                        .ok()
                        .and_then(|v| i32::try_from(v).ok());
                    priority = Some(parsed.ok_or_else(|| {
                        self.error(at, format!("priority {i} is not a 32-bit integer"))
                    })?);
                }
                ("enabled", DeValue::Boolean(b)) => enabled = *b,
                ("options", DeValue::Table(table)) => options.entries = self.options(table)?,
                ("library", DeValue::String(s)) if !s.is_empty() => {
                    library = Some(std::path::PathBuf::from(s.as_ref()));
                }
                (key @ ("name" | "priority" | "enabled" | "options" | "library"), other) => {
                    let expected = match key {
                        "name" => "a string",
                        "library" => "a library's path (a string, not empty)",
                        "priority" => "an integer",
                        "enabled" => "a boolean",
                        _ => "a table",
                    };
                    return Err(self.error(
                        at,
                        format!("`{key}` must be {expected}, not {}", value_type(other)),
                    ));
                }
                (other, _) => {
                    return Err(self.error(
                        key.span().start,
                        format!(
                            "unknown key `{other}` in [[method]] (expected name, priority, \
                             enabled, options or library)"
                        ),
                    ));
                }
            }
        }
        let Some((name, at)) = name else {
            return Err(self.error(table.span().start, "a [[method]] without `name`".to_owned()));
        };
        Ok(MethodEntry {
            name,
            at,
            priority,
            enabled,
            options,
            library,
        })
    }

    /// The entries of an `options` table.
    fn options(&self, table: &DeTable<'_>) -> Result<Vec<OptionEntry>, ConfigError> {
        let mut entries = Vec::new();
        for (key, value) in in_file_order(table) {
            let value_at = self.position(value.span().start);
            let mut items_at = Vec::new();
            let value = match value.get_ref() {
                DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                    Ok(v) => Value::Integer(v),
                    Err(_) => {
                        return Err(self.error_at(
                            Some(value_at),
                            format!("integer {i} does not fit in 64 bits"),
                        ));
                    }
                },
                DeValue::Boolean(b) => Value::Boolean(*b),
                DeValue::String(s) => Value::String(s.to_string()),
                DeValue::Array(items) => {
                    let strings: Option<Vec<String>> = items
                        .iter()
                        .map(|item| item.get_ref().as_str().map(str::to_owned))
                        .collect();
                    match strings {
                        Some(strings) => {
                            items_at = items
                                .iter()
                                .map(|item| self.position(item.span().start))
                                .collect();
                            Value::Strings(strings)
                        }
                        None => Value::Other("an array of other things than strings"),
                    }
                }
                other => Value::Other(value_type(other)),
            };
            entries.push(OptionEntry {
                key: key.get_ref().to_string(),
                key_at: self.position(key.span().start),
                value,
                value_at,
                items_at,
            });
        }
        Ok(entries)
    }
}

/// A table's entries in the order they are written (the parser keeps them sorted by
/// key), so that the first mistake reported is the first in the file.
fn in_file_order<'a, 'i>(
    table: &'a DeTable<'i>,
) -> Vec<(
    &'a Spanned<toml::de::DeString<'i>>,
    &'a Spanned<DeValue<'i>>,
)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

/// A TOML value's type, for errors.
fn value_type(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: [OptionSpec; 3] = [
        OptionSpec::new("factor", OptionKind::Integer),
        OptionSpec::new("method", OptionKind::String),
        OptionSpec::new("only", OptionKind::Strings),
    ];

    fn error(text: &str) -> String {
        Configuration::parse(text, "f.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_configuration_lists_methods_in_order_with_priorities_and_options() {
        let text = "# two\n[[method]]\nname = \"scale\"\npriority = -3\n[method.options]\n\
                    factor = 0x10\nmethod = \"Answer::Get\"\nonly = [\"a\", \"b\"]\n\n\
                    [[method]]\nname = \"offset\"\nenabled = false\n";
        let config = Configuration::parse(text, "f.toml").unwrap();
        let [scale, offset] = config.methods() else {
            panic!("two entries: {config:?}")
        };
        assert_eq!(
            (scale.name.as_str(), scale.at, scale.priority, scale.enabled),
            ("scale", Position { line: 3, column: 8 }, Some(-3), true)
        );
        scale.options.checked("scale", &SPECS).unwrap();
        assert_eq!(scale.options.integer("factor"), Some(16));
        assert_eq!(scale.options.string("method"), Some("Answer::Get"));
        assert_eq!(
            scale.options.strings("only"),
            Some(&["a".to_owned(), "b".to_owned()][..])
        );
        assert_eq!(scale.options.boolean("factor"), None, "not a boolean");
        assert_eq!((offset.name.as_str(), offset.enabled), ("offset", false));
        assert!(offset.options.is_empty());
    }

    #[test]
    fn malformed_text_is_an_error_at_its_line_and_column() {
        assert_eq!(
            error("[[method]]\nname = \"scale\npriority = 1\n")
                .split(':')
                .take(3)
                .collect::<Vec<_>>(),
            ["f.toml", "2", "14"],
            "{}",
            error("[[method]]\nname = \"scale\npriority = 1\n")
        );
        assert!(error("[[method]\n").starts_with("f.toml:1:"));
    }

    #[test]
    fn the_manager_table_says_what_to_do_with_ready_to_run_code() {
        let parsed = |text: &str| Configuration::parse(text, "f.toml");
        assert_eq!(parsed("").unwrap().ready_to_run(), None);
        let keep = parsed("[manager]\nready_to_run = \"keep\"\n").unwrap();
        assert_eq!(keep.ready_to_run(), Some(ReadyToRun::Keep));
        let disable = parsed("[manager]\nready_to_run = \"disable\"\n").unwrap();
        assert_eq!(disable.ready_to_run(), Some(ReadyToRun::Disable));
        assert_eq!(
            error("[manager]\nready_to_run = \"Keep\"\n"),
            "f.toml:2:16: ready_to_run is \"keep\" or \"disable\", not \"Keep\""
        );
        assert_eq!(
            error("[manager]\nready_to_run = true\n"),
            "f.toml:2:16: `ready_to_run` must be a string, not a boolean"
        );
        assert_eq!(
            error("[manager]\nrejit = 1\n"),
            "f.toml:2:1: unknown key `rejit` in [manager] (expected ready_to_run or show_il)"
        );
        assert_eq!(
            error("manager = 1\n"),
            "f.toml:1:11: `manager` must be a table, written [manager]"
        );
    }

    #[test]
    fn the_manager_table_selects_the_methods_whose_il_is_shown() {
        let parsed = |text: &str| Configuration::parse(text, "f.toml").unwrap();
        assert!(parsed("").show_il().is_empty());
        let shown = parsed("[manager]\nshow_il = [\"A.B::C\", \"D::*\"]\n");
        let texts: Vec<String> = shown.show_il().iter().map(ToString::to_string).collect();
        assert_eq!(texts, ["A.B::C", "D::*"]);
        assert_eq!(
            error("[manager]\nshow_il = \"A::B\"\n"),
            "f.toml:2:11: `show_il` must be an array of selectors (strings), not a string"
        );
        assert_eq!(
            error("[manager]\nshow_il = [\"A::B\", 3]\n"),
            "f.toml:2:20: show_il item 2: a selector is a string, not an integer"
        );
        assert!(
            error("[manager]\nshow_il = [\"A::B\",\n  \"nothing\"]\n")
                .starts_with("f.toml:3:3: show_il item 2: "),
            "{}",
            error("[manager]\nshow_il = [\"A::B\",\n  \"nothing\"]\n")
        );
    }

    #[test]
    fn keys_and_types_outside_the_format_are_errors_where_they_are() {
        assert_eq!(
            error("methods = 1\n"),
            "f.toml:1:1: unknown key `methods` (expected [manager] or [[method]])"
        );
        assert_eq!(
            error("method = 1\n"),
            "f.toml:1:10: `method` must be an array of tables, written [[method]]"
        );
        assert_eq!(
            error("[[method]]\nname = \"a\"\nprio = 1\n"),
            "f.toml:3:1: unknown key `prio` in [[method]] (expected name, priority, enabled, \
             options or library)"
        );
        assert_eq!(
            error("[[method]]\nname = 3\n"),
            "f.toml:2:8: `name` must be a string, not an integer"
        );
        assert_eq!(
            error("[[method]]\nname = \"a\"\npriority = 4294967296\n"),
            "f.toml:3:12: priority 4294967296 is not a 32-bit integer"
        );
        assert!(
            error("[[method]]\npriority = 1\n")
                .starts_with("f.toml:1:1: a [[method]] without `name`"),
            "{}",
            error("[[method]]\npriority = 1\n")
        );
        assert_eq!(
            error("[[method]]\nname = \"a\"\n[[method]]\n  name = \"a\"\n"),
            "f.toml:4:10: instrumentation method \"a\" is listed twice (first at line 2, \
             column 8)"
        );
    }

    #[test]
    fn options_are_checked_against_what_the_method_declares() {
        let check = |options: &str| {
            let text = format!("[[method]]\nname = \"m\"\n[method.options]\n{options}\n");
            let config = Configuration::parse(&text, "f.toml").unwrap();
            config.methods()[0]
                .options
                .checked("m", &SPECS)
                .map(drop)
                .map_err(|e| e.to_string())
        };
        assert_eq!(check("factor = 2"), Ok(()));
        assert_eq!(
            check("fator = 2"),
            Err(
                "f.toml:4:1: instrumentation method \"m\" has no option `fator` (it takes \
                 factor, method, only)"
                    .to_owned()
            )
        );
        assert_eq!(
            check("factor = \"2\""),
            Err(
                "f.toml:4:10: option `factor` of \"m\" must be an integer, not a string".to_owned()
            )
        );
        assert_eq!(
            check("factor = 2.5"),
            Err("f.toml:4:10: option `factor` of \"m\" must be an integer, not a float".to_owned())
        );
        assert_eq!(
            check("only = [\"a\", 1]"),
            Err(
                "f.toml:4:8: option `only` of \"m\" must be an array of strings, not an array \
                 of other things than strings"
                    .to_owned()
            )
        );
        let none: [OptionSpec; 0] = [];
        let config =
            Configuration::parse("[[method]]\nname = \"m\"\noptions = { x = 1 }\n", "f").unwrap();
        assert_eq!(
            config.methods()[0]
                .options
                .checked("m", &none)
                .unwrap_err()
                .to_string(),
            "f:3:13: instrumentation method \"m\" has no option `x` (it takes none)"
        );
    }

    const TARGETS: [OptionSpec; 1] = [OptionSpec::new("targets", OptionKind::Selectors)];

    /// The options of a `[[method]]` "m" whose options are `options`, checked against
    /// [`TARGETS`].
    fn targets(options: &str) -> Result<Options, String> {
        let text = format!("[[method]]\nname = \"m\"\n[method.options]\n{options}\n");
        let config = Configuration::parse(&text, "f.toml").map_err(|e| e.to_string())?;
        config.methods()[0]
            .options
            .checked("m", &TARGETS)
            .map_err(|e| e.to_string())
    }

    fn selector(text: &str) -> Selector {
        Selector::parse(text).unwrap()
    }

    #[test]
    fn selectors_are_an_array_of_strings_each_a_selector() {
        let options = targets(
            "targets = [\"System.String::Concat(string, string)\", \"App.Outer/Inner::*\"]",
        )
        .unwrap();
        assert_eq!(
            options.selectors("targets"),
            Some(
                &[
                    selector("System.String::Concat(string,string)"),
                    selector("App.Outer/Inner::*")
                ][..]
            )
        );
        assert_eq!(options.strings("targets"), None, "read as selectors");
        assert_eq!(
            options.words(),
            ["targets=System.String::Concat(string,string),App.Outer/Inner::*"]
        );
        let empty = targets("targets = []").unwrap();
        assert_eq!(empty.selectors("targets"), Some(&[][..]));
    }

    #[test]
    fn selectors_may_be_one_string() {
        let options = targets("targets = \"App.Orders::Place\"").unwrap();
        assert_eq!(
            options.selectors("targets"),
            Some(&[selector("App.Orders::Place")][..])
        );
        assert_eq!(options.string("targets"), None);
        assert_eq!(options.selectors("other"), None);
    }

    #[test]
    fn a_malformed_selector_is_an_error_at_its_place_saying_what_is_wrong() {
        assert_eq!(
            targets("targets = [\"App.Orders::*\", \"App.Orders\"]").unwrap_err(),
            "f.toml:4:29: option `targets` of \"m\" (item 2): selector \"App.Orders\": not \
             TYPE::METHOD or TYPE::* (for example App.Orders::Place) (at character 11)"
        );
        assert_eq!(
            targets("targets = \"A::M(string,)\"").unwrap_err(),
            "f.toml:4:11: option `targets` of \"m\": selector \"A::M(string,)\": an empty \
             parameter type (nothing, or only a keyword or resolution scope) (at character 13)"
        );
        assert_eq!(
            targets("targets = [\n  \"A::*\",\n  \"A+B::C\",\n]").unwrap_err(),
            "f.toml:6:3: option `targets` of \"m\" (item 2): selector \"A+B::C\": nested \
             types are written Outer/Inner, not with `+` (at character 2)"
        );
    }

    #[test]
    fn selectors_that_are_not_strings_are_errors() {
        assert_eq!(
            targets("targets = 3").unwrap_err(),
            "f.toml:4:11: option `targets` of \"m\" must be a selector or an array of \
             selectors (strings), not an integer"
        );
        assert_eq!(
            targets("targets = [\"A::*\", 3]").unwrap_err(),
            "f.toml:4:11: option `targets` of \"m\" must be a selector or an array of \
             selectors (strings), not an array of other things than strings"
        );
        assert_eq!(
            targets("targets = { a = \"A::*\" }").unwrap_err(),
            "f.toml:4:11: option `targets` of \"m\" must be a selector or an array of \
             selectors (strings), not a table"
        );
    }

    #[test]
    fn selectors_as_words_are_separated_by_commas_outside_their_lists() {
        let words = [(
            "targets".to_owned(),
            "A::M(string,int32),B::*,C::D(List`1<a,b>)".to_owned(),
        )];
        let options = Options::from_words("request", "m", &TARGETS, &words).unwrap();
        assert_eq!(
            options.selectors("targets"),
            Some(
                &[
                    selector("A::M(string,int32)"),
                    selector("B::*"),
                    selector("C::D(List`1<a,b>)")
                ][..]
            )
        );
        assert_eq!(options.words(), [format!("targets={}", words[0].1)]);
        let bad = [("targets".to_owned(), "A::M,B".to_owned())];
        assert_eq!(
            Options::from_words("request", "m", &TARGETS, &bad)
                .unwrap_err()
                .to_string(),
            "request: option `targets` of \"m\" (item 2): selector \"B\": not TYPE::METHOD or \
             TYPE::* (for example App.Orders::Place) (at character 2)"
        );
    }

    #[test]
    fn positions_count_characters_not_bytes() {
        let text =
            "# é\n[[method]]\nname = \"é\"\n[method.options]\n\"méthode\" = 1\nfactor = \"ü\"\n";
        let config = Configuration::parse(text, "f.toml").unwrap();
        let options = &config.methods()[0].options;
        assert_eq!(
            options.checked("é", &SPECS).unwrap_err().at,
            Some(Position { line: 5, column: 1 })
        );
        assert_eq!(
            options.invalid("factor", "must be positive").to_string(),
            "f.toml:6:10: option `factor`: must be positive"
        );
        // The name's column counts the é before the quote as one.
        let text = "[[method]]\nname = \"é\" ; x = 1\n";
        assert_eq!(
            error(text).split(':').take(3).collect::<Vec<_>>(),
            ["f.toml", "2", "12"],
            "{}",
            error(text)
        );
    }

    #[test]
    fn an_unreadable_file_is_an_error_without_a_position() {
        let missing = std::path::Path::new("/nonexistent/ilrewrite.toml");
        let e = Configuration::read(missing).unwrap_err();
        assert_eq!(e.at, None);
        assert!(
            e.to_string()
                .starts_with("/nonexistent/ilrewrite.toml: cannot read the configuration:"),
            "{e}"
        );
    }
}
