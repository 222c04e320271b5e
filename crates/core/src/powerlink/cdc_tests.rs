//! The concise DCF: a CN's DCF built from the writes the reference MN sent
//! node 1 in the capture, an MN file holding it, every error with its
//! message, and property tests over random bytes.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::powerlink::capture_tests::cfm_writes;

/// The DCF writes of node 1 in `ref_mn_cn.pcap`: frames 1155 to 2395.
fn node1_writes() -> Vec<(IndexAddress, Vec<u8>)> {
    cfm_writes(1)
        .into_iter()
        .filter(|(n, _, _)| (1155..=2395).contains(n))
        .map(|(_, a, v)| (a, v))
        .collect()
}

fn entries(w: &[(IndexAddress, Vec<u8>)]) -> Vec<Entry<'_>> {
    w.iter()
        .map(|(addr, data)| Entry { addr: *addr, data })
        .collect()
}

fn to_bytes(e: &[Entry<'_>]) -> Vec<u8> {
    let mut out = vec![0u8; written_len(e)];
    assert_eq!(write(e, &mut out), Ok(out.len()));
    out
}

#[test]
fn the_dcf_of_node_1_is_150_bytes_with_14_entries() {
    let w = node1_writes();
    assert_eq!(w.len(), 14);
    let dcf = to_bytes(&entries(&w));
    assert_eq!(dcf.len(), 150);
    assert_eq!(dcf[..4], [14, 0, 0, 0]);
    // The first entry: 0x1600/0, one byte, 0.
    assert_eq!(dcf[4..12], [0x00, 0x16, 0x00, 1, 0, 0, 0, 0]);
    let cdc = Cdc::parse(&dcf).unwrap();
    assert_eq!(cdc.len(), 14);
    assert_eq!(cdc.entries().collect::<Vec<_>>(), entries(&w));
    // 0x1600/0 is written twice; the last write counts.
    assert_eq!(cdc.get(IndexAddress::new(0x1600, 0)), Some(&[1u8][..]));
    assert_eq!(cdc.get(IndexAddress::new(0x1010, 1)), None);
}

#[test]
fn an_mn_file_gives_back_each_cns_writes_and_settings() {
    let w = node1_writes();
    let dcf = to_bytes(&entries(&w));
    let a = IndexAddress::new;
    let mapping = 0x0008_0000_0001_A040u64.to_le_bytes();
    let rx_mapping = 0x0008_0000_0001_A4C0u64.to_le_bytes();
    let mn = [
        Entry {
            addr: a(0x1F81, 1),
            data: &0x07u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1F81, 32),
            data: &0x4009u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1F81, 33),
            data: &0x06u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1006, 0),
            data: &50_000u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1C09, 1),
            data: &40u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1F26, 1),
            data: &0x3124u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1F27, 1),
            data: &0x0373_5955u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1F8A, 2),
            data: &500_000u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1F92, 1),
            data: &200_000u32.to_le_bytes(),
        },
        Entry {
            addr: a(0x1800, 1),
            data: &[1],
        },
        Entry {
            addr: a(0x1A00, 1),
            data: &mapping,
        },
        Entry {
            addr: a(0x1A00, 0),
            data: &[1],
        },
        Entry {
            addr: a(0x1400, 1),
            data: &[1],
        },
        Entry {
            addr: a(0x1600, 1),
            data: &rx_mapping,
        },
        Entry {
            addr: a(0x1600, 0),
            data: &[1],
        },
        Entry {
            addr: a(0x1F22, 1),
            data: &dcf,
        },
        Entry {
            addr: a(0x1F81, 1),
            data: &0x8000_0007u32.to_le_bytes(),
        },
    ];
    let file = to_bytes(&mn);
    let net = NetworkConfig::from_cdc(&file).unwrap();
    assert_eq!(net.cycle_len_us, Some(50_000));
    assert_eq!(net.async_slot_timeout_ns, Some(500_000));
    // Node 33 lacks bit 0: not a node.
    assert_eq!(net.cns.iter().map(|c| c.node).collect::<Vec<_>>(), [1, 32]);
    let cn1 = net.cn(1).unwrap();
    assert_eq!(
        *cn1,
        CnConfig {
            node: 1,
            assignment: 0x8000_0007,
            dcf: Some(Cdc::parse(&dcf).unwrap()),
            conf_date: 0x3124,
            conf_time: 0x0373_5955,
            device_type: None,
            pres_timeout_ns: Some(200_000),
            loss_pres_threshold: Some(40),
            preq_payload: Some(1),
            pres_payload: Some(1),
        }
    );
    assert!(!cn1.mandatory() && !cn1.chaining() && !cn1.async_only());
    let got: Vec<_> = cn1
        .dcf
        .unwrap()
        .entries()
        .map(|e| (e.addr, e.data.to_vec()))
        .collect();
    assert_eq!(got, w);
    let cn32 = net.cn(32).unwrap();
    assert!(cn32.mandatory() && cn32.chaining());
    assert_eq!(cn32.dcf, None);
    assert_eq!((cn32.conf_date, cn32.conf_time), (0, 0));
    assert_eq!((cn32.preq_payload, cn32.pres_payload), (None, None));
}

#[test]
fn errors_name_the_offset_and_what_to_fix() {
    let dcf = to_bytes(&entries(&node1_writes()));
    assert_eq!(
        Cdc::parse(&dcf[..3]).unwrap_err().to_string(),
        "concise DCF cut short at byte 0: the 4-byte entry count is missing (the file holds 3 bytes); \
         export it again from openCONFIGURATOR"
    );
    assert_eq!(
        Cdc::parse(&dcf[..8]),
        Err(CdcError::Truncated {
            offset: 4,
            what: "an entry's 7-byte header (index, subindex, size) is missing",
            len: 8
        })
    );
    assert_eq!(
        Cdc::parse(&dcf[..11]),
        Err(CdcError::Truncated {
            offset: 11,
            what: "an entry's data is shorter than its size field says",
            len: 11
        })
    );
    let mut long = dcf.clone();
    long.extend_from_slice(&[0, 0]);
    assert_eq!(
        Cdc::parse(&long).unwrap_err().to_string(),
        "concise DCF has 2 bytes after its 14 entries, from byte 150: the entry count in its \
         first 4 bytes is wrong, or the file is not a concise DCF"
    );
    // A huge size field is cut short, not a panic.
    let mut huge = dcf.clone();
    huge[7..11].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Cdc::parse(&huge),
        Err(CdcError::Truncated { offset: 11, .. })
    ));
    // Every cut of the file is an error at or before the cut.
    for len in 0..dcf.len() {
        match Cdc::parse(&dcf[..len]) {
            Err(CdcError::Truncated { offset, .. }) => assert!(offset <= len),
            other => panic!("cut at {len}: {other:?}"),
        }
    }

    let bad_dcf = Entry {
        addr: IndexAddress::new(0x1F22, 1),
        data: &dcf[..100],
    };
    let exists = Entry {
        addr: IndexAddress::new(0x1F81, 1),
        data: &[7, 0, 0, 0],
    };
    let file = to_bytes(&[exists, bad_dcf]);
    assert_eq!(
        NetworkConfig::from_cdc(&file).unwrap_err().to_string(),
        "the concise DCF of CN 1 (0x1F22/1) is not valid: concise DCF cut short at byte 95: \
         an entry's 7-byte header (index, subindex, size) is missing (the file holds 100 bytes); \
         export it again from openCONFIGURATOR"
    );
    let short = Entry {
        addr: IndexAddress::new(0x1006, 0),
        data: &[0x50, 0xc3],
    };
    assert_eq!(
        NetworkConfig::from_cdc(&to_bytes(&[short]))
            .unwrap_err()
            .to_string(),
        "0x1006/0 holds 2 bytes; the cycle length is a 4-byte unsigned integer: fix that entry"
    );
    let empty = to_bytes(&[]);
    assert_eq!(empty, [0, 0, 0, 0]);
    let net = NetworkConfig::from_cdc(&empty).unwrap();
    assert_eq!((net.cycle_len_us, net.cns.len()), (None, 0));
    let mut buf = [0u8; 149];
    assert_eq!(
        write(&entries(&node1_writes()), &mut buf),
        Err(crate::powerlink::EncodeError::BufferTooSmall {
            need: 150,
            have: 149
        })
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..200)) {
        if let Ok(c) = Cdc::parse(&bytes) {
            prop_assert_eq!(c.entries().count(), c.len());
            let e: Vec<_> = c.entries().collect();
            prop_assert_eq!(to_bytes(&e), bytes.clone());
        }
        let _ = NetworkConfig::from_cdc(&bytes);
    }

    #[test]
    fn written_files_parse_back(raw in vec((any::<u16>(), any::<u8>(), vec(any::<u8>(), 0..12)), 0..20)) {
        let e: Vec<_> = raw
            .iter()
            .map(|(i, s, d)| Entry { addr: IndexAddress::new(*i, *s), data: d })
            .collect();
        let b = to_bytes(&e);
        let c = Cdc::parse(&b).unwrap();
        prop_assert_eq!(c.entries().collect::<Vec<_>>(), e);
        let _ = NetworkConfig::from_cdc(&b);
    }
}
