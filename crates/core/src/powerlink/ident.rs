//! What a CN announces in its IdentResponse, in words: the feature flags by
//! their DS 301 names and the identity fields, so that the managing node can
//! print each CN it found and name what one lacks (PRes chaining for
//! `--chaining`).

use super::frame::IdentResponse;

/// NMT_FeatureFlags_U32 bit 2: the CN speaks SDO over ASnd.
pub const FEATURE_SDO_ASND: u32 = 1 << 2;
/// NMT_FeatureFlags_U32 bit 18: the CN takes part in PollResponse Chaining.
pub const FEATURE_PRES_CHAINING: u32 = 1 << 18;

/// The names of the feature flags, bit 0 first (EPSG DS 301,
/// NMT_FeatureFlags_U32).
pub const FEATURE_NAMES: [&str; 21] = [
    "isochronous",
    "SDO by UDP/IP",
    "SDO by ASnd",
    "SDO by PDO",
    "NMT info services",
    "extended NMT state commands",
    "dynamic PDO mapping",
    "NMT service by UDP/IP",
    "configuration manager",
    "multiplexed access",
    "node id set up by software",
    "MN basic Ethernet mode",
    "routing type 1",
    "routing type 2",
    "SDO read/write all by index",
    "SDO read/write multiple parameters by index",
    "multiple ASnd",
    "ring redundancy",
    "PRes chaining",
    "multiple PReq/PRes",
    "dynamic node allocation",
];

/// The names of the flags set in `flags`, bit 0 first; a set bit with no
/// name as `bit N`.
pub fn feature_names(flags: u32) -> Vec<String> {
    (0..32)
        .filter(|b| flags & (1 << b) != 0)
        .map(|b| match FEATURE_NAMES.get(b) {
            Some(name) => (*name).to_string(),
            None => format!("bit {b}"),
        })
        .collect()
}

/// One line saying what CN `node` announced.
pub fn describe(node: u8, i: &IdentResponse) -> String {
    format!(
        "CN {node}: features {:#010x} ({}), MTU {} bytes, PReq {} bytes in, PRes {} bytes out, response time {} ns, device type {:#010x}, vendor {:#010x}, product {:#010x}, revision {:#010x}, serial {:#010x}, configuration date {:#010x} time {:#010x}",
        i.feature_flags,
        feature_names(i.feature_flags).join(", "),
        i.mtu,
        i.poll_in_size,
        i.poll_out_size,
        i.response_time,
        i.device_type,
        i.vendor_id,
        i.product_code,
        i.revision,
        i.serial,
        i.verify_conf_date,
        i.verify_conf_time,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::powerlink::{decode, ASndService, Frame};
    use pcap_file::pcap::PcapReader;

    const REF_MN_CN: &[u8] = include_bytes!("../../../../tests/fixtures/powerlink/ref_mn_cn.pcap");

    /// The reference CN 1's first IdentResponse (frame 868), in words.
    #[test]
    fn describes_the_reference_cn() {
        let mut reader = PcapReader::new(REF_MN_CN).unwrap();
        let mut no = 0;
        let frame = loop {
            let p = reader.next_packet().unwrap().unwrap();
            no += 1;
            if no == 868 {
                break p.data.into_owned();
            }
        };
        let r = decode(&frame).unwrap();
        let Frame::ASnd(a) = r.frame else {
            panic!("frame 868 is no ASnd")
        };
        let ASndService::IdentResponse(i) = a.service else {
            panic!("frame 868 is no IdentResponse")
        };
        assert_eq!(
            describe(a.src, &i),
            "CN 1: features 0x00010265 (isochronous, SDO by ASnd, extended NMT state commands, dynamic PDO mapping, multiplexed access, multiple ASnd), MTU 1500 bytes, PReq 36 bytes in, PRes 36 bytes out, response time 50000 ns, device type 0x000f0191, vendor 0x00000000, product 0x00000000, revision 0x00020007, serial 0x00000000, configuration date 0x00000000 time 0x00000000"
        );
        assert_eq!(i.feature_flags & FEATURE_PRES_CHAINING, 0);
    }

    #[test]
    fn unnamed_bits_are_numbered() {
        assert_eq!(
            feature_names(FEATURE_PRES_CHAINING | 1 << 31),
            vec!["PRes chaining".to_string(), "bit 31".to_string()]
        );
        assert!(feature_names(0).is_empty());
    }
}
