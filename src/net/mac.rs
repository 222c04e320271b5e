//! The MAC address of a network interface, here or inside one of the
//! namespaces jitterlab made: the raw-Ethernet transports (the `roundtrip`
//! probe's `opc.eth`, the `netcycle` probe's POWERLINK frames) address their
//! peer by it. Read from sysfs here and through `ip -j link` in a namespace,
//! whose own `/sys` this process does not see.

use anyhow::{anyhow, Context, Result};

/// The MAC address of `ifname`, in namespace `netns` (through `ip -j`) or
/// here (sysfs).
pub fn mac_of(netns: Option<&str>, ifname: &str) -> Result<[u8; 6]> {
    let text = match netns {
        None => std::fs::read_to_string(format!("/sys/class/net/{ifname}/address"))
            .with_context(|| format!("reading the MAC address of {ifname}"))?,
        Some(ns) => {
            let out = std::process::Command::new("ip")
                .args(["-n", ns, "-j", "link", "show", "dev", ifname])
                .output()
                .context("running ip (iproute2)")?;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                .with_context(|| format!("reading `ip -j link show dev {ifname}`"))?;
            v[0]["address"]
                .as_str()
                .with_context(|| format!("no MAC address for {ifname} in namespace {ns}"))?
                .to_string()
        }
    };
    parse(&text, ifname)
}

/// `aa:bb:cc:dd:ee:ff` (a trailing newline allowed, as sysfs writes it) as
/// six bytes; `ifname` names the interface in the error.
fn parse(text: &str, ifname: &str) -> Result<[u8; 6]> {
    let bytes: Vec<u8> = text
        .trim()
        .split(':')
        .map(|h| u8::from_str_radix(h, 16))
        .collect::<Result<_, _>>()
        .with_context(|| format!("MAC address {text:?} of {ifname}"))?;
    bytes
        .try_into()
        .map_err(|_| anyhow!("MAC address {text:?} of {ifname} is not 6 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sysfs_form() {
        assert_eq!(
            parse("02:1a:ff:00:7e:c3\n", "veth0").unwrap(),
            [0x02, 0x1a, 0xff, 0x00, 0x7e, 0xc3]
        );
    }

    #[test]
    fn names_the_interface_when_the_address_is_wrong() {
        assert_eq!(
            parse("02:1a:ff:00:7e", "veth0").unwrap_err().to_string(),
            "MAC address \"02:1a:ff:00:7e\" of veth0 is not 6 bytes"
        );
        assert_eq!(
            parse("02:1a:zz:00:7e:c3", "veth0").unwrap_err().to_string(),
            "MAC address \"02:1a:zz:00:7e:c3\" of veth0"
        );
    }

    #[test]
    fn reads_the_loopback_interface_here() {
        // Loopback exists on every Linux machine and has the all-zero address.
        assert_eq!(mac_of(None, "lo").unwrap(), [0; 6]);
    }
}
