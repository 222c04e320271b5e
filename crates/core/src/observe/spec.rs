//! The parameters of an `observe` probe: which running thread it watches
//! (or which command it starts and watches), whether it explains its late
//! cycles, and, for tests and re-analysis, a recorded event file it reads
//! instead of the live trace.
//!
//! `T0` is the probe's `period_ns`: 0 when it is not given, and the model
//! infers it from the task's first periods
//! ([`crate::observe::cycles`]).
//!
//! Here are its types, its key table and its check; [`super::params`]
//! declares them to the shared checker.

use serde::{Deserialize, Serialize};

use crate::spec::{Check, Key, KeyFlag, KindTable, ProbeParams, ValueType};

/// What an `observe` probe watches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObserveTarget {
    /// A process: the one of its threads that behaves periodically.
    Pid(u32),
    /// One thread, by its id.
    Tid(u32),
    /// The thread with this name (the kernel's 15-character `comm`).
    Comm(String),
    /// A command started with the run, stopped with it; its main thread
    /// is watched, or the one of its threads that behaves periodically.
    Command(Vec<String>),
}

impl ObserveTarget {
    /// How messages name it: `pid 1234`, `tid 1234`, `comm plc`,
    /// `command cyclictest -m`.
    pub fn describe(&self) -> String {
        match self {
            ObserveTarget::Pid(p) => format!("pid {p}"),
            ObserveTarget::Tid(t) => format!("tid {t}"),
            ObserveTarget::Comm(c) => format!("comm {c}"),
            ObserveTarget::Command(argv) => format!("command {}", argv.join(" ")),
        }
    }
}

/// An `observe` probe's own parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObserveParams {
    /// What it watches.
    pub target: ObserveTarget,
    /// Store and print what delayed each cycle over the threshold and each
    /// window's worst.
    #[serde(default)]
    pub explain: bool,
    /// A recorded event file (JSON lines of `trace::event::Event`) read
    /// instead of the live trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// The container the target's thread runs in (`--container`): the
    /// name is looked up among its processes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

impl Default for ObserveParams {
    /// No target yet: a spec's table names one (`pid`, `tid`, `comm` or
    /// `command`), the checker refuses one without.
    fn default() -> ObserveParams {
        ObserveParams {
            target: ObserveTarget::Tid(0),
            explain: false,
            replay: None,
            container: None,
        }
    }
}

/// The `observe` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "pid",
        ty: ValueType::Id,
        default: "none",
        help: "observe this process: the one of its threads that behaves periodically (the most regular periods in the first second)",
        flag: KeyFlag {
            value_name: Some("PID"),
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "tid",
        ty: ValueType::Id,
        default: "none",
        help: "observe this thread, by its id",
        flag: KeyFlag {
            value_name: Some("TID"),
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "comm",
        ty: ValueType::Text,
        default: "none",
        help: "observe the thread with this name (1 to 15 characters, as `ps -eL -o comm` shows it); of several, the one that behaves periodically",
        flag: KeyFlag {
            value_name: Some("NAME"),
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "command",
        ty: ValueType::TextList,
        default: "none",
        help: "start this command and observe it, stopped with the run",
        flag: KeyFlag {
            value_name: Some("COMMAND"),
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "explain",
        ty: ValueType::Bool,
        default: "false",
        help: "store and print what delayed each late cycle",
        flag: KeyFlag {
            long_help: Some(
                "Say what delayed each cycle over --threshold and each window's worst: the threads, IRQs and softirqs that ran on its CPU between its release and its start, and the time no event explains. This records every scheduler, timer, IRQ and softirq event of every CPU, which costs the task more than the default: only its own switches, wake-ups and timers",
            ),
            ..KeyFlag::DERIVED
        },
    },
];

/// An `observe` probe's table checked: exactly one of `pid`, `tid`, `comm`
/// or `command` says what it watches; `explain` whether it explains. The
/// one rule for a spec's table and `run observe`'s flags: its messages
/// name the keys as their reader wrote them ([`KindTable::named`]).
pub(super) fn check(t: &KindTable, _period_ns: u64) -> Check<ProbeParams> {
    // A spec's id is 1 or more by its type; the command line's flag of it
    // takes 0 (an integer flag's range), refused here.
    let id = |key: &str| -> Check<Option<u32>> {
        match t.num(key)? {
            Some(0) => Err(t.err(
                key,
                "0 is no process or thread id; give one ps -eL -o pid,tid,comm lists",
            )),
            n => Ok(n.map(|n| n as u32)),
        }
    };
    let mut targets: Vec<(ObserveTarget, &str)> = Vec::new();
    if let Some(p) = id("pid")? {
        targets.push((ObserveTarget::Pid(p), "pid"));
    }
    if let Some(p) = id("tid")? {
        targets.push((ObserveTarget::Tid(p), "tid"));
    }
    if let Some(name) = t.text("comm")? {
        if name.is_empty() || name.len() > 15 {
            return Err(t.err(
                "comm",
                "a thread name has 1 to 15 characters, as the kernel keeps it (ps -L -o comm)",
            ));
        }
        targets.push((ObserveTarget::Comm(name), "comm"));
    }
    if let Some(argv) = t.texts("command")? {
        if argv.first().is_none_or(|p| p.is_empty()) {
            return Err(t.err(
                "command",
                "command is empty; give the program and its arguments, e.g. [\"cyclictest\", \"-m\"]",
            ));
        }
        targets.push((ObserveTarget::Command(argv), "command"));
    }
    if targets.len() > 1 {
        let (first, second) = (targets[0].1, targets[1].1);
        return Err(t.err(
            second,
            format!(
                "an observe probe watches one target: keep one of {} and {}",
                t.named(first),
                t.named(second)
            ),
        ));
    }
    let Some((target, _)) = targets.pop() else {
        let keys = ["pid", "tid", "comm"].map(|k| t.named(k)).join(", ");
        return Err(t.err(
            "kind",
            format!(
                "an observe probe needs what to watch: give {keys} or {}",
                t.named("command")
            ),
        ));
    };
    Ok(ProbeParams::new(ObserveParams {
        target,
        explain: t.flag("explain")?.unwrap_or(false),
        replay: None,
        container: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{parse, SpecContext};
    use crate::units::CpuList;

    fn check(probe: &str) -> Result<crate::spec::Spec, String> {
        let online = CpuList::parse("0-1").unwrap();
        let ctx = SpecContext {
            online: &online,
            builtins: &["idle"],
        };
        let text = format!("duration = \"10s\"\n[[probe]]\nkind = \"observe\"\n{probe}");
        parse(&text, "bench.toml", &ctx).map_err(|e| e.to_string())
    }

    #[test]
    fn an_observe_table_names_one_target_and_may_explain() {
        let s = check("comm = \"plc\"\nexplain = true\nperiod = \"2ms\"\n").unwrap();
        let p = &s.probes[0];
        assert_eq!(p.period_ns, 2_000_000);
        assert_eq!(
            p.params.get::<ObserveParams>(),
            Some(&ObserveParams {
                target: ObserveTarget::Comm("plc".into()),
                explain: true,
                replay: None,
                container: None,
            })
        );
        // No period: inferred (0); a command; stored and read back.
        let s = check("command = [\"cyclictest\", \"-m\"]\n").unwrap();
        let p = &s.probes[0];
        assert_eq!(p.period_ns, 0);
        let json = serde_json::to_string(p).unwrap();
        assert!(
            json.contains(
                r#""observe":{"target":{"command":["cyclictest","-m"]},"explain":false}"#
            ),
            "{json}"
        );
        let back: crate::spec::ProbeSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, p);
    }

    #[test]
    fn a_table_with_no_target_or_two_is_refused_naming_the_keys() {
        assert_eq!(
            check("").unwrap_err(),
            "bench.toml:2: probe[0].kind: an observe probe needs what to watch: give pid, tid, comm or command"
        );
        assert_eq!(
            check("pid = 12\ncomm = \"plc\"\n").unwrap_err(),
            "bench.toml:5: probe[0].comm: an observe probe watches one target: keep one of pid and comm"
        );
        assert_eq!(
            check("tid = -3\n").unwrap_err(),
            "bench.toml:4: probe[0].tid: tid must be a process or thread id (1 or more)"
        );
        assert_eq!(
            check("comm = \"a-name-longer-than-15\"\n").unwrap_err(),
            "bench.toml:4: probe[0].comm: a thread name has 1 to 15 characters, as the kernel keeps it (ps -L -o comm)"
        );
        assert_eq!(
            check("pid = 0\n").unwrap_err(),
            "bench.toml:4: probe[0].pid: pid must be a process or thread id (1 or more)"
        );
    }

    /// The command line's values, read by the same check: its messages
    /// name the flags.
    #[test]
    fn the_command_lines_values_are_refused_naming_the_flags() {
        use crate::probe::kind::ProbeKind;
        use crate::spec::{Given, GivenValues};
        let given = |values: &[(&'static str, Given)]| {
            let values: GivenValues = values.iter().cloned().collect();
            KindTable::given(ProbeKind::Observe, &values, 0)
        };
        assert_eq!(
            given(&[]).unwrap_err(),
            "an observe probe needs what to watch: give --pid, --tid, --comm or -- COMMAND"
        );
        assert_eq!(
            given(&[
                ("pid", Given::Num(12)),
                ("command", Given::Texts(vec!["cyclictest".into()]))
            ])
            .unwrap_err(),
            "an observe probe watches one target: keep one of --pid and -- COMMAND"
        );
        // 0 passes the flag's integer range; the check refuses it.
        assert_eq!(
            given(&[("tid", Given::Num(0))]).unwrap_err(),
            "0 is no process or thread id; give one ps -eL -o pid,tid,comm lists"
        );
        let p = given(&[("comm", Given::Text("plc".into())), ("explain", Given::Bool(true))])
            .unwrap();
        assert_eq!(
            p.get::<ObserveParams>(),
            Some(&ObserveParams {
                target: ObserveTarget::Comm("plc".into()),
                explain: true,
                replay: None,
                container: None,
            })
        );
    }
}
