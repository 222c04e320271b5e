//! The emulated CNs' real-time path allocates nothing (DESIGN rule 2):
//! decoding what the MN sends, [`ControlledNodes::handle`] — bring-up,
//! polls, chained polls, SoA invitations, NMT commands — building each
//! answer and encoding it, measured with a counting global allocator
//! (`stats_alloc`, so that no `unsafe` is written here).
//!
//! This file is its own test binary with one test, so no other test
//! allocates on another thread while the region is measured.

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

#[test]
fn the_cns_answer_every_frame_without_allocating() {
    let mut cns = ControlledNodes::new(CnConfig {
        cns: 40,
        out_bytes: 1,
        in_bytes: 6,
        chained: true,
        chain_step_ns: 6_720,
        response_time_ns: 25_000,
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
    ];
    let mut out = [0u8; MAX_FRAME_LEN];

    let region = Region::new(GLOBAL);
    let mut sent = 0usize;
    for _ in 0..100 {
        for bytes in &frames {
            let Ok(r) = decode(bytes) else { continue };
            cns.handle(&r.frame, &mut answers);
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
    // Per round: IdentResponse, one PRes, 40 chained PRes, StatusResponse.
    assert!(sent > 100 * 43 * 60, "{sent} bytes sent");
}
