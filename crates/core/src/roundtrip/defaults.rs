//! The `roundtrip` probe's defaults: the figures of [Red Hat controls]'s
//! round-trip budget its flags and spec keys start from, kept in the
//! kind's folder with the parameters they fill.

/// The `roundtrip` probe's controller period (`--controller-period`, its
/// `period`): 5 ms, [Red Hat controls]'s "Controller periodic rate".
pub const CONTROLLER_PERIOD_NS: u64 = 5_000_000;

/// The `roundtrip` probe's controller scan (`--scan`): 500 µs, [Red Hat controls]'s
/// "Controller application scan time".
pub const ROUNDTRIP_SCAN_NS: u64 = 500_000;

/// The I/O simulator's publish and apply period (`--io-period`): 500 µs,
/// [Red Hat controls]'s "OPC UA pub/sub conversion".
pub const IO_PERIOD_NS: u64 = 500_000;

/// The network allowance of the round-trip budget, each way
/// (`--network-budget`): 100 µs, [Red Hat controls]'s "Network latency".
pub const NETWORK_BUDGET_NS: u64 = 100_000;
