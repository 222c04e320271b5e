//! The measured real-time workloads.
//!
//! Both probes of this release are periodic tasks and share one thread body
//! ([`periodic`]): `cyclic` adds the scan workload ([`scan`]) that emulates a
//! PLC task; `wakeup` runs the bare loop on one thread per CPU, as cyclictest
//! does. Each thread pushes every cycle into its own preallocated
//! `Recorder` (the sink of `jitterlab_core::sink`) and nothing else.
//!
//! `chase` ([`chase`]) is an event probe: a pointer chase over a buffer
//! sized to the cache the neighbour shares, timed in TSC cycles, pushed
//! chase by chase into an `EventSink`.

pub mod chase;
pub mod periodic;
pub mod scan;
pub mod timerlat;
