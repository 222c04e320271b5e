//! Every CN's NMT state through a measurement, from each PRes and
//! StatusResponse the MN receives: when a CN leaves NMT_CS_OPERATIONAL,
//! for how long, and in which state it went.
//!
//! A measurement starts with every CN operational (the bring-up got them
//! there). [`NmtTrack::note`] takes each state a frame reports; the
//! first non-operational one opens an [`NmtOutage`] (time since the
//! measurement's start, cycle number, the state), the next operational one
//! a PRes reports closes it with the cycles it cost, and
//! [`NmtTrack::finish`] closes those still open at the end (cost to the
//! end). A StatusResponse opens an outage but never closes one: right
//! after a state change a CN's StatusResponse may still report the state
//! before it, while its PRes already says the new one (the reference CN
//! does, fixtures README).
//!
//! The outages are kept in a list made up front ([`NmtTrack::new`]); once
//! it is full, further outages are only counted ([`NmtTrack::untold`]), so
//! observing allocates nothing inside a measured cycle.

use serde::{Deserialize, Serialize};

use super::NmtState;

/// One CN's time out of NMT_CS_OPERATIONAL during a measurement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NmtOutage {
    /// The CN.
    pub node: u8,
    /// When it was first seen out, ns since the measurement's start.
    pub at_ns: u64,
    /// The measured cycle it was first seen out in (0-based).
    pub cycle: u64,
    /// The state it was first seen in (DS 301's name).
    pub state: String,
    /// The state's code.
    pub code: u8,
    /// Cycles it cost: until a PRes said operational again, or to the end.
    pub cycles: u64,
    /// Whether it came back to NMT_CS_OPERATIONAL before the end.
    pub back: bool,
}

impl NmtOutage {
    /// `CN 1 left NMT_CS_OPERATIONAL at 1.234s (cycle 123) for
    /// NMT_CS_PRE_OPERATIONAL_1: 57 cycles, back` (or `…, to the end`).
    pub fn describe(&self) -> String {
        format!(
            "CN {} left NMT_CS_OPERATIONAL at {} (cycle {}) for {}: {} cycles, {}",
            self.node,
            crate::units::format_ns(self.at_ns as i64),
            self.cycle,
            self.state,
            self.cycles,
            match self.back {
                true => "back",
                false => "to the end",
            }
        )
    }
}

/// The NMT states of a measurement's CNs; see the module doc.
#[derive(Debug, Clone)]
pub struct NmtTrack {
    nodes: Vec<u8>,
    /// Per CN (in `nodes` order): the index of its open outage.
    open: Vec<Option<usize>>,
    outages: Vec<NmtOutage>,
    untold: u64,
}

impl NmtTrack {
    /// Tracks `nodes`, with room for `room` outages.
    pub fn new(nodes: &[u8], room: usize) -> NmtTrack {
        NmtTrack {
            nodes: nodes.to_vec(),
            open: vec![None; nodes.len()],
            outages: Vec::with_capacity(room),
            untold: 0,
        }
    }

    fn slot(&self, node: u8) -> Option<usize> {
        self.nodes.iter().position(|&n| n == node)
    }

    /// `node` reported `state` in measured cycle `cycle`, `at_ns` after the
    /// measurement's start; `from_pres` when a PRes said it (only a PRes
    /// closes an outage). A node not tracked is ignored.
    pub fn note(&mut self, node: u8, state: NmtState, cycle: u64, at_ns: u64, from_pres: bool) {
        let Some(k) = self.slot(node) else { return };
        let operational = state == NmtState::CS_OPERATIONAL;
        match (self.open[k], operational) {
            (Some(i), true) if from_pres => {
                let o = &mut self.outages[i];
                o.cycles = cycle.saturating_sub(o.cycle);
                o.back = true;
                self.open[k] = None;
            }
            (None, false) => {
                if self.outages.len() == self.outages.capacity() {
                    self.untold += 1;
                    return;
                }
                self.open[k] = Some(self.outages.len());
                self.outages.push(NmtOutage {
                    node,
                    at_ns,
                    cycle,
                    state: state.name(false).unwrap_or("unnamed NMT state").into(),
                    code: state.0,
                    cycles: 0,
                    back: false,
                });
            }
            _ => {}
        }
    }

    /// Ends the measurement after `cycles` measured cycles: outages still
    /// open cost the cycles to the end. Returns every outage, in the order
    /// they began.
    pub fn finish(&mut self, cycles: u64) -> Vec<NmtOutage> {
        for k in 0..self.open.len() {
            if let Some(i) = self.open[k].take() {
                let o = &mut self.outages[i];
                o.cycles = cycles.saturating_sub(o.cycle);
            }
        }
        self.outages.clone()
    }

    /// Outages not kept (the list was full), only counted.
    pub fn untold(&self) -> u64 {
        self.untold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OP: NmtState = NmtState::CS_OPERATIONAL;
    const PRE1: NmtState = NmtState::CS_PRE_OPERATIONAL_1;

    #[test]
    fn a_cn_that_leaves_and_comes_back_is_told_with_when_which_state_and_cost() {
        let mut t = NmtTrack::new(&[1, 32, 110], 8);
        t.note(32, OP, 0, 0, true);
        t.note(32, PRE1, 120, 1_200_000_000, true);
        // Still out: the state it went to stays the first one seen.
        t.note(32, NmtState::CS_PRE_OPERATIONAL_2, 125, 1_250_000_000, true);
        // A StatusResponse that says operational does not close it.
        t.note(32, OP, 150, 1_500_000_000, false);
        t.note(32, OP, 177, 1_770_000_000, true);
        let out = t.finish(1000);
        assert_eq!(
            out,
            [NmtOutage {
                node: 32,
                at_ns: 1_200_000_000,
                cycle: 120,
                state: "NMT_CS_PRE_OPERATIONAL_1".into(),
                code: 0x1D,
                cycles: 57,
                back: true,
            }]
        );
        assert_eq!(
            out[0].describe(),
            "CN 32 left NMT_CS_OPERATIONAL at 1.200s (cycle 120) for NMT_CS_PRE_OPERATIONAL_1: 57 cycles, back"
        );
    }

    #[test]
    fn an_outage_still_open_costs_the_cycles_to_the_end() {
        let mut t = NmtTrack::new(&[1, 2], 8);
        t.note(2, NmtState::CS_STOPPED, 40, 400, false);
        t.note(1, PRE1, 90, 900, true);
        let out = t.finish(100);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].node, out[0].cycles, out[0].back), (2, 60, false));
        assert_eq!(out[0].state, "NMT_CS_STOPPED");
        assert_eq!((out[1].node, out[1].cycles, out[1].back), (1, 10, false));
        assert!(out[1].describe().ends_with("10 cycles, to the end"));
    }

    #[test]
    fn operational_cns_and_foreign_nodes_leave_no_trace() {
        let mut t = NmtTrack::new(&[1], 8);
        for c in 0..50 {
            t.note(1, OP, c, c * 1000, true);
        }
        t.note(7, PRE1, 3, 3000, true);
        assert_eq!(t.finish(50), []);
    }

    #[test]
    fn a_full_list_counts_the_rest_without_growing() {
        let mut t = NmtTrack::new(&[1], 1);
        t.note(1, PRE1, 1, 10, true);
        t.note(1, OP, 2, 20, true);
        t.note(1, PRE1, 3, 30, true);
        assert_eq!(t.untold(), 1);
        let out = t.finish(10);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].cycle, out[0].cycles, out[0].back), (1, 1, true));
    }
}
