//! Exact values from real-format kernel text, and the load's arithmetic.

use super::*;

/// `/proc/stat` as this 2-CPU virtual machine printed it (trimmed after
/// `intr`).
const STAT: &str = "\
cpu  1242027 16302 326442 3444959 37953 0 28358 2743 0 0
cpu0 580267 7900 155861 1781515 15603 0 5672 1429 0 0
cpu1 661760 8401 170580 1663444 22349 0 22685 1314 0 0
intr 35538094 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
ctxt 1123581224
btime 1700000000
";

/// `/proc/schedstat` version 17 (Linux 6.17): a cpu line, then its
/// domains.
const SCHEDSTAT_V17: &str = "\
version 17
timestamp 4363381283
cpu0 0 0 9876543 1234567 4455667 2233445 1834567890123 98765432101 9876000
domain0 MC 00000003 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45
cpu1 0 0 8765432 1123456 3344556 1122334 1723456789012 87654321010 8765000
domain0 MC 00000003 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45
";

/// This machine's kernel configuration, the lines that matter.
const CONFIG_HZ250: &str = "\
CONFIG_NO_HZ_COMMON=y
# CONFIG_HZ_PERIODIC is not set
CONFIG_NO_HZ_IDLE=y
CONFIG_TICK_CPU_ACCOUNTING=y
# CONFIG_VIRT_CPU_ACCOUNTING_GEN is not set
# CONFIG_IRQ_TIME_ACCOUNTING is not set
CONFIG_HZ_250=y
CONFIG_HZ=250
CONFIG_HAVE_IRQ_TIME_ACCOUNTING=y
CONFIG_SCHED_INFO=y
CONFIG_LOCALVERSION=\"-rt\"
";

#[test]
fn task_schedstat_is_run_wait_slices() {
    assert_eq!(
        parse_task_schedstat("316395998 93890572 1060\n"),
        Ok(TaskSchedstat {
            run_ns: 316_395_998,
            wait_ns: 93_890_572,
            timeslices: 1060
        })
    );
    assert_eq!(
        parse_task_schedstat("0 0 1\n").unwrap().timeslices,
        1,
        "a fresh task"
    );
    for bad in ["1 2\n", "1 2 3 4\n", "1 -2 3\n", "", "a b c"] {
        assert_eq!(
            parse_task_schedstat(bad),
            Err(LoadParseError::Schedstat(bad.trim_end().to_string())),
            "{bad:?}"
        );
    }
    assert_eq!(
        parse_task_schedstat("1 2\n").unwrap_err().to_string(),
        "a task's schedstat must be three unsigned numbers `run_ns wait_ns timeslices`, not \"1 2\""
    );
}

#[test]
fn stat_cpu_lines_are_found_by_their_exact_name() {
    assert_eq!(
        parse_stat_cpu(STAT, 1),
        Ok(CpuTimes {
            user: 661_760,
            nice: 8401,
            system: 170_580,
            idle: 1_663_444,
            iowait: 22_349,
            irq: 0,
            softirq: 22_685,
            steal: 1314,
        })
    );
    let cpu0 = parse_stat_cpu(STAT, 0).unwrap();
    assert_eq!((cpu0.idle, cpu0.softirq), (1_781_515, 5672));
    assert_eq!(cpu0.idle_total(), 1_797_118);
    // `cpu ` (the sum) and `cpu1` never stand in for cpu10.
    assert_eq!(
        parse_stat_cpu(STAT, 10),
        Err(LoadParseError::StatCpuMissing(10))
    );
    assert_eq!(
        parse_stat_cpu(STAT, 2).unwrap_err().to_string(),
        "/proc/stat has no cpu2 line: CPU 2 is offline or does not exist; name an online CPU"
    );
    let short = "cpu0 1 2 3 4 5 6 7\n";
    assert_eq!(
        parse_stat_cpu(short, 0).unwrap_err().to_string(),
        "/proc/stat's cpu0 line must hold at least 8 unsigned numbers (user nice system idle iowait irq softirq steal), not \"cpu0 1 2 3 4 5 6 7\""
    );
    assert!(matches!(
        parse_stat_cpu("cpu0 1 2 3 x 5 6 7 8\n", 0),
        Err(LoadParseError::StatCpuLine { cpu: 0, .. })
    ));
}

#[test]
fn rq_cpu_time_is_field_7_of_a_known_version() {
    assert_eq!(parse_rq_cpu_time(SCHEDSTAT_V17, 0), Ok(1_834_567_890_123));
    assert_eq!(parse_rq_cpu_time(SCHEDSTAT_V17, 1), Ok(1_723_456_789_012));
    let v15 = SCHEDSTAT_V17.replacen("version 17", "version 15", 1);
    assert_eq!(parse_rq_cpu_time(&v15, 1), Ok(1_723_456_789_012));
    assert_eq!(
        parse_rq_cpu_time(SCHEDSTAT_V17, 2),
        Err(LoadParseError::RqCpuMissing(2))
    );
    let v14 = SCHEDSTAT_V17.replacen("version 17", "version 14", 1);
    assert_eq!(
        parse_rq_cpu_time(&v14, 0).unwrap_err().to_string(),
        "/proc/schedstat has version 14; jitterlab reads versions 15 to 17"
    );
    assert_eq!(
        parse_rq_cpu_time("cpu0 0 0 1 2 3 4 5 6 7\n", 0),
        Err(LoadParseError::SchedstatVersion("(no version line)".into()))
    );
    let short = "version 15\ntimestamp 1\ncpu0 0 0 1 2 3 4 5 6\n";
    assert_eq!(
        parse_rq_cpu_time(short, 0).unwrap_err().to_string(),
        "/proc/schedstat's cpu0 line must hold at least 9 unsigned numbers (field 7 is rq_cpu_time), not \"cpu0 0 0 1 2 3 4 5 6\""
    );
}

#[test]
fn config_values_and_switches() {
    assert_eq!(config_value(CONFIG_HZ250, "CONFIG_HZ"), Some("250"));
    assert_eq!(
        config_value(CONFIG_HZ250, "CONFIG_LOCALVERSION"),
        Some("-rt")
    );
    assert_eq!(config_value(CONFIG_HZ250, "CONFIG_HZ_PERIODIC"), None);
    assert!(config_on(CONFIG_HZ250, "CONFIG_NO_HZ_COMMON"));
    assert!(!config_on(CONFIG_HZ250, "CONFIG_IRQ_TIME_ACCOUNTING"));
    assert!(!config_on(CONFIG_HZ250, "CONFIG_HZ"));
}

#[test]
fn this_kernels_accounting_said_plainly() {
    let a = Accounting::from_config(Some(CONFIG_HZ250), "BOOT_IMAGE=/vmlinuz root=/dev/vda ro");
    assert_eq!(
        a,
        Accounting {
            hz: Some(250),
            nohz_idle: Some(true),
            nohz_off_by: None,
            irq_time: Some(false),
            irq_time_off_by: Some("no CONFIG_IRQ_TIME_ACCOUNTING"),
        }
    );
    assert_eq!(
        a.busy_source(),
        "wall - (idle + iowait) from /proc/stat: idle measured in ns by NO_HZ idle accounting, printed in USER_HZ=100 units (10 ms per reading)"
    );
    assert_eq!(
        a.softirq_source(),
        "tick-sampled at HZ=250 (no CONFIG_IRQ_TIME_ACCOUNTING), printed in USER_HZ=100 units (10 ms per reading)"
    );
}

#[test]
fn other_kernels_accounting_said_plainly() {
    let irqtime = CONFIG_HZ250.replace(
        "# CONFIG_IRQ_TIME_ACCOUNTING is not set",
        "CONFIG_IRQ_TIME_ACCOUNTING=y",
    );
    let a = Accounting::from_config(Some(&irqtime), "quiet nohz=off");
    assert_eq!(
        a.busy_source(),
        "wall - (idle + iowait) from /proc/stat: idle tick-sampled at HZ=250 (nohz=off), printed in USER_HZ=100 units (10 ms per reading)"
    );
    assert_eq!(
        a.softirq_source(),
        "measured at each softirq's entry and exit (CONFIG_IRQ_TIME_ACCOUNTING), printed in USER_HZ=100 units (10 ms per reading)"
    );
    let a = Accounting::from_config(Some(&irqtime), "tsc=noirqtime");
    assert_eq!(
        a.softirq_source(),
        "tick-sampled at HZ=250 (tsc=noirqtime), printed in USER_HZ=100 units (10 ms per reading)"
    );
    let periodic = "CONFIG_HZ_PERIODIC=y\nCONFIG_HZ=1000\n";
    assert_eq!(
        Accounting::from_config(Some(periodic), "").busy_source(),
        "wall - (idle + iowait) from /proc/stat: idle tick-sampled at HZ=1000 (a periodic tick: no CONFIG_NO_HZ_COMMON), printed in USER_HZ=100 units (10 ms per reading)"
    );
    let unknown = Accounting::from_config(None, "nohz=off");
    assert_eq!(unknown, Accounting::default());
    assert_eq!(
        unknown.busy_source(),
        "wall - (idle + iowait) from /proc/stat: idle accounting unknown (no kernel configuration found), printed in USER_HZ=100 units (10 ms per reading)"
    );
    assert_eq!(
        unknown.softirq_source(),
        "unknown accounting (no kernel configuration found), printed in USER_HZ=100 units (10 ms per reading)"
    );
}

fn thread(name: &str, tid: i32, cpu_ns: u64) -> ThreadLoad {
    ThreadLoad {
        name: name.into(),
        tid,
        cpu_ns,
    }
}

#[test]
fn load_over_two_seconds_is_exact() {
    let before = parse_stat_cpu(STAT, 1).unwrap();
    // Two seconds later: 150 ticks idle, 12 iowait, 7 softirq.
    let after = CpuTimes {
        idle: before.idle + 150,
        iowait: before.iowait + 12,
        softirq: before.softirq + 7,
        system: before.system + 30,
        ..before
    };
    let accounting = Accounting::from_config(Some(CONFIG_HZ250), "");
    let load = StackLoad::compute(
        2_000_000_000,
        1,
        vec![
            thread("mn", 4242, 180_000_000),
            thread("mn-rx", 4243, 20_500_000),
        ],
        Ok((before, after)),
        &accounting,
    );
    assert_eq!(load.stack_ns, 200_500_000);
    assert_eq!(load.cpu_busy_ns, Some(380_000_000));
    assert_eq!(load.softirq_ns, Some(70_000_000));
    assert_eq!(load.hz, Some(250));
    assert_eq!(load.stack_percent(), 10.025);
    assert_eq!(load.busy_percent(), Some(19.0));
    assert_eq!(load.softirq_percent(), Some(3.5));
    assert_eq!(load.cpu_busy_source, accounting.busy_source());
    assert_eq!(load.softirq_source, accounting.softirq_source());

    // Stored as JSON and read back unchanged.
    let json = serde_json::to_string(&load).unwrap();
    assert_eq!(
        json,
        format!(
            "{{\"wall_ns\":2000000000,\"cpu\":1,\"threads\":[{{\"name\":\"mn\",\"tid\":4242,\"cpu_ns\":180000000}},{{\"name\":\"mn-rx\",\"tid\":4243,\"cpu_ns\":20500000}}],\"stack_ns\":200500000,\"cpu_busy_ns\":380000000,\"cpu_busy_source\":{:?},\"softirq_ns\":70000000,\"softirq_source\":{:?},\"hz\":250}}",
            load.cpu_busy_source, load.softirq_source
        )
    );
    assert_eq!(serde_json::from_str::<StackLoad>(&json).unwrap(), load);
}

#[test]
fn idle_beyond_wall_time_reads_as_zero_busy_and_backwards_counters_as_zero() {
    let before = parse_stat_cpu(STAT, 0).unwrap();
    // 10 ms resolution: 51 idle ticks in a 500 ms window.
    let after = CpuTimes {
        idle: before.idle + 51,
        ..before
    };
    let load = StackLoad::compute(
        500_000_000,
        0,
        vec![],
        Ok((before, after)),
        &Accounting::default(),
    );
    assert_eq!(load.cpu_busy_ns, Some(0));
    assert_eq!(load.stack_ns, 0);
    assert_eq!(load.hz, None);
    // A CPU that went offline and back may restart its counters.
    let load = StackLoad::compute(
        500_000_000,
        0,
        vec![],
        Ok((before, CpuTimes::default())),
        &Accounting::default(),
    );
    assert_eq!(
        (load.cpu_busy_ns, load.softirq_ns),
        (Some(500_000_000), Some(0))
    );
}

#[test]
fn an_unreadable_proc_stat_leaves_busy_and_softirq_unknown() {
    let load = StackLoad::compute(
        1_000_000_000,
        1,
        vec![thread("mn", 7, 250_000_000)],
        Err("/srv/root/proc/stat could not be read (No such file or directory)".into()),
        &Accounting::from_config(Some(CONFIG_HZ250), ""),
    );
    assert_eq!(load.stack_percent(), 25.0);
    assert_eq!((load.busy_percent(), load.softirq_percent()), (None, None));
    assert_eq!(
        load.cpu_busy_source,
        "unknown: /srv/root/proc/stat could not be read (No such file or directory)"
    );
    assert_eq!(load.softirq_source, load.cpu_busy_source);
    assert_eq!(load.hz, Some(250));
}

#[test]
fn zero_wall_time_is_zero_percent() {
    let load = StackLoad::compute(
        0,
        0,
        vec![thread("mn", 1, 5)],
        Err("x".into()),
        &Accounting::default(),
    );
    assert_eq!(load.stack_percent(), 0.0);
}
