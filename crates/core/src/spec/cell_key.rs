//! The name of one cell of a bench's matrix: configuration × scenario ×
//! deployment × probe × repetition. The plan makes these keys and the store,
//! the verdicts and the reports read them back, so the key lives here, below
//! both the spec and the stored cell ([`crate::cell`]) that carries it.

use serde::{Deserialize, Serialize};

/// Which cell of a bench's matrix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CellKey {
    /// Configuration name (spec `[[configuration]]`).
    pub configuration: String,
    /// Scenario name (spec `[[scenario]]` or a built-in).
    pub scenario: String,
    /// `host` or `container` ([`super::Deployment`]).
    pub deployment: String,
    /// Probe name as the spec names it (e.g. `cyclic`).
    pub probe: String,
    /// Repetition, from 0.
    pub repetition: u32,
}

impl CellKey {
    /// `configuration/scenario/deployment/probe`, the cell's name without
    /// the repetition (the same for every repetition of one cell).
    pub fn name(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.configuration, self.scenario, self.deployment, self.probe
        )
    }
}
