//! The `wakeup` probe's parameters: whether it explains its late cycles
//! ([`crate::explain::periodic`]), declared once with its key; everything
//! else it takes is what every periodic probe shares.

use crate::explain::periodic::EXPLAIN_KEY;
use crate::probe::kind::ProbeKind;
use crate::spec::param::{take, Ordered};
use crate::spec::{Key, ParamTable, Params, ProbeParams};

/// What only the `wakeup` probe takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WakeupParams {
    /// Trace the probe CPUs and explain the late cycles.
    pub explain: bool,
}

/// The `wakeup` probe's own keys.
pub const KEYS: &[Key] = &[EXPLAIN_KEY];

/// How the `wakeup` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: KEYS,
    shared: &["period", "max_latency", "max_jitter"],
    default_period_ns: crate::defaults::PERIOD_NS,
    wire_keys: &[],
    defaults: |_| ProbeParams::new(WakeupParams::default()),
    check: |t, _| {
        Ok(ProbeParams::new(WakeupParams {
            explain: t.flag("explain")?.unwrap_or(false),
        }))
    },
    read: |_, m| {
        Ok(ProbeParams::new(WakeupParams {
            explain: take(m, "explain")?,
        }))
    },
};

impl Params for WakeupParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Wakeup
    }

    /// Nothing, unless it explains: a run without it stores what it did.
    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        match self.explain {
            true => vec![("explain", Ordered::Bool(true))],
            false => Vec::new(),
        }
    }

    fn not_in_container(&self) -> Option<String> {
        crate::explain::periodic::not_in_container("wakeup", self.explain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cyclic::CyclicParams;
    use crate::spec::testing::{err, ok, IDLE};
    use crate::spec::ProbeSpec;

    fn spec(probe: &str) -> String {
        format!("duration = \"10s\"\n[[probe]]\n{probe}")
    }

    #[test]
    fn explain_is_a_key_of_both_periodic_kinds_stored_only_when_true() {
        for (kind, explain) in [("wakeup", true), ("cyclic", true), ("wakeup", false)] {
            let text = match explain {
                true => spec(&format!("kind = \"{kind}\"\nexplain = true\n")),
                false => spec(&format!("kind = \"{kind}\"\n")),
            };
            let s = ok(&text, IDLE);
            let p = &s.probes[0];
            let asked = p.params.get::<WakeupParams>().map(|w| w.explain);
            let asked = asked.or(p.params.get::<CyclicParams>().map(|c| c.explain));
            assert_eq!(asked, Some(explain), "{kind}");
            let json = serde_json::to_string(p).unwrap();
            assert_eq!(json.contains(r#""explain":true"#), explain, "{json}");
            assert!(!json.contains(r#""explain":false"#), "{json}");
            let back: ProbeSpec = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, p);
        }
        // The stored JSON of a run without it is what it always was.
        let p = &ok(&spec("kind = \"cyclic\"\n"), IDLE).probes[0];
        let json = serde_json::to_string(p).unwrap();
        assert!(
            json.contains(r#""period_ns":1000000,"scan_ns":100000,"working_set_bytes":262144,"threshold_ns":null,"#),
            "{json}"
        );
        assert_eq!(
            err(&spec("kind = \"wakeup\"\nexplain = \"yes\"\n"), IDLE),
            "bench.toml:4: probe[0].explain: invalid type: string \"yes\", expected a boolean"
        );
    }
}
