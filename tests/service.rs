//! `jitterlab-monitor.service` and its settings file `/etc/default/jitterlab`
//! (`contrib/systemd/`, `contrib/default/`), as the Debian package ships
//! them (`tests/deb.rs` checks that it ships these very bytes):
//!
//! - the unit's directives, exactly: `restore` before the monitor starts,
//!   `Restart=always` under a start limit, the settings file optional and
//!   overriding the unit's own defaults (a database in the state directory,
//!   metrics on loopback at docs/metrics.md's port), root with locked memory
//!   and real-time priorities, wanted by `multi-user.target` (the package
//!   never enables it: `tests/deb.rs`);
//! - `systemd-analyze verify` finds nothing to say about it. verify also
//!   checks that each `Exec*=` binary exists and, with `man` at hand, that
//!   each `man:` page of `Documentation=` does; so it verifies a copy whose
//!   `/usr/bin/jitterlab` is this build's binary (nothing else differs),
//!   with `MANPATH` at the pages this build generates. It skips, saying so,
//!   where `systemd-analyze` is missing (`make test-deps` installs systemd);
//! - the unit's `ExecStartPre=` command line runs with this build;
//! - every `JITTERLAB_*` variable the settings file names is one the
//!   command line or the unit reads, every one the monitor reads is there,
//!   and the values it shows as defaults are the ones the service runs with.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const UNIT: &str = "contrib/systemd/jitterlab-monitor.service";
const SETTINGS: &str = "contrib/default/jitterlab";
/// Where the package installs the binary, as the unit names it.
const INSTALLED_BIN: &str = "/usr/bin/jitterlab";

/// The variables `jitterlab monitor` reads, with the default each stands
/// for (`None`: not given unless set); the test checks the names against
/// the command line's source (`cli_variables()`).
const MONITOR_VARIABLES: [(&str, Option<&str>); 12] = [
    ("JITTERLAB_DB", None), // global; the unit sets it (unit_environment)
    ("JITTERLAB_CPUS", None),
    ("JITTERLAB_INTERVAL", Some("1ms")),
    ("JITTERLAB_SERIES", Some("default")),
    ("JITTERLAB_METRICS", None), // the unit sets it (unit_environment)
    ("JITTERLAB_MAX_LATENCY", None),
    ("JITTERLAB_COMM", None),
    ("JITTERLAB_PID", None),
    ("JITTERLAB_TID", None),
    ("JITTERLAB_PERIOD", None),
    ("JITTERLAB_CONTAINER", None),
    ("JITTERLAB_EXPLAIN", None),
];

/// The flags of `jitterlab monitor` the settings file may mention; the
/// test checks each against `jitterlab monitor --help`.
const MONITOR_FLAGS: [&str; 22] = [
    "--db",
    "--cpus",
    "--interval",
    "--series",
    "--metrics",
    "--max-latency",
    "--keep-windows",
    "--keep-5min",
    "--keep-hourly",
    "--policy",
    "--priority",
    "--window",
    "--threshold",
    "--strict",
    "--no-dma-latency",
    "--progress",
    "--comm",
    "--pid",
    "--tid",
    "--period",
    "--container",
    "--explain",
];

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(MANIFEST_DIR).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The unit's directives in order, as (section, key, value), without
/// comments and blank lines. The unit uses no line continuations (a line
/// ending in `\`), which this reading would not join: asserted.
fn directives(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        assert!(!line.ends_with('\\'), "a continued line: {line}");
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not KEY=VALUE: {line}"));
        out.push((section.clone(), key.to_owned(), value.to_owned()));
    }
    out
}

/// The values of `key` in `section`, in order.
fn values(text: &str, section: &str, key: &str) -> Vec<String> {
    directives(text)
        .into_iter()
        .filter(|(s, k, _)| s == section && k == key)
        .map(|(_, _, v)| v)
        .collect()
}

/// The unit's own `Environment=` assignments, as (name, value).
fn unit_environment(unit: &str) -> Vec<(String, String)> {
    values(unit, "Service", "Environment")
        .iter()
        .map(|v| {
            let (name, value) = v.split_once('=').unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The variables the unit's `Exec*=` lines expand (`$NAME`, `${NAME}`).
fn unit_expanded_variables(unit: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, key, value) in directives(unit) {
        if !key.starts_with("Exec") {
            continue;
        }
        for part in value.split('$').skip(1) {
            let name: String = part
                .trim_start_matches('{')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

/// Every `env = "JITTERLAB_…"` of the command line's source (`src/cli.rs`
/// and everything under `src/cli/`).
fn cli_variables() -> BTreeSet<String> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    let src = Path::new(MANIFEST_DIR).join("src");
    let mut files = vec![src.join("cli.rs")];
    walk(&src.join("cli"), &mut files);
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for part in text.split("env = \"").skip(1) {
            let name = part.split('"').next().unwrap();
            if name.starts_with("JITTERLAB_") {
                out.insert(name.to_owned());
            }
        }
    }
    out
}

/// One assignment of the settings file: commented out (`#NAME=value`, the
/// default or an example) or set (`NAME=value`).
#[derive(Debug)]
struct Assignment {
    name: String,
    value: String,
    set: bool,
}

/// The settings file's assignments. Every other line is blank or a
/// comment (`# …`, the '#' followed by a space or nothing): asserted, so a
/// line systemd would read differently from this does not pass unseen.
fn assignments(text: &str) -> Vec<Assignment> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line == "#" || line.starts_with("# ") {
            continue;
        }
        let (set, body) = match line.strip_prefix('#') {
            Some(body) => (false, body),
            None => (true, line),
        };
        let (name, value) = body
            .split_once('=')
            .unwrap_or_else(|| panic!("neither a comment nor NAME=value: {line:?}"));
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
            "not a variable name: {line:?}"
        );
        // systemd takes the value in double quotes without them.
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        out.push(Assignment {
            name: name.to_owned(),
            value: value.to_owned(),
            set,
        });
    }
    out
}

fn have(tool: &str) -> bool {
    StdCommand::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn unit_has_exactly_the_directives_that_matter() {
    let unit = read(UNIT);
    let expected: Vec<(String, String, String)> = [
        ("Unit", "Description", "jitterlab real-time latency monitor"),
        (
            "Unit",
            "Documentation",
            "man:jitterlab-monitor(1) man:jitterlab-restore(1)",
        ),
        (
            "Unit",
            "Documentation",
            "file:/usr/share/doc/jitterlab/monitor-service.md",
        ),
        ("Unit", "After", "time-sync.target"),
        ("Unit", "StartLimitIntervalSec", "10min"),
        ("Unit", "StartLimitBurst", "5"),
        ("Service", "Type", "exec"),
        ("Service", "LimitMEMLOCK", "infinity"),
        ("Service", "LimitRTPRIO", "99"),
        ("Service", "StateDirectory", "jitterlab"),
        ("Service", "WorkingDirectory", "/var/lib/jitterlab"),
        (
            "Service",
            "Environment",
            "JITTERLAB_DB=/var/lib/jitterlab/monitor.db",
        ),
        ("Service", "Environment", "JITTERLAB_METRICS=127.0.0.1:9464"),
        ("Service", "EnvironmentFile", "-/etc/default/jitterlab"),
        ("Service", "ExecStartPre", "/usr/bin/jitterlab restore"),
        (
            "Service",
            "ExecStart",
            "/usr/bin/jitterlab monitor $JITTERLAB_MONITOR_ARGS",
        ),
        ("Service", "ExecStopPost", "-/usr/bin/jitterlab restore"),
        ("Service", "TimeoutStopSec", "30s"),
        ("Service", "Restart", "always"),
        ("Service", "RestartSec", "10s"),
        ("Service", "RestartPreventExitStatus", "3"),
        ("Install", "WantedBy", "multi-user.target"),
    ]
    .iter()
    .map(|(s, k, v)| (s.to_string(), k.to_string(), v.to_string()))
    .collect();
    assert_eq!(directives(&unit), expected);

    // What those values must agree with elsewhere. The database lies in the
    // state directory systemd makes.
    let state = values(&unit, "Service", "StateDirectory");
    let env = unit_environment(&unit);
    let db = &env.iter().find(|(n, _)| n == "JITTERLAB_DB").unwrap().1;
    assert_eq!(
        Path::new(db).parent().unwrap(),
        Path::new("/var/lib").join(&state[0])
    );
    // The metrics listen on loopback, at the port docs/metrics.md shows.
    let metrics = &env
        .iter()
        .find(|(n, _)| n == "JITTERLAB_METRICS")
        .unwrap()
        .1;
    let (host, port) = metrics.rsplit_once(':').unwrap();
    assert_eq!(host, "127.0.0.1");
    assert!(
        read("docs/metrics.md").contains(&format!("--metrics :{port}")),
        "docs/metrics.md does not use port {port}"
    );
    // The settings file, and the page Documentation= names, are where the
    // package installs them.
    let cargo = read("Cargo.toml");
    for asset in [
        r#"["contrib/default/jitterlab", "etc/default/jitterlab", "644"]"#,
        r#"["docs/monitor-service.md", "usr/share/doc/jitterlab/monitor-service.md", "644"]"#,
    ] {
        assert!(cargo.contains(asset), "Cargo.toml lacks the asset {asset}");
    }
    assert!(cargo.contains(r#"unit-name = "jitterlab-monitor", enable = false, start = false"#));
}

/// The `man:` pages the unit's `Documentation=` names.
fn documented_pages(unit: &str) -> Vec<String> {
    values(unit, "Unit", "Documentation")
        .iter()
        .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|uri| {
            let page = uri.strip_prefix("man:")?;
            Some(page.strip_suffix("(1)").unwrap_or(page).to_owned())
        })
        .collect()
}

#[test]
fn systemd_analyze_verify_finds_nothing_to_say() {
    if !have("systemd-analyze") {
        eprintln!(
            "skipping systemd-analyze verify: systemd-analyze is missing \
             (apt-get install systemd)"
        );
        return;
    }
    let unit = read(UNIT);
    let built = env!("CARGO_BIN_EXE_jitterlab");
    let dir = tempfile::tempdir().unwrap();

    // The man pages this build generates, where man looks (MANPATH/man1).
    let docs = dir.path().join("docs");
    Command::cargo_bin("jitterlab")
        .unwrap()
        .arg("__generate-docs")
        .arg(&docs)
        .assert()
        .success();
    let man1 = dir.path().join("man/man1");
    std::fs::create_dir_all(&man1).unwrap();
    for e in std::fs::read_dir(docs.join("man")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), man1.join(e.file_name())).unwrap();
    }
    // Every page the unit names is one this build generates.
    let all_pages = true;
    for page in documented_pages(&unit) {
        assert!(
            man1.join(format!("{page}.1")).is_file(),
            "Documentation= names man:{page}(1), which this build does not generate"
        );
    }

    // The copy: /usr/bin/jitterlab is this build's binary, in Exec* lines
    // only; every other line is the unit's own.
    let copy = unit.replace(INSTALLED_BIN, built);
    let (ours, theirs): (Vec<&str>, Vec<&str>) = unit
        .lines()
        .zip(copy.lines())
        .filter(|(a, b)| a != b)
        .unzip();
    assert_eq!(ours.len(), 3, "{ours:?}");
    for (a, b) in ours.iter().zip(&theirs) {
        assert!(
            a.starts_with("Exec") && b.replace(built, INSTALLED_BIN) == *a,
            "{a:?} became {b:?}"
        );
    }
    let path = dir.path().join("jitterlab-monitor.service");
    std::fs::write(&path, &copy).unwrap();

    let verify = |path: &Path| {
        let man = all_pages && have("man");
        let out = StdCommand::new("systemd-analyze")
            .arg("verify")
            .arg(format!("--man={}", if man { "yes" } else { "no" }))
            .arg(path)
            .env("MANPATH", dir.path().join("man"))
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), said)
    };
    let (ok, said) = verify(&path);
    assert!(ok && said.is_empty(), "systemd-analyze verify: {said}");

    // And verify does speak up here, about an unknown key (exit 0, so
    // only its words show it): the check above can fail.
    let bad_dir = dir.path().join("bad");
    std::fs::create_dir(&bad_dir).unwrap();
    let bad = bad_dir.join("jitterlab-monitor.service");
    std::fs::write(&bad, copy.replace("LimitRTPRIO=", "LimitRTPRIORITY=")).unwrap();
    let (_, said) = verify(&bad);
    assert!(
        said.contains("Unknown key 'LimitRTPRIORITY'"),
        "systemd-analyze verify said: {said:?}"
    );
}

#[test]
fn exec_start_pre_runs_restore_with_this_build() {
    let unit = read(UNIT);
    let pre = values(&unit, "Service", "ExecStartPre");
    let argv: Vec<&str> = pre[0].split_whitespace().collect();
    assert_eq!(argv[0], INSTALLED_BIN);
    // A journal of its own (restore would read /run/jitterlab's as root):
    // none there, nothing to do, exit 0, which lets the monitor start.
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("jitterlab")
        .unwrap()
        .args(&argv[1..])
        .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
        .assert()
        .code(0)
        .stdout("nothing to restore\n");
}

#[test]
fn settings_file_names_only_variables_jitterlab_reads() {
    let unit = read(UNIT);
    let text = read(SETTINGS);
    let found = assignments(&text);

    // It sets nothing: the service runs on its defaults until a person
    // uncomments a line. (A line set empty, NAME=, would do the same:
    // jitterlab unsets empty JITTERLAB_* variables before it parses.)
    let set: Vec<&Assignment> = found.iter().filter(|a| a.set).collect();
    assert!(set.is_empty(), "{set:?}");

    // Each variable named is one the command line or the unit reads, named
    // once.
    let mut readers: BTreeSet<String> = cli_variables();
    readers.extend(MONITOR_VARIABLES.iter().map(|(n, _)| n.to_string()));
    let expanded = unit_expanded_variables(&unit);
    assert_eq!(
        expanded,
        BTreeSet::from(["JITTERLAB_MONITOR_ARGS".to_owned()])
    );
    readers.extend(expanded.iter().cloned());
    let names: Vec<&str> = found.iter().map(|a| a.name.as_str()).collect();
    for name in &names {
        assert!(
            readers.contains(*name),
            "{SETTINGS} names {name}, which neither jitterlab nor the unit reads"
        );
    }
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");

    // Every variable the monitor or the unit reads is there.
    let mut wanted: BTreeSet<&str> = MONITOR_VARIABLES.iter().map(|(n, _)| *n).collect();
    wanted.extend(expanded.iter().map(String::as_str));
    assert_eq!(unique, wanted);

    // A default shown is the one the service runs with: the unit's own
    // Environment=, else the monitor's.
    let value = |name: &str| &found.iter().find(|a| a.name == name).unwrap().value;
    let env = unit_environment(&unit);
    for (name, unit_value) in &env {
        assert_eq!(value(name), unit_value, "{name}");
    }
    for (name, default) in MONITOR_VARIABLES {
        if let Some(default) = default {
            assert_eq!(value(name), default, "{name}");
        }
    }
    // Every flag it mentions is one of the monitor's.
    let mentioned: BTreeSet<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--"))
        .collect();
    for flag in &mentioned {
        assert!(
            MONITOR_FLAGS.contains(flag),
            "{SETTINGS} mentions {flag}, which jitterlab monitor does not have"
        );
    }
    assert!(mentioned.contains("--keep-windows"), "{mentioned:?}");
}
