//! Window rows as CSV, written as they arrive.
//!
//! A run of hours produces one row per probe thread per window (1 s by
//! default); the timeline plot and any spreadsheet want them as a flat table.
//! [`WindowCsv`] writes the header once when it is created, then one line per
//! [`WindowRow`], so it can sit at the end of the window writer thread and
//! stream a file while the probe still runs — nothing is kept in memory.
//!
//! Columns, in this order (design rule 9: a CSV has a header):
//!
//! ```text
//! thread,cpu,window,start_ns,cycles,overruns,
//! latency_count,latency_min_ns,latency_max_ns,latency_mean_ns,
//! period_count,period_min_ns,…,exec_mean_ns
//! ```
//!
//! one group of four per metric of the probe's descriptor, in its order and
//! under its name (`_cycles` instead of `_ns` for a metric in CPU cycles);
//! each row's figures are looked up by those names. All times are integer
//! nanoseconds, exactly as measured (design rule 1); `start_ns` is relative to
//! the run's first release. When a metric has no sample in a window (period and
//! jitter have none for the very first cycle) its count is `0` and its
//! min/max/mean fields are empty rather than a misleading `0` (so are those
//! of a metric the row does not carry). Every field is a
//! number or empty, so no quoting is ever needed. Lines end with `\n`.
//!
//! Each row is formatted into a reused buffer (no allocation per row once it
//! has grown) and handed to the writer in a single `write_all`. The writer is
//! not buffered here: wrap a file in a `BufWriter` and call
//! [`WindowCsv::flush`] after each batch of rows, so that a crash costs at most
//! the rows of the last batch (design rule 7).
//!
//! The design rules cited here are in `docs/design.md`.

use std::fmt::Write as _;
use std::io::{self, Write};

use jitterlab_core::probe::MetricDef;
use jitterlab_core::window::WindowRow;

/// Streams window rows as CSV to `W`.
#[derive(Debug)]
pub struct WindowCsv<W: Write> {
    out: W,
    line: String,
    metrics: &'static [MetricDef],
}

/// The header line for a probe's metric table (its descriptor's
/// `metrics`), without its line ending. A metric in cycles has `_cycles`
/// columns.
pub fn header(defs: &[MetricDef]) -> String {
    let mut h = String::from("thread,cpu,window,start_ns,cycles,overruns");
    for d in defs {
        let (n, u) = (d.name, d.unit.name());
        // Writing into a String cannot fail.
        let _ = write!(h, ",{n}_count,{n}_min_{u},{n}_max_{u},{n}_mean_{u}");
    }
    h
}

impl<W: Write> WindowCsv<W> {
    /// Writes the header line for the probe's metrics (its descriptor's
    /// `metrics`) and returns the writer.
    pub fn new(mut out: W, defs: &'static [MetricDef]) -> io::Result<Self> {
        let mut line = header(defs);
        line.push('\n');
        out.write_all(line.as_bytes())?;
        line.clear();
        Ok(WindowCsv {
            out,
            line,
            metrics: defs,
        })
    }

    /// Writes one row as one line, its figures found by the header's metric
    /// names.
    pub fn write_row(&mut self, row: &WindowRow) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        // Writing into a String cannot fail.
        let _ = write!(
            l,
            "{},{},{},{},{},{}",
            row.thread, row.cpu, row.window, row.start_ns, row.cycles, row.overruns
        );
        for d in self.metrics {
            match row.stat(d.name).filter(|s| s.count > 0) {
                None => l.push_str(",0,,,"),
                Some(s) => {
                    let _ = write!(l, ",{},{},{},{}", s.count, s.min, s.max, s.mean);
                }
            }
        }
        l.push('\n');
        self.out.write_all(l.as_bytes())
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer, to finish it.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::probe::MAX_METRICS;
    use jitterlab_core::result::ProbeKind;
    use jitterlab_core::window::WindowStat;

    /// A row of `kind`'s table with `stats` in its first slots.
    fn row(kind: ProbeKind, head: [u64; 6], stats: &[WindowStat]) -> WindowRow {
        let mut all = [WindowStat::default(); MAX_METRICS];
        all[..stats.len()].copy_from_slice(stats);
        WindowRow {
            thread: head[0] as u32,
            cpu: head[1] as u32,
            window: head[2],
            start_ns: head[3],
            cycles: head[4],
            overruns: head[5],
            metrics: kind.metrics(),
            stats: all,
        }
    }

    fn stat(count: u64, min: i64, max: i64, mean: i64) -> WindowStat {
        WindowStat {
            count,
            min,
            max,
            mean,
            ..WindowStat::default()
        }
    }

    #[test]
    fn header_and_two_rows_are_exact() {
        let first = row(
            ProbeKind::Cyclic,
            [0, 1, 0, 0, 4, 0],
            &[
                stat(4, 2_100, 13_250, 5_004),
                // No period or jitter for the very first cycle of the run.
                stat(3, 999_100, 1_011_000, 1_003_667),
                stat(3, -900, 11_000, 3_667),
                stat(4, 500_000, 503_999, 501_250),
            ],
        );
        let second = row(
            ProbeKind::Cyclic,
            [1, 3, 7, 7_000_000_000, 1, 1],
            &[
                stat(1, 1_200_345, 1_200_345, 1_200_345),
                WindowStat::default(),
                WindowStat::default(),
                stat(1, 2_500_000, 2_500_000, 2_500_000),
            ],
        );
        let mut out = Vec::new();
        let mut w = WindowCsv::new(&mut out, ProbeKind::Cyclic.metrics()).unwrap();
        w.write_row(&first).unwrap();
        w.write_row(&second).unwrap();
        w.flush().unwrap();
        let got = String::from_utf8(out).unwrap();
        let want = "\
thread,cpu,window,start_ns,cycles,overruns,\
latency_count,latency_min_ns,latency_max_ns,latency_mean_ns,\
period_count,period_min_ns,period_max_ns,period_mean_ns,\
jitter_count,jitter_min_ns,jitter_max_ns,jitter_mean_ns,\
exec_count,exec_min_ns,exec_max_ns,exec_mean_ns
0,1,0,0,4,0,4,2100,13250,5004,3,999100,1011000,1003667,3,-900,11000,3667,4,500000,503999,501250
1,3,7,7000000000,1,1,1,1200345,1200345,1200345,0,,,,0,,,,1,2500000,2500000,2500000
";
        assert_eq!(got, want);
    }

    #[test]
    fn every_line_has_the_header_s_field_count() {
        let fields = header(ProbeKind::Cyclic.metrics()).split(',').count();
        assert_eq!(fields, 6 + 4 * jitterlab_core::cycle::METRICS.len());
        let empty = row(ProbeKind::Cyclic, [0; 6], &[]);
        let mut out = Vec::new();
        WindowCsv::new(&mut out, ProbeKind::Cyclic.metrics())
            .unwrap()
            .write_row(&empty)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in text.lines() {
            assert_eq!(line.split(',').count(), fields, "{line}");
        }
    }

    #[test]
    fn an_event_probe_names_its_own_columns_and_units() {
        assert_eq!(
            header(ProbeKind::Chase.metrics()),
            "thread,cpu,window,start_ns,cycles,overruns,\
chase_count,chase_min_cycles,chase_max_cycles,chase_mean_cycles,\
sample-jitter_count,sample-jitter_min_cycles,sample-jitter_max_cycles,sample-jitter_mean_cycles"
        );
        let mut out = Vec::new();
        let handover = row(
            ProbeKind::Ctxswitch,
            [0, 1, 0, 0, 2, 0],
            &[stat(2, 10, 20, 15)],
        );
        let mut w = WindowCsv::new(&mut out, ProbeKind::Ctxswitch.metrics()).unwrap();
        w.write_row(&handover).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "thread,cpu,window,start_ns,cycles,overruns,handover_count,handover_min_ns,handover_max_ns,handover_mean_ns\n0,1,0,0,2,0,2,10,20,15\n"
        );
    }

    #[test]
    fn figures_are_written_by_metric_name_not_by_slot() {
        // A row whose table orders the metrics otherwise, and lacks one:
        // each figure lands under its own name, the missing one is empty.
        const OTHER: &[MetricDef] = &[
            jitterlab_core::probe::PERIODIC_METRICS[3],
            jitterlab_core::probe::PERIODIC_METRICS[0],
        ];
        let mut r = row(
            ProbeKind::Cyclic,
            [0, 1, 2, 2_000, 3, 0],
            &[stat(3, 50, 70, 60), stat(3, 1, 9, 5)],
        );
        r.metrics = OTHER;
        let mut out = Vec::new();
        let mut w = WindowCsv::new(&mut out, ProbeKind::Cyclic.metrics()).unwrap();
        w.write_row(&r).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "0,1,2,2000,3,0,3,1,9,5,0,,,,0,,,,3,50,70,60"
        );
    }
}
