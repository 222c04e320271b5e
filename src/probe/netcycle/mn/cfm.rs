//! The managing node's configuration manager: what it writes to each CN
//! over SDO before it lets it go Operational, in the order the reference
//! MN's configuration manager (openPOWERLINK's CFM) writes it.
//!
//! A [`CnPlan`] says, per CN, the objects of its configuration (its concise
//! DCF: from `--cdc`, or by default the run's own PDO mapping), the
//! configuration date and time that mark it as stored, the MN's cycle
//! length and an optional expected device type. [`CnPlan::steps`] turns it,
//! given the CN's IdentResponse, into the writes:
//!
//! - the CN reports the expected date and time (it stored this
//!   configuration): only 0x1006, the cycle length;
//! - otherwise: 0x1011/1 "load" (restore defaults; an abort is fine, the
//!   download follows at once), every object in order, 0x1010/1 "save"
//!   (its result ignored), then 0x1006 again — the restore and the save
//!   only when a date or time is configured, as the reference does.
//!
//! Any other abort ends that CN's bring-up with an error naming the CN,
//! the object and the abort text ([`refusal`]).
//!
//! The default configuration is the contract with the CN emulator: the
//! run's `--in-bytes N` as 0x1A00/k = 0x6000/k (8 bits at bit offset
//! 8(k−1)), k = 1..=N, and `--out-bytes M` as 0x1600/k = 0x6200/k, with the
//! cycle, loss thresholds of 80 (ten losses in a row, as the reference's
//! 3-CN project), a loss tolerance of one cycle and payload limits M and N.
//! Its date and time come from a hash of those values, so a CN that stored
//! it is not configured again.

use jitterlab_core::powerlink::cdc::NetworkConfig;
use jitterlab_core::powerlink::od::PAYLOAD_LIMIT_MIN;
use jitterlab_core::powerlink::sdo::{AbortCode, IndexAddress};
use jitterlab_core::powerlink::sdo_client::Transfer;
use jitterlab_core::powerlink::IdentResponse;
use sha2::{Digest, Sha256};

/// 0x1011/1 "load": restore the default parameters.
pub const RESTORE: IndexAddress = IndexAddress::new(0x1011, 1);
/// 0x1010/1 "save": store the parameters.
pub const STORE: IndexAddress = IndexAddress::new(0x1010, 1);
/// 0x1006: NMT_CycleLen_U32, µs.
pub const CYCLE_LEN: IndexAddress = IndexAddress::new(0x1006, 0);
/// The signature of 0x1011/1 ("load", little-endian).
const LOAD: [u8; 4] = *b"load";
/// The signature of 0x1010/1 ("save", little-endian).
const SAVE: [u8; 4] = *b"save";
/// Loss-of-SoC and loss-of-PReq thresholds written by default.
pub const LOSS_THRESHOLD: u32 = 80;

/// One write of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The write.
    pub transfer: Transfer,
    /// An abort of it does not end the CN's bring-up.
    pub abort_ok: bool,
}

/// What the MN writes to one CN; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnPlan {
    /// The CN's node id.
    pub node: u8,
    /// Its configuration, object by object in order.
    pub objects: Vec<(IndexAddress, Vec<u8>)>,
    /// The configuration date (0x1F26/n; 0x1020/1 on the CN).
    pub conf_date: u32,
    /// The configuration time (0x1F27/n; 0x1020/2 on the CN).
    pub conf_time: u32,
    /// The MN's cycle length, µs.
    pub cycle_us: u32,
    /// The device type it must report (0x1F84/n), when checked.
    pub device_type: Option<u32>,
    /// The run's `--in-bytes` / `--out-bytes`, for the hint of a refused
    /// default mapping (`None` with `--cdc`).
    pub bytes: Option<(u16, u16)>,
}

impl CnPlan {
    /// The default configuration of CN `node` for a cycle of `cycle_ns`,
    /// `in_bytes` PRes and `out_bytes` PReq payload bytes.
    pub fn default_for(node: u8, cycle_ns: u64, in_bytes: u16, out_bytes: u16) -> CnPlan {
        let cycle_us = u32::try_from(cycle_ns / 1_000).unwrap_or(u32::MAX);
        let tolerance_ns = u32::try_from(cycle_ns).unwrap_or(u32::MAX);
        let a = IndexAddress::new;
        let u8v = |v: u8| vec![v];
        let u16v = |v: u16| v.to_le_bytes().to_vec();
        let u32v = |v: u32| v.to_le_bytes().to_vec();
        // A mapping entry: index, subindex, reserved, bit offset, bits.
        let map = |index: u16, k: u16| {
            let mut v = index.to_le_bytes().to_vec();
            v.extend([k as u8, 0]);
            v.extend((8 * (k - 1)).to_le_bytes());
            v.extend(8u16.to_le_bytes());
            v
        };
        let hash = digest(&[
            &cycle_us.to_le_bytes(),
            &in_bytes.to_le_bytes(),
            &out_bytes.to_le_bytes(),
            &LOSS_THRESHOLD.to_le_bytes(),
        ]);
        // A date of 0 and a time of 0 would mean "not configured".
        let (conf_date, conf_time) = ((hash >> 32) as u32 | 1, hash as u32);
        let mut objects = vec![
            (a(0x1600, 0), u8v(0)),
            (a(0x1A00, 0), u8v(0)),
            (CYCLE_LEN, u32v(cycle_us)),
            (a(0x1020, 1), u32v(conf_date)),
            (a(0x1020, 2), u32v(conf_time)),
            (a(0x1C0B, 3), u32v(LOSS_THRESHOLD)),
            (a(0x1C0D, 3), u32v(LOSS_THRESHOLD)),
            (a(0x1C14, 0), u32v(tolerance_ns)),
            // The payload limits: a CN refuses less than the 36 PDO bytes
            // of a minimum frame (the reference CN aborts 0x06090032).
            (a(0x1F98, 4), u16v(out_bytes.max(PAYLOAD_LIMIT_MIN as u16))),
            (a(0x1F98, 5), u16v(in_bytes.max(PAYLOAD_LIMIT_MIN as u16))),
        ];
        for k in 1..=out_bytes.min(254) {
            objects.push((a(0x1600, k as u8), map(0x6200, k)));
        }
        for k in 1..=in_bytes.min(254) {
            objects.push((a(0x1A00, k as u8), map(0x6000, k)));
        }
        objects.push((a(0x1600, 0), u8v(out_bytes.min(254) as u8)));
        objects.push((a(0x1A00, 0), u8v(in_bytes.min(254) as u8)));
        CnPlan {
            node,
            objects,
            conf_date,
            conf_time,
            cycle_us,
            device_type: None,
            bytes: Some((in_bytes, out_bytes)),
        }
    }

    /// The plans of every CN a concise DCF configures, with the MN's cycle
    /// `cycle_ns`.
    pub fn from_cdc(net: &NetworkConfig<'_>, cycle_ns: u64) -> Vec<CnPlan> {
        let cycle_us = u32::try_from(cycle_ns / 1_000).unwrap_or(u32::MAX);
        net.cns
            .iter()
            .map(|c| CnPlan {
                node: c.node,
                objects: c
                    .dcf
                    .as_ref()
                    .map(|d| d.entries().map(|e| (e.addr, e.data.to_vec())).collect())
                    .unwrap_or_default(),
                conf_date: c.conf_date,
                conf_time: c.conf_time,
                cycle_us,
                device_type: c.device_type.filter(|&d| d != 0),
                bytes: None,
            })
            .collect()
    }

    /// Whether a date or time marks the configuration as stored.
    fn stamped(&self) -> bool {
        self.conf_date != 0 || self.conf_time != 0
    }

    /// Whether the CN of `ident` reports this configuration as stored.
    pub fn up_to_date(&self, ident: &IdentResponse) -> bool {
        self.stamped()
            && ident.verify_conf_date == self.conf_date
            && ident.verify_conf_time == self.conf_time
    }

    /// The device type mismatch, when the plan checks it and the CN of
    /// `ident` reports another (the reference's E_NMT_BPO1_DEVICE_TYPE).
    pub fn device_type_mismatch(&self, ident: &IdentResponse) -> Option<String> {
        let want = self.device_type?;
        (ident.device_type != want).then(|| {
            format!(
                "CN {} reports device type {:#010x}, the configuration expects {want:#010x} (0x1F84/{}): E_NMT_BPO1_DEVICE_TYPE",
                self.node, ident.device_type, self.node
            )
        })
    }

    /// The writes for the CN of `ident`; see the module doc.
    pub fn steps(&self, ident: &IdentResponse) -> Vec<Step> {
        let write = |addr, value: &[u8], abort_ok| Step {
            transfer: Transfer::Write {
                addr,
                value: value.to_vec(),
            },
            abort_ok,
        };
        let cycle = self.cycle_us.to_le_bytes();
        if self.up_to_date(ident) {
            return vec![write(CYCLE_LEN, &cycle, false)];
        }
        let mut steps = Vec::with_capacity(self.objects.len() + 3);
        if self.stamped() {
            steps.push(write(RESTORE, &LOAD, true));
        }
        steps.extend(self.objects.iter().map(|(a, v)| write(*a, v, false)));
        if self.stamped() {
            steps.push(write(STORE, &SAVE, true));
        }
        steps.push(write(CYCLE_LEN, &cycle, false));
        steps
    }

    /// The error of the CN refusing the write of `step` with `code`: the
    /// object (the mapped one for a default PDO mapping entry) and what to
    /// do.
    pub fn refusal(&self, step: &Step, code: AbortCode) -> String {
        let addr = step.transfer.addr();
        let node = self.node;
        let mapped = match (&step.transfer, self.bytes) {
            (Transfer::Write { value, .. }, Some((inb, outb)))
                if (addr.index == 0x1600 || addr.index == 0x1A00)
                    && addr.subindex > 0
                    && value.len() == 8 =>
            {
                let obj = IndexAddress::new(u16::from_le_bytes([value[0], value[1]]), value[2]);
                let (flag, _) = match addr.index {
                    0x1A00 => ("--in-bytes", inb),
                    _ => ("--out-bytes", outb),
                };
                Some((obj, flag))
            }
            _ => None,
        };
        match mapped {
            Some((obj, flag)) => format!(
                "CN {node} refused {}: {code}: give {flag} ≤ {} or --cdc with your project's configuration",
                short(obj),
                addr.subindex - 1
            ),
            None => {
                let hint = match self.bytes {
                    Some(_) => "give --cdc with your project's configuration",
                    None => "check the CN's entry in the --cdc file",
                };
                format!("CN {node} refused {}: {code}: {hint}", short(addr))
            }
        }
    }
}

/// `0x1006` for subindex 0, else `0x6000/7`.
pub fn short(a: IndexAddress) -> String {
    match a.subindex {
        0 => format!("{:#06X}", a.index).replace("0X", "0x"),
        s => format!("{:#06X}/{s}", a.index).replace("0X", "0x"),
    }
}

/// A stable 64-bit digest of the parts in order (the first 8 bytes of
/// their SHA-256, the hash the project already uses).
fn digest(parts: &[&[u8]]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().expect("SHA-256 has 32 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(steps: &[Step]) -> Vec<(String, String)> {
        steps
            .iter()
            .map(|s| match &s.transfer {
                Transfer::Write { addr, value } => (short(*addr), hex(value)),
                Transfer::Read { addr } => (short(*addr), String::new()),
            })
            .collect()
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// The default plan of a 50 ms cycle with one byte each way writes
    /// what the reference MN wrote to node 1 (`ref_mn_cn.pcap` frames
    /// 1022–2581), but for the date, time and loss tolerance, which are
    /// ours.
    #[test]
    fn the_default_plan_is_the_reference_cfms_order() {
        let plan = CnPlan::default_for(1, 50_000_000, 1, 1);
        let steps = plan.steps(&IdentResponse::default());
        let (d, t) = (
            hex(&plan.conf_date.to_le_bytes()),
            hex(&plan.conf_time.to_le_bytes()),
        );
        let want: Vec<(String, String)> = [
            ("0x1011/1", "6c6f6164"),
            ("0x1600", "00"),
            ("0x1A00", "00"),
            ("0x1006", "50c30000"),
            ("0x1020/1", d.as_str()),
            ("0x1020/2", t.as_str()),
            ("0x1C0B/3", "50000000"),
            ("0x1C0D/3", "50000000"),
            ("0x1C14", "80f0fa02"),
            ("0x1F98/4", "2400"),
            ("0x1F98/5", "2400"),
            ("0x1600/1", "0062010000000800"),
            ("0x1A00/1", "0060010000000800"),
            ("0x1600", "01"),
            ("0x1A00", "01"),
            ("0x1010/1", "73617665"),
            ("0x1006", "50c30000"),
        ]
        .iter()
        .map(|(a, v)| (a.to_string(), v.to_string()))
        .collect();
        assert_eq!(values(&steps), want);
        let ok: Vec<bool> = steps.iter().map(|s| s.abort_ok).collect();
        assert!(ok[0] && ok[15] && ok.iter().filter(|&&x| x).count() == 2);
    }

    #[test]
    fn a_cn_that_stored_the_configuration_gets_only_the_cycle() {
        let plan = CnPlan::default_for(1, 1_000_000, 4, 2);
        let ident = IdentResponse {
            verify_conf_date: plan.conf_date,
            verify_conf_time: plan.conf_time,
            ..IdentResponse::default()
        };
        assert!(plan.up_to_date(&ident));
        assert_eq!(
            values(&plan.steps(&ident)),
            vec![("0x1006".to_string(), "e8030000".to_string())]
        );
        // Another configuration has other stamps.
        let other = CnPlan::default_for(1, 1_000_000, 4, 3);
        assert!(!other.up_to_date(&ident));
        assert_ne!(
            (other.conf_date, other.conf_time),
            (plan.conf_date, plan.conf_time)
        );
    }

    #[test]
    fn mapping_entries_walk_the_bytes() {
        let plan = CnPlan::default_for(7, 1_000_000, 3, 0);
        let maps: Vec<(String, String)> = values(&plan.steps(&IdentResponse::default()))
            .into_iter()
            .filter(|(a, _)| a.starts_with("0x1A00/"))
            .collect();
        assert_eq!(
            maps,
            vec![
                ("0x1A00/1".into(), "0060010000000800".into()),
                ("0x1A00/2".into(), "0060020008000800".into()),
                ("0x1A00/3".into(), "0060030010000800".into()),
            ]
        );
    }

    #[test]
    fn a_refused_mapping_names_the_object_and_the_flag() {
        let plan = CnPlan::default_for(1, 1_000_000, 8, 1);
        let steps = plan.steps(&IdentResponse::default());
        let step = steps
            .iter()
            .find(|s| s.transfer.addr() == IndexAddress::new(0x1A00, 7))
            .unwrap();
        assert_eq!(
            plan.refusal(step, AbortCode::SUBINDEX_DOES_NOT_EXIST),
            "CN 1 refused 0x6000/7: sub-index does not exist (0x06090011): give --in-bytes ≤ 6 or --cdc with your project's configuration"
        );
        assert_eq!(
            plan.refusal(&steps[3], AbortCode::VALUE_RANGE),
            "CN 1 refused 0x1006: value range of parameter exceeded (0x06090030): give --cdc with your project's configuration"
        );
    }

    #[test]
    fn the_device_type_is_checked_only_when_configured() {
        let mut plan = CnPlan::default_for(32, 1_000_000, 1, 1);
        let ident = IdentResponse {
            device_type: 0x000F_0191,
            ..IdentResponse::default()
        };
        assert_eq!(plan.device_type_mismatch(&ident), None);
        plan.device_type = Some(0x000F_0192);
        assert_eq!(
            plan.device_type_mismatch(&ident).unwrap(),
            "CN 32 reports device type 0x000f0191, the configuration expects 0x000f0192 (0x1F84/32): E_NMT_BPO1_DEVICE_TYPE"
        );
    }
}
