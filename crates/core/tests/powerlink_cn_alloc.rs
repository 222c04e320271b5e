//! The emulated CNs' real-time path allocates nothing (design rule 2):
//! decoding what the MN sends, [`ControlledNodes::handle`] — bring-up,
//! polls, chained polls, SoA invitations, NMT commands, SDO set-up,
//! writes (the TPDO mapping included) and reads — building each answer and
//! encoding it, measured with a counting global allocator
//! (`stats_alloc`, so that no `unsafe` is written here).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.
//!
//! The design rules cited here are in `docs/design.md`.

use std::alloc::System;
use std::hint::black_box;

use jitterlab_core::powerlink::cn::{CnConfig, ControlledNodes};
use jitterlab_core::powerlink::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const MN: [u8; 6] = [2, 0, 0, 0, 0, 0xf0];
const CN: [u8; 6] = [2, 0, 0, 0, 0, 0x01];

/// Encodes `f` as the MN sends it.
fn wire(f: Frame<'_>) -> Vec<u8> {
    let mut b = vec![0u8; MAX_FRAME_LEN];
    let dst = f.multicast_mac().unwrap_or(CN);
    let n = encode(&f, dst, MN, &mut b).unwrap();
    b.truncate(n);
    b
}

fn the_cns_answer_every_frame_without_allocating() {
    let mut cns = ControlledNodes::new(CnConfig {
        nodes: (1..=40).collect(),
        out_bytes: 1,
        chained: true,
        chain_step_ns: 6_720,
        response_time_ns: 25_000,
        identity: Default::default(),
    });
    let mut answers = Vec::with_capacity(cns.max_answers());
    let soa = |service, target| {
        wire(Frame::Soa(Soa {
            nmt: NmtState::MS_PRE_OPERATIONAL_1,
            ea: false,
            er: false,
            service,
            target,
            epl_version: EPL_VERSION,
        }))
    };
    let nmt = |id| {
        wire(Frame::ASnd(ASnd {
            dest: BROADCAST_NODE,
            src: MN_NODE,
            service: ASndService::NmtCommand(NmtCommand { id, data: &[] }),
        }))
    };
    let sdo = |r: u8, s: u8, command: sdo::CommandLayer<'_>| {
        wire(Frame::ASnd(ASnd {
            dest: 7,
            src: MN_NODE,
            service: ASndService::Sdo(Sdo {
                seq: sdo::SeqLayer {
                    receive_seq: r >> 2,
                    receive_con: sdo::Con(r & 3),
                    send_seq: s >> 2,
                    send_con: sdo::Con(s & 3),
                },
                command,
            }),
        }))
    };
    let write = |t, data| sdo::CommandLayer::request(t, sdo::CommandId::WRITE_BY_INDEX, data);
    let mapping = [0x00, 0x1a, 1, 0, 0x00, 0x60, 0x01, 0, 0, 0, 0x08, 0];
    let invite = soa(RequestedService::UNSPECIFIED_INVITE, 7);
    let outputs: Vec<u8> = (0..40).collect();
    let frames = vec![
        soa(RequestedService::IDENT_REQUEST, 7),
        wire(Frame::Soc(Soc::default())),
        wire(Frame::Soc(Soc::default())),
        nmt(NmtCommandId::ENABLE_READY_TO_OPERATE),
        nmt(NmtCommandId::START_NODE),
        wire(Frame::PReq(PReq {
            node: 3,
            ms: false,
            ea: false,
            rd: true,
            pdo_version: 0,
            payload: &[0x42],
        })),
        wire(Frame::PRes(PRes {
            node: MN_NODE,
            nmt: NmtState::MS_OPERATIONAL,
            ms: false,
            en: false,
            rd: true,
            pr: 0,
            rs: 0,
            pdo_version: 0,
            payload: &outputs,
        })),
        soa(RequestedService::STATUS_REQUEST, 40),
        vec![0u8; 20],
        // SDO: set-up, writes (the TPDO mapping), a read, each invited.
        sdo(0x00, 0x01, sdo::CommandLayer::NIL),
        invite.clone(),
        sdo(0x01, 0x02, sdo::CommandLayer::NIL),
        invite.clone(),
        sdo(0x02, 0x06, write(0, &[0x06, 0x10, 0, 0, 0x50, 0xc3, 0, 0])),
        invite.clone(),
        sdo(0x06, 0x0a, write(1, &mapping)),
        invite.clone(),
        sdo(0x0a, 0x0e, write(2, &[0x00, 0x1a, 0, 0, 1])),
        invite.clone(),
        sdo(0x0e, 0x12, write(3, &[0x34, 0x12, 0, 0, 1])),
        invite.clone(),
        sdo(
            0x12,
            0x16,
            sdo::CommandLayer::request(4, sdo::CommandId::READ_BY_INDEX, &[0x18, 0x10, 4, 0]),
        ),
        invite.clone(),
    ];
    let mut out = [0u8; MAX_FRAME_LEN];

    let region = Region::new(GLOBAL);
    let mut sent = 0usize;
    let mut now = 0u64;
    for _ in 0..100 {
        for bytes in &frames {
            let Ok(r) = decode(bytes) else { continue };
            now += 1_000_000;
            cns.handle(&r.frame, now, &mut answers);
            for a in &answers {
                let f = cns.frame(a);
                let dst = f.multicast_mac().unwrap_or(MAC_PRES);
                sent += encode(&f, dst, CN, &mut out).unwrap();
            }
        }
    }
    let stats = region.change();
    black_box(sent);
    common::assert_nothing_allocated(stats);
    // Per round: IdentResponse, one PRes, 40 chained PRes, StatusResponse,
    // and the SDO answers (after the first round, the repeats of the same
    // sequence numbers are answered again).
    assert!(sent > 100 * 43 * 60, "{sent} bytes sent");
    let c = cns.sdo_counts();
    assert_eq!(
        (c.received[1], c.received[2]),
        (400, 100),
        "each round opens afresh"
    );
    assert!(c
        .abort_codes()
        .any(|(code, _)| code == sdo::AbortCode::OBJECT_DOES_NOT_EXIST));
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    the_cns_answer_every_frame_without_allocating();
    println!("test the_cns_answer_every_frame_without_allocating ... ok");
}
