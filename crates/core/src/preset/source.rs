//! Which document each preset reproduces, by title and authors, and what
//! the preset stands in for on an ordinary Linux machine.
//!
//! A report that goes into a machine's qualification record must say what
//! it reproduces and where it departs from the original set-up: the
//! documents measured on industrial PCs with firmware switches, separate
//! I/O devices and physical networks, for hours; a preset runs on the
//! machine at hand, for minutes, with jitterlab's own stand-ins. The bench
//! stores a preset's [`Provenance`] with the run, so the report of a run
//! stored today says it even when the presets change later.
//!
//! Titles and authors are copied from the documents in `shared/seeds/`;
//! where a document names no title or author ([Red Hat caterpillar] is a blog post kept
//! without its heading or byline), the text says so rather than guess.
//!
//! The documents cited here are listed in `docs/design.md`.

use serde::{Deserialize, Serialize};

/// What a preset reproduces and what it emulates, as stored with a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The preset's name (`bench --preset NAME`).
    pub preset: String,
    /// The source document's title.
    pub title: String,
    /// The source document's authors.
    pub authors: String,
    /// What the preset stands in for, and how.
    pub emulates: String,
}

/// One row of [`SOURCES`].
struct Source {
    preset: &'static str,
    title: &'static str,
    authors: &'static str,
    emulates: &'static str,
}

/// Every preset's source document, by seed.
const SOURCES: &[Source] = &[
    Source {
        preset: "codesys",
        title: "Improving Real-Time Performance of CODESYS Control Applications with Intel’s Real-Time Technologies",
        authors: "Intel Corporation (no individual author named)",
        emulates: "the CODESYS task is jitterlab's cyclic probe (4 ms period, a 500 us scan over 1 MiB); Configuration 1 (Intel TCC mode disabled) is a time-sharing SCHED_OTHER task and Configuration 2 (TCC mode enabled) the Linux real-time set-up (SCHED_FIFO 95, cpu_dma_latency 0), because the firmware's real-time mode cannot be switched from software; Configuration 3's cache ways come from resctrl where the machine has it, else N/A; the stress workload is stress-ng with the document's Appendix B parameters; by default 60 s per cell instead of 48 h",
    },
    Source {
        preset: "redhat",
        title: "Real-time Linux for controls: Industrial control performance testing with Red Hat and Intel",
        authors: "Red Hat and Intel (no individual author named)",
        emulates: "the I/O simulator and the soft-PLC controller are jitterlab threads exchanging OPC UA PubSub (UADP over UDP) across a veth pair between two network namespaces of this machine, not two devices on a physical network; on a 2-CPU machine the I/O simulator shares a CPU with the noisy neighbour, and only the controller's CPU gets reserved cache ways; cache allocation comes from resctrl where present (Intel CAT); by default 60 s per cell instead of an hour",
    },
    Source {
        preset: "caterpillar",
        title: "not given in the stored text (a Red Hat blog post: the caterpillar benchmark with Intel Cache Allocation Technology on Red Hat Device Edge)",
        authors: "a Red Hat engineer, not named in the stored text",
        emulates: "Intel's caterpillar binary is jitterlab's chase probe (a random pointer chase over half the shared cache, timed in CPU cycles, 200 samples of 100 chases); the noisy neighbour is stress-ng --cache; the IRQs get a CPU of their own only with three CPUs or more; the cache-allocated configurations need resctrl, else N/A",
    },
    Source {
        preset: "epics",
        title: "EPICS IOCcore Real Time Performance Measurements on Coldfire Module",
        authors: "Shifu Xu, Hairong Shang, Robert Laird and Frank Lenkszus (Argonne National Laboratory)",
        emulates: "a Linux machine stands in for the ColdFire uC5282 under RTEMS 4.9.2 and uClinux 2.6.21; the interrupt is a timer interrupt timed by the kernel's timerlat tracer (not an external I/O interrupt), the context switch a token handed between two SCHED_FIFO threads, the response a UDP datagram from a second network namespace over a veth pair; the loaded network is a flood over that veth pair, not a site's public network; by default 60 s per cell instead of one or two hours",
    },
    Source {
        preset: "powerlink",
        title: "POWERLINK and Real-Time Linux: A Perfect Match for Highest Performance in Real Applications",
        authors: "Josef Baumgartner and Stefan Schoenegger (Bernecker + Rainer Industrie-Elektronik)",
        emulates: "the managing node is jitterlab's own POWERLINK MN (the netcycle probe), not openPOWERLINK, and the 3 to 40 controlled nodes are emulated on the far side of a veth pair, not devices on a 100 Mbit/s wire; a cell whose frames could not fit that wire is N/A (wire) without a measurement; the seven stress conditions are built-in neighbours (usb needs a path); by default 30 s per load cell and 60 s per condition cell instead of 10 million cycles",
    },
];

/// The provenance of preset `name`; `None` for a name that is no preset.
pub fn provenance(name: &str) -> Option<Provenance> {
    SOURCES
        .iter()
        .find(|s| s.preset == name)
        .map(|s| Provenance {
            preset: s.preset.to_string(),
            title: s.title.to_string(),
            authors: s.authors.to_string(),
            emulates: s.emulates.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_a_source_and_no_other_name_does() {
        for p in super::super::PRESETS {
            assert!(provenance(p.name).is_some(), "{}", p.name);
        }
        assert_eq!(SOURCES.len(), super::super::PRESETS.len());
        assert_eq!(provenance("nonexist"), None);
    }

    #[test]
    fn each_preset_names_its_document_by_title_and_authors() {
        let t = |n: &str| {
            let p = provenance(n).unwrap();
            (p.title, p.authors)
        };
        assert_eq!(
            t("codesys"),
            (
                "Improving Real-Time Performance of CODESYS Control Applications with Intel’s Real-Time Technologies".into(),
                "Intel Corporation (no individual author named)".into()
            )
        );
        assert_eq!(
            t("redhat"),
            (
                "Real-time Linux for controls: Industrial control performance testing with Red Hat and Intel".into(),
                "Red Hat and Intel (no individual author named)".into()
            )
        );
        assert_eq!(
            t("caterpillar"),
            (
                "not given in the stored text (a Red Hat blog post: the caterpillar benchmark with Intel Cache Allocation Technology on Red Hat Device Edge)".into(),
                "a Red Hat engineer, not named in the stored text".into()
            )
        );
        assert_eq!(
            t("epics"),
            (
                "EPICS IOCcore Real Time Performance Measurements on Coldfire Module".into(),
                "Shifu Xu, Hairong Shang, Robert Laird and Frank Lenkszus (Argonne National Laboratory)".into()
            )
        );
        assert_eq!(
            t("powerlink"),
            (
                "POWERLINK and Real-Time Linux: A Perfect Match for Highest Performance in Real Applications".into(),
                "Josef Baumgartner and Stefan Schoenegger (Bernecker + Rainer Industrie-Elektronik)".into()
            )
        );
    }

    #[test]
    fn each_preset_says_what_it_stands_in_for() {
        let e = |n: &str| provenance(n).unwrap().emulates;
        assert!(e("codesys").contains(
            "is a time-sharing SCHED_OTHER task and Configuration 2 (TCC mode enabled) the Linux real-time set-up (SCHED_FIFO 95, cpu_dma_latency 0), because the firmware's real-time mode cannot be switched from software"
        ));
        assert!(e("redhat").contains(
            "on a 2-CPU machine the I/O simulator shares a CPU with the noisy neighbour"
        ));
        assert!(e("caterpillar").contains("Intel's caterpillar binary is jitterlab's chase probe"));
        assert!(e("epics").contains("a timer interrupt timed by the kernel's timerlat tracer"));
        assert!(e("powerlink").contains("the managing node is jitterlab's own POWERLINK MN"));
    }

    #[test]
    fn provenance_round_trips_through_json() {
        let p = provenance("epics").unwrap();
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Provenance>(&j).unwrap(), p);
    }
}
