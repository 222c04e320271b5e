//! The page: one run's (or several runs') sections, or two runs compared.
//!
//! A run's section reads top to bottom as a reader decides: its record —
//! the header, then right under it the verdict ([`super::verdict`]), once;
//! the tables exactly as `jitterlab report` prints them (a `jitterlab run`:
//! its summary in a `<pre>`, byte for byte the text report's body under its
//! record, which repeats neither; a bench: the seeds' tables as `<table>`s built from the rows the
//! Markdown prints); then per cell its latency histogram, percentile curve
//! and timeline with the explanations of its outliers beside them; and for a
//! bench one box chart per metric across its cells, grouped by
//! configuration × scenario ([Intel CODESYS] Table 10, [Baumgartner POWERLINK] Tables 4–5).
//! A limit a kind gives its plots (`probe::parts::PlotLimit`: a round
//! trip's budget) is drawn on its histogram, percentile curve, timeline and
//! box chart ([Red Hat controls] Figure 4 view: T1→T4 and T2→T3 against the
//! budget); a chase adds its jitter per sample ([Red Hat caterpillar]
//! Figures 1–3, and across a bench's cells Figure 4). A bench folds each
//! cell into a `<details>` element (no script: the browser opens it), so a
//! page of many cells reads as its verdict, tables and box charts first.
//!
//! Two runs compared: each run's record (folded, titled with its run) and
//! verdict, the comparison table of
//! `jitterlab report A B`, and per cell the two runs share (matched by name,
//! first repetition with figures) one histogram and one percentile curve
//! with run A solid and run B dashed, then the box charts with both runs.
//!
//! The page is written as XHTML-compatible HTML5 — every element closed,
//! every attribute quoted, only XML's five escapes — so that it is well
//! formed XML as well: one strict parser checks the page and every plot
//! in it, where an HTML parser would silently repair a broken tag. Its
//! style sheet is inline and names no font or image; the page holds no
//! script and no URL, so it reads the same offline, on a plant PC or
//! attached to a ticket, and prints on white with every series told apart
//! without colour.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::fmt::Write as _;

use anyhow::Result;
use jitterlab_core::cell::{CellStatus, StoredRun};
use jitterlab_core::plot::percentile_curve;
use jitterlab_core::probe::MetricDef;
use jitterlab_core::units::format_duration_exact;

use super::data::{self, CellData};
use super::plots::{
    self, Axis, BoxEntry, BoxRow, CurveSeries, HistSeries, Look, RefLine, SampleSeries,
};
use super::verdict::{self, cell_name};
use super::HtmlOptions;
use crate::output::shown;
use crate::probe::parts;
use crate::render::safe::escape;
use crate::report::chase;
use crate::report::tables::{self, Format};
use crate::store::Store;

pub(super) mod monitor;

/// The page's style sheet: print-friendly, no external resource.
const CSS: &str = "\
body{font-family:sans-serif;color:#111;background:#fff;margin:1.5rem auto;max-width:78rem;padding:0 1rem;line-height:1.35}
h1{font-size:1.6rem;margin-bottom:.2rem}
h2{font-size:1.3rem;border-bottom:2px solid #444;margin-top:2rem}
h3{font-size:1.1rem;margin-top:1.4rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #aaa;padding:.15rem .45rem;vertical-align:top}
th{background:#eee}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:bold;padding:.3rem 0}
p.note{font-size:.85rem;margin:.2rem 0}
pre{background:#f6f6f6;border:1px solid #ccc;padding:.6rem;overflow-x:auto;font-size:.85rem}
dl.run-head{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem}
dl.run-head dt{font-weight:bold}
dl.run-head dd{margin:0}
.fail{font-weight:bold;text-decoration:underline}
.cell{border-top:1px solid #999;padding-top:.4rem;break-inside:avoid-page}
details.cell>summary,details.record>summary{cursor:pointer}
details.cell>summary h3,details.record>summary h3{display:inline-block;margin:.5rem 0}
.with-aside{display:grid;grid-template-columns:minmax(0,1fr) 21rem;gap:1.2rem}
figure{margin:0 0 1rem}
figcaption{font-size:.85rem;max-width:47rem}
svg.plot{max-width:100%;height:auto;border:1px solid #ddd;background:#fff}
ul.explain{font-size:.85rem;padding-left:1rem}
ul.explain li.depth-0{list-style:none;margin-left:-1rem;font-weight:bold}
ul.explain li.depth-2{margin-left:1rem;list-style:circle}
@media (max-width:70rem){.with-aside{grid-template-columns:1fr}}
@media print{body{margin:0;max-width:none}.with-aside{grid-template-columns:1fr}figure{break-inside:avoid}}
";

/// The whole document around `body`; `title` may hold stored text.
pub(super) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <meta name=\"generator\" content=\"jitterlab {}\"/>\n<title>{}</title>\n\
         <style>\n{CSS}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        crate::version::TOOL_VERSION,
        esc(title)
    )
}

/// Stored text, made safe for the page.
fn esc(s: &str) -> String {
    escape(&shown(s))
}

/// A run as its heading names it.
fn run_title(run: &StoredRun) -> String {
    format!(
        "run {} ({} {}) on {}",
        run.id, run.kind, run.name, run.hostname
    )
}

/// A figure: the plot and its caption.
fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure>\n{svg}<figcaption>{}</figcaption>\n</figure>\n",
        escape(caption)
    )
}

/// A reference line's name: what it is and its value.
fn line_name(what: &str, ns: u64, axis: Axis) -> String {
    format!(
        "{what} {} {}",
        plots::num(axis.value(ns as i64)),
        axis.unit()
    )
}

/// The round trip's budget line, the one every plot of the cell draws.
fn budget_line(budget: Option<u64>, axis: Axis) -> Vec<RefLine> {
    budget
        .map(|b| RefLine {
            name: line_name("budget", b, axis),
            value: i64::try_from(b).unwrap_or(i64::MAX),
            look: plots::BUDGET,
        })
        .into_iter()
        .collect()
}

/// The threshold and budget lines of a cell's percentile curve.
fn ref_lines(d: &CellData<'_>, axis: Axis) -> Vec<RefLine> {
    let text = |ns: u64| format!("{} {}", plots::num(axis.value(ns as i64)), axis.unit());
    let mut v = Vec::new();
    if let Some(t) = d.threshold {
        v.push(RefLine {
            name: format!("threshold {}", text(t)),
            value: i64::try_from(t).unwrap_or(i64::MAX),
            look: plots::THRESHOLD,
        });
    }
    v.extend(budget_line(d.budget, axis));
    v
}

/// The caption of a histogram: how many samples, and where the bins came
/// from.
fn histogram_caption(metric: &str, fine: &[&data::Fine]) -> String {
    let samples: u64 = fine
        .iter()
        .map(|f| f.hist.buckets.iter().sum::<u64>() + f.hist.overflows)
        .max()
        .unwrap_or(0);
    let mut c = format!(
        "Histogram of the {metric}: {samples} samples in 1 µs bins, the count on a log scale (a zero count sits on the bottom edge)."
    );
    if fine.iter().any(|f| f.approximate) {
        c.push_str(" From the HDR histogram: bins above 16 µs are approximate.");
    }
    for f in fine.iter().filter(|f| f.hist.overflows > 0) {
        let _ = write!(
            c,
            " {} samples at or beyond {} µs are not drawn.",
            f.hist.overflows,
            f.hist.buckets.len()
        );
    }
    c
}

/// The three plots of one cell.
fn cell_plots(d: &CellData<'_>, look: Look, name: &str) -> Result<String> {
    let Some(metric) = d.metric else {
        return Ok("<p>no figures to plot: the cell measured nothing.</p>\n".into());
    };
    let axis = Axis::of(metric.unit);
    let mut o = String::new();
    let Some(summary) = d.summary else {
        // Still measuring (or killed before its figures were stored): the
        // windows committed so far are all there is.
        o.push_str("<p>no histogram and no percentile curve yet: a cell stores them when it ends; below, its windows so far.</p>\n");
        o.push_str(&timeline(d, metric, axis, name)?);
        return Ok(o);
    };
    if let Some(f) = &d.fine {
        let svg = plots::histogram(
            metric.name,
            &[HistSeries {
                name: name.into(),
                hist: &f.hist,
                look,
            }],
            &budget_line(d.budget, axis),
            &format!("{} histogram of {}", metric.name, name),
        )?;
        o.push_str(&figure(&svg, &histogram_caption(metric.name, &[f])));
    }
    if let Some(h) = &d.hdr {
        let points = percentile_curve(h, summary.min, summary.max);
        let svg = plots::percentiles(
            metric.name,
            axis,
            &[CurveSeries {
                name: name.into(),
                points,
                look,
            }],
            &ref_lines(d, axis),
            &format!("{} percentiles of {}", metric.name, name),
        )?;
        o.push_str(&figure(
            &svg,
            &format!(
                "Percentile curve of the {}: the minimum, p50 and each further nine as far as {} samples support it, and the maximum; from the HDR histogram (3 significant digits), clamped to the exact minimum and maximum.",
                metric.name, summary.count
            ),
        ));
    } else {
        o.push_str("<p>no percentile curve: this cell stored no histogram (partial figures from its windows).</p>\n");
    }
    o.push_str(&timeline(d, metric, axis, name)?);
    o.push_str(&limit_boxes(d, axis, name)?);
    o.push_str(&chase_samples(d, look, name)?);
    Ok(o)
}

/// A cell's box chart against the limit its kind draws
/// (`probe::parts::PlotLimit`: [Red Hat controls] Figure 4 view, T1→T4
/// and T2→T3 against the round trip's budget).
fn limit_boxes(d: &CellData<'_>, axis: Axis, name: &str) -> Result<String> {
    let Some(budget) = d.budget else {
        return Ok(String::new());
    };
    let Some(limit) = (d.cell.result.as_ref()).and_then(|r| parts::of(r.probe).plot_limit) else {
        return Ok(String::new());
    };
    let (title, boxes) = limit.boxes;
    let rows: Vec<BoxRow> = boxes
        .iter()
        .filter_map(|&(label, metric)| {
            box_of(d.cell, metric).map(|e| BoxRow {
                label: label.into(),
                entries: vec![Some(e)],
            })
        })
        .collect();
    if rows.is_empty() {
        return Ok(String::new());
    }
    let svg = plots::boxes(
        title,
        axis,
        &rows,
        &[(name.to_string(), plots::SOLID)],
        &budget_line(Some(budget), axis),
        &format!("{title} of {name} against its budget"),
    )?;
    Ok(figure(
        &svg,
        &(limit.caption)(line_name("", budget, axis).trim(), BOX_CAPTION),
    ))
}

/// A chase's jitter per sample in CPU cycles ([Red Hat caterpillar] Figures 1–3).
fn chase_samples(d: &CellData<'_>, look: Look, name: &str) -> Result<String> {
    let Some((rows, _)) = d.cell.result.as_ref().and_then(chase::rows_of) else {
        return Ok(String::new());
    };
    if rows.is_empty() {
        return Ok(String::new());
    }
    let svg = plots::per_sample(
        "jitter per sample",
        &[SampleSeries {
            name: name.into(),
            points: rows.iter().map(|r| (r.number, r.jitter)).collect(),
            look,
        }],
        &format!("jitter per sample of {name}"),
    )?;
    Ok(figure(
        &svg,
        &format!(
            "Jitter per sample (the slowest minus the fastest of its {} timed chases), in CPU cycles, as the caterpillar study plots it; a log axis when the samples span more than {} times.",
            rows[0].chases,
            jitterlab_core::plot::LOG_SPAN
        ),
    ))
}

/// The windows RT throttling hit in a cell (start, end ns since its first
/// release), for its timeline's bands.
fn throttled_bands(d: &CellData<'_>) -> Vec<(u64, u64)> {
    d.cell
        .context
        .throttling
        .as_ref()
        .map(|t| t.hit_windows(d.window_ns))
        .unwrap_or_default()
        .iter()
        .map(|w| (w.start_ns, w.end_ns))
        .collect()
}

/// A cell's timeline of per-window figures, when it stored windows.
fn timeline(d: &CellData<'_>, metric: &MetricDef, axis: Axis, name: &str) -> Result<String> {
    let mut o = String::new();
    if let Some(e) = d.envelope.as_ref().filter(|e| !e.points.is_empty()) {
        let svg = plots::timeline(
            metric.name,
            axis,
            &e.points,
            d.window_ns,
            e.per_point,
            &budget_line(d.budget, axis),
            &throttled_bands(d),
            &format!("{} timeline of {}", metric.name, name),
        )?;
        o.push_str(&figure(
            &svg,
            &format!(
                "Timeline of the {}: {} window rows of {} in {} points of up to {} windows each; a point keeps the largest maximum and the smallest minimum of its windows, so no maximum is lost.",
                metric.name,
                e.rows,
                format_duration_exact(d.window_ns),
                e.points.len(),
                e.per_point
            ),
        ));
    }
    Ok(o)
}

/// One cell's section: heading, plots, and its explanation beside them.
/// `fold`: in a `<details>` element, its heading the summary (a bench).
fn cell_section(
    run: &StoredRun,
    d: &CellData<'_>,
    explanation: Option<&[(usize, String)]>,
    fold: bool,
) -> Result<String> {
    let c = d.cell;
    let (element, head, head_end) = if fold {
        ("details", "<summary><h3>", "</h3></summary>")
    } else {
        ("section", "<h3>", "</h3>")
    };
    let mut o = format!(
        "<{element} class=\"cell\" id=\"run{}-cell{}\">\n{head}Cell {} — {}{head_end}\n<div class=\"cell-body{}\">\n<div class=\"plots\">\n",
        run.id,
        d.id,
        esc(&cell_name(c)),
        c.status.name(),
        if explanation.is_some() { " with-aside" } else { "" }
    );
    match c.status {
        CellStatus::Pending | CellStatus::Skipped if c.result.is_none() => {
            o.push_str("<p>not measured.</p>\n");
        }
        _ => o.push_str(&cell_plots(d, plots::SOLID, &format!("run {}", run.id))?),
    }
    o.push_str("</div>\n");
    if let Some(lines) = explanation {
        o.push_str("<aside>\n<h4>What can explain an outlier</h4>\n");
        o.push_str(&tables::html_explanations(lines));
        o.push_str("</aside>\n");
    }
    let _ = writeln!(o, "</div>\n</{element}>");
    Ok(o)
}

/// The parts of the cells' keys that tell a run's cells apart.
fn labeller(
    cells: &[&jitterlab_core::cell::StoredCell],
) -> impl Fn(&jitterlab_core::cell::StoredCell) -> String {
    let varies = |f: fn(&jitterlab_core::cell::StoredCell) -> String| {
        cells.windows(2).any(|w| f(w[0]) != f(w[1]))
    };
    let deployment = varies(|c| c.key.deployment.clone());
    let probe = varies(|c| c.key.probe.clone());
    let reps = cells.iter().any(|c| c.key.repetition > 0);
    move |c| {
        let mut v = vec![c.key.configuration.as_str(), c.key.scenario.as_str()];
        if deployment {
            v.push(&c.key.deployment);
        }
        if probe {
            v.push(&c.key.probe);
        }
        let mut s = shown(&v.join(" / ")).into_owned();
        if reps {
            let _ = write!(s, " rep {}", c.key.repetition);
        }
        s
    }
}

/// A cell's box for `metric`: its min, p50, p99 and max.
fn box_of(c: &jitterlab_core::cell::StoredCell, metric: &str) -> Option<BoxEntry> {
    let s = data::summaries(c.result.as_ref()?)?.get(metric)?;
    Some(BoxEntry {
        min: s.min?,
        p50: s.p50,
        p99: s.p99,
        max: s.max?,
    })
}

/// The metrics of the cells' probes, in descriptor order, first seen first.
fn metrics_of(cells: &[&jitterlab_core::cell::StoredCell]) -> Vec<&'static MetricDef> {
    let mut v: Vec<&'static MetricDef> = Vec::new();
    for c in cells {
        if let Some(r) = &c.result {
            for m in r.probe.metrics() {
                if !v.iter().any(|x| x.name == m.name) {
                    v.push(m);
                }
            }
        }
    }
    v
}

const BOX_CAPTION: &str = "the box spans p50 to p99 (its thick left edge is the median), the whiskers the minimum to the maximum";

/// One box chart per metric across a bench's cells.
fn across(run: &StoredRun) -> Result<String> {
    let cells: Vec<&jitterlab_core::cell::StoredCell> = run.cells.iter().collect();
    let label = labeller(&cells);
    let mut o = String::new();
    // Each limit with the metric whose chart draws it.
    let mut budgets: Vec<(&str, u64)> = cells
        .iter()
        .filter_map(|c| {
            let r = c.result.as_ref()?;
            let limit = parts::of(r.probe).plot_limit?;
            Some((limit.metric, (limit.of)(r)?))
        })
        .collect();
    budgets.sort_unstable();
    budgets.dedup();
    for m in metrics_of(&cells) {
        let rows: Vec<BoxRow> = cells
            .iter()
            .filter_map(|c| {
                box_of(c, m.name).map(|e| BoxRow {
                    label: label(c),
                    entries: vec![Some(e)],
                })
            })
            .collect();
        if rows.len() < 2 {
            continue;
        }
        let svg = plots::boxes(
            m.name,
            Axis::of(m.unit),
            &rows,
            &[(format!("run {}", run.id), plots::SOLID)],
            &budgets
                .iter()
                .filter(|&&(metric, _)| metric == m.name)
                .flat_map(|&(_, b)| budget_line(Some(b), Axis::of(m.unit)))
                .collect::<Vec<_>>(),
            &format!("{} across the cells of run {}", m.name, run.id),
        )?;
        o.push_str(&figure(
            &svg,
            &format!("The {} of every cell: {BOX_CAPTION}.", m.name),
        ));
    }
    o.push_str(&chase_across(&cells, &label, run.id)?);
    if o.is_empty() {
        return Ok(o);
    }
    Ok(format!(
        "<h3>Across cells, per configuration × scenario</h3>\n{o}"
    ))
}

/// The chase cells' jitter per sample on one plot ([Red Hat caterpillar] Figure 4:
/// baseline against cache allocation), when a bench has two or more.
fn chase_across(
    cells: &[&jitterlab_core::cell::StoredCell],
    label: &dyn Fn(&jitterlab_core::cell::StoredCell) -> String,
    run: i64,
) -> Result<String> {
    let looks = [plots::SOLID, plots::DASHED, plots::DOTTED];
    let series: Vec<SampleSeries> = cells
        .iter()
        .filter_map(|c| Some((label(c), chase::rows_of(c.result.as_ref()?)?.0)))
        .filter(|(_, rows)| !rows.is_empty())
        .enumerate()
        .map(|(k, (name, rows))| SampleSeries {
            name,
            points: rows.iter().map(|r| (r.number, r.jitter)).collect(),
            look: looks[k % looks.len()],
        })
        .collect();
    if series.len() < 2 {
        return Ok(String::new());
    }
    let svg = plots::per_sample(
        "jitter per sample",
        &series,
        &format!("jitter per sample across the cells of run {run}"),
    )?;
    Ok(figure(
        &svg,
        "Jitter per sample of every chase cell, in CPU cycles (the caterpillar study, Figure 4: the baseline against cache allocation), each cell's look named in the legend.",
    ))
}

/// One run's section.
fn run_section(store: &Store, run: &StoredRun, opts: &HtmlOptions) -> Result<String> {
    let mut o = format!(
        "<section class=\"run\" id=\"run{}\">\n<h2>Run {}: {} ({})</h2>\n{}<h3>Verdict</h3>\n{}",
        run.id,
        run.id,
        esc(&run.name),
        esc(&run.kind),
        crate::report::header::html(&crate::report::header::of_run(store, run)?),
        verdict::verdict(run)
    );
    let cells = data::load(store, run, opts.max_points)?;
    match crate::report::single::single_run_text(store, run)? {
        Some(text) => {
            let _ = write!(
                o,
                "<h3>Summary</h3>\n<pre class=\"summary\">{}</pre>\n",
                escape(&text)
            );
        }
        None => {
            let t = tables::TableOptions {
                explain: false,
                ..opts.tables.clone()
            };
            let _ = write!(
                o,
                "<h3>Tables</h3>\n{}",
                tables::render(run, &t, Format::Html)?
            );
        }
    }
    let explanations = tables::explanation_lines(run);
    o.push_str("<h3>Cells</h3>\n");
    for (i, d) in cells.iter().enumerate() {
        let ex = (opts.tables.explain && !verdict::single(run))
            .then(|| explanations.get(i).map(Vec::as_slice))
            .flatten();
        o.push_str(&cell_section(run, d, ex, !verdict::single(run))?);
    }
    if !verdict::single(run) {
        o.push_str(&across(run)?);
    }
    o.push_str("</section>\n");
    Ok(o)
}

/// The page of one run or several (each in its own section).
pub(super) fn runs(store: &Store, runs: &[StoredRun], opts: &HtmlOptions) -> Result<String> {
    let names: Vec<String> = runs.iter().map(run_title).collect();
    let title = format!("jitterlab report: {}", names.join(", "));
    let mut body = format!("<h1>{}</h1>\n", esc(&title));
    for r in runs {
        body.push_str(&run_section(store, r, opts)?);
    }
    Ok(page(&title, &body))
}

/// The name of a run in a comparison's legend: A or B, the run and its
/// host.
fn side(letter: &str, run: &StoredRun) -> String {
    format!("{letter}: run {} ({})", run.id, shown(&run.hostname))
}

/// Per cell name, the first repetition with figures.
fn first_measured<'a>(cells: &'a [CellData<'a>]) -> Vec<(String, &'a CellData<'a>)> {
    let mut v: Vec<(String, &CellData<'_>)> = Vec::new();
    for c in cells {
        let name = c.cell.key.name();
        if c.summary.is_some() && !v.iter().any(|(n, _)| *n == name) {
            v.push((name, c));
        }
    }
    v
}

/// The overlaid histogram and percentile curve of one cell of A and B.
fn overlay(name: &str, a: (&str, &CellData<'_>), b: (&str, &CellData<'_>)) -> Result<String> {
    let (Some(m), Some(_)) = (a.1.metric, a.1.summary) else {
        return Ok(String::new());
    };
    if b.1.metric.map(|x| x.name) != Some(m.name) {
        return Ok(format!(
            "<p>{}: the runs measured different metrics; nothing to overlay.</p>\n",
            esc(name)
        ));
    }
    let axis = Axis::of(m.unit);
    let looks = [plots::SOLID, plots::DASHED];
    let sides = [a, b];
    let mut o = format!("<section class=\"cell\">\n<h3>Cell {}</h3>\n", esc(name));
    let fine: Vec<(&str, &data::Fine, Look)> = sides
        .iter()
        .zip(looks)
        .filter_map(|((n, d), l)| d.fine.as_ref().map(|f| (*n, f, l)))
        .collect();
    if fine.len() == 2 {
        let series: Vec<HistSeries<'_>> = fine
            .iter()
            .map(|(n, f, l)| HistSeries {
                name: n.to_string(),
                hist: &f.hist,
                look: *l,
            })
            .collect();
        let svg = plots::histogram(
            m.name,
            &series,
            &budget_line(a.1.budget.or(b.1.budget), axis),
            &format!("{} histograms of {name}", m.name),
        )?;
        let fs: Vec<&data::Fine> = fine.iter().map(|x| x.1).collect();
        o.push_str(&figure(&svg, &histogram_caption(m.name, &fs)));
    }
    let curves: Vec<CurveSeries> = sides
        .iter()
        .zip(looks)
        .filter_map(|((n, d), l)| {
            let s = d.summary?;
            Some(CurveSeries {
                name: n.to_string(),
                points: percentile_curve(d.hdr.as_ref()?, s.min, s.max),
                look: l,
            })
        })
        .collect();
    if curves.len() == 2 {
        let mut lines = ref_lines(a.1, axis);
        for l in ref_lines(b.1, axis) {
            if !lines.iter().any(|x| x.value == l.value) {
                lines.push(l);
            }
        }
        let svg = plots::percentiles(
            m.name,
            axis,
            &curves,
            &lines,
            &format!("{} percentiles of {name}", m.name),
        )?;
        o.push_str(&figure(
            &svg,
            &format!(
                "Percentile curves of the {}: A solid with circles, B dashed with triangles.",
                m.name
            ),
        ));
    }
    o.push_str("</section>\n");
    Ok(o)
}

/// The box charts of the cells A and B share, per metric.
fn compare_boxes(
    pairs: &[(String, Option<&CellData<'_>>, Option<&CellData<'_>>)],
    names: [String; 2],
) -> Result<String> {
    let cells: Vec<&jitterlab_core::cell::StoredCell> = pairs
        .iter()
        .flat_map(|(_, a, b)| [a, b])
        .flatten()
        .map(|d| d.cell)
        .collect();
    let series = [
        (names[0].clone(), plots::SOLID),
        (names[1].clone(), plots::DASHED),
    ];
    let mut o = String::new();
    for m in metrics_of(&cells) {
        let rows: Vec<BoxRow> = pairs
            .iter()
            .map(|(name, a, b)| BoxRow {
                label: shown(name).into_owned(),
                entries: vec![
                    a.and_then(|d| box_of(d.cell, m.name)),
                    b.and_then(|d| box_of(d.cell, m.name)),
                ],
            })
            .filter(|r| r.entries.iter().any(Option::is_some))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let svg = plots::boxes(
            m.name,
            Axis::of(m.unit),
            &rows,
            &series,
            &[],
            &format!("{} of run A and run B", m.name),
        )?;
        o.push_str(&figure(
            &svg,
            &format!(
                "The {} of each cell in A (solid, filled) and B (dashed): {BOX_CAPTION}.",
                m.name
            ),
        ));
    }
    Ok(o)
}

/// A run's record folded under `title` (`<details>`, no script): a
/// comparison names both records, each once, and keeps its plots in view.
fn folded_record(title: &str, h: &jitterlab_core::header::Header) -> String {
    let record = crate::report::header::html(h);
    let list = record.strip_prefix("<h3>Record</h3>\n").unwrap_or(&record);
    format!(
        "<details class=\"record\"><summary><h3>{}</h3></summary>\n{list}</details>\n",
        esc(title)
    )
}

/// The page comparing run A with run B.
pub(super) fn comparison(
    store: &Store,
    a: &StoredRun,
    b: &StoredRun,
    opts: &HtmlOptions,
) -> Result<String> {
    let title = format!(
        "jitterlab comparison: B {} against A {}",
        run_title(b),
        run_title(a)
    );
    let (na, nb) = (side("A", a), side("B", b));
    let mut body = format!("<h1>{}</h1>\n", esc(&title));
    for (letter, r) in [("A", a), ("B", b)] {
        let _ = write!(
            body,
            "<section class=\"run\" id=\"side-{letter}\">\n<h2>{letter}: run {} ({} {}) on {}</h2>\n{}<h3>Verdict</h3>\n{}</section>\n",
            r.id,
            esc(&r.kind),
            esc(&r.name),
            esc(&r.hostname),
            folded_record(&format!("Record of run {letter} (run {})", r.id), &crate::report::header::of_run(store, r)?),
            verdict::verdict(r)
        );
    }
    let _ = write!(
        body,
        "<h2>Comparison</h2>\n{}",
        tables::compare(a, b, Format::Html)?
    );
    let ca = data::load(store, a, opts.max_points)?;
    let cb = data::load(store, b, opts.max_points)?;
    let (fa, fb) = (first_measured(&ca), first_measured(&cb));
    let mut pairs: Vec<(String, Option<&CellData<'_>>, Option<&CellData<'_>>)> = fa
        .iter()
        .map(|(n, d)| {
            (
                n.clone(),
                Some(*d),
                fb.iter().find(|(m, _)| m == n).map(|x| x.1),
            )
        })
        .collect();
    for (n, d) in &fb {
        if !pairs.iter().any(|p| p.0 == *n) {
            pairs.push((n.clone(), None, Some(*d)));
        }
    }
    body.push_str("<h2>Cells of both runs</h2>\n");
    for (n, x, y) in &pairs {
        if let (Some(x), Some(y)) = (x, y) {
            body.push_str(&overlay(n, (&na, x), (&nb, y))?);
        }
    }
    let boxes = compare_boxes(&pairs, [na.clone(), nb.clone()])?;
    if !boxes.is_empty() {
        let _ = write!(body, "<h2>Across cells</h2>\n{boxes}");
    }
    Ok(page(&title, &body))
}
