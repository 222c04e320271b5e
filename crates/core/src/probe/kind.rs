//! The name of every probe kind: the one enum specs, results and the
//! database name a probe by. Its variants, its place in `ProbeKind::ALL`
//! and its descriptor's arm (in the registry, [`super`]) are a kind's
//! registration in core. Kept alone in this file, below every kind, so a
//! kind's own code names its kind without importing the registry that
//! names every kind's descriptor.

use serde::{Deserialize, Serialize};

/// Which probe: the name of a probe kind in results, specs and the
/// database (serialized as its [`name`](ProbeKind::name)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// Control-task emulation: periodic wake-up plus a scan workload.
    Cyclic,
    /// Timer wake-up latency, one thread per CPU (cyclictest's job).
    Wakeup,
    /// Cache-sensitive pointer chase, in CPU cycles ([Red Hat caterpillar]).
    Chase,
    /// Two real-time threads on one CPU handing a token back and forth.
    Ctxswitch,
    /// An event made on another CPU answered by the real-time thread.
    Response,
    /// The kernel's timerlat tracer driven through `rtla timerlat`.
    Timerlat,
    /// [Red Hat controls]'s screw-to-screw round trip over OPC UA PubSub between an
    /// I/O simulator and a controller.
    Roundtrip,
    /// [Baumgartner POWERLINK]'s cyclic real-time Ethernet master: a POWERLINK managing
    /// node polling N controlled nodes.
    Netcycle,
    /// A running task jitterlab did not start, observed through the
    /// kernel's scheduler and timer tracepoints.
    Observe,
    /// A probe compiled only for tests: how late a thread wakes from a
    /// sleep of one period.
    #[cfg(feature = "test-probe")]
    Sleep,
}
