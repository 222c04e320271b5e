//! Timer and clock findings: the clocksource, the timer tick on the probe
//! CPUs (`nohz_full`) and timer migration.

use std::path::Path;

use jitterlab_core::result::HostSnapshot;

use super::finding::{unknown, Finding, Severity};
use crate::system::host::read_opt;

pub(super) const NOHZ_FULL: &str = "sys/devices/system/cpu/nohz_full";
const CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/current_clocksource";
const TIMER_MIGRATION: &str = "proc/sys/kernel/timer_migration";

/// `nohz-full`: the CPUs the timer tick leaves alone (`nohz_full=`).
pub(super) fn nohz_full(root: &Path) -> Finding {
    const ID: &str = "nohz-full";
    match read_opt(root, NOHZ_FULL) {
        // Kernels before 5.x print "(null)" when nohz_full= was not given.
        Some(cpus) if !cpus.trim().is_empty() && cpus.trim() != "(null)" => {
            Finding::ok(ID, format!("tickless (nohz_full) CPUs: {}", cpus.trim()))
        }
        Some(_) => Finding::new(
            ID,
            Severity::Info,
            "no tickless (nohz_full) CPUs: the timer tick interrupts the probe CPUs",
            "boot with nohz_full=<cpus> for the probe CPUs",
        ),
        None => Finding::new(
            ID,
            Severity::Info,
            format!("unknown tickless CPUs: no /{NOHZ_FULL} (kernel built without CONFIG_NO_HZ_FULL)"),
            "boot a kernel built with CONFIG_NO_HZ_FULL=y, with nohz_full=<cpus> for the probe CPUs",
        ),
    }
}

/// `clocksource`: the clock behind `CLOCK_MONOTONIC`; tsc is the cheap one.
pub(super) fn clocksource(host: &HostSnapshot) -> Finding {
    const ID: &str = "clocksource";
    const FIX: &str =
        "clocksource=tsc tsc=reliable on the kernel command line, if the TSC is stable";
    match host.clocksource.trim() {
        "tsc" => Finding::ok(ID, "clocksource is tsc"),
        "" => Finding::new(
            ID,
            Severity::Warn,
            format!("unknown clocksource: cannot read /{CLOCKSOURCE}"),
            FIX,
        ),
        other => Finding::new(
            ID,
            Severity::Warn,
            format!("clocksource is {other}, not tsc: reading the clock costs more"),
            FIX,
        ),
    }
}

/// `timer-migration`: whether timers of idle CPUs may move onto busy ones.
pub(super) fn timer_migration(root: &Path) -> Finding {
    const ID: &str = "timer-migration";
    match read_opt(root, TIMER_MIGRATION).as_deref().map(str::trim) {
        Some("0") => Finding::ok(ID, "timer migration is off"),
        Some("1") => Finding::new(
            ID,
            Severity::Info,
            "timer migration is on: timers of idle CPUs may move onto the probe CPUs",
            "sysctl -w kernel.timer_migration=0",
        ),
        other => unknown(ID, "timer migration", TIMER_MIGRATION, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocksource_other_than_tsc_warns() {
        let host = HostSnapshot {
            clocksource: "kvm-clock".into(),
            ..HostSnapshot::default()
        };
        assert_eq!(
            clocksource(&host),
            Finding::new(
                "clocksource",
                Severity::Warn,
                "clocksource is kvm-clock, not tsc: reading the clock costs more",
                "clocksource=tsc tsc=reliable on the kernel command line, if the TSC is stable",
            )
        );
    }
}
