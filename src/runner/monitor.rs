//! `jitterlab monitor`: a wake-up latency probe that runs for months, as
//! OSADL's latency farm watches its machines.
//!
//! It is `run wakeup` without an end ([`super::Stop::Never`]) whose
//! writer does more with each drain (a [`Watch`], held by the
//! [`RowWriter`](super::lifecycle::RowWriter)):
//!
//! * the window rows go to the database with their 5-minute and hourly
//!   rollups in one transaction ([`Store::monitor_windows`]): nothing of a
//!   window is kept in memory once it is committed, so the monitor's
//!   memory is the same after a minute and after a year;
//! * every 5 minutes of windows each probe thread hands its 1 µs histogram
//!   over ([`jitterlab_core::fine_snapshot`]); the difference from the one
//!   before is that span's histogram, stored for the last hour's
//!   percentiles;
//! * every 5 minutes the retention deletes what the series no longer keeps
//!   ([`Store::monitor_prune`]);
//! * with `--max-latency`, each window whose maximum is over the limit is
//!   logged to the system log at priority warning, with what that CPU went
//!   through in the window (steal time, interrupts, softirqs: the kernel's
//!   counters read at each window's end), and counted in the live metrics.
//!
//! **A monitored task** (`monitor --comm/--pid/--tid`: the observe probe
//! under this writer): its window rows are its observer thread's, so an
//! alert takes the task's CPUs and, with `--explain`, its worst cycle's
//! short explanation from the probe's notes of that window
//! ([`crate::probe::watch`]).
//!
//! **Wall time.** Window rows are numbered from the run's first release on
//! the monotonic clock; rollups are aligned to the wall clock. Each drain
//! reads both clocks and converts with their current offset, so a clock
//! stepped by NTP after boot (a machine without a battery-backed clock
//! starts in 1970) moves the rollups with it rather than filing them a
//! year away.
//!
//! **Resuming.** Each start is a new run (a segment) of the series named
//! by `--series`; the series' rows are merged into, never replaced. A
//! reboot, a crash or a full disk loses at most the window being measured
//! when it happened: the rows are committed at every drain. The 1 µs
//! histogram is handed over once more at every stop the process sees (the
//! terminating signals included, `crate::termination`), so only what
//! cannot be caught (`kill -9`, a crash) loses percentiles: those of the
//! samples since the last hand-over, up to 5 minutes.
//!
//! **One monitor per series.** Two monitors of one series in one database
//! would interleave their segments, so a start whose series has a live
//! monitor is refused before it measures, naming it
//! ([`Store::live_monitor`]); two starts at once are settled when the
//! segment begins, the earlier run going on.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use jitterlab_core::fine_snapshot::{difference, FineReader, FineSnapshot};
use jitterlab_core::units::{format_ns, format_utc};
use jitterlab_core::window::WindowRow;
use jitterlab_sys as sys;

use crate::output::errln;
use crate::probe::watch::{self, WindowNote};
use crate::store::monitor::{Pruner, Resumed, Segment};
use crate::store::Store;
use crate::system::counters::{self, Counters};

pub use crate::probe::plan::MonitorOptions;

/// The database's page cache of a monitor, KiB ([`Store::cap_cache`]).
const CACHE_KIB: u32 = 256;

/// How often the retention runs.
const PRUNE_EVERY: Duration = Duration::from_secs(300);

/// Windows per 1 µs histogram handed over: 5 minutes of them.
pub fn histogram_every(window_ns: u64) -> u64 {
    (300_000_000_000 / window_ns.max(1)).max(1)
}

/// One probe thread's histogram hand-over, as the writer follows it.
struct FineFeed {
    cpu: u32,
    reader: FineReader,
    /// The snapshot before, and when (wall ns) it was taken.
    before: Option<(FineSnapshot, i64)>,
    /// Windows of the snapshot last stored.
    seen: u64,
}

/// The writer's side of a monitor: see the module doc.
pub struct Watch {
    options: MonitorOptions,
    segment: Segment,
    window_ns: u64,
    feeds: Vec<FineFeed>,
    pruner: Pruner,
    next_prune: Instant,
    root: std::path::PathBuf,
    /// The kernel's counters at the end of the last window seen, per CPU
    /// that window was on, for the alerts' explanations.
    counters: Option<Counters>,
    log: crate::system::syslog::SystemLog,
    /// Windows over `--max-latency` so far.
    pub alerts: u64,
    /// Failed writes so far, and when one was last said.
    failed: (u64, Option<Instant>),
    /// Rows a failed write could not store, written again with the next
    /// drain's (at most [`MAX_PENDING`]; older ones are lost and counted).
    pending: Vec<WindowRow>,
    /// Rows lost because the database refused them for too long.
    pub lost_rows: u64,
}

/// Rows kept for a database that refuses writes (a full disk): an hour of
/// 1 s windows on four CPUs, about 6 MB at most, so a disk cleaned up
/// within the hour loses nothing.
const MAX_PENDING: usize = 4 * 3_600;

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("segment", &self.segment)
            .field("alerts", &self.alerts)
            .finish_non_exhaustive()
    }
}

/// Wall-clock now, ns since the Unix epoch.
fn wall_now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The wall time of monotonic instant `mono_ns`, by the clocks' offset now.
fn wall_of(mono_ns: u64) -> i64 {
    let offset = wall_now_ns() - sys::monotonic_ns() as i64;
    offset + mono_ns as i64
}

impl Watch {
    /// Starts the segment of run `run` (one cell `cell`) in `options`'
    /// series and says on stderr whether it starts or resumes it.
    pub fn begin(
        store: &mut Store,
        root: &std::path::Path,
        options: MonitorOptions,
        (run, cell): (i64, i64),
        window_ns: u64,
        feeds: Vec<(u32, FineReader)>,
    ) -> Result<Watch> {
        store.cap_cache(CACHE_KIB)?;
        let (segment, resumed) = store.monitor_begin(&options.series, run, cell, "latency")?;
        errln!(
            "jitterlab: monitor: {}",
            resumption(&options.series, resumed.as_ref(), wall_now_ns())
        );
        let log = crate::system::syslog::SystemLog::open(root);
        if options.max_latency_ns.is_some() {
            errln!("jitterlab: monitor: alerts go to {}", log.destination());
            let cpus: Vec<usize> = feeds.iter().map(|(cpu, _)| *cpu as usize).collect();
            crate::metrics::alerts_armed(&cpus);
        }
        Ok(Watch {
            options,
            segment,
            window_ns,
            feeds: feeds
                .into_iter()
                .map(|(cpu, reader)| FineFeed {
                    cpu,
                    reader,
                    before: None,
                    seen: 0,
                })
                .collect(),
            pruner: Pruner::default(),
            next_prune: Instant::now(),
            root: root.to_path_buf(),
            counters: None,
            log,
            alerts: 0,
            failed: (0, None),
            pending: Vec::new(),
            lost_rows: 0,
        })
    }

    /// The latest histogram snapshots, taken before a drain pops its rows:
    /// every row pushed before a snapshot was published is then in the
    /// queue, so the rows a histogram ends with are stored first.
    pub fn take_snapshots(&mut self) -> Vec<(usize, FineSnapshot)> {
        let mut out = Vec::new();
        for (i, f) in self.feeds.iter_mut().enumerate() {
            if let Some(s) = f.reader.read() {
                if s.windows != f.seen {
                    out.push((i, s.clone()));
                }
            }
        }
        out
    }

    /// Stores one drain's rows (with the rollups), then the histograms
    /// taken before it, runs the retention when due and logs the alerts.
    pub fn store(
        &mut self,
        store: &mut Store,
        t0: u64,
        rows: &[WindowRow],
        snapshots: Vec<(usize, FineSnapshot)>,
    ) -> Result<()> {
        let wall_t0 = wall_of(t0);
        self.alert(rows, wall_t0);
        let stored = if self.pending.is_empty() {
            store.monitor_windows(&self.segment, rows, wall_t0)
        } else {
            let mut all = std::mem::take(&mut self.pending);
            all.extend_from_slice(rows);
            let r = store.monitor_windows(&self.segment, &all, wall_t0);
            if r.is_err() {
                self.pending = all;
            }
            r
        };
        if let Err(e) = stored {
            if self.pending.is_empty() {
                self.pending.extend_from_slice(rows);
            }
            let over = self.pending.len().saturating_sub(MAX_PENDING);
            self.pending.drain(..over);
            self.lost_rows += over as u64;
            return Err(e);
        }
        // What happened to the task (a re-attach), at its own time.
        for (mono, text) in watch::take_marks() {
            store.monitor_mark(&self.segment, wall_of(mono), &text)?;
        }
        for (i, snap) in snapshots {
            let f = &mut self.feeds[i];
            // The span's wall times: from the end of the windows of the
            // snapshot before (the start at first) to the end of this one's.
            let to = wall_t0 + (snap.windows * self.window_ns) as i64;
            let from = match &f.before {
                Some((b, _)) => wall_t0 + (b.windows * self.window_ns) as i64,
                None => wall_t0,
            };
            let (counts, over) = difference(&snap, f.before.as_ref().map(|(b, _)| b));
            store.monitor_histogram(&self.segment, f.cpu, (from, to), &counts, over)?;
            f.seen = snap.windows;
            f.before = Some((snap, to));
        }
        if Instant::now() >= self.next_prune {
            self.next_prune = Instant::now() + PRUNE_EVERY;
            store.monitor_prune(
                &self.segment,
                self.options.retention,
                wall_now_ns(),
                &mut self.pruner,
            )?;
        }
        Ok(())
    }

    /// At the end of the monitor: the rows a failed write left waiting
    /// (its last drains, on a full disk) are written once more; those that
    /// still cannot be are counted as lost. Returns what to say when rows
    /// were lost, none when every row reached the database.
    pub fn finish(&mut self, store: Option<&mut Store>, t0: Option<u64>) -> Option<String> {
        let mut store = store;
        if let Some(s) = store.as_deref_mut() {
            for (mono, text) in watch::take_marks() {
                if let Err(e) = s.monitor_mark(&self.segment, wall_of(mono), &text) {
                    crate::output::errln!("jitterlab: monitor: a mark could not be stored: {e:#}");
                }
            }
        }
        let why = match (store, t0) {
            _ if self.pending.is_empty() => None,
            (Some(store), Some(t0)) => {
                let rows = std::mem::take(&mut self.pending);
                match store.monitor_windows(&self.segment, &rows, wall_of(t0)) {
                    Ok(()) => None,
                    Err(e) => {
                        self.lost_rows += rows.len() as u64;
                        Some(format!("{e:#}"))
                    }
                }
            }
            _ => {
                self.lost_rows += std::mem::take(&mut self.pending).len() as u64;
                Some("no database".into())
            }
        };
        (self.lost_rows > 0).then(|| {
            format!(
                "the monitor's last window rows could not be stored: {} row(s) lost{}",
                self.lost_rows,
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            )
        })
    }

    /// Says that a drain could not be stored (a full disk, a database
    /// locked by another program): at once the first time, then at most
    /// once a minute with the count, so a disk full for hours does not
    /// flood the journal. The monitor goes on: the rows wait (up to
    /// [`MAX_PENDING`]) and the next drain writes them with its own.
    pub fn write_failed(&mut self, error: &str) {
        self.failed.0 += 1;
        let due = self
            .failed
            .1
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(60));
        if due {
            self.failed.1 = Some(Instant::now());
            errln!(
                "jitterlab: monitor: storing window rows failed ({} time(s) so far; {} row(s) wait to be written, {} lost): {error}",
                self.failed.0,
                self.pending.len(),
                self.lost_rows
            );
        }
    }

    /// Logs each row over `--max-latency` with the kernel's counters of its
    /// CPU since the window before (read now, at most a drain after the
    /// window ended).
    fn alert(&mut self, rows: &[WindowRow], wall_t0: i64) {
        let Some(limit) = self.options.max_latency_ns else {
            return;
        };
        if rows.is_empty() {
            return;
        }
        let now = counters::read(&self.root);
        let before = self.counters.replace(now.clone());
        // A monitored task's rows are its observer's: the task's CPUs and
        // worst cycles come beside them.
        let last = rows.iter().map(|r| r.window).max().unwrap_or(0);
        let notes = watch::take_until(last);
        for row in rows {
            let Some(st) = row.stat("latency").filter(|s| s.count > 0) else {
                continue;
            };
            if st.max <= 0 || st.max as u64 <= limit {
                continue;
            }
            self.alerts += 1;
            let note = notes.iter().find(|n| n.window == row.window);
            let cpu = note.and_then(|n| n.cpus.first()).map_or(row.cpu, |&c| c);
            crate::metrics::alert(cpu as usize);
            let at = wall_t0 + st.max_at_ns as i64;
            let explanation = match &before {
                Some(b) => explain(b, &now, cpu as usize),
                None => "no counters yet (the first window of this start)".into(),
            };
            let message = match note {
                Some(n) => task_alert(n, st.max, limit, format_utc(at, true), &explanation)
                    + &format!(" (cycle {} of run {}, window {})", st.max_cycle, self.segment.run, row.window),
                None => format!(
                "wake-up latency {} over --max-latency {} on CPU {} at {} (cycle {} of run {}, window {}); in that window the CPU had {}",
                format_ns(st.max),
                format_ns(limit as i64),
                row.cpu,
                format_utc(at, true),
                st.max_cycle,
                self.segment.run,
                row.window,
                explanation
                ),
            };
            let fields = [
                ("JITTERLAB_SERIES", self.options.series.clone()),
                ("JITTERLAB_CPU", cpu.to_string()),
                ("JITTERLAB_LATENCY_NS", st.max.to_string()),
                ("JITTERLAB_LIMIT_NS", limit.to_string()),
                ("JITTERLAB_RUN", self.segment.run.to_string()),
                ("JITTERLAB_CYCLE", st.max_cycle.to_string()),
            ];
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            if self.log.warning(&message, &fields).is_err() {
                crate::metrics::alert_log_failed();
            }
        }
    }
}

/// The alert line of a monitored task's window `n` whose worst latency
/// `max` is over `limit`: the CPUs its cycles ran on (the counters'
/// `explanation` is the first one's), and with `--explain` what delayed
/// its worst cycle, in short.
fn task_alert(n: &WindowNote, max: i64, limit: u64, at: String, explanation: &str) -> String {
    let cpus = match n.cpus.as_slice() {
        [one] => format!("CPU {one}"),
        many => {
            let list: jitterlab_core::units::CpuList = many.iter().map(|&c| c as usize).collect();
            format!("CPUs {list}")
        }
    };
    let mut o = format!(
        "task latency {} over --max-latency {} on {cpus} at {at}; in that window the task's CPU had {explanation}",
        format_ns(max),
        format_ns(limit as i64),
    );
    if let Some((_, why)) = &n.worst {
        o.push_str("; worst ");
        o.push_str(why);
    }
    o
}

/// What the counters of `cpu` say between two readings, in words.
fn explain(before: &Counters, after: &Counters, cpu: usize) -> String {
    let (per_cpu, _) = counters::delta(before, after, &[cpu]);
    let Some(c) = per_cpu.first() else {
        return "no counters".into();
    };
    let top = |m: &std::collections::BTreeMap<String, u64>| {
        let mut v: Vec<(&String, &u64)> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter()
            .take(4)
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = vec![format!("steal {}", format_ns(c.steal_ns as i64))];
    parts.push(match c.irqs {
        0 => "no interrupts".into(),
        n => format!("{n} interrupts ({})", top(&c.irq_lines)),
    });
    if !c.softirqs.is_empty() {
        parts.push(format!("softirqs {}", top(&c.softirqs)));
    }
    let missing = after.missing();
    if !missing.is_empty() {
        parts.push(format!("unknown: {} unreadable", missing.join(", ")));
    }
    parts.join("; ")
}

/// "starts series S" or "resumes series S after a gap of G (the previous
/// start, run N, ended …)".
fn resumption(series: &str, resumed: Option<&Resumed>, now_ns: i64) -> String {
    match resumed {
        None => format!("starts series {series}"),
        Some(r) => {
            let gap = match r.last_ns {
                // The last window of a stopped start counts whole, so a
                // quick restart can seem to overlap it.
                Some(last) if now_ns.saturating_sub(last) < 1_000_000_000 => format!(
                    "under a second after its last stored window ({})",
                    format_utc(last, false)
                ),
                Some(last) => format!(
                    "after a gap of {} since its last stored window ({})",
                    format_ns(now_ns.saturating_sub(last)),
                    format_utc(last, false)
                ),
                None => "(its previous start stored no window)".into(),
            };
            format!(
                "resumes series {series} {gap}; the previous start, run {}, is {}",
                r.previous_run, r.previous_status
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::probe::MAX_METRICS;
    use jitterlab_core::result::ProbeKind;
    use jitterlab_core::window::WindowStat;

    use crate::store::{RunKind, RunStart};

    fn row(window: u64) -> WindowRow {
        let mut stats = [WindowStat::default(); MAX_METRICS];
        stats[0] = WindowStat {
            count: 1000,
            min: 2_000,
            max: 9_000,
            mean: 4_000,
            max_cycle: window * 1000 + 7,
            max_at_ns: window * 1_000_000_000 + 7_000_000,
        };
        WindowRow {
            thread: 0,
            cpu: 1,
            window,
            start_ns: window * 1_000_000_000,
            cycles: 1000,
            overruns: 0,
            metrics: ProbeKind::Wakeup.metrics(),
            stats,
        }
    }

    #[test]
    fn a_task_s_alert_names_its_cpus_and_its_worst_cycle_s_causes() {
        let note = WindowNote {
            window: 7,
            cpus: vec![2, 3],
            worst: Some((
                812_000,
                "cycle 1234 late by 812.000us: ksoftirqd/2 (pid 21, prio 120) 640.000us".into(),
            )),
        };
        assert_eq!(
            task_alert(&note, 812_000, 500_000, "2026-11-27T10:00:00.000Z".into(), "steal 0ns; no interrupts"),
            "task latency 812.000us over --max-latency 500.000us on CPUs 2-3 at 2026-11-27T10:00:00.000Z; in that window the task's CPU had steal 0ns; no interrupts; worst cycle 1234 late by 812.000us: ksoftirqd/2 (pid 21, prio 120) 640.000us"
        );
        let plain = WindowNote {
            cpus: vec![1],
            worst: None,
            ..note
        };
        assert_eq!(
            task_alert(&plain, 600_000, 500_000, "T".into(), "no counters"),
            "task latency 600.000us over --max-latency 500.000us on CPU 1 at T; in that window the task's CPU had no counters"
        );
    }

    #[test]
    fn rows_a_full_disk_refused_are_written_once_it_has_room() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("m.db")).unwrap();
        let cmd = vec!["jitterlab".to_string()];
        let params = serde_json::to_string(&jitterlab_core::result::Params::default()).unwrap();
        let ids = store
            .begin_run_in(
                &RunStart {
                    started_at: "2026-11-24T00:00:00Z",
                    probe: "wakeup",
                    command_line: &cmd,
                    params_json: params,
                    host_json: "{}".into(),
                    hostname: "plc-7",
                    kernel_release: "6.18.0",
                    machine_id: None,
                    realtime: Some(true),
                    kind: RunKind::Monitor,
                    name: "default",
                    spec_json: None,
                },
                "host",
            )
            .unwrap();
        let options = MonitorOptions {
            series: "default".into(),
            retention: crate::store::monitor::Retention::default(),
            max_latency_ns: None,
        };
        let mut w = Watch::begin(
            &mut store,
            dir.path(),
            options,
            (ids.run, ids.cell),
            1_000_000_000,
            Vec::new(),
        )
        .unwrap();
        let t0 = sys::monotonic_ns();
        w.store(&mut store, t0, &[row(0)], Vec::new()).unwrap();
        store.cap_pages(true).unwrap();
        // Enough rows to need new pages: refused, kept.
        let many: Vec<WindowRow> = (1..400).map(row).collect();
        let e = w.store(&mut store, t0, &many, Vec::new()).unwrap_err();
        assert!(format!("{e:#}").contains("full"), "{e:#}");
        assert_eq!((w.pending.len(), w.lost_rows), (399, 0));
        let e = w
            .store(&mut store, t0, &[row(400)], Vec::new())
            .unwrap_err();
        assert!(format!("{e:#}").contains("full"), "{e:#}");
        assert_eq!(w.pending.len(), 400);
        store.cap_pages(false).unwrap();
        w.store(&mut store, t0, &[row(401)], Vec::new()).unwrap();
        // The last drain refused at the end: written once more, or lost
        // and counted.
        store.cap_pages(true).unwrap();
        let more: Vec<WindowRow> = (402..800).map(row).collect();
        assert!(w.store(&mut store, t0, &more, Vec::new()).is_err());
        let said = w.finish(Some(&mut store), Some(t0)).unwrap();
        assert!(
            said.starts_with(
                "the monitor's last window rows could not be stored: 398 row(s) lost ("
            ),
            "{said}"
        );
        assert!(said.contains("full"), "{said}");
        assert_eq!((w.pending.len(), w.lost_rows), (0, 398));
        store.cap_pages(false).unwrap();
        assert!(w.pending.is_empty());
        let windows = store.window_count_for_tests(ids.cell);
        assert_eq!(windows, 402);
    }
}
