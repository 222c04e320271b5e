//! The users' reference of a `[[probe]]` table's keys, written from the
//! kinds' key tables ([`super::param`]) so it cannot drift from what the
//! spec checker takes: per kind, the shared keys it takes with its default
//! period, then its own keys with their type, default and help.
//! `jitterlab __generate-docs DIR` writes it as `DIR/spec-keys.md`; the
//! repository keeps it as `docs/spec-keys.md`, and a test fails when the
//! two differ.

use std::fmt::Write as _;

use super::param::{ValueType, COMMON_KEYS, SCOPE_KEYS};
use super::plan::short;
use crate::probe::kind::ProbeKind;

/// The name `__generate-docs` writes the reference under.
pub const FILE_NAME: &str = "spec-keys.md";

/// How a value of `ty` is written, for the reference's type column.
fn type_text(ty: ValueType) -> String {
    let range = |lo: String, hi: i64| match hi {
        i64::MAX => format!("integer, {lo} or more"),
        _ => format!("integer, {lo} to {hi}"),
    };
    match ty {
        ValueType::Duration => "time".into(),
        ValueType::PositiveDuration => "time, more than 0".into(),
        ValueType::Period => "period".into(),
        ValueType::Memory => "size".into(),
        ValueType::Count(c) => match i64::try_from(c.max) {
            Ok(hi) => range(c.min.to_string(), hi),
            Err(_) => range(c.min.to_string(), i64::MAX),
        },
        ValueType::Int(lo, hi) => range(lo.to_string(), hi),
        ValueType::Id => "process or thread id".into(),
        ValueType::Bool => "`true` or `false`".into(),
        ValueType::Cpu(_) => "one CPU".into(),
        ValueType::Choice { names, .. } => {
            let names: Vec<String> = names.iter().map(|n| format!("`\"{n}\"`")).collect();
            names.join(" or ")
        }
        ValueType::Text => "text".into(),
        ValueType::TextList => "list of texts".into(),
    }
}

/// The reference, as Markdown.
pub fn key_reference() -> String {
    let mut out = String::new();
    let quoted = |keys: &[&str]| -> String {
        let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
        keys.join(", ")
    };
    out.push_str("# The keys of a `[[probe]]` table\n\n");
    out.push_str(
        "Written by `jitterlab __generate-docs DIR` from each probe kind's key table \
         (the table the spec checker reads); do not edit it by hand.\n\n",
    );
    let _ = writeln!(
        out,
        "Every `[[probe]]` table may hold {}; {} place it in a bench.\n",
        quoted(COMMON_KEYS),
        quoted(SCOPE_KEYS)
    );
    for &kind in ProbeKind::ALL {
        let d = kind.descriptor();
        if !d.listed {
            continue;
        }
        let t = d.params;
        let _ = writeln!(out, "## kind = \"{}\"\n\n{}\n", d.name, d.summary);
        if !t.shared.is_empty() {
            let _ = write!(out, "Also takes {}", quoted(t.shared));
            if t.shared.contains(&"period") && t.default_period_ns > 0 {
                let _ = write!(out, " (period default {})", short(t.default_period_ns));
            }
            out.push_str(".\n\n");
        }
        if t.keys.is_empty() {
            out.push_str("No key of its own.\n\n");
            continue;
        }
        out.push_str("| key | type | default | what it sets |\n");
        out.push_str("|---|---|---|---|\n");
        for k in t.keys {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                k.name,
                type_text(k.ty),
                k.default,
                k.help
            );
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len() + 1);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_key_reference_is_the_one_the_tables_write() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/spec-keys.md");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == key_reference(),
            "docs/spec-keys.md differs from the key tables: run `jitterlab __generate-docs DIR` \
             and copy DIR/{FILE_NAME} to docs/"
        );
    }

    #[test]
    fn the_reference_gives_each_key_its_type_default_and_help() {
        let r = key_reference();
        assert!(r.contains(
            "## kind = \"netcycle\"\n\n\
             a POWERLINK managing node polling N controlled nodes: SoC jitter, held cycles, stack load\n\n\
             Also takes `period`, `max_latency`, `max_jitter` (period default 500us).\n\n\
             | key | type | default | what it sets |\n|---|---|---|---|\n\
             | `cns` | integer, 1 to 239 | 3 | controlled nodes polled, node ids 1..=N (1-239) |\n"
        ), "{r}");
        assert!(r.contains(
            "| `response_timeout` | time, more than 0 | 100us | how long the managing node waits for one PRes before it counts it missed (\"held\" depends on it; every summary prints it); shorter than the period |\n"
        ), "{r}");
        assert!(r.contains(
            "| `max_late_cycles` | integer, 0 or more | 0 | late cycles a run may have and still hold its cycle time |\n"
        ), "{r}");
        assert!(
            r.contains(
                "| `transport` | `\"udp\"` or `\"eth\"` | udp | the transport of the UADP messages |\n"
            ),
            "{r}"
        );
        assert!(r.contains("## kind = \"wakeup\"\n\n"), "{r}");
        assert!(!r.contains("kind = \"sleep\""), "{r}");
        // A kind whose period has no default says none.
        assert!(r.contains("## kind = \"observe\"\n\na running task's cycles from kernel tracepoints, and what delayed its late ones\n\nAlso takes `period`, `max_latency`, `max_jitter`, `max_exec`.\n\n"), "{r}");
        assert!(r.ends_with("| `explain` | `true` or `false` | false | store and print what delayed each late cycle |\n"), "{r}");
    }
}
