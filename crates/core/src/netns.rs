//! A pair of network namespaces as data: how jitterlab names the two
//! namespaces and the veth ends between them, and how it addresses them.
//!
//! A probe kind that sends real traffic does so between two namespaces it
//! makes for itself, joined by a veth pair (the binary's `net::hosts`
//! makes them). Each such kind declares its pair once, in its own folder,
//! as a [`PairKind`] const, and names it in its descriptor
//! ([`crate::probe::ProbeDescriptor::netns`]). The pair the bench's flood
//! neighbour makes is no kind's and is declared beside the code that makes
//! it.
//!
//! `jitterlab restore` deletes a namespace a journal names only when the
//! name is one jitterlab makes ([`is_ours`]: `jl<pid>` and a namespace
//! suffix of a known pair), so an edited journal cannot delete someone
//! else's namespace. It learns the suffixes from the registry — every
//! kind's descriptor — rather than from the journal itself: a journal is a
//! file anyone may edit, and the check exists precisely so that the
//! journal does not vouch for itself.
//!
//! Every address is in the benchmarking range 198.18.0.0/15 (RFC 2544),
//! which no real network routes ([`in_benchmark_range`]); each pair has a
//! /30 of its own.

use std::net::Ipv4Addr;

/// One kind of namespace pair: how its namespaces and veth ends are named
/// (`jl<pid>` + a suffix) and addressed, and who needs it (for refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairKind {
    /// Suffix of the first ("sending") namespace.
    pub ns_a: &'static str,
    /// Suffix of the second ("receiving", the probe's) namespace.
    pub ns_b: &'static str,
    /// Suffix of the veth end in the first namespace.
    pub veth_a: &'static str,
    /// Suffix of the veth end in the second namespace.
    pub veth_b: &'static str,
    /// Address of the first end.
    pub ip_a: Ipv4Addr,
    /// Address of the second end.
    pub ip_b: Ipv4Addr,
    /// Prefix length of both addresses.
    pub prefix_len: u8,
    /// What needs the pair, as refusals name it ("the network scenario").
    pub who: &'static str,
    /// The refusal when not root.
    pub needs_root: &'static str,
}

impl PairKind {
    /// The first end's address with its prefix length (`198.18.0.1/30`).
    pub fn cidr_a(&self) -> String {
        format!("{}/{}", self.ip_a, self.prefix_len)
    }

    /// The second end's address with its prefix length.
    pub fn cidr_b(&self) -> String {
        format!("{}/{}", self.ip_b, self.prefix_len)
    }
}

/// True for addresses in the benchmarking range 198.18.0.0/15 (RFC 2544),
/// the only one jitterlab's namespaces use.
pub fn in_benchmark_range(addr: Ipv4Addr) -> bool {
    let o = addr.octets();
    o[0] == 198 && o[1] & 0xfe == 18
}

/// True when `name` is a namespace name a pair of `pairs` makes: `jl`, a
/// pid (decimal digits, at least one), and one of the pairs' namespace
/// suffixes.
pub fn is_ours<'a>(name: &str, pairs: impl IntoIterator<Item = &'a PairKind>) -> bool {
    let Some(rest) = name.strip_prefix("jl") else {
        return false;
    };
    pairs
        .into_iter()
        .flat_map(|k| [k.ns_a, k.ns_b])
        .filter_map(|suffix| rest.strip_suffix(suffix))
        .any(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: PairKind = PairKind {
        ns_a: "tx",
        ns_b: "rx",
        veth_a: "a",
        veth_b: "b",
        ip_a: Ipv4Addr::new(198, 18, 0, 1),
        ip_b: Ipv4Addr::new(198, 18, 0, 2),
        prefix_len: 30,
        who: "a",
        needs_root: "a needs root",
    };

    #[test]
    fn a_name_is_ours_with_a_pid_and_a_namespace_suffix_of_a_given_pair() {
        let b = PairKind {
            ns_a: "mn",
            ns_b: "cn",
            ..A
        };
        for yes in ["jl12tx", "jl4194304rx", "jl1mn", "jl77cn"] {
            assert!(is_ours(yes, [&A, &b]), "{yes}");
        }
        for no in [
            "jltx", "jl12a", "jl12", "xjl12tx", "jl1a2rx", "jl12mn ", "default",
        ] {
            assert!(!is_ours(no, [&A, &b]), "{no}");
        }
        assert!(!is_ours("jl12mn", [&A]));
        assert!(!is_ours("jl12tx", []));
    }

    #[test]
    fn cidrs_carry_the_prefix_length() {
        assert_eq!([A.cidr_a(), A.cidr_b()], ["198.18.0.1/30", "198.18.0.2/30"]);
    }

    #[test]
    fn benchmark_range_is_198_18_slash_15() {
        for yes in ["198.18.0.0", "198.18.0.6", "198.19.255.255"] {
            assert!(in_benchmark_range(yes.parse().unwrap()), "{yes}");
        }
        for no in ["198.17.255.255", "198.20.0.0", "127.0.0.1", "10.0.0.1"] {
            assert!(!in_benchmark_range(no.parse().unwrap()), "{no}");
        }
    }
}
