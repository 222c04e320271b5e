//! Networks jitterlab makes for itself: namespace test hosts and the
//! network flood neighbour.
//!
//! [Baumgartner POWERLINK] measures a cyclic Ethernet master under a "network flood",
//! [Xu EPICS] an I/O controller under network load. jitterlab reproduces that load
//! without ever sending a packet to anything it did not create: two network
//! namespaces joined by a veth pair ([`hosts`]), addressed from the
//! benchmarking range 198.18.0.0/15 (RFC 2544), with a UDP flood sent from
//! one (the "tx" namespace) to a sink in the other (the "rx" namespace, the
//! probe's namespace) ([`flood`]). The flood refuses any other destination
//! but loopback, as a second line of defence.
//!
//! Where the receive work runs matters more than the packets themselves: a
//! veth pair hands each packet to the peer's backlog on the *sending* CPU,
//! and the `NET_RX` softirq that processes it runs there too — unless
//! Receive Packet Steering (RPS, `/sys/class/net/IFACE/queues/rx-0/rps_cpus`)
//! moves it onto the CPUs a scenario names. The sink sets that mask inside
//! the rx namespace, so it disappears with the namespace; the per-CPU
//! `NET_RX` counts of `/proc/softirqs` (`system::counters`) show where the
//! work landed.
//!
//! The `roundtrip` probe ([Red Hat controls]) sends OPC UA PubSub messages between an
//! I/O simulator and a controller in a pair of its own (made by [`hosts`],
//! declared in its core folder), over UDP multicast or raw Ethernet, through the
//! sockets of [`pubsub`], which carry the kernel's receive and transmit
//! stamps. Over raw Ethernet it, and the `netcycle` probe's POWERLINK
//! frames, address the peer by its MAC address, read by [`mac`].
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod flood;
pub mod hosts;
pub mod mac;
pub mod pcap;
pub mod pubsub;
pub mod rps;
