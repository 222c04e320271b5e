//! The journal and the machine lock end to end: one lock for the machine
//! whatever `JITTERLAB_JOURNAL` says, a measuring-only `run` beside a held
//! `apply`, refusals before any plan is printed, and what `restore` does
//! with entries it cannot (or must not) undo — its exit status included.
//!
//! Every test works on a private copy of a fake tree (`--sysroot`), so the
//! lock and the settings it changes are that tree's: nothing on this machine
//! changes, and the tests do not collide with other jitterlabs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

#[path = "common/fixtures.rs"]
#[allow(dead_code)] // shared with the other test crates
mod fixtures;
use fixtures::copy_fixture;

/// jitterlab on the fake tree `root`, with its database and journal in
/// `dir`.
fn jl(root: &Path, journal: &Path, db: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", db)
        .env("JITTERLAB_JOURNAL", journal)
        .env_remove("XDG_RUNTIME_DIR")
        .arg("--sysroot")
        .arg(root);
    c
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A configuration that turns timer migration off, with a short probe.
const QUIET: &str = "duration = \"1s\"\nwarmup = \"0\"\n[[configuration]]\nname = \"quiet\"\ntimer_migration = false\n[[probe]]\nkind = \"wakeup\"\n";

/// `jitterlab apply SPEC` on `root` in the background.
fn spawn_apply(root: &Path, journal: &Path, spec: &Path) -> Child {
    StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_JOURNAL", journal)
        .arg("--sysroot")
        .arg(root)
        .arg("apply")
        .arg(spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stops a held `apply` (SIGTERM) when dropped, so a failed assertion never
/// leaves it running.
struct LetGo(Option<Child>);

impl LetGo {
    fn stop(&mut self) -> Output {
        let child = self.0.take().unwrap();
        term(&child);
        child.wait_with_output().unwrap()
    }
}

impl Drop for LetGo {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            term(&c);
            let _ = c.wait();
        }
    }
}

fn term(child: &Child) {
    let ok = StdCommand::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM {}", child.id());
}

/// The journal of a jitterlab that died (pid beyond any pid_max) in this
/// boot, holding `entries` (JSON objects).
fn dead_journal(path: &Path, entries: &[String]) {
    let boot = read(Path::new("/proc/sys/kernel/random/boot_id"));
    let doc = format!(
        "{{\"version\":1,\"owner_pid\":4194305,\"owner_start_ticks\":1,\"boot_id\":\"{}\",\"started_at\":\"2025-01-01T12:00:00Z\",\"entries\":[{}]}}",
        boot.trim(),
        entries.join(",")
    );
    std::fs::write(path, doc).unwrap();
}

fn file_entry(id: u64, path: &Path, old: &str) -> String {
    format!(
        "{{\"id\":{id},\"kind\":\"file\",\"path\":{},\"old\":{}}}",
        serde_json::to_string(path).unwrap(),
        serde_json::to_string(old).unwrap()
    )
}

#[test]
#[serial]
fn one_lock_for_the_machine_and_a_measuring_run_beside_apply() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let db = dir.path().join("j.db");
    let spec = write(dir.path(), "quiet.toml", QUIET);
    let migration = root.join("proc/sys/kernel/timer_migration");

    let mut apply = LetGo(Some(spawn_apply(root, &a, &spec)));
    let end = Instant::now() + Duration::from_secs(10);
    while read(&migration) != "0\n" && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(read(&migration), "0\n", "applied");
    let pid = apply.0.as_ref().unwrap().id();
    let held = format!(
        "another jitterlab (pid {pid}, `jitterlab apply`) is changing this machine; wait for it to end or stop it (Ctrl-C puts back what it changed)"
    );

    // A run that changes nothing measures beside it, even with the same
    // journal path (apply's journal is left alone).
    let out = jl(root, &a, &db)
        .args(["run", "wakeup", "--duration", "200ms", "--cpus", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(a.exists(), "apply's journal is kept");
    assert!(!b.exists());

    // Anything that changes the machine is refused, whatever its journal,
    // and a bench prints no plan before it says so.
    let out = jl(root, &b, &db).arg("bench").arg(&spec).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(text(&out.stdout), "");
    assert_eq!(text(&out.stderr), format!("jitterlab: error: {held}\n"));
    let out = jl(root, &b, &db).arg("apply").arg(&spec).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), format!("jitterlab: error: {held}\n"));
    // `restore` names apply as the owner of the changes only for apply's
    // own journal.
    let out = jl(root, &b, &db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!("jitterlab: error: another jitterlab (pid {pid}, `jitterlab apply`) is changing this machine; run `jitterlab restore` again once it has ended (it puts back its own changes itself)\n")
    );
    let out = jl(root, &a, &db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!("jitterlab: error: jitterlab pid {pid} (`jitterlab apply`) is still running and holds its changes; stop it with Ctrl-C (it restores them itself)\n")
    );
    assert!(!b.exists(), "no refused command made a journal");

    // A dry run changes nothing: the plan, then why a real run would stop.
    let out = jl(root, &b, &db)
        .args(["bench", "--dry-run"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("plan: quiet\n"), "{stdout}");
    assert!(
        stdout.ends_with(&format!("note: a real run would be refused now: {held}\n")),
        "{stdout}"
    );

    let out = apply.stop();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(read(&migration), "1\n");
    assert!(!a.exists());
    assert!(
        !root.join("run/jitterlab/lock").exists(),
        "the lock is let go"
    );
}

#[test]
#[serial]
fn a_bench_refused_for_an_unreplayed_journal_prints_no_plan() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let db = dir.path().join("j.db");
    let spec = write(dir.path(), "quiet.toml", QUIET);
    let migration = root.join("proc/sys/kernel/timer_migration");
    dead_journal(&journal, &[file_entry(1, &migration, "1\n")]);
    let why = format!(
        "an unreplayed journal at {} (jitterlab pid 4194305, started 2025-01-01T12:00:00Z) holds 1 change; run `jitterlab restore` first",
        journal.display()
    );

    let out = jl(root, &journal, &db)
        .arg("bench")
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(text(&out.stderr), format!("jitterlab: error: {why}\n"));

    let out = jl(root, &journal, &db)
        .args(["bench", "--dry-run"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("plan: quiet\n"), "{stdout}");
    assert!(
        stdout.ends_with(&format!("note: a real run would be refused now: {why}\n")),
        "{stdout}"
    );
    // A measuring-only run is refused too: the machine is not as it was.
    let out = jl(root, &journal, &db)
        .args(["run", "wakeup", "--duration", "100ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), format!("jitterlab: error: {why}\n"));
    assert!(!db.exists(), "nothing measured");
}

#[test]
#[serial]
fn restore_says_what_needs_a_person_exits_1_and_drops_what_is_gone() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let db = dir.path().join("j.db");
    let victim = write(dir.path(), "passwd", "root:x:0:0\n");
    let migration = root.join("proc/sys/kernel/timer_migration");
    std::fs::write(&migration, "0\n").unwrap();
    // IRQ 999 does not exist (any more): its affinity went with it.
    let gone = root.join("proc/irq/999/smp_affinity_list");
    dead_journal(
        &journal,
        &[
            file_entry(1, &migration, "1\n"),
            file_entry(2, &victim, "hacked::0:0\n"),
            file_entry(3, &gone, "0-1\n"),
        ],
    );

    let out = jl(root, &journal, &db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        format!(
            "nothing to put back in {}: it is gone, and IRQ 999's affinity went with it\njournal entry 2 names {}, which no jitterlab setting writes under the sysroot {}; remove the entry by hand if you wrote it\nrestored {} to \"1\"\n",
            gone.display(),
            victim.display(),
            root.display(),
            migration.display()
        )
    );
    assert_eq!(
        text(&out.stderr),
        format!(
            "jitterlab: 1 change could not be undone and stays in the journal {}: do by hand what its line above says, then run `jitterlab restore` again\n",
            journal.display()
        )
    );
    assert_eq!(read(&victim), "root:x:0:0\n");
    assert_eq!(read(&migration), "1\n");
    assert!(!gone.exists() && !root.join("proc/irq/999").exists());
    let kept: serde_json::Value = serde_json::from_str(&read(&journal)).unwrap();
    assert_eq!(kept["entries"].as_array().unwrap().len(), 1);
    assert_eq!(kept["entries"][0]["id"], 2);

    // Until a person removes it, runs refuse; then restore ends with 0.
    let out = jl(root, &journal, &db)
        .args(["run", "wakeup", "--duration", "100ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    dead_journal(&journal, &[]);
    let out = jl(root, &journal, &db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!journal.exists());
}

#[test]
#[serial]
fn a_dangling_symlink_at_the_journal_path_is_named_for_what_it_is() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let target = dir.path().join("gone");
    std::os::unix::fs::symlink(&target, &journal).unwrap();
    let expected = format!(
        "jitterlab: error: the journal path {0} is a symlink (to {1}), not a journal: jitterlab never follows a symlink there; remove it (rm {0}) and run again\n",
        journal.display(),
        target.display()
    );
    let spec = write(dir.path(), "quiet.toml", QUIET);
    for args in [vec!["restore"], vec!["apply", spec.to_str().unwrap()]] {
        let out = jl(root, &journal, &dir.path().join("j.db"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stderr), expected, "{args:?}");
    }
    assert!(!target.exists());
    assert_eq!(read(&root.join("proc/sys/kernel/timer_migration")), "1\n");
}
