//! The round trip's own verdicts: which metrics a one-role run cannot
//! measure, the controller's cycles as the main metric of a controller
//! alone, why no round trip completed (what became of the messages that
//! did arrive), and the budget verdict. The rules of [`crate::verdict`]
//! ask them through [`VERDICTS`].

use serde_json::Value;

use super::BudgetVerdict;
use crate::result::RunResult;
use crate::stats::MetricSummary;
use crate::verdict::{
    no_sample_reason, role, summary, unmeasurable, us, KindVerdicts, Status, Verdict,
};

/// The round trip's verdicts, for its descriptor.
pub const VERDICTS: KindVerdicts = KindVerdicts {
    unmeasurable: |role, metric| {
        match role {
        Some("controller") if matches!(metric, "screw-to-screw" | "t1-t2" | "t3-t4rx") => {
            Some("the controller alone sees no T1 or T4: the I/O simulator's machine (--role io) measures the round trip")
        }
        Some("io")
            if matches!(
                metric,
                "controller" | "t1-t2" | "t3-t4rx" | "latency" | "jitter" | "exec"
            ) =>
        {
            Some("the I/O simulator alone sees no controller cycle: the controller's machine (--role controller) measures it")
        }
        _ => None,
    }
    },
    main_metric: |role| (role == Some("controller")).then_some("controller"),
    no_sample_reason: |r, metric| Some(no_round_trip(r, metric)),
    own: budget_verdict,
};

/// Why a round trip has no sample of `metric`.
fn no_round_trip(r: &RunResult, metric: &str) -> String {
    // The end that receives what closes the loop: the I/O simulator
    // (the controller's outputs), or the controller (the inputs).
    let (end, from) = match role(r) {
        Some("controller") => ("controller", "the I/O simulator"),
        _ => ("io", "the controller"),
    };
    let what = if metric == "controller" {
        "no controller cycle handled a new input"
    } else {
        "no round trip completed"
    };
    if let Some(rx) = r
        .detail
        .as_ref()
        .and_then(|d| d.get(end))
        .and_then(|c| c.get("rx"))
    {
        let accepted = rx.get("accepted").and_then(Value::as_u64).unwrap_or(0);
        let mut refused = Vec::new();
        refused_counts(rx, &mut refused);
        let refused = if refused.is_empty() {
            String::new()
        } else {
            format!(", {}", refused.join(", "))
        };
        return format!("{what}: of the messages from {from}, {accepted} accepted{refused}");
    }
    what.to_string()
}

/// Every non-zero count of `rx` other than `accepted` (one level of
/// nesting, for counts kept by reason), as `30 malformed`.
fn refused_counts(rx: &Value, out: &mut Vec<String>) {
    let Some(m) = rx.as_object() else {
        return;
    };
    for (k, v) in m {
        if k == "accepted" {
            continue;
        }
        match v {
            Value::Number(n) if n.as_u64().is_some_and(|n| n > 0) => {
                out.push(format!("{} {}", n, k.replace('_', " ")));
            }
            Value::Object(_) => refused_counts(v, out),
            _ => {}
        }
    }
}

/// The round trip's budget verdict, from the probe's detail.
fn budget_verdict(r: &RunResult) -> Option<Verdict> {
    if unmeasurable(r, "screw-to-screw").is_some() {
        return None;
    }
    let v: BudgetVerdict =
        serde_json::from_value(r.detail.as_ref()?.get("budget")?.clone()).ok()?;
    let worst = summary(r, "screw-to-screw").and_then(MetricSummary::largest_magnitude);
    let name = "round-trip budget".to_string();
    if v.samples == 0 {
        let reason = no_sample_reason(r, "screw-to-screw");
        return Some(Verdict {
            name,
            limit_ns: Some(v.budget_ns),
            observed_ns: None,
            samples: Some(0),
            decided: format!("0 round trips, budget {}: {reason}", us(v.budget_ns)),
            status: Status::NotMeasured { reason },
        });
    }
    Some(Verdict {
        name,
        limit_ns: Some(v.budget_ns),
        observed_ns: worst,
        samples: Some(v.samples),
        decided: format!(
            "{} of {} round trips beyond the budget of {}",
            v.over,
            v.samples,
            us(v.budget_ns)
        ),
        status: if v.held() { Status::Pass } else { Status::Fail },
    })
}
