//! Where an observer thread runs: the CPU rule for a kind whose
//! registration places its measuring thread as an observer of a task
//! rather than as the task (the binary's `probe::Placement::Observer`).
//!
//! The configuration of such a cell places the *task* it watches; the
//! observer runs off the probe CPUs ([`observer_cpu`]: a housekeeping CPU,
//! else a neighbour CPU, else — one CPU online — it shares a probe CPU),
//! so it never competes with that task. The runner's lifecycle applies the
//! rule without knowing the kind.

/// The observer's CPU: the first online CPU that is neither a probe nor a
/// neighbour CPU (housekeeping), else the first that is not a probe CPU,
/// else the first probe CPU (a machine with no other CPU: it shares).
/// The flag is true when it shares a probe CPU. `None`: no CPU online.
pub fn observer_cpu(
    online: &[usize],
    probe: &[usize],
    neighbours: &[usize],
) -> Option<(usize, bool)> {
    let off = |c: &&usize| !probe.contains(c);
    online
        .iter()
        .filter(off)
        .find(|c| !neighbours.contains(c))
        .or_else(|| online.iter().find(off))
        .map(|&c| (c, false))
        .or_else(|| probe.first().or(online.first()).map(|&c| (c, true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observer_goes_to_housekeeping_then_a_neighbour_cpu_and_shares_only_when_alone() {
        // Housekeeping: neither probe nor neighbour.
        assert_eq!(observer_cpu(&[0, 1, 2, 3], &[2], &[0, 1]), Some((3, false)));
        // None: the first neighbour CPU that is no probe CPU.
        assert_eq!(observer_cpu(&[0, 1], &[1], &[0]), Some((0, false)));
        assert_eq!(observer_cpu(&[0, 1, 2], &[0], &[0, 1, 2]), Some((1, false)));
        // Every CPU a probe CPU: it shares the first.
        assert_eq!(observer_cpu(&[0], &[0], &[]), Some((0, true)));
        assert_eq!(observer_cpu(&[0, 1], &[1, 0], &[]), Some((1, true)));
        assert_eq!(observer_cpu(&[], &[], &[]), None);
    }
}
