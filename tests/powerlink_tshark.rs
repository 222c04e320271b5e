//! Wireshark agrees with our POWERLINK frames: one frame of every type and
//! variant the `netcycle` probe sends (SDO included: sequence-only,
//! expedited and segmented WriteByIndex, ReadByIndex, responses, an abort)
//! is written to a pcap, read back with `tshark -T json` (Debian `tshark`,
//! an independent decoder: Wireshark's `packet-epl.c`) and compared field
//! by field with what was encoded. No
//! frame may be malformed or carry an expert note of warning or error
//! severity.
//!
//! The pcap is written with the `pcap-file` crate. Without `tshark` the
//! test says so and skips (CI installs it: `.ci/run`, `make test-deps`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use jitterlab_core::powerlink::*;
use pcap_file::pcap::{PcapPacket, PcapWriter};
use serde_json::Value;

const MN_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0xf0];

fn cn_mac(node: u8) -> [u8; 6] {
    [0x02, 0x00, 0x00, 0x00, 0x00, node]
}

/// One frame we send, and the Wireshark fields it must show.
struct Case {
    name: String,
    bytes: Vec<u8>,
    fields: Vec<(&'static str, String)>,
    /// What the Info column must contain (for what the JSON does not show).
    info: Option<String>,
    /// The protocol stack Wireshark shows.
    protocols: &'static str,
}

fn case(name: impl Into<String>, frame: Frame<'_>, fields: &[(&'static str, String)]) -> Case {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let (dst, src) = match frame {
        Frame::PReq(p) => (cn_mac(p.node), MN_MAC),
        Frame::PRes(p) if !p.is_pres_mn() => (MAC_PRES, cn_mac(p.node)),
        Frame::ASnd(a) if a.src != MN_NODE => (MAC_ASND, cn_mac(a.src)),
        f => (f.multicast_mac().unwrap(), MN_MAC),
    };
    let n = encode(&frame, dst, src, &mut buf).unwrap();
    let mut all = vec![
        ("epl.mtyp", frame.message_type().to_string()),
        ("epl.dest", frame.dest().to_string()),
        ("epl.src", frame.src().to_string()),
    ];
    all.extend(fields.iter().cloned());
    Case {
        name: name.into(),
        bytes: buf[..n].to_vec(),
        fields: all,
        info: None,
        protocols: "eth:ethertype:epl",
    }
}

fn s(v: impl ToString) -> String {
    v.to_string()
}

fn b(v: bool) -> String {
    s(u8::from(v))
}

/// How Wireshark 4.0 shows a PDO payload it has no mapping for: up to 8
/// bytes as one little-endian number (`epl.od.data.uint`), more as the
/// generic `data` dissector's bytes.
fn payload_field(payload: &[u8]) -> (&'static str, String) {
    if payload.len() <= 8 {
        let mut b = [0u8; 8];
        b[..payload.len()].copy_from_slice(payload);
        ("epl.od.data.uint", u64::from_le_bytes(b).to_string())
    } else {
        let hex: Vec<String> = payload.iter().map(|b| format!("{b:02x}")).collect();
        ("data.data", hex.join(":"))
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let soc = Soc {
        mc: true,
        ps: true,
        net_time: NetTime {
            seconds: 1_700_000_000,
            nanoseconds: 123_456_789,
        },
        relative_time: 987_654_321,
    };
    v.push(case(
        "SoC",
        Frame::Soc(soc),
        &[
            ("epl.soc.mc", b(true)),
            ("epl.soc.ps", b(true)),
            ("epl.soc.nettime", s("Nov 14, 2023 22:13:20.123456789 UTC")),
            ("epl.soc.relativetime", s(987_654_321)),
        ],
    ));
    let outputs: Vec<u8> = (1..=40).collect();
    for node in [1u8, 2, 40] {
        let payload = [node ^ 0x5a];
        v.push(case(
            format!("PReq to {node}"),
            Frame::PReq(PReq {
                node,
                ms: false,
                ea: node == 2,
                rd: true,
                pdo_version: 0x10,
                payload: &payload,
            }),
            &[
                ("epl.preq.ms", b(false)),
                ("epl.preq.ea", b(node == 2)),
                ("epl.preq.rd", b(true)),
                ("epl.preq.size", s(1)),
                ("epl.preq.pdov", s(0x10)),
                payload_field(&payload),
            ],
        ));
    }
    let inputs = [1u8, 2, 3, 4, 5, 6];
    for (node, nmt) in [
        (1u8, NmtState::CS_PRE_OPERATIONAL_2),
        (2, NmtState::CS_READY_TO_OPERATE),
        (3, NmtState::CS_OPERATIONAL),
        (4, NmtState::CS_STOPPED),
    ] {
        v.push(case(
            format!("PRes from {node} in {nmt}"),
            Frame::PRes(PRes {
                node,
                nmt,
                ms: false,
                en: node == 4,
                rd: nmt == NmtState::CS_OPERATIONAL,
                pr: 3,
                rs: node,
                pdo_version: 0x10,
                payload: &inputs,
            }),
            &[
                ("epl.pres.stat", format!("0x{:02x}", nmt.0)),
                ("epl.pres.en", b(node == 4)),
                ("epl.pres.rd", b(nmt == NmtState::CS_OPERATIONAL)),
                ("epl.pres.pr", s(3)),
                ("epl.pres.rs", s(node)),
                ("epl.pres.size", s(6)),
                ("epl.pres.pdov", s(0x10)),
                payload_field(&inputs),
            ],
        ));
    }
    v.push(case(
        "PResMN",
        Frame::PRes(PRes {
            node: MN_NODE,
            nmt: NmtState::MS_OPERATIONAL,
            ms: false,
            en: false,
            rd: true,
            pr: 0,
            rs: 0,
            pdo_version: 0x10,
            payload: &outputs,
        }),
        &[
            ("epl.pres.stat", s("0xfd")),
            ("epl.pres.rd", b(true)),
            ("epl.pres.size", s(40)),
            payload_field(&outputs),
        ],
    ));
    // Over 8 bytes of PDO data go to the generic data dissector.
    v.last_mut().unwrap().protocols = "eth:ethertype:epl:data";
    for (service, target, name) in [
        (RequestedService::IDENT_REQUEST, 1u8, "IdentRequest"),
        (RequestedService::STATUS_REQUEST, 2, "StatusRequest"),
        (RequestedService::NO_SERVICE, 0, "NoService"),
    ] {
        v.push(case(
            format!("SoA {name}"),
            Frame::Soa(Soa {
                nmt: NmtState::MS_PRE_OPERATIONAL_1,
                ea: target == 2,
                er: false,
                service,
                target,
                epl_version: EPL_VERSION,
            }),
            &[
                ("epl.soa.stat", s("0x1d")),
                ("epl.soa.ea", b(target == 2)),
                ("epl.soa.er", b(false)),
                ("epl.soa.svid", s(service.0)),
                ("epl.soa.svtg", s(target)),
                ("epl.soa.eplv", s(EPL_VERSION)),
            ],
        ));
    }
    let ident = IdentResponse {
        en: false,
        ec: false,
        pr: 0,
        rs: 0,
        nmt: NmtState::CS_NOT_ACTIVE,
        epl_version: EPL_VERSION,
        feature_flags: 0x0004_0001,
        mtu: 300,
        poll_in_size: 1,
        poll_out_size: 6,
        response_time: 25_000,
        device_type: 0x000f_0191,
        vendor_id: 0x0000_0079,
        product_code: 0x0000_1234,
        revision: 0x0001_0002,
        serial: 0x0bad_cafe,
        verify_conf_date: 0x3124,
        verify_conf_time: 0x0373_5955,
    };
    v.push(case(
        "ASnd IdentResponse",
        Frame::ASnd(ASnd {
            dest: MN_NODE,
            src: 1,
            service: ASndService::IdentResponse(ident),
        }),
        &[
            ("epl.asnd.svid", s("0x01")),
            ("epl.asnd.ires.state", s("0x1c")),
            ("epl.asnd.ires.eplver", s(EPL_VERSION)),
            ("epl.asnd.ires.features", s("0x00040001")),
            ("epl.asnd.ires.mtu", s(300)),
            ("epl.asnd.ires.pollinsize", s(1)),
            ("epl.asnd.ires.polloutsizes", s(6)),
            ("epl.asnd.ires.resptime", s(25_000)),
            // DeviceType: the profile (low 16 bits), then the rest.
            ("epl.asnd.ires.devicetype", s("0x0191")),
            ("epl.asnd.ires.devicetype.add", s(0x000f)),
            ("epl.asnd.ires.vendorid", s(0x79)),
            ("epl.asnd.ires.productcode", s(0x1234)),
            ("epl.asnd.ires.revisionno", s(0x0001_0002)),
            ("epl.asnd.ires.serialno", s(0x0bad_cafe)),
        ],
    ));
    let mut entry = [0u8; ERROR_ENTRY_LEN];
    ErrorEntry {
        entry_type: 0x8002,
        code: 0x8235,
        time: NetTime {
            seconds: 1_700_000_000,
            nanoseconds: 0,
        },
        info: 7,
    }
    .write(&mut entry);
    for (name, errors) in [("", &[][..]), (" with an error entry", &entry[..])] {
        v.push(case(
            format!("ASnd StatusResponse{name}"),
            Frame::ASnd(ASnd {
                dest: MN_NODE,
                src: 2,
                service: ASndService::StatusResponse(StatusResponse {
                    en: !errors.is_empty(),
                    ec: false,
                    pr: 0,
                    rs: 0,
                    nmt: NmtState::CS_PRE_OPERATIONAL_2,
                    static_errors: 0x11,
                    errors,
                }),
            }),
            &[
                ("epl.asnd.svid", s("0x02")),
                ("epl.asnd.sres.en", b(!errors.is_empty())),
                ("epl.asnd.sres.stat", s("0x5d")),
                // Static error bit field 0x11: generic and communication.
                ("epl.asnd.res.seb.bit0", s(1)),
                ("epl.asnd.res.seb.bit4", s(1)),
            ],
        ));
    }
    v.last_mut().unwrap().fields.extend([
        ("epl.asnd.sres.el.entry.type", s("0x8002")),
        ("epl.asnd.sres.el.entry.code", s(0x8235)),
        (
            "epl.asnd.sres.el.entry.time",
            s("Nov 14, 2023 22:13:20.000000000 UTC"),
        ),
        ("epl.asnd.sres.el.entry.add", s(7)),
    ]);
    for (id, name) in [
        (
            NmtCommandId::ENTER_PRE_OPERATIONAL_2,
            "EnterPreOperational2",
        ),
        (
            NmtCommandId::ENABLE_READY_TO_OPERATE,
            "EnableReadyToOperate",
        ),
        (NmtCommandId::START_NODE, "StartNode"),
        (NmtCommandId::STOP_NODE, "StopNode"),
        (NmtCommandId::RESET_NODE, "ResetNode"),
    ] {
        v.push(case(
            format!("ASnd NMTCommand {name}"),
            Frame::ASnd(ASnd {
                dest: 3,
                src: MN_NODE,
                service: ASndService::NmtCommand(NmtCommand { id, data: &[] }),
            }),
            &[
                ("epl.asnd.svid", s("0x04")),
                ("epl.asnd.nmtcommand.cid", format!("0x{:02x}", id.0)),
            ],
        ));
    }
    for (service, target, name) in [
        (RequestedService::STATUS_REQUEST, 1u8, "StatusRequest"),
        (
            RequestedService::NMT_REQUEST_INVITE,
            MN_NODE,
            "NMTRequestInvite",
        ),
        (RequestedService::UNSPECIFIED_INVITE, 1, "UnspecifiedInvite"),
    ] {
        v.push(case(
            format!("SoA {name} with ER"),
            Frame::Soa(Soa {
                nmt: NmtState::MS_PRE_OPERATIONAL_2,
                ea: false,
                er: true,
                service,
                target,
                epl_version: EPL_VERSION,
            }),
            &[
                ("epl.soa.stat", s("0x5d")),
                ("epl.soa.er", b(true)),
                ("epl.soa.svid", s(service.0)),
                ("epl.soa.svtg", s(target)),
            ],
        ));
    }
    v.push(case(
        "ASnd StatusResponse to broadcast",
        Frame::ASnd(ASnd {
            dest: BROADCAST_NODE,
            src: 1,
            service: ASndService::StatusResponse(StatusResponse {
                en: false,
                ec: true,
                pr: 3,
                rs: 1,
                nmt: NmtState::CS_PRE_OPERATIONAL_2,
                static_errors: 0,
                errors: &[],
            }),
        }),
        &[
            ("epl.asnd.svid", s("0x02")),
            ("epl.asnd.sres.ec", b(true)),
            ("epl.asnd.sres.pr", s(3)),
            ("epl.asnd.sres.rs", s(1)),
            ("epl.asnd.sres.stat", s("0x5d")),
        ],
    ));
    assert_eq!(v.last().unwrap().bytes.len(), 72);
    v.extend(sdo_cases());
    v
}

fn seq(receive_seq: u8, receive_con: sdo::Con, send_seq: u8, send_con: sdo::Con) -> sdo::SeqLayer {
    sdo::SeqLayer {
        receive_seq,
        receive_con,
        send_seq,
        send_con,
    }
}

fn sdo_case(name: &str, dest: u8, src: u8, sdo: Sdo<'_>, more: &[(&'static str, String)]) -> Case {
    let c = sdo.command;
    let mut fields = vec![
        ("epl.asnd.svid", s("0x05")),
        (
            "epl.asnd.sdo.seq.receive.sequence.number",
            s(sdo.seq.receive_seq),
        ),
        ("epl.asnd.sdo.seq.receive.con", s(sdo.seq.receive_con.0)),
        ("epl.asnd.sdo.seq.send.sequence.number", s(sdo.seq.send_seq)),
        ("epl.asnd.sdo.seq.send.con", s(sdo.seq.send_con.0)),
    ];
    if !c.is_nil() {
        fields.extend([
            ("epl.asnd.sdo.cmd.transaction.id", s(c.transaction)),
            ("epl.asnd.sdo.cmd.response", b(c.response)),
            ("epl.asnd.sdo.cmd.abort", b(c.abort)),
            ("epl.asnd.sdo.cmd.segmentation", s(c.segmentation as u8)),
        ]);
        // Wireshark shows a response's CommandID and size only with data.
        if !c.response || !c.data.is_empty() {
            fields.extend([
                ("epl.asnd.sdo.cmd.command.id", s(c.command.0)),
                ("epl.asnd.sdo.cmd.segment.size", s(c.segment_size)),
            ]);
        }
    }
    fields.extend(more.iter().cloned());
    case(
        name,
        Frame::ASnd(ASnd {
            dest,
            src,
            service: ASndService::Sdo(sdo),
        }),
        &fields,
    )
}

/// SDO frames: a connection's set-up, an expedited write and its response,
/// an abort, a segmented write, a read and its response.
fn sdo_cases() -> Vec<Case> {
    use sdo::{CommandId, CommandLayer, Con, IndexAddress};
    let mut v = Vec::new();
    v.push(sdo_case(
        "SDO sequence-only InitReq",
        1,
        MN_NODE,
        Sdo::sequence_only(seq(0, Con::NONE, 0, Con::INIT)),
        &[],
    ));
    v.push(sdo_case(
        "SDO sequence-only InitAck",
        MN_NODE,
        1,
        Sdo::sequence_only(seq(0, Con::INIT, 0, Con::INIT)),
        &[],
    ));
    let mut buf = [0u8; 8];
    let write = sdo::write_by_index_request(
        IndexAddress::new(0x1006, 0),
        &50_000u32.to_le_bytes(),
        &mut buf,
    )
    .unwrap();
    v.push(sdo_case(
        "SDO WriteByIndex expedited",
        1,
        MN_NODE,
        Sdo {
            seq: seq(0, Con::VALID, 1, Con::VALID),
            command: CommandLayer::request(16, CommandId::WRITE_BY_INDEX, write),
        },
        &[
            ("epl.asnd.sdo.cmd.data.index", s("0x1006")),
            ("epl.od.data.uint", s(50_000)),
        ],
    ));
    v.push(sdo_case(
        "SDO WriteByIndex response",
        MN_NODE,
        1,
        Sdo {
            seq: seq(1, Con::VALID, 1, Con::VALID),
            command: CommandLayer::response(16, CommandId::WRITE_BY_INDEX, &[]),
        },
        &[],
    ));
    let code = sdo::AbortCode::OBJECT_DOES_NOT_EXIST.to_bytes();
    v.push(sdo_case(
        "SDO abort",
        MN_NODE,
        1,
        Sdo {
            seq: seq(2, Con::VALID, 2, Con::VALID),
            command: CommandLayer::abort(17, CommandId::WRITE_BY_INDEX, true, &code),
        },
        &[("epl.asnd.sdo.cmd.segment.size", s(4))],
    ));
    v.last_mut().unwrap().info =
        Some("Abort:0x06020000 (Object does not exist in the object dictionary.)".into());

    // A 600-byte value: Initiate (252 bytes after the address and data
    // size), Segment (256), Complete (96), each acknowledged.
    let value: Vec<u8> = (0..600u32).map(|i| (i % 251) as u8).collect();
    let mut buf = [0u8; 604];
    let data = sdo::write_by_index_request(IndexAddress::new(0x1F22, 1), &value, &mut buf).unwrap();
    let parts: Vec<_> = sdo::segments(
        18,
        CommandId::WRITE_BY_INDEX,
        false,
        data,
        sdo::MAX_SEGMENT_SIZE,
    )
    .collect();
    assert_eq!(parts.len(), 3);
    for (i, (c, name)) in parts
        .iter()
        .zip(["Initiate", "Segment", "Complete"])
        .enumerate()
    {
        let n = 3 + i as u8;
        let mut more = vec![("epl.asnd.sdo.cmd.segmentation", s(i + 1))];
        if i == 0 {
            more.push(("epl.asnd.sdo.cmd.data.size", s(608)));
            more.push(("epl.asnd.sdo.cmd.data.index", s("0x1f22")));
            more.push(("epl.asnd.sdo.cmd.data.subindex", s("0x01")));
            // The value's first 248 bytes follow the address.
            more.push(("data.len", s(248)));
        }
        if i == 2 {
            // Wireshark puts the three segments together: 608 bytes, the
            // data size (0x260) and the address first.
            more.push(("epl.asnd.sdo.cmd.fragment.count", s(3)));
            more.push(("epl.asnd.sdo.cmd.reassembled.length", s(608)));
            let whole: Vec<String> = 608u32
                .to_le_bytes()
                .iter()
                .chain(data)
                .map(|b| format!("{b:02x}"))
                .collect();
            more.push(("epl.asnd.sdo.cmd.reassembled.data", whole.join(":")));
        }
        v.push(sdo_case(
            &format!("SDO WriteByIndex {name}"),
            1,
            MN_NODE,
            Sdo {
                seq: seq(n - 1, Con::VALID, n, Con::VALID),
                command: *c,
            },
            &more,
        ));
        v.last_mut().unwrap().protocols = "eth:ethertype:epl:data";
        v.push(sdo_case(
            &format!("SDO acknowledgement of the {name}"),
            MN_NODE,
            1,
            Sdo::sequence_only(seq(n, Con::VALID, n - 1, Con::VALID)),
            &[],
        ));
    }
    v.push(sdo_case(
        "SDO segmented WriteByIndex response",
        MN_NODE,
        1,
        Sdo {
            seq: seq(5, Con::VALID, 5, Con::VALID),
            command: CommandLayer::response(18, CommandId::WRITE_BY_INDEX, &[]),
        },
        &[],
    ));

    let mut buf = [0u8; 4];
    let read = sdo::read_by_index_request(IndexAddress::new(0x1A00, 1), &mut buf).unwrap();
    v.push(sdo_case(
        "SDO ReadByIndex request",
        1,
        MN_NODE,
        Sdo {
            seq: seq(5, Con::VALID, 6, Con::VALID),
            command: CommandLayer::request(19, CommandId::READ_BY_INDEX, read),
        },
        &[("epl.asnd.sdo.cmd.data.index", s("0x1a00"))],
    ));
    let mapping = 0x0008_0000_0001_6000u64.to_le_bytes();
    v.push(sdo_case(
        "SDO ReadByIndex response",
        MN_NODE,
        1,
        Sdo {
            seq: seq(6, Con::VALID, 6, Con::VALID),
            command: CommandLayer::response(19, CommandId::READ_BY_INDEX, &mapping),
        },
        &[
            // Wireshark pairs it with the request by TransactionID.
            ("epl.asnd.sdo.cmd.data.index", s("0x1a00")),
            ("data.data", s("00:60:01:00:00:00:08:00")),
        ],
    ));
    v.last_mut().unwrap().protocols = "eth:ethertype:epl:data";
    v
}

fn write_pcap(path: &Path, cases: &[Case]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(file).unwrap();
    for (i, c) in cases.iter().enumerate() {
        let ts = Duration::from_micros(1_700_000_000_000_000 + i as u64 * 100);
        w.write_packet(&PcapPacket::new(ts, c.bytes.len() as u32, &c.bytes))
            .unwrap();
    }
}

/// Every field of a packet's layers, flattened: name → values.
fn flatten(v: &Value, out: &mut BTreeMap<String, Vec<String>>) {
    if let Value::Object(m) = v {
        for (k, v) in m {
            match v {
                Value::String(s) => out.entry(k.clone()).or_default().push(s.clone()),
                Value::Array(a) => {
                    for x in a {
                        match x {
                            Value::String(s) => out.entry(k.clone()).or_default().push(s.clone()),
                            other => flatten(other, out),
                        }
                    }
                }
                other => flatten(other, out),
            }
        }
    }
}

/// Expert severities as tshark's JSON gives them (`_ws.expert.severity`):
/// warning and error are these and above.
const EXPERT_WARN: u64 = 0x0060_0000;

/// What Wireshark found wrong with a packet: a malformed mark, or an
/// expert note of warning or error severity.
fn problems(fields: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (k, v) in fields {
        if k.starts_with("_ws.malformed") {
            found.push(format!("{k}: {v:?}"));
        }
    }
    if let Some(sev) = fields.get("_ws.expert.severity") {
        for (i, s) in sev.iter().enumerate() {
            if s.parse::<u64>().map_or(true, |x| x >= EXPERT_WARN) {
                let msg = fields
                    .get("_ws.expert.message")
                    .and_then(|m| m.get(i))
                    .cloned()
                    .unwrap_or_default();
                found.push(format!("expert severity {s}: {msg}"));
            }
        }
    }
    found
}

/// Runs tshark over `pcap` and returns every packet's flattened fields.
fn tshark(pcap: &Path) -> Vec<BTreeMap<String, Vec<String>>> {
    let out = Command::new("tshark")
        .args(["-T", "json", "-r"])
        .arg(pcap)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packets: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    packets
        .iter()
        .map(|p| {
            let mut fields = BTreeMap::new();
            flatten(&p["_source"]["layers"], &mut fields);
            fields
        })
        .collect()
}

/// Runs tshark over `pcap` and returns every packet's Info column.
fn tshark_info(pcap: &Path) -> Vec<String> {
    let out = Command::new("tshark")
        .args(["-T", "fields", "-e", "_ws.col.Info", "-r"])
        .arg(pcap)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn have_tshark() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok() {
        return true;
    }
    eprintln!("skipping: tshark is not installed (Debian package tshark; CI installs it)");
    false
}

#[test]
fn tshark_flags_a_frame_whose_size_overruns_it() {
    // The control: the malformed/expert check below can fail. A PReq
    // whose Size says 200 bytes in a 60-byte frame.
    if !have_tshark() {
        return;
    }
    let mut c = cases().swap_remove(1);
    c.bytes[22] = 200;
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("bad.pcap");
    write_pcap(&pcap, &[c]);
    let packets = tshark(&pcap);
    assert_eq!(packets.len(), 1);
    eprintln!("tshark on an overrunning Size: {:?}", problems(&packets[0]));
    assert!(
        !problems(&packets[0]).is_empty(),
        "tshark found nothing wrong with an overrunning Size: {:#?}",
        packets[0]
    );
}

#[test]
fn tshark_decodes_every_frame_we_send_as_we_meant() {
    if !have_tshark() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("powerlink.pcap");
    let cases = cases();
    write_pcap(&pcap, &cases);
    let packets = tshark(&pcap);
    assert_eq!(packets.len(), cases.len());
    let info = tshark_info(&pcap);
    for (c, info) in cases.iter().zip(&info) {
        if let Some(want) = &c.info {
            assert!(info.contains(want), "{}: Info is {info:?}", c.name);
        }
    }
    for (c, fields) in cases.iter().zip(&packets) {
        if std::env::var_os("EPL_DUMP").is_some() {
            eprintln!("{}: {fields:#?}", c.name);
        }
        for (name, want) in &c.fields {
            let got = fields.get(*name);
            assert!(
                got.is_some_and(|g| g.contains(want)),
                "{}: {name} is {got:?}, we encoded {want}",
                c.name
            );
        }
        assert_eq!(
            fields.get("frame.protocols"),
            Some(&vec![c.protocols.to_string()]),
            "{}",
            c.name
        );
        assert_eq!(problems(fields), Vec::<String>::new(), "{}", c.name);
    }
}
