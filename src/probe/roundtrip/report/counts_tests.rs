//! The round trip's message counts as the summary prints them: refusals by
//! reason, loss not measurable without sequence numbers, and results stored
//! before either was counted.

use serde_json::json;

use super::message_counts;

#[test]
fn refusals_are_printed_by_reason_and_not_ours_by_identity() {
    let c = json!({
        "rx": {
            "accepted": 3000, "without_sequence": 0, "malformed": 5,
            "field_list_differs": 50, "unsupported": 3, "not_ours": 30,
            "not_ours_publisher_id": 20, "not_ours_writer_group": 10,
            "not_ours_dataset_writer": 0, "skipped": 0, "other_frames": 0, "errors": 0
        },
        "sequence": {"received": 3000, "lost": 2, "gaps": 1, "out_of_order": 0,
                     "duplicates": 0, "stale": 0, "foreign": 0, "restarts": 0}
    });
    assert_eq!(
        message_counts("from the I/O simulator", &c),
        "  messages from the I/O simulator: 3000 accepted, 2 lost in 1 gaps, 5 malformed, 50 field list differs, 3 unsupported, 30 not ours\n\
         \x20   not ours: 20 another PublisherId, 10 another WriterGroupId, 0 without our DataSetWriterId\n\
         \x20   out of sequence: 0 duplicate, 0 stale, 0 foreign (another sender or a restart's first), 0 restarts\n"
    );
}

#[test]
fn a_publisher_without_sequence_numbers_has_its_loss_not_measurable() {
    // The reference tutorial publisher: 30 messages, no number in any.
    let c = json!({
        "rx": {"accepted": 30, "without_sequence": 30, "malformed": 0,
               "field_list_differs": 0, "unsupported": 0, "not_ours": 0},
        "sequence": {"received": 0, "lost": 0, "gaps": 0, "out_of_order": 0}
    });
    assert_eq!(
        message_counts("from the I/O simulator", &c),
        "  messages from the I/O simulator: 30 accepted, loss not measurable (the publisher sends no NetworkMessage or DataSetMessage sequence number), 0 malformed, 0 field list differs, 0 unsupported, 0 not ours\n"
    );
    let nothing = json!({"rx": {"accepted": 0, "field_list_differs": 30},
                         "sequence": {"received": 0, "lost": 0, "gaps": 0, "out_of_order": 0}});
    assert!(message_counts("from the controller", &nothing).starts_with(
        "  messages from the controller: 0 accepted, loss not measurable (no message was accepted), 0 malformed, 30 field list differs,"
    ));
}

#[test]
fn results_stored_before_the_reasons_read_as_before() {
    // No field list, no identity split, no foreign count: the field list
    // mismatches were then in `malformed`.
    let c = json!({
        "rx": {"accepted": 800, "malformed": 4, "unsupported": 0, "not_ours": 2},
        "sequence": {"received": 800, "lost": 0, "gaps": 0, "out_of_order": 0}
    });
    assert_eq!(
        message_counts("from the controller", &c),
        "  messages from the controller: 800 accepted, 0 lost in 0 gaps, 4 malformed, 0 field list differs, 0 unsupported, 2 not ours\n"
    );
}
