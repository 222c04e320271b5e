//! The kinds' `run` flags, declared as data below the command line
//! (`crate::probe::flags::Flag`), turned into clap's arguments here, and
//! what clap matched turned back into the plain values the kind reads
//! (`FlagValues`). Each value kind gets the value parser `jitterlab run`
//! has always used for it ([`super::parse`]), so every bad value is refused
//! by clap with the same message naming the flag and its value name.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{value_parser, Arg, ArgAction, ArgMatches};
use jitterlab_core::result::ProbeKind;
use jitterlab_core::units::CpuList;

use super::parse;
use crate::probe::flags::{Flag, FlagValues, KindFlags, Value, ValueKind};

/// The subcommand `jitterlab run KIND` of a kind's declared flags.
pub fn command(kind: ProbeKind, flags: &KindFlags) -> clap::Command {
    let cmd = clap::Command::new(kind.name())
        .about(flags.about)
        .long_about(flags.long_about)
        .hide(flags.hidden);
    flags.flags.iter().fold(cmd, |cmd, f| cmd.arg(arg(f)))
}

/// A choice's value parser: its names, each with its help.
pub fn choice(
    names: &'static [&'static str],
    helps: &'static [&'static str],
) -> PossibleValuesParser {
    PossibleValuesParser::new(names.iter().enumerate().map(|(i, n)| {
        let value = PossibleValue::new(*n);
        match helps.get(i) {
            Some(h) => value.help(*h),
            None => value,
        }
    }))
}

/// The clap argument of one declared flag.
pub fn arg(f: &Flag) -> Arg {
    if matches!(f.kind, ValueKind::Trailing) {
        return Arg::new(f.id)
            .help(f.help.clone())
            .value_name(f.value_name)
            .last(true)
            .action(ArgAction::Append)
            .value_parser(value_parser!(String));
    }
    let mut a = Arg::new(f.id)
        .long(f.long.clone())
        .help(f.help.clone())
        .hide(f.hidden);
    if let Some(text) = &f.long_help {
        a = a.long_help(text.clone());
    }
    // Without a value name, clap's derive named a value by its field.
    if let Some(name) = f.value_name {
        a = a.value_name(name);
    } else if !matches!(f.kind, ValueKind::Switch) {
        a = a.value_name(f.id.to_uppercase());
    }
    a = match f.kind {
        ValueKind::Switch => a.action(ArgAction::SetTrue),
        ValueKind::Time => a.value_parser(parse::duration),
        ValueKind::Period => a.value_parser(parse::period),
        ValueKind::Window => a.value_parser(parse::window),
        ValueKind::Size => a.value_parser(parse::memory),
        ValueKind::Count(bound) => a.value_parser(move |s: &str| parse::at_most(s, bound)),
        ValueKind::Int(lo, hi) => a.value_parser(value_parser!(i64).range(lo..=hi)),
        ValueKind::Unsigned => a.value_parser(value_parser!(u64)),
        ValueKind::Cpu => a.value_parser(value_parser!(usize)),
        ValueKind::CpuList => a.value_parser(parse::cpu_list),
        ValueKind::Choice { names, helps } => a.value_parser(choice(names, helps)),
        ValueKind::Text => a.value_parser(value_parser!(String)),
        ValueKind::Checked(check) => a.value_parser(move |s: &str| check(s).map(|()| s.to_owned())),
        ValueKind::TextList => a
            .value_parser(value_parser!(String))
            .value_delimiter(',')
            .action(ArgAction::Append),
        ValueKind::Path => a.value_parser(value_parser!(PathBuf)),
        ValueKind::Trailing => unreachable!("made above"),
    };
    if !matches!(f.kind, ValueKind::Switch | ValueKind::TextList) {
        a = a.action(ArgAction::Set);
    }
    if f.hyphen_values {
        a = match f.kind {
            ValueKind::Int(..) => a.allow_negative_numbers(true),
            _ => a.allow_hyphen_values(true),
        };
    }
    if let Some(d) = &f.default {
        a = a.default_value(d.clone());
    }
    if let Some(h) = f.heading {
        a = a.help_heading(h);
    }
    if let Some(var) = f.env {
        a = a.env(var);
    }
    if !f.conflicts.is_empty() {
        a = a.conflicts_with_all(f.conflicts);
    }
    a
}

/// The values clap matched for `flags` (each declared in the command the
/// matches are of).
pub fn values(flags: &[Flag], m: &ArgMatches) -> FlagValues {
    let mut out = FlagValues::new();
    for f in flags {
        let id = f.id;
        let value = match f.kind {
            ValueKind::Switch => Some(Value::Bool(m.get_flag(id))),
            ValueKind::Time
            | ValueKind::Period
            | ValueKind::Window
            | ValueKind::Size
            | ValueKind::Count(_)
            | ValueKind::Unsigned => m.get_one::<u64>(id).copied().map(Value::U64),
            ValueKind::Int(..) => m.get_one::<i64>(id).copied().map(Value::I64),
            ValueKind::Cpu => m.get_one::<usize>(id).copied().map(Value::Usize),
            ValueKind::CpuList => m.get_one::<CpuList>(id).cloned().map(Value::Cpus),
            ValueKind::Choice { .. } | ValueKind::Text | ValueKind::Checked(_) => {
                m.get_one::<String>(id).cloned().map(Value::Text)
            }
            ValueKind::TextList => m
                .get_many::<String>(id)
                .map(|texts| Value::Texts(texts.cloned().collect())),
            ValueKind::Path => m.get_one::<PathBuf>(id).cloned().map(Value::Path),
            ValueKind::Trailing => m
                .get_many::<String>(id)
                .map(|words| Value::Texts(words.cloned().collect())),
        };
        if let Some(v) = value {
            out.set(id, v);
        }
    }
    out
}

/// The values of `args` (the subcommand's name first) for a kind's
/// flags, as `jitterlab run` parses them: for the kinds' own tests.
#[cfg(test)]
pub fn parse_run(
    kind: ProbeKind,
    flags: &KindFlags,
    args: &[&str],
) -> Result<FlagValues, clap::Error> {
    let m = command(kind, flags).try_get_matches_from(args)?;
    Ok(values(&flags.flags, &m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::limits;

    fn flags() -> KindFlags {
        KindFlags {
            about: "Time a token takes",
            long_about: None,
            hidden: false,
            flags: vec![
                Flag::new("wait", ValueKind::Time, "How long"),
                Flag::new("count", ValueKind::Count(&limits::CYCLES), "How many").default("3"),
                Flag::new("cpus", ValueKind::CpuList, "Where"),
                Flag::new("fast", ValueKind::Switch, "Hurry"),
                Flag::new("prio", ValueKind::Int(-5, 5), "Nice").value_name("PRIO"),
            ],
        }
    }

    fn parse(args: &[&str]) -> Result<FlagValues, clap::Error> {
        let argv: Vec<&str> = std::iter::once("ctxswitch")
            .chain(args.iter().copied())
            .collect();
        parse_run(ProbeKind::Ctxswitch, &flags(), &argv)
    }

    #[test]
    fn a_subcommand_is_named_by_its_kind_and_helped_by_its_declarations() {
        let cmd = command(ProbeKind::Ctxswitch, &flags());
        assert_eq!(cmd.get_name(), "ctxswitch");
        assert_eq!(
            cmd.get_about().map(|a| a.to_string()).as_deref(),
            Some("Time a token takes")
        );
        assert_eq!(cmd.get_long_about(), None);
        let v = parse(&["--wait", "2ms", "--cpus", "1-2", "--prio", "-3", "--fast"]).unwrap();
        assert_eq!(v.opt_u64("wait"), Some(2_000_000));
        assert_eq!(v.u64("count"), 3, "the default");
        assert_eq!(v.opt_cpus("cpus"), Some(CpuList::parse("1-2").unwrap()));
        assert_eq!(v.opt_i64("prio"), Some(-3));
        assert!(v.switch("fast"));
    }

    #[test]
    fn a_bad_value_is_refused_by_its_kinds_parser_naming_the_flag() {
        let e = parse(&["--wait", "2 parsecs"]).unwrap_err();
        assert_eq!(
            e.to_string().lines().next().unwrap(),
            "error: invalid value '2 parsecs' for '--wait <TIME>': \"2 parsecs\" has unknown unit \"parsecs\"; use one of ns, us, ms, s, m, h, d"
        );
        let e = parse(&["--prio", "9"]).unwrap_err();
        assert_eq!(
            e.to_string().lines().next().unwrap(),
            "error: invalid value '9' for '--prio <PRIO>': 9 is not in -5..=5"
        );
    }
}
