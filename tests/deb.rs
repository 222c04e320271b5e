//! The Debian package end to end: `make deb` builds it (a release build, and
//! cargo-deb installed when missing), `dpkg-deb` shows exactly the files and
//! relations it should have, and it is installed into a clean root of its
//! own with `dpkg --root`, run from there (`jitterlab --version`, `man -w`),
//! and purged, leaving that root as it was.
//!
//! The clean root is a fresh directory with an empty dpkg database, not
//! this machine: installing here would replace a jitterlab a person
//! installed, and would race the other tests' `apt-get`. Its Depends
//! (stress-ng, …) are not in that root, so the install says
//! `--force-depends`; the relations themselves are checked with `dpkg-deb
//! -f`. The package has no maintainer scripts, so nothing runs inside the
//! root either.
//!
//! It needs root (dpkg installs files as root:root) and `dpkg`, and skips,
//! saying so, without them. `make deb` takes minutes (the release build):
//! see the README's "Debian package" section for the time measured.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::Instant;

use assert_cmd::Command;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn have(tool: &str) -> bool {
    StdCommand::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run(cmd: &mut StdCommand) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(cmd: &mut StdCommand) -> String {
    String::from_utf8(run(cmd).stdout).unwrap()
}

/// Every path under `root` (directories with a trailing `/`), relative to
/// it, sorted.
fn tree(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"));
                walk(root, &e.path(), out);
            } else {
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

/// Where cargo and `make deb` put their output.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(MANIFEST_DIR).join("target"))
}

/// The files the package must carry, as `dpkg-deb -c` names them: the
/// man pages are the ones this build's `__generate-docs` writes, gzipped.
fn expected_files() -> BTreeSet<String> {
    let docs = tempfile::tempdir().unwrap();
    Command::cargo_bin("jitterlab")
        .unwrap()
        .arg("__generate-docs")
        .arg(docs.path())
        .assert()
        .success();
    let mut files: BTreeSet<String> = [
        "./usr/bin/jitterlab",
        "./usr/share/bash-completion/completions/jitterlab",
        "./usr/share/zsh/vendor-completions/_jitterlab",
        "./usr/share/fish/vendor_completions.d/jitterlab.fish",
        "./usr/share/doc/jitterlab/README.md",
        "./usr/share/doc/jitterlab/copyright",
    ]
    .map(String::from)
    .into();
    for e in std::fs::read_dir(docs.path().join("man")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        files.insert(format!("./usr/share/man/man1/{name}.gz"));
    }
    for e in std::fs::read_dir(Path::new(MANIFEST_DIR).join("examples")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            files.insert(format!("./usr/share/doc/jitterlab/examples/{name}"));
        }
    }
    files
}

#[test]
fn debian_package_builds_installs_runs_and_purges() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!(
            "skipping the Debian package test: dpkg installs files as root, which needs root"
        );
        return;
    }
    for tool in ["dpkg", "dpkg-deb", "make"] {
        if !have(tool) {
            eprintln!(
                "skipping the Debian package test: {tool} is missing (a Debian machine has it)"
            );
            return;
        }
    }

    let started = Instant::now();
    run(StdCommand::new("make").arg("deb").current_dir(MANIFEST_DIR));
    eprintln!("make deb took {:.0?}", started.elapsed());

    let arch = stdout(StdCommand::new("dpkg").arg("--print-architecture"));
    let deb = target_dir().join(format!("debian/jitterlab_{VERSION}-1_{}.deb", arch.trim()));
    assert!(deb.is_file(), "{} is missing", deb.display());

    // Its control fields.
    let field = |name: &str| {
        stdout(StdCommand::new("dpkg-deb").arg("-f").arg(&deb).arg(name))
            .trim_end()
            .to_owned()
    };
    assert_eq!(field("Package"), "jitterlab");
    assert_eq!(field("Version"), format!("{VERSION}-1"));
    assert_eq!(field("Architecture"), arch.trim());
    assert_eq!(field("Recommends"), "rtla, podman, tshark");
    // cargo-deb sorts Depends: the neighbours' tools and, from `$auto`,
    // the shared libraries the binary links (libc6 at least, versioned).
    let depends = field("Depends");
    let (libs, tools): (Vec<&str>, Vec<&str>) =
        depends.split(", ").partition(|d| d.starts_with("lib"));
    assert_eq!(
        tools,
        ["iproute2", "procps", "rt-tests", "stress-ng"],
        "{depends}"
    );
    assert!(
        libs.iter().any(|d| d.starts_with("libc6 (>= ")),
        "Depends lacks libc6: {depends}"
    );

    // Its files, exactly.
    let listing = stdout(StdCommand::new("dpkg-deb").arg("-c").arg(&deb));
    let files: BTreeSet<String> = listing
        .lines()
        .filter(|l| !l.starts_with('d'))
        .map(|l| l.split_whitespace().last().unwrap().to_owned())
        .collect();
    assert_eq!(files, expected_files());
    let binary = listing
        .lines()
        .find(|l| l.ends_with(" ./usr/bin/jitterlab"))
        .unwrap();
    assert!(binary.starts_with("-rwxr-xr-x 0/0 "), "{binary}");

    // A clean root with an empty dpkg database.
    let root = tempfile::tempdir().unwrap();
    let admin = root.path().join("var/lib/dpkg");
    for d in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(admin.join(d)).unwrap();
    }
    std::fs::write(admin.join("status"), "").unwrap();
    std::fs::write(admin.join("available"), "").unwrap();
    let outside_db = |t: &BTreeSet<String>| -> BTreeSet<String> {
        t.iter()
            .filter(|p| !p.starts_with("var/lib/dpkg/"))
            .cloned()
            .collect()
    };
    let before = tree(root.path());
    eprintln!("clean root before install: {before:?}");

    let dpkg = || {
        let mut c = StdCommand::new("dpkg");
        c.arg(format!("--root={}", root.path().display()));
        c
    };
    run(dpkg().args(["--force-depends", "--install"]).arg(&deb));
    let installed = tree(root.path());
    for f in expected_files() {
        let f = f.trim_start_matches("./");
        assert!(installed.contains(f), "{f} not installed: {installed:?}");
    }
    assert_eq!(
        stdout(dpkg().args(["--status", "jitterlab"]))
            .lines()
            .find(|l| l.starts_with("Status: ")),
        Some("Status: install ok installed")
    );

    // It runs from there, and says the version this source built.
    let bin = root.path().join("usr/bin/jitterlab");
    let shown = stdout(StdCommand::new(&bin).arg("--version"));
    let ours = Command::cargo_bin("jitterlab")
        .unwrap()
        .arg("--version")
        .output()
        .unwrap()
        .stdout;
    let ours = String::from_utf8(ours).unwrap();
    let commit = |s: &str| s.split(", built ").next().unwrap().to_owned();
    assert_eq!(commit(&shown), commit(&ours), "{shown:?} vs {ours:?}");

    // man finds its pages there.
    if have("man") {
        let manpath = root.path().join("usr/share/man");
        for page in ["jitterlab", "jitterlab-run-cyclic"] {
            let found = stdout(
                StdCommand::new("man")
                    .arg("-M")
                    .arg(&manpath)
                    .args(["-w", page]),
            );
            assert_eq!(
                found.trim_end(),
                manpath
                    .join(format!("man1/{page}.1.gz"))
                    .display()
                    .to_string()
            );
        }
    } else {
        eprintln!("skipping man -w: man is missing (apt-get install man-db)");
    }

    // Purged, the root is as it was outside dpkg's database, and the
    // database knows no jitterlab.
    run(dpkg().args(["--purge", "jitterlab"]));
    let after = tree(root.path());
    eprintln!("clean root after purge: {after:?}");
    assert_eq!(outside_db(&after), outside_db(&before));
    let info: Vec<&String> = after
        .iter()
        .filter(|p| p.starts_with("var/lib/dpkg/info/jitterlab"))
        .collect();
    assert!(info.is_empty(), "{info:?}");
    let status = dpkg().args(["--status", "jitterlab"]).output().unwrap();
    assert!(!status.status.success(), "{status:?}");
}
