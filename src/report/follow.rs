//! Watching a run in progress: `jitterlab report [RUN] --follow`, and what
//! a report says of a run that is still measuring.
//!
//! **Live figures.** A run still measuring has no result yet, only the
//! window rows its writer commits (every 100 ms, one row per thread and
//! window). [`running_run`] (a `jitterlab run`) and [`measuring_cells`]
//! (the cell a bench measures now, under its tables) print what those rows
//! add up to: per metric count, min, max and mean, with how much was
//! measured of how much was asked for. Percentiles, outliers and limits
//! need the histograms and the result, stored at the end, and say so.
//!
//! **The loop.** [`watch`] knows nothing of formats or of the database: it
//! polls a cheap key ([`Store::progress`]: the run's status, each cell's
//! status, the newest window row of the cells measuring), calls the render
//! closure only when the key changed, hands the text to a [`Sink`] only when
//! it differs from the last one shown, and ends when the poll says the run
//! is no longer running (after a last render) or when a terminating signal
//! (`crate::termination`) raises the stop flag. Any renderer plugs in — text, Markdown, CSV, JSON, HTML —
//! as a `Fn() -> Result<String>`, and any sink:
//!
//! * [`TerminalSink`] — stdout is a terminal: each render redraws the
//!   screen in place, as `watch(1)` does (cursor home, each line written
//!   over the old one and the rest of the line cleared, the rest of the
//!   screen cleared; no flicker from a full clear), clipped to the
//!   terminal's size with a line saying how much is cut, the cursor hidden
//!   meanwhile. When the run ends the screen is cleared and the whole final
//!   report printed, so it stays in the scrollback; Ctrl-C leaves the last
//!   screen and shows the cursor again.
//! * [`PipeSink`] — stdout is not a terminal (a pipe, a file): each render
//!   follows a line `--- <time> ---` (UTC, RFC 3339, to the second), so a
//!   script splits the stream on those lines and the last part is the final
//!   report. A line rather than a form feed: it carries the time, and
//!   neither `less` nor an editor shows a form feed as a separator.
//! * [`FileSink`] — `-o FILE`: each render replaces FILE atomically (a
//!   temporary file in the same directory, renamed over FILE), so a reader
//!   — a browser reloading an HTML report, a plant PC's file share — never
//!   sees half a report.
//!
//! The poll runs every window of the cell measuring (its stored
//! parameters; 1 s when none say), clamped to 100 ms … 1 s: a new window
//! is shown once it is committed, and the end of a run with long windows
//! is still noticed within a second. The pause is cut in 50 ms slices so
//! that Ctrl-C ends the watch at once. A run whose process died is marked
//! interrupted by the poll itself, so the watch ends with its last render
//! and says so.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use jitterlab_core::probe::MetricUnit;
use jitterlab_core::units::{format_ns, CpuList};

use crate::output::{errln, write_to};
use crate::store::{LiveCell, RunProgress, RunStatus, Store};

use super::text::us;
use crate::output::shown;

/// Shortest pause between two polls.
const POLL_MIN: Duration = Duration::from_millis(100);
/// Longest pause between two polls.
const POLL_MAX: Duration = Duration::from_secs(1);
/// Slice of a pause after which the stop flag is read again.
const SLICE: Duration = Duration::from_millis(50);
/// Width of a figure column of the live table.
const COL: usize = 11;
/// Width of the metric-name column.
const NAME: usize = 8;

// ---------------------------------------------------------------------------
// What a report says of a run in progress.

/// A length of a run: under a minute in the readable unit of the summary
/// (`2.000s`, `250.000ms`), else whole hours, minutes and seconds
/// (`47h 59m 59s`, `2m 05s`), which a watcher of a long run reads at a
/// glance.
fn span(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, _) => format_ns(i64::try_from(ns).unwrap_or(i64::MAX)),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, s) => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// The live table of one measuring cell: how much was measured, then per
/// metric of its probe with samples count, min, max and mean.
fn cell_figures(o: &mut String, c: &LiveCell) {
    use std::fmt::Write as _;
    let Some((probe, params)) = &c.plan else {
        let _ = writeln!(
            o,
            "{} window rows, {} cycles stored; its probe and parameters were not, so their figures cannot be named.",
            c.windows, c.cycles
        );
        return;
    };
    if c.windows == 0 {
        let _ = writeln!(
            o,
            "no window stored yet: the first comes after {}.",
            span(params.window_ns)
        );
        return;
    }
    let of = params
        .duration_ns
        .map(|d| format!(" of {}", span(d)))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "{}{of} measured: {} window rows, {} cycles.",
        span(c.measured_ns),
        c.windows,
        c.cycles
    );
    o.push_str(
        "Figures so far, from the stored windows: count, min, max and mean \
         (percentiles, outliers and limits come with the result at the end).\n\n",
    );
    let defs = probe.metrics();
    let unit = defs.first().map_or(MetricUnit::Ns, |d| d.unit);
    let cpus: CpuList = params.cpus.iter().copied().collect();
    let title = if params.cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus} combined")
    };
    match unit {
        MetricUnit::Ns => {
            let _ = writeln!(
                o,
                "{title} (us, threshold {}us)",
                us(params.threshold_ns as i64)
            );
        }
        MetricUnit::Cycles => {
            let _ = writeln!(o, "{title} (cycles)");
        }
    }
    let name_w = defs
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(0)
        .max(NAME);
    let _ = write!(o, "{:<name_w$}", "metric");
    for h in ["count", "min", "max", "mean"] {
        let _ = write!(o, "{h:>COL$}");
    }
    o.push('\n');
    let mut rows = 0;
    for d in defs {
        let Some(s) = c.metrics.get(d.name) else {
            continue;
        };
        rows += 1;
        let _ = write!(o, "{:<name_w$}{:>COL$}", d.name, s.count);
        for v in [s.min, s.max, s.mean] {
            let cell = match (v, d.unit) {
                (None, _) => "-".to_string(),
                (Some(v), MetricUnit::Ns) => us(v),
                (Some(v), MetricUnit::Cycles) => v.to_string(),
            };
            let _ = write!(o, "{cell:>COL$}");
        }
        o.push('\n');
    }
    if rows == 0 {
        o.push_str("(no samples)\n");
    }
}

/// What `report` prints, in text, for a `jitterlab run` still measuring:
/// a line saying so, then its figures so far ([`cell_figures`]).
pub fn running_run(id: i64, name: &str, started_at: &str, live: &[LiveCell]) -> String {
    let mut o = format!(
        "run {id} ({}, started {}) is running",
        shown(name),
        shown(started_at)
    );
    match live {
        [] => o.push_str(": no cell is measuring now.\n"),
        [c] => {
            o.push_str(": ");
            cell_figures(&mut o, c);
        }
        cells => {
            o.push_str(".\n");
            o.push_str(&measuring_cells(cells));
        }
    }
    o
}

/// What `report` prints, in text, under the tables of a bench still
/// measuring: each cell measuring now with its figures so far.
pub fn measuring_cells(live: &[LiveCell]) -> String {
    let mut o = String::new();
    for c in live {
        o.push_str(&format!(
            "\nmeasuring cell {} of {}, {}: ",
            c.position,
            c.of,
            shown(&c.name)
        ));
        cell_figures(&mut o, c);
    }
    o
}

// ---------------------------------------------------------------------------
// Where the renders go.

/// Where [`watch`] shows each render.
pub trait Sink {
    /// Shows a render that differs from the one shown before.
    fn show(&mut self, text: &str) -> Result<()>;
    /// The watch ends: `last` is the final render when the run ended,
    /// `None` when the watch was stopped (Ctrl-C) or failed.
    fn end(&mut self, last: Option<&str>) -> Result<()>;
}

/// One screen of `text` for a terminal of `rows` × `cols` (see the module
/// doc): cursor home, each line clipped to the width with the rest of the
/// line cleared, at most `rows - 1` lines (the last of them saying how many
/// more there are when the text is longer), the rest of the screen
/// cleared. Never writes on the last row, so the screen does not scroll.
pub fn screen(text: &str, rows: usize, cols: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let room = rows.saturating_sub(1).max(1);
    let (shown_lines, cut) = if lines.len() > room {
        (room - 1, lines.len() - (room - 1))
    } else {
        (lines.len(), 0)
    };
    let mut o = String::from("\x1b[H");
    let clip = |l: &str| -> String { l.chars().take(cols.max(1)).collect() };
    for l in &lines[..shown_lines] {
        o.push_str(&clip(l));
        o.push_str("\x1b[K\n");
    }
    if cut > 0 {
        o.push_str(&clip(&format!(
            "… {cut} more lines: the whole report is printed when the run ends"
        )));
        o.push_str("\x1b[K\n");
    }
    o.push_str("\x1b[J");
    o
}

/// Redraws a terminal in place (see the module doc).
pub struct TerminalSink<W: Write> {
    out: W,
    /// The terminal's rows and columns, read at each render.
    size: fn() -> Option<(usize, usize)>,
    /// The cursor is hidden and must be shown again.
    hidden: bool,
}

/// Hides the cursor.
const HIDE: &str = "\x1b[?25l";
/// Shows the cursor.
const SHOW: &str = "\x1b[?25h";

impl TerminalSink<io::Stdout> {
    /// The terminal on stdout.
    pub fn stdout() -> Self {
        TerminalSink::new(io::stdout(), || {
            console::Term::stdout()
                .size_checked()
                .map(|(r, c)| (usize::from(r), usize::from(c)))
        })
    }
}

impl<W: Write> TerminalSink<W> {
    /// A terminal sink writing to `out`, whose size `size` tells.
    pub fn new(out: W, size: fn() -> Option<(usize, usize)>) -> Self {
        TerminalSink {
            out,
            size,
            hidden: false,
        }
    }
}

impl<W: Write> Sink for TerminalSink<W> {
    fn show(&mut self, text: &str) -> Result<()> {
        let (rows, cols) = (self.size)().unwrap_or((24, 80));
        let mut frame = String::new();
        if !self.hidden {
            frame.push_str(HIDE);
            self.hidden = true;
        }
        frame.push_str(&screen(text, rows, cols));
        write_to(&mut self.out, &frame)
    }

    fn end(&mut self, last: Option<&str>) -> Result<()> {
        let mut tail = String::new();
        if let Some(text) = last {
            tail.push_str("\x1b[H\x1b[2J");
            tail.push_str(text);
        }
        if self.hidden {
            tail.push_str(SHOW);
            self.hidden = false;
        }
        write_to(&mut self.out, &tail)
    }
}

impl<W: Write> Drop for TerminalSink<W> {
    /// An error or a panic between two renders still gives the cursor back.
    fn drop(&mut self) {
        if self.hidden {
            let _ = self.out.write_all(SHOW.as_bytes());
            let _ = self.out.flush();
        }
    }
}

/// Writes each render after a line `--- <time> ---` (see the module doc).
pub struct PipeSink<W: Write> {
    out: W,
    /// The time of the separator line.
    now: fn() -> String,
}

impl<W: Write> PipeSink<W> {
    /// A pipe sink writing to `out`, stamping each render with `now()`.
    pub fn new(out: W, now: fn() -> String) -> Self {
        PipeSink { out, now }
    }
}

impl<W: Write> Sink for PipeSink<W> {
    fn show(&mut self, text: &str) -> Result<()> {
        let mut o = format!("--- {} ---\n{text}", (self.now)());
        if !o.ends_with('\n') {
            o.push('\n');
        }
        write_to(&mut self.out, &o)
    }

    fn end(&mut self, _last: Option<&str>) -> Result<()> {
        Ok(())
    }
}

/// The time now, UTC, RFC 3339 to the second: `2026-11-24T04:50:36Z`.
pub fn now_utc() -> String {
    let t = time::OffsetDateTime::now_utc();
    t.replace_nanosecond(0)
        .unwrap_or(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Replaces a file atomically with each render (see the module doc), by
/// [`crate::out_files::write_replacing`], as `report -o FILE` writes it once.
pub struct FileSink {
    path: PathBuf,
}

impl FileSink {
    /// A sink that writes `path` (checked beforehand, as every `-o`).
    pub fn new(path: &Path) -> Self {
        FileSink {
            path: path.to_path_buf(),
        }
    }
}

impl Sink for FileSink {
    fn show(&mut self, text: &str) -> Result<()> {
        crate::out_files::write_replacing(&self.path, text)
    }

    fn end(&mut self, _last: Option<&str>) -> Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The loop.

/// One poll of [`watch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll<K> {
    /// Equal keys: nothing a report shows has changed.
    pub key: K,
    /// False once the run ended: the watch renders a last time and ends.
    pub running: bool,
    /// Pause before the next poll.
    pub every: Duration,
}

/// How a watch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended<K> {
    /// The run ended; the last poll's key.
    Run(K),
    /// A terminating signal (`crate::termination`).
    Stopped,
}

/// Sleeps `every`, in slices; true when `stop` was raised meanwhile.
fn pause(every: Duration, stop: &AtomicBool) -> bool {
    let mut left = every;
    while !left.is_zero() {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        let step = left.min(SLICE);
        std::thread::sleep(step);
        left -= step;
    }
    stop.load(Ordering::Relaxed)
}

/// Polls, renders when the key changed, shows when the text changed, until
/// the run ends or `stop` is raised (see the module doc). The sink's
/// [`Sink::end`] is called on every way out, errors included.
pub fn watch<K: PartialEq>(
    mut poll: impl FnMut() -> Result<Poll<K>>,
    render: impl Fn() -> Result<String>,
    sink: &mut dyn Sink,
    stop: &AtomicBool,
) -> Result<Ended<K>> {
    let mut last_key: Option<K> = None;
    let mut shown_text: Option<String> = None;
    let mut step = || -> Result<Option<Ended<K>>> {
        if stop.load(Ordering::Relaxed) {
            return Ok(Some(Ended::Stopped));
        }
        let p = poll()?;
        if last_key.as_ref() != Some(&p.key) {
            let text = render()?;
            if shown_text.as_ref() != Some(&text) {
                sink.show(&text)?;
                shown_text = Some(text);
            }
            last_key = Some(p.key);
        }
        if !p.running {
            return Ok(Some(Ended::Run(last_key.take().expect("set above"))));
        }
        Ok(pause(p.every, stop).then_some(Ended::Stopped))
    };
    let ended = loop {
        match step() {
            Ok(Some(e)) => break Ok(e),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
    };
    match ended {
        Ok(Ended::Run(k)) => {
            sink.end(shown_text.as_deref())?;
            Ok(Ended::Run(k))
        }
        Ok(Ended::Stopped) => {
            sink.end(None)?;
            Ok(Ended::Stopped)
        }
        Err(e) => {
            let _ = sink.end(None);
            Err(e)
        }
    }
}

/// The pause between polls for a window of `window_ns` (see the module
/// doc).
pub fn poll_every(window_ns: u64) -> Duration {
    Duration::from_nanos(window_ns).clamp(POLL_MIN, POLL_MAX)
}

/// `jitterlab report RUN --follow [-o FILE]`: watches run `run` of `store`,
/// showing what `render` makes of it, on stdout (a terminal or not) or in
/// `output`. Exit 0 when the run ended or on Ctrl-C; a run that ended
/// interrupted is said on stderr.
pub fn follow(
    store: &Store,
    run: i64,
    output: Option<&Path>,
    render: impl Fn() -> Result<String>,
) -> Result<ExitCode> {
    let stop = crate::termination::stop_flag()?;
    let mut sink: Box<dyn Sink> = match output {
        Some(p) => Box::new(FileSink::new(p)),
        None if io::stdout().is_terminal() => Box::new(TerminalSink::stdout()),
        None => Box::new(PipeSink::new(io::stdout(), now_utc)),
    };
    let poll = || -> Result<Poll<RunProgress>> {
        let p = store.progress(run)?.with_context(|| {
            format!("run {run} is no longer in the database; list the runs with: jitterlab runs")
        })?;
        Ok(Poll {
            running: p.status == RunStatus::Running,
            every: poll_every(p.window_ns),
            key: p,
        })
    };
    match watch(poll, render, sink.as_mut(), &stop)? {
        Ended::Run(p) => match p.status {
            RunStatus::Interrupted => errln!(
                "jitterlab: run {run} was interrupted before its end (a signal, an error, or its process died); the report shows what it stored"
            ),
            RunStatus::BreakTrace => errln!("jitterlab: run {run} was stopped by --break-trace"),
            RunStatus::Completed | RunStatus::Running => {}
        },
        Ended::Stopped => {}
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;
