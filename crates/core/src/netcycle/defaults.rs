//! The `netcycle` probe's defaults: [Baumgartner POWERLINK]'s smallest
//! network and reference cycle, kept in the kind's folder with the
//! parameters they fill.

/// The `netcycle` probe's POWERLINK cycle time (its `period`): 500 µs,
/// [Baumgartner POWERLINK]'s "Reference Cycle Time" of Tables 4–5.
pub const NETCYCLE_PERIOD_NS: u64 = 500_000;

/// Controlled nodes the `netcycle` managing node polls (`--cns`): 3, the
/// smallest network of [Baumgartner POWERLINK] Tables 1–3.
pub const NETCYCLE_CNS: u8 = 3;

/// How long the managing node waits for a PRes before it counts it missed
/// and polls the next node (`--response-timeout`): 100 µs. A hardware CN
/// answers within microseconds; a user-space CN emulator behind a veth
/// pair on a loaded machine needs tens of them, so this default leaves
/// room for the emulator while staying well inside a 500 µs cycle. Whether
/// a cycle time is "held" depends on it, so every report prints it.
pub const PRES_TIMEOUT_NS: u64 = 100_000;

/// Output bytes per CN in the PReq (or in the PResMN): 1, [Baumgartner POWERLINK] Table 1.
pub const NETCYCLE_OUT_BYTES: u16 = 1;

/// Input bytes per CN in its PRes: 6, [Baumgartner POWERLINK] Table 1.
pub const NETCYCLE_IN_BYTES: u16 = 6;
