use super::*;

fn seed() -> Budget {
    Budget::seed001(
        BudgetInputs {
            opcua_ns: 500_000,
            network_ns: 100_000,
            controller_period_ns: 5_000_000,
            scan_ns: 500_000,
        },
        None,
    )
}

#[test]
fn seed_001_budget_is_6_7_ms_in_the_seeds_shape() {
    let b = seed();
    assert_eq!(b.computed_ns(), 6_700_000);
    assert_eq!(b.total_ns(), 6_700_000);
    assert_eq!(
        b.names_line(),
        "OPC UA + Network + Controller rate + Controller scan time + Network + OPC UA = Worst-case"
    );
    assert_eq!(
        b.formula(),
        "500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms"
    );
}

#[test]
fn an_own_budget_replaces_the_sum_and_is_shown_beside_it() {
    let mut b = seed();
    b.own_ns = Some(8_000_000);
    assert_eq!(b.total_ns(), 8_000_000);
    assert_eq!(
        b.formula(),
        "500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms; budget given: 8 ms"
    );
    let floor = Budget::seed001(
        BudgetInputs {
            opcua_ns: 500_000,
            network_ns: 100_000,
            controller_period_ns: 250_000,
            scan_ns: 0,
        },
        None,
    );
    assert_eq!(
        floor.formula(),
        "500 µs + 100 µs + 250 µs + 0 µs + 100 µs + 500 µs = 1.45 ms"
    );
    assert_eq!(millis(6_000_000), "6 ms");
    assert_eq!(millis(100_000), "100 µs");
    assert_eq!(micros(1_500), "1.500us");
}

#[test]
fn bands_place_samples_against_the_budget_and_count_the_ones_over() {
    let mut bands = BudgetBands::default();
    for v in [
        0, 1_000_000, 1_000_001, 5_000_000, 6_030_000, 6_700_000, 6_700_001,
    ] {
        bands.add(v, 6_700_000);
    }
    // 1.0 ms = 14.9 %, 1_000_001 ns still ≤ 25 %; 5.0 ms = 74.6 %;
    // 6.03 ms = exactly 90 %; 6.7 ms = 100 % (not over); 6.7 ms + 1 ns over.
    assert_eq!(bands.counts, [3, 0, 1, 1, 1, 1]);
    assert_eq!(bands.over(), 1);
    assert_eq!(bands.total(), 7);
}

#[test]
fn the_verdict_fails_on_any_sample_over_and_lists_it_with_its_time() {
    let mut v = BudgetVerdict::new(seed());
    assert!(!v.add(0, 10, 3_000_000));
    assert!(v.held());
    assert!(v.add(1, 20_000, 6_700_001));
    assert!(!v.add(2, 30_000, 6_700_000));
    assert!(!v.held());
    assert_eq!((v.samples, v.over), (3, 1));
    assert_eq!(
        v.over_samples,
        vec![OverBudget {
            index: 1,
            since_start_ns: 20_000,
            value_ns: 6_700_001
        }]
    );
    for i in 0..200 {
        v.add(3 + i, 0, 7_000_000);
    }
    assert_eq!(v.over, 201);
    assert_eq!(v.over_samples.len(), BudgetVerdict::LISTED);
    assert_eq!(v.over_samples.capacity(), BudgetVerdict::LISTED);
}

fn change(marker: u64, t1: u64) -> Change {
    Change {
        marker,
        t1_ns: t1,
        t1_real_ns: t1 + 1_000_000_000,
    }
}

#[test]
fn t4_is_the_first_tick_that_applies_the_output_carrying_the_change() {
    let mut io = IoSide::new();
    assert_eq!(io.tick(0), None);
    assert!(io.change(change(7, 1_000)));
    // An old output, then ticks: nothing completes.
    io.output(6, Some(50));
    assert_eq!(io.tick(1_500), None);
    // The output carrying 7 arrives twice; T4rx is the first message's stamp.
    io.output(7, Some(5_000));
    io.output(7, Some(5_400));
    let done = io.tick(6_000).expect("the tick applies marker 7");
    assert_eq!(done.change, change(7, 1_000));
    assert_eq!(done.t4_ns, 6_000);
    assert_eq!(done.t4_rx_real_ns, Some(5_000));
    assert_eq!(done.screw_to_screw_ns(), 5_000);
    // Completed once only.
    assert_eq!(io.tick(6_500), None);
    assert_eq!(io.outstanding(), None);
}

#[test]
fn an_output_already_carrying_the_marker_completes_at_the_next_tick() {
    // A controller that echoes before the change is seen cannot carry a
    // marker that did not exist yet; but a marker repeated from an earlier
    // change (a third-party controller that latches) completes at once,
    // with the stamp of the message that carried it after the change.
    let mut io = IoSide::new();
    io.output(9, Some(10));
    assert!(io.change(change(9, 100)));
    assert_eq!(io.tick(200).map(|c| c.t4_rx_real_ns), Some(None));
}

#[test]
fn a_second_change_before_completion_replaces_the_first_and_says_so() {
    let mut io = IoSide::new();
    assert!(io.change(change(1, 0)));
    assert!(!io.change(change(2, 10)));
    io.output(1, Some(1));
    assert_eq!(io.tick(20), None);
    io.output(2, Some(2));
    assert_eq!(io.tick(30).map(|c| c.change.marker), Some(2));
}

#[test]
fn t2_is_the_first_receive_stamp_and_t3_is_counted_once_per_change() {
    let mut c = ControllerSide::new();
    assert_eq!(c.read(), None);
    c.input(1, Some(100));
    c.input(1, Some(150));
    let img = c.read().unwrap();
    assert_eq!(
        img,
        InputImage {
            marker: 1,
            t2_real_ns: Some(100)
        }
    );
    let h = c.published(img, 900).unwrap();
    assert_eq!(h.controller_ns(), 800);
    // The next cycles publish the same input: no new T2 → T3.
    assert_eq!(c.published(c.read().unwrap(), 1_900), None);
    c.input(2, None);
    // A message without a stamp gives no T2, and no T2 → T3.
    assert_eq!(c.published(c.read().unwrap(), 2_900), None);
    c.input(3, Some(3_000));
    assert_eq!(
        c.published(c.read().unwrap(), 3_500)
            .map(|h| h.controller_ns()),
        Some(500)
    );
}

#[test]
fn sequence_gaps_count_lost_messages_across_the_wrap() {
    let mut s = SequenceCounts::default();
    for seq in [65_533u16, 65_534, 0, 1, 1, 5, 3, 6] {
        s.add(seq);
    }
    // 65534 → 0 skips 65535 (1 lost); 1 → 1 repeated; 1 → 5 skips 2, 3, 4
    // (3 lost); 3 goes back; 5 → 6 in order.
    assert_eq!(s.received, 8);
    assert_eq!(s.lost, 4);
    assert_eq!(s.gaps, 2);
    assert_eq!(s.out_of_order, 2);
}

#[test]
fn change_delays_and_phases_stay_in_their_ranges_and_replay_from_the_seed() {
    let mut a = ChangeSchedule::new(42, 500_000, 5_500_000);
    let mut b = ChangeSchedule::new(42, 500_000, 5_500_000);
    let mut lo = u64::MAX;
    let mut hi = 0;
    for _ in 0..10_000 {
        let d = a.next_delay_ns();
        assert_eq!(d, b.next_delay_ns());
        assert!((500_000..6_000_000).contains(&d), "{d}");
        lo = lo.min(d);
        hi = hi.max(d);
        let p = a.phase_ns(500_000);
        assert_eq!(p, b.phase_ns(500_000));
        assert!(p < 500_000);
    }
    // Uniform over 5.5 ms: 10 000 draws reach within 10 µs of both ends.
    assert!(lo < 510_000 && hi > 5_990_000, "{lo} {hi}");
}

/// The verdicts of `seqs` in order, and the counts after them.
fn verdicts(seqs: &[u16]) -> (Vec<SequenceVerdict>, SequenceCounts) {
    let mut s = SequenceCounts::default();
    let v = seqs.iter().map(|&q| s.add(q)).collect();
    (v, s)
}

/// The counts as (received, lost, gaps, duplicates, stale, foreign,
/// restarts, out_of_order).
fn tally(s: &SequenceCounts) -> (u64, u64, u64, u64, u64, u64, u64, u64) {
    (
        s.received,
        s.lost,
        s.gaps,
        s.duplicates,
        s.stale,
        s.foreign,
        s.restarts,
        s.out_of_order,
    )
}

use SequenceVerdict::{Duplicate, Foreign, InOrder, Restart, Stale};

#[test]
fn in_order_numbers_are_all_taken_and_nothing_is_lost() {
    let (v, s) = verdicts(&[7, 8, 9, 10]);
    assert_eq!(v, [InOrder; 4]);
    assert_eq!(tally(&s), (4, 0, 0, 0, 0, 0, 0, 0));
}

#[test]
fn a_small_gap_counts_the_messages_missing_and_up_to_the_window() {
    let (v, s) = verdicts(&[0, 1, 4, 5, 1005]);
    assert_eq!(v, [InOrder; 5]);
    // 1 → 4 misses 2 and 3; 5 → 1005 is the window's edge: 999 missing.
    assert_eq!(tally(&s), (5, 1001, 2, 0, 0, 0, 0, 0));
}

#[test]
fn a_duplicate_and_a_stale_number_are_counted_and_not_taken() {
    let (v, s) = verdicts(&[30, 31, 31, 32, 29, 32 - REORDER_WINDOW, 33]);
    assert_eq!(
        v,
        [InOrder, InOrder, Duplicate, InOrder, Stale, Stale, InOrder]
    );
    assert_eq!(tally(&s), (7, 0, 0, 1, 2, 0, 0, 3));
}

#[test]
fn the_window_holds_across_the_wrap_of_the_sixteen_bit_number() {
    let (v, s) = verdicts(&[65_533, 65_534, 0, 1, 1, 5, 3, 6, 65_535, 60_000]);
    assert_eq!(
        v,
        [InOrder, InOrder, InOrder, InOrder, Duplicate, InOrder, Stale, InOrder, Stale, Foreign]
    );
    // 65534 → 0 misses 65535; 1 → 5 misses 2, 3, 4; 3 and then 65535 are
    // behind (7 behind 6, across the wrap); 60000 is far behind.
    assert_eq!(tally(&s), (10, 4, 2, 1, 2, 1, 0, 3));
    let (v, s) = verdicts(&[65_000, 464]);
    assert_eq!(v, [InOrder, InOrder], "1000 ahead across the wrap");
    assert_eq!((s.lost, s.gaps), (999, 1));
    let (v, _) = verdicts(&[65_000, 465]);
    assert_eq!(v, [InOrder, Foreign], "1001 ahead across the wrap");
}

#[test]
fn a_huge_jump_either_way_is_foreign_and_loses_nothing() {
    let (v, s) = verdicts(&[0, 1, 2, 30_000, 3, 40_000, 4, 4 + SEQUENCE_WINDOW + 1, 5]);
    assert_eq!(
        v,
        [InOrder, InOrder, InOrder, Foreign, InOrder, Foreign, InOrder, Foreign, InOrder]
    );
    assert_eq!(tally(&s), (9, 0, 0, 0, 0, 3, 0, 0));
    // Far behind, beyond the reorder window.
    let (v, s) = verdicts(&[100, 101, 101 - REORDER_WINDOW - 1, 102]);
    assert_eq!(v, [InOrder, InOrder, Foreign, InOrder]);
    assert_eq!(tally(&s), (4, 0, 0, 0, 0, 1, 0, 0));
}

#[test]
fn a_restart_from_a_new_base_is_followed_from_its_second_message() {
    let (v, s) = verdicts(&[5000, 5001, 5002, 0, 1, 2, 5, 5, 4]);
    assert_eq!(
        v,
        [InOrder, InOrder, InOrder, Foreign, Restart, InOrder, InOrder, Duplicate, Stale]
    );
    // 0 was the restart's first message, not a stranger's; from 1 on the
    // stream is the new one: 2 → 5 misses 3 and 4, and 4 then comes late.
    assert_eq!(tally(&s), (9, 2, 1, 1, 1, 0, 1, 2));
}

#[test]
fn a_stranger_counting_along_between_the_sender_s_messages_is_never_followed() {
    // Consecutive numbers of its own, far from the sender's, each with a
    // message of the sender in between: no restart, every one foreign.
    let (v, s) = verdicts(&[10, 30_000, 11, 30_001, 12, 30_002, 13]);
    assert_eq!(
        v,
        [InOrder, Foreign, InOrder, Foreign, InOrder, Foreign, InOrder]
    );
    assert_eq!(tally(&s), (7, 0, 0, 0, 0, 3, 0, 0));
}

#[test]
fn a_stranger_s_number_inside_the_window_is_taken_back_when_the_sender_goes_on() {
    // 600 is a stranger's, 498 ahead: taken as a gap until 102 shows the
    // sender's stream going on from 101; then its gap is taken back.
    let (v, s) = verdicts(&[100, 101, 600, 102, 103]);
    assert_eq!(v, [InOrder; 5]);
    assert_eq!(tally(&s), (5, 0, 0, 0, 0, 1, 0, 0));
    // A real gap, confirmed by the number after it: a number from inside
    // it is then foreign, and the loss stands.
    let (v, s) = verdicts(&[100, 600, 601, 150, 602]);
    assert_eq!(v, [InOrder, InOrder, InOrder, Foreign, InOrder]);
    assert_eq!(tally(&s), (5, 499, 1, 0, 0, 1, 0, 0));
    // A stranger's number that also skips ahead of the sender's next:
    // 102 comes after it, with 101 lost.
    let (v, s) = verdicts(&[100, 900, 102, 103]);
    assert_eq!(v, [InOrder; 4]);
    assert_eq!(tally(&s), (4, 1, 1, 0, 0, 1, 0, 0));
    // A stranger's number just ahead, within the reorder window: the
    // sender's next number shows it up all the same.
    let (v, s) = verdicts(&[100, 101, 105, 102, 103, 104, 105]);
    assert_eq!(v, [InOrder; 7]);
    assert_eq!(tally(&s), (7, 0, 0, 0, 0, 1, 0, 0));
    // Two of the sender's messages swapped look the same: one lost (102,
    // taken first and then counted foreign), no stale.
    let (v, s) = verdicts(&[100, 102, 101, 103]);
    assert_eq!(v, [InOrder; 4]);
    assert_eq!(tally(&s), (4, 1, 1, 0, 0, 1, 0, 0));
    // Across the wrap.
    let (v, s) = verdicts(&[65_530, 65_531, 400, 65_532, 65_533]);
    assert_eq!(v, [InOrder; 5]);
    assert_eq!(tally(&s), (5, 0, 0, 0, 0, 1, 0, 0));
}

#[test]
fn loss_is_not_measurable_without_sequence_numbers_never_zero() {
    let mut seq = SequenceCounts::default();
    let none = Loss::of(30, &seq);
    assert_eq!(
        none.text(),
        "loss not measurable (the publisher sends no NetworkMessage or DataSetMessage sequence number)"
    );
    assert_eq!(
        serde_json::to_string(&none).unwrap(),
        r#"{"lost":null,"gaps":null,"not_measurable":"the publisher sends no NetworkMessage or DataSetMessage sequence number"}"#
    );
    assert_eq!(
        Loss::of(0, &seq).text(),
        "loss not measurable (no message was accepted)"
    );
    for s in [1, 2, 5, 6, 7] {
        seq.add(s);
    }
    let measured = Loss::of(5, &seq);
    assert_eq!(measured.text(), "2 lost in 1 gaps");
    assert_eq!(
        serde_json::to_string(&measured).unwrap(),
        r#"{"lost":2,"gaps":1}"#
    );
    // From a stored end: its rx and sequence counts.
    let end = serde_json::json!({"rx": {"accepted": 5}, "sequence": seq});
    assert_eq!(Loss::of_end(&end), measured);
    let end = serde_json::json!({"rx": {"accepted": 9}, "sequence": SequenceCounts::default()});
    assert_eq!(Loss::of_end(&end), none);
}
