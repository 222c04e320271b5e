//! What a bench creates on the machine, and that nothing else is touched:
//! the private work directories (never a directory or file another user
//! prepared), the cgroup that holds each cell's neighbours, and what
//! `jitterlab restore` removes after a `kill -9`.
//!
//! The root-only tests say why they skip elsewhere; this machine runs them
//! as root. Processes are found by a number no other process carries in its
//! command line (`sleep 86451`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use serial_test::serial;

#[path = "common/harness.rs"]
mod harness;
use harness::{
    assert_exit_follows_verdicts, jl_with, journal, processes_with, scratch, spec, wait_gone,
    wait_started,
};

fn is_root() -> bool {
    jitterlab_sys::effective_uid() == 0
}

/// Whether a cgroup v2 or v1 freezer hierarchy is mounted (jitterlab's
/// cgroup module then contains the neighbours).
fn cgroup_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| {
            l.contains(" - cgroup2 ")
                || (l.contains(" - cgroup ")
                    && l.ends_with("freezer")
                    && !l.contains(",cpu,")
                    && !l.contains(",cpuset"))
        })
}

/// The journal's entries of `kind`, as JSON.
fn entries(kind: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(journal()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

#[test]
#[serial]
fn after_kill_9_restore_kills_a_worker_that_left_its_group_and_removes_the_work_dir() {
    if !is_root() || !cgroup_mounted() {
        eprintln!("skipping: containing neighbours in a cgroup needs root and a cgroup v2 or v1 freezer mount");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = spec(
        "escape.toml",
        r#"
duration = "60s"
warmup = "200ms"
[[scenario]]
name = "escaper"
[[scenario.neighbour]]
name = "escaper"
command = ["sh", "-c", "setsid sleep 86451 & exec sleep 86452"]
[[probe]]
kind = "wakeup"
"#,
    );
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("bench")
        .arg(&p)
        .env("JITTERLAB_DB", &db)
        .env("JITTERLAB_JOURNAL", journal())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_started("86451");
    wait_started("86452");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();

    // The leader died with jitterlab (parent-death signal); the worker that
    // left its process group did not, and the journal holds its cgroup.
    assert!(wait_gone("86452", Duration::from_secs(2)).is_empty());
    let escaped = processes_with("86451");
    assert_eq!(escaped.len(), 1, "the escaped worker outlives jitterlab");
    let groups = entries("cgroup");
    assert_eq!(groups.len(), 1, "{groups:?}");
    let group = PathBuf::from(groups[0]["path"].as_str().unwrap());
    let members = std::fs::read_to_string(group.join("cgroup.procs")).unwrap();
    assert_eq!(members, format!("{}\n", escaped[0]));
    let work = entries("work-dir");
    assert_eq!(work.len(), 1, "{work:?}");
    let workdir = PathBuf::from(work[0]["path"].as_str().unwrap());
    assert!(workdir.join("cell-1").is_dir());
    let neighbour = &entries("neighbour")[0];

    let out = jl_with(&db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "neighbour process group {} (`sh -c setsid sleep 86451 & exec sleep 86452`) had already ended\n\
             killed 1 process left in cgroup {} and removed it\n\
             removed work directory {}\n",
            neighbour["pgid"],
            group.display(),
            workdir.display()
        )
    );
    assert!(wait_gone("86451", Duration::from_secs(2)).is_empty());
    assert!(!group.exists());
    assert!(!workdir.exists());
    assert!(!journal().exists());
}

#[test]
#[serial]
fn the_plan_names_the_directories_and_the_containment_and_refuses_a_memory_disk() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let usb = dir.path().join("usb");
    std::fs::create_dir(&usb).unwrap();
    let text = format!(
        r#"
duration = "1s"
[[scenario]]
name = "disk"
builtin = "disk"
[[scenario]]
name = "usb"
builtin = "usb"
usb_path = "{}"
[[probe]]
kind = "wakeup"
"#,
        usb.display()
    );
    let p = spec("plan.toml", &text);
    let out = jl_with(&db)
        .args(["bench", "--dry-run"])
        .arg(&p)
        .output()
        .unwrap();
    if out.status.code() == Some(2) {
        // No stress-ng here: the refusal names it, and the rest is moot.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("apt-get install stress-ng"), "{stderr}");
        eprintln!("skipping the plan lines: stress-ng is not installed");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let containment = if is_root() && cgroup_mounted() {
        "  neighbours: each cell's in a cgroup of their own (cgroup v2 at ".to_string()
    } else {
        "  neighbours: in their own process groups only, not in a cgroup: ".to_string()
    };
    let tail = format!(
        "  work directory: a fresh private directory (0700) in jitterlab's runtime directory\n\
         \x20 disk load directory: a fresh private directory (0700) in /var/tmp\n\
         \x20 disk load directory: a fresh private directory (0700) in {}\n{containment}",
        usb.display()
    );
    assert!(stdout.contains(&tail), "{stdout}");
    // Nothing was written in the base directories.
    assert_eq!(std::fs::read_dir(&usb).unwrap().count(), 0);
    assert!(!db.exists());

    // A usb_path on tmpfs is not a disk.
    if jitterlab_sys::filesystem_type(Path::new("/dev/shm")).ok()
        == Some(jitterlab_sys::TMPFS_MAGIC)
    {
        let p = spec(
            "shm.toml",
            &text.replace(&usb.display().to_string(), "/dev/shm"),
        );
        let out = jl_with(&db)
            .args(["bench", "--dry-run"])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "jitterlab: error: usb_path /dev/shm is on tmpfs (memory, not a block device); name a writable directory on the USB drive\n"
        );
    }
}

/// Runs `sh -c SCRIPT ARGS…` as `nobody` (uid and gid 65534, no groups).
fn as_nobody(script: &str, args: &[String]) {
    let out = StdCommand::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .args(args)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(out.status.success(), "as nobody: {out:?}");
}

/// Every path under `dir` (itself included) with what it is: a symbolic
/// link's target, a file's bytes, or a directory; `None` when it is gone.
fn describe(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return vec![(dir.to_path_buf(), "gone".into())];
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(dir).unwrap();
        out.push((dir.to_path_buf(), format!("-> {}", target.display())));
    } else if meta.is_dir() {
        out.push((dir.to_path_buf(), format!("dir uid {}", meta.uid())));
        let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        children.sort();
        for c in children {
            out.extend(describe(&c));
        }
    } else {
        let bytes = std::fs::read(dir).unwrap();
        out.push((
            dir.to_path_buf(),
            format!("file {:?}", String::from_utf8_lossy(&bytes)),
        ));
    }
    out
}

/// The entries of `dir` whose name starts with `jitterlab` or `.jitterlab`.
fn jitterlab_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("jitterlab") || n.starts_with(".jitterlab"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Removes what `as_nobody` planted (as root).
struct Planted(Vec<PathBuf>);

impl Drop for Planted {
    fn drop(&mut self) {
        for p in &self.0 {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => {
                    let _ = std::fs::remove_dir_all(p);
                }
                Ok(_) => {
                    let _ = std::fs::remove_file(p);
                }
                Err(_) => {}
            }
        }
    }
}

#[test]
#[serial]
fn symlinks_planted_by_another_user_change_nothing() {
    if !is_root() {
        eprintln!(
            "skipping: the planting user is `nobody`, and the bench under attack runs as root"
        );
        return;
    }
    if StdCommand::new("setpriv")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping: setpriv is not installed (apt-get install util-linux)");
        return;
    }
    let protected = std::fs::read_to_string("/proc/sys/fs/protected_symlinks").unwrap_or_default();
    if protected.trim() != "0" {
        eprintln!(
            "note: fs.protected_symlinks is {} here: the kernel itself refuses some of these symlinks",
            protected.trim()
        );
    }
    // The victim: a file only root can reach, that a followed symlink
    // would let jitterlab truncate.
    let secret = tempfile::tempdir().unwrap();
    let victim = secret.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let victim_mtime = std::fs::metadata(&victim).unwrap().modified().unwrap();

    // A stand-in for stress-ng: the disk load records where it was told to
    // write (and that directory's mode and owner), then sleeps.
    let bin = scratch().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = scratch().join("disk-dir");
    let fake = bin.join("stress-ng");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprev=\nfor a in \"$@\"; do\n  if [ \"$prev\" = --temp-path ]; then\n    stat -c '%n %a %U' \"$a\" > {0}\n    echo load > \"$a/load\"\n  fi\n  prev=$a\ndone\nexec sleep 86463\n",
            record.display()
        ),
    )
    .unwrap();
    StdCommand::new("chmod")
        .arg("755")
        .arg(&fake)
        .status()
        .unwrap();

    // Where jitterlab used to write, for the next pids: /tmp/jitterlab-PID
    // (and its cells' neighbour output), /tmp/jitterlab-timerlat-PID, the
    // O_DIRECT probe file; plus the same names in /var/tmp.
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Far enough ahead that the planting's own processes do not reach it.
    let first = if last + 3_000 + 200 < pid_max {
        last + 3_000
    } else {
        1_000
    };
    let pids: Vec<String> = (first..first + 200).map(|p| p.to_string()).collect();
    let mut planted = Planted(Vec::new());
    for p in &pids {
        for base in ["/tmp", "/var/tmp"] {
            planted
                .0
                .push(PathBuf::from(format!("{base}/jitterlab-{p}")));
            planted
                .0
                .push(PathBuf::from(format!("{base}/jitterlab-timerlat-{p}")));
            planted
                .0
                .push(PathBuf::from(format!("{base}/.jitterlab-direct-io-{p}")));
        }
    }
    as_nobody(
        r#"v=$1; shift
for p in "$@"; do
  for base in /tmp /var/tmp; do
    d=$base/jitterlab-$p
    mkdir -p "$d/cell-1" "$d/cell-2" "$base/jitterlab-timerlat-$p"
    for f in cell-1/sleeper cell-2/disk cell-1/disk cell-2/sleeper; do
      ln -s "$v" "$d/$f.stdout"; ln -s "$v" "$d/$f.stderr"
    done
    ln -s "$v" "$base/jitterlab-timerlat-$p/rtla.stdout"
    ln -s "$v" "$base/jitterlab-timerlat-$p/rtla.stderr"
    ln -s "$v" "$base/.jitterlab-direct-io-$p"
  done
done"#,
        &std::iter::once(victim.display().to_string())
            .chain(pids.iter().cloned())
            .collect::<Vec<_>>(),
    );
    let before: Vec<_> = planted.0.iter().flat_map(|p| describe(p)).collect();
    let names_before = (
        jitterlab_names(Path::new("/tmp")),
        jitterlab_names(Path::new("/var/tmp")),
    );

    // The bench runs as root, with the next pid in the planted range.
    let _ = std::fs::write("/proc/sys/kernel/ns_last_pid", (first + 99).to_string());
    let dir = tempfile::tempdir().unwrap();
    let p = spec(
        "planted.toml",
        r#"
duration = "500ms"
warmup = "100ms"
[[scenario]]
name = "sleeper"
[[scenario.neighbour]]
name = "sleeper"
command = ["sleep", "86462"]
[[scenario]]
name = "disk"
builtin = "disk"
[[probe]]
kind = "wakeup"
"#,
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("bench")
        .arg(&p)
        .env("PATH", &path)
        .env("JITTERLAB_DB", dir.path().join("j.db"))
        .env("JITTERLAB_JOURNAL", journal())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    if !(first..first + 200).contains(&pid) {
        eprintln!(
            "note: jitterlab got pid {pid}, outside the planted {first}..{}",
            first + 200
        );
    }
    let out = child.wait_with_output().unwrap();
    // The stand-in reports no bogo-ops: its load is a failed verdict.
    assert_exit_follows_verdicts(&out);
    assert!(wait_gone("86462", Duration::from_secs(2)).is_empty());
    assert!(wait_gone("86463", Duration::from_secs(2)).is_empty());

    // Nothing planted was followed, changed or removed; nothing new is
    // left beside it; the victim is untouched.
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::metadata(&victim).unwrap().modified().unwrap(),
        victim_mtime
    );
    let after: Vec<_> = planted.0.iter().flat_map(|p| describe(p)).collect();
    assert!(before == after, "the planted files changed");
    assert_eq!(
        (
            jitterlab_names(Path::new("/tmp")),
            jitterlab_names(Path::new("/var/tmp"))
        ),
        names_before
    );
    // The disk load wrote in a fresh private directory of root's in
    // /var/tmp, which is gone now; so is the work directory.
    let recorded = std::fs::read_to_string(&record).unwrap();
    let (disk_dir, rest) = recorded.trim().split_once(' ').unwrap();
    assert_eq!(rest, "700 root", "{recorded}");
    let name = Path::new(disk_dir).file_name().unwrap().to_str().unwrap();
    assert_eq!(Path::new(disk_dir).parent(), Some(Path::new("/var/tmp")));
    assert!(
        name.starts_with("jitterlab-disk-") && name.len() == 31,
        "{name}"
    );
    assert!(!Path::new(disk_dir).exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let made = stderr
        .lines()
        .find_map(|l| l.strip_prefix("jitterlab: work directories: "))
        .expect("the bench names its directories");
    assert_eq!(made.split(", ").nth(1), Some(disk_dir), "{stderr}");
    let workdir = Path::new(made.split(", ").next().unwrap());
    assert_eq!(workdir.parent(), Some(Path::new("/run/jitterlab")));
    assert!(!workdir.exists());
    assert!(!journal().exists());
}
