//! Real-time throttling: the kernel's limit on how much of each period
//! real-time tasks may use, what the kernel says about it, and which of a
//! cell's stalls it explains.
//!
//! A SCHED_FIFO thread that never sleeps (the `chase` probe, a busy-polling
//! loop) is stopped by the kernel for part of every period so that normal
//! tasks can run: classically by RT throttling, `kernel.sched_rt_runtime_us`
//! of every `kernel.sched_rt_period_us` (950 000 of 1 000 000 µs by
//! default, so 50 ms of every second), and since Linux 6.12 by the fair
//! deadline server, which reserves (by default) 50 ms of every second for
//! normal tasks on each CPU where one is runnable. Either way the probe
//! sees a stall as long as the hold-off, once per period, and nothing in
//! its figures says why. This module gives the cause its name:
//!
//! - [`RtLimit`] parses the two sysctls and says what they allow.
//! - [`parse_sched_debug`] reads the per-CPU `rt_rq[N]` blocks of the
//!   scheduler's debug file (`/sys/kernel/debug/sched/debug`, before Linux
//!   5.13 `/proc/sched_debug`): `.rt_throttled`, `.rt_time`, `.rt_runtime`
//!   (milliseconds with six decimals).
//! - [`throttle_messages`] finds the kernel's `sched: RT throttling
//!   activated` lines in its log (printed once per boot, the first time).
//! - [`match_stalls`] picks, among a probe's largest samples, those about
//!   as long as a hold-off (from 50 % to 150 % of it: a hold-off can be cut
//!   short, and throttling is checked at the scheduler tick, so a stall can
//!   run a few ticks over), one per period, and names the windows they fell
//!   in.
//!
//! The result, [`Throttling`], is stored with the cell; reports print its
//! [`Throttling::lines`] beside the cell's figures. jitterlab never turns
//! throttling off by itself: that lets a runaway real-time task hang a CPU,
//! so it is the user's decision, taken in the configuration
//! (`rt_runtime_us = -1`, `fair_server_runtime = "0ns"`: settings that are
//! journaled and restored after the cell).

use serde::{Deserialize, Serialize};

/// The line the kernel logs the first time it throttles real-time tasks.
pub const THROTTLE_MESSAGE: &str = "sched: RT throttling activated";

/// The kernel's real-time runtime limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RtLimit {
    /// `kernel.sched_rt_runtime_us`; -1: no limit.
    pub runtime_us: i64,
    /// `kernel.sched_rt_period_us`.
    pub period_us: u64,
}

impl RtLimit {
    /// Parses the texts of `sched_rt_runtime_us` and `sched_rt_period_us`.
    pub fn parse(runtime: &str, period: &str) -> Result<RtLimit, String> {
        let runtime_us = runtime.trim().parse::<i64>().map_err(|_| {
            format!(
                "sched_rt_runtime_us must be a number (-1 for no limit), not {:?}",
                runtime.trim()
            )
        })?;
        let period_us = period
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| {
                format!(
                    "sched_rt_period_us must be a positive number, not {:?}",
                    period.trim()
                )
            })?;
        Ok(RtLimit {
            runtime_us,
            period_us,
        })
    }

    /// How long a real-time task that never sleeps is held off per period,
    /// ns; `None` when there is no limit.
    pub fn hold_off_ns(&self) -> Option<u64> {
        if self.runtime_us < 0 || self.runtime_us as u64 >= self.period_us {
            return None;
        }
        Some((self.period_us - self.runtime_us as u64) * 1000)
    }

    /// `sched_rt_runtime_us=950000 of sched_rt_period_us=1000000 (real-time
    /// tasks held off 50 ms of every 1 s)`, or `… no limit`.
    pub fn text(&self) -> String {
        let head = format!(
            "sched_rt_runtime_us={} of sched_rt_period_us={}",
            self.runtime_us, self.period_us
        );
        match self.hold_off_ns() {
            Some(h) => format!(
                "{head} (real-time tasks held off {} of every {})",
                crate::units::format_ns(h as i64),
                crate::units::format_ns((self.period_us * 1000) as i64)
            ),
            None => format!("{head} (no real-time throttling)"),
        }
    }
}

/// One CPU's real-time run queue, from the scheduler's debug file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtRq {
    /// The CPU.
    pub cpu: usize,
    /// Throttled when the file was read.
    pub throttled: bool,
    /// Real-time time used in the current period, ns.
    pub rt_time_ns: u64,
    /// The runtime allowed per period, ns; `None` for no limit.
    pub rt_runtime_ns: Option<u64>,
}

/// Milliseconds with up to six decimals (`950.000000`, `-1.000000`) as
/// ns; `None` for a negative or malformed value.
fn ms_ns(text: &str) -> Option<u64> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let int: u64 = int.parse().ok()?;
    let mut frac = frac.to_string();
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    while frac.len() < 6 {
        frac.push('0');
    }
    Some(int * 1_000_000 + frac.parse::<u64>().ok()?)
}

/// Every `rt_rq[N]:` block of the scheduler's debug text (`rt_rq[N]:/` on
/// kernels with RT group scheduling: the root group's), in the order given.
/// A block missing `.rt_throttled` is left out.
pub fn parse_sched_debug(text: &str) -> Vec<RtRq> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Option<bool>, u64, Option<u64>)> = None;
    let flush = |c: Option<(usize, Option<bool>, u64, Option<u64>)>, out: &mut Vec<RtRq>| {
        if let Some((cpu, Some(throttled), rt_time_ns, rt_runtime_ns)) = c {
            out.push(RtRq {
                cpu,
                throttled,
                rt_time_ns,
                rt_runtime_ns,
            });
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("rt_rq[") {
            flush(current.take(), &mut out);
            let cpu = rest.split(']').next().and_then(|n| n.parse().ok());
            let root = rest.split_once(']').is_some_and(|(_, tail)| {
                let tail = tail.trim_end_matches(':');
                tail.is_empty() || tail == ":/" || tail == "/"
            });
            current = cpu.filter(|_| root).map(|c| (c, None, 0, None));
            continue;
        }
        if !t.starts_with('.') {
            flush(current.take(), &mut out);
            continue;
        }
        let Some(c) = current.as_mut() else { continue };
        let Some((key, value)) = t.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            ".rt_throttled" => c.1 = value.parse::<u64>().ok().map(|v| v != 0),
            ".rt_time" => c.2 = ms_ns(value).unwrap_or(0),
            ".rt_runtime" => c.3 = ms_ns(value),
            _ => {}
        }
    }
    flush(current, &mut out);
    out
}

/// The lines of a kernel log (`dmesg` text) that say real-time throttling
/// was activated.
pub fn throttle_messages(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(THROTTLE_MESSAGE))
        .map(|l| l.trim().to_string())
        .collect()
}

/// One stall of a probe as long as a throttling hold-off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// The metric it was a sample of.
    pub metric: String,
    /// Its length, ns.
    pub ns: u64,
    /// When it began, ns since the run's start.
    pub at_ns: u64,
    /// The window it fell in (from 0).
    pub window: u64,
}

/// The samples among `largest` (metric, value in ns, ns since the run's
/// start) from 50 % to 150 % of the `limit`'s hold-off, with the window of
/// `window_ns` each fell in, in time order, one per period: the kernel
/// holds a task off at most once per period, and a chase's stall shows
/// twice (the chase and its sample's jitter). Empty without a limit.
///
/// The lower bound is half the hold-off, not the whole of it: a hold-off is
/// cut short when the normal tasks it makes room for have nothing left to
/// do, or when the CPU borrows real-time runtime from another
/// (`RT_RUNTIME_SHARE`); measured on a 2-CPU VM (`bench --preset
/// caterpillar --warmup 1s`, three runs), a chase stopped by it took from
/// 28.6 to 46.2 ms with a 50 ms hold-off. A real-time probe that is not
/// itself blocked is held off that long by nothing else the kernel does.
pub fn match_stalls(largest: &[(String, u64, u64)], limit: &RtLimit, window_ns: u64) -> Vec<Stall> {
    let Some(hold_off_ns) = limit.hold_off_ns() else {
        return Vec::new();
    };
    let period_ns = limit.period_us * 1000;
    let lo = hold_off_ns / 2;
    let hi = hold_off_ns / 2 * 3;
    let mut v: Vec<&(String, u64, u64)> = largest
        .iter()
        .filter(|(_, ns, _)| (lo..=hi).contains(ns))
        .collect();
    v.sort_by_key(|(metric, _, at)| (*at, metric.clone()));
    let mut kept: Vec<Stall> = Vec::new();
    for (metric, ns, at) in v {
        if kept.last().is_some_and(|k| at - k.at_ns < period_ns) {
            continue;
        }
        kept.push(Stall {
            metric: metric.clone(),
            ns: *ns,
            at_ns: *at,
            window: at / window_ns.max(1),
        });
    }
    kept
}

/// One measurement window that RT throttling hit: the kernel held the
/// probe off within it. The kernel gives no per-window throttled time a
/// probe can read while it measures (`cpu.stat`'s `throttled_usec` counts
/// CFS bandwidth, not real-time runtime; the scheduler's debug file only
/// says whether a CPU is throttled at the moment it is read, and is in
/// debugfs), so a window is marked by the stalls of a hold-off's length the
/// probe measured in it ([`match_stalls`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThrottledWindow {
    /// The window (from 0).
    pub window: u64,
    /// Its start, ns since the run's start.
    pub start_ns: u64,
    /// Its end, ns since the run's start.
    pub end_ns: u64,
    /// The stalls of a hold-off's length in it.
    pub stalls: u32,
    /// The longest of them, ns.
    pub longest_ns: u64,
}

/// The windows of `window_ns` that `stalls` fell in, each once, in order.
pub fn throttled_windows(stalls: &[Stall], window_ns: u64) -> Vec<ThrottledWindow> {
    let window_ns = window_ns.max(1);
    let mut v: Vec<ThrottledWindow> = Vec::new();
    for s in stalls {
        match v.last_mut().filter(|w| w.window == s.window) {
            Some(w) => {
                w.stalls += 1;
                w.longest_ns = w.longest_ns.max(s.ns);
            }
            None => v.push(ThrottledWindow {
                window: s.window,
                start_ns: s.window * window_ns,
                end_ns: (s.window + 1) * window_ns,
                stalls: 1,
                longest_ns: s.ns,
            }),
        }
    }
    v
}

/// Real-time throttling as seen around one cell.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Throttling {
    /// The runtime limit when the cell ended; `None` when it could not be
    /// read.
    pub limit: Option<RtLimit>,
    /// Whether the kernel has a fair deadline server (Linux 6.12 and
    /// later), which holds a busy real-time task off in the same way.
    pub fair_server: bool,
    /// The kernel log's throttling lines (since boot).
    pub messages: Vec<String>,
    /// The probe CPUs' real-time run queues from the scheduler's debug
    /// file; empty when it could not be read (debugfs not mounted).
    pub rt_rqs: Vec<RtRq>,
    /// The probe's stalls as long as a hold-off, in time order.
    pub stalls: Vec<Stall>,
    /// The probe ran at a real-time policy (FIFO or RR) and never sleeps
    /// between its samples (the chase): only such a probe is held off for
    /// a whole hold-off by throttling, so only its stalls are attributed to
    /// it (a probe that sleeps each cycle leaves the CPU's real-time runtime
    /// mostly unused).
    pub realtime_probe: bool,
    /// The windows throttling hit, when it explains the stalls
    /// ([`throttled_windows`]); empty when it explains nothing, and in a
    /// cell stored before windows were marked ([`Throttling::hit_windows`]
    /// then derives them from the stalls).
    #[serde(default)]
    pub windows_hit: Vec<ThrottledWindow>,
}

impl Throttling {
    /// True when throttling is the cause of stalls: a real-time probe that
    /// never sleeps, a limit, and stalls of its length.
    pub fn explains_stalls(&self) -> bool {
        self.realtime_probe
            && self.limit.is_some_and(|l| l.hold_off_ns().is_some())
            && !self.stalls.is_empty()
    }

    /// The windows throttling hit: those stored, else (a cell stored
    /// before they were) derived from the stalls with `window_ns`; empty
    /// when throttling explains no stall.
    pub fn hit_windows(&self, window_ns: u64) -> Vec<ThrottledWindow> {
        if !self.explains_stalls() {
            return Vec::new();
        }
        if self.windows_hit.is_empty() {
            throttled_windows(&self.stalls, window_ns)
        } else {
            self.windows_hit.clone()
        }
    }

    /// The report line naming each window throttling hit: `RT throttling
    /// hit window 1 (1.000s to 2.000s: 1 stall of 52.380ms), …`; `None`
    /// when it hit none.
    pub fn windows_line(&self, window_ns: u64) -> Option<String> {
        let hit = self.hit_windows(window_ns);
        if hit.is_empty() {
            return None;
        }
        let ns = |v: u64| crate::units::format_ns(i64::try_from(v).unwrap_or(i64::MAX));
        // Window bounds in seconds with three decimals, 0 included.
        let secs = |v: u64| {
            format!(
                "{}.{:03}s",
                v / 1_000_000_000,
                v % 1_000_000_000 / 1_000_000
            )
        };
        let each: Vec<String> = hit
            .iter()
            .map(|w| {
                format!(
                    "window {} ({} to {}: {} stall{} of up to {})",
                    w.window,
                    secs(w.start_ns),
                    secs(w.end_ns),
                    w.stalls,
                    if w.stalls == 1 { "" } else { "s" },
                    ns(w.longest_ns)
                )
            })
            .collect();
        Some(format!("RT throttling hit {}", each.join(", ")))
    }

    /// The windows the stalls fell in, each once, in order.
    pub fn windows(&self) -> Vec<u64> {
        let mut w: Vec<u64> = self.stalls.iter().map(|s| s.window).collect();
        w.dedup();
        w
    }

    /// The lines reports print, beside the cell's maxima; empty when
    /// throttling explains nothing.
    pub fn lines(&self) -> Vec<String> {
        let Some(limit) = self.limit.filter(|_| self.explains_stalls()) else {
            return Vec::new();
        };
        let windows: Vec<String> = self.windows().iter().map(u64::to_string).collect();
        let longest = self.stalls.iter().map(|s| s.ns).max().unwrap_or(0);
        let mut v = vec![format!(
            "RT throttling: {} stall{} of up to {} in window{} {}: the kernel held this real-time probe off, as {}",
            self.stalls.len(),
            if self.stalls.len() == 1 { "" } else { "s" },
            crate::units::format_ns(longest as i64),
            if windows.len() == 1 { "" } else { "s" },
            windows.join(", "),
            limit.text()
        )];
        let mut evidence = Vec::new();
        if let Some(m) = self.messages.last() {
            evidence.push(format!("kernel log: {m}"));
        }
        let throttled: Vec<String> = self
            .rt_rqs
            .iter()
            .filter(|q| q.throttled)
            .map(|q| format!("CPU {}", q.cpu))
            .collect();
        if !throttled.is_empty() {
            evidence.push(format!("rt_throttled on {}", throttled.join(", ")));
        }
        if self.fair_server {
            evidence.push(
                "the kernel's fair deadline server (Linux 6.12 and later) also reserves 50 ms of every 1 s by default for normal tasks".into(),
            );
        }
        if !evidence.is_empty() {
            v.push(format!("RT throttling evidence: {}", evidence.join("; ")));
        }
        v.push(
            "RT throttling fix (your decision, left unchanged by jitterlab): a probe that never sleeps needs rt_runtime_us = -1 in the configuration (and fair_server_runtime = \"0ns\" on Linux 6.12 and later); both are restored after the cell, and while set a runaway real-time task can hang its CPU".into(),
        );
        v
    }
}

#[cfg(test)]
mod tests;
