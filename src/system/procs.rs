//! The real process table: what jitterlab reads of `/proc/PID/stat` to
//! follow the process groups it starts (neighbours), to recognise its own
//! earlier processes (the journal's owner) and to see a process it paused
//! (irqbalance) stop and run again.
//!
//! Live processes are never under a `--sysroot`: these reads always go to the
//! real `/proc`. Both the neighbour lifecycle and the journal's restore use
//! this module, which depends on neither.

use std::fs;
use std::time::{Duration, Instant};

/// Pids of live processes in a process group (scan of the real `/proc`;
/// zombies are not live).
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut pids: Vec<i32> = all_stats()
        .filter(|s| s.pgrp == pgid && s.is_alive())
        .map(|s| s.pid)
        .collect();
    pids.sort_unstable();
    pids
}

/// The CPU ticks (`utime + stime + cutime + cstime`) of every process in
/// group `pgid`, zombies included (see the module doc).
pub fn group_cpu_ticks(pgid: i32) -> u64 {
    all_stats()
        .filter(|s| s.pgrp == pgid)
        .map(|s| s.cpu_ticks)
        .sum()
}

/// What jitterlab reads of `/proc/PID/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 1.
    pub pid: i32,
    /// Field 3: `R`, `S`, `D`, `Z` …
    pub state: char,
    /// Field 5: the process group.
    pub pgrp: i32,
    /// Fields 14–17: `utime + stime + cutime + cstime`, clock ticks.
    pub cpu_ticks: u64,
    /// Field 22: start time, clock ticks after boot.
    pub start_ticks: u64,
}

impl ProcStat {
    /// Not a zombie (`Z`) nor dead (`X`).
    pub fn is_alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// `/proc/PID/stat` of the real `/proc` (live processes are never under a
/// sysroot); `None` when the process does not exist.
pub fn read_stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command name of a live process (`/proc/PID/comm`, at most 15
/// bytes: `jitterlab`, or `jitterlab-1a2b3c` for a test binary); `None`
/// when there is no such process or it is a zombie.
pub fn command_name(pid: i32) -> Option<String> {
    read_stat(pid).filter(ProcStat::is_alive)?;
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end_matches('\n').to_string())
}

/// Reads `/proc/PID/stat` every millisecond until `done` holds for it or
/// `timeout` has passed, and returns the last reading (`None` once the
/// process is gone). For state changes the kernel makes asynchronously,
/// such as a stop after `SIGSTOP`.
pub fn wait_for(pid: i32, timeout: Duration, done: impl Fn(&ProcStat) -> bool) -> Option<ProcStat> {
    let deadline = Instant::now() + timeout;
    loop {
        let stat = read_stat(pid)?;
        if done(&stat) || Instant::now() >= deadline {
            return Some(stat);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Parses one `/proc/PID/stat` line. The command name (field 2) is in
/// parentheses and may hold spaces and parentheses itself, so the fields
/// are counted after the *last* `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find(" (")?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3.
    let field = |n: usize| rest.get(n - 3).copied();
    let num = |n: usize| field(n)?.parse::<i64>().ok();
    let cpu = [14, 15, 16, 17]
        .iter()
        .map(|&n| num(n).map(|v| v.max(0) as u64))
        .sum::<Option<u64>>()?;
    Some(ProcStat {
        pid,
        state: field(3)?.chars().next()?,
        pgrp: num(5)? as i32,
        cpu_ticks: cpu,
        start_ticks: num(22)?.max(0) as u64,
    })
}

/// Every process listed in the real `/proc` whose stat could be read.
fn all_stats() -> impl Iterator<Item = ProcStat> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 1 4240 4240 0 -1 4194560 100 0 0 0 12 34 5 6 20 0 1 0 777 1000 200 18446744073709551615\n";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                pid: 4242,
                state: 'S',
                pgrp: 4240,
                cpu_ticks: 12 + 34 + 5 + 6,
                start_ticks: 777,
            })
        );
        assert_eq!(parse_stat("4242 (cut"), None);
        assert_eq!(parse_stat("4242 (x) S 1 2"), None);
        let zombie = parse_stat("7 (z) Z 1 7 7 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 9 0 0").unwrap();
        assert!(!zombie.is_alive());
    }
}
