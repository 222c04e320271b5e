//! The scan workload of the cyclic probe: what a PLC task does each cycle.
//!
//! A PLC scan reads its inputs, runs its logic over its data and writes its
//! outputs. We emulate it in two parts that together are sensitive to the
//! cache the way real control logic is:
//!
//! 1. **Walk** the working set (`--working-set`): one node per 64-byte cache
//!    line, linked into a single random cycle (Sattolo's algorithm, shared
//!    with the chase probe: `jitterlab_core::chase::single_cycle`), visited
//!    in that order with a read-modify-write per line. Each step depends on
//!    the previous load, so neither out-of-order execution nor the prefetcher
//!    can hide a miss: when a neighbour evicts these lines, the walk slows.
//! 2. **Compute**: a fixed number of iterations of a dependent integer
//!    mixing chain (multiply, add, xor-shift), seeded by the walk's result.
//!
//! **Calibration** happens once per run, on the probe CPU, after the thread is
//! pinned and scheduled and before any neighbour starts. It measures one walk,
//! then picks the compute iteration count so that walk + compute take
//! `--scan` on the idle CPU, refines it against full scans, and then the count
//! stays fixed for the whole run and is stored in the result. Re-calibrating
//! under load would make every cell's execution time come out at `--scan`
//! and hide exactly the interference we measure.
//!
//! When one walk alone already takes longer than `--scan`, the compute part is
//! zero and the calibration notes why; the execution time then measures the
//! walk alone.

use std::hint::black_box;

use jitterlab_core::chase::single_cycle;
use jitterlab_core::result::Calibration;
use jitterlab_sys::monotonic_ns;

/// Size of one working-set node: one cache line.
pub const LINE: usize = 64;

/// One cache line of the working set.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Node {
    next: u32,
    value: u32,
    _pad: [u64; 7],
}

/// The scan workload with its calibrated iteration count.
pub struct Scan {
    nodes: Vec<Node>,
    iterations: u64,
    acc: u64,
}

impl Scan {
    /// Builds a working set of `bytes` (rounded down to whole cache lines;
    /// below one line means none) linked in one random cycle, and touches it.
    pub fn new(bytes: u64) -> Scan {
        let n = (bytes / LINE as u64) as usize;
        let mut nodes = vec![
            Node {
                next: 0,
                value: 0,
                _pad: [0; 7]
            };
            n
        ];
        for (i, v) in single_cycle(n, 0x6A09_E667_F3BC_C908)
            .into_iter()
            .enumerate()
        {
            nodes[i].next = v;
        }
        Scan {
            nodes,
            iterations: 0,
            acc: 1,
        }
    }

    /// Cache lines in the working set.
    #[cfg(test)]
    pub fn nodes(&self) -> u64 {
        self.nodes.len() as u64
    }

    /// One pass over the working set in its random order.
    #[inline(always)]
    fn walk(&mut self) {
        let mut i = 0usize;
        let mut acc = self.acc;
        for _ in 0..self.nodes.len() {
            let node = &mut self.nodes[i];
            node.value = node.value.wrapping_add(acc as u32);
            acc = acc.rotate_left(5) ^ node.value as u64;
            i = node.next as usize;
        }
        self.acc = acc;
    }

    #[inline(always)]
    fn compute(&mut self, iterations: u64) {
        let mut x = self.acc | 1;
        for _ in 0..iterations {
            x = x
                .wrapping_mul(0x5851_F42D_4C95_7F2D)
                .wrapping_add(0x1405_7B7E_F767_814F);
            x ^= x >> 29;
        }
        self.acc = black_box(x);
    }

    /// One scan: walk, then the calibrated compute.
    #[inline(always)]
    pub fn run(&mut self) {
        self.walk();
        let it = self.iterations;
        self.compute(it);
    }

    /// Uses a calibration made before (by [`Scan::calibrate`] on another
    /// buffer of the same size).
    pub fn use_calibration(&mut self, cal: &Calibration) {
        self.iterations = cal.iterations;
    }

    /// Calibrates the compute iterations so that one scan takes `target_ns` on
    /// the calling (idle, pinned) CPU. Takes a few milliseconds to a second.
    pub fn calibrate(&mut self, cpu: usize, target_ns: u64) -> Calibration {
        // Warm the caches and the branch predictor.
        for _ in 0..3 {
            self.walk();
        }
        let pass_ns = if self.nodes.is_empty() {
            0
        } else {
            median_of(15, || {
                let t = monotonic_ns();
                self.walk();
                monotonic_ns() - t
            })
        };
        let mut note = None;
        if target_ns == 0 {
            self.iterations = 0;
        } else if pass_ns >= target_ns {
            self.iterations = 0;
            note = Some(format!(
                "one walk over the working set takes {pass_ns} ns, not less than --scan {target_ns} ns: the scan is the walk alone; use a smaller --working-set or a longer --scan"
            ));
        } else {
            // Cost of the compute chain, from a block long enough to time well.
            const BLOCK: u64 = 20_000;
            let block_ns = median_of(11, || {
                let t = monotonic_ns();
                self.compute(BLOCK);
                monotonic_ns() - t
            })
            .max(1);
            let budget = target_ns - pass_ns;
            self.iterations = (budget as u128 * BLOCK as u128 / block_ns as u128) as u64;
            // Refine against whole scans: the walk and the chain interact.
            for _ in 0..3 {
                let measured = self.measure_scan();
                if measured == 0 {
                    break;
                }
                self.iterations = refined(self.iterations, budget, measured, pass_ns);
            }
        }
        let measured_scan_ns = self.measure_scan();
        Calibration {
            cpu,
            scan_target_ns: target_ns,
            working_set_bytes: self.nodes.len() as u64 * LINE as u64,
            nodes: self.nodes.len() as u64,
            pass_ns,
            iterations: self.iterations,
            measured_scan_ns,
            note,
        }
    }

    fn measure_scan(&mut self) -> u64 {
        median_of(21, || {
            let t = monotonic_ns();
            self.run();
            monotonic_ns() - t
        })
    }
}

/// The compute iterations that make the compute part of a scan take
/// `budget` ns, from `iterations` whose whole scan measured `measured` ns
/// with a walk of `pass_ns`. One step scales by at most 4 either way: a
/// scan measured at or below the walk's own time (the walk ran faster once
/// warm, or the VM stole the first reading) says nothing about the compute
/// part, and scaling by `budget / 1 ns` made a 100 µs scan take 225 ms.
fn refined(iterations: u64, budget: u64, measured: u64, pass_ns: u64) -> u64 {
    let compute_part = measured.saturating_sub(pass_ns).max(1);
    let scaled = iterations as u128 * budget as u128 / compute_part as u128;
    let it = iterations as u128;
    scaled.clamp(it / 4, it.saturating_mul(4).max(1)) as u64
}

fn median_of(n: usize, mut f: impl FnMut() -> u64) -> u64 {
    let mut v: Vec<u64> = (0..n).map(|_| f()).collect();
    v.sort_unstable();
    v[n / 2]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_refinement_step_scales_by_at_most_four() {
        // Measured as budgeted: unchanged.
        assert_eq!(super::refined(1000, 15_000, 100_000, 85_000), 1000);
        // Twice the budget: halved.
        assert_eq!(super::refined(1000, 15_000, 115_000, 85_000), 500);
        // A scan measured below the walk's time: at most four times more,
        // not 15 000 times.
        assert_eq!(super::refined(1000, 15_000, 80_000, 85_000), 4000);
        // Far too long: at most a quarter.
        assert_eq!(super::refined(1000, 15_000, 10_000_000, 85_000), 250);
        assert_eq!(super::refined(0, 15_000, 80_000, 85_000), 0);
    }

    use super::*;

    #[test]
    fn working_set_rounds_to_cache_lines() {
        assert_eq!(Scan::new(256 * 1024).nodes(), 4096);
        assert_eq!(Scan::new(100).nodes(), 1);
        assert_eq!(Scan::new(0).nodes(), 0);
        assert_eq!(std::mem::size_of::<Node>(), LINE);
    }

    #[test]
    fn zero_scan_calibrates_to_nothing() {
        let mut s = Scan::new(0);
        let c = s.calibrate(0, 0);
        assert_eq!((c.iterations, c.pass_ns, c.nodes), (0, 0, 0));
        assert!(c.note.is_none());
    }

    #[test]
    fn calibration_fits_whole_passes_into_the_target() {
        // Wall-clock figures depend on what else the machine runs (tests run
        // in parallel), so this checks the calibration's own arithmetic: a
        // 64 KiB walk is far shorter than 2 ms, so the target is met with at
        // least one whole pass and no note; the measured scan is a real time.
        let mut s = Scan::new(64 * 1024);
        let c = s.calibrate(0, 2_000_000);
        assert!(c.iterations > 0);
        assert!(c.pass_ns > 0 && c.pass_ns < 2_000_000);
        assert!(c.measured_scan_ns > 0);
        assert_eq!((c.nodes, c.working_set_bytes), (1024, 64 * 1024));
    }

    #[test]
    fn walk_longer_than_target_is_noted() {
        let mut s = Scan::new(4 * 1024 * 1024);
        let c = s.calibrate(0, 1_000);
        assert_eq!(c.iterations, 0);
        assert!(c
            .note
            .unwrap()
            .starts_with("one walk over the working set takes"));
    }
}
