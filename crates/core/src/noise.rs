//! Noise proven against intent: what a neighbour was asked to do, what it
//! did, and whether that is short of its load.
//!
//! A neighbour that is alive is not yet a neighbour that made noise: a
//! stress-ng asked for 80 % of a CPU that shares its CPU with a real-time
//! probe, other neighbours or the rest of the machine may get a few per cent
//! of it, and a cell measured beside it says nothing about the load it was
//! meant to stand beside. So each stress-ng neighbour's request is read from
//! its argument vector ([`stress_ng_intent`]) and compared with what it
//! achieved ([`LoadCheck::judge`]):
//!
//! - **CPU asked.** `--cpu N --cpu-load P` asks `N × P / 100` CPUs (`N = 0`:
//!   one worker per CPU it is pinned to; `P` 100 when not given). Each
//!   instance of a stressor that computes without waiting ([`CPU_BOUND`]:
//!   `cache`, `vm`, `memrate`, `memthrash`, `stream`, `matrix`) asks one
//!   whole CPU. Stressors that wait for I/O or for their children (`hdd`,
//!   `iomix`, `fork`, `vfork` …) ask no stated CPU time, but like every
//!   stressor must report bogo-ops. The sum is capped at the CPUs the
//!   neighbour is pinned to: more cannot be had.
//! - **Shared CPUs.** Neighbours pinned to the same CPUs share them: when
//!   together they ask more than those CPUs hold, each one's request is
//!   scaled down to its share of them ([`share_out`]): three neighbours
//!   asking 2.8 CPUs of one CPU are each held to 1/2.8 of what they asked.
//!   The probe's own CPU time is not subtracted: a probe is expected to use
//!   a small part of its CPU, and the tolerance covers it.
//! - **CPU achieved.** The neighbour's process group's CPU time over the
//!   measured part's wall time (`/proc/PID/stat`, one clock tick of
//!   resolution), in CPUs.
//! - **Short of its load** when it achieved less than
//!   `100 − LOAD_TOLERANCE_PERCENT` % of what it was asked (80 % of it), or
//!   when a stressor it was asked to run reported no bogo-ops (stress-ng's
//!   `--metrics-brief` table: the stressor did no work, or the table was not
//!   printed).
//!
//! A neighbour with no stated request (hackbench, a flood, a user's own
//! command) gets no check: its load is "not measured", never a pass.
//! Figures are thousandths of a CPU (integers, design rule 1); text shows
//! them with two decimals.
//!
//! The design rules cited here are in `docs/design.md`.

use serde::{Deserialize, Serialize};

/// How far below what it asked a neighbour may fall and still count as
/// delivering its load, per cent of the request. 20 %: a neighbour asked
/// for one CPU must achieve at least 0.80 CPU. The margin absorbs the
/// clock-tick resolution of the CPU time (10 ms per reading), the probe's
/// own share of a CPU it shares with a neighbour, and the kernel's
/// housekeeping, while a neighbour starved to a fraction of its request —
/// the case it exists to catch — is far below it.
pub const LOAD_TOLERANCE_PERCENT: u64 = 20;

/// stress-ng stressors that compute without waiting: each instance asks
/// one whole CPU.
pub const CPU_BOUND: &[&str] = &["cache", "vm", "memrate", "memthrash", "stream", "matrix"];

/// stress-ng stressors that may wait (for I/O, for children): they ask no
/// stated CPU time, but must report bogo-ops.
pub const WAITING: &[&str] = &[
    "hdd", "iomix", "fork", "vfork", "exec", "spawn", "io", "sock",
];

/// What a stress-ng neighbour asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// CPUs asked, in thousandths, capped at the CPUs it is pinned to.
    pub cpu_milli: u64,
    /// The stressors it starts, in argument order, each once.
    pub stressors: Vec<String>,
    /// How `cpu_milli` was reckoned, e.g. `--cpu 1 --cpu-load 80 = 0.80 CPU`.
    pub basis: String,
}

/// Thousandths of a CPU as `0.80`.
pub fn cpus_text(milli: u64) -> String {
    let hundredths = (milli + 5) / 10;
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// What `argv` (a stress-ng command) asks of the `pinned` CPUs it runs on
/// (0: not pinned, no cap). `None` when `argv` is not stress-ng or names no
/// stressor this module knows.
pub fn stress_ng_intent(argv: &[String], pinned: usize) -> Option<Intent> {
    let program = argv.first()?;
    if program.rsplit('/').next() != Some("stress-ng") {
        return None;
    }
    let value = |name: &str| -> Option<u64> {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .and_then(|v| v.parse().ok())
    };
    let mut stressors = Vec::new();
    let mut milli: u64 = 0;
    let mut parts = Vec::new();
    for (i, arg) in argv.iter().enumerate().skip(1) {
        let Some(name) = arg.strip_prefix("--") else {
            continue;
        };
        let known = name == "cpu" || CPU_BOUND.contains(&name) || WAITING.contains(&name);
        let Some(n) = argv.get(i + 1).and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        if !known || stressors.iter().any(|s| s == name) {
            continue;
        }
        stressors.push(name.to_string());
        let n = if n == 0 { pinned.max(1) as u64 } else { n };
        if name == "cpu" {
            let load = value("--cpu-load").unwrap_or(100).min(100);
            milli += n * load * 10;
            parts.push(if load == 100 {
                format!("--cpu {n}")
            } else {
                format!("--cpu {n} --cpu-load {load}")
            });
        } else if CPU_BOUND.contains(&name) {
            milli += n * 1000;
            parts.push(format!("--{name} {n}"));
        }
    }
    if stressors.is_empty() {
        return None;
    }
    let asked = milli;
    let cap = pinned as u64 * 1000;
    let mut basis = if parts.is_empty() {
        "no stated CPU time".to_string()
    } else {
        format!("{} = {} CPU", parts.join(" + "), cpus_text(asked))
    };
    if pinned > 0 && asked > cap {
        milli = cap;
        basis.push_str(&format!(
            ", capped at the {} CPU{} it is pinned to",
            pinned,
            if pinned == 1 { "" } else { "s" }
        ));
    }
    Some(Intent {
        cpu_milli: milli,
        stressors,
        basis,
    })
}

/// Scales down the requests of neighbours that share CPUs: `asks[i]` is
/// neighbour `i`'s CPUs and its request (thousandths). Neighbours pinned
/// to the same CPU set that together ask more than it holds get each their
/// share: `ask × capacity / total`, rounded down. Unpinned neighbours
/// (empty CPU list) are left as asked.
pub fn share_out(asks: &[(Vec<usize>, u64)]) -> Vec<u64> {
    asks.iter()
        .map(|(cpus, ask)| {
            if cpus.is_empty() {
                return *ask;
            }
            let capacity = cpus.len() as u64 * 1000;
            let total: u64 = asks
                .iter()
                .filter(|(other, _)| other == cpus)
                .map(|(_, a)| *a)
                .sum();
            if total <= capacity {
                *ask
            } else {
                (*ask as u128 * capacity as u128 / total as u128) as u64
            }
        })
        .collect()
}

/// A neighbour's load against its intent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LoadCheck {
    /// CPUs asked, thousandths, after sharing ([`share_out`]).
    pub asked_milli: u64,
    /// How the request was reckoned (see [`Intent::basis`]), and the share
    /// when it was scaled down.
    pub basis: String,
    /// CPUs achieved over the measured part, thousandths.
    pub achieved_milli: u64,
    /// The tolerance it was judged with, per cent
    /// ([`LOAD_TOLERANCE_PERCENT`]).
    pub tolerance_percent: u64,
    /// Stressors it was asked to run that reported no bogo-ops.
    pub idle_stressors: Vec<String>,
    /// Short of its load: achieved below `100 − tolerance` % of the
    /// request, or a stressor reported no bogo-ops.
    pub short: bool,
}

impl LoadCheck {
    /// Judges a neighbour that asked `intent`, held to `asked_milli` after
    /// sharing, used `cpu_time_ns` in `wall_ns` and reported `bogo_ops`.
    /// `None` when there is no wall time (nothing was measured).
    pub fn judge(
        intent: &Intent,
        asked_milli: u64,
        cpu_time_ns: u64,
        wall_ns: u64,
        bogo_ops: &std::collections::BTreeMap<String, u64>,
    ) -> Option<LoadCheck> {
        if wall_ns == 0 {
            return None;
        }
        let achieved_milli = (cpu_time_ns as u128 * 1000 / wall_ns as u128) as u64;
        let idle_stressors: Vec<String> = intent
            .stressors
            .iter()
            .filter(|s| bogo_ops.get(*s).is_none_or(|n| *n == 0))
            .cloned()
            .collect();
        let tolerance_percent = LOAD_TOLERANCE_PERCENT;
        let below = achieved_milli * 100 < asked_milli * (100 - tolerance_percent);
        let mut basis = intent.basis.clone();
        if asked_milli < intent.cpu_milli {
            basis.push_str(&format!(
                ", its share of CPUs it shares with other neighbours: {} CPU",
                cpus_text(asked_milli)
            ));
        }
        Some(LoadCheck {
            asked_milli,
            basis,
            achieved_milli,
            tolerance_percent,
            short: below || !idle_stressors.is_empty(),
            idle_stressors,
        })
    }

    /// The achieved load as a percentage of the request, rounded; `None`
    /// when nothing was asked.
    pub fn percent_of_asked(&self) -> Option<u64> {
        (self.asked_milli > 0)
            .then(|| (self.achieved_milli * 100 + self.asked_milli / 2) / self.asked_milli)
    }

    /// One phrase for reports: `short of its load: 0.03 CPU of the 0.80
    /// asked (4 %; tolerance 20 %)` or `delivered its load: …`.
    pub fn text(&self) -> String {
        let head = if self.short {
            "short of its load"
        } else {
            "delivered its load"
        };
        let mut parts = Vec::new();
        if self.asked_milli > 0 {
            parts.push(format!(
                "{} CPU of the {} asked ({} %; tolerance {} %)",
                cpus_text(self.achieved_milli),
                cpus_text(self.asked_milli),
                self.percent_of_asked().unwrap_or(0),
                self.tolerance_percent
            ));
        }
        if !self.idle_stressors.is_empty() {
            parts.push(format!(
                "no bogo-ops from {}",
                self.idle_stressors.join(", ")
            ));
        }
        if parts.is_empty() {
            parts.push("every stressor reported bogo-ops".into());
        }
        format!("{head}: {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests;
