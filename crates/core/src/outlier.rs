//! The worst samples of a run, with where they happened.
//!
//! A fixed array of the N largest magnitudes seen so far (N = 20 by default),
//! with the cycle number and the time since the first release. The common path
//! is one comparison against the smallest value kept; only a new outlier pays
//! for an O(N) scan, so this is safe in the hot loop and allocates nothing
//! after construction.

use serde::{Deserialize, Serialize};

/// One kept outlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outlier {
    /// The sample's value, ns (signed for jitter).
    pub value: i64,
    /// Measured-cycle number (0-based).
    pub cycle: u64,
    /// Start of the cycle relative to the run's first release, ns.
    pub since_start_ns: u64,
}

/// Keeps the `capacity` samples of largest magnitude.
#[derive(Debug, Clone)]
pub struct OutlierKeeper {
    kept: Vec<Outlier>,
    capacity: usize,
    floor: u64, // smallest magnitude kept once full
    floor_at: usize,
}

impl OutlierKeeper {
    /// Preallocates room for `capacity` outliers.
    pub fn new(capacity: usize) -> OutlierKeeper {
        OutlierKeeper {
            kept: Vec::with_capacity(capacity),
            capacity,
            floor: 0,
            floor_at: 0,
        }
    }

    /// Offers one sample.
    #[inline(always)]
    pub fn offer(&mut self, value: i64, cycle: u64, since_start_ns: u64) {
        let mag = value.unsigned_abs();
        if self.kept.len() == self.capacity {
            if mag <= self.floor || self.capacity == 0 {
                return;
            }
            self.kept[self.floor_at] = Outlier {
                value,
                cycle,
                since_start_ns,
            };
        } else {
            self.kept.push(Outlier {
                value,
                cycle,
                since_start_ns,
            });
            if self.kept.len() < self.capacity {
                return;
            }
        }
        self.refloor();
    }

    #[cold]
    fn refloor(&mut self) {
        let (i, o) = self
            .kept
            .iter()
            .enumerate()
            .min_by_key(|(_, o)| o.value.unsigned_abs())
            .expect("full keeper is not empty");
        self.floor = o.value.unsigned_abs();
        self.floor_at = i;
    }

    /// The kept outliers, largest magnitude first (ties: earliest first).
    pub fn sorted(&self) -> Vec<Outlier> {
        let mut v = self.kept.clone();
        v.sort_by(|a, b| {
            b.value
                .unsigned_abs()
                .cmp(&a.value.unsigned_abs())
                .then(a.cycle.cmp(&b.cycle))
        });
        v
    }

    /// Merges another keeper's outliers (to combine threads).
    pub fn merge(&mut self, other: &OutlierKeeper) {
        for o in &other.kept {
            self.offer(o.value, o.cycle, o.since_start_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_largest_magnitudes_with_their_cycles() {
        let mut k = OutlierKeeper::new(3);
        for (i, v) in [5, -50, 7, 40, 1, -60, 3, 45].into_iter().enumerate() {
            k.offer(v, i as u64, i as u64 * 1000);
        }
        let s = k.sorted();
        assert_eq!(
            s.iter().map(|o| (o.value, o.cycle)).collect::<Vec<_>>(),
            vec![(-60, 5), (-50, 1), (45, 7)]
        );
        assert_eq!(s[2].since_start_ns, 7000);
    }

    #[test]
    fn fewer_samples_than_capacity_are_all_kept() {
        let mut k = OutlierKeeper::new(20);
        k.offer(3, 0, 0);
        k.offer(9, 1, 10);
        assert_eq!(k.sorted().len(), 2);
        assert_eq!(k.sorted()[0].value, 9);
    }
}
