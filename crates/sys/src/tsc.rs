//! The time-stamp counter (TSC) and CPUID: the instructions the `chase` probe
//! times itself with.
//!
//! A chase lasts microseconds and its interesting variation is tens of
//! cycles, finer than a clock read can resolve; the TSC counts at a constant
//! rate (with `constant_tsc`) and is read in a few cycles without entering
//! the kernel. A bare `rdtsc` may execute before the loads it should follow
//! have finished, or after later ones have started, so each end of the timed
//! region is serialised as Intel's "How to Benchmark Code Execution Times"
//! recommends:
//!
//! - [`tsc_start`]: `lfence; rdtsc; lfence` — the first fence waits for
//!   every earlier instruction to complete, the second keeps the timed code
//!   from starting before the counter was read;
//! - [`tsc_end`]: `rdtscp; lfence` — `rdtscp` waits until every earlier
//!   instruction has executed and every earlier load is globally visible,
//!   the fence keeps later instructions from starting before it.
//!
//! The intrinsics are also compiler barriers (LLVM treats them as touching
//! memory), so the timed loads stay between the two reads.
//!
//! Only x86_64 has these instructions. [`support`] says whether the CPU can
//! run them (and why not); the probe calls it before anything else and
//! refuses to start otherwise. On other architectures the functions exist
//! so that the caller compiles, return 0, and [`support`] names the
//! architecture.
//!
//! [`cpuid`] reads one CPUID leaf: the source of the TSC frequency on CPUs
//! and hypervisors that state it (decoded in `jitterlab_core::chase`).

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{__cpuid_count, __rdtscp, _mm_lfence, _rdtsc};

/// Whether this CPU can time a chase with [`tsc_start`] and [`tsc_end`]:
/// `Err` names what is missing (the architecture, or the `rdtscp`
/// instruction — CPUID leaf 0x80000001, `edx` bit 27).
pub fn support() -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    {
        let max_ext = cpuid(0x8000_0000, 0).map_or(0, |r| r[0]);
        let rdtscp =
            max_ext >= 0x8000_0001 && cpuid(0x8000_0001, 0).is_some_and(|r| r[3] & (1 << 27) != 0);
        if rdtscp {
            Ok(())
        } else {
            Err("this CPU has no rdtscp instruction (CPUID 0x80000001 edx bit 27), which the chase probe times with".into())
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Err(format!(
            "the chase probe reads the x86_64 time-stamp counter; it is not supported on this architecture ({})",
            std::env::consts::ARCH
        ))
    }
}

/// Reads the TSC at the start of a timed region: `lfence; rdtsc; lfence`.
/// Returns 0 on architectures other than x86_64 (see [`support`]).
#[inline(always)]
pub fn tsc_start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence (SSE2, part of the x86_64 baseline) and rdtsc take no
        // operands and touch no memory of ours; rdtsc exists on every x86_64
        // CPU.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Reads the TSC at the end of a timed region: `rdtscp; lfence`. Returns 0
/// on architectures other than x86_64.
///
/// Call it only after [`support`] said yes: without `rdtscp` the
/// instruction traps and the process dies of `SIGILL`.
#[inline(always)]
pub fn tsc_end() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut aux = 0u32;
        // SAFETY: rdtscp writes only `aux`, a valid local u32 (the
        // IA32_TSC_AUX value, which we ignore); lfence takes no operands. On a
        // CPU without rdtscp the instruction raises #UD, which ends the
        // process with SIGILL — no memory is touched; `support` refuses such
        // CPUs before any chase.
        unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Executes CPUID for `leaf` and `subleaf`: `[eax, ebx, ecx, edx]`; `None`
/// on architectures other than x86_64. A leaf beyond the highest the CPU
/// supports returns whatever the CPU returns for such leaves (check the
/// highest leaf first: leaf 0, 0x40000000 or 0x80000000).
// `__cpuid_count` is a safe function in newer Rust and an unsafe one in the
// workspace's minimum version: allow the block that is unneeded in the former.
#[allow(unused_unsafe)]
pub fn cpuid(leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: CPUID exists on every x86_64 CPU, takes its inputs in
        // registers and writes only the four returned registers.
        let r = unsafe { __cpuid_count(leaf, subleaf) };
        Some([r.eax, r.ebx, r.ecx, r.edx])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (leaf, subleaf);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_advances_across_a_sleep() {
        if let Err(why) = support() {
            eprintln!("skipping: {why}");
            return;
        }
        let a = tsc_start();
        std::thread::sleep(std::time::Duration::from_millis(1));
        let b = tsc_end();
        // 1 ms at any TSC rate above 1 MHz is more than 1000 ticks.
        assert!(b > a + 1000, "tsc {a} then {b}");
    }

    #[test]
    fn cpuid_leaf_zero_names_the_vendor() {
        let Some(r) = cpuid(0, 0) else {
            eprintln!("skipping: no CPUID on {}", std::env::consts::ARCH);
            return;
        };
        let vendor: Vec<u8> = [r[1], r[3], r[2]]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let vendor = String::from_utf8(vendor).unwrap();
        // The vendor string is also in /proc/cpuinfo.
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        let line = cpuinfo
            .lines()
            .find(|l| l.starts_with("vendor_id"))
            .unwrap();
        assert_eq!(line.split(':').nth(1).unwrap().trim(), vendor);
        assert!(r[0] >= 1, "highest basic leaf {}", r[0]);
    }

    #[test]
    fn support_matches_the_rdtscp_flag_of_cpuinfo() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        let flags = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap();
        let has = flags.split_whitespace().any(|f| f == "rdtscp");
        assert_eq!(support().is_ok(), has && cfg!(target_arch = "x86_64"));
    }
}
