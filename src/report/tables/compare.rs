//! `jitterlab report A B`: two runs side by side.
//!
//! The typical question is "did this change help?": the same bench before
//! and after a BIOS setting, a kernel, a cache partition. Cells are matched
//! by [`CellKey::name`](jitterlab_core::cell::CellKey::name) — the key
//! without the repetition, so a run with three repetitions compares with a
//! run with one. For every figure either run has (latency, jitter, cycle
//! time, period, deviation, share over the threshold, and the chase's cycles
//! per chase and sample jitter) a row gives A, B and B
//! as a percentage of A; repetitions are spreads as in the tables, and so is
//! the percentage (minimum ÷ minimum, maximum ÷ maximum). A cell that only
//! one run has is listed with `absent` on the other side, and a footnote names
//! those cells. The share over the threshold is compared only as a number:
//! when the two runs used different thresholds its label says so.
//! Stored text (names, hosts, statuses) is printed through
//! `render::safe::shown`, as in every table.

use anyhow::Result;
use jitterlab_core::cell::StoredRun;
use serde::Serialize;
use serde_json::{json, Value};

use crate::output::shown;

use super::build::{
    self, fig_text, fig_value, pct1_values, threshold_of, Fig, Group, DEVIATION, MAX_CHASE,
    MAX_EXEC, MAX_JITTER, MAX_LATENCY, MAX_PERIOD, MAX_SAMPLE_JITTER, MEAN_EXEC, MIN_CHASE,
    MIN_JITTER, MIN_LATENCY, MIN_PERIOD, OVER_THRESHOLD, P50_CHASE, P50_LATENCY, P50_SAMPLE_JITTER,
    P99_CHASE,
};
use super::sheet::{self, Cell, Col, Sheet};
use super::{pct1_text, ratio_spread, threshold_text, Format, TABLES_SCHEMA_VERSION};

/// The figures compared, in this order.
const FIGS: [Fig; 17] = [
    MIN_LATENCY,
    P50_LATENCY,
    MAX_LATENCY,
    OVER_THRESHOLD,
    MAX_JITTER,
    MIN_JITTER,
    MAX_EXEC,
    MEAN_EXEC,
    MIN_PERIOD,
    MAX_PERIOD,
    DEVIATION,
    MIN_CHASE,
    P50_CHASE,
    P99_CHASE,
    MAX_CHASE,
    P50_SAMPLE_JITTER,
    MAX_SAMPLE_JITTER,
];

fn columns(a: &StoredRun, b: &StoredRun) -> Vec<Col> {
    vec![
        Col::left(
            "cell",
            &["configuration", "scenario", "deployment", "probe"],
        ),
        Col::left("figure", &["figure"]),
        Col::right(format!("A: run {}", a.id), &["a_status", "a_min", "a_max"]),
        Col::right(format!("B: run {}", b.id), &["b_status", "b_min", "b_max"]),
        Col::right("B/A", &["b_pct_of_a_min", "b_pct_of_a_max"]),
    ]
}

/// One side of a row: its printed text and machine values.
fn side(g: Option<&Group>, f: Option<&Fig>) -> Cell {
    let Some(g) = g else {
        return Cell::new("absent", vec![json!("absent"), Value::Null, Value::Null]);
    };
    match f.and_then(|f| g.spread(f).map(|s| (f, s))) {
        Some((f, s)) => Cell::new(
            fig_text(f.unit, s),
            vec![
                json!(g.status()),
                fig_value(f.unit, s.lo),
                fig_value(f.unit, s.hi),
            ],
        ),
        None => Cell::new(
            g.placeholder(),
            vec![json!(g.status()), Value::Null, Value::Null],
        ),
    }
}

fn threshold(g: Option<&Group>) -> Option<u64> {
    g?.measured().first().and_then(|(_, m)| threshold_of(m))
}

/// The printed name of a figure; the share over the threshold names it.
fn label(f: &Fig, ga: Option<&Group>, gb: Option<&Group>) -> String {
    if f.id != OVER_THRESHOLD.id {
        return f.long.to_string();
    }
    match (threshold(ga), threshold(gb)) {
        (Some(x), Some(y)) if x != y => format!(
            "% > threshold (A {}, B {})",
            threshold_text(x),
            threshold_text(y)
        ),
        (Some(t), _) | (None, Some(t)) => format!("% > {}", threshold_text(t)),
        (None, None) => f.long.to_string(),
    }
}

fn rows_of(ga: Option<&Group>, gb: Option<&Group>) -> Vec<Vec<Cell>> {
    let g = ga.or(gb).expect("a cell of A or B");
    let key = || {
        Cell::new(
            g.name(),
            vec![
                json!(g.configuration),
                json!(g.scenario),
                json!(g.deployment),
                json!(g.probe),
            ],
        )
    };
    let mut rows = Vec::new();
    for f in &FIGS {
        let sa = ga.and_then(|g| g.spread(f));
        let sb = gb.and_then(|g| g.spread(f));
        if sa.is_none() && sb.is_none() {
            continue;
        }
        let ratio = sa.zip(sb).and_then(|(a, b)| ratio_spread(b, a));
        let text = match (sa, sb, ratio) {
            (Some(_), Some(_), Some(r)) => pct1_text(r),
            (Some(_), Some(_), None) => "n/a".into(),
            _ => "-".into(),
        };
        rows.push(vec![
            key(),
            Cell::new(label(f, ga, gb), vec![json!(f.id)]),
            side(ga, Some(f)),
            side(gb, Some(f)),
            Cell::new(text, pct1_values(ratio)),
        ]);
    }
    // The cell's name once per block, so the blocks stand out (the machine
    // columns keep it on every row).
    for r in rows.iter_mut().skip(1) {
        r[0].text.clear();
    }
    if rows.is_empty() {
        rows.push(vec![
            key(),
            Cell::new("-", vec![Value::Null]),
            side(ga, None),
            side(gb, None),
            Cell::new("-", vec![Value::Null, Value::Null]),
        ]);
    }
    rows
}

fn sheet(a: &StoredRun, b: &StoredRun) -> Sheet {
    let ga = build::groups(a);
    let gb = build::groups(b);
    let mut rows = Vec::new();
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    for g in &ga {
        let other = gb.iter().find(|x| x.name() == g.name());
        if other.is_none() {
            only_a.push(g.name());
        }
        rows.extend(rows_of(Some(g), other));
    }
    for g in gb
        .iter()
        .filter(|g| !ga.iter().any(|x| x.name() == g.name()))
    {
        only_b.push(g.name());
        rows.extend(rows_of(None, Some(g)));
    }
    let mut notes = Vec::new();
    if !only_a.is_empty() {
        notes.push(format!("only in A (run {}): {}", a.id, only_a.join(", ")));
    }
    if !only_b.is_empty() {
        notes.push(format!("only in B (run {}): {}", b.id, only_b.join(", ")));
    }
    Sheet {
        name: "compare",
        title: format!(
            "Comparison — B: run {} ({}) against A: run {} ({}), B/A = B as % of A",
            b.id, b.name, a.id, a.name
        ),
        cols: columns(a, b),
        rows,
        notes,
    }
}

fn describe(r: &StoredRun) -> String {
    format!(
        "run {} ({} {}), started {}, host {}, kernel {}, status {}",
        r.id, r.kind, r.name, r.started_at, r.hostname, r.kernel_release, r.status
    )
}

/// A run's identity in JSON: the head of a rendered run and each side of a
/// comparison.
#[derive(Serialize)]
pub(super) struct JsonSide<'a> {
    run: i64,
    kind: &'a str,
    name: &'a str,
    started_at: &'a str,
    hostname: &'a str,
    kernel_release: &'a str,
    status: &'a str,
}

pub(super) fn json_side(r: &StoredRun) -> JsonSide<'_> {
    JsonSide {
        run: r.id,
        kind: &r.kind,
        name: &r.name,
        started_at: &r.started_at,
        hostname: &r.hostname,
        kernel_release: &r.kernel_release,
        status: &r.status,
    }
}

#[derive(Serialize)]
struct JsonCompare<'a> {
    schema_version: u32,
    a: JsonSide<'a>,
    b: JsonSide<'a>,
    tables: Vec<sheet::JsonTable>,
}

/// [`super::compare`]: the comparison in one format.
pub(super) fn render(a: &StoredRun, b: &StoredRun, format: Format) -> Result<String> {
    let s = sheet(a, b);
    Ok(match format {
        Format::Text => {
            let mut o = format!("A  {}\nB  {}\n\n", shown(&describe(a)), shown(&describe(b)));
            s.write_text(&mut o);
            o
        }
        Format::Md => {
            let mut o = format!(
                "## Comparison of run {} and run {}\n\n- A: {}\n- B: {}\n\n",
                a.id,
                b.id,
                sheet::md_escape(&describe(a)),
                sheet::md_escape(&describe(b))
            );
            s.write_md(&mut o);
            o
        }
        Format::Csv => sheet::csv(&s.machine_columns(), &[&s]),
        Format::Html => {
            let esc = |t: &str| crate::render::safe::escape(&shown(t));
            let mut o = format!(
                "<dl class=\"run-head\">\n<dt>A</dt><dd>{}</dd>\n<dt>B</dt><dd>{}</dd>\n</dl>\n",
                esc(&describe(a)),
                esc(&describe(b))
            );
            s.write_html(&mut o);
            o
        }
        Format::Json => {
            let doc = JsonCompare {
                schema_version: TABLES_SCHEMA_VERSION,
                a: json_side(a),
                b: json_side(b),
                tables: vec![s.json()],
            };
            let mut t = serde_json::to_string_pretty(&doc)?;
            t.push('\n');
            t
        }
    })
}
