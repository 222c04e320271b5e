//! A kind's `run` flags as data: what each flag is ([`Flag`]: its name,
//! value name, help, default, [`ValueKind`], heading, and the flags it
//! conflicts with), the subcommand they make ([`KindFlags`]),
//! and the values a command line gave them ([`FlagValues`]), a plain typed
//! map the kind reads.
//!
//! Nothing here knows the command-line parser: `src/cli/flags.rs` turns
//! each [`Flag`] into its argument (the value parser of its
//! [`ValueKind`], with the messages `jitterlab run` has always given) and
//! what it matched back into [`FlagValues`]. So a kind's flags sit in its
//! folder as data, and only `src/cli*` imports the parser.
//!
//! A kind's own parameters are not declared again here: [`key_flags`]
//! derives their flags from its core key table (`--io-period` from
//! `io_period`; the value kind from its `ValueType`; help and default from
//! the key), so the spec's keys, the stored JSON, the key reference and
//! the flags read one declaration. What is not a parameter (the CPUs, the
//! period, a role, an interface, a URL) a kind declares with
//! [`Flag::new`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use jitterlab_core::limits::Count;
use jitterlab_core::spec::{Key, ParamTable, ValueType};
use jitterlab_core::units::{format_duration_exact, parse_duration, parse_size, CpuList};

/// What a flag's value is, and so how the command line parses it.
#[derive(Debug, Clone, Copy)]
pub enum ValueKind {
    /// A time of the unit grammar, at most 7d ([`Value::U64`], ns).
    Time,
    /// A period or interval: a time of at least 10us, or 0.
    Period,
    /// A window: a time of at least 1ms, or 0.
    Window,
    /// A size of the size grammar, at most 4GiB ([`Value::U64`], bytes).
    Size,
    /// A count up to the bound's maximum ([`Value::U64`]); one below its
    /// minimum is left to the kind's check, which names the flag.
    Count(&'static Count),
    /// An integer from the first to the second bound ([`Value::I64`]).
    Int(i64, i64),
    /// Any unsigned 64-bit integer ([`Value::U64`]).
    Unsigned,
    /// One CPU number ([`Value::Usize`]).
    Cpu,
    /// A CPU list in the kernel's format, not empty ([`Value::Cpus`]).
    CpuList,
    /// One of the names ([`Value::Text`]), each with its help (the same
    /// order; none when empty).
    Choice {
        /// The names it may be.
        names: &'static [&'static str],
        /// Each name's help.
        helps: &'static [&'static str],
    },
    /// Any text ([`Value::Text`]).
    Text,
    /// A text the function accepts ([`Value::Text`]); its error is the
    /// message of a refused value (the kind reads the text with the same
    /// function again).
    Checked(fn(&str) -> Result<(), String>),
    /// Texts separated by commas, the flag given once or more
    /// ([`Value::Texts`]).
    TextList,
    /// A file ([`Value::Path`]).
    Path,
    /// Given or not ([`Value::Bool`]); takes no value.
    Switch,
    /// The words after `--`, the last thing on the line
    /// ([`Value::Texts`]).
    Trailing,
}

/// One flag of a `jitterlab run KIND` subcommand.
#[derive(Debug, Clone)]
pub struct Flag {
    /// The name its value goes by in [`FlagValues`] and in conflicts
    /// (`working_set`).
    pub id: &'static str,
    /// Its name without `--` (`working-set`).
    pub long: String,
    /// The name of its value in help and messages (`TIME`).
    pub value_name: Option<&'static str>,
    /// Its help, one paragraph.
    pub help: String,
    /// More help, for `--help` and the man page only.
    pub long_help: Option<String>,
    /// What its value is.
    pub kind: ValueKind,
    /// The value it has when not given, as the command line writes it
    /// (help shows it: `[default: 1ms]`).
    pub default: Option<String>,
    /// The heading it is listed under in help, when not the default one.
    pub heading: Option<&'static str>,
    /// Left out of help (internal flags).
    pub hidden: bool,
    /// The environment variable it is read from when not given.
    pub env: Option<&'static str>,
    /// True when its value may start with `-` (a negative number, or a
    /// time the parser refuses with its own message).
    pub hyphen_values: bool,
    /// The flags it cannot be given with (their ids).
    pub conflicts: &'static [&'static str],
}

impl Flag {
    /// `--ID` (its `_` written `-`), of `kind`, with `help`; the value name
    /// of its kind (`TIME`, `SIZE`, `N`, `CPU`, `LIST`, `FILE`), none of
    /// the others.
    pub fn new(id: &'static str, kind: ValueKind, help: impl Into<String>) -> Flag {
        let value_name = match kind {
            ValueKind::Time | ValueKind::Period | ValueKind::Window => Some("TIME"),
            ValueKind::Size => Some("SIZE"),
            ValueKind::Count(_) | ValueKind::Int(..) | ValueKind::Unsigned => Some("N"),
            ValueKind::Cpu => Some("CPU"),
            ValueKind::CpuList | ValueKind::TextList => Some("LIST"),
            ValueKind::Path => Some("FILE"),
            ValueKind::Choice { .. }
            | ValueKind::Text
            | ValueKind::Checked(_)
            | ValueKind::Switch => None,
            ValueKind::Trailing => Some("COMMAND"),
        };
        let hyphen_values = matches!(
            kind,
            ValueKind::Time
                | ValueKind::Period
                | ValueKind::Window
                | ValueKind::Count(_)
                | ValueKind::Int(..)
        );
        Flag {
            id,
            long: id.replace('_', "-"),
            value_name,
            help: help.into(),
            long_help: None,
            kind,
            default: None,
            heading: None,
            hidden: false,
            env: None,
            hyphen_values,
            conflicts: &[],
        }
    }

    /// Named `--LONG` instead.
    pub fn long(mut self, long: &str) -> Flag {
        self.long = long.into();
        self
    }

    /// Its value called `name` in help and messages.
    pub fn value_name(mut self, name: &'static str) -> Flag {
        self.value_name = Some(name);
        self
    }

    /// With more help for `--help`.
    pub fn long_help(mut self, text: impl Into<String>) -> Flag {
        self.long_help = Some(text.into());
        self
    }

    /// `value` when not given.
    pub fn default(mut self, value: impl Into<String>) -> Flag {
        self.default = Some(value.into());
        self
    }

    /// Listed under `heading`.
    pub fn heading(mut self, heading: &'static str) -> Flag {
        self.heading = Some(heading);
        self
    }

    /// Left out of help.
    pub fn hidden(mut self) -> Flag {
        self.hidden = true;
        self
    }

    /// Read from `var` when not given.
    pub fn env(mut self, var: &'static str) -> Flag {
        self.env = Some(var);
        self
    }

    /// Whether a value may start with `-`.
    pub fn hyphen_values(mut self, yes: bool) -> Flag {
        self.hyphen_values = yes;
        self
    }

    /// Not with `ids`.
    pub fn conflicts(mut self, ids: &'static [&'static str]) -> Flag {
        self.conflicts = ids;
        self
    }
}

/// The flags of one `jitterlab run KIND` subcommand, and its help.
#[derive(Debug, Clone)]
pub struct KindFlags {
    /// One paragraph: the summary `jitterlab run --help` lists.
    pub about: &'static str,
    /// More, for `jitterlab run KIND --help`.
    pub long_about: Option<&'static str>,
    /// Left out of `jitterlab run --help` (the test-only probe).
    pub hidden: bool,
    /// Its flags, in the order help lists them.
    pub flags: Vec<Flag>,
}

/// One flag's value as the command line gave it (or its default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A time (ns), a size (bytes) or a count.
    U64(u64),
    /// An integer of a range.
    I64(i64),
    /// A CPU.
    Usize(usize),
    /// A switch.
    Bool(bool),
    /// A text, or a choice's name.
    Text(String),
    /// A CPU list.
    Cpus(CpuList),
    /// A file.
    Path(PathBuf),
    /// Words.
    Texts(Vec<String>),
}

/// The values a command line gave a subcommand's flags, by id: a flag not
/// given and without a default has none, a switch is always there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlagValues(BTreeMap<String, Value>);

impl FlagValues {
    /// No value yet.
    pub fn new() -> FlagValues {
        FlagValues::default()
    }

    /// Sets `id`'s value.
    pub fn set(&mut self, id: &str, value: Value) {
        self.0.insert(id.into(), value);
    }

    /// `id`'s value, if any.
    pub fn get(&self, id: &str) -> Option<&Value> {
        self.0.get(id)
    }

    fn wrong(id: &str, v: &Value, want: &str) -> ! {
        panic!("flag {id} holds {v:?}, not {want}: its declaration and its reader disagree")
    }

    /// A time, size or count, if given.
    pub fn opt_u64(&self, id: &str) -> Option<u64> {
        self.get(id).map(|v| match v {
            Value::U64(n) => *n,
            v => Self::wrong(id, v, "a number"),
        })
    }

    /// A time, size or count with a default.
    pub fn u64(&self, id: &str) -> u64 {
        self.opt_u64(id)
            .unwrap_or_else(|| panic!("flag {id} has no value nor default"))
    }

    /// An integer, if given.
    pub fn opt_i64(&self, id: &str) -> Option<i64> {
        self.get(id).map(|v| match v {
            Value::I64(n) => *n,
            v => Self::wrong(id, v, "an integer"),
        })
    }

    /// An integer with a default.
    pub fn i64(&self, id: &str) -> i64 {
        self.opt_i64(id)
            .unwrap_or_else(|| panic!("flag {id} has no value nor default"))
    }

    /// A CPU, if given.
    pub fn opt_usize(&self, id: &str) -> Option<usize> {
        self.get(id).map(|v| match v {
            Value::Usize(n) => *n,
            v => Self::wrong(id, v, "a CPU"),
        })
    }

    /// Whether a switch was given.
    pub fn switch(&self, id: &str) -> bool {
        match self.get(id) {
            Some(Value::Bool(b)) => *b,
            None => false,
            Some(v) => Self::wrong(id, v, "a switch"),
        }
    }

    /// A text or a choice, if given.
    pub fn opt_text(&self, id: &str) -> Option<String> {
        self.get(id).map(|v| match v {
            Value::Text(t) => t.clone(),
            v => Self::wrong(id, v, "a text"),
        })
    }

    /// A text or a choice with a default.
    pub fn text(&self, id: &str) -> String {
        self.opt_text(id)
            .unwrap_or_else(|| panic!("flag {id} has no value nor default"))
    }

    /// A CPU list, if given.
    pub fn opt_cpus(&self, id: &str) -> Option<CpuList> {
        self.get(id).map(|v| match v {
            Value::Cpus(l) => l.clone(),
            v => Self::wrong(id, v, "a CPU list"),
        })
    }

    /// Texts or words, if given.
    pub fn opt_texts(&self, id: &str) -> Option<Vec<String>> {
        self.get(id).map(|v| match v {
            Value::Texts(t) => t.clone(),
            v => Self::wrong(id, v, "texts"),
        })
    }

    /// Words, none if not given.
    pub fn texts(&self, id: &str) -> Vec<String> {
        match self.get(id) {
            Some(Value::Texts(t)) => t.clone(),
            None => Vec::new(),
            Some(v) => Self::wrong(id, v, "words"),
        }
    }

    /// A file, if given.
    pub fn opt_path(&self, id: &str) -> Option<PathBuf> {
        self.get(id).map(|v| match v {
            Value::Path(p) => p.clone(),
            v => Self::wrong(id, v, "a file"),
        })
    }
}

/// The text of a default time (`1ms` for 1 000 000 ns), as help shows it
/// and the parser reads it back: the constants of
/// `jitterlab_core::defaults` stay the one place a default is written
/// (a size's default is its key's, `256KiB`).
pub fn time_text(ns: u64) -> String {
    format_duration_exact(ns)
}

/// The help of a key's flag: the key's help with a capital, and a default that is no value (`the first neighbour CPU`,
/// `none`) said in brackets (a value default help shows by itself).
fn key_help(key: &Key, default_is_value: bool) -> String {
    let mut chars = key.help.chars();
    let mut help: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    if !default_is_value && !matches!(key.ty, ValueType::Bool) && key.default != "none" {
        help.push_str(&format!(" [default: {}]", key.default));
    }
    help
}

/// The flag of one of a kind's keys (see [`key_flags`]); `None` for a key
/// a spec only has.
pub fn key_flag(key: &'static Key) -> Option<Flag> {
    if key.flag.spec_only {
        return None;
    }
    let (kind, default_is_value) = match key.ty {
        ValueType::Duration | ValueType::PositiveDuration => {
            (ValueKind::Time, parse_duration(key.default).is_ok())
        }
        ValueType::Period => (ValueKind::Period, parse_duration(key.default).is_ok()),
        ValueType::Memory => (ValueKind::Size, parse_size(key.default).is_ok()),
        ValueType::Count(bound) => (ValueKind::Count(bound), key.default.parse::<u64>().is_ok()),
        ValueType::Int(lo, hi) => (ValueKind::Int(lo, hi), key.default.parse::<i64>().is_ok()),
        ValueType::Id => (
            ValueKind::Int(0, i64::from(u32::MAX)),
            key.default.parse::<i64>().is_ok(),
        ),
        ValueType::Bool => (ValueKind::Switch, false),
        ValueType::Cpu(_) => (ValueKind::Cpu, false),
        ValueType::Choice { names, .. } => (
            ValueKind::Choice {
                names,
                helps: key.flag.value_helps,
            },
            names.contains(&key.default),
        ),
        ValueType::Text => (ValueKind::Text, false),
        ValueType::TextList => (ValueKind::Trailing, false),
    };
    let mut flag = Flag::new(key.name, kind, key_help(key, default_is_value));
    if let ValueKind::Int(lo, _) = kind {
        // `-1` is no value of a key that is never negative: the command
        // line takes it for a flag, as it always has.
        flag = flag.hyphen_values(lo < 0);
    }
    if default_is_value {
        flag = flag.default(key.default);
    }
    if let Some(name) = key.flag.name {
        flag = flag.long(name);
    }
    if let Some(name) = key.flag.value_name {
        flag = flag.value_name(name);
    }
    if let Some(text) = key.flag.long_help {
        flag = flag.long_help(text);
    }
    Some(flag)
}

/// The flag of `table`'s key `name` (a mistake in the kind's flags if it
/// has none).
pub fn flag_of(table: &'static ParamTable, name: &str) -> Flag {
    table
        .key(name)
        .and_then(key_flag)
        .unwrap_or_else(|| panic!("{name} is no key with a flag of its kind's table"))
}

/// The flags of a kind's own keys, in its table's order: each named by its
/// key, parsed by its value type, helped and defaulted by it.
pub fn key_flags(table: &'static ParamTable) -> Vec<Flag> {
    table.keys.iter().filter_map(key_flag).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::spec::KeyFlag;

    const PERIOD_KEY: Key = Key {
        name: "io_period",
        ty: ValueType::Period,
        default: "500us",
        help: "the I/O simulator's publish and apply period",
        flag: KeyFlag::DERIVED,
    };

    const CPU_KEY: Key = Key {
        name: "io_cpu",
        ty: ValueType::Cpu("1"),
        default: "the first neighbour CPU",
        help: "the I/O simulator's CPU",
        flag: KeyFlag {
            value_name: Some("IO_CPU"),
            ..KeyFlag::DERIVED
        },
    };

    #[test]
    fn a_key_gives_its_flag_its_name_value_kind_help_and_default() {
        let f = key_flag(&PERIOD_KEY).unwrap();
        assert_eq!(f.id, "io_period");
        assert_eq!(f.long, "io-period");
        assert!(matches!(f.kind, ValueKind::Period), "{:?}", f.kind);
        assert_eq!(f.value_name, Some("TIME"));
        assert_eq!(f.help, "The I/O simulator's publish and apply period");
        assert_eq!(f.default.as_deref(), Some("500us"));
        assert!(f.hyphen_values);
    }

    #[test]
    fn a_default_that_is_no_value_is_said_in_the_help() {
        let f = key_flag(&CPU_KEY).unwrap();
        assert!(matches!(f.kind, ValueKind::Cpu), "{:?}", f.kind);
        assert_eq!(f.value_name, Some("IO_CPU"));
        assert_eq!(f.default, None);
        assert_eq!(
            f.help,
            "The I/O simulator's CPU [default: the first neighbour CPU]"
        );
    }

    #[test]
    fn a_spec_only_key_has_no_flag() {
        const KEY: Key = Key {
            flag: KeyFlag::SPEC_ONLY,
            ..PERIOD_KEY
        };
        assert!(key_flag(&KEY).is_none());
    }

    #[test]
    fn values_are_read_as_declared_and_a_switch_not_given_is_off() {
        let mut v = FlagValues::new();
        v.set("period", Value::U64(1_000_000));
        v.set("cpu", Value::Usize(3));
        v.set("spin", Value::Bool(true));
        assert_eq!(v.u64("period"), 1_000_000);
        assert_eq!(v.opt_u64("cycles"), None);
        assert_eq!(v.opt_usize("cpu"), Some(3));
        assert!(v.switch("spin"));
        assert!(!v.switch("strict"));
    }

    #[test]
    #[should_panic(expected = "flag cpu holds Usize(3), not a number")]
    fn reading_a_value_as_another_kind_is_a_mistake_in_the_declarations() {
        let mut v = FlagValues::new();
        v.set("cpu", Value::Usize(3));
        v.opt_u64("cpu");
    }
}
