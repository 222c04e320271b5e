//! The journal, the lock and the replay, against temporary directories and
//! real processes. Their machine root is a private directory
//! ([`machine`]), so a jitterlab running on this machine (a bench, an
//! `apply`) never makes them fail; the one test that needs the real root
//! waits for its lock, or skips saying why (`testing::on_real_root`).

use super::restore::advice;
use super::testing::on_real_root;
use super::*;
use crate::error::BadInput;
use crate::system::procs::group_members;
use jitterlab_sys as sys;
use serial_test::serial;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

/// Points `JITTERLAB_JOURNAL` at a fresh temporary directory and returns
/// it with the journal path. Without root, `/run/jitterlab` cannot hold
/// the machine lock: that directory is the runtime directory too, as
/// `$XDG_RUNTIME_DIR` is for any user.
fn journal_env() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.json");
    std::env::set_var(JOURNAL_ENV, &path);
    if sys::effective_uid() != 0 {
        static RUNTIME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let runtime = RUNTIME.get_or_init(|| tempfile::tempdir().unwrap());
        std::env::set_var("XDG_RUNTIME_DIR", runtime.path());
    }
    (dir, path)
}

/// The machine root of these tests: a private directory, shared by the
/// module's tests (which run one at a time), so that their machine lock,
/// `<root>/run/jitterlab/lock`, is never the real one that a jitterlab
/// running on this machine holds.
fn machine() -> &'static Path {
    static ROOT: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn me() -> u32 {
    std::process::id()
}

fn my_ticks() -> u64 {
    read_stat(me() as i32).unwrap().start_ticks
}

fn started_at(path: &Path) -> String {
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    v["started_at"].as_str().unwrap().to_string()
}

/// Makes the journal at `path` look as if its owner had died (its pid
/// now another process's), as after a `kill -9`.
fn kill_owner(path: &Path) {
    let mut doc = load(path).unwrap().unwrap();
    doc.owner_start_ticks += 1;
    save(path, &doc).unwrap();
}

fn is_bad(e: &anyhow::Error) -> bool {
    e.downcast_ref::<BadInput>().is_some()
}

#[test]
#[serial]
fn record_and_done_rewrite_the_exact_document() {
    let (_dir, path) = journal_env();
    let mut j = Journal::begin(machine()).unwrap();
    assert_eq!(j.path(), path);
    let at = started_at(&path);
    // RFC 3339 to the second, UTC: 2025-01-01T12:00:00Z.
    assert_eq!((at.len(), &at[10..11], &at[19..]), (20, "T", "Z"));
    let head = format!(
            "{{\n  \"version\": 1,\n  \"owner_pid\": {},\n  \"owner_start_ticks\": {},\n  \"boot_id\": \"{}\",\n  \"started_at\": \"{at}\",\n",
            me(),
            my_ticks(),
            boot_id()
        );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!("{head}  \"entries\": []\n}}\n")
    );
    let file = j
        .record(Undo::File {
            path: "/sys/x/scaling_governor".into(),
            old: "powersave\n".into(),
        })
        .unwrap();
    let group = j
        .record(Undo::Neighbour {
            pgid: 4250,
            start_ticks: 99,
            argv: vec!["stress-ng".into(), "--cpu".into(), "1".into()],
        })
        .unwrap();
    let netns = j
        .record(Undo::Netns {
            name: "jl-io".into(),
        })
        .unwrap();
    assert_eq!((file, group, netns, j.pending()), (1, 2, 3, 3));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!(
            "{head}  \"entries\": [
    {{
      \"id\": 1,
      \"kind\": \"file\",
      \"path\": \"/sys/x/scaling_governor\",
      \"old\": \"powersave\\n\"
    }},
    {{
      \"id\": 2,
      \"kind\": \"neighbour\",
      \"pgid\": 4250,
      \"start_ticks\": 99,
      \"argv\": [
        \"stress-ng\",
        \"--cpu\",
        \"1\"
      ]
    }},
    {{
      \"id\": 3,
      \"kind\": \"netns\",
      \"name\": \"jl-io\"
    }}
  ]
}}
"
        )
    );
    j.done(group).unwrap();
    j.done(file).unwrap();
    assert_eq!(j.pending(), 1);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!(
            "{head}  \"entries\": [
    {{
      \"id\": 3,
      \"kind\": \"netns\",
      \"name\": \"jl-io\"
    }}
  ]
}}
"
        )
    );
    assert_eq!(
        j.done(2).unwrap_err().to_string(),
        format!("journal {} has no entry 2", path.display())
    );
    // Ids are never reused.
    let next = j
        .record(Undo::Netns {
            name: "jl-b".into(),
        })
        .unwrap();
    assert_eq!(next, 4);
    // Forgetting several goes on past one it cannot forget, and says which.
    assert_eq!(
        j.done_all([next, 2, netns]),
        vec![format!(
            "journal: journal {} has no entry 2",
            path.display()
        )]
    );
    assert_eq!(j.pending(), 0);
    j.finish().unwrap();
    assert!(!path.exists());
    // No temporary file is left beside it.
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 0);
}

#[test]
#[serial]
fn finish_and_drop_keep_a_journal_with_pending_changes() {
    let (_dir, path) = journal_env();
    let mut j = Journal::begin(machine()).unwrap();
    j.record(Undo::Netns { name: "a".into() }).unwrap();
    j.record(Undo::Netns { name: "b".into() }).unwrap();
    assert_eq!(
            j.finish().unwrap_err().to_string(),
            format!(
                "2 changes to this machine not undone; the journal {} keeps them: run `jitterlab restore`",
                path.display()
            )
        );
    assert!(path.exists());
    fs::remove_file(&path).unwrap();

    let mut j = Journal::begin(machine()).unwrap();
    j.record(Undo::Netns { name: "a".into() }).unwrap();
    drop(j);
    assert_eq!(load(&path).unwrap().unwrap().entries.len(), 1);
    fs::remove_file(&path).unwrap();

    // Without pending changes, dropping removes it.
    let j = Journal::begin(machine()).unwrap();
    drop(j);
    assert!(!path.exists());
}

/// "another jitterlab (pid ME, `jitterlab run`) is changing …".
/// A journal at `path` with one change, of a jitterlab that died.
fn dead_owner_journal(path: &Path) {
    let doc = Document {
        version: VERSION,
        owner_pid: 4_194_305,
        owner_start_ticks: 1,
        boot_id: boot_id(),
        started_at: "2025-01-01T12:00:00Z".into(),
        entries: vec![Entry {
            id: 1,
            undo: Undo::Netns {
                name: "jl4194305a".into(),
            },
        }],
    };
    save(path, &doc).unwrap();
}

fn held_by_me(what: &str) -> String {
    format!(
            "another jitterlab (pid {}, `jitterlab {what}`) is changing this machine; wait for it to end or stop it (Ctrl-C puts back what it changed)",
            me()
        )
}

#[test]
#[serial]
fn begin_refuses_while_the_lock_is_held_or_changes_are_unreplayed() {
    let (_dir, path) = journal_env();
    let mut j = Journal::begin(machine()).unwrap();
    let e = Journal::begin(machine()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(e.to_string(), held_by_me("run"));
    j.record(Undo::Netns { name: "a".into() }).unwrap();
    j.record(Undo::Netns { name: "b".into() }).unwrap();
    let at = started_at(&path);
    drop(j);

    // The owner's pid now belongs to another process.
    kill_owner(&path);
    let unreplayed = format!(
            "an unreplayed journal at {} (jitterlab pid {}, started {at}) holds 2 changes; run `jitterlab restore` first",
            path.display(),
            me()
        );
    let e = Journal::begin(machine()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(e.to_string(), unreplayed);
    // A live owner that does not hold the lock (an older jitterlab).
    let mut doc = load(&path).unwrap().unwrap();
    doc.owner_start_ticks = my_ticks();
    save(&path, &doc).unwrap();
    assert_eq!(
            Journal::begin(machine()).unwrap_err().to_string(),
            format!(
                "another jitterlab (pid {}) is running and holds 2 changes to this machine; wait for it or stop it",
                me()
            )
        );

    // A dead owner's empty journal is simply replaced.
    doc.entries.clear();
    doc.owner_pid = 1;
    save(&path, &doc).unwrap();
    let j = Journal::begin(machine()).unwrap();
    let now = load(&path).unwrap().unwrap();
    assert_eq!(
        (
            now.owner_pid,
            now.owner_start_ticks,
            now.boot_id,
            now.entries
        ),
        (me(), my_ticks(), boot_id(), vec![])
    );
    j.finish().unwrap();
}

#[test]
#[serial]
fn a_journal_of_another_boot_is_dropped_with_a_note_not_refused() {
    let (_dir, path) = journal_env();
    let mut j = Journal::begin(machine()).unwrap();
    j.record(Undo::File {
        path: "/proc/sys/kernel/timer_migration".into(),
        old: "1\n".into(),
    })
    .unwrap();
    drop(j);
    let mut doc = load(&path).unwrap().unwrap();
    doc.boot_id = "00000000-0000-0000-0000-000000000000".into();
    save(&path, &doc).unwrap();
    assert_eq!(
            other_boot_note(&path, &doc).unwrap(),
            format!(
                "dropped the journal {} of another boot (jitterlab pid {}, started {}): its 1 change ended with that boot, nothing is written back",
                path.display(),
                me(),
                doc.started_at
            )
        );
    // Neither a measuring run nor a dry run is refused for it.
    assert_eq!(refusal(machine(), Purpose::Measure).unwrap(), None);
    assert_eq!(would_refuse(machine()).unwrap(), None);
    let j = Journal::begin(machine()).unwrap();
    assert_eq!(load(&path).unwrap().unwrap().entries, vec![]);
    j.finish().unwrap();
    assert!(!path.exists());
}

#[test]
#[serial]
fn two_journal_paths_share_one_machine_lock() {
    let (_a, applys) = journal_env();
    let root = tempfile::tempdir().unwrap();
    let apply = Journal::begin_as(root.path(), Holder::Apply).unwrap();
    let lock = root.path().join("run/jitterlab/lock");
    assert_eq!(
        fs::read_to_string(&lock).unwrap(),
        format!("{} {} apply\n", me(), my_ticks())
    );
    // Another journal path, the same machine: refused.
    let (_b, other) = journal_env();
    for holder in [Holder::Bench, Holder::Apply, Holder::Run] {
        let e = Journal::begin_as(root.path(), holder).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), held_by_me("apply"));
    }
    // A restore of another journal is told what the holder is doing, never
    // that the holder holds that journal's changes.
    let e = replay(root.path()).unwrap_err();
    assert!(is_bad(&e));
    let busy = format!(
        "another jitterlab (pid {}, `jitterlab apply`) is changing this machine; run `jitterlab restore` again once it has ended (it puts back its own changes itself)",
        me()
    );
    assert_eq!(e.to_string(), busy);
    dead_owner_journal(&other);
    assert_eq!(replay(root.path()).unwrap_err().to_string(), busy);
    fs::remove_file(&other).unwrap();
    // A restore of the holder's own journal: stop the holder.
    std::env::set_var(JOURNAL_ENV, &applys);
    assert_eq!(
            replay(root.path()).unwrap_err().to_string(),
            format!(
                "jitterlab pid {} (`jitterlab apply`) is still running and holds its changes; stop it with Ctrl-C (it restores them itself)",
                me()
            )
        );
    std::env::set_var(JOURNAL_ENV, &other);
    assert!(!other.exists(), "the refused one made no journal");
    // Another sysroot is another machine.
    let elsewhere = tempfile::tempdir().unwrap();
    Journal::begin(elsewhere.path()).unwrap().finish().unwrap();

    // Let go on drop (as the kernel does on kill -9): the file goes too.
    drop(apply);
    assert!(!lock.exists());
    // A restore meets another restore.
    let restoring = MachineLock::take(root.path(), Holder::Restore).unwrap();
    assert_eq!(
        replay(root.path()).unwrap_err().to_string(),
        format!(
            "another `jitterlab restore` (pid {}) is putting this machine back; wait for it to end",
            me()
        )
    );
    drop(restoring);
    Journal::begin_as(root.path(), Holder::Bench)
        .unwrap()
        .finish()
        .unwrap();
}

#[test]
#[serial]
fn a_measuring_run_runs_beside_apply_only_and_not_over_unreplayed_changes() {
    let (_dir, path) = journal_env();
    let root = tempfile::tempdir().unwrap();
    // Nothing held: it starts and creates nothing until it changes something.
    let j = Journal::on_demand(root.path()).unwrap();
    assert_eq!((j.pending(), j.path()), (0, Path::new("")));
    assert!(!root.path().join("run").exists() && !path.exists());
    j.finish().unwrap();

    // Beside a live apply: it runs, but its first change is refused.
    let apply = Journal::begin_as(root.path(), Holder::Apply).unwrap();
    let mut j = Journal::on_demand(root.path()).unwrap();
    let e = j.record(Undo::Netns { name: "a".into() }).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(e.to_string(), held_by_me("apply"));
    assert_eq!(j.pending(), 0);
    drop(j);
    assert!(path.exists(), "apply's journal is left alone");
    // A dry run of a bench would be refused.
    assert_eq!(
        would_refuse(root.path()).unwrap(),
        Some(held_by_me("apply"))
    );
    drop(apply);

    // Beside a bench: refused.
    let bench = Journal::begin_as(root.path(), Holder::Bench).unwrap();
    let e = Journal::on_demand(root.path()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(e.to_string(), held_by_me("bench"));
    drop(bench);

    // Free again: the first change takes the lock and the journal.
    let mut j = Journal::on_demand(root.path()).unwrap();
    j.record(Undo::Netns { name: "a".into() }).unwrap();
    assert_eq!(j.path(), path);
    assert_eq!(
        Journal::begin_as(root.path(), Holder::Bench)
            .unwrap_err()
            .to_string(),
        held_by_me("run")
    );
    let at = started_at(&path);
    drop(j); // kill -9
    kill_owner(&path);
    let unreplayed = format!(
            "an unreplayed journal at {} (jitterlab pid {}, started {at}) holds 1 change; run `jitterlab restore` first",
            path.display(),
            me()
        );
    let e = Journal::on_demand(root.path()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(e.to_string(), unreplayed);
    assert_eq!(would_refuse(root.path()).unwrap(), Some(unreplayed));
    fs::remove_file(&path).unwrap();
    assert_eq!(would_refuse(root.path()).unwrap(), None);
}

#[test]
#[serial]
fn a_stale_lock_of_a_dead_holder_is_taken_over() {
    let (_dir, _path) = journal_env();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run/jitterlab");
    fs::create_dir_all(&dir).unwrap();
    // Left by a bench killed with -9: a pid that is not alive.
    fs::write(dir.join("lock"), "4194305 12 bench\n").unwrap();
    assert_eq!(Journal::on_demand(root.path()).unwrap().pending(), 0);
    assert_eq!(would_refuse(root.path()).unwrap(), None);
    let j = Journal::begin_as(root.path(), Holder::Bench).unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("lock")).unwrap(),
        format!("{} {} bench\n", me(), my_ticks())
    );
    j.finish().unwrap();
}

#[test]
#[serial]
fn jitterlabs_directory_journal_and_lock_are_private() {
    let saved = std::env::var_os(JOURNAL_ENV);
    std::env::remove_var(JOURNAL_ENV);
    let root = tempfile::tempdir().unwrap();
    let mode = |p: &Path| fs::symlink_metadata(p).unwrap().mode() & 0o7777;
    let dir = root.path().join("run/jitterlab");
    let mut j = Journal::begin(root.path()).unwrap();
    j.record(Undo::Netns { name: "a".into() }).unwrap();
    assert_eq!(
        (
            mode(&dir),
            mode(&dir.join("journal.json")),
            mode(&dir.join("lock"))
        ),
        (0o700, 0o600, 0o600)
    );
    fs::remove_file(dir.join("journal.json")).unwrap();
    drop(j);

    // An existing directory of ours is tightened; one others may write
    // in is refused with the reason, and nothing is created in it.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    Journal::begin(root.path()).unwrap().finish().unwrap();
    assert_eq!(mode(&dir), 0o700);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let e = Journal::begin(root.path()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(
            e.to_string(),
            format!(
                "{0} is writable by other users (mode 0777): they could plant a journal there for root to replay; make it private (chmod 700 {0}) or choose another directory",
                dir.display()
            )
        );
    assert_eq!(restore(root.path()).unwrap_err().to_string(), e.to_string());
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    // A symlink in its place.
    fs::remove_dir(&dir).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
    assert_eq!(
            Journal::begin(root.path()).unwrap_err().to_string(),
            format!(
                "{0} is a symlink, not jitterlab's directory: jitterlab never follows a symlink there; remove it (rm {0}) and run again",
                dir.display()
            )
        );
    assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);

    // JITTERLAB_JOURNAL in a directory anyone may write in (as /tmp).
    let shared = tempfile::tempdir().unwrap();
    fs::set_permissions(shared.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    let planted = shared.path().join("journal.json");
    std::env::set_var(JOURNAL_ENV, &planted);
    let e = Journal::begin(machine()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(
            e.to_string(),
            format!(
                "{JOURNAL_ENV}={}: {1} is writable by other users (mode 1777): they could plant a journal there for root to replay; make it private (chmod 700 {1}) or choose another directory",
                planted.display(),
                shared.path().display()
            )
        );
    match saved {
        Some(v) => std::env::set_var(JOURNAL_ENV, v),
        None => std::env::remove_var(JOURNAL_ENV),
    }
}

#[test]
#[serial]
fn the_temporary_file_never_follows_a_planted_symlink() {
    let (dir, path) = journal_env();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    // Planted (or left by a dead process that had this pid) where the
    // next save writes its temporary file.
    std::os::unix::fs::symlink(&victim, tmp_path(&path)).unwrap();
    let mut j = Journal::begin(machine()).unwrap();
    std::os::unix::fs::symlink(&victim, tmp_path(&path)).unwrap();
    j.record(Undo::Netns { name: "a".into() }).unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(load(&path).unwrap().unwrap().entries.len(), 1);
    // A stale regular file is replaced as well.
    fs::write(tmp_path(&path), "stale").unwrap();
    j.record(Undo::Netns { name: "b".into() }).unwrap();
    assert!(!tmp_path(&path).exists());
    assert_eq!(
        fs::metadata(&path).unwrap().mode() & 0o777,
        0o600,
        "the journal is root's only"
    );
    drop(j);
    fs::remove_file(&path).unwrap();
}

/// The temporary journal files `kill -9` can leave beside the journal: one
/// of a dead pid (beyond any pid_max), one of this live jitterlab (the
/// test process), one of a live process that is no jitterlab (pid 1), and
/// two that are no temporary journal file.
fn leftovers(journal: &Path) -> [PathBuf; 5] {
    let beside = |suffix: &str| {
        let mut name = journal.file_name().unwrap().to_os_string();
        name.push(suffix);
        journal.with_file_name(name)
    };
    let files = [
        beside(".tmp.4194305"),
        beside(&format!(".tmp.{}", me())),
        beside(".tmp.1"),
        beside(".tmp.12ab"),
        journal.with_file_name("other.json.tmp.4194305"),
    ];
    for f in &files {
        fs::write(f, "{").unwrap();
    }
    files
}

#[test]
#[serial]
fn restore_and_begin_remove_the_temporary_files_of_dead_jitterlabs() {
    let (_dir, path) = journal_env();
    let [dead, mine, init, odd, other] = leftovers(&path);
    assert_eq!(
        restore(machine()).unwrap(),
        vec![
            format!(
                "removed {}, a temporary journal file left by jitterlab pid 1, which was killed",
                init.display()
            ),
            format!(
                "removed {}, a temporary journal file left by jitterlab pid 4194305, which was killed",
                dead.display()
            ),
        ]
    );
    assert!(!dead.exists() && !init.exists());
    assert!(mine.exists() && odd.exists() && other.exists());

    // This process's own temporary file is the one it writes its journal
    // through, so only the others show what begin leaves alone.
    let [dead, _, init, odd, other] = leftovers(&path);
    Journal::begin(machine()).unwrap().finish().unwrap();
    assert!(!dead.exists() && !init.exists());
    assert!(odd.exists() && other.exists());
    assert!(!path.exists());
}

#[test]
#[serial]
fn a_symlink_at_the_journal_path_is_named_for_what_it_is() {
    let (dir, path) = journal_env();
    let target = dir.path().join("nowhere");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let expected = format!(
            "the journal path {0} is a symlink (to {1}), not a journal: jitterlab never follows a symlink there; remove it (rm {0}) and run again",
            path.display(),
            target.display()
        );
    let e = Journal::begin(machine()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(e.to_string(), expected);
    assert_eq!(restore(machine()).unwrap_err().to_string(), expected);
    assert_eq!(
        Journal::on_demand(machine()).unwrap_err().to_string(),
        expected
    );
    assert!(!target.exists());
    // Pointing at a real file changes nothing either.
    fs::write(&target, "precious\n").unwrap();
    assert_eq!(Journal::begin(machine()).unwrap_err().to_string(), expected);
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious\n");
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    assert_eq!(
            Journal::begin(machine()).unwrap_err().to_string(),
            format!(
                "the journal path {} is a directory, not a journal; remove it, or point {JOURNAL_ENV} at a file",
                path.display()
            )
        );
}

#[test]
#[serial]
fn a_damaged_or_foreign_journal_is_refused() {
    let (_dir, path) = journal_env();
    fs::write(&path, "{\"version\":1").unwrap();
    let e = Journal::begin(machine()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(
            e.to_string(),
            format!(
                "the journal {} is not a jitterlab journal (EOF while parsing an object at line 1 column 12); undo what it lists by hand, then delete it",
                path.display()
            )
        );
    fs::write(
            &path,
            "{\"version\":2,\"owner_pid\":1,\"owner_start_ticks\":0,\"boot_id\":\"\",\"started_at\":\"\",\"entries\":[]}",
        )
        .unwrap();
    assert_eq!(
            restore(machine()).unwrap_err().to_string(),
            format!(
                "the journal {} has version 2, this jitterlab reads version 1; replay it with the jitterlab that wrote it",
                path.display()
            )
        );
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(tree(&p));
        } else {
            out.push((p.clone(), fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
#[serial]
fn restore_writes_files_back_byte_for_byte_and_removes_the_journal() {
    let (_jdir, path) = journal_env();
    let root = tempfile::tempdir().unwrap();
    let gov = root
        .path()
        .join("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    let schemata = root.path().join("sys/fs/resctrl/schemata");
    fs::create_dir_all(gov.parent().unwrap()).unwrap();
    fs::create_dir_all(schemata.parent().unwrap()).unwrap();
    fs::write(&gov, "powersave\n").unwrap();
    fs::write(&schemata, "    L3:0=fff;1=fff\n      MB:0=100;1=100\n").unwrap();
    let before = tree(root.path());

    // Two settings journaled, then written; the second value changes twice.
    let mut j = Journal::begin(root.path()).unwrap();
    for (p, new) in [
        (&gov, "performance"),
        (&schemata, "L3:0=f0\n"),
        (&gov, "schedutil"),
    ] {
        let old = fs::read_to_string(p).unwrap();
        j.record(Undo::File {
            path: p.clone(),
            old,
        })
        .unwrap();
        fs::write(p, new).unwrap();
    }
    drop(j); // kill -9: nothing undone.
    assert_ne!(tree(root.path()), before);

    let e = restore(root.path()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(
            e.to_string(),
            format!(
                "jitterlab pid {} is still running and holds these changes; stop it with Ctrl-C (it restores them itself)",
                me()
            )
        );
    kill_owner(&path);
    assert_eq!(
        restore(root.path()).unwrap(),
        vec![
            format!("restored {} to \"performance\"", gov.display()),
            format!(
                "restored {} to \"    L3:0=fff;1=fff\\n      MB:0=100;1=100\"",
                schemata.display()
            ),
            format!("restored {} to \"powersave\"", gov.display()),
        ]
    );
    assert_eq!(tree(root.path()), before);
    assert!(!path.exists());
    assert_eq!(restore(root.path()).unwrap(), Vec::<String>::new());
}

#[test]
#[serial]
fn restore_drops_what_is_gone_and_keeps_what_needs_a_person() {
    let (_jdir, path) = journal_env();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let at = |rel: &str| root.join(rel);
    for d in [
        "proc/sys/kernel",
        "proc/irq/35",
        "sys/fs/resctrl/info",
        "etc",
    ] {
        fs::create_dir_all(at(d)).unwrap();
    }
    fs::write(at("proc/sys/kernel/timer_migration"), "0\n").unwrap();
    fs::write(at("proc/irq/default_smp_affinity"), "3\n").unwrap();
    // A value that cannot be written back (EISDIR, even for root).
    fs::create_dir(at("proc/sys/kernel/sched_rt_runtime_us")).unwrap();
    fs::write(at("etc/passwd"), "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(at("etc/passwd"), at("sys/fs/resctrl/schemata")).unwrap();
    let before_victim = fs::read(at("etc/passwd")).unwrap();

    let mut j = Journal::begin(root).unwrap();
    let file = |rel: &str, old: &str| Undo::File {
        path: at(rel),
        old: old.into(),
    };
    for undo in [
        file("proc/sys/kernel/timer_migration", "1\n"),
        file("proc/irq/36/smp_affinity_list", "0-1\n"),
        file("proc/irq/default_smp_affinity", "3\n"),
        file("proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
        file("etc/passwd", "hacked::0:0\n"),
        file("sys/fs/resctrl/schemata", "L3:0=fff\n"),
        Undo::Netns {
            name: "jl4194305tx".into(),
        },
    ] {
        j.record(undo).unwrap();
    }
    drop(j);
    kill_owner(&path);
    let r = replay(root).unwrap();
    let p = |rel: &str| at(rel).display().to_string();
    assert_eq!(
            r.lines,
            vec![
                "network namespace jl4194305tx was already gone".to_string(),
                format!(
                    "could not restore {} to \"L3:0=fff\": it is a symlink now, and jitterlab never writes through one; see what replaced it and put the value back by hand",
                    p("sys/fs/resctrl/schemata")
                ),
                format!(
                    "journal entry 5 names {}, which no jitterlab setting writes under the sysroot {}; remove the entry by hand if you wrote it",
                    p("etc/passwd"),
                    root.display()
                ),
                format!(
                    "could not restore {} to \"950000\": Is a directory (os error 21); write it back by hand",
                    p("proc/sys/kernel/sched_rt_runtime_us")
                ),
                format!("{} already holds \"3\"", p("proc/irq/default_smp_affinity")),
                format!(
                    "nothing to put back in {}: it is gone, and IRQ 36's affinity went with it",
                    p("proc/irq/36/smp_affinity_list")
                ),
                format!("restored {} to \"1\"", p("proc/sys/kernel/timer_migration")),
            ]
        );
    assert_eq!((r.left, &r.path), (3, &path));
    assert_eq!(
            left_message(&r),
            format!(
                "3 changes could not be undone and stay in the journal {}: do by hand what their lines above say, then run `jitterlab restore` again",
                path.display()
            )
        );
    assert_eq!(fs::read(at("etc/passwd")).unwrap(), before_victim);
    assert!(!at("proc/irq/36").exists(), "nothing created");
    assert_eq!(
        fs::read_to_string(at("proc/sys/kernel/timer_migration")).unwrap(),
        "1\n"
    );
    let ids: Vec<u64> = load(&path)
        .unwrap()
        .unwrap()
        .entries
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, vec![4, 5, 6]);

    // A person puts the value back and removes the entries they wrote:
    // the next restore drops the rest, and the journal is gone.
    fs::remove_dir(at("proc/sys/kernel/sched_rt_runtime_us")).unwrap();
    fs::write(at("proc/sys/kernel/sched_rt_runtime_us"), "950000\n").unwrap();
    let mut doc = load(&path).unwrap().unwrap();
    doc.entries.retain(|e| e.id == 4);
    save(&path, &doc).unwrap();
    let r = replay(root).unwrap();
    assert_eq!(
        (r.lines, r.left),
        (
            vec![format!(
                "{} already holds \"950000\"",
                p("proc/sys/kernel/sched_rt_runtime_us")
            )],
            0
        )
    );
    assert!(!path.exists());
}

#[test]
#[serial]
fn a_hand_made_file_entry_is_refused_on_the_real_root_too() {
    let (jdir, path) = journal_env();
    // Harmless if it were written: a file of the test's own.
    let victim = jdir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    // The real root, for its allow-list: the lock of a jitterlab running
    // on this machine is waited for.
    let Some(mut j) = on_real_root(|| Journal::begin(Path::new("/"))) else {
        return;
    };
    j.record(Undo::File {
        path: victim.clone(),
        old: "hacked\n".into(),
    })
    .unwrap();
    drop(j);
    kill_owner(&path);
    let Some(r) = on_real_root(|| replay(Path::new("/"))) else {
        fs::remove_file(&path).unwrap();
        return;
    };
    assert_eq!(
            (r.lines, r.left),
            (
                vec![format!(
                    "journal entry 1 names {}, which no jitterlab setting writes; remove the entry by hand if you wrote it",
                    victim.display()
                )],
                1
            )
        );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    fs::remove_file(&path).unwrap();
}

#[test]
fn a_process_left_as_it_was_gets_the_command_that_undoes_it() {
    let neighbour = Undo::Neighbour {
        pgid: 4250,
        start_ticks: 1,
        argv: vec!["hackbench".into()],
    };
    let stopped = Undo::Stopped {
        pid: 812,
        start_ticks: 1,
        comm: "irqbalance".into(),
    };
    assert_eq!(
        (advice(&neighbour), advice(&stopped)),
        (
            Some("kill it by hand (kill -KILL -- -4250)".to_string()),
            Some("resume it by hand (kill -CONT 812)".to_string())
        )
    );
    assert_eq!(
        advice(&Undo::Netns {
            name: "jl1tx".into()
        }),
        None
    );
}

#[test]
#[serial]
fn restore_kills_a_journaled_process_group_and_leaves_no_member() {
    let (_jdir, path) = journal_env();
    let mut leader = Command::new("sleep")
        .arg("100")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = leader.id() as i32;
    let mut member = Command::new("sleep")
        .arg("100")
        .process_group(pgid)
        .spawn()
        .unwrap();
    assert_eq!(group_members(pgid), vec![pgid, member.id() as i32]);
    let mut j = Journal::begin(machine()).unwrap();
    j.record(Undo::Neighbour {
        pgid,
        start_ticks: read_stat(pgid).unwrap().start_ticks,
        argv: vec!["sleep".into(), "100".into()],
    })
    .unwrap();
    drop(j);
    kill_owner(&path);
    assert_eq!(
        restore(machine()).unwrap(),
        vec![format!(
            "killed neighbour process group {pgid} (`sleep 100`): 2 processes"
        )]
    );
    assert_eq!(group_members(pgid), Vec::<i32>::new());
    assert_eq!(leader.wait().unwrap().signal(), Some(9));
    assert_eq!(member.wait().unwrap().signal(), Some(9));
    assert!(!path.exists());
}

#[test]
#[serial]
fn restore_leaves_reused_pids_and_other_boots_alone() {
    let (_jdir, path) = journal_env();
    let mut stranger = Command::new("sleep")
        .arg("100")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = stranger.id() as i32;
    let ticks = read_stat(pgid).unwrap().start_ticks;
    let mut j = Journal::begin(machine()).unwrap();
    // An older neighbour whose pid the stranger got.
    j.record(Undo::Neighbour {
        pgid,
        start_ticks: ticks - 1,
        argv: vec!["hackbench".into()],
    })
    .unwrap();
    drop(j);
    kill_owner(&path);
    assert_eq!(
            restore(machine()).unwrap(),
            vec![format!(
                "left process group {pgid} alone: pid {pgid} now belongs to another process (started at tick {ticks}, the neighbour `hackbench` at tick {})",
                ticks - 1
            )]
        );
    assert_eq!(group_members(pgid), vec![pgid]);

    // A journal of another boot: its groups died with that boot.
    let mut j = Journal::begin(machine()).unwrap();
    j.record(Undo::Neighbour {
        pgid,
        start_ticks: ticks,
        argv: vec!["sleep".into(), "100".into()],
    })
    .unwrap();
    drop(j);
    let mut doc = load(&path).unwrap().unwrap();
    doc.boot_id = "00000000-0000-0000-0000-000000000000".into();
    save(&path, &doc).unwrap();
    assert_eq!(
            restore(machine()).unwrap(),
            vec![
                format!(
                    "the journal {} was written in another boot (jitterlab pid {}, started {}): what ended with that boot is dropped, nothing of it written back",
                    path.display(),
                    me(),
                    doc.started_at
                ),
                format!("neighbour process group {pgid} (`sleep 100`) ended with the reboot")
            ]
        );
    assert_eq!(group_members(pgid), vec![pgid]);
    assert!(!path.exists());

    stranger.kill().unwrap();
    stranger.wait().unwrap();
    // A group that ended on its own.
    let mut j = Journal::begin(machine()).unwrap();
    j.record(Undo::Neighbour {
        pgid,
        start_ticks: ticks,
        argv: vec!["sleep".into(), "100".into()],
    })
    .unwrap();
    drop(j);
    kill_owner(&path);
    assert_eq!(
        restore(machine()).unwrap(),
        vec![format!(
            "neighbour process group {pgid} (`sleep 100`) had already ended"
        )]
    );
}

#[test]
#[serial]
fn journal_lives_under_the_sysroot_else_in_the_runtime_dir() {
    let saved = (
        std::env::var_os(JOURNAL_ENV),
        std::env::var_os("XDG_RUNTIME_DIR"),
    );
    std::env::remove_var(JOURNAL_ENV);
    let root = tempfile::tempdir().unwrap();
    let j = Journal::begin(root.path()).unwrap();
    assert_eq!(j.path(), root.path().join("run/jitterlab/journal.json"));
    assert!(j.path().exists());
    j.finish().unwrap();

    // `run` cannot be a directory: the runtime directory takes over.
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join("run"), "").unwrap();
    let xdg = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", xdg.path());
    let j = Journal::begin(root.path()).unwrap();
    assert_eq!(j.path(), xdg.path().join("jitterlab/journal.json"));
    j.finish().unwrap();

    std::env::remove_var("XDG_RUNTIME_DIR");
    let e = Journal::begin(root.path()).unwrap_err();
    assert!(is_bad(&e));
    assert_eq!(
            e.to_string(),
            format!(
                "cannot keep a journal of changes to this machine: cannot write {}/run/jitterlab (Not a directory (os error 20)) and $XDG_RUNTIME_DIR is not set; run as root or set XDG_RUNTIME_DIR",
                root.path().display()
            )
        );
    std::env::set_var("XDG_RUNTIME_DIR", root.path().join("run"));
    assert_eq!(
            restore(root.path()).unwrap_err().to_string(),
            format!(
                "cannot keep a journal of changes to this machine: cannot write {0}/run/jitterlab (Not a directory (os error 20)) nor {0}/run/jitterlab: Not a directory (os error 20); run as root or set XDG_RUNTIME_DIR",
                root.path().display()
            )
        );
    for (key, value) in [(JOURNAL_ENV, saved.0), ("XDG_RUNTIME_DIR", saved.1)] {
        match value {
            Some(v) => std::env::set_var(key, v),
            None => std::env::remove_var(key),
        }
    }
}
