//! The netcycle probe's own verdicts: a controlled-node-only run judges no
//! cycle (its managing node is not ours), and "cycle time held" from the
//! probe's detail. The rules of [`crate::verdict`] ask them through
//! [`VERDICTS`].

use super::{NetcycleDetail, NodeRole};
use crate::result::RunResult;
use crate::verdict::{KindVerdicts, Status, Verdict};

/// The netcycle probe's verdicts, for its descriptor.
pub const VERDICTS: KindVerdicts = KindVerdicts {
    unmeasurable: |role, _| match role {
        Some("cn") => {
            Some("the managing node is not ours (--role cn): its cycles are judged where it runs")
        }
        _ => None,
    },
    main_metric: |_| None,
    no_sample_reason: |_, _| Some("no cycle was measured".into()),
    own: held_verdict,
};

/// A netcycle's "cycle time held", from the probe's detail.
fn held_verdict(r: &RunResult) -> Option<Verdict> {
    let d: NetcycleDetail = serde_json::from_value(r.detail.clone()?).ok()?;
    if d.role == NodeRole::Cn {
        return None;
    }
    let name = "cycle time held".to_string();
    let counts = format!(
        "{} cycles, {} late; {} PRes polled, {} missed",
        d.cycles, d.late_cycles, d.polls, d.missed_pres
    );
    if d.cycles == 0 {
        let reason = "no cycle was measured".to_string();
        return Some(Verdict {
            name,
            limit_ns: None,
            observed_ns: None,
            samples: Some(0),
            decided: format!("{counts}: {reason}"),
            status: Status::NotMeasured { reason },
        });
    }
    let (status, decided) = if d.held.held {
        (Status::Pass, counts)
    } else {
        (
            Status::Fail,
            format!("{counts}: {}", d.held.reasons.join("; ")),
        )
    };
    Some(Verdict {
        name,
        limit_ns: None,
        observed_ns: None,
        samples: Some(d.cycles),
        decided,
        status,
    })
}
