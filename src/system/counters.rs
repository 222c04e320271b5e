//! Per-CPU kernel counters read before and after the measured part of a
//! cell: what explains its outliers.
//!
//! A wake-up that came late on a virtual machine may have been stolen by the
//! hypervisor; one on bare metal may have waited behind a network interrupt
//! or a burst of softirq work. The kernel counts all of these per CPU, so a
//! reading at the start and one at the end of a cell say what hit the probe
//! CPUs in between, and where network receive work (`NET_RX`) landed:
//!
//! - `/proc/stat`: the `cpuN` lines `user nice system idle iowait irq softirq
//!   steal guest guest_nice`, in USER_HZ ticks; steal is the 8th number. The
//!   kernel fixes USER_HZ at 100 for this file on every architecture (it
//!   converts from its internal tick rate), so [`delta`] converts with
//!   [`USER_HZ`] — [`ticks_to_ns`] takes the rate as an argument to keep the
//!   assumption in one place. Only online CPUs have a line.
//! - `/proc/interrupts`: a header `CPU0 CPU1 …` naming the *online* CPUs,
//!   one column each (an offline CPU is simply missing, so a column index is
//!   mapped to the CPU number its header names), then one line per interrupt
//!   source: `  24:   12   0  IO-APIC 5-edge ACPI:Ged` or `LOC:  123 456
//!   Local timer interrupts`. The x86 `ERR:`/`MIS:` lines (and ARM's `Err:`)
//!   hold one machine-wide number, not one per CPU, and are skipped.
//! - `/proc/softirqs`: a header naming the *possible* CPUs, then
//!   `NET_RX:  1  2` per softirq type.
//!
//! Reading never fails: a file that is missing or unreadable (a container,
//! an unusual kernel) leaves its part of [`Counters`] empty, which
//! [`Counters::missing`] names so a report can print "unknown" rather than a
//! misleading zero. Counters only grow; should one go backwards (a CPU that
//! went offline and came back), its delta is 0. A line present only in the
//! second reading (an interrupt registered during the cell) counts from 0.
//! Every path is read under one root (design rule 5).
//!
//! `jitterlab check` reads `/proc/interrupts` through the same parse, with
//! each line's description kept ([`interrupt_lines`]), to name the IRQs that
//! reach the probe CPUs and count what they delivered there.
//!
//! The design rules cited here are in `docs/design.md`.

// The bench runner reads the counters around each cell; until it is wired
// in, only tests call them.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use jitterlab_core::cell::CpuCounters;

/// Ticks per second of the `/proc/stat` CPU times: USER_HZ, which the kernel
/// fixes at 100 for user space whatever its internal `HZ`.
pub const USER_HZ: u64 = 100;

/// A counter table: row name (`LOC`, `24`, `NET_RX` …) → CPU → count.
type Table = BTreeMap<String, BTreeMap<usize, u64>>;

/// One reading of the kernel's per-CPU counters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counters {
    /// Steal time per CPU, USER_HZ ticks (`/proc/stat`); `None` when the
    /// file could not be read.
    steal: Option<BTreeMap<usize, u64>>,
    /// `/proc/interrupts`, per-CPU lines only; `None` when unreadable.
    interrupts: Option<Table>,
    /// `/proc/softirqs`; `None` when unreadable.
    softirqs: Option<Table>,
}

impl Counters {
    /// The files of this reading that could not be read (`/proc/stat`,
    /// `/proc/interrupts`, `/proc/softirqs`), whose figures are unknown.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.steal.is_none() {
            out.push("/proc/stat");
        }
        if self.interrupts.is_none() {
            out.push("/proc/interrupts");
        }
        if self.softirqs.is_none() {
            out.push("/proc/softirqs");
        }
        out
    }
}

/// Reads `/proc/stat`, `/proc/interrupts` and `/proc/softirqs` under `root`.
/// A missing or unreadable file gives an empty part (see
/// [`Counters::missing`]), never an error.
pub fn read(root: &Path) -> Counters {
    let text = |rel: &str| {
        fs::read(root.join(rel))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    Counters {
        steal: text("proc/stat").map(|t| parse_steal(&t)),
        interrupts: text("proc/interrupts").map(|t| parse_table(&t)),
        softirqs: text("proc/softirqs").map(|t| parse_table(&t)),
    }
}

/// The counters of `cpus` between two readings (in the order given), and
/// the `NET_RX` softirq delta of every CPU the second reading's
/// `/proc/softirqs` names.
///
/// For each CPU: `steal_ns` (ticks converted at [`USER_HZ`]), `irqs` (the
/// sum over every `/proc/interrupts` line of that CPU's column),
/// `irq_lines` and `softirqs` (non-zero deltas only, by line name).
pub fn delta(
    before: &Counters,
    after: &Counters,
    cpus: &[usize],
) -> (Vec<CpuCounters>, BTreeMap<usize, u64>) {
    let irq_lines = table_delta(before.interrupts.as_ref(), after.interrupts.as_ref());
    let softirqs = table_delta(before.softirqs.as_ref(), after.softirqs.as_ref());
    let per_cpu = cpus
        .iter()
        .map(|&cpu| {
            let steal_ticks = match (&before.steal, &after.steal) {
                (Some(b), Some(a)) => a
                    .get(&cpu)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(b.get(&cpu).copied().unwrap_or(0)),
                _ => 0,
            };
            let lines = column(&irq_lines, cpu);
            CpuCounters {
                cpu,
                steal_ns: ticks_to_ns(steal_ticks, USER_HZ),
                irqs: lines.values().sum(),
                irq_lines: lines,
                softirqs: column(&softirqs, cpu),
            }
        })
        .collect();
    // Every CPU of the second reading, zero deltas included; empty when
    // either reading lacks /proc/softirqs.
    let net_rx = softirqs.get("NET_RX").cloned().unwrap_or_default();
    (per_cpu, net_rx)
}

/// Converts `ticks` at `ticks_per_sec` to nanoseconds (exact for USER_HZ =
/// 100: one tick is 10 ms).
pub fn ticks_to_ns(ticks: u64, ticks_per_sec: u64) -> u64 {
    let per_tick = 1_000_000_000 / ticks_per_sec.max(1);
    ticks.saturating_mul(per_tick)
}

/// Steal ticks per CPU from `/proc/stat` (`cpuN` lines with at least eight
/// numbers; the aggregate `cpu` line is not a CPU).
fn parse_steal(text: &str) -> BTreeMap<usize, u64> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let cpu: usize = words.next()?.strip_prefix("cpu")?.parse().ok()?;
            let steal: u64 = words.nth(7)?.parse().ok()?;
            Some((cpu, steal))
        })
        .collect()
}

/// Parses `/proc/interrupts` or `/proc/softirqs` into a counter table (see
/// [`parse_rows`]).
fn parse_table(text: &str) -> Table {
    parse_rows(text)
        .into_iter()
        .map(|(name, line)| (name, line.counts))
        .collect()
}

/// One line of `/proc/interrupts`: its count per CPU and the words after
/// the counts (for a device IRQ the chip, the hardware IRQ and trigger, and
/// the handlers' names, e.g. `IO-APIC 4-edge ttyS0`; for `LOC` the
/// description `Local timer interrupts`), single-spaced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterruptLine {
    /// Interrupts taken so far, by CPU.
    pub counts: BTreeMap<usize, u64>,
    /// The text after the counts.
    pub description: String,
}

/// Every per-CPU line of `/proc/interrupts` under `root`, by its name (`24`,
/// `LOC` …); `None` when the file cannot be read. The same parse as
/// [`read`]'s, with the description kept.
pub fn interrupt_lines(root: &Path) -> Option<BTreeMap<String, InterruptLine>> {
    let bytes = fs::read(root.join("proc/interrupts")).ok()?;
    Some(parse_rows(&String::from_utf8_lossy(&bytes)))
}

/// Parses `/proc/interrupts` or `/proc/softirqs`: a header of `CPUn` words,
/// then `name: count count … [description]` lines. A line is kept only when
/// it has a count for every header column; the machine-wide `ERR`, `MIS`
/// and `Err` lines are skipped.
fn parse_rows(text: &str) -> BTreeMap<String, InterruptLine> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return BTreeMap::new();
    };
    let columns: Vec<usize> = header
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut rows = BTreeMap::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || matches!(name, "ERR" | "MIS" | "Err") {
            continue;
        }
        let counts: Vec<u64> = rest
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .take(columns.len())
            .collect();
        if counts.len() != columns.len() {
            continue;
        }
        let description: Vec<&str> = rest.split_whitespace().skip(counts.len()).collect();
        rows.insert(
            name.to_string(),
            InterruptLine {
                counts: columns.iter().copied().zip(counts).collect(),
                description: description.join(" "),
            },
        );
    }
    rows
}

/// Row-by-row, CPU-by-CPU deltas of two tables (rows and CPUs of `after`;
/// what `before` lacks counts from 0). Empty when either is unknown.
fn table_delta(before: Option<&Table>, after: Option<&Table>) -> Table {
    let (Some(before), Some(after)) = (before, after) else {
        return Table::new();
    };
    after
        .iter()
        .map(|(name, row)| {
            let old = before.get(name);
            let d = row
                .iter()
                .map(|(&cpu, &n)| {
                    let was = old.and_then(|o| o.get(&cpu)).copied().unwrap_or(0);
                    (cpu, n.saturating_sub(was))
                })
                .collect();
            (name.clone(), d)
        })
        .collect()
}

/// The non-zero entries of one CPU's column of a delta table.
fn column(table: &Table, cpu: usize) -> BTreeMap<String, u64> {
    table
        .iter()
        .filter_map(|(name, row)| {
            let n = row.get(&cpu).copied().unwrap_or(0);
            (n > 0).then(|| (name.clone(), n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/counters")
            .join(name)
    }

    fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn vm_fixture_deltas_are_exact() {
        let before = read(&fixture("vm-before"));
        let after = read(&fixture("vm-after"));
        assert!(before.missing().is_empty());
        let (cpus, net_rx) = delta(&before, &after, &[1, 0]);
        let expected = vec![
            CpuCounters {
                cpu: 1,
                steal_ns: 370_000_000,
                irqs: 1_117,
                irq_lines: map(&[
                    ("26", 2),
                    ("36", 40),
                    ("42", 5),
                    ("CAL", 20),
                    ("LOC", 1_000),
                    ("RES", 40),
                    ("TLB", 10),
                ]),
                softirqs: map(&[
                    ("BLOCK", 40),
                    ("NET_RX", 3),
                    ("RCU", 70),
                    ("SCHED", 300),
                    ("TIMER", 250),
                ]),
            },
            CpuCounters {
                cpu: 0,
                steal_ns: 20_000_000,
                irqs: 318,
                irq_lines: map(&[
                    ("32", 1),
                    ("39", 2),
                    ("41", 4),
                    ("CAL", 6),
                    ("LOC", 300),
                    ("RES", 5),
                ]),
                softirqs: map(&[("NET_RX", 4), ("RCU", 30), ("SCHED", 100), ("TIMER", 90)]),
            },
        ];
        assert_eq!(cpus, expected);
        assert_eq!(net_rx, BTreeMap::from([(0, 4), (1, 3)]));
    }

    #[test]
    fn offline_cpu_columns_follow_the_header() {
        // CPU 1 is offline: /proc/stat and /proc/interrupts skip it,
        // /proc/softirqs (possible CPUs) still has its column. IRQ 50 was
        // registered between the readings.
        let before = read(&fixture("offline-before"));
        let after = read(&fixture("offline-after"));
        let (cpus, net_rx) = delta(&before, &after, &[1, 3]);
        let expected = vec![
            CpuCounters {
                cpu: 1,
                ..CpuCounters::default()
            },
            CpuCounters {
                cpu: 3,
                steal_ns: 0,
                irqs: 518,
                irq_lines: map(&[("50", 7), ("LOC", 500), ("RES", 11)]),
                softirqs: map(&[("HRTIMER", 2), ("NET_RX", 900), ("TIMER", 40)]),
            },
        ];
        assert_eq!(cpus, expected);
        assert_eq!(net_rx, BTreeMap::from([(0, 5), (1, 0), (2, 0), (3, 900)]));
    }

    #[test]
    fn parse_table_keeps_per_cpu_lines_only() {
        let text = "           CPU0       CPU2       \n  \
                    0:         44          0   IO-APIC   2-edge      timer\n\
                    LOC:        10         20   Local timer interrupts\n\
                    ERR:          0\n\
                    MIS:          0\n\
                    PIN:          0          0   Posted-interrupt notification event\n";
        let t = parse_table(text);
        let row = |pairs: &[(usize, u64)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
        assert_eq!(
            t,
            Table::from([
                ("0".to_string(), row(&[(0, 44), (2, 0)])),
                ("LOC".to_string(), row(&[(0, 10), (2, 20)])),
                ("PIN".to_string(), row(&[(0, 0), (2, 0)])),
            ])
        );
    }

    #[test]
    fn interrupt_lines_keep_the_description() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        fs::write(
            dir.path().join("proc/interrupts"),
            "           CPU0       CPU1       \n \
             26:          0         16  IO-APIC   4-edge      ttyS0\n \
             36:          0    1170256 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
             LOC:    1253662   18685763   Local timer interrupts\n\
             ERR:          0\n",
        )
        .unwrap();
        let line = |counts: [(usize, u64); 2], description: &str| InterruptLine {
            counts: BTreeMap::from(counts),
            description: description.into(),
        };
        assert_eq!(
            interrupt_lines(dir.path()).unwrap(),
            BTreeMap::from([
                (
                    "26".to_string(),
                    line([(0, 0), (1, 16)], "IO-APIC 4-edge ttyS0")
                ),
                (
                    "36".to_string(),
                    line(
                        [(0, 0), (1, 1_170_256)],
                        "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0"
                    )
                ),
                (
                    "LOC".to_string(),
                    line([(0, 1_253_662), (1, 18_685_763)], "Local timer interrupts")
                ),
            ])
        );
        assert_eq!(interrupt_lines(&dir.path().join("none")), None);
    }

    #[test]
    fn one_cpu_err_line_is_still_skipped() {
        let text =
            "           CPU0       \nLOC:          7   Local timer interrupts\nERR:          3\n";
        assert_eq!(
            parse_table(text),
            Table::from([("LOC".to_string(), BTreeMap::from([(0, 7)]))])
        );
    }

    #[test]
    fn steal_is_the_eighth_number_of_cpu_lines() {
        let text = "cpu  265133 1 24227 953285 2504 0 1246 55270 0 0\n\
                    cpu0 168973 0 10947 445635 816 0 213 15268 0 0\n\
                    cpu1 96159 1 13280 507649 1688 0 1032 40001 0 0\n\
                    cpu2 1 2 3 4 5 6 7\n\
                    intr 18562128 0 0\n";
        assert_eq!(parse_steal(text), BTreeMap::from([(0, 15268), (1, 40001)]));
        assert_eq!(ticks_to_ns(3, USER_HZ), 30_000_000);
        assert_eq!(ticks_to_ns(3, 250), 12_000_000);
    }

    #[test]
    fn missing_files_are_unknown_not_errors() {
        let dir = tempfile::tempdir().unwrap();
        let none = read(dir.path());
        assert_eq!(
            none.missing(),
            ["/proc/stat", "/proc/interrupts", "/proc/softirqs"]
        );
        let after = read(&fixture("vm-after"));
        let (cpus, net_rx) = delta(&none, &after, &[0]);
        assert_eq!(
            cpus,
            [CpuCounters {
                cpu: 0,
                ..CpuCounters::default()
            }]
        );
        assert!(net_rx.is_empty());

        fs::create_dir_all(dir.path().join("proc")).unwrap();
        fs::copy(
            fixture("vm-before/proc/softirqs"),
            dir.path().join("proc/softirqs"),
        )
        .unwrap();
        let some = read(dir.path());
        assert_eq!(some.missing(), ["/proc/stat", "/proc/interrupts"]);
        let (cpus, net_rx) = delta(&some, &after, &[0]);
        assert_eq!(cpus[0].irqs, 0);
        assert_eq!(cpus[0].steal_ns, 0);
        assert_eq!(cpus[0].softirqs["NET_RX"], 4);
        assert_eq!(net_rx, BTreeMap::from([(0, 4), (1, 3)]));
    }

    #[test]
    fn real_proc_over_a_short_sleep() {
        let root = Path::new("/");
        let online: Vec<usize> = fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| jitterlab_core::units::CpuList::parse(&t).ok())
            .map(|l| l.iter().collect())
            .unwrap_or_default();
        if online.is_empty() || !Path::new("/proc/softirqs").exists() {
            eprintln!("skipping: no /sys/devices/system/cpu/online or /proc/softirqs here");
            return;
        }
        let before = read(root);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let after = read(root);
        assert!(after.missing().is_empty(), "{:?}", after.missing());
        // Every online CPU has a steal figure, a TIMER softirq column and
        // (x86) a LOC column; no counter went backwards.
        for c in [&before, &after] {
            let steal = c.steal.as_ref().unwrap();
            let softirqs = c.softirqs.as_ref().unwrap();
            for cpu in &online {
                assert!(steal.contains_key(cpu), "no steal for CPU {cpu}");
                assert!(softirqs["TIMER"].contains_key(cpu), "no TIMER for {cpu}");
                if cfg!(target_arch = "x86_64") {
                    let loc = &c.interrupts.as_ref().unwrap()["LOC"];
                    assert!(loc.contains_key(cpu), "no LOC for CPU {cpu}");
                }
            }
        }
        for (b, a) in [
            (before.interrupts.as_ref(), after.interrupts.as_ref()),
            (before.softirqs.as_ref(), after.softirqs.as_ref()),
        ] {
            let (b, a) = (b.unwrap(), a.unwrap());
            for name in ["LOC", "TIMER"] {
                if let (Some(rb), Some(ra)) = (b.get(name), a.get(name)) {
                    for (cpu, n) in rb {
                        assert!(ra[cpu] >= *n, "{name} went backwards on CPU {cpu}");
                    }
                }
            }
        }
        let (cpus, net_rx) = delta(&before, &after, &online);
        assert_eq!(cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), online);
        // The sleep itself ended with a timer interrupt on some CPU.
        assert!(cpus.iter().map(|c| c.irqs).sum::<u64>() > 0, "{cpus:?}");
        for cpu in &online {
            assert!(net_rx.contains_key(cpu), "no NET_RX for CPU {cpu}");
        }
    }
}
