//! The cache allocation finding: what the CPU and resctrl offer for
//! partitioning the cache (CAT/RDT), which cache-partitioned configurations
//! need.

use std::path::Path;

use super::finding::{Finding, Severity};
use crate::system::host::read_opt;
use crate::system::settings::resctrl;

const CPUINFO: &str = "proc/cpuinfo";
const RESCTRL_INFO: &str = "sys/fs/resctrl/info";

/// What the machine offers for cache allocation
/// ([`crate::system::settings::resctrl::capabilities`]): the CPU flags,
/// and once resctrl is mounted its levels, ways, CLOSIDs, CDP and MBA.
pub(super) fn cache_allocation(root: &Path) -> Finding {
    const ID: &str = "cache-allocation";
    if read_opt(root, CPUINFO).is_none() && !root.join(RESCTRL_INFO).is_dir() {
        return Finding::new(
            ID,
            Severity::Info,
            format!("unknown cache allocation: cannot read /{CPUINFO}"),
            "",
        );
    }
    let caps = match resctrl::capabilities(root) {
        Ok(Some(caps)) => caps,
        Ok(None) => {
            return Finding::new(
                ID,
                Severity::Info,
                "no cache allocation (no CAT/RDT in this CPU, or hidden by the hypervisor): cache-partitioned configurations cannot run here",
                "",
            )
        }
        Err(e) => {
            return Finding::new(
                ID,
                Severity::Info,
                format!("unknown cache allocation: {e:#}"),
                "",
            )
        }
    };
    let flags = if caps.flags.is_empty() {
        "no CPU flag".to_string()
    } else {
        caps.flags.join(" ")
    };
    if !caps.mounted {
        Finding::new(
            ID,
            Severity::Info,
            format!("cache allocation ({flags}), but resctrl is not mounted"),
            "mount -t resctrl resctrl /sys/fs/resctrl",
        )
    } else if caps.resources.is_empty() {
        Finding::new(
            ID,
            Severity::Info,
            format!("cache allocation ({flags}), but resctrl at /sys/fs/resctrl offers no allocation resource (monitoring only)"),
            "",
        )
    } else {
        Finding::ok(
            ID,
            format!(
                "cache allocation ({flags}), resctrl mounted at /sys/fs/resctrl: {}",
                caps.summary()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::check::tests::write;
    use crate::testutil::{copy_fixture, fixture};
    use std::fs;

    #[test]
    fn cache_allocation_without_resctrl_mounted() {
        let dir = copy_fixture("sysroot-rt");
        fs::remove_dir_all(dir.path().join("sys/fs/resctrl")).unwrap();
        assert_eq!(
            cache_allocation(dir.path()),
            Finding::new(
                "cache-allocation",
                Severity::Info,
                "cache allocation (cat_l3 cdp_l3 rdt_a), but resctrl is not mounted",
                "mount -t resctrl resctrl /sys/fs/resctrl",
            )
        );
    }

    #[test]
    fn cache_allocation_levels_ways_closids_cdp_and_mba() {
        let summary = |name: &str| cache_allocation(&fixture(name));
        assert_eq!(
            summary("resctrl-l3-8ways"),
            Finding::ok(
                "cache-allocation",
                "cache allocation (cat_l3 cdp_l3 rdt_a), resctrl mounted at /sys/fs/resctrl: L3 8 ways (cbm_mask ff) on id 0; 4 CLOSIDs; CDP off (cdp_l3: mount with -o cdp for it); no MBA"
            )
        );
        assert_eq!(
            summary("resctrl-l3-12ways-cdp").summary,
            "cache allocation (cat_l3 cdp_l3 mba rdt_a), resctrl mounted at /sys/fs/resctrl: L3CODE 12 ways (cbm_mask fff) on ids 0-1; L3DATA 12 ways (cbm_mask fff) on ids 0-1; 8 CLOSIDs; CDP on; MBA from 10% in steps of 10%"
        );
        assert_eq!(
            summary("resctrl-l2-20bit").summary,
            "cache allocation (cat_l2 cdp_l2 rdt_a), resctrl mounted at /sys/fs/resctrl: L2 20 ways (cbm_mask fffff) on ids 0-3; 8 CLOSIDs; CDP off (cdp_l2: mount with -o cdp for it); no MBA"
        );
        assert_eq!(
            summary("resctrl-l3-mb-sparse").summary,
            "cache allocation (cat_l3 cdp_l3 mba rdt_a), resctrl mounted at /sys/fs/resctrl: L3 15 ways (cbm_mask 7fff) on ids 0-1; 8 CLOSIDs; CDP off (cdp_l3: mount with -o cdp for it); MBA from 10% in steps of 10%"
        );
        // A malformed info file is named.
        let dir = copy_fixture("resctrl-l3-8ways");
        write(dir.path(), "sys/fs/resctrl/info/L3/num_closids", "four\n");
        assert_eq!(
            cache_allocation(dir.path()),
            Finding::new(
                "cache-allocation",
                Severity::Info,
                format!(
                    "unknown cache allocation: {}/sys/fs/resctrl/info/L3/num_closids reads \"four\", not a number",
                    dir.path().display()
                ),
                "",
            )
        );
        // Mounted, but only monitoring.
        fs::remove_dir_all(dir.path().join("sys/fs/resctrl/info/L3")).unwrap();
        assert_eq!(
            cache_allocation(dir.path()).summary,
            "cache allocation (cat_l3 cdp_l3 rdt_a), but resctrl at /sys/fs/resctrl offers no allocation resource (monitoring only)"
        );
    }
}
