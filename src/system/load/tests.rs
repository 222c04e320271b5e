//! The meter against fake trees (exact figures) and against this machine
//! (a spinning thread's CPU time within what is physically possible).

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::*;

/// This machine's kernel configuration, the lines that matter.
const CONFIG: &str = "\
CONFIG_NO_HZ_COMMON=y
CONFIG_NO_HZ_IDLE=y
# CONFIG_IRQ_TIME_ACCOUNTING is not set
CONFIG_HZ_250=y
CONFIG_HZ=250
CONFIG_SCHED_INFO=y
";

/// A `/proc/stat` whose cpu1 line has these idle, iowait and softirq
/// ticks (the rest as this machine printed it).
fn stat(idle: u64, iowait: u64, softirq: u64) -> String {
    format!(
        "cpu  1242027 16302 326442 3444959 37953 0 28358 2743 0 0\n\
         cpu0 580267 7900 155861 1781515 15603 0 5672 1429 0 0\n\
         cpu1 661760 8401 170580 {idle} {iowait} 0 {softirq} 1314 0 0\n\
         intr 35538094 0 0 0\nctxt 1123581224\n"
    )
}

/// A fake root with threads 4242 and 4243 of `proc/self`, cpu1 in
/// `proc/stat`, the configuration in `proc/config.gz` and a command line.
fn fake() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    set_thread(root, 4242, "316395998 93890572 1060\n");
    set_thread(root, 4243, "1000 0 1\n");
    write(root, "proc/stat", &stat(1_663_444, 22_349, 22_685));
    write(
        root,
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz root=/dev/vda ro\n",
    );
    let mut gz = flate2::write::GzEncoder::new(
        File::create(root.join("proc/config.gz")).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(CONFIG.as_bytes()).unwrap();
    gz.finish().unwrap();
    dir
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn set_thread(root: &Path, tid: i32, text: &str) {
    write(root, &format!("proc/self/task/{tid}/schedstat"), text);
}

fn threads() -> Vec<(String, i32)> {
    vec![("mn".into(), 4242), ("mn-rx".into(), 4243)]
}

const BUSY_SOURCE: &str = "wall - (idle + iowait) from /proc/stat: idle measured in ns by NO_HZ idle accounting, printed in USER_HZ=100 units (10 ms per reading)";
const SOFTIRQ_SOURCE: &str = "tick-sampled at HZ=250 (no CONFIG_IRQ_TIME_ACCOUNTING), printed in USER_HZ=100 units (10 ms per reading)";

#[test]
fn a_fake_tree_gives_exact_figures() {
    let dir = fake();
    let root = dir.path();
    let meter = LoadMeter::start_at(root, 1, &threads(), 5_000_000_000).unwrap();
    // Two seconds: mn ran 180 ms, mn-rx 20.5 ms; cpu1 was idle 1.5 s and
    // waited for I/O 0.12 s, and 7 ticks landed in softirq.
    set_thread(root, 4242, "496395998 93990572 9060\n");
    set_thread(root, 4243, "20501000 10 801\n");
    write(
        root,
        "proc/stat",
        &stat(1_663_444 + 150, 22_349 + 12, 22_685 + 7),
    );
    let load = meter.finish_at(7_000_000_000).unwrap();
    assert_eq!(
        load,
        StackLoad {
            wall_ns: 2_000_000_000,
            cpu: 1,
            threads: vec![
                ThreadLoad {
                    name: "mn".into(),
                    tid: 4242,
                    cpu_ns: 180_000_000
                },
                ThreadLoad {
                    name: "mn-rx".into(),
                    tid: 4243,
                    cpu_ns: 20_500_000
                },
            ],
            stack_ns: 200_500_000,
            cpu_busy_ns: Some(380_000_000),
            cpu_busy_source: BUSY_SOURCE.into(),
            softirq_ns: Some(70_000_000),
            softirq_source: SOFTIRQ_SOURCE.into(),
            hz: Some(250),
        }
    );
    assert_eq!(load.stack_percent(), 10.025);
    assert_eq!(load.busy_percent(), Some(19.0));
    assert_eq!(load.softirq_percent(), Some(3.5));
}

#[test]
fn the_boot_configuration_and_the_command_line_are_read_when_there_is_no_config_gz() {
    let dir = fake();
    let root = dir.path();
    fs::remove_file(root.join("proc/config.gz")).unwrap();
    write(root, "proc/sys/kernel/osrelease", "6.1.0-rt-amd64\n");
    write(
        root,
        "boot/config-6.1.0-rt-amd64",
        &CONFIG.replace(
            "# CONFIG_IRQ_TIME_ACCOUNTING is not set",
            "CONFIG_IRQ_TIME_ACCOUNTING=y",
        ),
    );
    write(root, "proc/cmdline", "quiet nohz=off\n");
    assert_eq!(
        kernel_config(root).unwrap().0,
        root.join("boot/config-6.1.0-rt-amd64")
    );
    let load = LoadMeter::start_at(root, 1, &threads(), 0)
        .unwrap()
        .finish_at(1_000_000_000)
        .unwrap();
    assert_eq!(
        load.cpu_busy_source,
        "wall - (idle + iowait) from /proc/stat: idle tick-sampled at HZ=250 (nohz=off), printed in USER_HZ=100 units (10 ms per reading)"
    );
    assert_eq!(
        load.softirq_source,
        "measured at each softirq's entry and exit (CONFIG_IRQ_TIME_ACCOUNTING), printed in USER_HZ=100 units (10 ms per reading)"
    );
    assert_eq!(
        (load.cpu_busy_ns, load.softirq_ns),
        (Some(1_000_000_000), Some(0))
    );
}

#[test]
fn no_configuration_says_unknown() {
    let dir = fake();
    let root = dir.path();
    fs::remove_file(root.join("proc/config.gz")).unwrap();
    assert_eq!(kernel_config(root), None);
    let load = LoadMeter::start_at(root, 1, &threads(), 0)
        .unwrap()
        .finish_at(1)
        .unwrap();
    assert_eq!(load.hz, None);
    assert_eq!(
        load.softirq_source,
        "unknown accounting (no kernel configuration found), printed in USER_HZ=100 units (10 ms per reading)"
    );
}

#[test]
fn a_missing_schedstat_names_config_sched_info() {
    let dir = fake();
    let root = dir.path();
    fs::remove_file(root.join("proc/self/task/4243/schedstat")).unwrap();
    let e = LoadMeter::start_at(root, 1, &threads(), 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}/proc/self/task/4243/schedstat is missing: the kernel was built without CONFIG_SCHED_INFO, so a thread's CPU time cannot be read in ns; use a kernel built with CONFIG_SCHED_INFO=y (Debian's are)",
            root.display()
        )
    );
}

#[test]
fn a_thread_that_is_gone_is_named() {
    let dir = fake();
    let root = dir.path();
    let meter = LoadMeter::start_at(root, 1, &threads(), 0).unwrap();
    fs::remove_dir_all(root.join("proc/self/task/4242")).unwrap();
    assert_eq!(
        meter.finish_at(1).unwrap_err().to_string(),
        format!(
            "thread mn (tid 4242) is not a thread of this process ({}/proc/self/task/4242 is missing): it has ended, or the id is wrong; measure the load while its threads are alive",
            root.display()
        )
    );
}

#[test]
fn a_reused_id_and_a_kernel_without_statistics_are_refused() {
    let dir = fake();
    let root = dir.path();
    let meter = LoadMeter::start_at(root, 1, &threads(), 0).unwrap();
    set_thread(root, 4242, "5000 0 2\n");
    assert_eq!(
        meter.finish_at(1).unwrap_err().to_string(),
        "thread mn (tid 4242) had run 316395998 ns at the start and 5000 ns at the end: it ended and its id was reused; keep the threads alive until the load is read"
    );
    set_thread(root, 4242, "0 0 0\n");
    set_thread(root, 4243, "0 0 0\n");
    let meter = LoadMeter::start_at(root, 1, &threads(), 0).unwrap();
    assert_eq!(
        meter.finish_at(1).unwrap_err().to_string(),
        format!(
            "{}/proc/self/task/4242/schedstat reads `0 0 0` although thread mn (tid 4242) has run: this kernel keeps scheduler statistics only with CONFIG_SCHEDSTATS or delay accounting; boot with `delayacct` or run `sysctl kernel.sched_schedstats=1`",
            root.display()
        )
    );
}

#[test]
fn a_malformed_schedstat_names_the_file() {
    let dir = fake();
    let root = dir.path();
    set_thread(root, 4243, "1000 0\n");
    let e = LoadMeter::start_at(root, 1, &threads(), 0).unwrap_err();
    assert_eq!(
        format!("{e:#}"),
        format!(
            "reading {}/proc/self/task/4243/schedstat: a task's schedstat must be three unsigned numbers `run_ns wait_ns timeslices`, not \"1000 0\"",
            root.display()
        )
    );
}

#[test]
fn a_cpu_without_a_stat_line_is_refused_and_one_that_goes_offline_is_unknown() {
    let dir = fake();
    let root = dir.path();
    assert_eq!(
        LoadMeter::start_at(root, 3, &threads(), 0)
            .unwrap_err()
            .to_string(),
        "/proc/stat has no cpu3 line: CPU 3 is offline or does not exist; name an online CPU"
    );
    assert_eq!(
        LoadMeter::start_at(root, 1, &[], 0)
            .unwrap_err()
            .to_string(),
        "the load of a stack needs at least one of its threads to measure"
    );
    let meter = LoadMeter::start_at(root, 1, &threads(), 0).unwrap();
    write(
        root,
        "proc/stat",
        "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
    );
    let load = meter.finish_at(1_000).unwrap();
    assert_eq!((load.cpu_busy_ns, load.softirq_ns), (None, None));
    assert_eq!(
        load.cpu_busy_source,
        "unknown: CPU 1 went offline during the measurement"
    );
    assert_eq!(load.stack_ns, 0);
}

#[test]
fn an_unreadable_proc_stat_leaves_busy_unknown_but_measures_the_stack() {
    let dir = fake();
    let root = dir.path();
    fs::remove_file(root.join("proc/stat")).unwrap();
    let meter = LoadMeter::start_at(root, 1, &threads(), 0).unwrap();
    set_thread(root, 4243, "251000 0 9\n");
    let load = meter.finish_at(1_000_000).unwrap();
    assert_eq!(load.stack_ns, 250_000);
    assert_eq!(load.stack_percent(), 25.0);
    assert_eq!(load.busy_percent(), None);
    assert_eq!(
        load.softirq_source,
        format!(
            "unknown: {}/proc/stat could not be read (No such file or directory (os error 2))",
            root.display()
        )
    );
}

#[test]
fn a_spinning_thread_uses_no_more_cpu_than_wall_time_allows() {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let spinner = std::thread::spawn(move || {
        tid_tx.send(jitterlab_sys::gettid()).unwrap();
        go_rx.recv().unwrap();
        let until = Instant::now() + Duration::from_millis(50);
        let mut n = 0u64;
        while Instant::now() < until {
            n = std::hint::black_box(n.wrapping_add(1));
        }
        done_tx.send(n).unwrap();
        // Blocked here, its schedstat is exact while the load is read.
        end_rx.recv().unwrap();
    });
    let tid = tid_rx.recv().unwrap();
    let cpu = jitterlab_sys::current_cpu().unwrap_or(0);
    let meter = LoadMeter::start(Path::new("/"), cpu, &[("spin".into(), tid)]).unwrap();
    go_tx.send(()).unwrap();
    done_rx.recv().unwrap();
    let load = meter.finish().unwrap();
    end_tx.send(()).unwrap();
    spinner.join().unwrap();

    let spun = load.threads[0].cpu_ns;
    assert!(load.wall_ns >= 50_000_000, "{load:?}");
    assert!(spun > 0, "{load:?}");
    assert!(spun * 100 <= load.wall_ns * 105, "{load:?}");
    assert_eq!(load.stack_ns, spun);
    // On a real /proc the busy figure is known and within the wall time.
    assert!(
        load.cpu_busy_ns.is_some_and(|b| b <= load.wall_ns),
        "{load:?}"
    );
}
