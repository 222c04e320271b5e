//! The verdict at the top of a run's page: what a reader must know before
//! looking at any figure.
//!
//! In this order: how the run ended and the exit status it had (0: every
//! limit held and no cell failed; 1: a limit was exceeded or a cell failed —
//! the rule of `jitterlab run` and `jitterlab bench`); the pass/fail limits
//! of every cell; the round trip's worst-case budget, term by term, and
//! whether it held; whether the figures may be called real-time, and if
//! not which required default was missing; the configurations the machine
//! could not run, with the reason (N/A); and the cells that were
//! interrupted, failed or skipped. A verdict is words, never a colour:
//! `PASS`/`FAIL`, `held`/`FAILED`.

use std::fmt::Write as _;

use jitterlab_core::cell::{CellStatus, StoredCell, StoredRun};
use jitterlab_core::result::RunResult;

use crate::report::safe::escape;
use crate::report::safe::shown;
use crate::store::{RunKind, RunStatus};

/// Stored text, made safe for the page.
fn esc(s: &str) -> String {
    escape(&shown(s))
}

/// Exact microseconds with three decimals and the unit.
fn us(ns: u64) -> String {
    format!(
        "{} µs",
        crate::report::text::us(i64::try_from(ns).unwrap_or(i64::MAX))
    )
}

/// A cell's name with its repetition.
pub(super) fn cell_name(c: &StoredCell) -> String {
    format!("{} rep {}", c.key.name(), c.key.repetition)
}

/// True for a `jitterlab run` (one cell) rather than a bench.
pub(super) fn single(run: &StoredRun) -> bool {
    RunKind::parse(&run.kind) == Some(RunKind::Run) && run.cells.len() == 1
}

/// The exit status the run had, and why; `None` when it had none (still
/// running, or its process died before storing its result).
pub(super) fn exit_status(run: &StoredRun) -> (Option<u8>, String) {
    if RunStatus::parse(&run.status) == Some(RunStatus::Running) {
        return (None, "none yet: the run is still running".into());
    }
    if single(run)
        && run.cells[0]
            .result
            .as_ref()
            .is_none_or(|r| r.tool_version.is_empty())
    {
        return (
            None,
            "none recorded: the process ended before it stored its result (killed, or the machine lost power)".into(),
        );
    }
    let failed: Vec<String> = run
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Failed)
        .map(cell_name)
        .collect();
    let exceeded: Vec<String> = run
        .cells
        .iter()
        .filter(|c| c.result.as_ref().is_some_and(RunResult::failed))
        .map(cell_name)
        .collect();
    let mut why = Vec::new();
    if !exceeded.is_empty() {
        why.push(format!("a limit was exceeded in {}", exceeded.join(", ")));
    }
    if !failed.is_empty() {
        why.push(format!("failed: {}", failed.join(", ")));
    }
    if why.is_empty() {
        (Some(0), "every limit held and no cell failed".into())
    } else {
        (Some(1), why.join("; "))
    }
}

/// The limits of every cell as a table (none: a sentence).
fn limits(o: &mut String, run: &StoredRun) {
    let one = single(run);
    let rows: Vec<(String, &RunResult)> = run
        .cells
        .iter()
        .filter_map(|c| c.result.as_ref().map(|r| (cell_name(c), r)))
        .filter(|(_, r)| !r.limits.is_empty())
        .collect();
    if rows.is_empty() {
        o.push_str("<p>limits: none were set (<code>--max-latency</code>, <code>--max-jitter</code>, <code>--max-exec</code> or a spec's limits).</p>\n");
        return;
    }
    o.push_str("<table class=\"limits\">\n<caption>Limits</caption>\n<thead><tr>");
    if !one {
        o.push_str("<th>cell</th>");
    }
    o.push_str("<th>figure</th><th class=\"num\">observed</th><th class=\"num\">limit</th><th>verdict</th></tr></thead>\n<tbody>\n");
    for (name, r) in rows {
        for l in &r.limits {
            let what = match r.probe.metric(&l.metric) {
                Some(m) if m.signed => format!("max |{}|", l.metric),
                _ => format!("max {}", l.metric),
            };
            o.push_str("<tr>");
            if !one {
                let _ = write!(o, "<td>{}</td>", esc(&name));
            }
            let (class, word) = if l.exceeded {
                ("fail", "FAIL")
            } else {
                ("pass", "PASS")
            };
            let _ = writeln!(
                o,
                "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{class}\">{word}</td></tr>",
                esc(&what),
                us(l.observed_ns),
                us(l.limit_ns)
            );
        }
    }
    o.push_str("</tbody>\n</table>\n");
}

/// The budget block of every roundtrip cell, as the text report prints it.
fn budgets(o: &mut String, run: &StoredRun) {
    for c in &run.cells {
        let Some(b) = c
            .result
            .as_ref()
            .and_then(crate::report::roundtrip::budget_block)
        else {
            continue;
        };
        let _ = writeln!(
            o,
            "<h3>Round-trip budget: {}</h3>\n<pre class=\"budget\">{}</pre>",
            esc(&cell_name(c)),
            escape(&b)
        );
    }
}

/// Whether the figures are real-time, cell by cell where they differ.
fn realtime(o: &mut String, run: &StoredRun) {
    let measured: Vec<(&StoredCell, &RunResult)> = run
        .cells
        .iter()
        .filter_map(|c| c.result.as_ref().map(|r| (c, r)))
        .collect();
    if measured.is_empty() {
        o.push_str("<li>real-time: no cell measured anything</li>\n");
        return;
    }
    // Partial figures (from the windows of a killed process) kept no
    // record of the set-up.
    let known = |r: &RunResult| r.realtime.realtime || !r.realtime.defaults.is_empty();
    let not: Vec<&(&StoredCell, &RunResult)> = measured
        .iter()
        .filter(|(_, r)| known(r) && !r.realtime.realtime)
        .collect();
    let unknown = measured.iter().filter(|(_, r)| !known(r)).count();
    if not.is_empty() {
        let _ = writeln!(
            o,
            "<li>real-time: <strong>yes</strong> — every required real-time default held{}</li>",
            if unknown > 0 {
                format!(" ({unknown} cell(s) with partial figures recorded no set-up)")
            } else {
                String::new()
            }
        );
        return;
    }
    let _ = writeln!(
        o,
        "<li>real-time: <strong class=\"fail\">NO</strong> — these figures do not describe real-time behaviour:\n<ul>"
    );
    for (c, r) in not {
        let missing: Vec<String> = r
            .realtime
            .defaults
            .iter()
            .filter(|d| d.required && !d.applied)
            .map(|d| format!("{} (requested {}): {}", d.name, d.requested, d.detail))
            .collect();
        let prefix = if single(run) {
            String::new()
        } else {
            format!("{}: ", cell_name(c))
        };
        for m in missing {
            let _ = writeln!(o, "<li>{}{}</li>", esc(&prefix), esc(&m));
        }
    }
    o.push_str("</ul></li>\n");
}

/// The cells that did not simply complete.
fn cells(o: &mut String, run: &StoredRun) {
    for c in &run.cells {
        let why = match c.status {
            CellStatus::Completed => continue,
            CellStatus::Failed => c.context.failure.clone().unwrap_or_default(),
            CellStatus::Skipped => c.context.notes.join("; "),
            CellStatus::Interrupted => {
                if c.result.as_ref().is_some_and(|r| r.tool_version.is_empty()) {
                    "figures from its committed windows only".into()
                } else {
                    String::new()
                }
            }
            CellStatus::Pending | CellStatus::Running => String::new(),
        };
        let _ = write!(
            o,
            "<li>cell {}: <strong>{}</strong>",
            esc(&cell_name(c)),
            c.status.name()
        );
        if !why.is_empty() {
            let _ = write!(o, " — {}", esc(&why));
        }
        o.push_str("</li>\n");
    }
}

/// The cells whose noise fell short of what was asked, and those whose
/// stalls real-time throttling explains: a figure measured beside less
/// noise than planned, or stopped by the kernel's own limit, must say so
/// before it is read.
fn noise(o: &mut String, run: &StoredRun) {
    for c in &run.cells {
        for n in &c.context.neighbours {
            if let Some(l) = n.load.as_ref().filter(|l| l.short) {
                let _ = writeln!(
                    o,
                    "<li>cell {}: neighbour {} <strong>short of its load</strong> — {}</li>",
                    esc(&cell_name(c)),
                    esc(&n.name),
                    esc(&l.text())
                );
            }
        }
        if let Some(first) = c
            .context
            .throttling
            .as_ref()
            .and_then(|t| t.lines().into_iter().next())
        {
            let _ = writeln!(
                o,
                "<li>cell {}: stalls caused by <strong>RT throttling</strong> — {}</li>",
                esc(&cell_name(c)),
                esc(&first)
            );
        }
    }
}

/// The verdict of one run, an HTML fragment (see the module doc).
pub(super) fn verdict(run: &StoredRun) -> String {
    let mut o = String::from("<ul class=\"verdict\">\n");
    let (code, why) = exit_status(run);
    let _ = writeln!(o, "<li>status: <strong>{}</strong></li>", esc(&run.status));
    match code {
        Some(c) => {
            let class = if c == 0 { "pass" } else { "fail" };
            let _ = writeln!(
                o,
                "<li>exit status: <strong class=\"{class}\">{c}</strong> — {}</li>",
                esc(&why)
            );
        }
        None => {
            let _ = writeln!(o, "<li>exit status: {}</li>", esc(&why));
        }
    }
    realtime(&mut o, run);
    for (c, reason) in &run.unavailable {
        let _ = writeln!(
            o,
            "<li>configuration {}: <strong>N/A</strong> — {}</li>",
            esc(c),
            esc(reason)
        );
    }
    cells(&mut o, run);
    noise(&mut o, run);
    o.push_str("</ul>\n");
    limits(&mut o, run);
    budgets(&mut o, run);
    o
}
