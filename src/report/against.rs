//! `jitterlab report RUN --against BASE --max-regression PCT`: a run
//! against a stored baseline run, for a CI job — the table of every
//! compared figure (base, run, change, result) and the exit status: 1 when
//! a figure regressed beyond PCT, or when nothing at all could be compared
//! (a figure with no sample is "not measured", never a pass), else 0. What
//! is compared and how: [`jitterlab_core::regression`].
//!
//! Formats: text (the table and a last line saying what decided the exit
//! status), csv (the table alone, tidy: one row per figure, values in the
//! unit named in the `unit` column) and json (the comparison as is).

use std::process::ExitCode;

use anyhow::Result;
use jitterlab_core::regression::{self, Comparison, Outcome, Row};

use super::tables::Format;
use crate::error::bad;
use crate::output::shown;
use crate::store::Store;

/// A figure in its unit: exact microseconds for ns, plain cycles.
fn value(v: Option<i64>, unit: &str) -> String {
    match (v, unit) {
        (None, _) => "-".into(),
        (Some(n), "ns") => format!("{}us", super::text::us(n)),
        (Some(n), u) => format!("{n} {u}"),
    }
}

fn change(r: &Row) -> String {
    match (r.change_pct, r.outcome) {
        (Some(c), _) => format!("{c:+.1}%"),
        (None, Outcome::Regressed) => "from 0".into(),
        (None, _) => "-".into(),
    }
}

fn result(r: &Row) -> String {
    match &r.reason {
        Some(why) => format!("{} ({why})", r.outcome.word()),
        None => r.outcome.word().to_string(),
    }
}

/// The comparison as text: a title, aligned columns, the cells of one side
/// only, and the line that says what decided the exit status.
pub fn text(c: &Comparison) -> String {
    let mut o = format!(
        "run {} against base run {}: p99 and max per cell and metric; a regression is an increase of more than {}%\n",
        c.run, c.base, c.max_regression_pct
    );
    let head = [
        "cell", "metric", "figure", "base", "run", "change", "result",
    ];
    let rows: Vec<[String; 7]> = c
        .rows
        .iter()
        .map(|r| {
            [
                shown(&r.cell).into_owned(),
                shown(&r.metric).into_owned(),
                r.figure.to_string(),
                value(r.base, r.unit),
                value(r.run, r.unit),
                change(r),
                result(r),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, v) in width.iter_mut().zip(r) {
            *w = (*w).max(v.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut l = String::new();
        for (i, (v, w)) in cells.iter().zip(width).enumerate() {
            let pad = w.saturating_sub(v.chars().count());
            match i {
                // Figures right-aligned; the last column not padded.
                3..=5 => l.push_str(&format!("{}{v}  ", " ".repeat(pad))),
                6 => l.push_str(v),
                _ => l.push_str(&format!("{v}{}  ", " ".repeat(pad))),
            }
        }
        l.push('\n');
        l
    };
    o.push_str(&line(head));
    for r in &rows {
        o.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]]));
    }
    for n in &c.only_in_base {
        o.push_str(&format!("only in base run {}: {}\n", c.base, shown(n)));
    }
    for n in &c.only_in_run {
        o.push_str(&format!("only in run {}: {}\n", c.run, shown(n)));
    }
    o.push_str(&verdict_line(c));
    o
}

/// The last line: which figures regressed, or that none did, or that
/// nothing could be compared.
fn verdict_line(c: &Comparison) -> String {
    let not = c.rows.len() - c.compared();
    let not_measured = match not {
        0 => String::new(),
        n => format!("; {n} not measured"),
    };
    if c.regressed {
        let which: Vec<String> = c
            .rows
            .iter()
            .filter(|r| r.outcome == Outcome::Regressed)
            .map(|r| {
                format!(
                    "{} {} {} {}",
                    shown(&r.cell),
                    shown(&r.metric),
                    r.figure,
                    change(r)
                )
            })
            .collect();
        format!(
            "REGRESSED beyond {}%: {} of {} figures compared{not_measured}: {}\n",
            c.max_regression_pct,
            which.len(),
            c.compared(),
            which.join(", ")
        )
    } else if c.compared() == 0 {
        format!("NOT COMPARED: no figure was measured in both runs{not_measured}; nothing passes\n")
    } else {
        format!(
            "within {}%: {} figures compared, none regressed{not_measured}\n",
            c.max_regression_pct,
            c.compared()
        )
    }
}

/// The comparison as one tidy CSV table.
pub fn csv(c: &Comparison) -> String {
    let mut o = String::from("cell,metric,figure,unit,base,run,change_pct,result,reason\n");
    let num = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
    let field = |s: &str| {
        let s = shown(s);
        if s.contains([',', '"']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.into_owned()
        }
    };
    for r in &c.rows {
        o.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            field(&r.cell),
            field(&r.metric),
            r.figure,
            r.unit,
            num(r.base),
            num(r.run),
            r.change_pct.map(|p| format!("{p:.1}")).unwrap_or_default(),
            serde_json::to_value(r.outcome)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            field(r.reason.as_deref().unwrap_or("")),
        ));
    }
    o
}

/// Compares stored run `run` with stored run `base`, allowing `max_pct`,
/// rendered in `format`; the exit status as the module doc says.
pub fn against(
    store: &Store,
    run: i64,
    base: i64,
    max_pct: f64,
    format: Format,
) -> Result<(String, ExitCode)> {
    let load = |id: i64| store.load_run(id).map_err(|e| bad(format!("{e:#}")));
    let (b, r) = (load(base)?, load(run)?);
    let c = regression::compare(&b, &r, max_pct);
    let text = match format {
        Format::Text => text(&c),
        Format::Csv => csv(&c),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&c)?;
            s.push('\n');
            s
        }
        Format::Md | Format::Html => {
            return Err(bad(
                "--against prints text, csv or json; give --format text, csv or json",
            ))
        }
    };
    let code = if c.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    Ok((text, code))
}

#[cfg(test)]
mod tests;
