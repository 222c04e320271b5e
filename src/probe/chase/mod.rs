//! The `chase` probe: a cache-sensitive pointer chase timed in TSC cycles,
//! after Intel's caterpillar benchmark ([Red Hat caterpillar]).
//!
//! **What it measures.** A buffer of one node per cache line, linked in one
//! random cycle (`jitterlab_core::chase::single_cycle`), so that each load
//! depends on the one before and no prefetcher can guess the next line. A
//! *chase* is a fixed number of such dependent loads, timed with the
//! serialised TSC reads of `jitterlab_sys::tsc`; while the buffer stays in
//! the cache the chase is fast, and every line a neighbour evicts costs a
//! trip to the next level or to memory. A *sample* is `--iterations` chases
//! (default 100); its jitter is max − min of those chases, in cycles. A run
//! is `--samples` samples (default 200, as in [Red Hat caterpillar]) or as many as fit in
//! `--duration`. Per sample the probe keeps the caterpillar row (sample
//! min/max/jitter, running session min/max/jitter, [`sample_table`]), and it
//! pushes every chase into the caller's `SampleSink` (metric `chase`), with
//! the sample's jitter on the sample's last chase (metric `sample-jitter`),
//! so the foundation's statistics, windows and outliers cover all chases.
//!
//! **The buffer.** `--buffer` when given; otherwise half of the lowest cache
//! level the probe CPU shares with a neighbour CPU, else half of the
//! last-level cache (`jitterlab_core::chase::choose_buffer`: a neighbour on
//! another core cannot evict a private L2, so that is where its effect
//! shows). The caches are read from
//! `/sys/devices/system/cpu/cpuN/cache/index*/{level,type,size,shared_cpu_list}`
//! under the sysroot; the node size is the largest `coherency_line_size` of
//! the data caches, rounded up to a multiple of 64 bytes (64 when the kernel
//! does not say). The buffer is rounded down to whole nodes and must hold at
//! least two.
//!
//! **The chase length.** Walking the whole buffer per chase would make one
//! chase over 4× the L3 take milliseconds and a default run minutes, and the
//! chase time would grow with the buffer, so runs over different buffers
//! could not be compared. A chase is instead `--chase-length` dependent
//! loads (default [`DEFAULT_CHASE_LENGTH`] = 1024) that *continue around the
//! cycle* where the previous chase stopped: over the run every line is
//! visited again and again, a chase's cycles ÷ its length is the mean load
//! latency, and the default run (200 × 100 × 1024 ≈ 20 million loads) takes
//! well under a second from the L2 and a few seconds from memory.
//!
//! **The loop** runs on the calling thread: the caller pins it to the test
//! CPU and makes it SCHED_FIFO first. [`Chase::run`] first walks the whole
//! cycle once untimed (so the first sample does not pay for cold caches and
//! TLBs), then times the chases. Per chase it reads the TSC twice and
//! `CLOCK_MONOTONIC` once, after the timed region, for the event's `at` (one
//! vDSO read; it places the chase in a window); it allocates nothing — the
//! rows go into a vector preallocated in [`prepare`] — and checks the stop
//! flag before each chase. The walk's start and end index pass through
//! `std::hint::black_box`, an opaque operation the compiler must keep in
//! order with the TSC reads, so no load of the chase moves out of the timed
//! region (at the cost of a constant few cycles per chase). A stop in the middle of a sample keeps the
//! chases already pushed but no row for that sample (its jitter would
//! compare fewer chases than the others).
//!
//! **With `--duration`** the rows are preallocated for the most samples the
//! duration can hold (`duration_sample_bound`: at least one TSC cycle per
//! dependent load), capped at [`MAX_SAMPLES`]; the run ends at the first
//! sample boundary at or after the duration, or at the bound, with a
//! warning in the outcome.
//!
//! **The TSC frequency** converts cycles to nanoseconds for display only.
//! It comes from the first source that states it: the kernel's
//! `/sys/devices/system/cpu/cpu0/tsc_freq_khz` (vendor kernels), CPUID (the
//! hypervisor's timing leaf 0x40000010, leaf 0x15, leaf 0x15 with 0x16),
//! else it is measured against CLOCK_MONOTONIC as the median of three 50 ms
//! intervals; the outcome names the source. A CPU without `constant_tsc` or
//! `nonstop_tsc` in `/proc/cpuinfo` gets a warning: its cycles are not a
//! steady clock.
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod flags;

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use jitterlab_core::chase::{
    choose_buffer, duration_sample_bound, format_bytes, single_cycle, CacheInfo, CacheKind,
    CpuidTsc, SampleAccumulator, SampleRow, TscSource,
};
use jitterlab_core::recorder::{Sample, SampleSink, MAX_METRICS};
use jitterlab_core::units::{parse_size, CpuList};
use jitterlab_sys as sys;
use jitterlab_sys::tsc;
use serde::{Deserialize, Serialize};

use crate::error::bad;
use crate::system::host::{cpuinfo_has_flag, read_opt};
use crate::system::journal::Journal;

use super::plan::{RunPlan, Stop};
use super::{Cell, Prepared, Probe, Probes, Recorder, Report, Start};
use jitterlab_core::chase::ChaseParams;
use jitterlab_core::spec::{CellPlan, Spec};

// The metric table lives with the probe kinds: `ProbeKind::Chase.metrics()`.

/// Timed chases per sample (`--iterations`).
pub const DEFAULT_ITERATIONS: u64 = jitterlab_core::defaults::ITERATIONS;
/// Samples per run (`--samples`), as in [Red Hat caterpillar].
pub const DEFAULT_SAMPLES: u64 = jitterlab_core::defaults::SAMPLES;
/// Dependent loads per timed chase (`--chase-length`); see the module doc.
pub const DEFAULT_CHASE_LENGTH: u64 = jitterlab_core::defaults::CHASE_LENGTH;
/// The seed of the cycle: the same walk order in every run.
pub const DEFAULT_SEED: u64 = 0x243F_6A88_85A3_08D3;
pub use jitterlab_core::chase::MAX_SAMPLES;
/// Cache line size when sysfs does not give one.
const DEFAULT_LINE: u64 = 64;
/// Where the CPUs' directories are, under the sysroot.
const CPU_DIR: &str = "sys/devices/system/cpu";

/// What the runner asks of the probe, built from a cell of the typed spec
/// in one place ([`args`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaseArgs {
    /// The probe's CPU, whose caches size the default buffer.
    pub cpu: usize,
    /// The neighbours' CPUs.
    pub neighbours: CpuList,
    /// `--buffer`, bytes; `None` picks it from the cache topology.
    pub buffer: Option<u64>,
    /// `--iterations`: timed chases per sample.
    pub iterations: u64,
    /// `--samples`; `None` with no duration means [`DEFAULT_SAMPLES`].
    pub samples: Option<u64>,
    /// `--duration`, ns, instead of a sample count.
    pub duration_ns: Option<u64>,
    /// `--chase-length`: dependent loads per timed chase.
    pub chase_length: u64,
    /// Seed of the random cycle.
    pub seed: u64,
}

impl Default for ChaseArgs {
    fn default() -> Self {
        ChaseArgs {
            cpu: 0,
            neighbours: CpuList::default(),
            buffer: None,
            iterations: DEFAULT_ITERATIONS,
            samples: None,
            duration_ns: None,
            chase_length: DEFAULT_CHASE_LENGTH,
            seed: DEFAULT_SEED,
        }
    }
}

/// One 64-byte piece of the buffer; a node is one or more of them (one
/// cache line), and only a node's first piece holds its link.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Piece {
    /// Index (in pieces) of the next node's first piece.
    next: u64,
    _pad: [u64; 7],
}

const PIECE: u64 = std::mem::size_of::<Piece>() as u64;

/// A prepared chase: the linked, touched buffer, the TSC frequency and the
/// preallocated rows. Made by [`prepare`], measured by [`Chase::run`].
pub struct Chase {
    pieces: Vec<Piece>,
    cursor: usize,
    rows: Vec<SampleRow>,
    /// Rows the run may fill: the sample count, or the duration's bound.
    bound: u64,
    duration_ns: Option<u64>,
    iterations: u64,
    chase_length: u64,
    tsc_hz: u64,
    tsc_source: TscSource,
    buffer_bytes: u64,
    line_bytes: u64,
    nodes: u64,
    level: Option<u8>,
    why: String,
    warnings: Vec<String>,
}

/// What one run measured, and how the probe was set up. Serialised into the
/// run's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChaseOutcome {
    /// One row per complete sample, in order.
    pub rows: Vec<SampleRow>,
    /// Chases pushed into the sink (a stopped run's unfinished sample
    /// included).
    pub chases: u64,
    /// TSC frequency, Hz.
    pub tsc_hz: u64,
    /// Where the frequency came from.
    pub tsc_source: TscSource,
    /// Buffer size, bytes (whole nodes).
    pub buffer_bytes: u64,
    /// Node size: one cache line, bytes.
    pub line_bytes: u64,
    /// Nodes in the cycle.
    pub nodes: u64,
    /// Dependent loads per chase.
    pub chase_length: u64,
    /// Chases per sample.
    pub iterations: u64,
    /// CLOCK_MONOTONIC, ns, when timing began (after the warm-up walk); a
    /// duration counts from here.
    pub started_at: u64,
    /// Cache level the buffer was sized for; `None` with `--buffer`.
    pub level: Option<u8>,
    /// Why this buffer.
    pub why: String,
    /// The run ended on the stop flag, not by itself.
    pub stopped_early: bool,
    /// Everything that makes the cycles less trustworthy, one line each.
    pub warnings: Vec<String>,
}

/// Reads the caches of `cpu` under `root` from
/// `sys/devices/system/cpu/cpuN/cache/index*/`, in index order. No cache
/// directory gives an empty list; an index without `level`, `type` or
/// `size` is skipped (some platforms leave them out); a file in an
/// unexpected format is an error naming it.
pub fn read_caches(root: &Path, cpu: usize) -> Result<Vec<CacheInfo>> {
    let rel = format!("{CPU_DIR}/cpu{cpu}/cache");
    let Ok(entries) = fs::read_dir(root.join(&rel)) else {
        return Ok(Vec::new());
    };
    let mut indexes: Vec<u32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("index")?.parse().ok())
        .collect();
    indexes.sort_unstable();
    let mut caches = Vec::new();
    for i in indexes {
        let dir = format!("{rel}/index{i}");
        let field = |name: &str| read_opt(root, &format!("{dir}/{name}"));
        let malformed = |name: &str, text: &str| {
            anyhow!(
                "{}: \"{text}\" is not in the kernel's format",
                root.join(format!("{dir}/{name}")).display()
            )
        };
        let (Some(level), Some(kind), Some(size)) = (field("level"), field("type"), field("size"))
        else {
            continue;
        };
        let level = level
            .trim()
            .parse::<u8>()
            .map_err(|_| malformed("level", &level))?;
        let kind = CacheKind::parse(&kind).ok_or_else(|| malformed("type", &kind))?;
        let size = parse_size(size.trim()).map_err(|_| malformed("size", &size))?;
        let shared = field("shared_cpu_list").unwrap_or_default();
        let shared_cpus =
            CpuList::parse(&shared).map_err(|_| malformed("shared_cpu_list", &shared))?;
        let line = match field("coherency_line_size") {
            None => None,
            Some(t) => Some(
                t.trim()
                    .parse::<u64>()
                    .map_err(|_| malformed("coherency_line_size", &t))?,
            ),
        };
        caches.push(CacheInfo {
            level,
            kind,
            size,
            shared_cpus,
            line,
        });
    }
    Ok(caches)
}

/// The node size for `caches`: the largest data-cache line, rounded up to a
/// multiple of 64 bytes; 64 when no cache gives its line size.
fn node_bytes(caches: &[CacheInfo]) -> u64 {
    let line = caches
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .filter_map(|c| c.line)
        .max()
        .unwrap_or(DEFAULT_LINE);
    line.max(1).div_ceil(PIECE) * PIECE
}

/// The CPUID registers that can state the TSC frequency; `None` where there
/// is no CPUID.
fn read_cpuid_tsc() -> Option<CpuidTsc> {
    let max_leaf = tsc::cpuid(0, 0)?[0];
    let leaf = |l: u32| {
        if max_leaf >= l {
            tsc::cpuid(l, 0).unwrap_or_default()
        } else {
            [0; 4]
        }
    };
    let hypervisor = tsc::cpuid(1, 0).is_some_and(|r| r[2] & (1 << 31) != 0);
    let hypervisor_max_leaf = if hypervisor {
        tsc::cpuid(0x4000_0000, 0).map_or(0, |r| r[0])
    } else {
        0
    };
    let hypervisor_timing = if hypervisor_max_leaf >= 0x4000_0010 {
        tsc::cpuid(0x4000_0010, 0).unwrap_or_default()
    } else {
        [0; 4]
    };
    Some(CpuidTsc {
        max_leaf,
        leaf15: leaf(0x15),
        leaf16: leaf(0x16),
        hypervisor,
        hypervisor_max_leaf,
        hypervisor_timing,
    })
}

/// Measures the TSC against CLOCK_MONOTONIC: three 50 ms intervals, each
/// TSC read bracketed by two clock reads (their midpoint is its time), the
/// median of the three rates.
fn measure_tsc_hz() -> u64 {
    let stamp = || {
        let a = sys::monotonic_ns();
        let t = tsc::tsc_start();
        let b = sys::monotonic_ns();
        (t, a + (b - a) / 2)
    };
    let mut rates = [0u64; 3];
    for rate in &mut rates {
        let (t0, m0) = stamp();
        std::thread::sleep(Duration::from_millis(50));
        let (t1, m1) = stamp();
        let ns = (m1 - m0).max(1) as u128;
        *rate = (t1.saturating_sub(t0) as u128 * 1_000_000_000 / ns) as u64;
    }
    rates.sort_unstable();
    rates[1]
}

/// The TSC frequency in Hz and its source: `tsc_freq_khz` under `root`,
/// else CPUID, else measured (about 150 ms).
pub fn tsc_frequency(root: &Path) -> (u64, TscSource) {
    let sysfs = read_opt(root, &format!("{CPU_DIR}/cpu0/tsc_freq_khz"))
        .and_then(|t| t.trim().parse::<u64>().ok())
        .filter(|&khz| khz > 0);
    if let Some(khz) = sysfs {
        return (khz.saturating_mul(1000), TscSource::Sysfs);
    }
    if let Some(found) = read_cpuid_tsc().and_then(|c| c.tsc_hz()) {
        return found;
    }
    (measure_tsc_hz(), TscSource::Measured)
}

/// Warnings about the TSC as a clock, from the flags of `/proc/cpuinfo`
/// under `root`.
pub fn tsc_warnings(root: &Path) -> Vec<String> {
    let Some(cpuinfo) = read_opt(root, "proc/cpuinfo") else {
        return vec![
            "cannot read /proc/cpuinfo: whether the TSC is constant_tsc and nonstop_tsc is unknown"
                .into(),
        ];
    };
    let mut warnings = Vec::new();
    if !cpuinfo_has_flag(&cpuinfo, "constant_tsc") {
        warnings.push("the CPU lacks constant_tsc (/proc/cpuinfo flags): the TSC rate follows the core clock, so cycles are not comparable across frequency changes".into());
    }
    if !cpuinfo_has_flag(&cpuinfo, "nonstop_tsc") {
        warnings.push(
            "the CPU lacks nonstop_tsc (/proc/cpuinfo flags): the TSC may stop in deep C-states"
                .into(),
        );
    }
    warnings
}

/// Validates `args`, sizes, allocates, links and touches the buffer, and
/// finds the TSC frequency: everything [`Chase::run`] needs, so that the
/// run itself allocates nothing. Bad input is refused with one line naming
/// the flag to fix; nothing else on the machine changes.
pub fn prepare(root: &Path, args: &ChaseArgs) -> Result<Chase> {
    tsc::support().map_err(bad)?;
    if args.iterations == 0 {
        return Err(bad(
            "--iterations must be at least 1 (timed chases per sample)",
        ));
    }
    if args.chase_length == 0 {
        return Err(bad(
            "--chase-length must be at least 1 (dependent loads per timed chase)",
        ));
    }
    let bound = match (args.samples, args.duration_ns) {
        (Some(_), Some(_)) => return Err(bad("give --samples or --duration, not both")),
        (Some(0), None) => return Err(bad("--samples must be at least 1")),
        (Some(n), None) if n > MAX_SAMPLES => {
            return Err(bad(format!(
                "--samples {n} is more than {MAX_SAMPLES}; give fewer samples or more --iterations per sample"
            )))
        }
        (Some(n), None) => Some(n),
        (None, Some(0)) => return Err(bad("--duration must be longer than 0")),
        (None, Some(_)) => None, // needs the TSC frequency: below
        (None, None) => Some(DEFAULT_SAMPLES),
    };
    let caches = read_caches(root, args.cpu)?;
    let node = node_bytes(&caches);
    let (requested, level, why) = match args.buffer {
        Some(bytes) => (bytes, None, "--buffer given".to_string()),
        None => {
            let Some(choice) = choose_buffer(args.cpu, &caches, &args.neighbours) else {
                return Err(bad(format!(
                    "no data cache of CPU {} is described under {}; give --buffer",
                    args.cpu,
                    root.join(format!("{CPU_DIR}/cpu{}/cache", args.cpu))
                        .display()
                )));
            };
            (choice.buffer_bytes, Some(choice.level), choice.reason)
        }
    };
    let nodes = requested / node;
    if nodes < 2 {
        return Err(bad(format!(
            "a buffer of {requested} bytes holds fewer than 2 cache lines of {node} bytes; give --buffer of at least {}B",
            2 * node
        )));
    }
    if nodes > u32::MAX as u64 {
        return Err(bad(format!(
            "a buffer of {} holds more than 2^32 - 1 cache lines; give a smaller --buffer",
            format_bytes(requested)
        )));
    }
    let buffer_bytes = nodes * node;
    let stride = (node / PIECE) as usize;
    let len = nodes as usize * stride;
    let mut pieces: Vec<Piece> = Vec::new();
    pieces.try_reserve_exact(len).map_err(|_| {
        anyhow!(
            "cannot allocate the chase buffer of {}; give a smaller --buffer",
            format_bytes(buffer_bytes)
        )
    })?;
    // Writing every piece touches every page: no page fault in the run.
    pieces.resize(
        len,
        Piece {
            next: 0,
            _pad: [0; 7],
        },
    );
    for (i, next) in single_cycle(nodes as usize, args.seed)
        .into_iter()
        .enumerate()
    {
        pieces[i * stride].next = next as u64 * stride as u64;
    }
    let (tsc_hz, tsc_source) = tsc_frequency(root);
    let bound = bound.unwrap_or_else(|| {
        let loads = args.iterations.saturating_mul(args.chase_length);
        duration_sample_bound(args.duration_ns.unwrap_or(0), tsc_hz, loads).min(MAX_SAMPLES)
    });
    let mut rows = Vec::new();
    rows.try_reserve_exact(bound as usize)
        .map_err(|_| anyhow!("cannot allocate {bound} sample rows; give fewer --samples"))?;
    Ok(Chase {
        pieces,
        cursor: 0,
        rows,
        bound,
        duration_ns: args.duration_ns,
        iterations: args.iterations,
        chase_length: args.chase_length,
        tsc_hz,
        tsc_source,
        buffer_bytes,
        line_bytes: node,
        nodes,
        level,
        why,
        warnings: tsc_warnings(root),
    })
}

/// `n` dependent loads around the cycle from piece `i`; returns where it
/// stopped.
#[inline(always)]
fn walk(pieces: &[Piece], mut i: usize, n: u64) -> usize {
    for _ in 0..n {
        i = pieces[i].next as usize;
    }
    i
}

impl Chase {
    /// TSC frequency, Hz.
    #[cfg(test)]
    pub fn tsc_hz(&self) -> u64 {
        self.tsc_hz
    }

    /// Where the TSC frequency came from.
    #[cfg(test)]
    pub fn tsc_source(&self) -> TscSource {
        self.tsc_source
    }

    /// Buffer size, bytes.
    #[cfg(test)]
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes
    }

    /// Nodes (cache lines) in the cycle.
    #[cfg(test)]
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    /// The most samples the run can keep.
    #[cfg(test)]
    pub fn sample_bound(&self) -> u64 {
        self.bound
    }

    /// Warnings found in [`prepare`].
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Runs the chase on the calling thread: one untimed walk around the
    /// whole cycle, then `samples` × `iterations` timed chases (or samples
    /// until the duration is over), each pushed into `sink`. Stops before
    /// the next chase once `stop` is set. Allocates nothing (see the module
    /// doc); call it again for another session over the same buffer.
    pub fn run<S: SampleSink>(&mut self, stop: &AtomicBool, sink: &mut S) -> ChaseOutcome {
        self.rows.clear();
        // `prepare` reserved `bound` rows; this is a no-op unless a caller
        // took them away.
        self.rows.reserve_exact(self.bound as usize);
        let pieces = &self.pieces[..];
        let rows = &mut self.rows;
        let mut cursor = walk(pieces, self.cursor, self.nodes);
        let mut acc = SampleAccumulator::new();
        let (iterations, length) = (self.iterations, self.chase_length);
        let started_at = sys::monotonic_ns();
        let deadline = self.duration_ns.map(|d| started_at.saturating_add(d));
        let mut index = 0u64;
        let mut stopped = false;
        let mut at = 0u64;
        'samples: while (rows.len() as u64) < self.bound {
            for k in 0..iterations {
                if stop.load(Relaxed) {
                    stopped = true;
                    break 'samples;
                }
                let t0 = tsc::tsc_start();
                // `black_box` on the way in and out pins the walk between
                // the two reads (see the module doc).
                cursor = black_box(walk(pieces, black_box(cursor), length));
                let t1 = tsc::tsc_end();
                at = sys::monotonic_ns();
                let cycles = t1.saturating_sub(t0);
                acc.push(cycles);
                let mut values = [None; MAX_METRICS];
                values[0] = Some(i64::try_from(cycles).unwrap_or(i64::MAX));
                if k + 1 == iterations {
                    if let Some(row) = acc.end_sample() {
                        values[1] = Some(i64::try_from(row.jitter).unwrap_or(i64::MAX));
                        rows.push(row);
                    }
                }
                sink.push(&Sample { index, at, values });
                index += 1;
            }
            if deadline.is_some_and(|d| at >= d) {
                break;
            }
        }
        self.cursor = black_box(cursor);
        let mut warnings = self.warnings.clone();
        if let Some(d) = deadline {
            if !stopped && at < d {
                warnings.push(format!(
                    "the run stopped at {} samples, the most one run keeps, before --duration was over; use --samples, or more --iterations or --chase-length per sample",
                    rows.len()
                ));
            }
        }
        ChaseOutcome {
            rows: rows.clone(),
            chases: index,
            tsc_hz: self.tsc_hz,
            tsc_source: self.tsc_source,
            buffer_bytes: self.buffer_bytes,
            line_bytes: self.line_bytes,
            nodes: self.nodes,
            chase_length: self.chase_length,
            iterations: self.iterations,
            started_at,
            level: self.level,
            why: self.why.clone(),
            stopped_early: stopped,
            warnings,
        }
    }
}

// ---------------------------------------------------------------------------
// The probe the runner measures.

/// The chase's arguments for a cell: the probe CPU, the cell's neighbour
/// CPUs (their shared cache sizes the default buffer), and how it ends — by
/// its samples, else at the spec's duration (a run without `--duration`
/// ends by the default sample count, with no deadline).
pub fn args(spec: &Spec, cell: &CellPlan, plan: &RunPlan, stop: Stop) -> ChaseArgs {
    let Some(&ChaseParams {
        buffer_bytes,
        iterations,
        samples,
        chase_length,
    }) = spec.probes[cell.probe].params.get()
    else {
        unreachable!("chase arguments of a probe that is no chase")
    };
    ChaseArgs {
        cpu: plan.cpus[0],
        neighbours: spec.neighbour_cpus(cell).into_iter().collect(),
        buffer: buffer_bytes,
        iterations: iterations.unwrap_or(jitterlab_core::defaults::ITERATIONS),
        samples,
        duration_ns: match (stop, samples) {
            (Stop::Duration, None) => Some(spec.cell_duration_ns(cell)),
            _ => None,
        },
        chase_length,
        ..ChaseArgs::default()
    }
}

/// The chase of a cell, on one thread (see [`ChaseProbe`]).
pub fn build(cell: &Cell<'_>, _journal: &mut Journal) -> Result<Probes> {
    Ok(Probes::threads(vec![Box::new(ChaseProbe {
        root: cell.root.to_path_buf(),
        args: args(cell.spec, cell.cell, cell.plan, cell.stop),
        chase: None,
    })]))
}

/// The chase, prepared on the probe thread: the buffer is allocated and
/// touched there, near the probe CPU.
pub struct ChaseProbe {
    root: PathBuf,
    args: ChaseArgs,
    chase: Option<Chase>,
}

impl Probe for ChaseProbe {
    fn prepare(&mut self) -> Result<Prepared> {
        let c = prepare(&self.root, &self.args)?;
        let warnings = c.warnings().to_vec();
        self.chase = Some(c);
        Ok(Prepared {
            warnings,
            ..Prepared::default()
        })
    }

    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let c = self.chase.as_mut().context("the chase was not prepared")?;
        let out = c.run(start.stop, recorder);
        Ok(Report {
            warnings: out.warnings.clone(),
            detail: Some(serde_json::to_value(&out)?),
            ..Report::default()
        })
    }

    fn teardown(&mut self, _root: &Path, _journal: &mut Journal) -> Vec<String> {
        self.chase = None;
        Vec::new()
    }
}

/// How the runner measures the `chase` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Chase,
    build,
    unavailable: None,
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: super::ReportParts::NONE,
    placement: super::Placement::ProbeCpus,
    task: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;
    use crate::testutil::fixture;
    use jitterlab_core::probe::MetricUnit;
    use jitterlab_core::units::parse_size;

    fn cpus(text: &str) -> CpuList {
        CpuList::parse(text).unwrap()
    }

    fn bad_text(err: anyhow::Error) -> String {
        err.downcast_ref::<BadInput>()
            .unwrap_or_else(|| panic!("not bad input: {err:#}"))
            .0
            .clone()
    }

    #[test]
    fn metrics_are_chase_and_sample_jitter_in_cycles() {
        assert_eq!(
            jitterlab_core::result::ProbeKind::Chase
                .metrics()
                .iter()
                .map(|m| (m.name, m.unit, m.signed, m.thresholded))
                .collect::<Vec<_>>(),
            [
                ("chase", MetricUnit::Cycles, false, false),
                ("sample-jitter", MetricUnit::Cycles, false, false),
            ]
        );
    }

    fn cache(level: u8, kind: CacheKind, size: u64, shared: &str) -> CacheInfo {
        CacheInfo {
            level,
            kind,
            size,
            shared_cpus: cpus(shared),
            line: Some(64),
        }
    }

    #[test]
    fn caches_of_the_fixture_pc_read_exactly() {
        let caches = read_caches(&fixture("cache-pc"), 1).unwrap();
        assert_eq!(
            caches,
            vec![
                cache(1, CacheKind::Data, 48 << 10, "1"),
                cache(1, CacheKind::Instruction, 32 << 10, "1"),
                cache(2, CacheKind::Unified, 1280 << 10, "1"),
                cache(3, CacheKind::Unified, 8 << 20, "0-3"),
            ]
        );
        // A CPU without a cache directory has no caches.
        assert_eq!(read_caches(&fixture("cache-pc"), 9).unwrap(), vec![]);
        let choice = choose_buffer(1, &caches, &cpus("2")).unwrap();
        assert_eq!(
            (choice.level, choice.buffer_bytes, choice.reason.as_str()),
            (
                3,
                4 << 20,
                "L3 (8 MiB, CPUs 0-3) is the lowest cache level CPU 1 shares with neighbour CPU 2; the buffer is half of it"
            )
        );
    }

    #[test]
    fn a_malformed_cache_file_is_named() {
        let dir = crate::testutil::copy_fixture("cache-pc");
        let size = dir
            .path()
            .join("sys/devices/system/cpu/cpu1/cache/index2/size");
        fs::write(&size, "lots\n").unwrap();
        let err = read_caches(dir.path(), 1).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("{}: \"lots\" is not in the kernel's format", size.display())
        );
        // Without a size the index is skipped, as on platforms that omit it.
        fs::remove_file(&size).unwrap();
        let levels: Vec<u8> = read_caches(dir.path(), 1)
            .unwrap()
            .iter()
            .map(|c| c.level)
            .collect();
        assert_eq!(levels, vec![1, 1, 3]);
    }

    #[test]
    fn caches_of_this_machine_match_sysfs() {
        let root = Path::new("/");
        let base = Path::new("/sys/devices/system/cpu/cpu0/cache");
        if !base.exists() {
            eprintln!("skipping: {} does not exist here", base.display());
            return;
        }
        let caches = read_caches(root, 0).unwrap();
        assert!(!caches.is_empty());
        for (i, c) in caches.iter().enumerate() {
            let raw = |f: &str| fs::read_to_string(base.join(format!("index{i}/{f}"))).unwrap();
            assert_eq!(c.level.to_string(), raw("level").trim());
            assert_eq!(Some(c.kind), CacheKind::parse(&raw("type")));
            assert_eq!(c.size, parse_size(raw("size").trim()).unwrap());
            assert_eq!(c.shared_cpus, cpus(&raw("shared_cpu_list")));
        }
        // The default buffer is half of a data cache this CPU has, and that
        // cache is shared with the neighbour when any cache is.
        let online = crate::system::host::online_cpus(root).unwrap();
        let neighbours: CpuList = online.iter().filter(|&c| c != 0).collect();
        let choice = choose_buffer(0, &caches, &neighbours).unwrap();
        let chosen = caches
            .iter()
            .find(|c| c.level == choice.level && c.kind != CacheKind::Instruction)
            .unwrap();
        assert_eq!(choice.buffer_bytes, chosen.size / 2);
        let shared_any = caches
            .iter()
            .any(|c| neighbours.iter().any(|n| c.shared_cpus.contains(n)));
        assert_eq!(
            neighbours.iter().any(|n| chosen.shared_cpus.contains(n)),
            shared_any
        );
    }

    #[test]
    fn the_tsc_frequency_comes_from_the_kernel_when_it_says() {
        assert_eq!(
            tsc_frequency(&fixture("cache-pc")),
            (2_611_200_000, TscSource::Sysfs)
        );
        assert_eq!(
            tsc_warnings(&fixture("cache-pc")),
            vec!["the CPU lacks nonstop_tsc (/proc/cpuinfo flags): the TSC may stop in deep C-states".to_string()]
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            tsc_warnings(empty.path()),
            vec!["cannot read /proc/cpuinfo: whether the TSC is constant_tsc and nonstop_tsc is unknown".to_string()]
        );
    }

    #[test]
    fn the_tsc_frequency_of_this_machine_is_stated_or_measured() {
        if let Err(why) = tsc::support() {
            eprintln!("skipping: {why}");
            return;
        }
        let empty = tempfile::tempdir().unwrap();
        let (hz, source) = tsc_frequency(empty.path());
        match read_cpuid_tsc().and_then(|c| c.tsc_hz()) {
            Some(stated) => assert_eq!((hz, source), stated),
            None => {
                assert_eq!(source, TscSource::Measured);
                // Physically generous: no TSC ticks below 100 MHz or above 10 GHz.
                assert!((100_000_000..10_000_000_000).contains(&hz), "{hz} Hz");
            }
        }
    }

    fn small(buffer: &str) -> ChaseArgs {
        ChaseArgs {
            buffer: Some(parse_size(buffer).unwrap()),
            iterations: 10,
            samples: Some(20),
            chase_length: 256,
            ..ChaseArgs::default()
        }
    }

    #[test]
    fn bad_arguments_are_refused_with_the_flag_to_fix() {
        let root = fixture("cache-pc");
        let refuse = |args: ChaseArgs| bad_text(prepare(&root, &args).err().unwrap());
        assert_eq!(
            refuse(ChaseArgs {
                iterations: 0,
                ..small("64K")
            }),
            "--iterations must be at least 1 (timed chases per sample)"
        );
        assert_eq!(
            refuse(ChaseArgs {
                chase_length: 0,
                ..small("64K")
            }),
            "--chase-length must be at least 1 (dependent loads per timed chase)"
        );
        assert_eq!(
            refuse(ChaseArgs {
                samples: Some(0),
                ..small("64K")
            }),
            "--samples must be at least 1"
        );
        assert_eq!(
            refuse(ChaseArgs {
                samples: Some(MAX_SAMPLES + 1),
                ..small("64K")
            }),
            "--samples 1048577 is more than 1048576; give fewer samples or more --iterations per sample"
        );
        assert_eq!(
            refuse(ChaseArgs {
                duration_ns: Some(1_000_000),
                ..small("64K")
            }),
            "give --samples or --duration, not both"
        );
        assert_eq!(
            refuse(ChaseArgs {
                samples: None,
                duration_ns: Some(0),
                ..small("64K")
            }),
            "--duration must be longer than 0"
        );
        assert_eq!(
            refuse(small("100B")),
            "a buffer of 100 bytes holds fewer than 2 cache lines of 64 bytes; give --buffer of at least 128B"
        );
        assert_eq!(
            refuse(small("0")),
            "a buffer of 0 bytes holds fewer than 2 cache lines of 64 bytes; give --buffer of at least 128B"
        );
        assert_eq!(
            refuse(ChaseArgs {
                cpu: 9,
                buffer: None,
                ..small("64K")
            }),
            format!(
                "no data cache of CPU 9 is described under {}/sys/devices/system/cpu/cpu9/cache; give --buffer",
                root.display()
            )
        );
        assert_eq!(
            refuse(small("1024G")),
            "a buffer of 1024 GiB holds more than 2^32 - 1 cache lines; give a smaller --buffer"
        );
    }

    #[test]
    fn the_default_buffer_is_half_the_shared_l3_of_the_fixture() {
        let args = ChaseArgs {
            cpu: 1,
            neighbours: cpus("2"),
            ..ChaseArgs::default()
        };
        let chase = prepare(&fixture("cache-pc"), &args).unwrap();
        assert_eq!(
            (
                chase.buffer_bytes(),
                chase.nodes(),
                chase.line_bytes,
                chase.level,
                chase.tsc_hz(),
                chase.tsc_source(),
                chase.sample_bound(),
            ),
            (
                4 << 20,
                65_536,
                64,
                Some(3),
                2_611_200_000,
                TscSource::Sysfs,
                DEFAULT_SAMPLES
            )
        );
        assert_eq!(
            chase.why,
            "L3 (8 MiB, CPUs 0-3) is the lowest cache level CPU 1 shares with neighbour CPU 2; the buffer is half of it"
        );
        assert_eq!(chase.warnings().len(), 1);
        // The buffer is one cycle through every node.
        let mut seen = vec![false; chase.pieces.len()];
        let mut i = 0;
        for _ in 0..chase.nodes() {
            assert!(!seen[i]);
            seen[i] = true;
            i = chase.pieces[i].next as usize;
        }
        assert_eq!(i, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn lines_wider_than_64_bytes_make_wider_nodes() {
        let dir = crate::testutil::copy_fixture("cache-pc");
        for i in 0..4 {
            let f = dir.path().join(format!(
                "sys/devices/system/cpu/cpu0/cache/index{i}/coherency_line_size"
            ));
            fs::write(f, "128\n").unwrap();
        }
        let chase = prepare(dir.path(), &small("1000B")).unwrap();
        assert_eq!(
            (chase.line_bytes, chase.nodes(), chase.buffer_bytes()),
            (128, 7, 896)
        );
        assert_eq!(chase.pieces.len(), 14);
        let mut i = 0;
        for _ in 0..7 {
            assert_eq!(i % 2, 0, "a link points at a node's first piece");
            i = chase.pieces[i].next as usize;
        }
        assert_eq!(i, 0);
        assert_eq!(
            bad_text(prepare(dir.path(), &small("200B")).err().unwrap()),
            "a buffer of 200 bytes holds fewer than 2 cache lines of 128 bytes; give --buffer of at least 256B"
        );
    }

    #[test]
    fn a_short_real_chase_on_this_cpu() {
        if let Err(why) = tsc::support() {
            eprintln!("skipping: {why}");
            return;
        }
        let mut chase = prepare(Path::new("/"), &small("256K")).unwrap();
        assert_eq!((chase.nodes(), chase.buffer_bytes()), (4096, 256 << 10));
        let mut events: Vec<Sample> = Vec::with_capacity(200);
        let out = chase.run(&AtomicBool::new(false), &mut events);
        assert_eq!(out.rows.len(), 20);
        assert_eq!(out.chases, 200);
        assert_eq!(events.len(), 200);
        assert!(!out.stopped_early);
        assert_eq!(
            (out.nodes, out.chase_length, out.iterations, out.level),
            (4096, 256, 10, None)
        );
        assert_eq!(out.why, "--buffer given");
        let mut session_min = u64::MAX;
        let mut session_max = 0;
        for (s, row) in out.rows.iter().enumerate() {
            let chases = &events[s * 10..(s + 1) * 10];
            let cycles: Vec<u64> = chases.iter().map(|e| e.values[0].unwrap() as u64).collect();
            for &c in &cycles {
                // 256 dependent loads: at least one cycle each, and far less
                // than a second of cycles even from memory.
                assert!(c >= 256 && c < out.tsc_hz, "{c} cycles");
            }
            let (min, max) = (*cycles.iter().min().unwrap(), *cycles.iter().max().unwrap());
            session_min = session_min.min(min);
            session_max = session_max.max(max);
            assert_eq!(
                *row,
                SampleRow {
                    number: s as u64 + 1,
                    chases: 10,
                    min,
                    max,
                    jitter: max - min,
                    session_min,
                    session_max,
                    session_jitter: session_max - session_min,
                }
            );
            // The jitter rides on the sample's last chase only.
            for (k, e) in chases.iter().enumerate() {
                assert_eq!(e.index, (s * 10 + k) as u64);
                let want = (k == 9).then_some(row.jitter as i64);
                assert_eq!(e.values[1], want);
                assert!(e.values[2..].iter().all(Option::is_none));
            }
        }
        for row in &out.rows {
            assert!(row.session_min <= row.min && row.max <= row.session_max);
        }
        assert!(events.windows(2).all(|w| w[0].at <= w[1].at));
        // A second session over the same buffer starts its own rows.
        events.clear();
        let again = chase.run(&AtomicBool::new(false), &mut events);
        assert_eq!((again.rows.len(), again.rows[0].number), (20, 1));
    }

    /// A sink that raises the stop flag after `after` chases.
    struct StopAfter<'a> {
        stop: &'a AtomicBool,
        after: u64,
        seen: u64,
    }

    impl SampleSink for StopAfter<'_> {
        fn push(&mut self, _: &Sample) {
            self.seen += 1;
            if self.seen == self.after {
                self.stop.store(true, Relaxed);
            }
        }
    }

    #[test]
    fn the_stop_flag_ends_the_run_before_the_next_chase() {
        if let Err(why) = tsc::support() {
            eprintln!("skipping: {why}");
            return;
        }
        let mut chase = prepare(Path::new("/"), &small("64K")).unwrap();
        let stop = AtomicBool::new(false);
        let mut sink = StopAfter {
            stop: &stop,
            after: 25,
            seen: 0,
        };
        let out = chase.run(&stop, &mut sink);
        assert_eq!(
            (out.chases, out.rows.len(), out.stopped_early),
            (25, 2, true)
        );
        assert_eq!(sink.seen, 25);
        // Raised before the run: nothing is timed.
        let out = chase.run(&stop, &mut Vec::new());
        assert_eq!(
            (out.chases, out.rows.len(), out.stopped_early),
            (0, 0, true)
        );
    }

    #[test]
    fn a_duration_ends_at_a_sample_boundary() {
        if let Err(why) = tsc::support() {
            eprintln!("skipping: {why}");
            return;
        }
        let args = ChaseArgs {
            samples: None,
            duration_ns: Some(2_000_000),
            ..small("64K")
        };
        let mut chase = prepare(Path::new("/"), &args).unwrap();
        let bound = duration_sample_bound(2_000_000, chase.tsc_hz(), 10 * 256);
        assert_eq!(chase.sample_bound(), bound.min(MAX_SAMPLES));
        let mut events = Vec::new();
        let out = chase.run(&AtomicBool::new(false), &mut events);
        assert!(!out.rows.is_empty());
        assert!((out.rows.len() as u64) < chase.sample_bound());
        assert_eq!(out.chases, out.rows.len() as u64 * 10);
        // Only the last sample ended at or after the duration.
        let deadline = out.started_at + 2_000_000;
        let sample_ends: Vec<u64> = events.iter().skip(9).step_by(10).map(|e| e.at).collect();
        let (last, before) = sample_ends.split_last().unwrap();
        assert!(
            *last >= deadline,
            "last sample ended at {last}, deadline {deadline}"
        );
        assert!(
            before.iter().all(|&at| at < deadline),
            "{before:?} {deadline}"
        );
        assert!(events[0].at >= out.started_at);
        assert_eq!(out.warnings, chase.warnings());
    }
}
