//! `jitterlab report --monitor [SERIES]`: the monitoring view of a series
//! that `jitterlab monitor` has been writing for days or months.
//!
//! What a person watching a machine asks first, in that order: the worst
//! latency ever, with when, where and in which run and cycle; the worst of
//! the last week and of the last day; what the last hour looked like (its
//! percentiles); how often the monitor was restarted and for how long it
//! was away; and how far back the database still reaches. All of it is
//! the store's [`MonitorView`], read in one pass; this module only formats
//! it — as text, as schema-versioned JSON, or as one HTML page with
//! OSADL's plot of the 5-minute maxima ([`super::html::monitor`]).
//!
//! Every "last" is counted back from the series' latest data, which the
//! view names ("up to …"), never from the clock of the machine reading the
//! file: the same database gives the same report anywhere, at any time.
//! Times are UTC; latencies are exact to the ns (µs with three decimals)
//! except the percentiles, which are 1 µs bins.

use jitterlab_core::units::format_utc;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::error::bad;
use crate::output::out;
use crate::store::end_label;
use crate::store::monitor::view::{
    Held, HeldRows, HourPercentiles, MonitorView, SegmentView, Worst, Worsts,
};
use crate::store::SCHEMA_VERSION;

use super::tables::Format;
use super::text::us;
use crate::output::shown;

/// Version of the JSON `report --monitor --format json` prints.
pub const MONITOR_JSON_SCHEMA: u32 = 1;

/// `report --monitor`: the view of `series` (the latest monitor's when
/// `None`) in `format` — text, JSON or HTML — on stdout or into `output`
/// (replaced atomically).
pub fn report(
    db: &Path,
    series: Option<&str>,
    format: Format,
    output: Option<&PathBuf>,
) -> Result<ExitCode> {
    if matches!(format, Format::Md | Format::Csv) {
        return Err(bad(
            "--monitor prints text, json or html; choose one of them with --format",
        ));
    }
    if let Some(p) = output {
        crate::out_files::check_output("-o", p)?;
    }
    let store = crate::store::open_existing(db)?;
    let view = store.monitor_view(series)?;
    let text = render(&view, format)?;
    match output {
        Some(p) => crate::out_files::write_replacing(p, &text)?,
        None => out!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The view in `format` (text, JSON or HTML).
pub fn render(view: &MonitorView, format: Format) -> Result<String> {
    match format {
        Format::Json => json(view),
        Format::Html => super::html::monitor(view, &text(view)),
        _ => Ok(text(view)),
    }
}

/// What the JSON holds: its own schema version, the database's, the view.
#[derive(Serialize)]
struct MonitorJson<'a> {
    schema_version: u32,
    database_schema: i64,
    monitor: &'a MonitorView,
}

/// The view as schema-versioned JSON (times in ns since the Unix epoch,
/// latencies in ns, percentiles in µs bins).
pub fn json(view: &MonitorView) -> Result<String> {
    let mut s = serde_json::to_string_pretty(&MonitorJson {
        schema_version: MONITOR_JSON_SCHEMA,
        database_schema: SCHEMA_VERSION,
        monitor: view,
    })?;
    s.push('\n');
    Ok(s)
}

/// A length of time a person reads at a glance: `45s`, `1m 30s`,
/// `2h 05m 00s`, `3d 04h 05m 06s` (whole seconds; under one, in ms).
pub(crate) fn span(ns: i64) -> String {
    let ns = ns.max(0);
    if ns < 1_000_000_000 {
        return jitterlab_core::units::format_ns(ns);
    }
    let s = ns / 1_000_000_000;
    match (s / 86_400, s / 3_600 % 24, s / 60 % 60, s % 60) {
        (0, 0, 0, s) => format!("{s}s"),
        (0, 0, m, s) => format!("{m}m {s:02}s"),
        (0, h, m, s) => format!("{h}h {m:02}m {s:02}s"),
        (d, h, m, s) => format!("{d}d {h:02}h {m:02}m {s:02}s"),
    }
}

/// A latency in µs with its unit: `12.345us`.
fn lat(ns: i64) -> String {
    format!("{}us", us(ns))
}

/// A run and the first 8 characters of its uid: `2 (ab12cd34)`.
fn run_ref(run: i64, uid: &str) -> String {
    if uid.is_empty() {
        run.to_string()
    } else {
        format!("{run} ({})", shown(&crate::store::short_id(Some(uid))))
    }
}

/// The CPUs of the series, as the headline names them.
fn cpus_text(view: &MonitorView) -> String {
    let cpus: Vec<String> = view.cpus.iter().map(|c| c.cpu.to_string()).collect();
    match cpus.len() {
        0 => "no CPU yet".into(),
        1 => format!("CPU {}", cpus[0]),
        n => format!("CPUs {} and {}", cpus[..n - 1].join(", "), cpus[n - 1]),
    }
}

/// The monitoring view as text.
pub fn text(view: &MonitorView) -> String {
    let mut o = String::new();
    let segments = view.segments.len();
    let _ = write!(
        o,
        "monitor series {} (series {}, {} segment{}): {} {} on {}",
        shown(&view.name),
        view.series,
        segments,
        if segments == 1 { "" } else { "s" },
        shown(&view.probe),
        shown(&view.metric),
        cpus_text(view),
    );
    let Some(up_to) = view.up_to_ns else {
        o.push_str(", no data stored yet\n");
        segments_text(&mut o, &view.segments);
        marks_text(&mut o, &view.marks);
        return o;
    };
    let _ = writeln!(o, ", up to {}", format_utc(up_to, false));
    o.push('\n');
    worst_text(&mut o, view, up_to);
    if view.cpus.len() > 1 {
        per_cpu_text(&mut o, view);
    }
    o.push('\n');
    last_hour_text(&mut o, &view.last_hour);
    o.push('\n');
    segments_text(&mut o, &view.segments);
    marks_text(&mut o, &view.marks);
    o.push('\n');
    held_text(&mut o, &view.held);
    o
}

/// The worst ever, of the week and of the day.
fn worst_text(o: &mut String, view: &MonitorView, up_to: i64) {
    let _ = writeln!(
        o,
        "{:<10}  {:>12}  {:<24}  {:>3}  {:<14}  {:>12}",
        "worst", "latency", "at (UTC)", "CPU", "run", "cycle"
    );
    let w = &view.worst;
    for (label, worst) in [
        ("ever", &w.ever),
        ("last week", &w.week),
        ("last day", &w.day),
    ] {
        match worst {
            Some(x) => {
                let _ = writeln!(
                    o,
                    "{label:<10}  {:>12}  {:<24}  {:>3}  {:<14}  {:>12}",
                    lat(x.max_ns),
                    format_utc(x.at_ns, true),
                    x.cpu,
                    run_ref(x.run, &x.run_uid),
                    x.cycle
                );
            }
            None => {
                let _ = writeln!(o, "{label:<10}  {:>12}", "-");
            }
        }
    }
    let _ = writeln!(
        o,
        "(ever: from the hourly rows, kept for ever; last week and last day: from the\n 5-minute rows overlapping the 7 days and the 24 hours up to {})",
        format_utc(up_to, false)
    );
}

/// The worst of each CPU.
fn per_cpu_text(o: &mut String, view: &MonitorView) {
    let cell = |w: &Option<Worst>| w.as_ref().map_or("-".to_string(), |x| lat(x.max_ns));
    let _ = writeln!(
        o,
        "\n{:<10}  {:>12}  {:>12}  {:>12}",
        "per CPU", "ever", "last week", "last day"
    );
    for c in &view.cpus {
        let Worsts { ever, week, day } = &c.worst;
        let _ = writeln!(
            o,
            "{:<10}  {:>12}  {:>12}  {:>12}",
            format!("CPU {}", c.cpu),
            cell(ever),
            cell(week),
            cell(day)
        );
    }
}

/// The last hour's percentiles, one line per CPU, then where they come
/// from.
fn last_hour_text(o: &mut String, hours: &[HourPercentiles]) {
    if hours.is_empty() {
        o.push_str(
            "last hour's percentiles: no 5-minute histogram ended in the last hour of data\n",
        );
        return;
    }
    o.push_str("last hour's percentiles, us (1 us bins: v means v <= latency < v+1 us)\n");
    let _ = writeln!(
        o,
        "{:>4}  {:>12}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}",
        "CPU", "samples", "p50", "p90", "p99", "p99.9", "p99.99", "max"
    );
    let bin = |v: Option<u64>| v.map_or("beyond".to_string(), |v| v.to_string());
    for h in hours {
        let _ = writeln!(
            o,
            "{:>4}  {:>12}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}",
            h.cpu,
            h.samples,
            bin(h.p50_us),
            bin(h.p90_us),
            bin(h.p99_us),
            bin(h.p99_9_us),
            bin(h.p99_99_us),
            bin(h.max_us)
        );
    }
    for h in hours {
        let n = h.histograms;
        let _ = write!(
            o,
            "CPU {}: {n} 5-minute histogram{}, {} of data",
            h.cpu,
            if n == 1 { "" } else { "s" },
            span(h.covered_ns)
        );
        if h.covered_ns < h.to_ns - h.from_ns {
            let _ = write!(o, " within the {}", span(h.to_ns - h.from_ns));
        }
        let _ = writeln!(
            o,
            " from {} to {}",
            format_utc(h.from_ns, false),
            format_utc(h.to_ns, false)
        );
        if h.overflows > 0 {
            let _ = writeln!(
                o,
                "CPU {}: {} sample{} at or beyond the histograms' last bin (\"beyond\"), the worst of them at most {}: the largest maximum of the 5-minute rows their spans overlap",
                h.cpu,
                h.overflows,
                if h.overflows == 1 { "" } else { "s" },
                lat(h.rows_max_ns)
            );
        }
    }
}

/// The segments, resumptions marked with the gap before them.
fn segments_text(o: &mut String, segments: &[SegmentView]) {
    let _ = writeln!(o, "segments");
    // A segment a signal stopped reads "stopped by SIGTERM"; "interrupted"
    // is kept for one whose process died.
    let labels: Vec<String> = segments
        .iter()
        .map(|s| shown(&end_label(&s.status, s.signal)).into_owned())
        .collect();
    let w = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(11);
    let _ = writeln!(
        o,
        "{:>5}  {:<8}  {:<20}  {:<w$}  {:<20}  {:<20}  {:>9}",
        "run", "uid", "started", "status", "first window", "last window end", "windows"
    );
    let t = |v: Option<i64>| v.map_or("-".to_string(), |v| format_utc(v, false));
    for (s, label) in segments.iter().zip(&labels) {
        let _ = write!(
            o,
            "{:>5}  {:<8}  {:<20}  {:<w$}  {:<20}  {:<20}  {:>9}",
            s.run,
            shown(&crate::store::short_id(Some(&s.uid))),
            shown(&jitterlab_core::units::to_second(&s.started_at)),
            label,
            t(s.first_window_ns),
            t(s.last_window_end_ns),
            s.windows
        );
        if s.resumed {
            match s.gap_before_ns {
                // The last window of a stopped segment counts whole, so a
                // quick restart can seem to overlap it.
                Some(g) if g < 1_000_000_000 => o.push_str("  resumed after under 1s"),
                Some(g) => {
                    let _ = write!(o, "  resumed after {}", span(g));
                }
                None => o.push_str("  resumed (gap unknown: the segment before left no end)"),
            }
        }
        o.push('\n');
    }
}

/// What happened to the task, with its time (none: nothing said).
fn marks_text(o: &mut String, marks: &[(i64, String)]) {
    if marks.is_empty() {
        return;
    }
    o.push_str("marks\n");
    for (at, text) in marks {
        let _ = writeln!(o, "  {}  {}", format_utc(*at, false), shown(text));
    }
}

/// What the retention holds now.
fn held_text(o: &mut String, held: &Held) {
    o.push_str("held now\n");
    let line = |o: &mut String, what: &str, h: &Option<HeldRows>| {
        match h {
            Some(h) => writeln!(
                o,
                "{what:<20}  {:>9}  from {}",
                h.rows,
                format_utc(h.oldest_ns, false)
            ),
            None => writeln!(o, "{what:<20}  {:>9}", 0),
        }
        .ok();
    };
    line(o, "window rows", &held.windows);
    line(o, "5-minute histograms", &held.histograms);
    line(o, "5-minute rows", &held.five_minute);
    line(o, "hourly rows", &held.hourly);
}

#[cfg(test)]
mod tests;
