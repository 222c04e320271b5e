//! The ER/EC handshake against the reference MN's StatusRequests and the
//! reference CNs' StatusResponses in `ref_mn_cn.pcap`, and its restarts.

use std::collections::BTreeMap;

use super::{ErrSig, ErrSigChange, WAIT_EC0_LIMIT};

use crate::powerlink::capture_tests::{frames, REF_MN_CN};

/// The reference MN's ER flag of every StatusRequest is the one the
/// handshake asks for, and each CN is ready after the answer the README
/// names (1: frame 1084, 32: 1199, 110: 1110).
#[test]
fn follows_the_reference_mn_over_the_capture() {
    let mut cns: BTreeMap<u8, ErrSig> = [1, 32, 110]
        .into_iter()
        .map(|n| (n, ErrSig::default()))
        .collect();
    let mut ready_at = BTreeMap::new();
    let (mut requests, mut answers) = (0, 0);
    for (no, f) in (1..).zip(frames(REF_MN_CN)) {
        match (f[14], f[17], f[20]) {
            // SoA StatusRequest: target at 21, flag1 at 18 (ER 0x02).
            (0x05, _, 0x02) => {
                let s = cns.get_mut(&f[21]).expect("a StatusRequest to a known CN");
                assert_eq!(s.er(), f[18] & 0x02 != 0, "ER of frame {no}");
                s.requested();
                requests += 1;
            }
            // ASnd StatusResponse: source at 16, flag1 at 18 (EC 0x08).
            (0x06, 0x02, _) => {
                let s = cns.get_mut(&f[16]).expect("a StatusResponse of a known CN");
                if s.answered(f[18] & 0x08 != 0) == ErrSigChange::Ready {
                    ready_at.insert(f[16], no);
                }
                answers += 1;
            }
            _ => {}
        }
    }
    assert_eq!((requests, answers), (20, 20));
    assert_eq!(
        ready_at.into_iter().collect::<Vec<_>>(),
        vec![(1, 1084), (32, 1199), (110, 1110)]
    );
    assert!(cns.values().all(ErrSig::ready));
}

#[test]
fn the_first_ec1_does_not_count() {
    let mut s = ErrSig::default();
    assert!(s.er() && s.wants_status());
    s.requested();
    assert_eq!(s.answered(true), ErrSigChange::None);
    assert_eq!(s, ErrSig::WaitEc1Sent);
    assert!(s.er());
    s.requested();
    assert_eq!(s.answered(true), ErrSigChange::None);
    assert_eq!(s, ErrSig::WaitEc0 { ec1: 0 });
    assert!(!s.er());
}

#[test]
fn a_cn_that_never_sets_ec_keeps_waiting_for_it() {
    let mut s = ErrSig::default();
    for _ in 0..50 {
        s.requested();
        assert_eq!(s.answered(false), ErrSigChange::None);
        assert!(s.er());
    }
    assert_eq!(s, ErrSig::WaitEc1Again);
}

#[test]
fn more_than_ten_ec1_answers_restart_it() {
    let mut s = ErrSig::WaitEc0 { ec1: 0 };
    for k in 1..=WAIT_EC0_LIMIT {
        s.requested();
        assert_eq!(s.answered(true), ErrSigChange::None);
        assert_eq!(s, ErrSig::WaitEc0 { ec1: k });
    }
    s.requested();
    assert_eq!(s.answered(true), ErrSigChange::Restarted);
    assert_eq!(s, ErrSig::WaitEc1);
    assert!(s.er());
}

#[test]
fn ec1_while_ready_restarts_it() {
    let mut s = ErrSig::WaitEc0 { ec1: 3 };
    assert_eq!(s.answered(false), ErrSigChange::Ready);
    assert!(s.ready() && !s.wants_status() && !s.er());
    assert_eq!(s.answered(false), ErrSigChange::None);
    assert_eq!(s.answered(true), ErrSigChange::Rebooted);
    assert_eq!(s, ErrSig::WaitEc1);
}
