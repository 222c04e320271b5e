//! Command-line tests of `jitterlab run netcycle` ([Baumgartner POWERLINK]): exact
//! refusals of bad input (exit 2), and short real runs — a POWERLINK
//! managing node and three emulated CNs in two network namespaces, with a
//! PReq per CN and with PollResponse Chaining — whose results must keep
//! the definitions whatever the machine's noise: every release accounted,
//! every CN polled every cycle and brought to OPERATIONAL, the SoC's period
//! around its cycle time as sent and as received, the held verdict
//! consistent with its counts, no namespace left behind. With `--pcap`,
//! Wireshark's dissector (Debian `tshark`) reads every frame the CN side
//! received as POWERLINK, none malformed, none with an expert warning.
//!
//! The real runs make network namespaces and raw sockets: root only (CI
//! runs as root); elsewhere they say so and skip. None asserts a timing
//! figure: a noisy VM may miss PRes or run late, and the verdict says so.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;
use std::process::Command as StdCommand;

use serde_json::Value;
use serial_test::serial;

#[path = "common/probe_run.rs"]
mod probe_run;
use probe_run::{assert_exit_follows_held, jl, n, run_probe};

fn root_or_skip(what: &str) -> bool {
    probe_run::root_or_skip(what, "the netcycle namespaces and raw sockets")
}

/// Runs `jitterlab run netcycle --no-db ARGS --json F`; the result and the
/// exit status.
fn run(dir: &Path, args: &[&str]) -> (Value, i32) {
    run_probe(dir, &["netcycle", "--no-db"], args)
}

/// The checks every real run must pass, for `cycle_ns` over `duration_ns`
/// with `cns` CNs.
fn check_definitions(r: &Value, code: i32, cycle_ns: i64, duration_ns: i64, cns: i64) {
    let t = &r["threads"][0];
    let m = &t["metrics"];
    let d = &r["detail"];
    // Every release of the run is a cycle or was skipped after a late one.
    let releases = duration_ns / cycle_ns;
    assert_eq!(n(&t["releases"]), releases);
    assert_eq!(n(&t["cycles"]) + n(&t["skipped"]), releases);
    let cycles = n(&d["cycles"]);
    assert_eq!(cycles, n(&t["cycles"]));
    assert!(cycles > releases / 2, "{cycles} of {releases} releases ran");
    assert_eq!(n(&d["late_cycles"]), n(&t["overruns"]));
    // The cycles over T0 are counted among the cycles run.
    assert!(n(&d["over_t0_cycles"]) <= cycles, "{d}");
    assert_eq!(n(&m["latency"]["count"]), cycles);
    assert_eq!(n(&m["exec"]["count"]), cycles);
    // Every CN was polled every cycle; what was not answered was missed.
    let per_cn = d["per_cn"].as_array().unwrap();
    assert_eq!(per_cn.len() as i64, cns);
    for (i, c) in per_cn.iter().enumerate() {
        assert_eq!(n(&c["node"]), i as i64 + 1);
        assert_eq!(n(&c["polls"]), cycles, "{c}");
        assert_eq!(n(&c["answered"]) + n(&c["missed"]), cycles, "{c}");
        assert!(n(&c["late"]) <= n(&c["missed"]), "{c}");
        assert!(n(&c["answered"]) > 0, "{c}");
    }
    assert_eq!(n(&d["polls"]), cycles * cns);
    // Held exactly when nothing was late or missed and no CN left
    // operational (no allowance given); a cycle time not held is a failed
    // verdict, exit 1, with its reasons in the verdicts.
    let held =
        n(&d["late_cycles"]) == 0 && n(&d["missed_pres"]) == 0 && d["left_operational"].is_null();
    assert_eq!(d["held"]["held"].as_bool(), Some(held), "{}", d["held"]);
    assert_eq!(d["held"]["reasons"].is_null(), held);
    assert_eq!(code, if held { 0 } else { 1 }, "{}", d["held"]);
    let v = &r["verdict"]["cells"][0]["verdicts"][0];
    assert_eq!(v["name"], "cycle time held", "{v}");
    assert_eq!(v["status"], if held { "pass" } else { "fail" }, "{v}");
    if !held {
        let reasons: Vec<&str> = d["held"]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert!(
            v["decided"]
                .as_str()
                .unwrap()
                .ends_with(&format!(": {}", reasons.join("; "))),
            "{v}"
        );
    }
    // The SoC's period around the cycle time, as sent and as received.
    for metric in ["period", "rx-period"] {
        let p = &m[metric];
        assert!(n(&p["count"]) > releases / 2, "{metric}: {p}");
        assert!(
            n(&p["min"]) <= cycle_ns && cycle_ns <= n(&p["max"]),
            "{metric}: {p}"
        );
    }
    // No two SoCs closer than the schedule's floor (the reference MN's
    // rule), whatever the wake-ups; the releases passed over for it are
    // among the skipped.
    check_spacing(d, n(&t["skipped"]) - n(&t["overruns"]));
    // The cycle completes after its SoC, mostly within its cycle.
    let c = &m["completion"];
    assert!(n(&c["min"]) > 0, "{c}");
    assert!(n(&c["p50"]) < cycle_ns, "{c}");
    assert!(n(&m["send"]["min"]) >= 0);
    // The CN side brought every CN up; a CN that is not operational at
    // the end dropped out on this machine's late frames, and the managing
    // node saw it leave for good (so the cycle time was not held).
    let cn = &d["cn"];
    for node in cn["nodes"].as_array().unwrap() {
        assert!(!node["operational_after_ns"].is_null(), "{node}");
        if node["state"] != "NMT_CS_OPERATIONAL" {
            let left = d["left_operational"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                left.iter()
                    .any(|o| o["node"] == node["node"] && o["back"] == false),
                "{node} is out, but the managing node saw no outage: {left:?}"
            );
            assert_eq!(d["held"]["held"].as_bool(), Some(false), "{node}");
        }
    }
    assert!(n(&cn["socs"]) >= cycles);
    assert_eq!(n(&cn["malformed"]), 0);
    assert_eq!(n(&cn["send_errors"]), 0);
    assert_eq!(n(&d["mn"]["counts"]["malformed"]), 0);
    assert_eq!(n(&d["mn"]["counts"]["foreign"]), 0);
    assert_eq!(n(&d["response_timeout_ns"]), 100_000);
    // The stack load: the managing node's thread's CPU time over the
    // measurement, within what is physically possible.
    let load = &d["load"];
    let (stack, wall) = (n(&load["stack_ns"]), n(&load["wall_ns"]));
    assert!(stack > 0 && stack * 100 <= wall * 105, "{load}");
    assert!((1_900_000_000..=2_500_000_000).contains(&wall), "{load}");
    assert_eq!(load["threads"][0]["name"], "managing node", "{load}");
    assert_eq!(n(&load["threads"][0]["cpu_ns"]), stack, "{load}");
    // The CN emulator polls (the default): neither veth end's receive
    // work is steered, each end's is done in the other's send.
    let steering = d["steering"].as_array().unwrap();
    assert_eq!(steering.len(), 2, "{steering:?}");
    for s in steering {
        let s = s.as_str().unwrap();
        assert!(
            s.starts_with("jl") && s.ends_with(": receive work not steered"),
            "{s}"
        );
    }
    let stamps = d["stamps"].as_array().unwrap();
    assert!(stamps[0]
        .as_str()
        .unwrap()
        .contains("SoC transmit: software"));
}

/// The SoC spacing of a managing node's result: a floor, kept.
fn check_spacing(d: &Value, skipped_not_overrun: i64) {
    let sp = &d["soc_spacing"];
    let floor = n(&sp["floor_ns"]);
    assert!(floor > 0, "{sp}");
    assert!(n(&sp["min_ns"]) >= floor, "{sp}");
    assert!(n(&sp["passed_over"]) <= skipped_not_overrun, "{sp}");
}

fn no_namespace_left() {
    let ns = StdCommand::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&ns.stdout);
    assert!(
        !list.lines().any(|l| {
            let name = l.split_whitespace().next().unwrap_or("");
            name.starts_with("jl") && (name.ends_with("mn") || name.ends_with("cn"))
        }),
        "{list}"
    );
}

#[test]
#[serial]
fn three_cns_polled_by_preq_keep_the_definitions_and_leave_nothing() {
    if !root_or_skip("the PReq run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (r, code) = run(dir.path(), &["--duration", "2s", "--cns", "3"]);
    check_definitions(&r, code, 500_000, 2_000_000_000, 3);
    let d = &r["detail"];
    assert_eq!(
        (d["role"].as_str(), d["chaining"].as_bool()),
        (Some("both"), Some(false))
    );
    assert_eq!(n(&d["wire_ns"]), 53_760);
    no_namespace_left();
}

#[test]
#[serial]
fn three_chained_cns_keep_the_definitions() {
    if !root_or_skip("the chained run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (r, code) = run(
        dir.path(),
        &["--duration", "2s", "--cns", "3", "--chaining"],
    );
    check_definitions(&r, code, 500_000, 2_000_000_000, 3);
    let d = &r["detail"];
    assert_eq!(d["chaining"].as_bool(), Some(true));
    // One PResMN instead of three PReq: two minimum frames (84 bytes on
    // the wire each, 80 ns a byte) less.
    assert_eq!(n(&d["wire_ns"]), 53_760 - 2 * 84 * 80);
    no_namespace_left();
}

/// `tshark -T fields` of `pcap`: per frame, the message type, source and
/// destination node, and whatever is malformed or an expert note.
fn tshark_fields(pcap: &Path) -> Vec<Vec<String>> {
    let out = StdCommand::new("tshark")
        .args(["-r"])
        .arg(pcap)
        .args([
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "occurrence=a",
            "-e",
            "epl.mtyp",
            "-e",
            "epl.src",
            "-e",
            "epl.dest",
            "-e",
            "_ws.malformed",
            "-e",
            "_ws.expert.severity",
            "-e",
            "epl.asnd.nmtcommand.cid",
            "-e",
            "epl.soa.svid",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

#[test]
#[serial]
fn the_capture_reads_in_wireshark_frame_by_frame_without_a_warning() {
    if !root_or_skip("the capture") {
        return;
    }
    if StdCommand::new("tshark").arg("--version").output().is_err() {
        eprintln!("skipping the capture's check: tshark is not installed (apt-get install tshark)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("cn.pcap");
    let (r, _) = run(
        dir.path(),
        &[
            "--duration",
            "1s",
            "--cycle",
            "2ms",
            "--chaining",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let p = &r["detail"]["pcap"];
    assert_eq!(n(&p["dropped"]), 0);
    let frames = tshark_fields(&pcap);
    assert_eq!(frames.len() as i64, n(&p["frames"]));
    // What the CN side received and what it sent.
    let cn = &r["detail"]["cn"];
    assert_eq!(frames.len() as i64, n(&cn["frames"]) + n(&cn["answered"]));
    let mut types = std::collections::BTreeSet::new();
    let mut commands = std::collections::BTreeSet::new();
    let mut services = std::collections::BTreeSet::new();
    for (i, f) in frames.iter().enumerate() {
        let field = |k: usize| f.get(k).map(String::as_str).unwrap_or("");
        assert!(!field(0).is_empty(), "frame {i} is not POWERLINK: {f:?}");
        assert!(field(3).is_empty(), "frame {i} malformed: {f:?}");
        assert!(field(4).is_empty(), "frame {i} has an expert note: {f:?}");
        match field(1) {
            "240" => {}
            // The CNs' own answers: PRes and ASnd.
            "1" | "2" | "3" => assert!(["4", "6"].contains(&field(0)), "frame {i}: {f:?}"),
            other => panic!("frame {i} from node {other}: {f:?}"),
        }
        types.insert(field(0).to_string());
        if !field(5).is_empty() {
            commands.insert(field(5).to_string());
        }
        if !field(6).is_empty() {
            services.insert(field(6).to_string());
        }
    }
    // SoC, PReq (bring-up), PResMN and PRes, SoA, ASnd: every type.
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        ["1", "3", "4", "5", "6"]
    );
    // The bring-up's NMT commands: ResetConfiguration after the CNs'
    // configuration over SDO, EnableReadyToOperate, StartNode.
    assert_eq!(
        commands.into_iter().collect::<Vec<_>>(),
        ["0x21", "0x24", "0x2a"]
    );
    // SoA: NoService (PRE_OPERATIONAL_1's start), IdentRequest,
    // StatusRequest, UnspecifiedInvite (before the MN's SDO frames and for a
    // CN's SDO answers), NMTRequestInvite to 240 (before each NMT command);
    // sorted as text.
    assert_eq!(
        services.into_iter().collect::<Vec<_>>(),
        ["0", "1", "2", "255", "3"]
    );
    no_namespace_left();
}

#[test]
fn bad_input_is_refused_with_exit_2_and_says_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (args, message) in [
        (
            &["--cycle", "250us", "--cns", "40", "--chaining"][..],
            "jitterlab: error: N/A (wire): 40 CNs need at least 289.3 µs of wire time per cycle at 100 Mbit/s (chained), more than the 250 µs cycle; lengthen --cycle or give fewer --cns\n",
        ),
        (
            &["--role", "mn"][..],
            "jitterlab: error: --role mn runs one side on a real network: give --interface IF (or --role both to run both here)\n",
        ),
        (
            &["--interface", "lo"][..],
            "jitterlab: error: --interface runs one side per machine: add --role mn or --role cn, or drop --interface to run both here\n",
        ),
        (
            &["--role", "cn", "--interface", "jlnosuchif0"][..],
            "jitterlab: error: --interface jlnosuchif0: no such network interface; list them with `ip link`\n",
        ),
        (
            &["--role", "mn", "--interface", "lo", "--pcap", "-"][..],
            "jitterlab: error: --pcap -: a capture is binary and is not written to standard output; give a file path\n",
        ),
        (
            &["--response-timeout", "500us"][..],
            "jitterlab: error: --response-timeout 500us must be shorter than the --cycle 500us\n",
        ),
        (
            &["--response-timeout", "0"][..],
            "jitterlab: error: --response-timeout must be positive; give e.g. --response-timeout 100us\n",
        ),
        (
            &["--chaining", "--cns", "200", "--out-bytes", "10"][..],
            "jitterlab: error: --chaining: one PResMN carries every CN's outputs: 200 CNs × 10 bytes = 2000 bytes, more than its 1490; give fewer --out-bytes or --cns\n",
        ),
        (
            &["--max-exec", "1ms"][..],
            "jitterlab: error: --max-exec does not apply to run netcycle; its limits are --max-latency, --max-jitter, --max-late-cycles and --max-missed-pres\n",
        ),
        (
            &["--cycles", "10"][..],
            "jitterlab: error: run netcycle ends at its --duration; --cycles does not apply\n",
        ),
        (
            &["--cn-cpu", "999"][..],
            "jitterlab: error: CPU 999 is not online (online CPUs: ONLINE); choose one of them with --cn-cpu\n",
        ),
    ] {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        let message = message.replace("ONLINE", online.trim());
        jl(dir.path())
            .args(["run", "netcycle"])
            .args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(message);
    }
    // Clap's own refusals: out of range, unknown names.
    for args in [
        &["--cns", "0"][..],
        &["--cns", "240"],
        &["--wait", "spin"],
        &["--role", "io"],
    ] {
        jl(dir.path())
            .args(["run", "netcycle"])
            .args(args)
            .assert()
            .code(2);
    }
}

/// Two network namespaces joined by a veth pair (`<a>0` in `a`, `<b>0`
/// in `b`), made with `ip`, deleted on drop.
struct Segment {
    a: String,
    b: String,
}

impl Segment {
    fn new() -> Segment {
        let pid = std::process::id();
        let (a, b) = (format!("jlt{pid}a"), format!("jlt{pid}b"));
        let ip = |args: &[&str]| {
            let ok = StdCommand::new("ip").args(args).status().unwrap();
            assert!(ok.success(), "ip {args:?}");
        };
        ip(&["netns", "add", &a]);
        ip(&["netns", "add", &b]);
        let seg = Segment { a, b };
        let (ia, ib) = (format!("{}0", seg.a), format!("{}0", seg.b));
        ip(&["link", "add", &ia, "type", "veth", "peer", "name", &ib]);
        ip(&["link", "set", &ia, "netns", &seg.a]);
        ip(&["link", "set", &ib, "netns", &seg.b]);
        ip(&["-n", &seg.a, "link", "set", &ia, "up"]);
        ip(&["-n", &seg.b, "link", "set", &ib, "up"]);
        seg
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = StdCommand::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
#[serial]
fn the_managing_node_alone_captures_what_it_sent_and_received_and_keeps_the_soc_spacing() {
    if !root_or_skip("the managing node's capture") {
        return;
    }
    if StdCommand::new("tshark").arg("--version").output().is_err() {
        eprintln!("skipping the managing node's capture: tshark is not installed (apt-get install tshark)");
        return;
    }
    let seg = Segment::new();
    let dir = tempfile::tempdir().unwrap();
    let cn_dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_jitterlab");
    // The CNs: the emulator alone in the other namespace, answering for
    // longer than the managing node runs.
    let cn_err = cn_dir.path().join("cn.err");
    let mut cns = StdCommand::new("ip")
        .args(["netns", "exec", &seg.b, bin, "run", "netcycle", "--no-db"])
        .args(["--role", "cn", "--interface", &format!("{}0", seg.b)])
        .args(["--cns", "3", "--cycle", "2ms", "--duration", "5s"])
        .env("JITTERLAB_DB", cn_dir.path().join("tests.db"))
        .env("JITTERLAB_JOURNAL", cn_dir.path().join("journal.json"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&cn_err).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    if let Some(status) = cns.try_wait().unwrap() {
        panic!(
            "the CN emulator ended at once ({status}): {}",
            std::fs::read_to_string(&cn_err).unwrap_or_default()
        );
    }
    let pcap = dir.path().join("mn.pcap");
    let json = dir.path().join("r.json");
    let out = StdCommand::new("ip")
        .args(["netns", "exec", &seg.a, bin, "run", "netcycle", "--no-db"])
        .args(["--role", "mn", "--interface", &format!("{}0", seg.a)])
        .args(["--cns", "3", "--cycle", "2ms", "--duration", "1s"])
        .arg("--pcap")
        .arg(&pcap)
        .arg("--json")
        .arg(&json)
        .env("JITTERLAB_DB", dir.path().join("tests.db"))
        .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
        .output()
        .unwrap();
    let _ = cns.kill();
    let _ = cns.wait();
    let r: Option<Value> = std::fs::read_to_string(&json)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    assert_exit_follows_held(
        out.status.code().unwrap(),
        r.as_ref(),
        &String::from_utf8_lossy(&out.stderr),
    );
    let r = r.unwrap();
    let d = &r["detail"];
    assert_eq!(d["role"], "mn");
    let t = &r["threads"][0];
    check_spacing(d, n(&t["skipped"]) - n(&t["overruns"]));
    let p = &d["pcap"];
    assert_eq!(n(&p["dropped"]), 0);
    let frames = tshark_fields(&pcap);
    assert_eq!(frames.len() as i64, n(&p["frames"]));
    // What the managing node sent (from 240) and received (from 1–3).
    let mut from_mn = std::collections::BTreeSet::new();
    let mut from_cns = std::collections::BTreeSet::new();
    for (i, f) in frames.iter().enumerate() {
        let field = |k: usize| f.get(k).map(String::as_str).unwrap_or("");
        assert!(!field(0).is_empty(), "frame {i} is not POWERLINK: {f:?}");
        assert!(field(3).is_empty(), "frame {i} malformed: {f:?}");
        assert!(field(4).is_empty(), "frame {i} has an expert note: {f:?}");
        match field(1) {
            "240" => from_mn.insert(field(0).to_string()),
            "1" | "2" | "3" => from_cns.insert(field(0).to_string()),
            other => panic!("frame {i} from node {other}: {f:?}"),
        };
    }
    // SoC, PReq, SoA and NMT commands sent; PRes and ASnd received.
    assert_eq!(from_mn, ["1", "3", "5", "6"].map(String::from).into());
    assert_eq!(from_cns, ["4", "6"].map(String::from).into());
    // Every SoC on the wire, bring-up included (one schedule), at least
    // the floor after the one before: the capture holds the SoCs' own
    // send stamps.
    let socs = soc_stamps(&pcap);
    assert!(socs.len() as i64 > n(&d["cycles"]), "{}", socs.len());
    let floor = n(&d["soc_spacing"]["floor_ns"]);
    let min = socs.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(
        min >= floor,
        "SoCs {min} ns apart, under the floor {floor} ns"
    );
    // `jitterlab analyze` reads it.
    let a = jl(dir.path()).arg("analyze").arg(&pcap).output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(
        String::from_utf8_lossy(&a.stdout).contains(&format!("SoC {}", socs.len())),
        "{}",
        String::from_utf8_lossy(&a.stdout)
    );
    drop(seg);
}

/// The SoCs' stamps in `pcap`, ns since the epoch (tshark's
/// `frame.time_epoch`, to the nanosecond).
fn soc_stamps(pcap: &Path) -> Vec<i64> {
    let out = StdCommand::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args([
            "-Y",
            "epl.mtyp == 1",
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (s, ns) = l.trim().split_once('.').unwrap();
            s.parse::<i64>().unwrap() * 1_000_000_000
                + format!("{ns:0<9}")[..9].parse::<i64>().unwrap()
        })
        .collect()
}
