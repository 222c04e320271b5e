//! The verdict block of every report: each cell's verdicts
//! (`jitterlab_core::verdict`) with what decided them, under a headline
//! that says how many did not pass and the exit status that follows, in
//! text, Markdown and JSON (the HTML block is [`super::html::verdict`]'s).
//!
//! The block is part of a report's record: [`block`] renders it for a
//! format and [`super::header::record`] puts it once, right under the
//! header's machine, version and spec lines; no body prints it again.
//!
//! Every format prints the same verdicts from the same model, so a report
//! never says more than was measured: a figure without a sample is `NOT
//! MEASURED` with its reason (JSON `null` and the reason), and the headline
//! never says every verdict passed above one that did not.

use std::fmt::Write as _;

use jitterlab_core::cell::StoredRun;
use jitterlab_core::result::RunResult;
use jitterlab_core::verdict::{self, CellVerdicts};
use serde_json::Value;

use super::tables::Format;
use crate::output::shown;

/// Stored text made safe for a Markdown table cell.
fn md_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in shown(s).chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '&' => o.push_str("&amp;"),
            '|' | '*' | '_' | '`' | '~' | '[' | ']' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            '\n' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// The one cell of a single result.
pub fn of_result(r: &RunResult) -> Vec<CellVerdicts> {
    vec![CellVerdicts {
        cell: None,
        elapsed_ns: r.elapsed_ns,
        skipped: None,
        verdicts: verdict::verdicts(r),
    }]
}

/// Every cell of a stored run (a single `jitterlab run` names no cell).
pub fn of_run(run: &StoredRun) -> Vec<CellVerdicts> {
    let single = run.kind == "run" && run.cells.len() == 1;
    verdict::run_verdicts(run, single)
}

/// The exit status the verdicts call for: 1 when any did not pass.
pub fn exit_status(cells: &[CellVerdicts]) -> u8 {
    u8::from(!verdict::failures(cells).is_empty())
}

/// True while a cell is still to run (no exit status yet).
fn pending(cells: &[CellVerdicts]) -> bool {
    cells.iter().any(|c| {
        c.skipped
            .as_deref()
            .is_some_and(|s| s.ends_with(verdict::NO_RESULT_YET))
    })
}

/// The headline: `verdict: 1 of 3 verdicts did not pass, exit status 1`;
/// while cells are still to run, the verdicts so far, without an exit
/// status.
pub fn headline(cells: &[CellVerdicts]) -> String {
    if pending(cells) {
        return format!(
            "verdict so far: {} (cells still to run)",
            verdict::headline(cells)
        );
    }
    format!(
        "verdict: {}, exit status {}",
        verdict::headline(cells),
        exit_status(cells)
    )
}

/// The block in text: the headline, then each verdict's line (under its
/// cell's name in a bench). Ends with a newline.
pub fn text(cells: &[CellVerdicts]) -> String {
    let mut o = format!("{}\n", headline(cells));
    for c in cells {
        let indent = match &c.cell {
            Some(name) => {
                match &c.skipped {
                    Some(why) if why.is_empty() => {
                        let _ = writeln!(o, "  {}: skipped", shown(name));
                    }
                    Some(why) => {
                        let _ = writeln!(o, "  {}: skipped: {}", shown(name), shown(why));
                    }
                    None => {
                        let _ = writeln!(o, "  {}", shown(name));
                    }
                }
                "    "
            }
            None => "  ",
        };
        for v in &c.verdicts {
            let _ = writeln!(o, "{indent}{}", shown(&v.line()));
        }
    }
    o
}

/// The block in Markdown: the headline and a table of every verdict.
pub fn markdown(cells: &[CellVerdicts]) -> String {
    let mut o = format!("### Verdict\n\n**{}**\n\n", md_escape(&headline(cells)));
    let named = cells.iter().any(|c| c.cell.is_some());
    if named {
        o.push_str("| cell | verdict | status | what decided it |\n|---|---|---|---|\n");
    } else {
        o.push_str("| verdict | status | what decided it |\n|---|---|---|\n");
    }
    for c in cells {
        let cell = md_escape(c.cell.as_deref().unwrap_or(""));
        if let Some(why) = &c.skipped {
            let _ = writeln!(o, "| {cell} | - | skipped | {} |", md_escape(why));
        }
        for v in &c.verdicts {
            if named {
                let _ = write!(o, "| {cell} ");
            }
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                md_escape(&v.name),
                v.status.word(),
                md_escape(&v.decided)
            );
        }
    }
    o
}

/// The block in JSON: `{"headline", "exit_status", "cells": [...]}`;
/// `exit_status` is `null` while cells are still to run.
pub fn json(cells: &[CellVerdicts]) -> Value {
    serde_json::json!({
        "headline": verdict::headline(cells),
        "exit_status": (!pending(cells)).then(|| exit_status(cells)),
        "cells": cells,
    })
}

/// The block rendered for `format`, as [`super::header::assemble`] takes
/// it: text, Markdown, JSON text; `None` for CSV (rows only) and HTML
/// (whose page draws [`super::html::verdict`]'s block itself).
pub fn block(format: Format, cells: &[CellVerdicts]) -> Option<String> {
    match format {
        Format::Text => Some(text(cells)),
        Format::Md => Some(markdown(cells)),
        Format::Json => Some(json(cells).to_string()),
        Format::Html | Format::Csv => None,
    }
}

#[cfg(test)]
mod tests;
