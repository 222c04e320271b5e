//! `jitterlab analyze FILE` end to end: a capture written by our own
//! `PcapWriter` (through the hidden `__synth-capture`) gives exact figures;
//! the same capture converted to pcapng by Wireshark's `editcap` gives
//! identical ones; `tshark -r` reads our file without a complaint; a file
//! cut short is read to its last whole record; what dumpcap writes of
//! `lo` (Ethernet) and of `any` (Linux cooked) in a namespace of the test's
//! own reads with every frame; bad input exits 2 with a message that names
//! what to fix.
//!
//! The conversions need Debian's `wireshark-common` (editcap, dumpcap) and
//! `tshark`, the dumpcap test root (a network namespace) and python3 (to
//! send the frames); without them those tests say so and skip (CI runs as
//! root and installs tshark, which brings wireshark-common).

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use assert_cmd::Command;
use serde_json::Value;

fn jl() -> Command {
    Command::cargo_bin("jitterlab").unwrap()
}

/// Writes a synthetic capture of `frames` frames into `dir`.
fn synth(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let path = dir.join(name);
    jl().args(["__synth-capture", "--cns", "3", "--cycle", "500us"])
        .args(extra)
        .arg(&path)
        .assert()
        .success();
    path
}

fn analyze_json(path: &Path, extra: &[&str]) -> Value {
    let out = jl()
        .arg("analyze")
        .arg(path)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn have(tool: &str, package: &str) -> bool {
    if Std::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    eprintln!("skipping: {tool} is not installed (Debian package {package}; CI installs it)");
    false
}

#[test]
fn a_steady_synthetic_capture_gives_exact_figures() {
    let dir = tempfile::tempdir().unwrap();
    // 100 cycles of SoC, 3 × (PReq, PRes), SoA; no jitter.
    let cap = synth(
        dir.path(),
        "steady.pcap",
        &["--frames", "800", "--jitter", "0"],
    );
    let d = analyze_json(&cap, &[]);
    assert_eq!(d["schema_version"], 1);
    assert_eq!(d["format"], "pcap (nanosecond stamps, little-endian)");
    assert_eq!(d["link_types"][0]["name"], "Ethernet");
    assert_eq!(d["held"], true);
    let a = &d["analysis"];
    assert_eq!(a["frames"]["total"], 800);
    assert_eq!(a["frames"]["soc"], 100);
    assert_eq!(a["frames"]["pres"], 300);
    assert_eq!(a["cycle_time"]["ns"], 500_000);
    assert_eq!(a["cycle_time"]["inferred"], true);
    for clock in ["wire", "net_time"] {
        let p = &a[clock]["period"];
        assert_eq!(
            [&p["count"], &p["min"], &p["max"], &a[clock]["deviation"]],
            [99, 500_000, 500_000, 0],
            "{clock}"
        );
    }
    // RelativeTime starts at 0 (not distributed yet), then advances.
    assert_eq!(a["relative_time"]["period"]["count"], 98);
    assert_eq!(a["relative_time"]["stalled"], 1);
    assert_eq!(a["closed_cycles"], 100);
    assert_eq!(a["late_cycles"], 0);
    let cns = a["cns"].as_array().unwrap();
    assert_eq!(cns.len(), 3);
    for (i, c) in cns.iter().enumerate() {
        assert_eq!(c["node"], i + 1);
        assert_eq!(
            (&c["preq"], &c["answered"], &c["missed"]),
            (&100.into(), &100.into(), &0.into())
        );
        // Slots of 20 µs; the PRes 8 µs into it, give or take 1 µs.
        let r = &c["response"];
        assert!(r["min"].as_i64().unwrap() >= 7_000 && r["max"].as_i64().unwrap() <= 9_000);
        assert_eq!(c["nmt_name"], "NMT_CS_OPERATIONAL");
    }
    assert_eq!(a["mn_nmt_name"], "NMT_MS_OPERATIONAL");
    // Given a cycle of 499 µs the deviation is 1 µs and every cycle still
    // ends in time (its SoA 63 µs after its SoC).
    let d = analyze_json(&cap, &["--cycle", "499us"]);
    assert_eq!(d["analysis"]["wire"]["deviation"], 1_000);
    assert_eq!(d["analysis"]["cycle_time"]["inferred"], false);
    assert_eq!(d["cycle_time_rule"], Value::Null);
}

#[test]
fn missed_polls_and_the_text_report() {
    let dir = tempfile::tempdir().unwrap();
    // Every 4th poll unanswered: 10 cycles, 30 polls, 7 missed.
    let cap = synth(
        dir.path(),
        "miss.pcap",
        &["--frames", "73", "--jitter", "0", "--miss-every", "4"],
    );
    let d = analyze_json(&cap, &["--cycle", "500us"]);
    let cns = d["analysis"]["cns"].as_array().unwrap();
    let missed: Vec<i64> = cns.iter().map(|c| c["missed"].as_i64().unwrap()).collect();
    let preq: Vec<i64> = cns.iter().map(|c| c["preq"].as_i64().unwrap()).collect();
    assert_eq!(preq, vec![10, 10, 10]);
    assert_eq!(missed.iter().sum::<i64>(), 7);
    assert_eq!(d["held"], false);
    let out = jl()
        .arg("analyze")
        .arg(&cap)
        .args(["--cycle", "500us"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1],
        "  pcap (nanosecond stamps, little-endian), Ethernet; 73 frames over 4.563ms"
    );
    assert_eq!(
        lines[2],
        "frames: 73 POWERLINK (SoC 10, PReq 30, PRes 23, PResMN 0, SoA 10, ASnd 0), 0 other, \
         0 malformed, 0 unsupported"
    );
    assert_eq!(lines[3], "cycle time T0: 500 µs (given)");
    let wire = lines
        .iter()
        .find(|l| l.starts_with("  wire (capture stamps)"))
        .unwrap();
    assert_eq!(
        wire.split_whitespace()
            .skip(3)
            .collect::<Vec<_>>()
            .join(" "),
        "9 500.0 µs 500.0 µs 0.0 µs 500.0 µs 0.0 µs 500.0 µs 500.0 µs 500.0 µs"
    );
    assert!(text.contains("\ncycle time held: no (0 cycles over T0, 7 missed PRes)\n"));
}

#[test]
fn pcapng_from_editcap_gives_the_same_figures_and_tshark_reads_our_file() {
    if !have("editcap", "wireshark-common") || !have("tshark", "tshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = synth(
        dir.path(),
        "c.pcap",
        &["--frames", "5000", "--miss-every", "97"],
    );
    let ng = dir.path().join("c.pcapng");
    let st = Std::new("editcap")
        .args(["-F", "pcapng"])
        .arg(&cap)
        .arg(&ng)
        .status()
        .unwrap();
    assert!(st.success());
    let a = analyze_json(&cap, &[]);
    let b = analyze_json(&ng, &[]);
    assert_eq!(b["format"], "pcapng");
    assert_eq!(a["analysis"], b["analysis"]);
    assert_eq!(
        (&a["held"], &a["link_types"]),
        (&b["held"], &b["link_types"])
    );
    assert_eq!(a["analysis"]["frames"]["total"], 5000);
    // tshark reads every frame of our pcap, without an error or a warning.
    let out = Std::new("tshark").arg("-r").arg(&cap).output().unwrap();
    assert!(out.status.success());
    // (As root tshark warns that it runs as root: not about the file.)
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("Running as user"))
        .collect();
    assert_eq!(complaints, Vec::<&str>::new());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 5000);
}

#[test]
fn a_capture_cut_short_is_read_to_its_last_whole_record() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synth(dir.path(), "cut.pcap", &["--frames", "80", "--jitter", "0"]);
    let bytes = std::fs::read(&cap).unwrap();
    std::fs::write(&cap, &bytes[..bytes.len() - 10]).unwrap();
    let d = analyze_json(&cap, &[]);
    assert_eq!(d["truncated_records"], 1);
    assert_eq!(d["analysis"]["frames"]["total"], 79);
    let out = jl().arg("analyze").arg(&cap).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(
        "\n  the last record is cut short (the capture stopped while writing it): not read\n"
    ));
}

fn refused(file: &Path) -> String {
    let out = jl().arg("analyze").arg(file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn bad_input_exits_2_naming_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("page.pcap");
    std::fs::write(&html, "<!DOCTYPE html>").unwrap();
    assert_eq!(
        refused(&html),
        format!(
            "jitterlab: error: {} is not a pcap or pcapng capture (starts with 3c 21 44 4f)\n",
            html.display()
        )
    );
    let missing = dir.path().join("missing.pcap");
    assert_eq!(
        refused(&missing),
        format!(
            "jitterlab: error: {} does not exist: give the path of a pcap or pcapng capture\n",
            missing.display()
        )
    );
    // A capture of IPv4 and ARP only.
    let mut v = Vec::new();
    v.extend(0xa1b2_c3d4u32.to_le_bytes());
    v.extend([2, 0, 4, 0]);
    v.extend([0; 8]);
    v.extend(65535u32.to_le_bytes());
    v.extend(1u32.to_le_bytes());
    for t in [0x0800u16, 0x0800, 0x0806] {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&t.to_be_bytes());
        v.extend([0; 8]);
        v.extend(60u32.to_le_bytes());
        v.extend(60u32.to_le_bytes());
        v.extend(f);
    }
    let ip = dir.path().join("ip.pcap");
    std::fs::write(&ip, v).unwrap();
    assert_eq!(
        refused(&ip),
        format!(
            "jitterlab: error: {} holds no POWERLINK frame (EtherType 0x88ab): its 3 frames are \
             0x0800 (IPv4) 2, 0x0806 (ARP) 1; capture on the POWERLINK segment with tcpdump -i \
             IF -w FILE ether proto 0x88ab\n",
            ip.display()
        )
    );
}

/// True when this test runs as root (the owner of `/proc/self`).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Sends every frame of a pcap (nanosecond, little-endian: our writer's)
/// on `lo`, through an AF_PACKET socket.
const SEND_PY: &str = r#"
import socket, struct, sys, time
d = open(sys.argv[1], 'rb').read()
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('lo', 0))
o = 24
while o < len(d):
    n = struct.unpack('<I', d[o + 8:o + 12])[0]
    f = d[o + 16:o + 16 + n]
    if f[14] == 1:
        time.sleep(0.0002)
    s.send(f)
    o += 16 + n
"#;

/// Deletes the network namespace it names when dropped.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Std::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn dumpcap_captures_of_lo_and_of_any_read_as_ethernet_and_cooked() {
    if !is_root() {
        eprintln!("skipping: capturing in a network namespace needs root (CI runs as root)");
        return;
    }
    if !have("dumpcap", "wireshark-common") || !have("python3", "python3") {
        return;
    }
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let cap = synth(
        dir.path(),
        "sent.pcap",
        &["--frames", "800", "--jitter", "0"],
    );
    let ns = Netns(format!("jlpa{}", std::process::id()));
    assert!(Std::new("ip")
        .args(["netns", "add", &ns.0])
        .status()
        .unwrap()
        .success());
    assert!(Std::new("ip")
        .args(["-n", &ns.0, "link", "set", "lo", "up"])
        .status()
        .unwrap()
        .success());
    let mut links = Vec::new();
    for ifc in ["lo", "any"] {
        let out = dir.path().join(format!("{ifc}.pcapng"));
        let mut dumpcap = Std::new("ip")
            .args(["netns", "exec", &ns.0, "dumpcap", "-i", ifc])
            .args([
                "-f",
                "ether proto 0x88ab",
                "-c",
                "800",
                "-a",
                "duration:30",
                "-w",
            ])
            .arg(&out)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Send once dumpcap says it is capturing.
        let mut err = BufReader::new(dumpcap.stderr.take().unwrap());
        let mut line = String::new();
        while err.read_line(&mut line).unwrap() > 0 && !line.contains("Capturing on") {
            line.clear();
        }
        assert!(
            line.contains("Capturing on"),
            "dumpcap did not start: {line}"
        );
        let sent = Std::new("ip")
            .args(["netns", "exec", &ns.0, "python3", "-c", SEND_PY])
            .arg(&cap)
            .status()
            .unwrap();
        assert!(sent.success());
        assert!(dumpcap.wait().unwrap().success());
        let d = analyze_json(&out, &["--cycle", "500us"]);
        assert_eq!(d["format"], "pcapng");
        let f = &d["analysis"]["frames"];
        assert_eq!(
            [
                &f["total"],
                &f["soc"],
                &f["preq"],
                &f["pres"],
                &f["soa"],
                &f["malformed"]
            ],
            [800, 100, 300, 300, 100, 0],
            "{ifc}"
        );
        for c in d["analysis"]["cns"].as_array().unwrap() {
            assert_eq!((&c["preq"], &c["answered"]), (&100.into(), &100.into()));
        }
        links.push(d["link_types"][0]["code"].as_u64().unwrap());
    }
    // lo is Ethernet; any is Linux cooked, SLL or SLL2 by libpcap's choice.
    assert_eq!(links[0], 1);
    assert!(links[1] == 113 || links[1] == 276, "{links:?}");
}
