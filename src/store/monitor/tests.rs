//! Tests of a monitor's series: rollups merged across segments, the place
//! of the maximum, retention by wall time.

use super::*;
