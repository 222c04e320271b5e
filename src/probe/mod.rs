//! The measured real-time workloads.
//!
//! Both probes of this release are periodic tasks and share one thread body
//! ([`periodic`]): `cyclic` adds the scan workload ([`scan`]) that emulates a
//! PLC task; `wakeup` runs the bare loop on one thread per CPU, as cyclictest
//! does. Each thread pushes every cycle into its own preallocated
//! `Recorder` (the sink of `jitterlab_core::sink`) and nothing else.

pub mod ctxswitch;
pub mod periodic;
pub mod response;
pub mod scan;
