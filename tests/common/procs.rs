//! Live processes seen from the tests: find the ones a test started by a
//! marker in their command line, wait for them to start or to go.

use std::time::{Duration, Instant};

/// Pids of live processes whose command line contains `marker` (zombies
/// have an empty command line, so a match is a live process).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("cargo") {
                v.push(pid);
            }
        }
    }
    v
}

/// Waits up to `within` for every process carrying `marker` to go; returns
/// those still alive.
pub fn wait_gone(marker: &str, within: Duration) -> Vec<u32> {
    let end = Instant::now() + within;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (up to 20 s) until a process carrying `marker` runs.
pub fn wait_started(marker: &str) {
    let end = Instant::now() + Duration::from_secs(20);
    while processes_with(marker).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!processes_with(marker).is_empty(), "{marker} started");
}
