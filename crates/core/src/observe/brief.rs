//! The short form of an explanation, for a line that must stay one line:
//! the alert `jitterlab monitor` writes to the system log for a window
//! over `--max-latency` carries its worst cycle's explanation as its
//! largest parts only, whatever their kind (a thread, an IRQ, a softirq,
//! the time no event explains), where the report prints every part
//! ([`Explanation::line`]).

use crate::explain::Explanation;
use crate::units::format_ns;

/// `cycle 1234 late by 812.000us: ksoftirqd/1 (pid 21, prio 120)
/// 640.000us, softirq NET_RX 90.000us, unexplained 51.000us (2 more
/// parts)`: the `n` largest parts of `x`, largest first (ties in the order
/// the full line gives them: threads, IRQs, softirqs, unexplained, before
/// the history), and how many were left out.
pub fn top_parts(x: &Explanation, n: usize) -> String {
    let t = |ns: u64| format_ns(i64::try_from(ns).unwrap_or(i64::MAX));
    let mut parts: Vec<(u64, String)> = Vec::new();
    for p in &x.threads {
        parts.push((
            p.ns,
            format!("{} (pid {}, prio {}) {}", p.comm, p.pid, p.prio, t(p.ns)),
        ));
    }
    for p in &x.irqs {
        parts.push((p.ns, format!("irq {} {} {}", p.irq, p.name, t(p.ns))));
    }
    for p in &x.softirqs {
        parts.push((p.ns, format!("softirq {} {}", p.name, t(p.ns))));
    }
    if x.unexplained_ns > 0 {
        parts.push((
            x.unexplained_ns,
            format!("unexplained {}", t(x.unexplained_ns)),
        ));
    }
    if x.unknown_ns > 0 {
        parts.push((
            x.unknown_ns,
            format!("before the trace history {}", t(x.unknown_ns)),
        ));
    }
    // Stable: equal parts keep the full line's order.
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    let left = parts.len().saturating_sub(n);
    let shown: Vec<String> = parts.into_iter().take(n).map(|(_, s)| s).collect();
    let mut o = format!(
        "cycle {} late by {}",
        x.cycle,
        t(x.to_ns.saturating_sub(x.from_ns))
    );
    if !shown.is_empty() {
        o.push_str(": ");
        o.push_str(&shown.join(", "));
    }
    if left > 0 {
        o.push_str(&format!(
            " ({left} more part{})",
            if left == 1 { "" } else { "s" }
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::{IrqPart, SoftirqPart, ThreadPart};

    fn explanation() -> Explanation {
        Explanation {
            tid: 300,
            cycle: 1234,
            cpu: 1,
            from_ns: 1_000_000,
            to_ns: 1_812_000,
            threads: vec![
                ThreadPart {
                    pid: 21,
                    comm: "ksoftirqd/1".into(),
                    prio: 120,
                    ns: 640_000,
                },
                ThreadPart {
                    pid: 77,
                    comm: "kworker/1:2".into(),
                    prio: 120,
                    ns: 1_000,
                },
            ],
            irqs: vec![IrqPart {
                irq: 24,
                name: "virtio0-input".into(),
                ns: 30_000,
            }],
            softirqs: vec![SoftirqPart {
                vec: 3,
                name: "NET_RX".into(),
                ns: 90_000,
            }],
            unexplained_ns: 51_000,
            unknown_ns: 0,
        }
    }

    #[test]
    fn the_largest_parts_go_first_whatever_their_kind_and_the_rest_are_counted() {
        let x = explanation();
        assert_eq!(
            top_parts(&x, 3),
            "cycle 1234 late by 812.000us: ksoftirqd/1 (pid 21, prio 120) 640.000us, softirq NET_RX 90.000us, unexplained 51.000us (2 more parts)"
        );
        assert_eq!(
            top_parts(&x, 4),
            "cycle 1234 late by 812.000us: ksoftirqd/1 (pid 21, prio 120) 640.000us, softirq NET_RX 90.000us, unexplained 51.000us, irq 24 virtio0-input 30.000us (1 more part)"
        );
        assert_eq!(
            top_parts(&x, 9),
            "cycle 1234 late by 812.000us: ksoftirqd/1 (pid 21, prio 120) 640.000us, softirq NET_RX 90.000us, unexplained 51.000us, irq 24 virtio0-input 30.000us, kworker/1:2 (pid 77, prio 120) 1.000us"
        );
    }

    #[test]
    fn an_explanation_without_parts_is_its_lateness_alone() {
        let x = Explanation {
            threads: Vec::new(),
            irqs: Vec::new(),
            softirqs: Vec::new(),
            unexplained_ns: 0,
            ..explanation()
        };
        assert_eq!(top_parts(&x, 3), "cycle 1234 late by 812.000us");
    }
}
