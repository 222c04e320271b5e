//! The emulated CNs' state machine and answers, table by table: each row a
//! frame received and what must follow (states, answers).

use super::*;
use crate::powerlink::{decode, encode, MAC_ASND, MAC_PRES, MAX_FRAME_LEN};

const S_NA: NmtState = NmtState::CS_NOT_ACTIVE;
const S_P1: NmtState = NmtState::CS_PRE_OPERATIONAL_1;
const S_P2: NmtState = NmtState::CS_PRE_OPERATIONAL_2;
const S_RTO: NmtState = NmtState::CS_READY_TO_OPERATE;
const S_OP: NmtState = NmtState::CS_OPERATIONAL;
const S_ST: NmtState = NmtState::CS_STOPPED;

fn config(cns: u8, chained: bool) -> CnConfig {
    CnConfig {
        cns,
        out_bytes: 1,
        in_bytes: 6,
        chained,
        chain_step_ns: 7_000,
        response_time_ns: 20_000,
    }
}

fn soc() -> Frame<'static> {
    Frame::Soc(Soc::default())
}

fn soa(service: RequestedService, target: u8) -> Frame<'static> {
    Frame::Soa(Soa {
        nmt: NmtState::MS_PRE_OPERATIONAL_1,
        ea: false,
        er: false,
        service,
        target,
        epl_version: EPL_VERSION,
    })
}

fn preq(node: u8, payload: &[u8]) -> Frame<'_> {
    Frame::PReq(PReq {
        node,
        ms: false,
        ea: false,
        rd: true,
        pdo_version: 0,
        payload,
    })
}

fn nmt(dest: u8, id: NmtCommandId) -> Frame<'static> {
    Frame::ASnd(ASnd {
        dest,
        src: MN_NODE,
        service: ASndService::NmtCommand(NmtCommand { id, data: &[] }),
    })
}

fn pres_mn(payload: &[u8]) -> Frame<'_> {
    Frame::PRes(PRes {
        node: MN_NODE,
        nmt: NmtState::MS_OPERATIONAL,
        ms: false,
        en: false,
        rd: true,
        pr: 0,
        rs: 0,
        pdo_version: 0,
        payload,
    })
}

fn answer(node: u8, reply: Reply, offset_ns: u64) -> Answer {
    Answer {
        node,
        reply,
        offset_ns,
    }
}

/// Feeds `frames` in order and checks, after each, every CN's state and
/// the answers.
fn run(cns: &mut ControlledNodes, rows: &[(Frame<'_>, &[NmtState], &[Answer])]) {
    let mut answers = Vec::with_capacity(cns.max_answers());
    let cap = answers.capacity();
    for (i, (frame, states, want)) in rows.iter().enumerate() {
        let h = cns.handle(frame, &mut answers);
        assert_eq!(cns.states(), *states, "row {i}: {frame:?}");
        assert_eq!(answers, *want, "row {i}: {frame:?}");
        assert_eq!(h.answered, !want.is_empty(), "row {i}");
        assert_eq!(answers.capacity(), cap, "row {i}: the answers grew");
    }
}

#[test]
fn a_cn_walks_from_not_active_to_operational_as_ds_301_says() {
    let mut cns = ControlledNodes::new(config(2, false));
    use NmtCommandId as C;
    use RequestedService as R;
    run(
        &mut cns,
        &[
            // A PReq before anything: not polled yet, no answer.
            (preq(1, &[9]), &[S_NA, S_NA], &[]),
            // The first SoA wakes every CN and the one it names answers.
            (
                soa(R::IDENT_REQUEST, 1),
                &[S_P1, S_P1],
                &[answer(1, Reply::IdentResponse, 0)],
            ),
            (
                soa(R::IDENT_REQUEST, 2),
                &[S_P1, S_P1],
                &[answer(2, Reply::IdentResponse, 0)],
            ),
            // Still asynchronous only: a PReq goes unanswered.
            (preq(1, &[9]), &[S_P1, S_P1], &[]),
            // The first SoC starts the isochronous phase.
            (soc(), &[S_P2, S_P2], &[]),
            (preq(1, &[9]), &[S_P2, S_P2], &[answer(1, Reply::PRes, 0)]),
            // A command skipping a state is refused.
            (nmt(1, C::START_NODE), &[S_P2, S_P2], &[]),
            (nmt(1, C::ENABLE_READY_TO_OPERATE), &[S_RTO, S_P2], &[]),
            (nmt(1, C::START_NODE), &[S_OP, S_P2], &[]),
            // Broadcast commands reach every CN that can take them.
            (nmt(255, C::ENABLE_READY_TO_OPERATE), &[S_OP, S_RTO], &[]),
            (nmt(255, C::START_NODE), &[S_OP, S_OP], &[]),
            (
                soa(R::STATUS_REQUEST, 2),
                &[S_OP, S_OP],
                &[answer(2, Reply::StatusResponse, 0)],
            ),
            // A SoA naming another node, or no service, asks nothing.
            (soa(R::STATUS_REQUEST, 7), &[S_OP, S_OP], &[]),
            (soa(R::NO_SERVICE, 0), &[S_OP, S_OP], &[]),
            // A PReq to a node emulated elsewhere is not ours.
            (preq(3, &[1]), &[S_OP, S_OP], &[]),
        ],
    );
}

#[test]
fn stop_pre_operational_2_and_reset_move_a_cn_back() {
    let mut cns = ControlledNodes::new(config(1, false));
    use NmtCommandId as C;
    run(
        &mut cns,
        &[
            (soc(), &[S_P1], &[]),
            (soc(), &[S_P2], &[]),
            (nmt(1, C::STOP_NODE), &[S_ST], &[]),
            // Stopped: largely passive, no PRes; still answers a SoA.
            (preq(1, &[1]), &[S_ST], &[]),
            (
                soa(RequestedService::STATUS_REQUEST, 1),
                &[S_ST],
                &[answer(1, Reply::StatusResponse, 0)],
            ),
            (nmt(1, C::ENTER_PRE_OPERATIONAL_2), &[S_P2], &[]),
            (nmt(1, C::ENABLE_READY_TO_OPERATE), &[S_RTO], &[]),
            (nmt(1, C::STOP_NODE), &[S_ST], &[]),
            (nmt(1, C::RESET_NODE), &[S_NA], &[]),
            (soc(), &[S_P1], &[]),
            (nmt(1, C::RESET_COMMUNICATION), &[S_NA], &[]),
        ],
    );
}

#[test]
fn the_pres_echoes_the_outputs_and_says_the_state() {
    let mut cns = ControlledNodes::new(config(3, false));
    let mut answers = Vec::with_capacity(cns.max_answers());
    for f in [soc(), soc()] {
        cns.handle(&f, &mut answers);
    }
    cns.handle(&preq(2, &[0xA5]), &mut answers);
    assert_eq!(answers, [answer(2, Reply::PRes, 0)]);
    let Frame::PRes(p) = cns.frame(&answers[0]) else {
        panic!("not a PRes")
    };
    assert_eq!(p.node, 2);
    assert_eq!(p.nmt, S_P2);
    assert!(!p.rd, "the data is valid only in OPERATIONAL");
    assert_eq!(p.payload, [0xA5, 2, 2, 2, 2, 2]);
    // Operational: RD set; a longer output than the input is cut.
    for id in [
        NmtCommandId::ENABLE_READY_TO_OPERATE,
        NmtCommandId::START_NODE,
    ] {
        cns.handle(&nmt(2, id), &mut answers);
    }
    cns.handle(&preq(2, &[1, 2, 3, 4, 5, 6, 7, 8]), &mut answers);
    let Frame::PRes(p) = cns.frame(&answers[0]) else {
        panic!("not a PRes")
    };
    assert!(p.rd);
    assert_eq!(p.nmt, S_OP);
    assert_eq!(p.payload, [1, 2, 3, 4, 5, 6]);
    // The other CNs' inputs are untouched.
    cns.handle(&preq(3, &[]), &mut answers);
    let Frame::PRes(p) = cns.frame(&answers[0]) else {
        panic!("not a PRes")
    };
    assert_eq!(p.payload, [3; 6]);
}

#[test]
fn chained_cns_answer_a_pres_mn_in_their_slots_with_their_share() {
    let mut cns = ControlledNodes::new(config(3, true));
    let mut answers = Vec::with_capacity(cns.max_answers());
    for f in [soc(), soc()] {
        cns.handle(&f, &mut answers);
    }
    // CN 2 stopped: it keeps silent and the others keep their slots in
    // order without a gap.
    cns.handle(&nmt(2, NmtCommandId::STOP_NODE), &mut answers);
    cns.handle(&pres_mn(&[0x11, 0x22, 0x33]), &mut answers);
    assert_eq!(
        answers,
        [answer(1, Reply::PRes, 0), answer(3, Reply::PRes, 7_000)]
    );
    let payload = |a: &Answer| match cns.frame(a) {
        Frame::PRes(p) => p.payload.to_vec(),
        f => panic!("{f:?}"),
    };
    assert_eq!(payload(&answers[0]), [0x11, 1, 1, 1, 1, 1]);
    assert_eq!(payload(&answers[1]), [0x33, 3, 3, 3, 3, 3]);
    // Not chained: a PResMN asks nothing.
    let mut plain = ControlledNodes::new(config(3, false));
    for f in [soc(), soc()] {
        plain.handle(&f, &mut answers);
    }
    assert!(!plain.handle(&pres_mn(&[1, 2, 3]), &mut answers).answered);
    // A PRes of another CN asks nothing either.
    let other = Frame::PRes(PRes {
        node: 9,
        ..match pres_mn(&[]) {
            Frame::PRes(p) => p,
            _ => unreachable!(),
        }
    });
    assert!(!cns.handle(&other, &mut answers).answered);
}

#[test]
fn the_answers_encode_to_the_multicasts_and_decode_as_meant() {
    let mut cns = ControlledNodes::new(config(2, true));
    let mut answers = Vec::with_capacity(cns.max_answers());
    let mac = [2, 0, 0, 0, 0, 0x11];
    let mut buf = [0u8; MAX_FRAME_LEN];
    cns.handle(&soa(RequestedService::IDENT_REQUEST, 2), &mut answers);
    let f = cns.frame(&answers[0]);
    assert_eq!(f.multicast_mac(), Some(MAC_ASND));
    let n = encode(&f, MAC_ASND, mac, &mut buf).unwrap();
    let got = decode(&buf[..n]).unwrap();
    assert_eq!((got.dst_mac, got.src_mac), (MAC_ASND, mac));
    let Frame::ASnd(a) = got.frame else {
        panic!("{:?}", got.frame)
    };
    assert_eq!((a.src, a.dest), (2, MN_NODE));
    let ASndService::IdentResponse(r) = a.service else {
        panic!("{:?}", a.service)
    };
    assert_eq!(r.nmt, S_P1);
    assert_eq!(r.feature_flags, FEATURE_ISOCHRONOUS | FEATURE_PRES_CHAINING);
    assert_eq!(
        (r.poll_in_size, r.poll_out_size, r.response_time, r.serial),
        (1, 6, 20_000, 2)
    );
    assert_eq!((r.mtu, r.epl_version), (300, 0x20));

    cns.handle(&soa(RequestedService::STATUS_REQUEST, 1), &mut answers);
    let n = encode(&cns.frame(&answers[0]), MAC_ASND, mac, &mut buf).unwrap();
    let Frame::ASnd(a) = decode(&buf[..n]).unwrap().frame else {
        panic!()
    };
    assert!(matches!(
        a.service,
        ASndService::StatusResponse(StatusResponse {
            nmt: S_P1,
            static_errors: 0,
            errors: [],
            ..
        })
    ));

    cns.handle(&soc(), &mut answers);
    cns.handle(&preq(1, &[7]), &mut answers);
    let f = cns.frame(&answers[0]);
    assert_eq!(f.multicast_mac(), Some(MAC_PRES));
    let n = encode(&f, MAC_PRES, mac, &mut buf).unwrap();
    assert_eq!(n, 60, "padded to the Ethernet minimum");
    assert_eq!(decode(&buf[..n]).unwrap().frame, f);
}

#[test]
fn node_ids_and_sizes_are_kept_in_range() {
    let cns = ControlledNodes::new(CnConfig {
        cns: 0,
        in_bytes: 5000,
        ..config(1, false)
    });
    assert_eq!(cns.config().cns, 1);
    assert_eq!(cns.config().in_bytes, 1490);
    assert_eq!(cns.state(1), Some(S_NA));
    assert_eq!((cns.state(0), cns.state(2)), (None, None));
    let many = ControlledNodes::new(config(255, false));
    assert_eq!(many.states().len(), 239);
    assert!(many.is_ours(239) && !many.is_ours(240));
    // No input bytes: an empty PRes, still a PRes.
    let mut none = ControlledNodes::new(CnConfig {
        in_bytes: 0,
        ..config(1, false)
    });
    let mut answers = Vec::with_capacity(1);
    for f in [soc(), soc()] {
        none.handle(&f, &mut answers);
    }
    none.handle(&preq(1, &[1]), &mut answers);
    match none.frame(&answers[0]) {
        Frame::PRes(p) => assert!(p.payload.is_empty()),
        f => panic!("{f:?}"),
    }
}
