//! `jitterlab run netcycle --role cn` against a managing node that speaks
//! the reference MN's own frames: a test peer in one network namespace
//! builds every frame from `ref_mn_cn.pcap` (the broadcast NMTResetNode,
//! SoC, PReq, SoA, the SDO set-up and the seventeen WriteByIndex of its
//! configuration manager, NMTResetConfiguration, EnableReadyToOperate,
//! StartNode), patching only node ids, MACs, flags and sequence numbers,
//! and brings the emulated CNs 1, 32 and 110 in the other namespace through
//! identification, the ER/EC handshake and SDO configuration to
//! Operational, then stops its SoCs and sees them fall back to
//! PRE_OPERATIONAL_1. Every IdentResponse must be 176 bytes and every
//! StatusResponse 72, both to node 255 and the ASnd multicast.
//!
//! The namespaces and raw sockets need root; elsewhere the test says so and
//! skips. The exact refusals of a bad `--identity` need nothing.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use jitterlab_sys::packet;
use serde_json::Value;
use serial_test::serial;

#[path = "common/probe_run.rs"]
mod probe_run;
use probe_run::{jl, n};

const PCAP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/powerlink/ref_mn_cn.pcap"
);
const ASND_MAC: [u8; 6] = [0x01, 0x11, 0x1e, 0, 0, 4];
const NODES: [u8; 3] = [1, 32, 110];
/// The reference MN's SDO writes to node 1, in order (frame numbers).
const WRITES: [usize; 17] = [
    1022, 1155, 1279, 1376, 1465, 1562, 1651, 1748, 1837, 1934, 2023, 2112, 2209, 2298, 2395, 2484,
    2581,
];

/// The frames of the capture, 1-based as Wireshark numbers them.
fn frames() -> Vec<Vec<u8>> {
    let pcap = std::fs::read(PCAP).unwrap();
    let mut out = vec![Vec::new()];
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(pcap[at + 16..at + 16 + len].to_vec());
        at += 16 + len;
    }
    out
}

/// Two namespaces joined by a veth pair, deleted on drop.
struct Net {
    mn: String,
    cn: String,
}

impl Net {
    fn new() -> Net {
        let id = std::process::id();
        let net = Net {
            mn: format!("jlpcm{id}"),
            cn: format!("jlpcc{id}"),
        };
        let ip = |args: &[&str]| {
            let s = StdCommand::new("ip").args(args).status().unwrap();
            assert!(s.success(), "ip {args:?}");
        };
        ip(&["netns", "add", &net.mn]);
        ip(&["netns", "add", &net.cn]);
        ip(&[
            "link",
            "add",
            "vpcm",
            "netns",
            &net.mn,
            "address",
            "02:00:00:00:00:f0",
            "type",
            "veth",
            "peer",
            "name",
            "vpcc",
            "netns",
            &net.cn,
        ]);
        ip(&["-n", &net.mn, "link", "set", "vpcm", "up"]);
        ip(&["-n", &net.cn, "link", "set", "vpcc", "up"]);
        net
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in [&self.mn, &self.cn] {
            let _ = StdCommand::new("ip").args(["netns", "delete", ns]).status();
        }
    }
}

/// The peer's socket, in the MN's namespace.
struct Wire {
    fd: OwnedFd,
    ifx: u32,
}

impl Wire {
    fn open(netns: &str) -> Wire {
        let ns = File::open(format!("/run/netns/{netns}")).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                jitterlab_sys::netns::enter_net_namespace(ns.as_fd()).unwrap();
                let ifx = packet::if_index("vpcm").unwrap();
                let fd = packet::packet_socket(0x88ab, ifx).unwrap();
                packet::set_receive_timeout(fd.as_fd(), Some(Duration::from_micros(200))).unwrap();
                Wire { fd, ifx }
            })
            .join()
            .unwrap()
        })
    }

    fn send(&self, f: &[u8]) {
        packet::send_frame(self.fd.as_fd(), self.ifx, 0, f).unwrap();
    }

    /// Every frame that comes until `until`.
    fn take_until(&self, until: Instant, mut on: impl FnMut(&[u8])) {
        let mut buf = [0u8; 1600];
        while Instant::now() < until {
            if let Ok(r) = packet::recv_stamped(self.fd.as_fd(), &mut buf, false) {
                on(&buf[..r.len]);
            }
        }
    }
}

/// Where the peer stands with one CN.
#[derive(Debug, Default)]
struct Cn {
    id: u8,
    mac: Option<[u8; 6]>,
    identified: bool,
    state: u8,
    rs: u8,
    /// ER/EC: requests sent with ER=1, the phase (0 wait EC=1, 1 wait EC=0,
    /// 2 ready), the ER of the last request.
    er1_sent: u32,
    ec_phase: u8,
    last_er: bool,
    /// The script: 0 init, 1 valid, 2..=18 the writes, 19 reset
    /// configuration, 20 re-identified, 21 enable, 22 start, 23 done.
    step: usize,
    /// Waiting for the CN's answer to the last SDO frame.
    awaiting: bool,
    sdo_recv: u8,
    sdo_send: u8,
    answers: Vec<(u8, u8, Vec<u8>)>,
    idents: Vec<(u8, u32, u32)>,
    status: Vec<(u8, bool)>,
    operational_pres: Option<Vec<u8>>,
}

fn u32_at(f: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(f[at..at + 4].try_into().unwrap())
}

impl Cn {
    /// Takes a frame the CN sent (its id is `f[16]`).
    fn take(&mut self, f: &[u8]) {
        match f[14] {
            4 => {
                self.state = f[17];
                self.rs = f[19] & 7;
                if f[17] == 0xfd && f[18] & 1 == 1 && self.operational_pres.is_none() {
                    self.operational_pres = Some(f.to_vec());
                }
            }
            6 => {
                match f[17] {
                    1 | 2 => {
                        assert_eq!(f[..6], ASND_MAC, "ASnd multicast: {f:02x?}");
                        assert_eq!(f[15], 255, "to the broadcast node id: {f:02x?}");
                    }
                    _ => assert_eq!(f[15], 240, "SDO to the MN: {f:02x?}"),
                }
                match f[17] {
                    1 => {
                        assert_eq!(f.len(), 176, "IdentResponse");
                        self.mac = Some(f[6..12].try_into().unwrap());
                        self.identified = true;
                        self.state = f[20];
                        self.rs = f[19] & 7;
                        self.idents.push((f[20], u32_at(f, 68), u32_at(f, 72)));
                        if self.step == 20 {
                            self.step = 21;
                        }
                    }
                    2 => {
                        assert_eq!(f.len(), 72, "StatusResponse");
                        let ec = f[18] & 0x08 != 0;
                        self.state = f[20];
                        self.rs = f[19] & 7;
                        self.status.push((f[20], ec));
                        // The reference MN's handshake (README rule 8).
                        match (self.ec_phase, ec) {
                            (0, true) if self.last_er && self.er1_sent >= 2 => self.ec_phase = 1,
                            (1, false) if !self.last_er => self.ec_phase = 2,
                            _ => {}
                        }
                    }
                    5 => {
                        self.sdo_recv = f[19] >> 2;
                        if f[25] != 0 {
                            self.answers.push((f[23], f[24], f.to_vec()));
                        }
                        if self.awaiting {
                            self.awaiting = false;
                            self.step += 1;
                        }
                    }
                    s => panic!("CN {} sent ASnd service {s}", self.id),
                }
            }
            t => panic!("CN {} sent message type {t}", self.id),
        }
    }
}

/// The reference MN's moves, one cycle at a time.
struct Peer {
    wire: Wire,
    frames: Vec<Vec<u8>>,
    cns: Vec<Cn>,
    turn: usize,
}

impl Peer {
    fn cn(&mut self, id: u8) -> Option<&mut Cn> {
        self.cns.iter_mut().find(|c| c.id == id)
    }

    fn take_until(&mut self, until: Instant) {
        let mut got = Vec::new();
        self.wire.take_until(until, |f| got.push(f.to_vec()));
        for f in got {
            let src = f[16];
            if let Some(c) = self.cn(src) {
                c.take(&f);
            }
        }
    }

    fn soa(&self, nmt: u8, service: u8, target: u8, er: bool) {
        let mut f = self.frames[11].clone();
        f[17] = nmt;
        f[18] = if er { 0x02 } else { 0 };
        f[20] = service;
        f[21] = target;
        self.wire.send(&f);
    }

    /// The MN's own frame for CN `i` in this cycle's asynchronous slot,
    /// if any: (SoA service, frame).
    fn own_frame(&mut self, i: usize) -> Option<(u8, Vec<u8>)> {
        let c = &self.cns[i];
        let id = c.id;
        if c.awaiting {
            return None;
        }
        // The sequence layer: (ReceiveSeq, ReceiveCon), (SendSeq, SendCon).
        let sdo = |template: usize, r: (u8, u8), s: (u8, u8)| {
            let mut f = self.frames[template].clone();
            f[15] = id;
            f[18] = r.0 << 2 | r.1;
            f[19] = s.0 << 2 | s.1;
            (255u8, f)
        };
        let out = match c.step {
            0 => sdo(879, (0, 0), (0, 1)),
            1 => sdo(933, (c.sdo_recv, 1), (c.sdo_send, 2)),
            2..=18 => sdo(
                WRITES[c.step - 2],
                (c.sdo_recv, 2),
                ((c.sdo_send + 1) & 63, 2),
            ),
            19 | 21 | 22 => {
                let template = match c.step {
                    19 => 2628,
                    21 if c.state == 0x5d => 2705,
                    22 if c.state == 0x6d => 2749,
                    _ => return None,
                };
                let mut f = self.frames[template].clone();
                f[15] = id;
                let c = &mut self.cns[i];
                c.step += 1;
                if c.step == 20 {
                    c.identified = false;
                }
                return Some((3, f));
            }
            _ => return None,
        };
        let c = &mut self.cns[i];
        if c.step >= 2 {
            c.sdo_send = (c.sdo_send + 1) & 63;
        }
        c.awaiting = true;
        Some(out)
    }

    /// One cycle of `cycle`: SoC, a PReq per identified CN, then one
    /// asynchronous slot.
    fn cycle(&mut self, cycle: Duration, nmt: u8) {
        let start = Instant::now();
        self.wire.send(&self.frames[858]);
        for c in &self.cns {
            let Some(mac) = c.mac.filter(|_| c.identified) else {
                continue;
            };
            let mut f = self.frames[2751].clone();
            f[..6].copy_from_slice(&mac);
            f[15] = c.id;
            f[17] = 0;
            self.wire.send(&f);
        }
        self.take_until(start + cycle / 5);
        // The asynchronous slot: the first CN, in turn, with something to do.
        let n = self.cns.len();
        let mut slot = None;
        for k in 0..n {
            let i = (self.turn + k) % n;
            let c = &self.cns[i];
            let (id, phase) = (c.id, c.ec_phase);
            if c.rs > 0 {
                slot = Some((255, id, false, None));
            } else if !c.identified {
                slot = Some((1, id, false, None));
            } else if phase < 2 {
                let er = phase == 0;
                let c = &mut self.cns[i];
                c.last_er = er;
                c.er1_sent += u32::from(er);
                slot = Some((2, id, er, None));
            } else if let Some((service, f)) = self.own_frame(i) {
                slot = Some((service, 240, false, Some(f)));
            } else {
                continue;
            }
            self.turn = i + 1;
            break;
        }
        match slot {
            Some((service, target, er, frame)) => {
                self.soa(nmt, service, target, er);
                if let Some(f) = frame {
                    self.wire.send(&f);
                }
            }
            None => self.soa(nmt, 0, 0, false),
        }
        self.take_until(start + cycle);
    }
}

#[test]
#[serial(netns)]
fn a_peer_speaking_the_reference_mns_frames_brings_our_cns_to_operational() {
    if !probe_run::root_or_skip("the CN emulator test", "network namespaces and raw sockets") {
        return;
    }
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cn.json");
    let pcap = dir.path().join("cn.pcap");
    let spawn = || {
        StdCommand::new("ip")
            .args(["netns", "exec", &net.cn])
            .arg(assert_cmd::cargo::cargo_bin("jitterlab"))
            .args([
                "run",
                "netcycle",
                "--no-db",
                "--role",
                "cn",
                "--node-ids",
                "1,32,110",
                "--interface",
                "vpcc",
                "--cycle",
                "5ms",
                "--duration",
                "12s",
                "--identity",
                "vendor=0x2a,product=7",
            ])
            .arg("--json")
            .arg(&json)
            .arg("--pcap")
            .arg(&pcap)
            .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut child: Child = spawn();
    let frames = frames();
    let mut peer = Peer {
        wire: Wire::open(&net.mn),
        frames,
        cns: NODES
            .iter()
            .map(|&id| Cn {
                id,
                ..Cn::default()
            })
            .collect(),
        turn: 0,
    };
    // Once the emulator answers (node 1 to an IdentRequest), the MN's
    // broadcast NMTResetNode (frame 12): silent CNs for 600 ms.
    // Other jitterlab runs on this machine hold its lock for a while: the
    // run is started again until it has it.
    let ready = Instant::now();
    loop {
        assert!(
            ready.elapsed() < Duration::from_secs(120),
            "the emulator never answered"
        );
        if child.try_wait().unwrap().is_some() {
            let err = child.wait_with_output_or_kill(Duration::ZERO);
            assert!(
                err.contains("is changing this machine"),
                "the run ended: {err}"
            );
            std::thread::sleep(Duration::from_millis(500));
            child = spawn();
        }
        peer.soa(0x1d, 1, 1, false);
        peer.take_until(Instant::now() + Duration::from_millis(20));
        if peer.cns[0].identified {
            break;
        }
    }
    let pings = peer.cns[0].idents.len() as i64;
    for c in &mut peer.cns {
        *c = Cn {
            id: c.id,
            ..Cn::default()
        };
    }
    peer.wire.send(&peer.frames[12].clone());
    let reset_at = Instant::now();
    let cycle = Duration::from_millis(5);
    let mut first_ident = None;
    let end = Instant::now() + Duration::from_secs(6);
    while Instant::now() < end && peer.cns.iter().any(|c| c.operational_pres.is_none()) {
        peer.cycle(cycle, 0xfd);
        if first_ident.is_none() && peer.cns.iter().any(|c| c.identified) {
            first_ident = Some(reset_at.elapsed());
        }
    }
    let up = reset_at.elapsed();
    // Stop the SoCs: only SoA StatusRequests to node 1 for 1.5 s.
    let mut fell_back = None;
    let stop = Instant::now();
    while stop.elapsed() < Duration::from_millis(1500) && fell_back.is_none() {
        let t = Instant::now();
        peer.soa(0xfd, 2, 1, false);
        peer.take_until(t + Duration::from_millis(10));
        if peer.cns[0].status.last().is_some_and(|s| s.0 == 0x1d) {
            fell_back = Some(stop.elapsed());
        }
    }
    let status = child.wait_with_output_or_kill(Duration::from_secs(20));
    let text =
        std::fs::read_to_string(&json).unwrap_or_else(|_| panic!("no result; stderr:\n{status}"));
    let r: Value = serde_json::from_str(&text).unwrap();
    drop(net);

    let first = first_ident.expect("an IdentResponse");
    assert!(
        first >= Duration::from_millis(600),
        "answered {first:?} after the NMTResetNode"
    );
    for c in &peer.cns {
        let id = c.id;
        assert!(
            c.operational_pres.is_some(),
            "CN {id} not operational after {up:?}: {c:?}"
        );
        // The writes, answered in order without an abort.
        let ts: Vec<u8> = c.answers.iter().map(|a| a.0).collect();
        assert_eq!(ts, (0..=16).collect::<Vec<u8>>(), "CN {id}");
        for (t, flags, f) in &c.answers {
            assert_eq!(
                (*flags, f.len()),
                (0x80, 60),
                "CN {id} transaction {t}: {f:02x?}"
            );
        }
        // ER/EC: EC=1 twice for ER=1, then EC=0 for ER=0.
        assert_eq!(
            c.status[..2].iter().map(|s| s.1).collect::<Vec<_>>(),
            [true, true]
        );
        assert_eq!(c.ec_phase, 2, "CN {id}: {:?}", c.status);
        // Re-identified with the configuration stamp written.
        assert_eq!(c.idents.first().map(|i| (i.1, i.2)), Some((0, 0)));
        assert_eq!(
            c.idents.last().map(|i| (i.1, i.2)),
            Some((0x3124, 0x0373_5955))
        );
        let p = c.operational_pres.as_ref().unwrap();
        // Size 1: the PReq's output (frame 2751's 0x08) looped back.
        assert_eq!(
            p[14..25],
            [4, 255, id, 0xfd, 1, 0, 0, 0, 1, 0, 0x08],
            "CN {id}"
        );
    }
    assert!(
        fell_back.is_some(),
        "node 1 never left Operational: {:?}",
        peer.cns[0].status
    );

    let d = &r["detail"];
    let cn = &d["cn"];
    let ids: Vec<i64> = cn["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| n(&x["node"]))
        .collect();
    assert_eq!(ids, [1, 32, 110]);
    let s = &cn["services"];
    assert_eq!(n(&s["sdo_received"]["WriteByIndex"]), 51, "{s}");
    assert_eq!(n(&s["sdo_answered"]["WriteByIndex"]), 51, "{s}");
    assert_eq!(n(&s["sdo_connections"]), 3, "{s}");
    assert_eq!(n(&s["asnd_received"]["NMTCommand"]), 1 + 3 * 3, "{s}");
    assert!(n(&s["cycle_errors"]) >= 3, "{s}");
    let idents: i64 = peer.cns.iter().map(|c| c.idents.len() as i64).sum();
    assert!(idents >= 6, "each CN identified twice at least: {idents}");
    assert_eq!(
        n(&s["asnd_sent"]["IdentResponse"]),
        pings + idents,
        "the emulator's count is what the peer received: {s}"
    );
    assert_eq!(n(&cn["malformed"]), 0);
    assert_eq!(n(&cn["send_errors"]), 0);
    no_namespace_left();
    wireshark_reads_it_all(&pcap);
}

/// Wireshark's dissector reads every frame of the CN side's capture (the
/// peer's and the CNs' own: SDO, IdentResponse, StatusResponse, PRes)
/// with no malformed mark and no expert warning; skipped, saying so, where
/// Debian's `tshark` is missing.
fn wireshark_reads_it_all(pcap: &Path) {
    if StdCommand::new("tshark").arg("--version").output().is_err() {
        eprintln!("skipping the dissector check: no tshark (Debian package tshark)");
        return;
    }
    let fields = |filter: &str| {
        let out = StdCommand::new("tshark")
            .arg("-r")
            .arg(pcap)
            .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(fields("_ws.malformed || _ws.expert.severity >= warning"), 0);
    // The CNs' SDO answers, each a response (51 writes, 3 set-ups at least).
    assert!(fields("epl.asnd.svid == 5 && epl.src != 240") >= 54);
    assert!(fields("epl.asnd.svid == 2 && epl.src != 240 && frame.len == 72") >= 6);
}

fn no_namespace_left() {
    let out = StdCommand::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let me = format!("{}", std::process::id());
    assert!(!list.contains(&me), "left behind: {list}");
}

trait WaitOrKill {
    fn wait_with_output_or_kill(self, limit: Duration) -> String;
}

impl WaitOrKill for Child {
    /// Waits up to `limit` for the run to end (else kills it); its stderr.
    fn wait_with_output_or_kill(self, limit: Duration) -> String {
        let mut this = self;
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if this.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if this.try_wait().unwrap().is_none() {
            let _ = this.kill();
        }
        let out = this.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

#[test]
fn a_bad_identity_is_refused_with_exit_2_saying_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (value, why) in [
        (
            "vendor=0x2a,,product=7",
            "\"vendor=0x2a,,product=7\" has an empty item: give key=value pairs separated by commas, e.g. vendor=0x2a,product=7",
        ),
        ("vendor", "\"vendor\" has no value: write vendor=NUMBER"),
        (
            "colour=3",
            "\"colour\" is not an identity field: use vendor, product, revision, serial or device-type",
        ),
        ("serial=1,serial=2", "serial is given twice"),
        (
            "product=0x1ffffffff",
            "product=0x1ffffffff: not a 32-bit number; write it in decimal or as 0x hex",
        ),
    ] {
        let out = jl(dir.path())
            .args(["run", "netcycle", "--no-db", "--role", "cn", "--interface", "lo", "--identity", value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{value}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "jitterlab: error: invalid value '{value}' for '--identity <LIST>': {why} (see jitterlab --help)\n"
            ),
            "{value}"
        );
    }
    let out = jl(dir.path())
        .args([
            "run",
            "netcycle",
            "--no-db",
            "--role",
            "mn",
            "--interface",
            "lo",
            "--identity",
            "vendor=1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitterlab: error: --identity is what the emulated CNs report; use it with --role cn or --role both\n"
    );
}
