//! Deployment `container` from the command line: the refusals (exit 2,
//! nothing changed), and real containers — a run whose probe got every
//! real-time default inside (checked from the result and from the host's
//! own `/proc`), with its windows stored in its cell; `jitterlab restore`
//! after a `kill -9` of the host process removing the container and the
//! parent cgroup; a bench with host and container cells side by side; a
//! kind with no container code of its own (the test-only `sleep` probe)
//! measured in a container from the cell it hands over.
//!
//! The real tests need root and a working podman (CI installs it); they
//! skip, saying why, without them — and, loudly, on a host whose cgroup
//! layout keeps every container from starting (`jitterlab check`'s
//! `container-cgroups` finding and its fix).

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("tests.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"));
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The one stderr line of a refused run (exit 2).
fn refusal(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    text(&out.stderr).trim_end().to_string()
}

#[test]
fn refusals_name_the_reason_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(refusal(jl(dir.path()).args(["run", "timerlat", "--deployment", "container"]))
        .starts_with("jitterlab: error: --deployment container: timerlat is N/A in a container: its tracer is the host kernel's"));
    assert_eq!(
        refusal(jl(dir.path()).args([
            "run",
            "cyclic",
            "--deployment",
            "container",
            "--engine",
            "lxc"
        ])),
        "jitterlab: error: invalid value 'lxc' for '--engine <ENGINE>' (see jitterlab --help)"
    );
    assert_eq!(
        refusal(jl(dir.path()).args(["run", "cyclic", "--engine", "docker"])),
        "jitterlab: error: --engine applies only to --deployment container; add it, or drop --engine"
    );
    assert_eq!(
        refusal(jl(dir.path()).args(["run", "cyclic", "--deployment", "container", "--histogram", "h.txt"])),
        "jitterlab: error: --deployment container: --histogram is written from the probe threads' own histograms, which stay in the container; the stored histograms are in the database (jitterlab report) and --json; drop --histogram, or use --deployment host"
    );
    // What keeps a probe out of a container comes before the engine.
    assert_eq!(
        refusal(
            jl(dir.path())
                .env("PATH", dir.path())
                .args(["run", "response", "--source", "udp", "--deployment", "container"])
        ),
        "jitterlab: error: response with source udp is N/A in a container: it makes two network namespaces and a veth pair, which a container may not; use source eventfd, or measure it on the host"
    );
    // No engine on PATH: what to install.
    assert_eq!(
        refusal(jl(dir.path()).env("PATH", dir.path()).args(["run", "cyclic", "--deployment", "container"])),
        "jitterlab: error: deployment container needs a container engine, and none works here (podman: not installed; docker: not installed); apt-get install podman"
    );
    assert_eq!(
        refusal(jl(dir.path()).env("PATH", dir.path()).args([
            "run",
            "chase",
            "--deployment",
            "container",
            "--engine",
            "podman"
        ])),
        "jitterlab: error: --engine podman: podman is not installed; apt-get install podman"
    );
    // The command a container cell's jitterlab runs takes only what a
    // container cell hands over.
    assert_eq!(
        refusal(jl(dir.path()).args(["__cell", "run cyclic"])),
        "jitterlab: error: __cell: not the JSON of a container cell (expected value at line 1 column 1); __cell runs what a container cell hands over, use `jitterlab run` or `jitterlab bench`"
    );
    // A bench on a host that cannot run containers skips its container
    // cells, saying why, and runs the others.
    let spec = dir.path().join("b.toml");
    std::fs::write(&spec, "duration = \"1s\"\ndeployments = [\"host\", \"container\"]\n[[probe]]\nkind = \"cyclic\"\n").unwrap();
    let out = jl(dir.path())
        .env("PATH", dir.path())
        .arg("bench")
        .arg(&spec)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let plan = text(&out.stdout);
    let why = "deployment container needs a container engine, and none works here (podman: not installed; docker: not installed); apt-get install podman";
    assert!(plan.contains("  1/2  default/idle/host/cyclic  "), "{plan}");
    assert!(
        plan.contains(&format!("\n  2/2 will be skipped: {why}\n")),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "\n  containers: every container cell will be skipped: {why}\n"
        )),
        "{plan}"
    );
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(left, ["b.toml"], "a refusal writes nothing");
}

/// Why real containers cannot be tested here, or `None`: not root, no
/// working podman, or a host quirk that stops every container (said
/// loudly, with its fix).
fn cannot_run_containers() -> Option<String> {
    if text(&StdCommand::new("id").arg("-u").output().unwrap().stdout).trim() != "0" {
        return Some("real containers need root".into());
    }
    let dir = tempfile::tempdir().unwrap();
    let out = jl(dir.path()).args(["check", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = |id: &str| {
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == id)
            .cloned()
            .unwrap()
    };
    let engine = finding("container-engine");
    if engine["severity"] != "ok" || !engine["summary"].as_str().unwrap().contains("uses podman") {
        return Some(format!("no working podman: {}", engine["summary"]));
    }
    let cgroups = finding("container-cgroups");
    if cgroups["severity"] != "ok" {
        return Some(format!(
            "!!! THIS HOST CANNOT START ANY CONTAINER: {} — fix: {} !!!",
            cgroups["summary"].as_str().unwrap(),
            cgroups["fix"].as_str().unwrap()
        ));
    }
    None
}

/// Waits (at most ten minutes) while another jitterlab holds the machine
/// lock — a bench of another checkout on a shared machine — so a real
/// test is not refused for it.
fn wait_for_the_machine() {
    let lock = Path::new("/run/jitterlab/lock");
    let deadline = Instant::now() + Duration::from_secs(600);
    while lock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
    }
}

macro_rules! need_containers {
    () => {
        if let Some(why) = cannot_run_containers() {
            eprintln!("skipping: {why}");
            return;
        }
        wait_for_the_machine();
    };
}

/// True when podman knows a container called `name`.
fn container_exists(name: &str) -> bool {
    StdCommand::new("podman")
        .args(["container", "exists", name])
        .status()
        .unwrap()
        .success()
}

/// Every directory called `group` directly in a cgroup hierarchy.
fn cgroup_dirs(group: &str) -> Vec<PathBuf> {
    std::fs::read_dir("/sys/fs/cgroup")
        .unwrap()
        .flatten()
        .map(|e| e.path().join(group))
        .filter(|p| p.exists())
        .collect()
}

#[test]
#[serial]
fn a_container_run_is_real_time_inside_and_stored_in_its_cell() {
    need_containers!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = jl(dir.path())
        .args([
            "run",
            "cyclic",
            "--deployment",
            "container",
            "--duration",
            "2s",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("jitterlab: container: running cyclic in podman container jitterlab-"),
        "{err}"
    );
    let r = read_json(&json);
    let cpu = r["params"]["cpus"][0].as_u64().unwrap();

    // Every real-time default, as the probe inside reported it.
    assert_eq!(r["realtime"]["realtime"], true, "{}", r["realtime"]);
    let default = |name: &str| {
        r["realtime"]["defaults"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {}", r["realtime"]))
    };
    for name in [
        "scheduler",
        "affinity",
        "mlockall",
        "cpu_dma_latency",
        "prefault",
        "clock",
    ] {
        assert_eq!(default(name)["applied"], true, "{}", default(name));
    }
    assert_eq!(
        default("scheduler")["detail"],
        "SCHED_FIFO priority 95 verified with sched_getscheduler"
    );
    assert_eq!(
        default("affinity")["detail"],
        format!("pinned to CPU {cpu}")
    );
    assert_eq!(
        default("cpu_dma_latency")["detail"],
        "/dev/cpu_dma_latency held open at 0 us for the whole run"
    );

    // And as the host saw the container's probe thread while it ran.
    let c = &r["detail"]["container"];
    assert_eq!(c["engine"], "podman");
    assert_eq!(c["cpus"], serde_json::json!([cpu]));
    let view = &c["host_view"];
    let thread = &view["threads"][0];
    assert_eq!(thread["name"], format!("cyclic-cpu{cpu}"));
    assert_eq!(
        (thread["policy"].as_str(), thread["priority"].as_u64()),
        (Some("SCHED_FIFO"), Some(95))
    );
    assert_eq!(thread["cpus"], cpu.to_string());
    assert!(view["locked_kb"].as_u64().unwrap() > 0, "{view}");
    assert_eq!(view["pm_qos_us"], 0, "the PM QoS request held from inside");
    assert_eq!(r["threads"][0]["tid"], thread["host_tid"]);
    assert!(
        r["threads"][0]["counters"]["host time slices"]
            .as_u64()
            .unwrap()
            > 0
    );
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    for flag in [
        "--cap-add",
        "SYS_NICE",
        "IPC_LOCK",
        "--pull=never",
        "--rm",
        "--device",
    ] {
        assert!(args.contains(&flag), "{flag} in {args:?}");
    }
    // Inside ran the run's one cell, handed over as JSON: its probe on its
    // CPU, on the container's host, streamed and not stored there.
    let at = args.iter().position(|a| *a == "__cell").unwrap();
    assert_eq!(at + 2, args.len(), "{args:?}");
    let cell: serde_json::Value = serde_json::from_str(args[at + 1]).unwrap();
    assert_eq!(cell["spec"]["deployments"], serde_json::json!(["host"]));
    assert_eq!(cell["spec"]["probes"][0]["kind"], "cyclic");
    assert_eq!(cell["spec"]["duration_ns"], 2_000_000_000u64);
    assert_eq!(
        cell["spec"]["configurations"][0]["probe_cpus"],
        serde_json::json!([cpu])
    );
    assert_eq!(cell["stop"], "duration");

    // The windows are in the run's cell, which says where it ran.
    let db = rusqlite::Connection::open(dir.path().join("tests.db")).unwrap();
    let (deployment, windows): (String, i64) = db
        .query_row(
            "SELECT c.deployment, (SELECT count(*) FROM windows w WHERE w.cell_id = c.id) FROM cells c",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((deployment.as_str(), windows), ("container", 2));

    // Nothing is left: no container, no parent cgroup, no journal.
    assert!(!container_exists(c["name"].as_str().unwrap()));
    if let Some(parent) = c["cgroup_parent"].as_str() {
        assert_eq!(
            cgroup_dirs(parent.trim_start_matches('/')),
            Vec::<PathBuf>::new()
        );
    }
    assert!(!dir.path().join("journal.json").exists());
}

#[test]
#[serial]
fn restore_after_kill_9_removes_the_container_and_its_cgroup() {
    need_containers!();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let mut host = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_DB", dir.path().join("tests.db"))
        .env("JITTERLAB_JOURNAL", &journal)
        .args([
            "run",
            "cyclic",
            "--deployment",
            "container",
            "--duration",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let name = format!("jitterlab-{}-1", host.id());
    // Wait until the container measures (its first window is stored).
    let deadline = Instant::now() + Duration::from_secs(120);
    let db_path = dir.path().join("tests.db");
    loop {
        let rows: i64 = rusqlite::Connection::open(&db_path)
            .and_then(|db| db.query_row("SELECT count(*) FROM windows", [], |r| r.get(0)))
            .unwrap_or(0);
        if rows > 0 && container_exists(&name) {
            break;
        }
        assert!(Instant::now() < deadline, "the container never measured");
        assert!(
            host.try_wait().unwrap().is_none(),
            "the host run ended early"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let doc = read_json(&journal);
    let group = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "container-cgroup")
        .map(|e| {
            PathBuf::from(e["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string()
        });
    if let Some(g) = &group {
        assert!(!cgroup_dirs(g).is_empty());
    }
    host.kill().unwrap(); // SIGKILL
    host.wait().unwrap();
    assert!(
        container_exists(&name),
        "the container outlives a killed host"
    );

    let out = jl(dir.path()).arg("restore").output().unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("removed container {name} (podman)")),
        "{said}"
    );
    assert!(!container_exists(&name));
    if let Some(g) = &group {
        assert!(
            said.contains(&format!("removed the containers' cgroup {g}")),
            "{said}"
        );
        assert_eq!(cgroup_dirs(g), Vec::<PathBuf>::new());
    }
    assert!(!journal.exists());
}

#[test]
#[serial]
fn a_bench_runs_host_and_container_cells_side_by_side() {
    need_containers!();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("side.toml");
    std::fs::write(
        &spec,
        "duration = \"1s\"\nwarmup = \"0\"\ndeployments = [\"host\", \"container\"]\n[[probe]]\nkind = \"cyclic\"\n[[probe]]\nkind = \"timerlat\"\n",
    )
    .unwrap();
    let json = dir.path().join("b.json");
    let out = jl(dir.path())
        .arg("bench")
        .arg(&spec)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}{stdout}", text(&out.stderr));
    let b = read_json(&json);
    let cells: Vec<(String, String)> = b["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!(
                    "{}/{}",
                    c["key"]["deployment"].as_str().unwrap(),
                    c["key"]["probe"].as_str().unwrap()
                ),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let status = |k: &str| cells.iter().find(|(n, _)| n == k).map(|(_, s)| s.as_str());
    assert_eq!(status("host/cyclic"), Some("completed"), "{cells:?}");
    assert_eq!(status("container/cyclic"), Some("completed"), "{cells:?}");
    assert_eq!(status("container/timerlat"), Some("skipped"), "{cells:?}");
    // The latency table: each probe's host and container rows adjacent.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("default/idle/"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        &rows[..4],
        [
            "default/idle/host/cyclic",
            "default/idle/container/cyclic",
            "default/idle/host/timerlat",
            "default/idle/container/timerlat"
        ],
        "{stdout}"
    );
}

#[test]
#[serial]
fn a_roundtrips_controller_runs_real_time_in_a_container_and_hands_every_cycle_over() {
    need_containers!();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = jl(dir.path())
        .args([
            "run",
            "roundtrip",
            "--deployment",
            "container",
            "--duration",
            "3s",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    // Exit 1 only for samples beyond the budget: a noisy machine may have
    // some; the mechanics below hold either way.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(
        err.contains("jitterlab: container: running the controller in podman container jitterlab-"),
        "{err}"
    );
    let r = read_json(&json);
    let d = &r["detail"];
    let c = &d["container"];
    assert_eq!(c["engine"], "podman");
    let cpu = r["params"]["cpus"][0].as_u64().unwrap();
    assert_eq!(c["cpus"], serde_json::json!([cpu]));
    // The controller inside had every real-time default.
    let rt = &c["realtime"];
    assert_eq!(rt["realtime"], true, "{rt}");
    for d in rt["defaults"].as_array().unwrap() {
        if d["required"] == true {
            assert_eq!(d["applied"], true, "{d}");
        }
    }
    // It joined the controller's namespace and the samples' directory.
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.iter()
            .any(|a| a.starts_with("ns:/run/netns/jl") && a.ends_with("pl")),
        "{args:?}"
    );
    let cell: serde_json::Value = serde_json::from_str(args.last().unwrap()).unwrap();
    let roundtrip = &cell["spec"]["probes"][0]["roundtrip"];
    assert_eq!(roundtrip["role"], "controller", "{cell}");
    assert_eq!(roundtrip["samples_to"], "/jl/samples", "{cell}");
    assert!(
        roundtrip["interface"]
            .as_str()
            .is_some_and(|i| i.starts_with("jl") && i.ends_with('p')),
        "{cell}"
    );
    // Every cycle the controller ran came over: one latency sample per
    // cycle it published, each handled change with its T2→T3, and the
    // round trips complete with T1→T2 and T3→T4rx on the one clock.
    let m = &r["threads"][0]["metrics"];
    let published = d["controller"]["published"].as_i64().unwrap();
    let latency = m["latency"]["count"].as_i64().unwrap();
    assert!(
        published >= latency && latency > 300,
        "{published} {latency}"
    );
    assert_eq!(
        m["controller"]["count"], d["controller"]["handled"],
        "{}",
        d["controller"]
    );
    let trips = d["budget"]["samples"].as_i64().unwrap();
    assert!(trips > 100, "{trips}");
    assert_eq!(m["screw-to-screw"]["count"].as_i64(), Some(trips));
    assert!(m["t1-t2"]["min"].as_i64().unwrap() >= 0);
    assert!(m["t3-t4rx"]["min"].as_i64().unwrap() >= 0);
    // The cell says where it ran, and nothing is left.
    let db = rusqlite::Connection::open(dir.path().join("tests.db")).unwrap();
    let deployment: String = db
        .query_row("SELECT deployment FROM cells", [], |row| row.get(0))
        .unwrap();
    assert_eq!(deployment, "container");
    assert!(!container_exists(c["name"].as_str().unwrap()));
    assert!(!dir.path().join("journal.json").exists());
}

#[cfg(feature = "test-probe")]
#[test]
#[serial]
fn a_kind_with_no_container_code_of_its_own_measures_in_a_container() {
    need_containers!();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("sleep.toml");
    std::fs::write(
        &spec,
        "duration = \"1s\"\nwarmup = \"0\"\ndeployments = [\"container\"]\n[[probe]]\nkind = \"sleep\"\n",
    )
    .unwrap();
    let json = dir.path().join("b.json");
    let out = jl(dir.path())
        .arg("bench")
        .arg(&spec)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let b = read_json(&json);
    let cell = &b["cells"][0];
    assert_eq!(cell["key"]["deployment"], "container");
    assert_eq!(cell["status"], "completed", "{cell}");
    let r = &cell["result"];
    assert_eq!(r["realtime"]["realtime"], true, "{}", r["realtime"]);
    assert!(
        r["threads"][0]["metrics"]["oversleep"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Its cell went over as it is in the spec.
    let args = r["detail"]["container"]["args"].as_array().unwrap();
    assert_eq!(args[args.len() - 2], "__cell");
    let handed: serde_json::Value =
        serde_json::from_str(args.last().unwrap().as_str().unwrap()).unwrap();
    assert_eq!(handed["spec"]["probes"][0]["kind"], "sleep");
    assert_eq!(handed["spec"]["probes"], b["probes"]);
}
