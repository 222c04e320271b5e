//! What every allocation test of the hot paths shares: each test file is
//! its own binary with the counting allocator as its global allocator (the
//! counts are process-wide, so a file holds one test), and this checks
//! the region it measured allocated nothing at all.

use stats_alloc::Stats;

/// Asserts `stats` (a region's change) holds no allocation, reallocation
/// or allocated byte, printing every count when it does.
pub fn assert_nothing_allocated(stats: Stats) {
    assert_eq!(
        (
            stats.allocations,
            stats.reallocations,
            stats.bytes_allocated
        ),
        (0, 0, 0),
        "{stats:#?}"
    );
}
