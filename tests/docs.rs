//! `jitterlab --version`, and the man pages and shell completions the hidden
//! `jitterlab __generate-docs DIR` writes for the Debian package: one page
//! for every command `--help` lists (nested ones included, hidden ones
//! not), each page clean under groff's warnings, a bash completion that
//! bash accepts and that completes exactly the commands `--help` lists, and
//! zsh and fish completions that name every command.
//!
//! The list of commands is read from `--help` itself, so the test follows
//! the command line as it grows; groff's check skips, saying so, where
//! groff is missing (`make test-deps` installs it).
//!
//! The design rules cited here are in `docs/design.md`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;

fn jl() -> Command {
    Command::cargo_bin("jitterlab").expect("the jitterlab binary")
}

/// The commands `jitterlab <path> --help` lists under "Commands:", without
/// clap's `help`.
fn listed_commands(path: &[&str]) -> Vec<String> {
    let out = jl().args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "{path:?} --help: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let Some((_, after)) = text.split_once("\nCommands:\n") else {
        return Vec::new();
    };
    after
        .lines()
        .take_while(|l| !l.trim().is_empty())
        // A command's line starts with two spaces and its name; a wrapped
        // description is indented further.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command path `--help` shows, depth first: `[]`, `["run"]`,
/// `["run", "cyclic"]`, ….
fn command_paths() -> Vec<Vec<String>> {
    fn walk(path: Vec<String>, out: &mut Vec<Vec<String>>) {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let subs = listed_commands(&args);
        out.push(path.clone());
        for s in subs {
            let mut p = path.clone();
            p.push(s);
            walk(p, out);
        }
    }
    let mut out = Vec::new();
    walk(Vec::new(), &mut out);
    out
}

fn page_name(path: &[String]) -> String {
    std::iter::once("jitterlab".to_owned())
        .chain(path.iter().cloned())
        .collect::<Vec<_>>()
        .join("-")
}

fn file_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn version_names_version_commit_and_build_day() {
    let out = jl().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let prefix = format!("jitterlab {} (commit ", env!("CARGO_PKG_VERSION"));
    let rest = text
        .strip_prefix(&prefix)
        .and_then(|r| r.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{text:?}"));
    let (commit, day) = rest.split_once(", built ").expect(&text);
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    // This source is a git checkout when the tests run from it; the hash
    // is the one checked out (a test run right after a commit).
    let head = StdCommand::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short=7",
            "HEAD",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_owned());
    match head {
        Some(head) => assert_eq!(hash, head, "{text:?}"),
        None => assert_eq!(commit, "unknown", "{text:?}"),
    }
    let d = day.as_bytes();
    assert!(
        d.len() == 10
            && d.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }),
        "build day {day:?}"
    );
    // `-V` says the same.
    jl().arg("-V").assert().success().stdout(text);
}

#[test]
fn generated_man_pages_are_one_per_command_and_clean() {
    let tmp = tempfile::tempdir().unwrap();
    jl().arg("__generate-docs")
        .arg(tmp.path())
        .assert()
        .success()
        .stdout("")
        .stderr("");
    let paths = command_paths();
    let expected: BTreeSet<String> = paths
        .iter()
        .map(|p| format!("{}.1", page_name(p)))
        .collect();
    // The walk found the nested commands, not just the top level.
    for known in [
        "jitterlab.1",
        "jitterlab-run.1",
        "jitterlab-run-cyclic.1",
        "jitterlab-bench.1",
    ] {
        assert!(expected.contains(known), "{known} in {expected:?}");
    }
    let man = tmp.path().join("man");
    assert_eq!(file_names(&man), expected);
    for p in &paths {
        let name = page_name(p);
        let page = std::fs::read_to_string(man.join(format!("{name}.1"))).unwrap();
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            page.lines()
                .any(|l| l.starts_with(&format!(".TH {name} 1 "))
                    && l.ends_with(&format!(" \"jitterlab {version}\" \"jitterlab manual\""))),
            "{name}: no .TH line naming it:\n{page}"
        );
    }
    let groff = StdCommand::new("groff")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !groff {
        eprintln!("skipping the groff check of the man pages: groff is missing (apt-get install groff-base)");
        return;
    }
    for p in &paths {
        let page = man.join(format!("{}.1", page_name(p)));
        // -k: preconv (the pages are UTF-8, as man-db reads them);
        // -ww: every warning; -z: no output, only the diagnostics.
        let out = StdCommand::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", page.display());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "groff warns about {}",
            page.display()
        );
    }
}

#[test]
fn generated_completions_name_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    jl().arg("__generate-docs")
        .arg(tmp.path())
        .assert()
        .success();
    let dir = tmp.path().join("completions");
    assert_eq!(
        file_names(&dir),
        BTreeSet::from(["jitterlab.bash", "_jitterlab", "jitterlab.fish"].map(String::from))
    );
    let bash = dir.join("jitterlab.bash");
    let out = StdCommand::new("bash")
        .arg("-n")
        .arg(&bash)
        .output()
        .unwrap();
    assert!(out.status.success(), "bash -n: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    // Bash completes exactly the commands --help lists, at each level
    // that has any (the words that are not flags).
    let zsh = std::fs::read_to_string(dir.join("_jitterlab")).unwrap();
    let fish = std::fs::read_to_string(dir.join("jitterlab.fish")).unwrap();
    assert!(zsh.starts_with("#compdef jitterlab\n"), "{zsh:.60}");
    for path in command_paths() {
        let subs = listed_commands(&path.iter().map(String::as_str).collect::<Vec<_>>());
        if subs.is_empty() {
            continue;
        }
        // The words go to bash as arguments, never into the script's text
        // (design rule 6).
        let words: Vec<String> = std::iter::once("jitterlab".to_owned())
            .chain(path.iter().cloned())
            .chain([String::new()])
            .collect();
        let prev = path.last().map_or("jitterlab", String::as_str);
        let out = StdCommand::new("bash")
            .args([
                "-c",
                r#"source "$1"; prev=$2; shift 2; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _jitterlab jitterlab '' "$prev"; printf '%s\n' "${COMPREPLY[@]}""#,
                "bash",
            ])
            .arg(&bash)
            .arg(prev)
            .args(&words)
            .output()
            .unwrap();
        assert!(out.status.success(), "{path:?}: {out:?}");
        let completed: BTreeSet<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|w| !w.starts_with('-'))
            .map(str::to_owned)
            .collect();
        let expected: BTreeSet<String> = subs.iter().cloned().collect();
        assert_eq!(completed, expected, "bash completion after {path:?}");
        for s in &subs {
            assert!(zsh.contains(&format!("'{s}:")), "zsh completion lacks {s}");
            assert!(
                fish.contains(&format!(" -a \"{s}\" ")),
                "fish completion lacks {s}"
            );
        }
    }
    // Hidden, internal commands and flags are not offered.
    let bash = std::fs::read_to_string(&bash).unwrap();
    for hidden in [
        "__net-sink",
        "__cell",
        "__generate-docs",
        "__synth-capture",
        "--stream",
        "--calibration",
        "--samples-to",
    ] {
        for (shell, text) in [("bash", &bash), ("zsh", &zsh), ("fish", &fish)] {
            assert!(!text.contains(hidden), "{shell} completion offers {hidden}");
        }
    }
}

#[test]
fn generate_docs_into_an_unwritable_place_says_what_to_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    jl().arg("__generate-docs")
        .arg(&file)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "jitterlab: error: cannot create {}/man (choose a writable DIR): Not a directory (os error 20)\n",
            file.display()
        ));
}
