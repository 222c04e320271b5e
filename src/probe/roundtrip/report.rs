//! The round trip's budget block: [Red Hat controls]'s worst-case calculation term by
//! term, the verdict (how many screw-to-screw samples went beyond it, any
//! is a failure), where the distribution sits against the budget, and what
//! the messages did (lost, or "not measurable" when no message carried a
//! sequence number; refused by reason: malformed, field list differs,
//! unsupported, not ours by identity; and out of sequence: duplicate, stale,
//! foreign, restarts). Printed after `jitterlab run roundtrip` and rebuilt by
//! `jitterlab report` from the stored result's `detail` (the probe's
//! `Detail`, `probe::roundtrip`).
//!
//! Its round-trip table is here too ([`table`]); [`PARTS`] is what its
//! registration gives the reports: the block (which the HTML page shows
//! under "Round-trip budget"), the budget every plot of a cell draws with
//! the box chart of T1→T4 and T2→T3 against it ([Red Hat controls]
//! Figure 4), and the table.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::fmt::Write as _;

use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::roundtrip::{BudgetBands, BudgetVerdict, Loss};
use jitterlab_core::units::format_ns;
use jitterlab_core::verdict;

use crate::output::shown;
use crate::probe::parts::{KindTable, PlotLimit, ReportParts};

mod table;

/// What the reports print of a `roundtrip` run beyond its metrics.
pub(crate) const PARTS: ReportParts = ReportParts {
    summary: Some(budget_block),
    verdict_block: Some("Round-trip budget"),
    plot_limit: Some(&PlotLimit {
        of: budget_ns,
        metric: "screw-to-screw",
        boxes: (
            "round trip",
            &[
                ("T1→T4 screw-to-screw", "screw-to-screw"),
                ("T2→T3 controller", "controller"),
            ],
        ),
        caption: |budget, boxes| {
            format!("The round trip against its worst-case budget of {budget} (Red Hat and Intel, Figure 4): {boxes}; no sample may lie right of the budget line.")
        },
    }),
    tables: &[KindTable {
        name: "roundtrip",
        help: "[Red Hat controls]: screw to screw against the worst-case budget, T2→T3, jitter and execution time per roundtrip cell",
        applies: table::any_roundtrip,
        build: table::roundtrip,
        none: |run| {
            format!(
                "no round-trip table: no cell of run {} ran the roundtrip probe",
                run.id
            )
        },
    }],
    ..ReportParts::NONE
};

/// The worst-case budget a roundtrip result checked its samples against.
fn budget_ns(r: &RunResult) -> Option<u64> {
    let v: BudgetVerdict =
        serde_json::from_value(r.detail.as_ref()?.get("budget")?.clone()).ok()?;
    Some(v.budget_ns)
}

/// The budget block of a roundtrip result, if it is one.
pub fn budget_block(r: &RunResult) -> Option<String> {
    if r.probe != ProbeKind::Roundtrip {
        return None;
    }
    let d = r.detail.as_ref()?;
    let v: BudgetVerdict = serde_json::from_value(d.get("budget")?.clone()).ok()?;
    let text = |k: &str| d.get(k).and_then(|x| x.as_str()).unwrap_or("");
    let mut o = String::new();
    let _ = writeln!(
        o,
        "budget: the worst case of the asynchronous loops (Red Hat and Intel)"
    );
    let _ = writeln!(o, "  {}", shown(text("budget_terms")));
    let _ = writeln!(o, "  {}", shown(text("budget_formula")));
    let pct = |ns: Option<i64>| match ns {
        Some(ns) if v.budget_ns > 0 => {
            format!("{:.1} %", ns as f64 * 100.0 / v.budget_ns as f64)
        }
        _ => "-".into(),
    };
    let s2s = r
        .combined
        .as_ref()
        .or(r.threads.first().map(|t| &t.metrics))
        .and_then(|m| m.get("screw-to-screw"));
    let verdict = if v.held() { "held" } else { "FAILED" };
    // No sample is no verdict: not measured, with why (or, for a role
    // that cannot measure it, where it is measured).
    if let Some(why) = verdict::unmeasurable(r, "screw-to-screw") {
        let _ = writeln!(o, "  round trips: not measured here: {why}");
    } else if v.samples == 0 {
        let _ = writeln!(
            o,
            "  0 round trips: the budget of {} is NOT MEASURED: {}",
            format_ns(v.budget_ns as i64),
            shown(&verdict::no_sample_reason(r, "screw-to-screw"))
        );
    } else {
        let _ = writeln!(
            o,
            "  {} round trips, {} beyond the budget of {} ({verdict}); median {}, p99 {}, max {} of the budget",
            v.samples,
            v.over,
            format_ns(v.budget_ns as i64),
            pct(s2s.and_then(|m| m.p50)),
            pct(s2s.and_then(|m| m.p99)),
            pct(s2s.and_then(|m| m.max)),
        );
    }
    let labels = BudgetBands::labels();
    let mut head = String::from("  where they fall:");
    let mut counts = String::from("                  ");
    for (l, c) in labels.iter().zip(v.bands.counts) {
        let w = l.chars().count().max(c.to_string().len()) + 2;
        let _ = write!(head, "{l:>w$}");
        let _ = write!(counts, "{c:>w$}");
    }
    let _ = writeln!(o, "{head}\n{counts}");
    for (end, name) in [
        ("io", "from the controller"),
        ("controller", "from the I/O simulator"),
    ] {
        let Some(c) = d.get(end).filter(|c| !c.is_null()) else {
            continue;
        };
        o.push_str(&message_counts(name, c));
    }
    if let Some(c) = d.get("controller").filter(|c| !c.is_null()) {
        let late = c.get("late_outputs").and_then(|x| x.as_u64()).unwrap_or(0);
        let _ = writeln!(o, "  late outputs (the task overran its period): {late}");
    }
    if !v.over_samples.is_empty() {
        let _ = writeln!(
            o,
            "  beyond the budget (the first {}):",
            v.over_samples.len()
        );
        for s in &v.over_samples {
            let _ = writeln!(
                o,
                "    {:>12}  sample {:>9}  at {:>9}",
                format_ns(s.value_ns as i64),
                s.index,
                format_ns(s.since_start_ns as i64)
            );
        }
    }
    Some(o)
}

/// The counts of one end's received messages (`c`: the stored `detail.io`
/// or `detail.controller`): accepted, the loss (or why it is not
/// measurable), the refusals by reason, and the out-of-sequence line.
fn message_counts(name: &str, c: &serde_json::Value) -> String {
    let mut o = String::new();
    let n = |path: &[&str]| {
        path.iter()
            .try_fold(c, |x, k| x.get(k))
            .and_then(|x| x.as_u64())
            .unwrap_or(0)
    };
    let _ = writeln!(
        o,
        "  messages {name}: {} accepted, {}, {} malformed, {} field list differs, {} unsupported, {} not ours",
        n(&["rx", "accepted"]),
        Loss::of_end(c).text(),
        n(&["rx", "malformed"]),
        n(&["rx", "field_list_differs"]),
        n(&["rx", "unsupported"]),
        n(&["rx", "not_ours"]),
    );
    // Results stored before these were counted say nothing of them.
    if n(&["rx", "not_ours"]) > 0 && c.pointer("/rx/not_ours_publisher_id").is_some() {
        let _ = writeln!(
            o,
            "    not ours: {} another PublisherId, {} another WriterGroupId, {} without our DataSetWriterId",
            n(&["rx", "not_ours_publisher_id"]),
            n(&["rx", "not_ours_writer_group"]),
            n(&["rx", "not_ours_dataset_writer"]),
        );
    }
    // Results stored before these were counted say nothing of them.
    if c.get("sequence").and_then(|s| s.get("foreign")).is_some() {
        let _ = writeln!(
            o,
            "    out of sequence: {} duplicate, {} stale, {} foreign (another sender or a restart's first), {} restarts",
            n(&["sequence", "duplicates"]),
            n(&["sequence", "stale"]),
            n(&["sequence", "foreign"]),
            n(&["sequence", "restarts"]),
        );
    }
    o
}

#[cfg(test)]
mod counts_tests;
