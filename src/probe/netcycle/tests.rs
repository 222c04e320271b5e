//! The probe's argument checks and its MN ↔ CN exchange over a veth pair
//! (root only: namespaces and packet sockets).

use super::*;
use jitterlab_core::powerlink::{ETHERTYPE_POWERLINK, MAX_FRAME_LEN};
use jitterlab_sys::rx_timestamp::realtime_ns;
use std::sync::atomic::AtomicBool;

fn args(params: NetcycleParams) -> NetcycleArgs {
    NetcycleArgs {
        cpu: 1,
        cn_cpu: 0,
        priority: 80,
        period_ns: 500_000,
        duration_ns: Some(1_000_000_000),
        params,
    }
}

#[test]
fn bad_arguments_are_refused_naming_the_flag() {
    let online = CpuList::parse("0-1").unwrap();
    let err = |a: NetcycleArgs| validate(&a, &online).unwrap_err().to_string();
    assert_eq!(
        err(NetcycleArgs {
            cn_cpu: 5,
            ..args(NetcycleParams::default())
        }),
        "CPU 5 is not online (online CPUs: 0-1); choose one of them with --cn-cpu"
    );
    assert_eq!(
        err(args(NetcycleParams {
            response_timeout_ns: 500_000,
            ..NetcycleParams::default()
        })),
        "--response-timeout 500us must be shorter than the --cycle 500us"
    );
    assert_eq!(
        err(NetcycleArgs {
            period_ns: 250_000,
            ..args(NetcycleParams {
                cns: 40,
                chaining: true,
                ..NetcycleParams::default()
            })
        }),
        "N/A (wire): 40 CNs need at least 289.3 µs of wire time per cycle at 100 Mbit/s (chained), more than the 250 µs cycle; lengthen --cycle or give fewer --cns"
    );
    assert_eq!(
        err(args(NetcycleParams {
            in_bytes: 255,
            ..NetcycleParams::default()
        })),
        "--in-bytes 255: the managing node maps one byte per input 0x6000/k into a CN's PDO, at most 254 entries; give --in-bytes 254 or less, or --cdc with your project's mapping"
    );
    // Sharing a CPU and busy-polling are said, not refused.
    let w = validate(
        &NetcycleArgs {
            cn_cpu: 1,
            ..args(NetcycleParams {
                wait: Wait::BusyPoll,
                ..NetcycleParams::default()
            })
        },
        &online,
    )
    .unwrap();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("the CN emulator shares CPU 1 with the managing node"));
    assert!(w[1].starts_with("--wait busy-poll: "));
}

#[test]
fn one_role_needs_an_interface_that_exists_under_the_sysroot() {
    let root = tempfile::tempdir().unwrap();
    let one = |role, interface: Option<&str>| {
        check_environment(
            root.path(),
            &args(NetcycleParams {
                role,
                interface: interface.map(String::from),
                ..NetcycleParams::default()
            }),
        )
    };
    assert_eq!(
        one(NodeRole::Mn, None).unwrap_err().to_string(),
        "--role mn runs one side on a real network: give --interface IF"
    );
    assert_eq!(
        one(NodeRole::Cn, Some("eth9")).unwrap_err().to_string(),
        "--interface eth9: no such network interface; list them with `ip link`"
    );
    std::fs::create_dir_all(root.path().join("sys/class/net/eth9")).unwrap();
    one(NodeRole::Cn, Some("eth9")).unwrap();
}

#[test]
fn chained_slots_are_one_pres_on_the_wire_apart() {
    // 6 input bytes: a 60-byte frame, 84 bytes on the wire, 6.72 µs.
    assert_eq!(chain_step_ns(&NetcycleParams::default()), 6_720);
}

/// A pair, both links and the MN, when root.
fn pair_or_skip(what: &str) -> Option<(NetnsPair, Link, Link)> {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping {what}: namespaces and packet sockets need root");
        return None;
    }
    let pair = NetnsPair::setup(jitterlab_core::netcycle::PAIR, &mut |_| Ok(())).unwrap();
    let (mn_ns, cn_ns) = (pair.netns_a(), pair.netns_b());
    let mn_mac = mac_of(Some(mn_ns), pair.veth_a()).unwrap();
    let cn_mac = mac_of(Some(cn_ns), pair.veth_b()).unwrap();
    let opts = LinkOptions {
        soc_socket: true,
        ..LinkOptions::default()
    };
    let mn = Link::open(Some(mn_ns), pair.veth_a(), mn_mac, opts).unwrap();
    let cn = Link::open(Some(cn_ns), pair.veth_b(), cn_mac, LinkOptions::default()).unwrap();
    Some((pair, mn, cn))
}

#[test]
#[serial_test::serial(netns)]
fn frames_cross_the_veth_pair_through_the_receive_rings_with_their_stamps() {
    let Some((_pair, mut mn, mut cn)) = pair_or_skip("the receive rings") else {
        return;
    };
    assert!(mn.has_ring() && cn.has_ring());
    let mut buf = [0u8; MAX_FRAME_LEN];
    assert_eq!(mn.recv(&mut buf).unwrap(), None, "nothing came yet");
    assert!(!mn.wait(Some(1_000_000)).unwrap(), "a quiet link times out");
    for k in 0..3u8 {
        let mut frame = [0u8; 60];
        frame[..6].copy_from_slice(&mn.mac());
        frame[6..12].copy_from_slice(&cn.mac());
        frame[12..14].copy_from_slice(&ETHERTYPE_POWERLINK.to_be_bytes());
        frame[14] = k;
        let before = realtime_ns();
        cn.send(&frame).unwrap();
        assert!(mn.wait(Some(1_000_000_000)).unwrap(), "frame {k} came");
        let got = mn.recv(&mut buf).unwrap().unwrap();
        let after = realtime_ns();
        assert_eq!((got.len, &buf[..60], got.hw_ns), (60, &frame[..], None));
        let stamp = got.soft_ns.unwrap();
        assert!(
            before <= stamp && stamp <= after,
            "{before} <= {stamp} <= {after}"
        );
        assert_eq!(mn.recv(&mut buf).unwrap(), None, "one frame, taken once");
    }
    // The other way, and the MN's own sends are not seen by itself.
    let mut frame = [0u8; 60];
    frame[..6].copy_from_slice(&cn.mac());
    frame[6..12].copy_from_slice(&mn.mac());
    frame[12..14].copy_from_slice(&ETHERTYPE_POWERLINK.to_be_bytes());
    mn.send(&frame).unwrap();
    assert!(cn.wait(Some(1_000_000_000)).unwrap());
    assert_eq!(cn.recv(&mut buf).unwrap().unwrap().len, 60);
    assert_eq!(mn.recv(&mut buf).unwrap(), None);
}

#[test]
#[serial_test::serial(netns)]
fn the_mn_brings_three_emulated_cns_up_and_polls_them_over_veth() {
    let Some((pair, mn_link, cn_link)) = pair_or_skip("the MN and CN exchange") else {
        return;
    };
    assert!(
        mn_link.stamps().contains("SoC transmit: software"),
        "{}",
        mn_link.stamps()
    );
    assert!(
        cn_link.stamps().contains("hardware: absent (veth"),
        "{}",
        cn_link.stamps()
    );
    let p = NetcycleParams::default();
    let cfg = CnConfig {
        nodes: (1..=3).collect(),
        out_bytes: 1,
        identity: Default::default(),
        chained: false,
        chain_step_ns: chain_step_ns(&p),
        response_time_ns: RESPONSE_TIME_NS,
    };
    let mut emulator = CnEmulator::new(cn_link, cfg);
    let stop = AtomicBool::new(false);
    let mut socs = Vec::with_capacity(10_000);
    let (up, counts, per_cn, cycles) = std::thread::scope(|s| {
        let cn = s.spawn(|| {
            emulator.run(&stop, None, &mut |soc| socs.push(soc), None);
        });
        let mut mn = Mn::new(
            mn_link,
            MnConfig {
                nodes: vec![1, 2, 3],
                spacing_floor_ns: 1_000_000,
                out_bytes: 1,
                in_bytes: 6,
                chained: false,
                chain_step_ns: 0,
                wait: Wait::Blocking,
                response_timeout_ns: 10_000_000,
                spin_ns: 0,
                period_ns: 2_000_000,
                plans: Vec::new(),
            },
        );
        let up = mn.bring_up(BRING_UP_NS, &AtomicBool::new(false)).unwrap();
        let (grid0, period) = mn.grid();
        // The runner's gap between preparation and release: the MN keeps
        // cycling on its schedule, then hands over at one of its releases.
        let (cpu, prio) = (jitterlab_sys::current_cpu().unwrap(), 0);
        let mut keep = KeepAlive::spawn(cpu, prio).unwrap();
        keep.keep(mn).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let t0 = jitterlab_sys::monotonic_ns() + 2_000_000;
        let (mut mn, first, _) = keep.hand_over(t0).unwrap();
        assert!(first >= t0);
        assert_eq!((first - grid0) % period, 0, "on the bring-up's grid");
        let mut completions = Vec::new();
        let sched = mn.run(
            first,
            Some(20),
            &AtomicBool::new(false),
            None,
            &mut |c, _| {
                completions.push(c.completion_ns());
            },
        );
        stop.store(true, Relaxed);
        cn.join().unwrap();
        // 20 releases fell due; a stall of the VM past a whole period
        // skips one (the schedule's rule: no burst of catch-up cycles), and
        // a stall in the last cycle counts the releases it ran over too.
        let s = sched.schedule;
        assert!(s.releases >= 20 && s.cycles <= 20, "{sched:?}");
        assert_eq!(completions.len() as u64, s.cycles);
        assert_eq!(s.cycles + s.skipped, s.releases, "{sched:?}");
        assert!(
            completions.iter().all(|c| c.is_some_and(|ns| ns > 0)),
            "{completions:?}"
        );
        assert_eq!(sched.outages, [], "no CN left operational");
        assert!(sched.min_soc_spacing_ns.unwrap() >= 1_000_000, "{sched:?}");
        (up, mn.counts(), mn.per_cn(), s.cycles)
    });
    assert!(up.cycles >= 3, "{up:?}");
    assert!(up.operational_ns >= up.identified_ns);
    assert_eq!(
        counts.ident_responses, 0,
        "counts start afresh after bring-up"
    );
    for (i, c) in per_cn.iter().enumerate() {
        assert_eq!(c.node, i as u8 + 1);
        assert_eq!(
            (c.polls, c.answered, c.missed, c.late),
            (cycles, cycles, 0, 0),
            "{c:?}"
        );
    }
    // Every CN finished its ER/EC handshake in the bring-up: while
    // measuring, the idle slots are NoService (every 7th an IdentRequest to
    // node 253, which nobody answers), and no StatusRequest goes out.
    assert_eq!(counts.status_responses, 0, "{counts:?}");
    let r = emulator.report();
    assert!(
        r.nodes.iter().all(|n| n.state == "NMT_CS_OPERATIONAL"),
        "{r:?}"
    );
    assert!(r.bring_up_ns.is_some());
    assert_eq!((r.counts.malformed, r.counts.send_errors), (0, 0));
    // Every SoC the MN sent was stamped by the CN side, bring-up and
    // keep-alive included: one schedule throughout, no two SoCs closer
    // than the floor (1 ms; the CN's stamps, taken in the sender's
    // context on a veth, within 100 µs of the send) and none missing for
    // long (the keep-alive cycles filled the 30 ms gap).
    assert!(
        socs.len() as u64 >= up.cycles + cycles + 10,
        "{}",
        socs.len()
    );
    assert_eq!(r.counts.socs, socs.len() as u64);
    let gaps: Vec<u64> = socs.windows(2).map(|w| w[1].rx_ns - w[0].rx_ns).collect();
    assert!(gaps.iter().all(|&g| g >= 900_000), "{gaps:?}");
    assert!(gaps.iter().all(|&g| g < 20_000_000), "{gaps:?}");
    drop(emulator);
    pair.teardown().unwrap();
}

#[test]
#[serial_test::serial(netns)]
fn a_cn_that_never_answers_fails_the_bring_up_naming_it_and_the_others_states() {
    let Some((pair, mn_link, cn_link)) = pair_or_skip("the failed bring-up") else {
        return;
    };
    // The emulator answers for 2 CNs; the MN expects 3.
    let mut emulator = CnEmulator::new(
        cn_link,
        CnConfig {
            nodes: (1..=2).collect(),
            out_bytes: 1,
            identity: Default::default(),
            chained: false,
            chain_step_ns: 0,
            response_time_ns: RESPONSE_TIME_NS,
        },
    );
    let stop = AtomicBool::new(false);
    let e = std::thread::scope(|s| {
        let cn = s.spawn(|| emulator.run(&stop, None, &mut |_| {}, None));
        let mut mn = Mn::new(
            mn_link,
            MnConfig {
                nodes: vec![1, 2, 3],
                spacing_floor_ns: 300_000,
                out_bytes: 1,
                in_bytes: 6,
                chained: false,
                chain_step_ns: 0,
                wait: Wait::Blocking,
                response_timeout_ns: 100_000,
                spin_ns: 0,
                period_ns: 1_000_000,
                plans: Vec::new(),
            },
        );
        let e = mn
            .bring_up(200_000_000, &AtomicBool::new(false))
            .unwrap_err();
        stop.store(true, Relaxed);
        cn.join().unwrap();
        e
    });
    assert_eq!(
        e.to_string(),
        "the CNs did not all reach NMT_CS_OPERATIONAL within 200ms: CN 1 is in NMT_CS_PRE_OPERATIONAL_1 (0x1d); CN 2 is in NMT_CS_PRE_OPERATIONAL_1 (0x1d); CN 3 never answered its IdentRequest; check that the CNs run and answer node ids 1, 2, 3"
    );
    drop(emulator);
    pair.teardown().unwrap();
}

#[test]
#[serial_test::serial(netns)]
fn a_cn_sent_out_of_operational_while_measured_is_told_with_its_cycle_state_and_cost() {
    let Some((pair, mn_link, cn_link)) = pair_or_skip("the NMT tracking") else {
        return;
    };
    let cn_mac = mac_of(Some(pair.netns_b()), pair.veth_b()).unwrap();
    let mn_mac = mac_of(Some(pair.netns_a()), pair.veth_a()).unwrap();
    // A second socket on the MN's side: another node's NMT command.
    let other = Link::open(
        Some(pair.netns_a()),
        pair.veth_a(),
        mn_mac,
        LinkOptions::default(),
    )
    .unwrap();
    let cfg = CnConfig {
        nodes: (1..=3).collect(),
        out_bytes: 1,
        identity: Default::default(),
        chained: false,
        chain_step_ns: 0,
        response_time_ns: RESPONSE_TIME_NS,
    };
    let mut emulator = CnEmulator::new(cn_link, cfg);
    let stop = AtomicBool::new(false);
    let measured = std::thread::scope(|s| {
        let cn = s.spawn(|| emulator.run(&stop, None, &mut |_| {}, None));
        let mut mn = Mn::new(
            mn_link,
            MnConfig {
                nodes: vec![1, 2, 3],
                spacing_floor_ns: 1_000_000,
                out_bytes: 1,
                in_bytes: 6,
                chained: false,
                chain_step_ns: 0,
                wait: Wait::Blocking,
                response_timeout_ns: 10_000_000,
                spin_ns: 0,
                period_ns: 2_000_000,
                plans: Vec::new(),
            },
        );
        mn.bring_up(BRING_UP_NS, &AtomicBool::new(false)).unwrap();
        let first = mn.grid().0;
        let mut cycle = 0u64;
        let mut buf = vec![0u8; jitterlab_core::powerlink::MAX_FRAME_LEN];
        let measured = mn.run(first, Some(30), &AtomicBool::new(false), None, &mut |_, _| {
            // After measured cycle 9, CN 2 is sent to PRE_OPERATIONAL_2,
            // and stays there (nothing in the measurement starts it). The
            // command goes out three times: a veth drops a frame without a
            // word when the receiving CPU's backlog is full (other tests on
            // loopback share it), and a CN already in PRE_OPERATIONAL_2
            // refuses the repeats.
            if (9..=11).contains(&cycle) {
                let cmd = jitterlab_core::powerlink::Frame::ASnd(
                    jitterlab_core::powerlink::ASnd {
                        dest: 2,
                        src: jitterlab_core::powerlink::MN_NODE,
                        service: jitterlab_core::powerlink::ASndService::NmtCommand(
                            jitterlab_core::powerlink::NmtCommand {
                                id: jitterlab_core::powerlink::NmtCommandId::ENTER_PRE_OPERATIONAL_2,
                                data: &[],
                            },
                        ),
                    },
                );
                let n = jitterlab_core::powerlink::encode(&cmd, cn_mac, mn_mac, &mut buf).unwrap();
                other.send(&buf[..n]).unwrap();
            }
            cycle += 1;
        });
        stop.store(true, Relaxed);
        cn.join().unwrap();
        measured
    });
    let cycles = measured.schedule.cycles;
    assert_eq!(
        measured.outages.len(),
        1,
        "{measured:?}\nCN side: {:?}",
        emulator.report()
    );
    let o = &measured.outages[0];
    assert_eq!((o.node, o.code, o.back), (2, 0x5D, false), "{o:?}");
    assert_eq!(o.state, "NMT_CS_PRE_OPERATIONAL_2");
    // Seen in the cycle after the first command that arrived, or the one
    // after (a VM stall).
    assert!((10..=13).contains(&o.cycle), "{o:?}");
    assert_eq!(o.cycles, cycles - o.cycle, "{o:?}");
    assert!(
        o.at_ns >= 9 * 2_000_000 && o.at_ns < cycles * 2_000_000,
        "{o:?}"
    );
    assert_eq!(measured.untold_outages, 0);
    drop(emulator);
    pair.teardown().unwrap();
}

/// `run netcycle` and `analyze` count the same cycles over T0 when every
/// PRes came within the response timeout: cycles the
/// managing node measured, and the frames a capture of them holds (the SoC
/// and the SoA at their send stamps, the PRes at its receive stamp), give
/// the same count through the one test, `over_t0`.
#[test]
fn netcycle_and_analyze_count_the_same_cycles_over_t0() {
    use jitterlab_core::powerlink::analyze::Analyzer;
    use jitterlab_core::powerlink::{
        encode, Frame, NmtState, PRes, RequestedService, Soa, Soc, EPL_VERSION,
    };
    let t0 = 1_000_000u64;
    // (SoC → last PRes, SoC → SoA) of each cycle, ns: over T0 when the
    // later of the two is more than 1 ms after the SoC.
    let shapes: [(Option<u64>, u64); 6] = [
        (Some(300_000), 400_000),
        (Some(900_000), 1_000_000),   // exactly T0: not over
        (Some(1_000_001), 1_000_500), // the PRes after T0
        (Some(200_000), 1_200_000),   // the SoA after T0
        (None, 1_500_000),            // no PRes, the SoA after T0
        (Some(100_000), 150_000),
    ];
    let base_real = 1_800_000_000_000_000_000u64;
    let base_mono = 5_000_000_000u64;
    let mut analyzer = Analyzer::new(Some(t0));
    let mut frame = [0u8; MAX_FRAME_LEN];
    let mut push = |a: &mut Analyzer, ts: u64, f: Frame<'_>| {
        let dst = f.multicast_mac().unwrap_or([2, 0, 0, 0, 0, 1]);
        let n = encode(&f, dst, [2, 0, 0, 0, 0, 0xF0], &mut frame).unwrap();
        a.push(ts, &frame[..n]);
    };
    let mut netcycle = 0u64;
    for (k, &(pres, soa)) in shapes.iter().enumerate() {
        // Each SoC 2 ms after the one before.
        let at = k as u64 * 2_000_000;
        let c = mn::Cycle {
            soc_mono: base_mono + at,
            soc_real: base_real + at,
            soc_hw: None,
            last_pres: mn::Stamps {
                soft: pres.map(|p| base_real + at + p),
                hw: None,
            },
            soa_mono: base_mono + at + soa,
        };
        netcycle += u64::from(cycle_over_t0(&c, t0));
        push(&mut analyzer, c.soc_real, Frame::Soc(Soc::default()));
        if let Some(p) = c.last_pres.soft {
            let f = Frame::PRes(PRes {
                node: 1,
                nmt: NmtState::CS_OPERATIONAL,
                ms: false,
                en: false,
                rd: true,
                pr: 0,
                rs: 0,
                pdo_version: 0,
                payload: &[0; 6],
            });
            push(&mut analyzer, p, f);
        }
        let soa_frame = Frame::Soa(Soa {
            nmt: NmtState::MS_OPERATIONAL,
            ea: false,
            er: false,
            service: RequestedService::NO_SERVICE,
            target: 0,
            epl_version: EPL_VERSION,
        });
        push(&mut analyzer, base_real + at + soa, soa_frame);
    }
    let a = analyzer.finish();
    assert_eq!(netcycle, 3);
    assert_eq!((a.late_cycles, a.closed_cycles), (Some(3), 6));
}
