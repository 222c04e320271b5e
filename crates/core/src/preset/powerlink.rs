//! Preset `powerlink`: seed 004, Tables 4-5 — a 500 µs cycle's min and max
//! period and deviation under seven stress conditions.

use super::{neighbour_line, placement, PresetMachine};
use crate::defaults::PRIORITY;

/// Seed 004's experiment on this machine.
pub(super) fn text(machine: &PresetMachine) -> String {
    let (probe, neighbours) = placement(machine.online);
    let nl = neighbour_line(&neighbours);
    let mut text = format!(
        r#"# Preset powerlink: Tables 4-5, SoC Jitter.
# A 500 us cycle under seven stress conditions; reports give min cycle,
# max cycle and deviation max |T_per - T0| per condition.
# The source measured 10 million cycles (83 min); edit duration for that.
name = "powerlink"
duration = "60s"
warmup = "5s"

[[configuration]]
name = "tuned"
probe_cpus = "{probe}"
{nl}
policy = "fifo"
priority = {PRIORITY}
dma_latency = true
"#
    );
    for condition in [
        "idle",
        "cpu",
        "disk",
        "usb",
        "network",
        "scheduling",
        "misc",
    ] {
        text.push_str(&format!(
            "\n[[scenario]]\nname = \"{condition}\"\nbuiltin = \"{condition}\"\n"
        ));
    }
    text.push_str(
        r#"
[[probe]]
kind = "cyclic"
period = "500us"
scan = "50us"
working_set = "64KiB"
"#,
    );
    text
}
