//! The measured real-time workloads.
//!
//! Two kinds of probe:
//!
//! * **Periodic** — `cyclic` and `wakeup` share one thread body
//!   ([`periodic`]): `cyclic` adds the scan workload ([`scan`]) that emulates
//!   a PLC task; `wakeup` runs the bare loop on one thread per CPU, as
//!   cyclictest does. Each thread pushes every cycle into its own
//!   preallocated `Recorder` (the sink of `jitterlab_core::sink`).
//! * **Event** — each sample is one event rather than one release:
//!   [`chase`] (a pointer chase over a buffer sized to the cache the
//!   neighbour shares, timed in TSC cycles), [`ctxswitch`] (a token handed
//!   between two real-time threads on one CPU) and [`response`] (an event
//!   made on another CPU, answered by the real-time thread). They push
//!   `EventSample`s into the `EventRecorder` of `runner::event`, which gives
//!   them the same statistics, windows and store as the periodic probes.
//!
//! `ctxswitch` and `response` run a helper thread beside the calling one
//! and share its set-up, their argument checks and their pacing
//! ([`helper_thread`]) and their eventfd token calls ([`token`]).
//!
//! [`timerlat`] is not ours: it drives the kernel's timerlat tracer through
//! `rtla`, for the interrupt latency no user-space probe can see.

pub mod chase;
pub mod ctxswitch;
pub mod helper_thread;
pub mod periodic;
pub mod response;
pub mod scan;
pub mod timerlat;
pub mod token;
