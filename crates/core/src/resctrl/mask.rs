//! Cache-way masks: parsing hex masks and way lists, describing them,
//! and the adjacency checks the kernel applies.

use crate::units::CpuList;

/// Parses a hex capacity mask as a spec gives it: `0xc0` or `c0`.
pub fn parse_mask(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "mask {t:?} is not a hex mask; write it like \"0xc0\" (ways 6-7), or give ways = \"6-7\""
        ));
    }
    u64::from_str_radix(hex, 16).map_err(|_| format!("mask {t:?} has more than 64 bits"))
}

/// Parses cache ways in the kernel's list format (`6-7`, `0,2-3`, `7`)
/// into a mask (way N is bit N).
pub fn parse_ways(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "ways {t:?} is not a list of cache ways; write them like \"6-7\" or \"0,2\" (way 0 is the lowest bit of the mask)"
        )
    };
    let list = CpuList::parse(t).map_err(|_| bad())?;
    if list.is_empty() {
        return Err("ways is empty; name at least one cache way, e.g. \"6-7\"".into());
    }
    let mut mask = 0u64;
    for w in list.iter() {
        if w >= 64 {
            return Err(format!(
                "way {w} is beyond the 64 ways a capacity mask can hold"
            ));
        }
        mask |= 1 << w;
    }
    Ok(mask)
}

/// The ways of `mask` in the kernel's list format (`6-7`, `0,2`); `none`
/// for an empty mask.
pub fn ways_text(mask: u64) -> String {
    if mask == 0 {
        return "none".into();
    }
    let list: CpuList = (0..64).filter(|b| mask & (1 << b) != 0).collect();
    list.to_string()
}

/// `ways 6-7 (mask 0xc0)`: a mask as both the user and the kernel write it.
pub fn describe_mask(mask: u64) -> String {
    format!("ways {} (mask {mask:#x})", ways_text(mask))
}

/// `1 way`, `3 ways`.
pub(super) fn ways_count(n: u32) -> String {
    if n == 1 {
        "1 way".into()
    } else {
        format!("{n} ways")
    }
}

/// True when the set bits of `mask` form one block.
pub(super) fn contiguous(mask: u64) -> bool {
    if mask == 0 {
        return true;
    }
    let shifted = mask >> mask.trailing_zeros();
    shifted & (shifted + 1) == 0
}

/// The length of the lowest block of adjacent set bits.
pub(super) fn first_run(mask: u64) -> u32 {
    if mask == 0 {
        return 0;
    }
    (mask >> mask.trailing_zeros()).trailing_ones()
}
