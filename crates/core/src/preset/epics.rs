//! Preset `epics`: [Xu EPICS] Tables 1, 4 and 5 — interrupt, context-switch
//! and total response latency of a real-time thread, with a quiet network
//! and under a network flood.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::{neighbour_line, placement, PresetMachine};
use crate::defaults::PRIORITY;

/// [Xu EPICS]'s experiment on this machine.
pub(super) fn text(machine: &PresetMachine) -> String {
    let (probe, neighbours) = placement(machine.online);
    let nl = neighbour_line(&neighbours);
    format!(
        r#"# Preset epics: Tables 1, 4 and 5 of "EPICS IOCcore Real Time Performance
# Measurements on Coldfire Module" (Shifu Xu, Hairong Shang, Robert Laird and
# Frank Lenkszus).
# Interrupt, context-switch and total response latency of a real-time
# thread with a quiet network (the source's private network) and under a
# network flood from a second namespace (its loaded public network);
# reports give min, median, max and % over 100 us per latency.
# The source measured one and two hours; edit duration for that.
name = "epics"
duration = "60s"
warmup = "5s"

[[configuration]]
name = "tuned"
probe_cpus = "{probe}"
{nl}
policy = "fifo"
priority = {PRIORITY}
dma_latency = true

[[scenario]]
name = "idle"
builtin = "idle"

[[scenario]]
name = "network"
builtin = "network"

# Table 1, interrupt latency: the kernel's timerlat tracer (rtla) times a
# timer interrupt's handler (irq) and the thread it wakes (thread). Cells
# are skipped, with the reason, where the kernel has no timerlat tracer.
[[probe]]
kind = "timerlat"
period = "1ms"
threshold = "100us"

# Table 4, context-switch latency: two SCHED_FIFO threads on the probe CPU
# hand a token back and forth; every hand-over is a sample.
[[probe]]
kind = "ctxswitch"
threshold = "100us"

# Table 5, total response latency: a UDP datagram sent from another network
# namespace wakes the thread, which answers; also the kernel's receive
# timestamp to the thread running (Tables 2-3, bottom half to user).
[[probe]]
kind = "response"
source = "udp"
period = "1ms"
threshold = "100us"
"#
    )
}
