//! The `chase` probe's parameters: the buffer it chases, the chases per
//! sample, when it ends, and the length of one chase, declared once with
//! their keys.

use crate::defaults;
use crate::limits;
use crate::probe::kind::ProbeKind;
use crate::spec::param::{take, Ordered};
use crate::spec::{Key, KeyFlag, ParamError, ParamTable, Params, ProbeParams, ValueType};

/// What only the `chase` probe takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaseParams {
    /// Buffer to chase, bytes; `None`: half the cache level the probe
    /// CPU shares with the neighbour CPUs.
    pub buffer_bytes: Option<u64>,
    /// Timed chases per sample; `None`: not given,
    /// [`defaults::ITERATIONS`].
    pub iterations: Option<u64>,
    /// Samples after which the chase ends; `None`: in a bench cell as
    /// many as fit in the duration, in `jitterlab run chase` without
    /// `--duration` [`defaults::SAMPLES`]. A bench cell's duration caps
    /// it either way.
    pub samples: Option<u64>,
    /// Dependent loads in one timed chase (`--chase-length`; a spec
    /// cannot set it).
    pub chase_length: u64,
}

impl Default for ChaseParams {
    fn default() -> ChaseParams {
        ChaseParams {
            buffer_bytes: None,
            iterations: None,
            samples: None,
            chase_length: defaults::CHASE_LENGTH,
        }
    }
}

/// The smallest buffer a chase walks: two cache lines, bytes.
pub const MIN_BUFFER_BYTES: u64 = 128;

/// The `chase` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "buffer",
        ty: ValueType::Memory,
        default: "half of the cache level the probe CPU shares with the neighbours",
        help: "buffer to chase, at least two cache lines",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "iterations",
        ty: ValueType::Count(&limits::ITERATIONS),
        default: "100",
        help: "timed chases per sample; a sample's jitter is their max - min",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "samples",
        ty: ValueType::Count(&limits::SAMPLES),
        default: "200 without a duration, else as many as fit in it",
        help: "samples after which the chase ends",
        flag: KeyFlag::DERIVED,
    },
];

/// How the `chase` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: KEYS,
    shared: &[],
    default_period_ns: defaults::PERIOD_NS,
    wire_keys: &["buffer_bytes", "iterations", "samples", "chase_length"],
    defaults: |_| ProbeParams::new(ChaseParams::default()),
    check: |t, _| {
        Ok(ProbeParams::new(ChaseParams {
            buffer_bytes: t.num("buffer")?,
            iterations: t.num("iterations")?,
            samples: t.num("samples")?,
            chase_length: defaults::CHASE_LENGTH,
        }))
    },
    read: |_, m| {
        let chase_length: Option<u64> = take(m, "chase_length")?;
        Ok(ProbeParams::new(ChaseParams {
            buffer_bytes: take(m, "buffer_bytes")?,
            iterations: take(m, "iterations")?,
            samples: take(m, "samples")?,
            chase_length: chase_length.unwrap_or(defaults::CHASE_LENGTH),
        }))
    },
};

impl Params for ChaseParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Chase
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        let mut out = Vec::new();
        for (key, v) in [
            ("buffer_bytes", self.buffer_bytes),
            ("iterations", self.iterations),
            ("samples", self.samples),
            // Written only when it is not the default (a spec cannot set
            // it, so no stored spec has it).
            (
                "chase_length",
                (self.chase_length != defaults::CHASE_LENGTH).then_some(self.chase_length),
            ),
        ] {
            if let Some(v) = v {
                out.push((key, Ordered::U64(v)));
            }
        }
        out
    }

    fn validate(&self, _period_ns: u64) -> Result<(), ParamError> {
        match self.buffer_bytes {
            Some(b) if b < MIN_BUFFER_BYTES => Err(ParamError {
                key: "buffer",
                near: &[],
                message: "a chase needs at least two cache lines; give e.g. buffer = \"1MiB\""
                    .into(),
                ..ParamError::default()
            }),
            _ => Ok(()),
        }
    }

    fn samples(&self) -> Option<u64> {
        self.samples
    }
}
