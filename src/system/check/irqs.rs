//! IRQ findings: the device interrupts routed to the probe CPUs, with their
//! handlers and counts, and irqbalance, which would move them back.

use std::fs;
use std::path::Path;

use jitterlab_core::units::CpuList;

use super::finding::{probe_unknown, probe_words, Finding, Severity};
use crate::system::counters::interrupt_lines;
use crate::system::host::read_opt;
use crate::system::settings::irqbalance;

const IRQ_DIR: &str = "proc/irq";
/// How many IRQs the `irqs-on-probe-cpus` summary names.
const IRQS_SHOWN: usize = 10;

/// `irqbalance`: whether irqbalance runs, which moves IRQs back onto
/// probe CPUs.
pub(super) fn irqbalance(root: &Path) -> Finding {
    const ID: &str = "irqbalance";
    let unknown = |why: &str| {
        Finding::new(
            ID,
            Severity::Info,
            format!("unknown whether irqbalance runs: {why}"),
            "",
        )
    };
    let found = match irqbalance::find(root) {
        Err(_) => return unknown("cannot list /proc"),
        Ok(f) if f.processes == 0 => return unknown("no processes under /proc"),
        Ok(f) => f,
    };
    if found.pids.is_empty() {
        return Finding::ok(ID, "irqbalance is not running");
    }
    let pids: Vec<String> = found.pids.iter().map(i32::to_string).collect();
    let noun = if pids.len() == 1 { "pid" } else { "pids" };
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "irqbalance is running ({noun} {}): it moves IRQs back onto probe CPUs; a configuration with irq_cpus pauses it (SIGSTOP) for each cell and resumes it afterwards",
            pids.join(", ")
        ),
        "to stop it for good: systemctl disable --now irqbalance",
    )
}

/// The handler name(s) in a `/proc/interrupts` description such as
/// `IO-APIC 4-edge ttyS0`: its last word, or, for a shared IRQ
/// (`... ehci_hcd:usb1, uhci_hcd:usb2`), everything from the last word
/// before the first `, `.
fn irq_name(description: &str) -> &str {
    let head = description.split(", ").next().unwrap_or(description);
    let start = head.rfind(' ').map_or(0, |i| i + 1);
    &description[start..]
}

/// `irqs-on-probe-cpus`: the device IRQs routed to the probe CPUs, most
/// interrupts first.
pub(super) fn irqs_on_probe_cpus(
    root: &Path,
    online: Option<&CpuList>,
    probe: Option<&CpuList>,
) -> Finding {
    const ID: &str = "irqs-on-probe-cpus";
    let Some(probe) = probe else {
        return probe_unknown(ID, "IRQs on probe CPUs");
    };
    let Ok(entries) = fs::read_dir(root.join(IRQ_DIR)) else {
        return Finding::new(
            ID,
            Severity::Info,
            format!("unknown IRQ affinity: cannot list /{IRQ_DIR}"),
            "",
        );
    };
    let lines = interrupt_lines(root);
    // (IRQ, handler name, interrupts delivered to the probe CPUs).
    let mut hits: Vec<(u32, String, Option<u64>)> = Vec::new();
    for entry in entries.flatten() {
        let Some(irq) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let list = |file: &str| {
            read_opt(root, &format!("{IRQ_DIR}/{irq}/{file}"))
                .filter(|t| !t.trim().is_empty())
                .and_then(|t| CpuList::parse(&t).ok())
        };
        let Some(affinity) = list("effective_affinity_list").or_else(|| list("smp_affinity_list"))
        else {
            continue;
        };
        if !affinity.iter().any(|c| probe.contains(c)) {
            continue;
        }
        match &lines {
            // No line: no handler, so it delivers nothing.
            Some(lines) => {
                let Some(line) = lines.get(&irq.to_string()) else {
                    continue;
                };
                let count = probe
                    .iter()
                    .map(|c| line.counts.get(&c).copied().unwrap_or(0))
                    .sum();
                hits.push((irq, irq_name(&line.description).to_string(), Some(count)));
            }
            None => hits.push((irq, String::new(), None)),
        }
    }
    if hits.is_empty() {
        return Finding::ok(
            ID,
            format!("no device IRQ is routed to {}", probe_words(probe)),
        );
    }
    hits.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut items: Vec<String> = hits
        .iter()
        .take(IRQS_SHOWN)
        .map(|(irq, name, count)| match count {
            Some(n) => format!("{irq} {name} ({n})"),
            None => irq.to_string(),
        })
        .collect();
    if hits.len() > IRQS_SHOWN {
        items.push(format!("and {} more", hits.len() - IRQS_SHOWN));
    }
    let noun = if hits.len() == 1 {
        "IRQ is"
    } else {
        "IRQs are"
    };
    let counted = if lines.is_some() {
        " (interrupts taken there since boot)"
    } else {
        " (names and counts unknown: cannot read /proc/interrupts)"
    };
    let others: CpuList = online
        .map(|o| o.iter().filter(|c| !probe.contains(*c)).collect())
        .unwrap_or_default();
    let fix = if others.is_empty() {
        "no other online CPU can take them; a machine with more CPUs can".to_string()
    } else {
        format!(
            "set irq_cpus = \"{others}\" in a configuration of your spec: jitterlab bench and jitterlab apply move them there for the cell (pausing irqbalance meanwhile)"
        )
    };
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "{} {noun} routed to {}{counted}: {}",
            hits.len(),
            probe_words(probe),
            items.join(", ")
        ),
        &fix,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::check::tests::{rt_cpus, write};
    use crate::testutil::{copy_fixture, fixture};

    #[test]
    fn irqbalance_is_found_by_comm() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/1/comm", "systemd\n");
        write(root, "proc/sys/kernel/timer_migration", "1\n");
        assert_eq!(
            irqbalance(root),
            Finding::ok("irqbalance", "irqbalance is not running")
        );
        write(root, "proc/812/comm", "irqbalance\n");
        assert_eq!(
            irqbalance(root),
            Finding::new(
                "irqbalance",
                Severity::Warn,
                "irqbalance is running (pid 812): it moves IRQs back onto probe CPUs; a configuration with irq_cpus pauses it (SIGSTOP) for each cell and resumes it afterwards",
                "to stop it for good: systemctl disable --now irqbalance",
            )
        );
        write(root, "proc/90/comm", "irqbalance\n");
        assert_eq!(
            irqbalance(root).summary,
            "irqbalance is running (pids 90, 812): it moves IRQs back onto probe CPUs; a configuration with irq_cpus pauses it (SIGSTOP) for each cell and resumes it afterwards"
        );
        let empty = tempfile::tempdir().unwrap();
        fs::create_dir(empty.path().join("proc")).unwrap();
        assert_eq!(
            irqbalance(empty.path()).summary,
            "unknown whether irqbalance runs: no processes under /proc"
        );
        assert_eq!(
            irqbalance(&empty.path().join("none")).summary,
            "unknown whether irqbalance runs: cannot list /proc"
        );
    }

    #[test]
    fn irq_names_are_the_handlers() {
        assert_eq!(irq_name("IO-APIC 4-edge ttyS0"), "ttyS0");
        assert_eq!(
            irq_name("IR-IO-APIC 16-fasteoi ehci_hcd:usb1, i801_smbus"),
            "ehci_hcd:usb1, i801_smbus"
        );
        assert_eq!(irq_name("GICv3 27 Level arch_timer"), "arch_timer");
        assert_eq!(irq_name("alone"), "alone");
        assert_eq!(irq_name(""), "");
    }

    #[test]
    fn irqs_routed_to_probe_cpus_are_listed_most_first() {
        let dir = copy_fixture("sysroot-rt");
        let root = dir.path();
        let (online, probe) = rt_cpus("1");
        assert_eq!(
            irqs_on_probe_cpus(root, Some(&online), Some(&probe)),
            Finding::new(
                "irqs-on-probe-cpus",
                Severity::Warn,
                "3 IRQs are routed to probe CPU 1 (interrupts taken there since boot): 125 nvme0q0 (88412), 9 acpi (4), 8 rtc0 (1)",
                "set irq_cpus = \"0,2-7\" in a configuration of your spec: jitterlab bench and jitterlab apply move them there for the cell (pausing irqbalance meanwhile)",
            )
        );
        // effective_affinity_list decides; smp_affinity_list only without it.
        write(root, "proc/irq/16/effective_affinity_list", "7\n");
        write(root, "proc/irq/124/effective_affinity_list", "\n");
        write(root, "proc/irq/124/smp_affinity_list", "6-7\n");
        let (_, probe) = rt_cpus("7");
        assert_eq!(
            irqs_on_probe_cpus(root, Some(&online), Some(&probe)).summary,
            "2 IRQs are routed to probe CPU 7 (interrupts taken there since boot): 16 ehci_hcd:usb1, i801_smbus (0), 124 enp0s31f6 (0)"
        );
        fs::remove_file(root.join("proc/interrupts")).unwrap();
        let f = irqs_on_probe_cpus(root, Some(&online), Some(&probe));
        assert_eq!(
            f.summary,
            "3 IRQs are routed to probe CPU 7 (names and counts unknown: cannot read /proc/interrupts): 3, 16, 124"
        );
        fs::remove_dir_all(root.join("proc/irq")).unwrap();
        assert_eq!(
            irqs_on_probe_cpus(root, Some(&online), Some(&probe)),
            Finding::new(
                "irqs-on-probe-cpus",
                Severity::Info,
                "unknown IRQ affinity: cannot list /proc/irq",
                "",
            )
        );
    }

    #[test]
    fn irqs_on_every_cpu_of_a_small_machine_are_cut_short() {
        let root = fixture("sysroot-vm");
        let probe = CpuList::parse("0-1").unwrap();
        assert_eq!(
            irqs_on_probe_cpus(&root, Some(&probe), Some(&probe)),
            Finding::new(
                "irqs-on-probe-cpus",
                Severity::Warn,
                "19 IRQs are routed to probe CPUs 0-1 (interrupts taken there since boot): 36 virtio1-req.0 (1170256), 42 virtio3-tx (18339), 41 virtio3-rx (5483), 38 virtio2-input.0 (2709), 39 virtio2-output.0 (2203), 31 virtio0-stats (2035), 32 virtio0-reporting_vq (998), 34 virtio4-input (178), 26 ttyS0 (16), 24 ACPI:Ged (1), and 9 more",
                "no other online CPU can take them; a machine with more CPUs can",
            )
        );
    }
}
