//! A synthetic monitor series of any length (`jitterlab __synth-monitor`):
//! what a wake-up monitor at 1 ms leaves in the database after days or a
//! year, written through the same calls the monitor's writer makes, so
//! that the file's size and the report's speed on it are those of the real
//! thing (`bench/monitor-year.sh`).
//!
//! **Why a hidden subcommand** rather than a test binary: the benchmark
//! needs it in the release build it times the report with, and the same
//! binary then writes and reads the file; it changes nothing but the
//! database it is given (a new file: it refuses an existing one).
//!
//! **What is written.** One segment (a run of kind `monitor`) measuring
//! `cpus` CPUs (0, 1, …) at a 1 ms period in 1 s windows of 1 000 samples,
//! from `start` for `days` days. Per hour of windows, as one drain: the
//! window rows of the wake-up probe's four metrics (latency, period,
//! jitter, execution time) and their rollups ([`Store::monitor_windows`]),
//! the twelve 5-minute histograms of each CPU
//! ([`Store::monitor_histogram`]), then the default retention
//! ([`Store::monitor_prune`] with [`Retention::default`]: windows and
//! histograms for 7 days, 5-minute rows for a year, hourly rows for ever).
//!
//! **The latencies** come from a seeded generator ([`fastrand`]), so a seed
//! gives the same file: per window a minimum of 1.8–2.7 µs, a mean of
//! 3.5–4.7 µs, a maximum of 6 µs plus an exponential tail (mean 2 µs);
//! about four windows a day add a spike of 20–60 µs, one in two million
//! (about 16 a year at one CPU) one of 60–150 µs, and every night from
//! 02:00 to 02:10 UTC a job raises the maxima by 8 µs — the shape of an
//! OSADL plot. A window's histogram holds its minimum and its maximum as
//! one sample each and the other 998 around its mean, so that each
//! 5-minute histogram agrees with the rows beside it.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::probe::MAX_METRICS;
use jitterlab_core::result::{Params, ProbeKind};
use jitterlab_core::window::{WindowRow, WindowStat};

use super::{Pruner, Retention, FIVE_MINUTES, NS};
use crate::error::bad;
use crate::store::{RunKind, RunStart, RunStatus, Store};

/// What to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthRequest {
    /// Days of windows.
    pub days: u32,
    /// CPUs measured (0 … cpus−1).
    pub cpus: u32,
    /// The generator's seed.
    pub seed: u64,
    /// The first window's start, Unix seconds.
    pub start_s: i64,
    /// The series' name.
    pub name: String,
}

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthSummary {
    /// The segment's run.
    pub run: i64,
    /// Window rows written (every CPU), before the retention deleted the
    /// older ones.
    pub windows: u64,
    /// 5-minute histograms written.
    pub histograms: u64,
}

/// Samples per window: 1 s of a 1 ms period.
const SAMPLES: u64 = 1_000;
/// The period, ns.
const PERIOD_NS: i64 = 1_000_000;
/// 1 µs bins per histogram, as the recorder keeps by default.
const BINS: usize = jitterlab_core::defaults::HISTOGRAM_BUCKETS;
/// Windows per drain: an hour.
const BATCH: u64 = 3_600;
/// Windows per 5-minute histogram.
const SPAN: u64 = FIVE_MINUTES as u64;
/// The shape of a window's 998 samples around its mean's bin: (offset in
/// bins, samples).
const SHAPE: [(i64, u64); 5] = [(-1, 150), (0, 450), (1, 250), (2, 100), (3, 48)];

/// A finished 5-minute histogram waiting for its drain: the CPU, the wall
/// span (ns), the bins and the samples beyond them.
type Span = (u32, (i64, i64), Vec<u64>, u64);

/// One window of one CPU: its latency figures.
struct Latency {
    min: i64,
    mean: i64,
    max: i64,
    /// The sample (0 … 999) of the maximum in the window.
    max_sample: u64,
}

/// The latencies of the window starting `second` s into the day.
fn latency(rng: &mut fastrand::Rng, second_of_day: u64) -> Latency {
    let min = 1_800 + rng.i64(0..900);
    let mean = 3_500 + rng.i64(0..1_200);
    let tail = (-(1.0 - rng.f64()).ln() * 2_000.0) as i64;
    let mut max = 6_000 + tail;
    if rng.u32(..20_000) == 0 {
        max += rng.i64(20_000..60_000);
    }
    if rng.u32(..2_000_000) == 0 {
        max += rng.i64(60_000..150_000);
    }
    if (7_200..7_800).contains(&second_of_day) {
        max += 8_000;
    }
    Latency {
        min,
        mean,
        max,
        max_sample: rng.u64(..SAMPLES),
    }
}

/// The window row of `cpu` for window `w` with latencies `l`: the wake-up
/// probe's four metrics (its period and jitter follow from the spread of
/// the latencies; its execution time is the few hundred ns of a wake-up).
fn row(cpu: u32, w: u64, l: &Latency, rng: &mut fastrand::Rng) -> WindowRow {
    let spread = l.max - l.min;
    let cycle = w * SAMPLES + l.max_sample;
    let mut stats = [WindowStat::default(); MAX_METRICS];
    let stat = |min, max, mean| WindowStat {
        count: SAMPLES,
        min,
        max,
        mean,
        max_cycle: 0,
        max_at_ns: 0,
    };
    stats[0] = WindowStat {
        max_cycle: cycle,
        max_at_ns: cycle * PERIOD_NS as u64,
        ..stat(l.min, l.max, l.mean)
    };
    stats[1] = stat(PERIOD_NS - spread, PERIOD_NS + spread, PERIOD_NS);
    stats[2] = stat(-spread, spread, 0);
    stats[3] = stat(150, 400 + rng.i64(0..300), 200 + rng.i64(0..30));
    WindowRow {
        thread: cpu,
        cpu,
        window: w,
        start_ns: w * NS as u64,
        cycles: SAMPLES,
        overruns: 0,
        metrics: ProbeKind::Wakeup.metrics(),
        stats,
    }
}

/// Adds the samples of a window with latencies `l` to `bins` (module doc);
/// returns those beyond the last bin.
fn add_window(bins: &mut [u64], l: &Latency) -> u64 {
    let mut over = 0;
    let mut put = |ns: i64, n: u64| match usize::try_from(ns / 1_000) {
        Ok(b) if b < bins.len() => bins[b] += n,
        _ => over += n,
    };
    put(l.min, 1);
    put(l.max, 1);
    let (lo, hi) = (l.min / 1_000, l.max / 1_000);
    for (off, n) in SHAPE {
        let b = (l.mean / 1_000 + off).clamp(lo, hi);
        put(b * 1_000, n);
    }
    over
}

/// Writes the series `r` asks for into the new database `db`; `progress`
/// is told each day written.
pub fn synth(db: &Path, r: &SynthRequest, mut progress: impl FnMut(u32)) -> Result<SynthSummary> {
    if db.exists() {
        return Err(bad(format!(
            "{} exists; __synth-monitor fills a new database: remove it or give another --db",
            db.display()
        )));
    }
    if r.days == 0 || r.cpus == 0 {
        return Err(bad("--days and --cpus must be at least 1"));
    }
    let mut store = Store::open(db)?;
    let started_at = time::OffsetDateTime::from_unix_timestamp(r.start_s)
        .map_err(|e| bad(format!("--start: {e}")))?
        .format(&time::format_description::well_known::Rfc3339)?;
    let params = Params {
        duration_ns: None,
        cpus: (0..r.cpus as usize).collect(),
        ..Params::default()
    };
    let command: Vec<String> = ["jitterlab", "__synth-monitor"].map(String::from).to_vec();
    let ids = store.begin_run_in(
        &RunStart {
            started_at: &started_at,
            probe: "wakeup",
            command_line: &command,
            params_json: serde_json::to_string(&params)?,
            host_json: "{}".into(),
            hostname: "synthetic",
            kernel_release: "",
            machine_id: None,
            realtime: Some(true),
            kind: RunKind::Monitor,
            name: &r.name,
            spec_json: None,
        },
        "host",
    )?;
    let (seg, _) = store.monitor_begin(&r.name, ids.run, ids.cell, "latency")?;
    let wall_t0 = r.start_s * NS;
    let mut rng = fastrand::Rng::with_seed(r.seed);
    let mut pruner = Pruner::default();
    let mut bins = vec![vec![0u64; BINS]; r.cpus as usize];
    let mut over = vec![0u64; r.cpus as usize];
    let mut rows = Vec::with_capacity(BATCH as usize * r.cpus as usize);
    let mut spans: Vec<Span> = Vec::new();
    let total = u64::from(r.days) * 86_400;
    let mut summary = SynthSummary {
        run: ids.run,
        windows: 0,
        histograms: 0,
    };
    let mut w = 0u64;
    while w < total {
        let end = (w + BATCH).min(total);
        for window in w..end {
            for cpu in 0..r.cpus {
                let l = latency(
                    &mut rng,
                    (r.start_s + window as i64).rem_euclid(86_400) as u64,
                );
                rows.push(row(cpu, window, &l, &mut rng));
                over[cpu as usize] += add_window(&mut bins[cpu as usize], &l);
            }
            if (window + 1) % SPAN == 0 {
                let from = wall_t0 + (window + 1 - SPAN) as i64 * NS;
                let to = wall_t0 + (window + 1) as i64 * NS;
                for cpu in 0..r.cpus as usize {
                    let b = std::mem::replace(&mut bins[cpu], vec![0; BINS]);
                    spans.push((cpu as u32, (from, to), b, std::mem::take(&mut over[cpu])));
                }
            }
        }
        store.monitor_windows(&seg, &rows, wall_t0)?;
        summary.windows += rows.len() as u64;
        rows.clear();
        for (cpu, span, b, o) in spans.drain(..) {
            store.monitor_histogram(&seg, cpu, span, &b, o)?;
            summary.histograms += 1;
        }
        store.monitor_prune(
            &seg,
            Retention::default(),
            wall_t0 + end as i64 * NS,
            &mut pruner,
        )?;
        if end % 86_400 == 0 {
            progress((end / 86_400) as u32);
        }
        w = end;
    }
    // The run measured what it wrote, whatever time writing it took.
    let elapsed = total * NS as u64;
    store.finish_cell(
        ids.cell,
        jitterlab_core::cell::CellStatus::Completed,
        None,
        &jitterlab_core::cell::CellContext::default(),
        &[],
    )?;
    store.finish_run_row(ids.run, RunStatus::Completed, Some(true), elapsed, None)?;
    Ok(summary)
}

/// `jitterlab __synth-monitor`: writes the series, a line on stderr per 30
/// days, and what was written on stdout.
pub fn synth_main(db: &Path, r: &SynthRequest) -> Result<std::process::ExitCode> {
    let s = synth(db, r, |day| {
        if day % 30 == 0 {
            crate::output::errln!("__synth-monitor: day {day} of {}", r.days);
        }
    })?;
    let plural = |n: u32, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    crate::output::outln!(
        "series {} (run {}): {} of 1 s windows on {} from {}, {} window rows and {} 5-minute histograms written to {}",
        crate::output::shown(&r.name),
        s.run,
        plural(r.days, "day"),
        plural(r.cpus, "CPU"),
        jitterlab_core::units::format_utc(r.start_s * NS, false),
        s.windows,
        s.histograms,
        db.display()
    )?;
    Ok(std::process::ExitCode::SUCCESS)
}
