//! Tool findings: the programs neighbours and traces run, found on the
//! search path, and the kernel trace file system `--break-trace` reads.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::finding::{Finding, Severity};
use crate::system::trace::{find_tracefs, TracefsStatus};

/// The programs neighbours and traces run, with their Debian packages.
const TOOLS: [(&str, &str); 5] = [
    ("stress-ng", "stress-ng"),
    ("hackbench", "rt-tests"),
    ("ip", "iproute2"),
    ("rtla", "rtla"),
    ("perf", "linux-perf"),
];

/// True when `rel` under `root` is an executable file.
fn executable(root: &Path, rel: &str) -> bool {
    fs::metadata(root.join(rel)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `neighbour-tools`: the programs neighbours and traces run that are not
/// on the search path `path`, with their Debian packages.
pub(super) fn neighbour_tools(root: &Path, path: &str) -> Finding {
    const ID: &str = "neighbour-tools";
    let dirs: Vec<&str> = path
        .split(':')
        .filter_map(|d| d.strip_prefix('/'))
        .collect();
    let (found, missing): (Vec<_>, Vec<_>) = TOOLS.iter().partition(|(tool, _)| {
        dirs.iter()
            .any(|d| executable(root, &format!("{}/{tool}", d.trim_end_matches('/'))))
    });
    let names = |list: &[&(&str, &str)]| -> Vec<String> {
        list.iter().map(|(t, _)| t.to_string()).collect()
    };
    if missing.is_empty() {
        return Finding::ok(
            ID,
            format!(
                "neighbour and tracing tools found: {}",
                names(&found).join(", ")
            ),
        );
    }
    let missing_words: Vec<String> = missing.iter().map(|(t, p)| format!("{t} ({p})")).collect();
    let found_words = if found.is_empty() {
        String::new()
    } else {
        format!("; found: {}", names(&found).join(", "))
    };
    let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    packages.dedup();
    Finding::new(
        ID,
        Severity::Info,
        format!(
            "missing neighbour and tracing tools: {}{found_words}; scenarios that need them cannot run",
            missing_words.join(", ")
        ),
        &format!("apt install {}", packages.join(" ")),
    )
}

/// `tracefs`: whether the kernel trace file system is mounted
/// (`--break-trace` needs it).
pub(super) fn tracefs(root: &Path) -> Finding {
    const ID: &str = "tracefs";
    let status = find_tracefs(root);
    let text = status.explain();
    if matches!(status, TracefsStatus::Ready(_)) {
        return Finding::ok(ID, text);
    }
    // explain() is "what was found; what to do": split it into the two.
    let (found, fix) = text.split_once("; ").unwrap_or((&text, ""));
    Finding::new(
        ID,
        Severity::Info,
        format!("{found} (needed only for --break-trace)"),
        fix,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::copy_fixture;
    use std::fs::Permissions;

    #[test]
    fn missing_tools_are_named_with_their_packages() {
        let dir = copy_fixture("sysroot-rt");
        let root = dir.path();
        fs::remove_file(root.join("usr/bin/rtla")).unwrap();
        // Not executable: not a program.
        fs::set_permissions(
            root.join("usr/bin/hackbench"),
            Permissions::from_mode(0o644),
        )
        .unwrap();
        assert_eq!(
            neighbour_tools(root, "/usr/bin:/usr/sbin/"),
            Finding::new(
                "neighbour-tools",
                Severity::Info,
                "missing neighbour and tracing tools: hackbench (rt-tests), rtla (rtla); found: stress-ng, ip, perf; scenarios that need them cannot run",
                "apt install rt-tests rtla",
            )
        );
        // Relative and empty PATH entries are not searched.
        assert_eq!(
            neighbour_tools(root, "usr/sbin::").fix,
            "apt install stress-ng rt-tests iproute2 rtla linux-perf"
        );
    }

    #[test]
    fn tracefs_not_mounted_names_the_mount_command() {
        let dir = tempfile::tempdir().unwrap();
        let tracing = dir.path().join("sys/kernel/tracing");
        fs::create_dir_all(&tracing).unwrap();
        let f = tracefs(dir.path());
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.summary,
            format!(
                "tracefs is not mounted at {} (needed only for --break-trace)",
                tracing.display()
            )
        );
        assert_eq!(
            f.fix,
            format!(
                "mount it with: mount -t tracefs nodev {}",
                tracing.display()
            )
        );
    }
}
