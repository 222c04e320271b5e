//! `jitterlab run netcycle --role mn` against a test peer that answers as
//! the reference CN (openPOWERLINK V2.7.2, `demo_cn_console -n 1`) did in
//! `tests/fixtures/powerlink/ref_mn_cn.pcap`: its frames are the captured
//! ones, patched only where the state must show — its 176-byte
//! IdentResponse to node 255 (NMT state, stored configuration date and
//! time), its 72-byte StatusResponse (EC as the reference CN sets it in
//! answer to ER), its SDO replies re-sequenced (the sequence numbers and
//! transaction id; the abort of 0x1011/1 and 0x1010/1 as captured) and its
//! PRes (NMT state). The peer lives in a network namespace of its own, at
//! the far end of a veth pair whose near end the managing node takes.
//!
//! What is proven: the MN brings that CN through identification, the ER/EC
//! handshake, the configuration over SDO (16 writes in the reference CFM's
//! order for one output byte and no input), NMTResetConfiguration, EnableReadyToOperate and StartNode to
//! Operational and measures; a CN that never answers SDO fails the
//! bring-up naming the CN and the object; `--chaining` against this CN,
//! which does not chain, exits 2 naming it.
//!
//! Root only (namespaces, raw sockets); elsewhere the tests say so and skip.

use std::fs::File;
use std::os::fd::AsFd;
use std::process::Command as StdCommand;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jitterlab_core::powerlink::cdc::{write, written_len, Entry};
use jitterlab_core::powerlink::sdo::{CommandId, IndexAddress};
use jitterlab_core::powerlink::{
    decode, ASndService, Frame, NmtCommandId, RequestedService, MAC_ASND, MAC_SOA, MAC_SOC,
};
use jitterlab_sys::{netns, packet};
use pcap_file::pcap::PcapReader;
use serial_test::serial;

#[path = "common/probe_run.rs"]
mod probe_run;
use probe_run::{assert_exit_follows_held, jl, n};

const REF_MN_CN: &[u8] = include_bytes!("fixtures/powerlink/ref_mn_cn.pcap");

/// The captured frames of the reference CN 1 the peer answers with.
struct Captured {
    ident: Vec<u8>,
    status: Vec<u8>,
    sdo_init: Vec<u8>,
    sdo_valid: Vec<u8>,
    sdo_abort: Vec<u8>,
    sdo_written: Vec<u8>,
    pres: Vec<u8>,
}

fn captured() -> Captured {
    let mut reader = PcapReader::new(REF_MN_CN).unwrap();
    let mut all = vec![Vec::new()];
    while let Some(p) = reader.next_packet() {
        all.push(p.unwrap().data.into_owned());
    }
    let c = Captured {
        ident: all[868].clone(),
        status: all[875].clone(),
        sdo_init: all[897].clone(),
        sdo_valid: all[986].clone(),
        sdo_abort: all[1093].clone(),
        sdo_written: all[1181].clone(),
        pres: all[2752].clone(),
    };
    assert_eq!(
        (c.ident.len(), c.status.len(), c.ident[15], c.status[15]),
        (176, 72, 255, 255),
        "the reference CN's responses go to node 255"
    );
    c
}

/// What the peer saw and how it behaves.
#[derive(Default)]
struct Seen {
    /// The objects written to it over SDO, in order.
    written: Vec<(u16, u8)>,
    /// NMT commands it took.
    commands: Vec<u8>,
}

/// The peer's state machine: a reference CN 1 replayed.
struct Peer {
    c: Captured,
    answer_sdo: bool,
    nmt: u8,
    ec: bool,
    last_er: bool,
    seq: u8,
    pending: Option<Vec<u8>>,
    written_stamp: (u32, u32),
    stored_stamp: (u32, u32),
}

impl Peer {
    fn answer(&mut self, f: &[u8], seen: &Mutex<Seen>) -> Option<Vec<u8>> {
        let r = decode(f).ok()?;
        match r.frame {
            Frame::Soc(_) => {
                if self.nmt == 0x1D {
                    self.nmt = 0x5D;
                }
                None
            }
            Frame::PReq(p) if p.node == 1 => {
                let mut out = self.c.pres.clone();
                out[17] = self.nmt;
                out[18] = u8::from(self.nmt == 0xFD);
                Some(out)
            }
            Frame::Soa(s) if s.target == 1 => match s.service {
                RequestedService::IDENT_REQUEST => {
                    let mut out = self.c.ident.clone();
                    out[20] = self.nmt;
                    out[68..72].copy_from_slice(&self.stored_stamp.0.to_le_bytes());
                    out[72..76].copy_from_slice(&self.stored_stamp.1.to_le_bytes());
                    Some(out)
                }
                RequestedService::STATUS_REQUEST => {
                    let mut out = self.c.status.clone();
                    out[18] = if self.ec { 0x08 } else { 0 };
                    out[19] = 0;
                    out[20] = self.nmt;
                    // The reference CN looks at ER after it answered.
                    if s.er && !self.last_er {
                        self.ec = true;
                    } else if !s.er && self.last_er {
                        self.ec = false;
                    }
                    self.last_er = s.er;
                    Some(out)
                }
                RequestedService::UNSPECIFIED_INVITE => self.pending.take(),
                _ => None,
            },
            Frame::ASnd(a) if a.dest == 1 || a.dest == 255 => match a.service {
                ASndService::NmtCommand(cmd) => {
                    seen.lock().unwrap().commands.push(cmd.id.0);
                    match cmd.id {
                        NmtCommandId::RESET_CONFIGURATION | NmtCommandId::RESET_NODE => {
                            self.nmt = 0x1D;
                            self.stored_stamp = self.written_stamp;
                            self.seq = 0;
                        }
                        NmtCommandId::ENABLE_READY_TO_OPERATE if self.nmt == 0x5D => {
                            self.nmt = 0x6D
                        }
                        NmtCommandId::START_NODE if self.nmt == 0x6D => self.nmt = 0xFD,
                        _ => {}
                    }
                    None
                }
                ASndService::Sdo(sdo) if self.answer_sdo && a.dest == 1 => {
                    let (q, c) = (sdo.seq, sdo.command);
                    let (base, con) = if q.send_con.0 == 1 {
                        (&self.c.sdo_init, 1)
                    } else if q.send_con.0 == 2 && q.receive_con.0 == 1 {
                        (&self.c.sdo_valid, 2)
                    } else if c.command == CommandId::WRITE_BY_INDEX {
                        let index = u16::from_le_bytes([c.data[0], c.data[1]]);
                        let sub = c.data[2];
                        let value = &c.data[4..];
                        seen.lock().unwrap().written.push((index, sub));
                        let v = u32::from_le_bytes(value.try_into().unwrap_or([0; 4]));
                        match (index, sub) {
                            (0x1020, 1) => self.written_stamp.0 = v,
                            (0x1020, 2) => self.written_stamp.1 = v,
                            _ => {}
                        }
                        self.seq = (self.seq + 1) % 64;
                        let base = match (index, sub) {
                            (0x1011, 1) | (0x1010, 1) => &self.c.sdo_abort,
                            _ => &self.c.sdo_written,
                        };
                        let mut out = base.clone();
                        out[23] = c.transaction;
                        out[18] = q.send_seq << 2 | 2;
                        out[19] = self.seq << 2 | 2;
                        self.pending = Some(out);
                        return None;
                    } else {
                        return None;
                    };
                    let mut out = base.clone();
                    out[18] = q.send_seq << 2 | con;
                    out[19] = self.seq << 2 | con;
                    self.pending = Some(out);
                    None
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// A veth pair: `near` in this namespace (the MN's), `far` in namespace
/// `ns` (the peer's, MAC 02:00:00:00:00:01 as the captured CN's); deleted
/// on drop.
struct Pair {
    ns: String,
    near: String,
}

fn ip(args: &[&str]) {
    let out = StdCommand::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let id = std::process::id();
        let (ns, near) = (format!("jlmn{tag}{id}"), format!("jlm{tag}{id}"));
        ip(&["netns", "add", &ns]);
        ip(&[
            "link", "add", &near, "type", "veth", "peer", "name", "peer0", "netns", &ns,
        ]);
        ip(&["link", "set", &near, "address", "02:00:00:00:00:f0", "up"]);
        ip(&[
            "-n",
            &ns,
            "link",
            "set",
            "peer0",
            "address",
            "02:00:00:00:00:01",
            "up",
        ]);
        Pair { ns, near }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = StdCommand::new("ip")
            .args(["netns", "del", &self.ns])
            .status();
    }
}

/// Runs the peer in the pair's namespace until `stop`.
fn spawn_peer(
    ns: String,
    answer_sdo: bool,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> std::thread::JoinHandle<()> {
    let ready = Arc::new(AtomicBool::new(false));
    let up = Arc::clone(&ready);
    let t = std::thread::spawn(move || {
        let f = File::open(format!("/run/netns/{ns}")).unwrap();
        netns::enter_net_namespace(f.as_fd()).unwrap();
        let idx = packet::if_index("peer0").unwrap();
        let sock = packet::packet_socket(0x88AB, idx).unwrap();
        for m in [MAC_SOC, MAC_SOA, MAC_ASND] {
            packet::add_membership(sock.as_fd(), idx, packet::Membership::Multicast(m)).unwrap();
        }
        packet::ignore_outgoing(sock.as_fd()).unwrap();
        packet::set_receive_timeout(sock.as_fd(), Some(Duration::from_millis(20))).unwrap();
        up.store(true, Relaxed);
        let mut peer = Peer {
            c: captured(),
            answer_sdo,
            nmt: 0x1D,
            ec: true,
            last_er: false,
            seq: 0,
            pending: None,
            written_stamp: (0, 0),
            stored_stamp: (0, 0),
        };
        let mut buf = vec![0u8; 1600];
        while !stop.load(Relaxed) {
            let Ok(got) = packet::recv_stamped(sock.as_fd(), &mut buf, false) else {
                continue;
            };
            if let Some(out) = peer.answer(&buf[..got.len], &seen) {
                packet::send_frame(sock.as_fd(), idx, 0, &out).unwrap();
            }
        }
    });
    while !ready.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
    t
}

fn root_or_skip(what: &str) -> bool {
    probe_run::root_or_skip(what, "the peer's namespace and raw sockets")
}

/// [`run_against_peer_once`], again while another jitterlab holds the
/// machine (up to 5 minutes).
fn run_against_peer(
    tag: &str,
    answer_sdo: bool,
    extra: &[&str],
) -> (i32, String, Option<serde_json::Value>, Seen) {
    for _ in 0..150 {
        let r = run_against_peer_once(tag, answer_sdo, extra);
        if !r.1.contains("is changing this machine; wait for it to end") {
            return r;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    panic!("another jitterlab held the machine for 5 minutes");
}

/// Runs the MN against a peer; the exit status, stderr, the result (if
/// any) and what the peer saw.
fn run_against_peer_once(
    tag: &str,
    answer_sdo: bool,
    extra: &[&str],
) -> (i32, String, Option<serde_json::Value>, Seen) {
    let pair = Pair::new(tag);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let peer = spawn_peer(
        pair.ns.clone(),
        answer_sdo,
        Arc::clone(&stop),
        Arc::clone(&seen),
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = jl(dir.path())
        .args(["run", "netcycle", "--no-db", "--role", "mn", "--interface"])
        .arg(&pair.near)
        .args([
            "--cycle",
            "10ms",
            "--response-timeout",
            "2ms",
            "--duration",
            "500ms",
            // No inputs: a PRes then counts whatever its payload (the
            // captured one carries the CN's digital input, no echo).
            "--in-bytes",
            "0",
            "--out-bytes",
            "1",
        ])
        .args(extra)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    stop.store(true, Relaxed);
    peer.join().unwrap();
    drop(pair);
    let result = std::fs::read_to_string(&json)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (
        out.status.code().unwrap(),
        // Standard output after standard error: a failed assertion then
        // shows the verdicts too.
        format!(
            "{}\n--- stdout ---\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ),
        result,
        seen,
    )
}

#[test]
#[serial(netns)]
fn the_mn_configures_the_replayed_reference_cn_and_brings_it_to_operational() {
    if !root_or_skip("the replayed reference CN") {
        return;
    }
    let (code, stderr, r, seen) = run_against_peer("o", true, &["--node-ids", "1"]);
    assert_exit_follows_held(code, r.as_ref(), &stderr);
    assert!(
        stderr.contains("jitterlab: netcycle: CN 1: features 0x00010265 (isochronous, SDO by ASnd, extended NMT state commands, dynamic PDO mapping, multiplexed access, multiple ASnd), MTU 1500 bytes, PReq 36 bytes in, PRes 36 bytes out, response time 50000 ns, device type 0x000f0191"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "jitterlab: netcycle: CN 1: configured over SDO (16 writes), reset and identified again\n"
        ),
        "{stderr}"
    );
    let want: Vec<(u16, u8)> = vec![
        (0x1011, 1),
        (0x1600, 0),
        (0x1A00, 0),
        (0x1006, 0),
        (0x1020, 1),
        (0x1020, 2),
        (0x1C0B, 3),
        (0x1C0D, 3),
        (0x1C14, 0),
        (0x1F98, 4),
        (0x1F98, 5),
        (0x1600, 1),
        (0x1600, 0),
        (0x1A00, 0),
        (0x1010, 1),
        (0x1006, 0),
    ];
    assert_eq!(seen.written, want);
    // ResetConfiguration, then EnableReadyToOperate and StartNode.
    assert_eq!(seen.commands.first(), Some(&0x2A));
    assert!(seen.commands.contains(&0x24) && seen.commands.contains(&0x21));
    let d = &r.expect("a result")["detail"];
    eprintln!("bring-up: {}", d["mn"]["bring_up"]);
    let cn = &d["per_cn"][0];
    assert_eq!(n(&cn["node"]), 1);
    assert!(n(&cn["answered"]) > 0, "{cn}");
}

#[test]
#[serial(netns)]
fn a_cn_that_never_answers_sdo_fails_the_bring_up_naming_it() {
    if !root_or_skip("the silent SDO peer") {
        return;
    }
    let (code, stderr, _, seen) = run_against_peer("s", false, &["--node-ids", "1"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("CN 1 did not answer the SDO write of 0x1011/1 (4 tries, 100ms apart); check that it speaks SDO over ASnd"),
        "{stderr}"
    );
    assert!(seen.written.is_empty());
}

#[test]
#[serial(netns)]
fn chaining_with_a_cn_that_does_not_chain_exits_2_naming_it() {
    if !root_or_skip("--chaining against the replayed reference CN") {
        return;
    }
    let (code, stderr, _, _) = run_against_peer("c", true, &["--node-ids", "1", "--chaining"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--chaining: these CNs announce no PRes chaining (feature flag bit 18 of their IdentResponse): CN 1 (features 0x00010265); run without --chaining, or poll only CNs that chain"),
        "{stderr}"
    );
}

/// A concise DCF: its entries written out.
fn cdc_bytes(entries: &[(u16, u8, Vec<u8>)]) -> Vec<u8> {
    let e: Vec<Entry<'_>> = entries
        .iter()
        .map(|(i, s, d)| Entry {
            addr: IndexAddress::new(*i, *s),
            data: d,
        })
        .collect();
    let mut out = vec![0; written_len(&e)];
    write(&e, &mut out).unwrap();
    out
}

/// An MN's concise DCF for CN 1 at a 10 ms cycle, whose DCF for the CN
/// writes 0x1006 and the PDO limits, stamped 0x3124 / 0x03735955.
fn mn_cdc() -> Vec<u8> {
    let u32v = |v: u32| v.to_le_bytes().to_vec();
    let dcf = cdc_bytes(&[
        (0x1006, 0, u32v(10_000)),
        (0x1F98, 4, 1u16.to_le_bytes().to_vec()),
        (0x1F98, 5, 0u16.to_le_bytes().to_vec()),
    ]);
    cdc_bytes(&[
        (0x1F81, 1, u32v(0x07)),
        (0x1006, 0, u32v(10_000)),
        (0x1F26, 1, u32v(0x3124)),
        (0x1F27, 1, u32v(0x0373_5955)),
        (0x1F22, 1, dcf),
    ])
}

#[test]
fn a_bad_cdc_is_refused_with_exit_2_naming_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("mnobd.cdc");
    std::fs::write(&good, mn_cdc()).unwrap();
    let short = dir.path().join("short.cdc");
    std::fs::write(&short, [1, 0, 0]).unwrap();
    let missing = dir.path().join("missing.cdc");
    let (g, s, m) = (
        good.to_str().unwrap(),
        short.to_str().unwrap(),
        missing.to_str().unwrap(),
    );
    for (args, message) in [
        (
            vec!["--cdc", m],
            format!("jitterlab: error: --cdc {m}: cannot read it: No such file or directory (os error 2)\n"),
        ),
        (
            vec!["--cdc", s],
            format!("jitterlab: error: --cdc {s}: concise DCF cut short at byte 0: the 4-byte entry count is missing (the file holds 3 bytes); export it again from openCONFIGURATOR\n"),
        ),
        (
            vec!["--cdc", g, "--cycle", "1ms"],
            format!("jitterlab: error: --cdc {g}: its cycle (0x1006) is 10ms, not the --cycle 1ms: give --cycle 10ms\n"),
        ),
        (
            vec!["--cdc", g, "--cycle", "10ms", "--role", "cn", "--interface", "lo"],
            "jitterlab: error: --cdc configures the CNs from the managing node: use it with --role mn or --role both\n".to_string(),
        ),
    ] {
        jl(dir.path())
            .args(["run", "netcycle", "--no-db"])
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(message);
    }
    // The CDC names the nodes: no --node-ids or --cns beside it.
    for flag in [["--node-ids", "1"], ["--cns", "2"]] {
        let out = jl(dir.path())
            .args(["run", "netcycle", "--no-db", "--cdc", g])
            .args(flag)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the argument '--cdc <FILE>' cannot be used with"),
            "{err}"
        );
    }
}

#[test]
#[serial(netns)]
fn with_a_cdc_the_mn_writes_the_cns_dcf_in_file_order() {
    if !root_or_skip("the replayed reference CN configured from a CDC") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cdc = dir.path().join("mnobd.cdc");
    std::fs::write(&cdc, mn_cdc()).unwrap();
    let (code, stderr, r, seen) = run_against_peer("d", true, &["--cdc", cdc.to_str().unwrap()]);
    assert_exit_follows_held(code, r.as_ref(), &stderr);
    assert_eq!(
        seen.written,
        vec![
            (0x1011, 1),
            (0x1006, 0),
            (0x1F98, 4),
            (0x1F98, 5),
            (0x1010, 1),
            (0x1006, 0)
        ]
    );
    assert!(
        stderr.contains("CN 1: configured over SDO (6 writes), reset and identified again\n"),
        "{stderr}"
    );
}
