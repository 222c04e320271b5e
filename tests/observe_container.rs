//! `run observe --container NAME --comm TASK` and `monitor --container`:
//! a task inside a container, found through the engine among the
//! container's processes only and observed from the host.
//!
//! The refusals need nothing but the binary (no engine: an empty `PATH`);
//! the live test needs root, podman and a C compiler that links
//! statically (skipped aloud otherwise): it builds a `FROM scratch` image
//! of a static helper whose thread sleeps to an absolute 1 ms schedule,
//! runs it, starts a host thread of the same name beside it, and finds the
//! container's thread, with a 1 ms period's count of cycles.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

/// The helper: its thread named by its first argument, waking every 1 ms
/// on an absolute `CLOCK_MONOTONIC` schedule until killed.
const PERIODIC_C: &str = r#"#include <sys/prctl.h>
#include <time.h>
int main(int argc, char **argv) {
    prctl(PR_SET_NAME, argc > 1 ? argv[1] : "jl-periodic", 0, 0, 0);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    for (;;) {
        t.tv_nsec += 1000000;
        if (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, 0);
    }
}
"#;

fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("o.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .current_dir(dir);
    c
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn without_an_engine_or_with_a_host_id_a_container_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let empty = d.join("bin");
    std::fs::create_dir(&empty).unwrap();
    let o = jl(d)
        .env("PATH", &empty)
        .args(["run", "observe", "--container", "plc-box", "--comm", "plc"])
        .args(["--duration", "1s", "--no-db"])
        .output()
        .unwrap();
    assert_eq!(
        (o.status.code(), stderr(&o)),
        (
            Some(2),
            "jitterlab: error: --container plc-box: finding a container needs a container engine, and none works here (podman: not installed; docker: not installed); apt-get install podman\n".into()
        )
    );
    let o = jl(d)
        .args(["run", "observe", "--container", "plc-box", "--pid", "1"])
        .args(["--duration", "1s", "--no-db"])
        .output()
        .unwrap();
    assert_eq!(
        (o.status.code(), stderr(&o)),
        (
            Some(2),
            "jitterlab: error: --container plc-box takes --comm NAME: the ids inside a container are not the host's, and a recording has no container\n".into()
        )
    );
    let o = jl(d)
        .args(["monitor", "--container", "plc-box"])
        .output()
        .unwrap();
    assert_eq!(
        (o.status.code(), stderr(&o)),
        (
            Some(2),
            "jitterlab: error: --container plc-box takes --comm NAME: the thread to monitor in it\n"
                .into()
        )
    );
}

fn podman(args: &[&str]) -> std::process::Output {
    StdCommand::new("podman")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Why the live test cannot run here, if it cannot.
fn cannot_run() -> Option<String> {
    if jitterlab_sys::effective_uid() != 0 {
        return Some("tracing the kernel and running podman need root".into());
    }
    match StdCommand::new("podman").arg("version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("podman does not work: {}", stderr(&o).trim())),
        Err(e) => Some(format!("podman is not installed ({e})")),
    }
}

/// The container, its image and the host helper, removed when dropped.
struct Pod {
    name: String,
    image: String,
    host: Option<std::process::Child>,
}

impl Drop for Pod {
    fn drop(&mut self) {
        if let Some(c) = self.host.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        podman(&["rm", "-f", "-t", "0", &self.name]);
        podman(&["rm", "-f", &format!("{}-stopped", self.name)]);
        podman(&["rmi", "-f", &self.image]);
    }
}

/// `jitterlab ARGS` on the real machine, run again while another
/// jitterlab holds it (a bench beside the tests), for up to two minutes.
fn jl_waiting(dir: &Path, args: &[&str]) -> std::process::Output {
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let o = jl(dir).args(args).output().unwrap();
        let err = stderr(&o);
        if !(err.contains("machine lock") || err.contains("another jitterlab")) {
            return o;
        }
        assert!(Instant::now() < end, "the machine stayed held: {err}");
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
#[serial]
fn live_a_periodic_task_in_a_container_is_found_by_name_and_observed_from_the_host() {
    if let Some(why) = cannot_run() {
        eprintln!("skipping the live container observe test: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ctx = d.join("context");
    std::fs::create_dir(&ctx).unwrap();
    std::fs::write(d.join("periodic.c"), PERIODIC_C).unwrap();
    let cc = StdCommand::new("cc")
        .args(["-static", "-O2", "-o"])
        .arg(ctx.join("periodic"))
        .arg(d.join("periodic.c"))
        .output();
    match cc {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "skipping the live container observe test: cc cannot link statically: {}",
                stderr(&o).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("skipping the live container observe test: no C compiler ({e})");
            return;
        }
    }
    std::fs::write(
        ctx.join("Containerfile"),
        "FROM scratch\nCOPY periodic /periodic\nENTRYPOINT [\"/periodic\", \"jl-in-box\"]\n",
    )
    .unwrap();
    let id = std::process::id();
    let mut b = Pod {
        name: format!("jl-observe-test-{id}"),
        image: format!("localhost/jl-observe-test:{id}"),
        host: None,
    };
    let built = StdCommand::new("podman")
        .args(["build", "-q", "-t", &b.image, "-f"])
        .arg(ctx.join("Containerfile"))
        .arg(&ctx)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", stderr(&built));
    // The file limits podman asks for by default may be above this
    // process's hard ones (what `crate::system::container::quirks` works
    // around for jitterlab's own containers): the values every host allows.
    let run = podman(&[
        "run",
        "-d",
        "--rm",
        "--pull=never",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=1024:1024",
        "--name",
        &b.name,
        &b.image,
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let inspect = podman(&["inspect", "--format", "{{.State.Pid}}", &b.name]);
    let init: u32 = String::from_utf8_lossy(&inspect.stdout)
        .trim()
        .parse()
        .unwrap();
    // The same name on the host: never the one chosen.
    b.host = Some(
        StdCommand::new(ctx.join("periodic"))
            .arg("jl-in-box")
            .spawn()
            .unwrap(),
    );
    let host = b.host.as_ref().unwrap().id();
    std::thread::sleep(Duration::from_millis(300));

    let out_json = d.join("box.json");
    let o = jl_waiting(
        d,
        &[
            "run",
            "observe",
            "--container",
            &b.name,
            "--comm",
            "jl-in-box",
            "--period",
            "1ms",
            "--duration",
            "3s",
            "--no-db",
            "--json",
            out_json.to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let dt = &r["detail"];
    assert_eq!(dt["tid"], init, "host helper {host}\n{out}");
    assert_eq!(dt["comm"], "jl-in-box");
    assert_eq!(dt["candidates"], 1, "{out}");
    // A 1 ms schedule: the run's duration over the period, within 10 %.
    let elapsed = r["elapsed_ns"].as_u64().unwrap();
    let expected = elapsed / 1_000_000;
    let cycles = dt["cycles"].as_u64().unwrap();
    assert!(
        cycles.abs_diff(expected) * 10 <= expected,
        "{cycles} cycles in {elapsed} ns\n{out}"
    );

    // The monitor of the same: window rows of about 1000 cycles.
    let mut m = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .args(["monitor", "--window", "1s", "--comm", "jl-in-box"])
        .env("JITTERLAB_CONTAINER", &b.name)
        .env("JITTERLAB_DB", d.join("m.db"))
        .env("JITTERLAB_JOURNAL", d.join("journal.json"))
        .env_remove("JITTERLAB_CPUS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let windows = || {
        rusqlite::Connection::open(d.join("m.db"))
            .and_then(|c| {
                c.query_row(
                    "SELECT COUNT(*), COALESCE(MAX(cycles), 0) FROM windows",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )
            })
            .unwrap_or((0, 0))
    };
    let end = Instant::now() + Duration::from_secs(30);
    while windows().0 < 3 && m.try_wait().unwrap().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = jitterlab_sys::kill_process(m.id() as i32, 15);
    let mo = m.wait_with_output().unwrap();
    let err = stderr(&mo);
    if err.contains("machine lock") || err.contains("another jitterlab") {
        eprintln!("the monitor part skipped: another jitterlab held the machine: {err}");
        return;
    }
    assert_eq!(mo.status.code(), Some(0), "{err}");
    let (n, most) = windows();
    assert!(n >= 3, "{n} windows\n{err}");
    assert!((500..=1050).contains(&most), "{most} cycles at most\n{err}");

    // A container that does not run, one that does not exist, a name that
    // runs in none: refused, naming what to do.
    let stopped = format!("{}-stopped", b.name);
    assert!(podman(&["create", "--name", &stopped, &b.image])
        .status
        .success());
    let refusal = |container: &str, comm: &str| {
        let o = jl(d)
            .args(["run", "observe", "--container", container, "--comm", comm])
            .args(["--duration", "1s", "--no-db"])
            .output()
            .unwrap();
        (o.status.code(), stderr(&o))
    };
    assert_eq!(
        refusal(&stopped, "jl-in-box"),
        (Some(2), format!("jitterlab: error: --container {stopped}: the container is not running (podman says created); start it: podman start {stopped}\n"))
    );
    let none = format!("{}-none", b.name);
    assert_eq!(
        refusal(&none, "jl-in-box"),
        (Some(2), format!("jitterlab: error: --container {none}: podman has no container of that name; `podman ps -a` lists them\n"))
    );
    assert_eq!(
        refusal(&b.name, "jl-not-here"),
        (Some(2), format!("jitterlab: error: --container {}: no thread named jl-not-here runs in it; its threads are named jl-in-box\n", b.name))
    );
}
