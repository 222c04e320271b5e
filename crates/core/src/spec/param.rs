//! The toolkit a probe kind declares its parameters with, once: its key
//! table ([`Key`]: TOML name, value type, default, help), its parameter
//! type (a [`Params`] with one [`Params::validate`] for its cross-key
//! rules), and its [`ParamTable`] (the table, the keys every probe shares
//! that it takes, its default period, and how its parameters are checked
//! from a `[[probe]]` table and read from the stored JSON).
//!
//! Everything that lists keys derives from the tables: which keys a
//! `[[probe]]` table may hold and the unknown-key message
//! ([`probe_table_keys`]), "X applies only to kind = …", the type a key's
//! value must have. A kind's own parameters are named only in its own
//! folder; [`ProbeParams`](super::ProbeParams) holds them as a [`Params`]
//! trait object and [`ProbeParams::get`](super::ProbeParams::get) gives
//! them back typed.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Range, RangeInclusive};

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use toml::Spanned;

use super::check::{Check, Checker};
use super::probe::ProbeParams;
use super::raw::RawProbe;
use crate::limits::{self, Count};
use crate::probe::kind::ProbeKind;

/// What a key's value is, and so how it is written in TOML and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A time (`"500us"`), at most [`limits::MAX_TIME_NS`].
    Duration,
    /// A time longer than 0.
    PositiveDuration,
    /// A period: longer than 0, within [`limits::check_period`].
    Period,
    /// A size (`"256KiB"`), at most [`limits::MAX_MEMORY_BYTES`].
    Memory,
    /// A count within its limits.
    Count(&'static Count),
    /// An integer from the first to the second bound.
    Int(i64, i64),
    /// A process or thread id, 1 or more.
    Id,
    /// `true` or `false`.
    Bool,
    /// One online CPU (`"1"`); the text is the example messages give.
    Cpu(&'static str),
    /// One of the names; `what` names the choice in messages (`transport`).
    Choice {
        /// What the value is called in messages.
        what: &'static str,
        /// The names it may be.
        names: &'static [&'static str],
    },
    /// Any text.
    Text,
    /// A list of texts.
    TextList,
}

/// The TOML type a value of a [`ValueType`] has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TomlType {
    String,
    Integer,
    Boolean,
    Strings,
}

impl ValueType {
    fn toml(self) -> TomlType {
        match self {
            ValueType::Count(_) | ValueType::Int(..) | ValueType::Id => TomlType::Integer,
            ValueType::Bool => TomlType::Boolean,
            ValueType::TextList => TomlType::Strings,
            _ => TomlType::String,
        }
    }
}

/// One key of a `[[probe]]` table a kind takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// Its TOML name (`response_timeout`).
    pub name: &'static str,
    /// What its value is.
    pub ty: ValueType,
    /// Its default, as docs print it (`"100us"`, `none`).
    pub default: &'static str,
    /// One line saying what it sets: the key reference prints it, and its
    /// flag's help is it, capitalized, with its default when that is not a
    /// value (`[default: the first neighbour CPU]`).
    pub help: &'static str,
    /// What its `jitterlab run KIND` flag needs beyond the key.
    pub flag: KeyFlag,
}

/// How a [`Key`]'s command-line flag differs from what the key gives it:
/// the flag is `--` and the key's name with `-` for `_`, its value name
/// follows the key's value type (`TIME`, `SIZE`, `N`, `CPU`), its help is
/// the key's. [`KeyFlag::DERIVED`] changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFlag {
    /// The flag's name when not the key's (without `--`).
    pub name: Option<&'static str>,
    /// The value name `--help` shows when not the value type's.
    pub value_name: Option<&'static str>,
    /// More help, which only `--help` and the man page show.
    pub long_help: Option<&'static str>,
    /// The help of each name of a choice, in its order (none when empty).
    pub value_helps: &'static [&'static str],
    /// True for a key a spec has but `jitterlab run` has no flag of.
    pub spec_only: bool,
}

impl KeyFlag {
    /// The flag the key gives, as it gives it.
    pub const DERIVED: KeyFlag = KeyFlag {
        name: None,
        value_name: None,
        long_help: None,
        value_helps: &[],
        spec_only: false,
    };

    /// No flag: the key is a spec's only.
    pub const SPEC_ONLY: KeyFlag = KeyFlag {
        spec_only: true,
        ..KeyFlag::DERIVED
    };
}

/// A broken rule between a kind's parameters: the key it is about, the
/// keys whose line to point at when that key is not written (in order),
/// and what is wrong, in each front door's words: the spec's (keys) and
/// the command line's (flags). The rule itself is written once, in the
/// kind's [`Params::validate`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamError {
    /// The key the message is about.
    pub key: &'static str,
    /// Keys whose line an error points at when `key` is not written.
    pub near: &'static [&'static str],
    /// What is wrong and what would be right, in the spec's words.
    pub message: String,
    /// The same in the command line's words (its flags, its times);
    /// `None`: the command line says `message`.
    pub flag_message: Option<String>,
    /// True when a spec is refused by the rule only if its table writes
    /// `key`: a default that breaks it is left to the probe, as a bench
    /// has always run it. The command line gives every flag a value, so
    /// it applies the rule always.
    pub when_written: bool,
}

impl ParamError {
    /// What the command line says: [`Self::flag_message`], else
    /// [`Self::message`].
    pub fn flag_text(&self) -> &str {
        self.flag_message.as_deref().unwrap_or(&self.message)
    }
}

/// One kind's parameters: the trait object a [`ProbeParams`] holds. The
/// per-kind facts the rest of jitterlab asks of a probe's parameters are
/// methods with defaults, so a kind says only what differs.
pub trait Params: ParamsBase + fmt::Debug + Send + Sync {
    /// The kind these parameters belong to.
    fn kind(&self) -> ProbeKind;

    /// Its entries of the stored JSON, in the order they are written
    /// (`scan_ns` and `working_set_bytes` go where every probe has them).
    fn wire(&self) -> Vec<(&'static str, Ordered)>;

    /// Its cross-key rules, given the probe's period: the one check the
    /// spec checker and the command line both call.
    fn validate(&self, _period_ns: u64) -> Result<(), ParamError> {
        Ok(())
    }

    /// The "% over" threshold when none is given, ns; `None`: the
    /// default of every probe.
    fn default_threshold(&self, _period_ns: u64) -> Option<u64> {
        None
    }

    /// The limit on the main latency given `max_latency`, ns.
    fn latency_limit(&self, _period_ns: u64, max_latency_ns: Option<u64>) -> Option<u64> {
        max_latency_ns
    }

    /// `(working set, scan)` of a probe that runs the calibrated scan.
    fn scan(&self) -> Option<(u64, u64)> {
        None
    }

    /// Why the probe cannot run in its period on its wire (`N/A (wire)`).
    fn wire_unfit(&self, _period_ns: u64) -> Option<String> {
        None
    }

    /// The sample count the probe ends by, when it ends by one.
    fn samples(&self) -> Option<u64> {
        None
    }

    /// Why the probe cannot measure in a container with these parameters
    /// although its kind can (its kind's reason is its descriptor's
    /// [`InContainer`](crate::probe::InContainer)): a bench skips its
    /// container cells with it, a run in a container refuses it.
    fn not_in_container(&self) -> Option<String> {
        None
    }

    /// True when it measures on every probe CPU of its configuration.
    fn every_probe_cpu(&self) -> bool {
        self.kind().descriptor().every_probe_cpu
    }
}

/// What every [`Params`] has without writing it: cloning, comparing and
/// downcasting the trait object.
pub trait ParamsBase: Any {
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn Params>;
    /// True when `other` holds equal parameters of the same type.
    fn eq_dyn(&self, other: &dyn Params) -> bool;
    /// Itself, to downcast.
    fn as_any(&self) -> &dyn Any;
    /// Itself, to downcast mutably.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Params + Clone + PartialEq> ParamsBase for T {
    fn clone_box(&self) -> Box<dyn Params> {
        Box::new(self.clone())
    }

    fn eq_dyn(&self, other: &dyn Params) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// How a kind's parameters are declared: the one record the spec checker,
/// the stored-JSON reader and the key listings read.
#[derive(Clone, Copy)]
pub struct ParamTable {
    /// The keys only this kind's table takes, in the order listings give.
    pub keys: &'static [Key],
    /// The keys of every probe's model it takes: some of [`SHARED_KEYS`].
    pub shared: &'static [&'static str],
    /// Its period when the table gives none, ns.
    pub default_period_ns: u64,
    /// The keys its parameters write in the stored JSON.
    pub wire_keys: &'static [&'static str],
    /// Its parameters with every default.
    pub defaults: fn(ProbeKind) -> ProbeParams,
    /// Its parameters from a checked table, whose period is given.
    pub check: fn(&KindTable, u64) -> Check<ProbeParams>,
    /// Its parameters from the stored JSON object (its keys are removed).
    pub read: fn(
        ProbeKind,
        &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<ProbeParams, String>,
}

impl fmt::Debug for ParamTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&str> = self.keys.iter().map(|k| k.name).collect();
        f.debug_struct("ParamTable")
            .field("keys", &keys)
            .field("shared", &self.shared)
            .finish()
    }
}

impl PartialEq for ParamTable {
    fn eq(&self, other: &ParamTable) -> bool {
        std::ptr::eq(self.keys, other.keys) && self.shared == other.shared
    }
}

impl Eq for ParamTable {}

impl ParamTable {
    /// True when a `[[probe]]` table of this kind may hold `key`.
    pub fn accepts(&self, key: &str) -> bool {
        COMMON_KEYS.contains(&key)
            || SCOPE_KEYS.contains(&key)
            || self.shared.contains(&key)
            || self.keys.iter().any(|k| k.name == key)
    }

    /// One of its own keys, by name.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The bounds of one of its integer keys, which the command line's
    /// flag of it takes too (`--cns`: 1..=239).
    pub fn int_range(&self, name: &str) -> RangeInclusive<i64> {
        match self.key(name).map(|k| k.ty) {
            Some(ValueType::Int(lo, hi)) => lo..=hi,
            ty => panic!("{name} is not an integer key of its kind's table: {ty:?}"),
        }
    }
}

/// The keys every `[[probe]]` table may hold, whatever its kind.
pub const COMMON_KEYS: &[&str] = &["kind", "name", "threshold", "window", "outliers"];

/// The keys of every probe's model that only some kinds take.
pub const SHARED_KEYS: &[&str] = &["period", "max_latency", "max_jitter", "max_exec"];

/// The keys that place a probe in a bench ([`super::ProbeScope`]).
pub const SCOPE_KEYS: &[&str] = &["scenarios", "duration"];

/// The keys a `[[probe]]` table of `kind` may hold, in the order listings
/// give them: `kind`, `name`, `period`, its own, `threshold`, `window`,
/// `outliers`, the limits, then the scope.
fn kind_keys(kind: ProbeKind, out: &mut Vec<&'static str>) {
    let t = kind.descriptor().params;
    let mut push = |k: &'static str| {
        if !out.contains(&k) {
            out.push(k);
        }
    };
    push("kind");
    push("name");
    if t.shared.contains(&"period") {
        push("period");
    }
    for k in t.keys {
        push(k.name);
    }
    for k in ["threshold", "window", "outliers"] {
        push(k);
    }
    for k in &SHARED_KEYS[1..] {
        if t.shared.contains(k) {
            push(k);
        }
    }
}

/// Every key a `[[probe]]` table may hold: each kind's in registry order,
/// then the scope's.
pub fn probe_table_keys() -> Vec<&'static str> {
    let mut out = Vec::new();
    for &kind in ProbeKind::ALL {
        kind_keys(kind, &mut out);
    }
    out.extend_from_slice(SCOPE_KEYS);
    out
}

/// The type of the value of a key of a `[[probe]]` table.
fn key_type(key: &str) -> Option<TomlType> {
    match key {
        "outliers" => return Some(TomlType::Integer),
        "scenarios" => return Some(TomlType::Strings),
        k if COMMON_KEYS.contains(&k) || SHARED_KEYS.contains(&k) || k == "duration" => {
            return Some(TomlType::String)
        }
        _ => {}
    }
    ProbeKind::ALL
        .iter()
        .find_map(|k| k.descriptor().params.key(key))
        .map(|k| k.ty.toml())
}

// ---------------------------------------------------------------------------
// A `[[probe]]` table as written: its values, each with its span.

/// A TOML value as written, every value keeping its span.
#[derive(Debug, Clone)]
pub(crate) enum RawValue {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Spanned<RawValue>>),
    Table,
}

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<RawValue, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a TOML value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawValue, E> {
                Ok(RawValue::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RawValue, E> {
                Ok(RawValue::Str(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawValue, E> {
                Ok(RawValue::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawValue, E> {
                Ok(RawValue::Int(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawValue, E> {
                Ok(RawValue::Float(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawValue, E> {
                Ok(RawValue::Bool(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<RawValue, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = a.next_element::<Spanned<RawValue>>()? {
                    out.push(v);
                }
                Ok(RawValue::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<RawValue, A::Error> {
                while a.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
                Ok(RawValue::Table)
            }
        }
        d.deserialize_any(V)
    }
}

impl RawValue {
    /// How a type error names it, as serde does.
    fn unexpected(&self) -> String {
        match self {
            RawValue::Str(s) => format!("string {s:?}"),
            RawValue::Int(n) => format!("integer `{n}`"),
            RawValue::Float(x) => {
                let t = x.to_string();
                match t.contains(['.', 'e', 'i', 'N']) {
                    true => format!("floating point `{t}`"),
                    false => format!("floating point `{t}.0`"),
                }
            }
            RawValue::Bool(b) => format!("boolean `{b}`"),
            RawValue::Array(_) => "array".into(),
            RawValue::Table => "table".into(),
        }
    }
}

/// A `[[probe]]` table's keys, as written.
pub(crate) type RawTable = BTreeMap<String, Spanned<RawValue>>;

/// A value of `key` as written, in the type of its key.
fn typed(ck: &Checker, path: &str, v: &Spanned<RawValue>, ty: TomlType) -> Check<()> {
    let expected = match (ty, v.get_ref()) {
        (TomlType::String, RawValue::Str(_))
        | (TomlType::Integer, RawValue::Int(_))
        | (TomlType::Boolean, RawValue::Bool(_)) => return Ok(()),
        (TomlType::Strings, RawValue::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                typed(ck, &format!("{path}[{i}]"), item, TomlType::String)?;
            }
            return Ok(());
        }
        (TomlType::String, _) => "a string",
        (TomlType::Integer, _) => "an integer",
        (TomlType::Boolean, _) => "a boolean",
        (TomlType::Strings, _) => "an array",
    };
    Err(ck.err(
        v.span(),
        path,
        format!(
            "invalid type: {}, expected {expected}",
            v.get_ref().unexpected()
        ),
    ))
}

/// The `[[probe]]` tables as written, checked for unknown keys and for
/// the type of every value, each split into the keys every probe's model
/// has and the kind's own.
pub(super) fn raw_probes(
    ck: &Checker,
    tables: &[Spanned<RawTable>],
) -> Check<Vec<Spanned<RawProbe>>> {
    let mut out = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let mut entries: Vec<(&String, &Spanned<RawValue>)> = t.get_ref().iter().collect();
        entries.sort_by_key(|(_, v)| v.span().start);
        for (key, v) in entries {
            let path = format!("probe[{i}].{key}");
            let Some(ty) = key_type(key) else {
                let keys: Vec<String> = probe_table_keys()
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect();
                return Err(ck.err(
                    v.span(),
                    &path,
                    format!("unknown key `{key}`, expected one of {}", keys.join(", ")),
                ));
            };
            typed(ck, &path, v, ty)?;
        }
        out.push(Spanned::new(t.span(), RawProbe::of(t.get_ref().clone())));
    }
    Ok(out)
}

/// A text value (checked by [`raw_probes`]).
pub(super) fn text(v: &Spanned<RawValue>) -> Spanned<String> {
    match v.get_ref() {
        RawValue::Str(s) => Spanned::new(v.span(), s.clone()),
        _ => Spanned::new(v.span(), String::new()),
    }
}

/// An integer value (checked by [`raw_probes`]).
pub(super) fn integer(v: &Spanned<RawValue>) -> Spanned<i64> {
    match v.get_ref() {
        RawValue::Int(n) => Spanned::new(v.span(), *n),
        _ => Spanned::new(v.span(), 0),
    }
}

/// A list of texts (checked by [`raw_probes`]).
pub(super) fn texts(v: &Spanned<RawValue>) -> Spanned<Vec<Spanned<String>>> {
    match v.get_ref() {
        RawValue::Array(items) => Spanned::new(v.span(), items.iter().map(text).collect()),
        _ => Spanned::new(v.span(), Vec::new()),
    }
}

// ---------------------------------------------------------------------------
// A kind's view of its table.

/// One `[[probe]]` table as its kind's check reads it: its own keys'
/// values, checked by their declared types, and errors pointing at them;
/// or the same keys' values given already parsed (the command line's,
/// [`KindTable::given`]), so a kind's parameters are read from its keys in
/// one place, its [`ParamTable::check`].
pub struct KindTable<'a> {
    pub(super) ck: &'a Checker<'a>,
    pub(super) kind: ProbeKind,
    pub(super) table: &'static ParamTable,
    pub(super) raw: &'a RawProbe,
    pub(super) prefix: String,
    pub(super) span: Range<usize>,
    pub(super) given: Option<&'a GivenValues>,
}

/// A value of one of a kind's keys given already parsed and within its
/// limits (a flag's): a time, size, count, id or integer as a number, a
/// choice or text as its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    /// A time (ns), size (bytes), count, id or non-negative integer.
    Num(u64),
    /// `true` or `false`.
    Bool(bool),
    /// One CPU.
    Cpu(usize),
    /// A choice's name or a text.
    Text(String),
    /// A list of texts.
    Texts(Vec<String>),
}

/// The given values of a kind's keys, by key name; a key not given has
/// none (its check's default applies).
pub type GivenValues = BTreeMap<&'static str, Given>;

/// A value of one of a kind's keys, checked.
enum Checked {
    Num(u64),
    Bool(bool),
    Cpu(usize),
    Choice(&'static str),
    Text(String),
    Texts(Vec<String>),
}

impl KindTable<'_> {
    /// `kind`'s parameters from `values`, read by its table's
    /// [`ParamTable::check`] with the probe's `period_ns`, as a spec's
    /// are: what the command line gives its key flags. A value of the
    /// wrong type, or a choice not among the key's names, is no value of
    /// the key (the command line parsed it by the key's type); a check
    /// that refuses its values says so in the spec's words, with no file.
    pub fn given(
        kind: ProbeKind,
        values: &GivenValues,
        period_ns: u64,
    ) -> Result<ProbeParams, String> {
        let online = crate::units::CpuList::default();
        let ctx = super::SpecContext {
            online: &online,
            builtins: &[],
        };
        let ck = Checker {
            file: "",
            text: "",
            ctx: &ctx,
            warnings: Vec::new(),
        };
        let raw = RawProbe::of(RawTable::new());
        let table = kind.descriptor().params;
        let t = KindTable {
            ck: &ck,
            kind,
            table,
            raw: &raw,
            prefix: String::new(),
            span: 0..0,
            given: Some(values),
        };
        (table.check)(&t, period_ns).map_err(|e| e.message)
    }

    /// A given value of `key` as its check reads it.
    fn given_value(&self, key: &Key, v: &Given) -> Option<Checked> {
        Some(match (key.ty, v) {
            (ValueType::Bool, Given::Bool(b)) => Checked::Bool(*b),
            (ValueType::Cpu(_), Given::Cpu(c)) => Checked::Cpu(*c),
            (ValueType::Choice { names, .. }, Given::Text(t)) => {
                Checked::Choice(names.iter().find(|n| **n == t.as_str())?)
            }
            (ValueType::Text, Given::Text(t)) => Checked::Text(t.clone()),
            (ValueType::TextList, Given::Texts(t)) => Checked::Texts(t.clone()),
            (
                ValueType::Duration
                | ValueType::PositiveDuration
                | ValueType::Period
                | ValueType::Memory
                | ValueType::Count(_)
                | ValueType::Int(..)
                | ValueType::Id,
                Given::Num(n),
            ) => Checked::Num(*n),
            _ => return None,
        })
    }

    /// How a message names `key` to its reader: as a spec writes it
    /// (`pid`), or, for values the command line gave, as its flag
    /// (`--pid`, `--io-period`; a list of texts, the trailing `-- COMMAND`).
    pub fn named(&self, key: &str) -> String {
        if self.given.is_none() {
            return key.to_string();
        }
        let k = self.table.key(key);
        match k.map(|k| (k.ty, k.flag.name)) {
            Some((ValueType::TextList, _)) => {
                let value = k.and_then(|k| k.flag.value_name).unwrap_or("COMMAND");
                format!("-- {value}")
            }
            Some((_, Some(name))) => format!("--{name}"),
            _ => format!("--{}", key.replace('_', "-")),
        }
    }

    /// The dotted path of one of its keys (`probe[0].cns`).
    pub fn path(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }

    /// The span of `key`'s value, when written.
    fn span_of(&self, key: &str) -> Option<Range<usize>> {
        match key {
            "period" => self.raw.period.as_ref().map(|v| v.span()),
            k => self.raw.own.get(k).map(|v| v.span()),
        }
    }

    /// An error about `key`, at its line (the table's when not written).
    pub fn err(&self, key: &str, message: impl Into<String>) -> crate::spec::SpecError {
        let span = self.span_of(key).unwrap_or(self.span.clone());
        self.ck.err(span, &self.path(key), message)
    }

    /// A broken rule between parameters, at the line of its key or of the
    /// first of its `near` keys written.
    pub fn rule(&self, e: ParamError) -> crate::spec::SpecError {
        let span = std::iter::once(e.key)
            .chain(e.near.iter().copied())
            .find_map(|k| self.span_of(k))
            .unwrap_or(self.span.clone());
        self.ck.err(span, &self.path(e.key), e.message)
    }

    /// True when `key` is written.
    pub fn has(&self, key: &str) -> bool {
        self.raw.own.contains_key(key)
    }

    fn value(&self, name: &str) -> Check<Option<Checked>> {
        let key = self
            .table
            .key(name)
            .unwrap_or_else(|| panic!("{name} is not a key of its kind's table"));
        if let Some(given) = self.given {
            return Ok(given.get(name).and_then(|v| self.given_value(key, v)));
        }
        let Some(v) = self.raw.own.get(name) else {
            return Ok(None);
        };
        let path = self.path(name);
        let ck = self.ck;
        let checked = match key.ty {
            ValueType::Duration => Checked::Num(ck.duration(&text(v), &path)?),
            ValueType::PositiveDuration => {
                Checked::Num(ck.positive_duration(&text(v), &path, name)?)
            }
            ValueType::Period => {
                let ns = ck.positive_duration(&text(v), &path, name)?;
                Checked::Num(limits::check_period(ns).map_err(|e| ck.err(v.span(), &path, e))?)
            }
            ValueType::Memory => Checked::Num(ck.memory(&text(v), &path)?),
            ValueType::Count(bound) => Checked::Num(ck.count(&integer(v), &path, bound)?),
            ValueType::Int(lo, hi) => Checked::Num(ck.int(&integer(v), &path, lo, hi)? as u64),
            ValueType::Id => {
                let n = *integer(v).get_ref();
                match u32::try_from(n).ok().filter(|&n| n > 0) {
                    Some(n) => Checked::Num(u64::from(n)),
                    None => {
                        return Err(ck.err(
                            v.span(),
                            &path,
                            format!("{name} must be a process or thread id (1 or more)"),
                        ))
                    }
                }
            }
            ValueType::Bool => Checked::Bool(matches!(v.get_ref(), RawValue::Bool(true))),
            ValueType::Cpu(example) => match ck.cpus(&text(v), &path)? {
                Some(list) if list.len() == 1 => Checked::Cpu(list[0]),
                _ => {
                    return Err(ck.err(
                        v.span(),
                        &path,
                        format!("give exactly one CPU, e.g. {name} = \"{example}\""),
                    ))
                }
            },
            ValueType::Choice { what, names } => {
                let t = text(v).into_inner();
                match names.iter().find(|n| **n == t) {
                    Some(n) => Checked::Choice(n),
                    None => {
                        let mut use_ = names.join(", ");
                        if let Some((init, last)) = names.split_last().map(|(l, i)| (i, l)) {
                            use_ = match init.is_empty() {
                                true => last.to_string(),
                                false => format!("{} or {last}", init.join(", ")),
                            };
                        }
                        return Err(ck.err(
                            v.span(),
                            &path,
                            format!("unknown {what} {t:?}; use {use_}"),
                        ));
                    }
                }
            }
            ValueType::Text => Checked::Text(text(v).into_inner()),
            ValueType::TextList => Checked::Texts(
                texts(v)
                    .into_inner()
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect(),
            ),
        };
        Ok(Some(checked))
    }

    /// A time, size, count or id.
    pub fn num(&self, key: &str) -> Check<Option<u64>> {
        Ok(match self.value(key)? {
            Some(Checked::Num(n)) => Some(n),
            _ => None,
        })
    }

    /// A `true` or `false`.
    pub fn flag(&self, key: &str) -> Check<Option<bool>> {
        Ok(match self.value(key)? {
            Some(Checked::Bool(b)) => Some(b),
            _ => None,
        })
    }

    /// One online CPU.
    pub fn cpu(&self, key: &str) -> Check<Option<usize>> {
        Ok(match self.value(key)? {
            Some(Checked::Cpu(c)) => Some(c),
            _ => None,
        })
    }

    /// One of a choice's names.
    pub fn choice(&self, key: &str) -> Check<Option<&'static str>> {
        Ok(match self.value(key)? {
            Some(Checked::Choice(c)) => Some(c),
            _ => None,
        })
    }

    /// A text.
    pub fn text(&self, key: &str) -> Check<Option<String>> {
        Ok(match self.value(key)? {
            Some(Checked::Text(t)) => Some(t),
            _ => None,
        })
    }

    /// A list of texts.
    pub fn texts(&self, key: &str) -> Check<Option<Vec<String>>> {
        Ok(match self.value(key)? {
            Some(Checked::Texts(t)) => Some(t),
            _ => None,
        })
    }
}

// ---------------------------------------------------------------------------
// The stored JSON, in order.

/// A JSON value that keeps its objects' key order, so a kind's object is
/// written as its type's fields are declared (`serde_json` here sorts a
/// map's keys).
#[derive(Debug, Clone, PartialEq)]
pub enum Ordered {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// Any other number.
    F64(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Ordered>),
    /// An object, in the order it was written.
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    /// `value` as its `Serialize` writes it, keys in order.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Ordered {
        let text = serde_json::to_string(value).expect("parameters serialize to JSON");
        serde_json::from_str(&text).expect("JSON written here reads back")
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Ordered::Null => s.serialize_none(),
            Ordered::Bool(b) => s.serialize_bool(*b),
            Ordered::U64(n) => s.serialize_u64(*n),
            Ordered::I64(n) => s.serialize_i64(*n),
            Ordered::F64(x) => s.serialize_f64(*x),
            Ordered::Str(t) => s.serialize_str(t),
            Ordered::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Ordered::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Ordered, E> {
                Ok(Ordered::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Ordered, E> {
                Ok(Ordered::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Ordered, E> {
                Ok(Ordered::Bool(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Ordered, E> {
                Ok(Ordered::U64(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Ordered, E> {
                Ok(match u64::try_from(v) {
                    Ok(n) => Ordered::U64(n),
                    Err(_) => Ordered::I64(v),
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Ordered, E> {
                Ok(Ordered::F64(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Ordered, E> {
                Ok(Ordered::Str(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = a.next_element()? {
                    out.push(v);
                }
                Ok(Ordered::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Ordered>()? {
                    out.push((k, v));
                }
                Ok(Ordered::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Takes `key` from a stored probe object as a `T` (`T::default()` when
/// absent or null).
pub fn take<T: serde::de::DeserializeOwned + Default>(
    m: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<T, String> {
    match m.remove(key) {
        None | Some(serde_json::Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v).map_err(|e| format!("{key}: {e}")),
    }
}

// ---------------------------------------------------------------------------
// A kind that takes nothing of its own.

/// The parameters of a kind that takes only what every probe shares
/// (`wakeup`, `ctxswitch`, and any new kind without parameters of its
/// own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainParams(pub ProbeKind);

impl Params for PlainParams {
    fn kind(&self) -> ProbeKind {
        self.0
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        Vec::new()
    }
}

impl PlainParams {
    /// The param table of a kind with no key of its own, taking `shared`.
    pub const fn table(shared: &'static [&'static str]) -> ParamTable {
        ParamTable {
            keys: &[],
            shared,
            default_period_ns: crate::defaults::PERIOD_NS,
            wire_keys: &[],
            defaults: |kind| ProbeParams::new(PlainParams(kind)),
            check: |t, _| Ok(ProbeParams::new(PlainParams(t.kind()))),
            read: |kind, _| Ok(ProbeParams::new(PlainParams(kind))),
        }
    }
}

impl KindTable<'_> {
    /// The kind of the table.
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cyclic::CyclicParams;
    use crate::netcycle::NetcycleParams;

    #[test]
    fn a_key_two_kinds_take_has_one_type_and_no_kind_redeclares_a_shared_key() {
        let mut seen: Vec<(&str, ValueType)> = Vec::new();
        for &kind in ProbeKind::ALL {
            let t = kind.descriptor().params;
            for k in t.keys {
                assert!(
                    !COMMON_KEYS.contains(&k.name)
                        && !SHARED_KEYS.contains(&k.name)
                        && !SCOPE_KEYS.contains(&k.name),
                    "{} {}",
                    kind.name(),
                    k.name
                );
                match seen.iter().find(|(n, _)| *n == k.name) {
                    Some((_, ty)) => assert_eq!(*ty, k.ty, "{}", k.name),
                    None => seen.push((k.name, k.ty)),
                }
            }
            for s in t.shared {
                assert!(SHARED_KEYS.contains(s), "{} {s}", kind.name());
            }
        }
        assert_eq!(key_type("scan"), Some(TomlType::String));
        assert_eq!(key_type("cns"), Some(TomlType::Integer));
        assert_eq!(key_type("command"), Some(TomlType::Strings));
        assert_eq!(key_type("nosuch"), None);
    }

    #[test]
    fn ordered_json_keeps_a_kind_objects_field_order() {
        let n = NetcycleParams::default();
        let text = serde_json::to_string(&Ordered::of(&n)).unwrap();
        assert_eq!(text, serde_json::to_string(&n).unwrap());
        assert!(text.starts_with(r#"{"cns":3,"chaining":false,"#), "{text}");
    }

    #[test]
    fn params_compare_clone_and_downcast_by_their_type() {
        let a = ProbeParams::new(CyclicParams::default());
        let b = a.clone();
        assert_eq!(a, b);
        assert_ne!(a, ProbeParams::new(PlainParams(ProbeKind::Wakeup)));
        assert_ne!(
            a,
            ProbeParams::new(CyclicParams {
                scan_ns: 1,
                ..CyclicParams::default()
            })
        );
        assert_eq!(a.get::<CyclicParams>(), Some(&CyclicParams::default()));
        assert_eq!(a.get::<NetcycleParams>(), None);
        assert_eq!(a.kind(), ProbeKind::Cyclic);
        assert_eq!(
            ProbeParams::defaults(ProbeKind::Ctxswitch),
            ProbeParams::new(PlainParams(ProbeKind::Ctxswitch))
        );
    }

    #[test]
    fn validate_names_the_key_for_each_front_door_to_word() {
        let p = CyclicParams {
            scan_ns: 2_000_000,
            ..CyclicParams::default()
        };
        assert_eq!(
            p.validate(1_000_000),
            Err(ParamError {
                key: "scan",
                near: &["period"],
                message: "scan 2ms must be shorter than the period 1ms".into(),
                flag_message: Some(
                    "--scan 2ms is not shorter than --period 1ms; shorten the scan or lengthen the period".into()
                ),
                when_written: false,
            })
        );
        assert_eq!(p.validate(3_000_000), Ok(()));
        let n = NetcycleParams {
            cns: 3,
            out_bytes: 500,
            chaining: true,
            ..NetcycleParams::default()
        };
        assert_eq!(n.validate(1_000_000).map_err(|e| e.key), Err("out_bytes"));
    }
}
