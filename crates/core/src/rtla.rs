//! The text of `rtla timerlat hist`, read into data: [`parse_hist`] turns
//! rtla's histogram output into a [`TimerlatHist`], and [`to_metrics`] turns
//! that into our own [`MetricStats`] per CPU. Running rtla is the binary's
//! job (`probe::timerlat`); reading what it printed is pure text → data,
//! so it lives here, where it is tested without a process or a file.
//!
//! # rtla's output, across versions
//!
//! The format is that of `timerlat_hist.c`, unchanged in its essentials from
//! rtla 6.1 (Debian bookworm's `rtla`) to today's:
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)
//! # Duration:   0 00:00:10
//! Index   IRQ-001   Thr-001
//! 0          3019         0
//! 2          1262      3674
//! over:         0         0
//! count:    10001     10001
//! min:          0         2
//! avg:          0         3
//! max:         17       112
//! ```
//!
//! One `IRQ-NNN`/`Thr-NNN` (and with `-u` `Usr-NNN`) column per CPU that
//! saw a sample; a row per bucket (`%-6d` index = bucket × bucket size,
//! then `%9d ` per column), rows of zeros left out; `over:` counts samples
//! past the last bucket; `count:`/`min:`/`avg:`/`max:` summarise each
//! column (`-` where a column has no sample). rtla 6.10 added an `ALL:`
//! block (the same summary over all CPUs), and recent versions print
//! "N (x%) events missed, results might not be accurate" when the trace
//! buffer dropped samples. The unit is microseconds unless `--nano` was
//! given; either way [`TimerlatHist`] holds nanoseconds (µs × 1000) and says
//! which unit rtla used ([`TimeUnit`]).
//!
//! The columns are separated by at least one space except in two places a
//! parser must know: `count:` is followed by its first number with no space
//! when that number has nine digits or more (a long run), and a six-digit
//! index runs into a nine-digit count. Labels are therefore stripped, not
//! split; an index run into its count is refused with an error naming the
//! fix (wider buckets give shorter indexes).
//!
//! **Cross-check.** rtla counts each sample once into a bucket or `over:`
//! and once into `count:`; [`parse_hist`] refuses output where the two
//! disagree (a cut-short or mangled output), and a negative count (rtla's
//! 32-bit bucket counters wrap after about 2³¹ samples in one bucket).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::MetricStats;

/// The unit rtla printed its latencies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeUnit {
    /// `--nano`: "Time unit is nanoseconds (ns)".
    Nanoseconds,
    /// The default: "Time unit is microseconds (us)".
    Microseconds,
}

impl TimeUnit {
    /// Nanoseconds per unit.
    pub fn ns(self) -> u64 {
        match self {
            TimeUnit::Nanoseconds => 1,
            TimeUnit::Microseconds => 1000,
        }
    }

    /// rtla's abbreviation: `ns` or `us`.
    pub fn abbreviation(self) -> &'static str {
        match self {
            TimeUnit::Nanoseconds => "ns",
            TimeUnit::Microseconds => "us",
        }
    }
}

/// rtla's summary of one column (all in ns; `None` where rtla printed `-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// `count:` — every sample, `over:` included.
    pub count: u64,
    /// `min:`.
    pub min_ns: Option<u64>,
    /// `avg:` (rtla's integer division of its exact sum).
    pub avg_ns: Option<u64>,
    /// `max:`.
    pub max_ns: Option<u64>,
}

/// One latency histogram: one column of rtla's table.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LatencyHist {
    /// Bucket floor (ns) → samples, for the buckets holding any.
    pub buckets: BTreeMap<u64, u64>,
    /// Samples past the last bucket (`over:`).
    pub over: u64,
    /// rtla's `count:`/`min:`/`avg:`/`max:` (absent with `--no-summary`).
    pub summary: Option<Summary>,
}

impl LatencyHist {
    /// Samples in the buckets and `over:`.
    pub fn samples(&self) -> u64 {
        self.buckets.values().sum::<u64>() + self.over
    }
}

/// The histograms of one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuHist {
    /// The CPU number (`IRQ-001` → 1).
    pub cpu: usize,
    /// Timer expiry → IRQ handler (`IRQ-NNN`).
    pub irq: Option<LatencyHist>,
    /// Timer expiry → timerlat thread (`Thr-NNN`).
    pub thread: Option<LatencyHist>,
    /// Timer expiry → return to the user-space thread (`Usr-NNN`, `-u`).
    pub user: Option<LatencyHist>,
}

/// rtla's `ALL:` block (rtla ≥ 6.10): the summary over every CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllSummary {
    /// The `IRQ` column.
    pub irq: Option<Summary>,
    /// The `Thr` column.
    pub thread: Option<Summary>,
    /// The `Usr` column.
    pub user: Option<Summary>,
}

/// rtla's note that the trace buffer dropped samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MissedEvents {
    /// "N (x%) events missed, results might not be accurate".
    Count(u64),
    /// "unknown number of events missed, results might not be accurate".
    Unknown,
}

/// Everything rtla's `timerlat hist` output says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerlatHist {
    /// The unit rtla printed in (the values here are all ns).
    pub unit: TimeUnit,
    /// `# Duration:` in seconds.
    pub duration_s: Option<u64>,
    /// One entry per CPU column, ascending.
    pub cpus: Vec<CpuHist>,
    /// The `ALL:` block, when rtla printed one.
    pub all: Option<AllSummary>,
    /// Dropped samples, when rtla reported any.
    pub missed_events: Option<MissedEvents>,
    /// Where the histogram ends (ns), when known from the command line
    /// (the runner sets it; the output does not say).
    pub limit_ns: Option<u64>,
    /// Other lines rtla printed around the table.
    pub notes: Vec<String>,
}

/// Which latency a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Irq,
    Thread,
    User,
}

impl Kind {
    /// The column name's prefix in rtla's header.
    fn label(self) -> &'static str {
        match self {
            Kind::Irq => "IRQ",
            Kind::Thread => "Thr",
            Kind::User => "Usr",
        }
    }

    fn from_label(label: &str) -> Option<Kind> {
        match label {
            "IRQ" => Some(Kind::Irq),
            "Thr" => Some(Kind::Thread),
            "Usr" => Some(Kind::User),
            _ => None,
        }
    }
}

/// One column while parsing, values in rtla's unit.
struct Column {
    cpu: usize,
    kind: Kind,
    buckets: BTreeMap<u64, u64>,
    over: Option<u64>,
    summary: RawSummary,
}

impl Column {
    fn name(&self) -> String {
        format!("{}-{:03}", self.kind.label(), self.cpu)
    }
}

/// `count:`/`min:`/`avg:`/`max:` of one column as printed (rtla's unit).
#[derive(Default, Clone, Copy)]
struct RawSummary {
    count: Option<u64>,
    min: Option<u64>,
    avg: Option<u64>,
    max: Option<u64>,
}

impl RawSummary {
    fn set(&mut self, label: &str, v: Option<u64>) {
        match label {
            "count:" => self.count = v,
            "min:" => self.min = v,
            "avg:" => self.avg = v,
            _ => self.max = v,
        }
    }

    /// In ns; `None` without a `count:` line.
    fn to_ns(self, unit: TimeUnit, what: &str) -> Result<Option<Summary>, String> {
        let Some(count) = self.count else {
            return Ok(None);
        };
        let ns = |v: Option<u64>| -> Result<Option<u64>, String> {
            // With no sample rtla prints `-` (older ALL: blocks print ~0).
            match v.filter(|_| count > 0) {
                None => Ok(None),
                Some(v) => v.checked_mul(unit.ns()).map(Some).ok_or_else(|| {
                    format!(
                        "rtla's summary of {what} holds {v} {}, too large",
                        unit.abbreviation()
                    )
                }),
            }
        };
        Ok(Some(Summary {
            count,
            min_ns: ns(self.min)?,
            avg_ns: ns(self.avg)?,
            max_ns: ns(self.max)?,
        }))
    }
}

/// Where the parser is in rtla's output.
#[derive(PartialEq, Eq)]
enum Stage {
    Header,
    Rows,
    Summary,
    All,
    Tail,
}

/// The summary labels, as rtla prints them (then stripped of spaces).
const SUMMARY_LABELS: [&str; 4] = ["count:", "min:", "avg:", "max:"];

/// Parses rtla's `timerlat hist` output (see the module doc for the
/// format). Errors name the line and what is wrong with it.
pub fn parse_hist(text: &str) -> Result<TimerlatHist, String> {
    let mut unit = None;
    let mut duration_s = None;
    let mut columns: Vec<Column> = Vec::new();
    let mut all: Option<(Vec<Kind>, Vec<RawSummary>)> = None;
    let mut missed_events = None;
    let mut notes = Vec::new();
    let mut stage = Stage::Header;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let at = |msg: String| format!("line {} of rtla's output: {msg}", i + 1);
        if stage == Stage::Summary || stage == Stage::All {
            if let Some((label, rest)) = summary_line(line) {
                let values = summary_values(rest, label).map_err(at)?;
                let targets: Vec<&mut RawSummary> = match (&stage, all.as_mut()) {
                    (Stage::All, Some((_, sums))) => sums.iter_mut().collect(),
                    _ => columns.iter_mut().map(|c| &mut c.summary).collect(),
                };
                if values.len() != targets.len() {
                    return Err(at(format!(
                        "`{label}` has {} values for {} columns",
                        values.len(),
                        targets.len()
                    )));
                }
                for (t, v) in targets.into_iter().zip(values) {
                    t.set(label, v);
                }
                continue;
            }
            if stage == Stage::Summary {
                if let Some(rest) = line.strip_prefix("ALL:") {
                    let kinds = rest
                        .split_whitespace()
                        .map(|t| {
                            Kind::from_label(t).ok_or_else(|| {
                                at(format!("unknown column `{t}` in the ALL: block"))
                            })
                        })
                        .collect::<Result<Vec<_>, String>>()?;
                    let n = kinds.len();
                    all = Some((kinds, vec![RawSummary::default(); n]));
                    stage = Stage::All;
                    continue;
                }
            }
            stage = Stage::Tail;
        }
        match stage {
            Stage::Header => {
                if let Some(comment) = line.strip_prefix('#') {
                    let comment = comment.trim();
                    if let Some(u) = comment.strip_prefix("Time unit is ") {
                        unit = Some(match u {
                            "nanoseconds (ns)" => TimeUnit::Nanoseconds,
                            "microseconds (us)" => TimeUnit::Microseconds,
                            _ => return Err(at(format!("unknown time unit `{u}`"))),
                        });
                    } else if let Some(d) = comment.strip_prefix("Duration:") {
                        duration_s = parse_duration(d);
                    }
                } else if let Some(rest) = line.strip_prefix("Index") {
                    columns = parse_columns(rest).map_err(at)?;
                    stage = Stage::Rows;
                } else {
                    notes.push(line.to_string());
                }
            }
            Stage::Rows => {
                if let Some(rest) = line.strip_prefix("over:") {
                    let values =
                        counts(rest, columns.len()).map_err(|e| at(format!("over: {e}")))?;
                    for (c, v) in columns.iter_mut().zip(values) {
                        c.over = Some(v);
                    }
                    stage = Stage::Summary;
                } else {
                    parse_row(line, &mut columns).map_err(at)?;
                }
            }
            Stage::Tail => {
                if let Some(m) = parse_missed(line) {
                    missed_events = Some(m);
                } else {
                    notes.push(line.to_string());
                }
            }
            Stage::Summary | Stage::All => unreachable!("handled above"),
        }
    }
    if stage == Stage::Header {
        return Err(
            "rtla printed no histogram (no `Index` line); it prints one when it ends \
             normally, without --no-header or --no-index"
                .to_string(),
        );
    }
    if stage == Stage::Rows {
        return Err("rtla's output ends before its `over:` line: it was cut short".to_string());
    }
    let unit = unit.ok_or_else(|| {
        "rtla's output has no `# Time unit is` line, so its unit is unknown".to_string()
    })?;
    build(unit, duration_s, columns, all, missed_events, notes)
}

/// Assembles the parsed columns, in ns, and cross-checks them.
fn build(
    unit: TimeUnit,
    duration_s: Option<u64>,
    columns: Vec<Column>,
    all: Option<(Vec<Kind>, Vec<RawSummary>)>,
    missed_events: Option<MissedEvents>,
    notes: Vec<String>,
) -> Result<TimerlatHist, String> {
    let mut cpus: Vec<CpuHist> = Vec::new();
    for c in columns {
        let name = c.name();
        let mut buckets = BTreeMap::new();
        for (floor, n) in c.buckets {
            let ns = floor.checked_mul(unit.ns()).ok_or_else(|| {
                format!("rtla's bucket {floor} of {name} is too large to hold in ns")
            })?;
            buckets.insert(ns, n);
        }
        let hist = LatencyHist {
            buckets,
            over: c.over.unwrap_or(0),
            summary: c.summary.to_ns(unit, &name)?,
        };
        if let Some(s) = &hist.summary {
            let held = hist.samples();
            if held != s.count {
                return Err(format!(
                    "rtla's output does not add up for {name}: its buckets ({}) and over: ({}) \
                     hold {held} samples, but count: says {}",
                    held - hist.over,
                    hist.over,
                    s.count
                ));
            }
        }
        let entry = match cpus.iter_mut().find(|h| h.cpu == c.cpu) {
            Some(e) => e,
            None => {
                cpus.push(CpuHist {
                    cpu: c.cpu,
                    irq: None,
                    thread: None,
                    user: None,
                });
                cpus.last_mut().expect("just pushed")
            }
        };
        let slot = match c.kind {
            Kind::Irq => &mut entry.irq,
            Kind::Thread => &mut entry.thread,
            Kind::User => &mut entry.user,
        };
        *slot = Some(hist);
    }
    cpus.sort_by_key(|c| c.cpu);
    let all = match all {
        None => None,
        Some((kinds, sums)) => {
            let mut a = AllSummary {
                irq: None,
                thread: None,
                user: None,
            };
            for (k, s) in kinds.into_iter().zip(sums) {
                let s = s.to_ns(unit, &format!("ALL {}", k.label()))?;
                match k {
                    Kind::Irq => a.irq = s,
                    Kind::Thread => a.thread = s,
                    Kind::User => a.user = s,
                }
            }
            Some(a)
        }
    };
    Ok(TimerlatHist {
        unit,
        duration_s,
        cpus,
        all,
        missed_events,
        limit_ns: None,
        notes,
    })
}

/// `   0 00:10:00` (days, then hh:mm:ss) in seconds.
fn parse_duration(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace();
    let days: u64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

/// The columns named after `Index`: `IRQ-000 Thr-000 …`.
fn parse_columns(rest: &str) -> Result<Vec<Column>, String> {
    let mut columns: Vec<Column> = Vec::new();
    for name in rest.split_whitespace() {
        let parsed = name
            .split_once('-')
            .and_then(|(k, n)| Some((Kind::from_label(k)?, n.parse::<usize>().ok()?)));
        let Some((kind, cpu)) = parsed else {
            return Err(format!("unknown column `{name}` in the Index line"));
        };
        if columns.iter().any(|c| c.cpu == cpu && c.kind == kind) {
            return Err(format!("column `{name}` appears twice"));
        }
        columns.push(Column {
            cpu,
            kind,
            buckets: BTreeMap::new(),
            over: None,
            summary: RawSummary::default(),
        });
    }
    if columns.is_empty() {
        return Err("the Index line names no column".to_string());
    }
    Ok(columns)
}

/// One bucket row: the index, then one count per column.
fn parse_row(line: &str, columns: &mut [Column]) -> Result<(), String> {
    let mut tokens = line.split_whitespace();
    let first = tokens.next().unwrap_or("");
    let rest: Vec<&str> = tokens.collect();
    // `%-6d` then `%9d`: only a 6-digit index beside a 9-digit count glue.
    if rest.len() + 1 == columns.len() && first.len() >= 15 {
        return Err(format!(
            "`{line}` has an index run into its first count (an index of six digits or more \
             beside a count of nine or more); measure with wider buckets"
        ));
    }
    let index: u64 = first
        .parse()
        .map_err(|_| format!("`{first}` is not a bucket index"))?;
    let values = counts(&rest.join(" "), columns.len())?;
    for (c, v) in columns.iter_mut().zip(values) {
        if v > 0 && c.buckets.insert(index, v).is_some() {
            return Err(format!("bucket {index} appears twice"));
        }
    }
    Ok(())
}

/// `n` counts separated by blanks.
fn counts(text: &str, n: usize) -> Result<Vec<u64>, String> {
    let values: Vec<&str> = text.split_whitespace().collect();
    if values.len() != n {
        return Err(format!(
            "{} counts where the Index line names {n} columns",
            values.len()
        ));
    }
    values.into_iter().map(count).collect()
}

/// One count; a negative one is rtla's 32-bit counter wrapped around.
fn count(t: &str) -> Result<u64, String> {
    if let Ok(v) = t.parse::<u64>() {
        return Ok(v);
    }
    if t.parse::<i64>().is_ok() {
        return Err(format!(
            "rtla printed the count {t}: its 32-bit counter wrapped around; measure for a \
             shorter time or with a longer period"
        ));
    }
    Err(format!("`{t}` is not a count"))
}

/// `count:`, `min:`, `avg:` or `max:` with the rest of the line.
fn summary_line(line: &str) -> Option<(&'static str, &str)> {
    SUMMARY_LABELS
        .iter()
        .find_map(|&l| line.strip_prefix(l).map(|rest| (l, rest)))
}

/// The values of a summary line (`-`: none).
fn summary_values(rest: &str, label: &str) -> Result<Vec<Option<u64>>, String> {
    rest.split_whitespace()
        .map(|t| {
            if t == "-" {
                Ok(None)
            } else {
                t.parse::<u64>()
                    .map(Some)
                    .map_err(|_| format!("`{t}` is not a number in the `{label}` line"))
            }
        })
        .collect()
}

/// rtla's missed-events line, if `line` is one.
fn parse_missed(line: &str) -> Option<MissedEvents> {
    let head = line
        .trim()
        .strip_suffix("events missed, results might not be accurate")?
        .trim();
    if head == "unknown number of" {
        return Some(MissedEvents::Unknown);
    }
    head.split_whitespace()
        .next()?
        .parse()
        .ok()
        .map(MissedEvents::Count)
}

/// Our statistics per CPU, ascending: metrics `irq`, `thread` and, with
/// user threads, `user` — unsigned, in ns, with `threshold_ns`.
///
/// Each bucket's floor is recorded once per sample in it, and each `over:`
/// sample at the histogram's end ([`TimerlatHist::limit_ns`]) — or, when the
/// end is unknown, at rtla's max, the one value an overflowing sample is
/// known to reach. rtla's exact min and max replace the floors' (the
/// quantiles and the mean stay those of the floors).
pub fn to_metrics(
    h: &TimerlatHist,
    threshold_ns: u64,
) -> Vec<(usize, BTreeMap<String, MetricStats>)> {
    h.cpus
        .iter()
        .map(|c| {
            let mut metrics = BTreeMap::new();
            for (name, hist) in [("irq", &c.irq), ("thread", &c.thread), ("user", &c.user)] {
                if let Some(hist) = hist {
                    metrics.insert(name.to_string(), stats(hist, h.limit_ns, threshold_ns));
                }
            }
            (c.cpu, metrics)
        })
        .collect()
}

/// One histogram as [`MetricStats`] (see [`to_metrics`]).
fn stats(h: &LatencyHist, limit_ns: Option<u64>, threshold_ns: u64) -> MetricStats {
    let mut s = MetricStats::new(false, Some(threshold_ns));
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    for (&floor, &n) in &h.buckets {
        let v = to_i64(floor);
        for _ in 0..n {
            s.record(v);
        }
    }
    let summary = h.summary.filter(|s| s.count > 0);
    if h.over > 0 {
        let at = limit_ns
            .or(summary.and_then(|s| s.max_ns))
            .or_else(|| h.buckets.keys().next_back().copied())
            .unwrap_or(0);
        let v = to_i64(at);
        for _ in 0..h.over {
            s.record(v);
        }
    }
    if let Some(sum) = summary {
        if let (Some(min), Some(max)) = (sum.min_ns, sum.max_ns) {
            s.moments.min = to_i64(min);
            s.moments.max = to_i64(max);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture of `tests/fixtures/timerlat/` (at the workspace's root).
    fn text(name: &str) -> String {
        match name {
            "rtla-6.1-cpu1-us.txt" => {
                include_str!("../../../tests/fixtures/timerlat/rtla-6.1-cpu1-us.txt")
            }
            "rtla-6.1-cpu0-1-ns.txt" => {
                include_str!("../../../tests/fixtures/timerlat/rtla-6.1-cpu0-1-ns.txt")
            }
            "rtla-6.12-cpu0-1-us.txt" => {
                include_str!("../../../tests/fixtures/timerlat/rtla-6.12-cpu0-1-us.txt")
            }
            "rtla-6.12-cpu1-ns-user.txt" => {
                include_str!("../../../tests/fixtures/timerlat/rtla-6.12-cpu1-ns-user.txt")
            }
            _ => panic!("no fixture {name}"),
        }
        .to_string()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// `(floor ns, count)` pairs as a bucket map.
    fn buckets(pairs: &[(u64, u64)]) -> BTreeMap<u64, u64> {
        pairs.iter().copied().collect()
    }

    fn summary(count: u64, min: u64, avg: u64, max: u64) -> Option<Summary> {
        Some(Summary {
            count,
            min_ns: Some(min),
            avg_ns: Some(avg),
            max_ns: Some(max),
        })
    }

    fn hist(pairs: &[(u64, u64)], over: u64, s: Option<Summary>) -> Option<LatencyHist> {
        Some(LatencyHist {
            buckets: buckets(pairs),
            over,
            summary: s,
        })
    }

    // ---- parsing ----

    #[test]
    fn rtla_6_1_one_cpu_in_microseconds() {
        let h = parse_hist(&text("rtla-6.1-cpu1-us.txt")).unwrap();
        assert_eq!(
            h,
            TimerlatHist {
                unit: TimeUnit::Microseconds,
                duration_s: Some(10),
                cpus: vec![CpuHist {
                    cpu: 1,
                    irq: hist(
                        &[
                            (0, 3019),
                            (1000, 5285),
                            (2000, 1262),
                            (3000, 332),
                            (4000, 80),
                            (5000, 20),
                            (6000, 1),
                            (7000, 1),
                            (17000, 1),
                        ],
                        0,
                        summary(10001, 0, 0, 17000),
                    ),
                    thread: hist(
                        &[
                            (2000, 3674),
                            (3000, 3119),
                            (4000, 1561),
                            (5000, 813),
                            (6000, 391),
                            (7000, 205),
                            (8000, 109),
                            (9000, 67),
                            (10000, 35),
                            (11000, 11),
                            (12000, 4),
                            (13000, 4),
                            (14000, 3),
                            (17000, 2),
                            (19000, 1),
                            (38000, 1),
                            (112000, 1),
                        ],
                        0,
                        summary(10001, 2000, 3000, 112000),
                    ),
                    user: None,
                }],
                all: None,
                missed_events: None,
                limit_ns: None,
                notes: vec![],
            }
        );
    }

    #[test]
    fn rtla_6_12_two_cpus_in_microseconds_with_the_all_block() {
        let h = parse_hist(&text("rtla-6.12-cpu0-1-us.txt")).unwrap();
        assert_eq!(
            h,
            TimerlatHist {
                unit: TimeUnit::Microseconds,
                duration_s: Some(5),
                cpus: vec![
                    CpuHist {
                        cpu: 0,
                        irq: hist(
                            &[
                                (0, 2232),
                                (1000, 2100),
                                (2000, 517),
                                (3000, 119),
                                (4000, 24),
                                (5000, 8),
                                (7000, 1),
                            ],
                            0,
                            summary(5001, 0, 0, 7000),
                        ),
                        thread: hist(
                            &[
                                (2000, 2281),
                                (3000, 1298),
                                (4000, 664),
                                (5000, 342),
                                (6000, 195),
                                (7000, 108),
                                (8000, 52),
                                (9000, 34),
                                (10000, 14),
                                (11000, 6),
                                (12000, 2),
                                (13000, 3),
                                (16000, 1),
                                (250000, 1),
                            ],
                            0,
                            summary(5001, 2000, 3000, 250000),
                        ),
                        user: None,
                    },
                    CpuHist {
                        cpu: 1,
                        irq: hist(
                            &[
                                (0, 1460),
                                (1000, 2697),
                                (2000, 643),
                                (3000, 155),
                                (4000, 34),
                                (5000, 8),
                                (6000, 3),
                                (31000, 1),
                            ],
                            0,
                            summary(5001, 0, 0, 31000),
                        ),
                        thread: hist(
                            &[
                                (2000, 1893),
                                (3000, 1522),
                                (4000, 797),
                                (5000, 370),
                                (6000, 213),
                                (7000, 96),
                                (8000, 54),
                                (9000, 22),
                                (10000, 17),
                                (11000, 10),
                                (12000, 6),
                                (13000, 1),
                            ],
                            0,
                            summary(5001, 2000, 3000, 13000),
                        ),
                        user: None,
                    },
                ],
                all: Some(AllSummary {
                    irq: summary(10002, 0, 0, 31000),
                    thread: summary(10002, 2000, 3000, 250000),
                    user: None,
                }),
                missed_events: None,
                limit_ns: None,
                notes: vec![],
            }
        );
    }

    /// The number of buckets, their sum, the first and last three.
    type Shape = (usize, u64, Vec<(u64, u64)>, Vec<(u64, u64)>);

    fn shape(h: &LatencyHist) -> Shape {
        let v: Vec<(u64, u64)> = h.buckets.iter().map(|(&k, &n)| (k, n)).collect();
        (
            v.len(),
            v.iter().map(|b| b.1).sum(),
            v[..3].to_vec(),
            v[v.len() - 3..].to_vec(),
        )
    }

    #[test]
    fn rtla_6_1_two_cpus_in_nanoseconds_with_an_overflow() {
        let h = parse_hist(&text("rtla-6.1-cpu0-1-ns.txt")).unwrap();
        assert_eq!(
            (h.unit, h.duration_s, h.all, h.missed_events, h.notes.len()),
            (TimeUnit::Nanoseconds, Some(5), None, None, 0)
        );
        assert_eq!(h.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [0, 1]);
        let col = |cpu: usize, irq: bool| {
            let c = &h.cpus[cpu];
            if irq { &c.irq } else { &c.thread }.clone().unwrap()
        };
        let irq0 = col(0, true);
        assert_eq!(
            shape(&irq0),
            (
                49,
                5001,
                vec![(600, 660), (700, 570), (800, 498)],
                vec![(6000, 1), (6200, 1), (9800, 1)]
            )
        );
        assert_eq!(
            (irq0.over, irq0.summary),
            (0, summary(5001, 600, 1300, 9870))
        );
        let thr0 = col(0, false);
        assert_eq!(
            shape(&thr0),
            (
                99,
                5001,
                vec![(2100, 329), (2200, 316), (2300, 288)],
                vec![(13300, 2), (14400, 1), (20300, 1)]
            )
        );
        assert_eq!(
            (thr0.over, thr0.summary),
            (0, summary(5001, 2100, 3577, 20373))
        );
        let irq1 = col(1, true);
        assert_eq!(
            shape(&irq1),
            (
                54,
                5001,
                vec![(700, 343), (800, 626), (900, 550)],
                vec![(6800, 1), (7600, 1), (8300, 1)]
            )
        );
        assert_eq!(
            (irq1.over, irq1.summary),
            (0, summary(5001, 750, 1445, 8341))
        );
        // One sample past the 10 ms histogram: in over:, and rtla's max.
        let thr1 = col(1, false);
        assert_eq!(
            shape(&thr1),
            (
                96,
                5000,
                vec![(2300, 307), (2400, 285), (2500, 284)],
                vec![(15100, 1), (16700, 1), (61200, 1)]
            )
        );
        assert_eq!(
            (thr1.over, thr1.summary),
            (1, summary(5001, 2300, 5939, 10_512_345))
        );
        assert_eq!(thr1.samples(), 5001);
        assert_eq!(h.cpus[1].user, None);
    }

    #[test]
    fn rtla_6_12_one_cpu_in_nanoseconds_with_user_threads() {
        let h = parse_hist(&text("rtla-6.12-cpu1-ns-user.txt")).unwrap();
        assert_eq!(
            (h.unit, h.duration_s, h.missed_events, h.notes.len()),
            (TimeUnit::Nanoseconds, Some(3), None, 0)
        );
        assert_eq!(h.cpus.len(), 1);
        let c = &h.cpus[0];
        assert_eq!(c.cpu, 1);
        let irq = c.irq.as_ref().unwrap();
        assert_eq!(
            shape(irq),
            (
                47,
                3001,
                vec![(700, 209), (800, 385), (900, 304)],
                vec![(5300, 1), (5600, 1), (5800, 1)]
            )
        );
        assert_eq!((irq.over, irq.summary), (0, summary(3001, 750, 1446, 5843)));
        let thr = c.thread.as_ref().unwrap();
        assert_eq!(
            shape(thr),
            (
                94,
                3001,
                vec![(2300, 182), (2400, 190), (2500, 167)],
                vec![(13800, 1), (15800, 1), (17300, 1)]
            )
        );
        assert_eq!(
            (thr.over, thr.summary),
            (0, summary(3001, 2300, 3836, 17363))
        );
        let usr = c.user.as_ref().unwrap();
        assert_eq!(
            shape(usr),
            (
                117,
                3001,
                vec![(3900, 138), (4000, 127), (4100, 127)],
                vec![(17700, 1), (17900, 1), (148700, 1)]
            )
        );
        assert_eq!(
            (usr.over, usr.summary),
            (0, summary(3001, 3900, 6002, 148770))
        );
        assert_eq!(
            h.all,
            Some(AllSummary {
                irq: summary(3001, 750, 1446, 5843),
                thread: summary(3001, 2300, 3836, 17363),
                user: summary(3001, 3900, 6002, 148770),
            })
        );
    }

    /// A one-column output as rtla prints it (`%-6d`, `%9d `).
    fn one_column(rows: &[(u64, i64)], over: i64, count: u64) -> String {
        let mut s = String::from(
            "# RTLA timerlat histogram\n# Time unit is microseconds (us)\n\
             # Duration:   1 02:03:04\nIndex   IRQ-000\n",
        );
        for (i, n) in rows {
            s.push_str(&format!("{i:<6}{n:>9} \n"));
        }
        s.push_str(&format!("over: {over:>9} \ncount:{count:>9} \n"));
        s
    }

    #[test]
    fn nine_digit_counts_run_into_their_label() {
        let text = one_column(&[(3, 123_456_789), (12, 1)], 10, 123_456_800);
        assert!(text.contains("\ncount:123456800 \n"), "{text}");
        let h = parse_hist(&text).unwrap();
        assert_eq!(h.duration_s, Some(93_784));
        assert_eq!(
            h.cpus,
            vec![CpuHist {
                cpu: 0,
                irq: Some(LatencyHist {
                    buckets: buckets(&[(3000, 123_456_789), (12000, 1)]),
                    over: 10,
                    summary: Some(Summary {
                        count: 123_456_800,
                        min_ns: None,
                        avg_ns: None,
                        max_ns: None,
                    }),
                }),
                thread: None,
                user: None,
            }]
        );
    }

    #[test]
    fn parse_errors_name_the_line_and_the_fix() {
        let err = |t: &str| format!("{:#}", parse_hist(t).unwrap_err());
        assert_eq!(
            err(&one_column(&[(100_000, 123_456_789)], 0, 123_456_789)),
            "line 5 of rtla's output: `100000123456789` has an index run into its first count \
             (an index of six digits or more beside a count of nine or more); measure with \
             wider buckets"
        );
        assert_eq!(
            err(&one_column(&[(3, -5)], 0, 1)),
            "line 5 of rtla's output: rtla printed the count -5: its 32-bit counter wrapped \
             around; measure for a shorter time or with a longer period"
        );
        assert_eq!(
            err(&one_column(&[(3, 7)], 1, 9)),
            "rtla's output does not add up for IRQ-000: its buckets (7) and over: (1) hold 8 \
             samples, but count: says 9"
        );
        let full = text("rtla-6.1-cpu1-us.txt");
        assert_eq!(
            err(&full.replace("count:    10001     10001", "count:    10001     10002")),
            "rtla's output does not add up for Thr-001: its buckets (10001) and over: (0) hold \
             10001 samples, but count: says 10002"
        );
        assert_eq!(
            err(&full.replace("112           0         1 \n", "112           0 \n")),
            "line 23 of rtla's output: 1 counts where the Index line names 2 columns"
        );
        assert_eq!(
            err(&full.replace("Thr-001", "Foo-001")),
            "line 4 of rtla's output: unknown column `Foo-001` in the Index line"
        );
        assert_eq!(
            err(&full.replace("microseconds (us)", "seconds (s)")),
            "line 2 of rtla's output: unknown time unit `seconds (s)`"
        );
        assert_eq!(
            err(&full.replace("# Time unit is microseconds (us)\n", "")),
            "rtla's output has no `# Time unit is` line, so its unit is unknown"
        );
        assert_eq!(
            err(&full[..full.find("over:").unwrap()]),
            "rtla's output ends before its `over:` line: it was cut short"
        );
        assert_eq!(
            err(""),
            "rtla printed no histogram (no `Index` line); it prints one when it ends normally, \
             without --no-header or --no-index"
        );
        assert_eq!(
            err(&full.replace("min:          0         2", "min:          0       two")),
            "line 26 of rtla's output: `two` is not a number in the `min:` line"
        );
    }

    #[test]
    fn missed_events_and_other_lines_are_kept() {
        let base = text("rtla-6.12-cpu0-1-us.txt");
        let h = parse_hist(&format!(
            "{base}12 (0.24%) events missed, results might not be accurate\n"
        ))
        .unwrap();
        assert_eq!(h.missed_events, Some(MissedEvents::Count(12)));
        let h = parse_hist(&format!(
            "  Saving trace to timerlat_trace.txt\n{base}\
             unknown number of events missed, results might not be accurate\nbye\n"
        ))
        .unwrap();
        assert_eq!(h.missed_events, Some(MissedEvents::Unknown));
        assert_eq!(
            h.notes,
            strings(&["  Saving trace to timerlat_trace.txt", "bye"])
        );
        assert_eq!(h.cpus, parse_hist(&base).unwrap().cpus);
    }

    #[test]
    fn a_column_without_samples_has_no_min_avg_max() {
        let t = "# Time unit is nanoseconds (ns)\nIndex   IRQ-002   Thr-002\n\
                 1500          4         0 \nover:         0         0 \n\
                 count:        4         0 \nmin:       1500         - \n\
                 avg:       1620         - \nmax:       1880         - \n";
        let h = parse_hist(t).unwrap();
        assert_eq!(h.duration_s, None);
        assert_eq!(
            h.cpus,
            vec![CpuHist {
                cpu: 2,
                irq: hist(&[(1500, 4)], 0, summary(4, 1500, 1620, 1880)),
                thread: Some(LatencyHist {
                    buckets: BTreeMap::new(),
                    over: 0,
                    summary: Some(Summary {
                        count: 0,
                        min_ns: None,
                        avg_ns: None,
                        max_ns: None
                    }),
                }),
                user: None,
            }]
        );
    }

    // ---- metrics ----

    #[test]
    fn metrics_record_bucket_floors_and_keep_rtlas_min_and_max() {
        let mut h = parse_hist(&text("rtla-6.1-cpu1-us.txt")).unwrap();
        h.limit_ns = Some(10_000_000);
        let m = to_metrics(&h, 100_000);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, 1);
        assert_eq!(m[0].1.keys().collect::<Vec<_>>(), ["irq", "thread"]);
        let irq = m[0].1["irq"].summary();
        assert_eq!(
            (
                irq.count,
                irq.min,
                irq.max,
                irq.mean,
                irq.p50,
                irq.over_threshold
            ),
            (10001, Some(0), Some(17_000), Some(925), Some(1000), Some(0))
        );
        let thr = m[0].1["thread"].summary();
        // 3 119 + 3 674 samples up to 3 µs: the median is the 3 µs bucket
        // (3001: the top of its 2 ns HDR bucket); 9 901st of 10 001 is 9 µs.
        assert_eq!(
            (thr.count, thr.min, thr.max, thr.p50, thr.p99),
            (10001, Some(2000), Some(112_000), Some(3001), Some(9007))
        );
        assert_eq!(thr.threshold, Some(100_000));
        assert_eq!(thr.over_threshold, Some(1));
    }

    #[test]
    fn overflows_count_at_the_histograms_end() {
        let h = TimerlatHist {
            unit: TimeUnit::Nanoseconds,
            duration_s: None,
            cpus: vec![CpuHist {
                cpu: 3,
                irq: hist(&[(1000, 3), (2000, 1)], 2, summary(6, 1200, 4500, 25_000)),
                thread: None,
                user: hist(&[(4000, 1)], 1, None),
            }],
            all: None,
            missed_events: None,
            limit_ns: Some(10_000),
            notes: vec![],
        };
        let m = to_metrics(&h, 5_000);
        assert_eq!(m[0].0, 3);
        assert_eq!(m[0].1.keys().collect::<Vec<_>>(), ["irq", "user"]);
        let irq = m[0].1["irq"].summary();
        // 1000 ×3, 2000, 10000 ×2; min and max are rtla's; the median, a
        // floor below rtla's min, is clamped up to it.
        assert_eq!(
            (
                irq.count,
                irq.min,
                irq.max,
                irq.mean,
                irq.p50,
                irq.over_threshold
            ),
            (6, Some(1200), Some(25_000), Some(4167), Some(1200), Some(2))
        );
        let usr = m[0].1["user"].summary();
        assert_eq!(
            (usr.count, usr.min, usr.max, usr.mean, usr.over_threshold),
            (2, Some(4000), Some(10_000), Some(7000), Some(1))
        );
        // Without the end: at rtla's max, or at the last bucket's floor.
        let mut unknown = h.clone();
        unknown.limit_ns = None;
        let m = to_metrics(&unknown, 5_000);
        assert_eq!(m[0].1["irq"].summary().mean, Some(9167));
        assert_eq!(m[0].1["user"].summary().mean, Some(4000));
    }
}
