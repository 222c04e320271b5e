//! The pure arithmetic of the `chase` probe: the random cycle it walks, the
//! conversion of TSC cycles to nanoseconds, the per-sample rows users of
//! Intel's caterpillar benchmark know, the default buffer size from the cache
//! topology, the TSC frequency from CPUID, and the `--roles` grammar.
//!
//! The probe itself (`src/probe/chase/`) reads sysfs and the TSC; every
//! decision it takes from what it read is made here, where the tests can give
//! it any machine and check the answer by hand.
//!
//! - **The cycle.** One node per cache line, linked by [`single_cycle`] into a
//!   single random cycle (Sattolo's algorithm, seeded): every load depends on
//!   the previous one and the next address is unpredictable, so neither
//!   out-of-order execution nor a prefetcher hides a miss. The same helper
//!   links the working set of the cyclic probe's scan.
//! - **Samples.** A sample is a fixed number of timed chases; its jitter is
//!   max − min of those chases, in cycles. [`SampleAccumulator`] turns the
//!   chases into [`SampleRow`]s with the running session min/max/jitter as
//!   well, the columns caterpillar prints per sample.
//! - **The buffer.** [`choose_buffer`] picks the lowest cache level the probe
//!   CPU shares with a neighbour CPU, else the last-level cache, and takes
//!   half of it: a neighbour on another core cannot evict lines from the probe
//!   core's private L1 or L2, so a buffer that fits there would never show
//!   it; half of the shared level stays resident while the probe is alone
//!   and loses lines as soon as the neighbour competes for that level.
//! - **Cycles are their own unit** (design rule 1): a chase is measured and
//!   stored in TSC cycles; [`cycles_to_ns`] converts with integer arithmetic
//!   only for display.
//!
//! The design rules and documents cited here are in `docs/design.md`.

pub mod params;

pub use self::params::ChaseParams;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::units::CpuList;

/// The most samples one chase run keeps (64 MiB of sample rows): the
/// bound of `--samples` and of a spec's `samples`.
pub const MAX_SAMPLES: u64 = 1 << 20;

/// A small, fast, deterministic generator (SplitMix64) for the permutation.
/// Eight lines rather than a dependency, and a fixed seed makes the walk
/// order — and so the cache behaviour — the same in every run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (multiply-shift: unbiased enough for a permutation
    /// of fewer than 2^32 nodes).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// The successor table of one random cycle through `0..n` (Sattolo's
/// algorithm): following `next[i]` from any node visits every node exactly
/// once before it returns. The same `seed` gives the same cycle.
///
/// Sattolo's shuffle of the identity swaps each position `i` only with a
/// position `j < i`, which makes the result a single `n`-cycle, uniformly
/// chosen among all `(n − 1)!` of them. For `n = 1` the one node is its own
/// successor; for `n = 0` the table is empty.
///
/// # Panics
/// When `n` exceeds `u32::MAX` (a successor is stored in 32 bits).
pub fn single_cycle(n: usize, seed: u64) -> Vec<u32> {
    assert!(
        n <= u32::MAX as usize,
        "a cycle of more than 2^32 - 1 nodes"
    );
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize; // j < i: never a fixed point
        next.swap(i, j);
    }
    next
}

/// Converts `cycles` of a counter that ticks `hz` times a second into
/// nanoseconds, rounded to the nearest nanosecond (halves up), in integer
/// arithmetic. Saturates at `u64::MAX`; a frequency of 0 gives 0 (no
/// frequency, no time).
pub fn cycles_to_ns(cycles: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    let ns = (cycles as u128 * 1_000_000_000 + hz as u128 / 2) / hz as u128;
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// The most samples a run of `duration_ns` can finish when each sample
/// walks `loads_per_sample` dependent loads and the TSC ticks `tsc_hz` times
/// a second: the bound a duration-limited run preallocates its rows for.
///
/// A dependent load takes at least one TSC cycle (an L1 hit takes four or
/// more core cycles, and no core runs four times faster than its TSC), so a
/// sample takes at least `loads_per_sample` cycles; at most
/// `ceil(duration / that)` samples end before the deadline, plus the one that
/// crosses it. Saturates at `u64::MAX`; 0 loads or 0 Hz give 1.
pub fn duration_sample_bound(duration_ns: u64, tsc_hz: u64, loads_per_sample: u64) -> u64 {
    if loads_per_sample == 0 || tsc_hz == 0 {
        return 1;
    }
    let cycles = duration_ns as u128 * tsc_hz as u128;
    let per_sample = loads_per_sample as u128 * 1_000_000_000;
    let samples = cycles.div_ceil(per_sample) + 1;
    u64::try_from(samples).unwrap_or(u64::MAX)
}

/// One sample's row, with the columns of Intel's caterpillar benchmark: the
/// sample's own min, max and jitter, and the session's so far. All values
/// are TSC cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleRow {
    /// 1-based number of the sample, as caterpillar counts them.
    pub number: u64,
    /// Timed chases in the sample (`--iterations`).
    pub chases: u64,
    /// Fastest chase of the sample.
    pub min: u64,
    /// Slowest chase of the sample.
    pub max: u64,
    /// `max − min` of the sample.
    pub jitter: u64,
    /// Fastest chase of the session (every sample so far, this one included).
    pub session_min: u64,
    /// Slowest chase of the session.
    pub session_max: u64,
    /// `session_max − session_min`.
    pub session_jitter: u64,
}

/// Turns timed chases into [`SampleRow`]s: [`push`](Self::push) each
/// chase, [`end_sample`](Self::end_sample) after the sample's last one.
/// Allocates nothing; fit for the real-time loop.
#[derive(Debug, Clone, Default)]
pub struct SampleAccumulator {
    samples: u64,
    chases: u64,
    min: u64,
    max: u64,
    session_min: u64,
    session_max: u64,
}

impl SampleAccumulator {
    /// An accumulator at the start of a session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one chase of `cycles` to the current sample.
    #[inline(always)]
    pub fn push(&mut self, cycles: u64) {
        if self.chases == 0 {
            self.min = cycles;
            self.max = cycles;
        } else {
            self.min = self.min.min(cycles);
            self.max = self.max.max(cycles);
        }
        self.chases += 1;
    }

    /// Chases in the current, unfinished sample.
    pub fn pending(&self) -> u64 {
        self.chases
    }

    /// Ends the current sample and returns its row; `None` (and nothing
    /// changes) when no chase was pushed since the last one ended.
    #[inline(always)]
    pub fn end_sample(&mut self) -> Option<SampleRow> {
        if self.chases == 0 {
            return None;
        }
        if self.samples == 0 {
            self.session_min = self.min;
            self.session_max = self.max;
        } else {
            self.session_min = self.session_min.min(self.min);
            self.session_max = self.session_max.max(self.max);
        }
        self.samples += 1;
        let row = SampleRow {
            number: self.samples,
            chases: self.chases,
            min: self.min,
            max: self.max,
            jitter: self.max - self.min,
            session_min: self.session_min,
            session_max: self.session_max,
            session_jitter: self.session_max - self.session_min,
        };
        self.chases = 0;
        Some(row)
    }
}

/// The kind of a cache, as sysfs `type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    /// `Data`: holds data only (L1d).
    Data,
    /// `Instruction`: holds code only (L1i); never a chase's buffer.
    Instruction,
    /// `Unified`: data and code (L2, L3).
    Unified,
}

impl CacheKind {
    /// Parses the sysfs `type` word (`Data`, `Instruction`, `Unified`).
    pub fn parse(word: &str) -> Option<CacheKind> {
        match word.trim() {
            "Data" => Some(CacheKind::Data),
            "Instruction" => Some(CacheKind::Instruction),
            "Unified" => Some(CacheKind::Unified),
            _ => None,
        }
    }
}

/// One cache of a CPU, as `/sys/devices/system/cpu/cpuN/cache/indexM/`
/// describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// `level`: 1, 2, 3 …
    pub level: u8,
    /// `type`.
    pub kind: CacheKind,
    /// `size`, in bytes.
    pub size: u64,
    /// `shared_cpu_list`: the CPUs that use this cache.
    pub shared_cpus: CpuList,
    /// `coherency_line_size`, in bytes, when the kernel gives it.
    pub line: Option<u64>,
}

/// The default buffer [`choose_buffer`] picked, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferChoice {
    /// The cache level the buffer is sized for.
    pub level: u8,
    /// That cache's size, bytes.
    pub cache_bytes: u64,
    /// The buffer: half the cache, bytes.
    pub buffer_bytes: u64,
    /// One sentence saying why this level.
    pub reason: String,
}

/// `bytes` in the largest binary unit that divides it (`8 MiB`,
/// `1280 KiB`, `100 B`).
pub fn format_bytes(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * 1024 * 1024;
    if bytes >= GIB && bytes.is_multiple_of(GIB) {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

fn cpu_word(cpus: &CpuList) -> &'static str {
    if cpus.len() == 1 {
        "CPU"
    } else {
        "CPUs"
    }
}

/// Picks the default buffer for a probe on `probe_cpu` whose caches are
/// `caches`, with neighbours on `neighbours`: half of the lowest data or
/// unified cache level that a neighbour CPU (other than the probe's own)
/// shares, else half of the last-level cache. Instruction caches never
/// count. `None` when `caches` holds no data or unified cache.
///
/// Why: a neighbour on another core cannot evict the probe core's private
/// L1 or L2; the first level it shares is where its traffic competes with
/// the chase. Half of that level fits while the probe runs alone and stops
/// fitting when the neighbour takes its share.
pub fn choose_buffer(
    probe_cpu: usize,
    caches: &[CacheInfo],
    neighbours: &CpuList,
) -> Option<BufferChoice> {
    let data: Vec<&CacheInfo> = caches
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .collect();
    let others: CpuList = neighbours.iter().filter(|&c| c != probe_cpu).collect();
    let shared = data
        .iter()
        .filter(|c| others.iter().any(|n| c.shared_cpus.contains(n)))
        .min_by_key(|c| (c.level, std::cmp::Reverse(c.size)));
    if let Some(c) = shared {
        let with: CpuList = others
            .iter()
            .filter(|&n| c.shared_cpus.contains(n))
            .collect();
        return Some(BufferChoice {
            level: c.level,
            cache_bytes: c.size,
            buffer_bytes: c.size / 2,
            reason: format!(
                "L{} ({}, CPUs {}) is the lowest cache level CPU {probe_cpu} shares with neighbour {} {}; the buffer is half of it",
                c.level,
                format_bytes(c.size),
                c.shared_cpus,
                cpu_word(&with),
                with
            ),
        });
    }
    let last = data.iter().max_by_key(|c| (c.level, c.size))?;
    let why = if others.is_empty() {
        "no neighbour CPU given".to_string()
    } else {
        format!(
            "no cache of CPU {probe_cpu} is shared with neighbour {} {}",
            cpu_word(&others),
            others
        )
    };
    Some(BufferChoice {
        level: last.level,
        cache_bytes: last.size,
        buffer_bytes: last.size / 2,
        reason: format!(
            "{why}; the buffer is half of the last-level cache L{} ({})",
            last.level,
            format_bytes(last.size)
        ),
    })
}

/// Where the TSC frequency came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TscSource {
    /// `/sys/devices/system/cpu/cpu0/tsc_freq_khz` (kernels that export it).
    Sysfs,
    /// CPUID leaf 0x40000010, the hypervisor's timing leaf (TSC kHz).
    Hypervisor,
    /// CPUID leaf 0x15: crystal clock × TSC/crystal ratio.
    CpuidLeaf15,
    /// CPUID leaf 0x15's ratio without a crystal clock, completed by leaf
    /// 0x16's base frequency (as Linux does).
    CpuidLeaf16,
    /// Measured against CLOCK_MONOTONIC (median of three 50 ms intervals).
    Measured,
}

impl TscSource {
    /// One phrase saying where the frequency came from, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            TscSource::Sysfs => "kernel (sysfs tsc_freq_khz)",
            TscSource::Hypervisor => "hypervisor (CPUID leaf 0x40000010)",
            TscSource::CpuidLeaf15 => "CPUID leaf 0x15 (crystal clock and ratio)",
            TscSource::CpuidLeaf16 => "CPUID leaves 0x15 and 0x16 (ratio and base frequency)",
            TscSource::Measured => "measured against CLOCK_MONOTONIC (median of 3 × 50 ms)",
        }
    }
}

/// The CPUID registers that can state the TSC frequency, as read on the
/// machine; [`CpuidTsc::tsc_hz`] decodes them. Registers are `[eax, ebx,
/// ecx, edx]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuidTsc {
    /// Highest basic leaf (leaf 0, `eax`).
    pub max_leaf: u32,
    /// Leaf 0x15 (all zero when beyond `max_leaf`).
    pub leaf15: [u32; 4],
    /// Leaf 0x16 (all zero when beyond `max_leaf`).
    pub leaf16: [u32; 4],
    /// Leaf 1 `ecx` bit 31: running under a hypervisor.
    pub hypervisor: bool,
    /// Highest hypervisor leaf (leaf 0x40000000, `eax`).
    pub hypervisor_max_leaf: u32,
    /// Leaf 0x40000010 (meaningful only when `hypervisor_max_leaf` reaches it).
    pub hypervisor_timing: [u32; 4],
}

impl CpuidTsc {
    /// The TSC frequency in Hz these registers state, and which leaf said it;
    /// `None` when none of them does (then it must be measured).
    ///
    /// Order: the hypervisor's timing leaf first (in a guest it describes the
    /// guest's TSC, after any scaling), then leaf 0x15 with its crystal
    /// clock, then leaf 0x15's ratio with leaf 0x16's base frequency.
    pub fn tsc_hz(&self) -> Option<(u64, TscSource)> {
        if self.hypervisor
            && self.hypervisor_max_leaf >= 0x4000_0010
            && self.hypervisor_timing[0] != 0
        {
            return Some((
                self.hypervisor_timing[0] as u64 * 1000,
                TscSource::Hypervisor,
            ));
        }
        if self.max_leaf >= 0x15 {
            let [den, num, crystal, _] = self.leaf15;
            if den != 0 && num != 0 {
                if crystal != 0 {
                    let hz = crystal as u128 * num as u128 / den as u128;
                    return Some((hz as u64, TscSource::CpuidLeaf15));
                }
                if self.max_leaf >= 0x16 && self.leaf16[0] != 0 {
                    return Some((self.leaf16[0] as u64 * 1_000_000, TscSource::CpuidLeaf16));
                }
            }
        }
        None
    }
}

/// The CPUs of `--roles test=1,neighbour=2,irq=3`, as [Red Hat caterpillar]'s
/// `--test_core`, `--nn_core` and `--irq_core`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// The probe's CPU.
    pub test: usize,
    /// The neighbour's CPU, when given.
    pub neighbour: Option<usize>,
    /// The CPU that handles the IRQs, when given.
    pub irq: Option<usize>,
}

/// Why a `--roles` value was refused; the text names the fix.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RolesError {
    /// Nothing given.
    #[error("--roles is empty; give at least test=CPU, e.g. test=1,neighbour=2,irq=3")]
    Empty,
    /// A part without `=`.
    #[error("\"{0}\" in --roles is not ROLE=CPU; write e.g. test=1,neighbour=2,irq=3")]
    NotAssignment(String),
    /// A role other than test, neighbour, irq.
    #[error("unknown role \"{0}\" in --roles; the roles are test, neighbour and irq")]
    UnknownRole(String),
    /// A role given twice.
    #[error("role \"{0}\" is given twice in --roles; give each role once")]
    Duplicate(String),
    /// No `test=`.
    #[error("--roles has no test=CPU; name the probe's CPU, e.g. test=1")]
    MissingTest,
    /// A CPU that is not a number.
    #[error(
        "\"{value}\" is not a CPU number in --roles {role}={value}; give one CPU, e.g. {role}=1"
    )]
    BadCpu {
        /// The role.
        role: String,
        /// What was given.
        value: String,
    },
    /// The probe's CPU also given to another role.
    #[error("test and {role} are both on CPU {cpu} in --roles; give the probe a CPU of its own")]
    SharedTestCpu {
        /// The other role.
        role: String,
        /// The CPU.
        cpu: usize,
    },
}

/// Parses `--roles`: comma-separated `ROLE=CPU` with the roles `test`
/// (required), `neighbour` and `irq`, each at most once, one CPU each. The
/// neighbour and the IRQs may share a CPU; the probe may not share its CPU
/// with either.
pub fn parse_roles(text: &str) -> Result<Roles, RolesError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(RolesError::Empty);
    }
    let mut test = None;
    let mut neighbour = None;
    let mut irq = None;
    for part in text.split(',') {
        let part = part.trim();
        let (role, value) = part
            .split_once('=')
            .ok_or_else(|| RolesError::NotAssignment(part.to_string()))?;
        let (role, value) = (role.trim(), value.trim());
        let slot = match role {
            "test" => &mut test,
            "neighbour" => &mut neighbour,
            "irq" => &mut irq,
            _ => return Err(RolesError::UnknownRole(role.to_string())),
        };
        if slot.is_some() {
            return Err(RolesError::Duplicate(role.to_string()));
        }
        let cpu = value
            .parse::<usize>()
            .ok()
            .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| RolesError::BadCpu {
                role: role.to_string(),
                value: value.to_string(),
            })?;
        *slot = Some(cpu);
    }
    let test = test.ok_or(RolesError::MissingTest)?;
    for (role, cpu) in [("neighbour", neighbour), ("irq", irq)] {
        if cpu == Some(test) {
            return Err(RolesError::SharedTestCpu {
                role: role.to_string(),
                cpu: test,
            });
        }
    }
    Ok(Roles {
        test,
        neighbour,
        irq,
    })
}

impl FromStr for Roles {
    type Err = RolesError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_roles(s)
    }
}

impl fmt::Display for Roles {
    /// Writes the `--roles` form: `test=1,neighbour=2,irq=3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "test={}", self.test)?;
        if let Some(n) = self.neighbour {
            write!(f, ",neighbour={n}")?;
        }
        if let Some(i) = self.irq {
            write!(f, ",irq={i}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_one_cycle_through_every_node() {
        for n in [1usize, 2, 3, 5, 64, 1000, 4096] {
            for seed in [0u64, 42, 0x6A09_E667_F3BC_C908] {
                let next = single_cycle(n, seed);
                assert_eq!(next.len(), n);
                let mut seen = vec![false; n];
                let mut i = 0usize;
                for step in 0..n {
                    assert!(!seen[i], "node {i} visited twice at step {step}, n = {n}");
                    seen[i] = true;
                    i = next[i] as usize;
                }
                assert_eq!(i, 0, "back at the start after n = {n} steps");
                assert!(seen.iter().all(|&s| s), "every node visited, n = {n}");
            }
        }
        assert!(single_cycle(0, 1).is_empty());
        assert_eq!(single_cycle(1, 9), vec![0]);
        assert_eq!(single_cycle(2, 9), vec![1, 0]);
    }

    #[test]
    fn permutation_is_deterministic_and_seeded() {
        assert_eq!(single_cycle(100, 7), single_cycle(100, 7));
        assert_ne!(single_cycle(100, 7), single_cycle(100, 8));
        // Sattolo on three nodes can only give the two 3-cycles.
        for seed in 0..20 {
            let next = single_cycle(3, seed);
            assert!(next == vec![1, 2, 0] || next == vec![2, 0, 1], "{next:?}");
        }
    }

    #[test]
    fn order_is_not_sequential() {
        let next = single_cycle(4096, 7);
        let sequential = next
            .iter()
            .enumerate()
            .filter(|(i, &n)| n as usize == i + 1)
            .count();
        assert!(sequential < 40, "{sequential} sequential links");
    }

    #[test]
    fn cycles_convert_to_nanoseconds_exactly() {
        assert_eq!(cycles_to_ns(2_700_000_000, 2_700_000_000), 1_000_000_000);
        assert_eq!(cycles_to_ns(2700, 2_700_000_000), 1000);
        // 1 cycle at 2.7 GHz is 0.370 ns: rounds to 0; 2 cycles 0.741 → 1.
        assert_eq!(cycles_to_ns(1, 2_700_000_000), 0);
        assert_eq!(cycles_to_ns(2, 2_700_000_000), 1);
        // Exactly half a nanosecond rounds up: 1 cycle at 2 GHz.
        assert_eq!(cycles_to_ns(1, 2_000_000_000), 1);
        assert_eq!(cycles_to_ns(9_500, 2_600_000_000), 3_654);
        assert_eq!(cycles_to_ns(u64::MAX, 1_000_000_000), u64::MAX);
        assert_eq!(cycles_to_ns(u64::MAX, 1), u64::MAX);
        assert_eq!(cycles_to_ns(5, 0), 0);
        assert_eq!(cycles_to_ns(0, 3_000_000_000), 0);
    }

    #[test]
    fn duration_bound_counts_one_cycle_per_load() {
        // 10 s at 2.7 GHz, 100 chases of 1024 loads: 263671.875 → 263672 + 1.
        assert_eq!(
            duration_sample_bound(10_000_000_000, 2_700_000_000, 102_400),
            263_673
        );
        // Exactly divisible: 1 s at 1 GHz, 1000 loads → 1e6 + 1.
        assert_eq!(
            duration_sample_bound(1_000_000_000, 1_000_000_000, 1000),
            1_000_001
        );
        assert_eq!(duration_sample_bound(0, 1_000_000_000, 1000), 1);
        assert_eq!(duration_sample_bound(1, 1_000_000_000, 0), 1);
        assert_eq!(duration_sample_bound(u64::MAX, u64::MAX, 1), u64::MAX);
    }

    fn row(number: u64, chases: u64, s: [u64; 3], session: [u64; 3]) -> SampleRow {
        SampleRow {
            number,
            chases,
            min: s[0],
            max: s[1],
            jitter: s[2],
            session_min: session[0],
            session_max: session[1],
            session_jitter: session[2],
        }
    }

    #[test]
    fn accumulator_gives_the_caterpillar_rows() {
        let mut acc = SampleAccumulator::new();
        assert_eq!(acc.end_sample(), None);
        let mut rows = Vec::new();
        for sample in [
            [100, 120, 110],
            [90, 95, 200],
            [105, 101, 103],
            [80, 300, 80],
        ] {
            for c in sample {
                acc.push(c);
            }
            assert_eq!(acc.pending(), 3);
            rows.push(acc.end_sample().unwrap());
            assert_eq!(acc.pending(), 0);
        }
        assert_eq!(
            rows,
            vec![
                row(1, 3, [100, 120, 20], [100, 120, 20]),
                row(2, 3, [90, 200, 110], [90, 200, 110]),
                row(3, 3, [101, 105, 4], [90, 200, 110]),
                row(4, 3, [80, 300, 220], [80, 300, 220]),
            ]
        );
        // An empty sample between two changes nothing.
        assert_eq!(acc.end_sample(), None);
        acc.push(7);
        assert_eq!(acc.end_sample(), Some(row(5, 1, [7, 7, 0], [7, 300, 293])));
    }

    fn cache(level: u8, kind: CacheKind, size: u64, shared: &str) -> CacheInfo {
        CacheInfo {
            level,
            kind,
            size,
            shared_cpus: CpuList::parse(shared).unwrap(),
            line: Some(64),
        }
    }

    /// CPU 1 of a 4-core PC without SMT: private L1d, L1i, L2; L3 shared.
    fn pc_cpu1() -> Vec<CacheInfo> {
        vec![
            cache(1, CacheKind::Data, 48 << 10, "1"),
            cache(1, CacheKind::Instruction, 32 << 10, "1"),
            cache(2, CacheKind::Unified, 1280 << 10, "1"),
            cache(3, CacheKind::Unified, 8 << 20, "0-3"),
        ]
    }

    #[test]
    fn buffer_is_half_the_lowest_level_shared_with_a_neighbour() {
        let c = choose_buffer(1, &pc_cpu1(), &CpuList::parse("2").unwrap()).unwrap();
        assert_eq!(
            c,
            BufferChoice {
                level: 3,
                cache_bytes: 8 << 20,
                buffer_bytes: 4 << 20,
                reason: "L3 (8 MiB, CPUs 0-3) is the lowest cache level CPU 1 shares with neighbour CPU 2; the buffer is half of it".into(),
            }
        );
        let c = choose_buffer(1, &pc_cpu1(), &CpuList::parse("0-3").unwrap()).unwrap();
        assert_eq!(
            c.reason,
            "L3 (8 MiB, CPUs 0-3) is the lowest cache level CPU 1 shares with neighbour CPUs 0,2-3; the buffer is half of it"
        );
    }

    #[test]
    fn an_smt_sibling_shares_the_l1() {
        // CPU 0 and its sibling 4 share L1 and L2.
        let caches = vec![
            cache(1, CacheKind::Instruction, 32 << 10, "0,4"),
            cache(1, CacheKind::Data, 32 << 10, "0,4"),
            cache(2, CacheKind::Unified, 256 << 10, "0,4"),
            cache(3, CacheKind::Unified, 6 << 20, "0-7"),
        ];
        let c = choose_buffer(0, &caches, &CpuList::parse("4").unwrap()).unwrap();
        assert_eq!(
            (c.level, c.cache_bytes, c.buffer_bytes),
            (1, 32 << 10, 16 << 10)
        );
        assert_eq!(
            c.reason,
            "L1 (32 KiB, CPUs 0,4) is the lowest cache level CPU 0 shares with neighbour CPU 4; the buffer is half of it"
        );
    }

    #[test]
    fn without_a_shared_level_the_buffer_is_half_the_last_level() {
        let caches = vec![
            cache(1, CacheKind::Data, 48 << 10, "1"),
            cache(2, CacheKind::Unified, 1280 << 10, "1"),
            cache(3, CacheKind::Unified, 12 << 20, "0-3"),
        ];
        let c = choose_buffer(1, &caches, &CpuList::parse("4-5").unwrap()).unwrap();
        assert_eq!(
            c,
            BufferChoice {
                level: 3,
                cache_bytes: 12 << 20,
                buffer_bytes: 6 << 20,
                reason: "no cache of CPU 1 is shared with neighbour CPUs 4-5; the buffer is half of the last-level cache L3 (12 MiB)".into(),
            }
        );
        // The probe's own CPU is no neighbour.
        let c = choose_buffer(1, &caches, &CpuList::parse("1").unwrap()).unwrap();
        assert_eq!(
            c.reason,
            "no neighbour CPU given; the buffer is half of the last-level cache L3 (12 MiB)"
        );
        let c = choose_buffer(1, &caches[..2], &CpuList::default()).unwrap();
        assert_eq!(
            (c.level, c.buffer_bytes, c.reason.as_str()),
            (
                2,
                640 << 10,
                "no neighbour CPU given; the buffer is half of the last-level cache L2 (1280 KiB)"
            )
        );
        let icache = [cache(1, CacheKind::Instruction, 32 << 10, "0-3")];
        assert_eq!(
            choose_buffer(1, &icache, &CpuList::parse("2").unwrap()),
            None
        );
        assert_eq!(choose_buffer(1, &[], &CpuList::default()), None);
    }

    #[test]
    fn sizes_print_in_their_largest_exact_unit() {
        assert_eq!(format_bytes(100), "100 B");
        assert_eq!(format_bytes(48 << 10), "48 KiB");
        assert_eq!(format_bytes(1280 << 10), "1280 KiB");
        assert_eq!(format_bytes(491_520 << 10), "480 MiB");
        assert_eq!(format_bytes(2 << 30), "2 GiB");
        assert_eq!(format_bytes(1536), "1536 B");
        assert_eq!(CacheKind::parse("Unified\n"), Some(CacheKind::Unified));
        assert_eq!(CacheKind::parse("unified"), None);
    }

    #[test]
    fn cpuid_leaves_give_the_tsc_frequency() {
        let none = CpuidTsc::default();
        assert_eq!(none.tsc_hz(), None);
        // An 11th-generation Core: crystal 38.4 MHz, ratio 136/2 → 2.6112 GHz.
        let core = CpuidTsc {
            max_leaf: 0x1b,
            leaf15: [2, 136, 38_400_000, 0],
            leaf16: [2600, 4500, 100, 0],
            ..CpuidTsc::default()
        };
        assert_eq!(core.tsc_hz(), Some((2_611_200_000, TscSource::CpuidLeaf15)));
        // Ratio without crystal: the base frequency of leaf 0x16.
        let skylake = CpuidTsc {
            max_leaf: 0x16,
            leaf15: [2, 300, 0, 0],
            leaf16: [3000, 3900, 100, 0],
            ..CpuidTsc::default()
        };
        assert_eq!(
            skylake.tsc_hz(),
            Some((3_000_000_000, TscSource::CpuidLeaf16))
        );
        // Leaf 0x16 is ignored beyond the highest basic leaf.
        let old = CpuidTsc {
            max_leaf: 0x15,
            ..skylake
        };
        assert_eq!(old.tsc_hz(), None);
        // A hypervisor timing leaf wins, but only when it exists.
        let guest = CpuidTsc {
            hypervisor: true,
            hypervisor_max_leaf: 0x4000_0010,
            hypervisor_timing: [2_700_000, 1_000_000, 0, 0],
            ..core
        };
        assert_eq!(guest.tsc_hz(), Some((2_700_000_000, TscSource::Hypervisor)));
        // This machine's KVM: hypervisor leaves up to 0x40000001 only, and
        // leaves 0x15/0x16 all zero.
        let kvm = CpuidTsc {
            max_leaf: 0x24,
            hypervisor: true,
            hypervisor_max_leaf: 0x4000_0001,
            hypervisor_timing: [0, 458_753, 0, 0],
            ..CpuidTsc::default()
        };
        assert_eq!(kvm.tsc_hz(), None);
        assert_eq!(
            serde_json::to_string(&TscSource::CpuidLeaf15).unwrap(),
            "\"cpuid-leaf15\""
        );
    }

    #[test]
    fn roles_parse_like_seed_002() {
        assert_eq!(
            parse_roles("test=1,neighbour=2,irq=3"),
            Ok(Roles {
                test: 1,
                neighbour: Some(2),
                irq: Some(3)
            })
        );
        assert_eq!(
            " irq = 0 , test=1 ".parse::<Roles>(),
            Ok(Roles {
                test: 1,
                neighbour: None,
                irq: Some(0)
            })
        );
        // Neighbour and IRQs may share a CPU (a 2-CPU machine).
        let r = parse_roles("test=1,neighbour=0,irq=0").unwrap();
        assert_eq!(r.to_string(), "test=1,neighbour=0,irq=0");
        assert_eq!(parse_roles("test=3").unwrap().to_string(), "test=3");
    }

    #[test]
    fn bad_roles_name_the_fix() {
        let err = |s: &str| parse_roles(s).unwrap_err().to_string();
        assert_eq!(
            err("test=1,nn=2"),
            "unknown role \"nn\" in --roles; the roles are test, neighbour and irq"
        );
        assert_eq!(
            err("test=1,irq=2,irq=3"),
            "role \"irq\" is given twice in --roles; give each role once"
        );
        assert_eq!(
            err("neighbour=2,irq=3"),
            "--roles has no test=CPU; name the probe's CPU, e.g. test=1"
        );
        assert_eq!(
            err("test=x"),
            "\"x\" is not a CPU number in --roles test=x; give one CPU, e.g. test=1"
        );
        assert_eq!(
            err("test=1,neighbour=-2"),
            "\"-2\" is not a CPU number in --roles neighbour=-2; give one CPU, e.g. neighbour=1"
        );
        assert_eq!(
            err("test=1,neighbour=+2"),
            "\"+2\" is not a CPU number in --roles neighbour=+2; give one CPU, e.g. neighbour=1"
        );
        assert_eq!(
            err("test=1,neighbour="),
            "\"\" is not a CPU number in --roles neighbour=; give one CPU, e.g. neighbour=1"
        );
        assert_eq!(
            err("test=1-2"),
            "\"1-2\" is not a CPU number in --roles test=1-2; give one CPU, e.g. test=1"
        );
        assert_eq!(
            err("test"),
            "\"test\" in --roles is not ROLE=CPU; write e.g. test=1,neighbour=2,irq=3"
        );
        assert_eq!(
            err("test=1,"),
            "\"\" in --roles is not ROLE=CPU; write e.g. test=1,neighbour=2,irq=3"
        );
        assert_eq!(
            err(" "),
            "--roles is empty; give at least test=CPU, e.g. test=1,neighbour=2,irq=3"
        );
        assert_eq!(
            err("test=2,irq=2"),
            "test and irq are both on CPU 2 in --roles; give the probe a CPU of its own"
        );
        assert_eq!(
            parse_roles("test=1,test=2").unwrap_err(),
            RolesError::Duplicate("test".into())
        );
    }
}
