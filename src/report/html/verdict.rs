//! The verdict at the top of a run's page: what a reader must know before
//! looking at any figure.
//!
//! In this order: how the run ended and the exit status it had (0: every
//! verdict of `jitterlab_core::verdict` passed and no cell failed; 1: one
//! did not — a limit exceeded or not measured, a cycle time not held, a
//! main metric without a sample — or a cell failed: the rule of
//! `jitterlab run` and `jitterlab bench`); every cell's verdicts with what
//! decided them; the block a kind gives the page under a heading of its
//! own (`probe::parts::ReportParts::verdict_block`: the round trip's
//! worst-case budget, term by term, and whether it held); whether the figures may be called real-time, and if
//! not which required default was missing; the configurations the machine
//! could not run, with the reason (N/A); and the cells that were
//! interrupted, failed or skipped. A verdict is words, never a colour:
//! `PASS`/`FAIL`/`NOT MEASURED`, `held`/`FAILED`.

use std::fmt::Write as _;

use jitterlab_core::cell::{CellStatus, StoredCell, StoredRun};
use jitterlab_core::result::RunResult;
use jitterlab_core::verdict::Status;

use crate::output::shown;
use crate::render::safe::escape;
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
    let cells = crate::report::verdict::of_run(run);
    let failures = jitterlab_core::verdict::failures(&cells);
    if failures.is_empty() {
        (
            Some(0),
            format!(
                "{} and no cell failed",
                jitterlab_core::verdict::headline(&cells)
            ),
        )
    } else {
        (
            Some(1),
            format!(
                "{}: {}",
                jitterlab_core::verdict::headline(&cells),
                failures.join("; ")
            ),
        )
    }
}

/// Every verdict of every cell as a table, with what decided it (none: a
/// sentence).
fn limits(o: &mut String, run: &StoredRun) {
    let one = single(run);
    let cells = crate::report::verdict::of_run(run);
    if cells
        .iter()
        .all(|c| c.verdicts.is_empty() && c.skipped.is_none())
    {
        o.push_str("<p>verdicts: nothing was judged (no cell measured anything).</p>\n");
        return;
    }
    o.push_str("<table class=\"limits\">\n<caption>Verdicts</caption>\n<thead><tr>");
    if !one {
        o.push_str("<th>cell</th>");
    }
    o.push_str("<th>verdict</th><th class=\"num\">observed</th><th class=\"num\">samples</th><th class=\"num\">limit</th><th>status</th><th>what decided it</th></tr></thead>\n<tbody>\n");
    for c in &cells {
        let name = c.cell.clone().unwrap_or_default();
        if let Some(why) = &c.skipped {
            o.push_str("<tr>");
            if !one {
                let _ = write!(o, "<td>{}</td>", esc(&name));
            }
            let _ = writeln!(
                o,
                "<td>-</td><td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">-</td><td>skipped</td><td>{}</td></tr>",
                esc(why)
            );
        }
        for v in &c.verdicts {
            o.push_str("<tr>");
            if !one {
                let _ = write!(o, "<td>{}</td>", esc(&name));
            }
            let class = match v.status {
                Status::Pass => "pass",
                _ => "fail",
            };
            let _ = writeln!(
                o,
                "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>",
                esc(&v.name),
                match (v.observed_ns, &v.status) {
                    (Some(o), _) => us(o),
                    (None, Status::NotMeasured { .. }) => "not measured".into(),
                    (None, _) => "-".into(),
                },
                v.samples.map_or_else(|| "-".into(), |n| n.to_string()),
                v.limit_ns.map_or_else(|| "-".into(), us),
                v.status.word(),
                esc(&v.decided)
            );
        }
    }
    o.push_str("</tbody>\n</table>\n");
}

/// The block of every cell whose kind gives the page one (its summary's
/// block under its heading), as the text report prints it.
fn kind_blocks(o: &mut String, run: &StoredRun) {
    for c in &run.cells {
        let Some(r) = c.result.as_ref() else {
            continue;
        };
        let parts = crate::probe::parts::of(r.probe);
        let Some((title, b)) = parts
            .verdict_block
            .zip(parts.summary)
            .and_then(|(title, block)| Some((title, block(r)?)))
        else {
            continue;
        };
        let _ = writeln!(
            o,
            "<h3>{title}: {}</h3>\n<pre class=\"budget\">{}</pre>",
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
    kind_blocks(&mut o, run);
    o
}

#[cfg(test)]
mod tests;
