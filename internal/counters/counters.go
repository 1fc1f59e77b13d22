// Package counters is the one table of RDMA port counters: for each, its
// sysfs file, the name the PMA (perfquery, ibqueryerrors) gives it, its
// width, whether it counts errors or data, its unit and scale, and the
// Prometheus metric it becomes. doctor, fabric check, the test tree
// builder and the exporter all read this table, so a counter is named and
// judged the same way everywhere.
package counters

import "math"

// Kind says what a counter counts.
type Kind int

// Kinds of counter.
const (
	Data       Kind = iota // bytes moved
	Packets                // packets moved
	Error                  // a non-zero value means trouble
	Congestion             // signs of congestion (waits, CNPs, ECN marks): context, not failure
	Other
)

// Family is where the counter lives.
type Family int

// Families.
const (
	// PortCounters are the IBTA PMA counters, in sysfs under
	// ports/N/counters/ and queried over the fabric by perfquery.
	PortCounters Family = iota
	// HWCounters are the driver's counters under ports/N/hw_counters/
	// (mlx5: RoCE and transport retries, congestion).
	HWCounters
)

// Counter is one row of the table.
type Counter struct {
	Sysfs  string // file name under counters/ or hw_counters/
	PMA    string // perfquery/ibqueryerrors name, "" when the PMA has none
	Family Family
	Kind   Kind
	// WidthBits is the PMA field's width: a counter at 2^width−1 has
	// stopped counting (saturated) and its true value is unknown. 64 for
	// the extended counters sysfs prints.
	WidthBits int
	// Scale turns the raw value into Unit: the data counters count 32-bit
	// words (octets ÷ 4), so bytes are raw × 4.
	Scale float64
	Unit  string // "bytes", "packets", "events", "ticks"
	// Metric is the Prometheus name after the exporter's prefix and
	// subsystem, as node_exporter's infiniband collector names it.
	Metric string
	Help   string
}

// Max is the largest value the PMA field holds.
func (c Counter) Max() uint64 {
	if c.WidthBits >= 64 {
		return math.MaxUint64
	}
	return 1<<c.WidthBits - 1
}

// Saturated reports a value at the field's maximum.
func (c Counter) Saturated(v uint64) bool { return c.WidthBits < 64 && v >= c.Max() }

// Table is every counter rdmalab knows, PortCounters first.
var Table = []Counter{
	{"symbol_error", "SymbolErrorCounter", PortCounters, Error, 16, 1, "events", "symbol_error_total", "Number of minor link errors detected on one or more physical lanes"},
	{"link_error_recovery", "LinkErrorRecoveryCounter", PortCounters, Error, 8, 1, "events", "link_error_recovery_total", "Number of times the link successfully recovered from an error state"},
	{"link_downed", "LinkDownedCounter", PortCounters, Error, 8, 1, "events", "link_downed_total", "Number of times the link failed to recover from an error state and went down"},
	{"port_rcv_errors", "PortRcvErrors", PortCounters, Error, 16, 1, "packets", "port_errors_received_total", "Number of packets containing an error that were received on this port"},
	{"port_rcv_remote_physical_errors", "PortRcvRemotePhysicalErrors", PortCounters, Error, 16, 1, "packets", "port_receive_remote_physical_errors_total", "Number of packets marked with the EBP delimiter received on the port"},
	{"port_rcv_switch_relay_errors", "PortRcvSwitchRelayErrors", PortCounters, Error, 16, 1, "packets", "port_receive_switch_relay_errors_total", "Number of packets received on the port that were discarded because they could not be forwarded by the switch relay"},
	{"port_xmit_discards", "PortXmitDiscards", PortCounters, Error, 16, 1, "packets", "port_discards_transmitted_total", "Number of outbound packets discarded by the port because the port is down or congested"},
	{"port_xmit_constraint_errors", "PortXmitConstraintErrors", PortCounters, Error, 8, 1, "packets", "port_constraint_errors_transmitted_total", "Number of packets not transmitted from the switch physical port"},
	{"port_rcv_constraint_errors", "PortRcvConstraintErrors", PortCounters, Error, 8, 1, "packets", "port_constraint_errors_received_total", "Number of packets received on the switch physical port that are discarded"},
	{"local_link_integrity_errors", "LocalLinkIntegrityErrors", PortCounters, Error, 4, 1, "events", "local_link_integrity_errors_total", "Number of times that the count of local physical errors exceeded the threshold"},
	{"excessive_buffer_overrun_errors", "ExcessiveBufferOverrunErrors", PortCounters, Error, 4, 1, "events", "excessive_buffer_overrun_errors_total", "Number of times that consecutive flow control update periods had buffer overruns"},
	{"VL15_dropped", "VL15Dropped", PortCounters, Error, 16, 1, "packets", "vl15_dropped_total", "Number of incoming VL15 packets dropped due to resource limitations"},
	{"port_xmit_wait", "PortXmitWait", PortCounters, Congestion, 32, 1, "ticks", "port_transmit_wait_total", "Number of ticks during which the port had data to transmit but no data was sent during the entire tick"},
	{"port_xmit_data", "PortXmitData", PortCounters, Data, 64, 4, "bytes", "port_data_transmitted_bytes_total", "Number of data octets transmitted on all links"},
	{"port_rcv_data", "PortRcvData", PortCounters, Data, 64, 4, "bytes", "port_data_received_bytes_total", "Number of data octets received on all links"},
	{"port_xmit_packets", "PortXmitPkts", PortCounters, Packets, 64, 1, "packets", "port_packets_transmitted_total", "Number of packets transmitted on all VLs from this port (including errors)"},
	{"port_rcv_packets", "PortRcvPkts", PortCounters, Packets, 64, 1, "packets", "port_packets_received_total", "Number of packets received on all VLs by this port (including errors)"},
	{"unicast_xmit_packets", "PortUnicastXmitPkts", PortCounters, Packets, 64, 1, "packets", "unicast_packets_transmitted_total", "Number of unicast packets transmitted (including errors)"},
	{"unicast_rcv_packets", "PortUnicastRcvPkts", PortCounters, Packets, 64, 1, "packets", "unicast_packets_received_total", "Number of unicast packets received (including errors)"},
	{"multicast_xmit_packets", "PortMulticastXmitPkts", PortCounters, Packets, 64, 1, "packets", "multicast_packets_transmitted_total", "Number of multicast packets transmitted (including errors)"},
	{"multicast_rcv_packets", "PortMulticastRcvPkts", PortCounters, Packets, 64, 1, "packets", "multicast_packets_received_total", "Number of multicast packets received (including errors)"},

	// mlx5 hw_counters: transport trouble (errors) and congestion control,
	// with the metric names node_exporter v1.11 gives them.
	{"out_of_buffer", "", HWCounters, Error, 64, 1, "events", "out_of_buffer_drops_total", "Number of drops because the receive queue had no WQE (receiver too slow)"},
	{"out_of_sequence", "", HWCounters, Error, 64, 1, "packets", "out_of_sequence_packets_received_total", "Number of out-of-sequence packets received"},
	{"packet_seq_err", "", HWCounters, Error, 64, 1, "events", "packet_sequence_errors_total", "Number of received NAK sequence error packets"},
	{"local_ack_timeout_err", "", HWCounters, Error, 64, 1, "events", "local_ack_timeout_errors_total", "Number of times the QP ack timer expired for RC, XRC, DCT QPs at the sender side"},
	{"rnr_nak_retry_err", "", HWCounters, Error, 64, 1, "events", "rnr_nak_retry_packets_received_total", "Number of received RNR NAK packets that exceeded the retry limit"},
	{"req_transport_retries_exceeded", "", HWCounters, Error, 64, 1, "events", "req_transport_retries_exceeded_total", "Number of times the transport retry limit was exceeded"},
	{"implied_nak_seq_err", "", HWCounters, Error, 64, 1, "events", "implied_nak_seq_errors_total", "Number of times the requester detected an ACK with a PSN larger than expected"},
	{"duplicate_request", "", HWCounters, Other, 64, 1, "packets", "duplicate_requests_packets_total", "Number of received duplicate request packets"},
	{"np_cnp_sent", "", HWCounters, Congestion, 64, 1, "packets", "np_cnp_packets_sent_total", "Number of congestion notification packets sent by the notification point"},
	{"rp_cnp_handled", "", HWCounters, Congestion, 64, 1, "packets", "rp_cnp_packets_handled_total", "Number of congestion notification packets handled by the reaction point"},
	{"np_ecn_marked_roce_packets", "", HWCounters, Congestion, 64, 1, "packets", "np_ecn_marked_roce_packets_received_total", "Number of RoCEv2 packets received marked with ECN congestion"},
	{"rx_icrc_encapsulated", "", HWCounters, Error, 64, 1, "packets", "rx_icrc_encapsulated_errors_total", "Number of RoCE packets with an ICRC error"},

	// The rest of the mlx5 hw_counters node_exporter v1.11 exports, with its names.
	{"rp_cnp_ignored", "", HWCounters, Congestion, 64, 1, "packets", "rp_cnp_ignored_packets_received_total", "Number of CNPs received and ignored by the reaction point (rising: ECN reaction is off on the sender)"},
	{"req_cqe_error", "", HWCounters, Error, 64, 1, "events", "req_cqes_errors_total", "Number of times the requester detected CQEs completed with errors"},
	{"req_cqe_flush_error", "", HWCounters, Other, 64, 1, "events", "req_cqes_flush_errors_total", "Number of times the requester detected CQEs completed with flushed errors"},
	{"req_remote_access_errors", "", HWCounters, Error, 64, 1, "events", "req_remote_access_errors_total", "Number of times the requester detected remote access errors"},
	{"req_remote_invalid_request", "", HWCounters, Error, 64, 1, "events", "req_remote_invalid_request_errors_total", "Number of times the requester detected remote invalid request errors"},
	{"resp_cqe_error", "", HWCounters, Error, 64, 1, "events", "resp_cqes_errors_total", "Number of times the responder detected CQEs completed with errors"},
	{"resp_cqe_flush_error", "", HWCounters, Other, 64, 1, "events", "resp_cqes_flush_errors_total", "Number of times the responder detected CQEs completed with flushed errors"},
	{"resp_local_length_error", "", HWCounters, Error, 64, 1, "events", "resp_local_length_errors_total", "Number of times the responder detected local length errors"},
	{"resp_remote_access_errors", "", HWCounters, Error, 64, 1, "events", "resp_remote_access_errors_total", "Number of times the responder detected remote access errors"},
	{"roce_adp_retrans", "", HWCounters, Congestion, 64, 1, "events", "roce_adp_retransmits_total", "Number of adaptive retransmissions for RoCE traffic"},
	{"roce_adp_retrans_to", "", HWCounters, Congestion, 64, 1, "events", "roce_adp_retransmits_timeout_total", "Number of times RoCE traffic reached a timeout during adaptive retransmission"},
	{"roce_slow_restart", "", HWCounters, Congestion, 64, 1, "events", "roce_slow_restart_used_total", "Number of times RoCE slow restart was used"},
	{"roce_slow_restart_cnps", "", HWCounters, Congestion, 64, 1, "packets", "roce_slow_restart_cnps_total", "Number of CNPs RoCE slow restart generated"},
	{"roce_slow_restart_trans", "", HWCounters, Congestion, 64, 1, "events", "roce_slow_restart_total", "Number of times RoCE slow restart changed state to slow restart"},
	{"rx_atomic_requests", "", HWCounters, Packets, 64, 1, "packets", "rx_atomic_requests_total", "Number of ATOMIC requests received for the associated QPs"},
	{"rx_dct_connect", "", HWCounters, Packets, 64, 1, "packets", "rx_dct_connect_requests_total", "Number of connection requests received for the associated DCTs"},
	{"rx_read_requests", "", HWCounters, Packets, 64, 1, "packets", "rx_read_requests_total", "Number of READ requests received for the associated QPs"},
	{"rx_write_requests", "", HWCounters, Packets, 64, 1, "packets", "rx_write_requests_total", "Number of WRITE requests received for the associated QPs"},
}

// BySysfs finds a counter by its sysfs file name within a family.
func BySysfs(f Family, name string) (Counter, bool) {
	for _, c := range Table {
		if c.Family == f && c.Sysfs == name {
			return c, true
		}
	}
	return Counter{}, false
}

// ByPMA finds a counter by its perfquery/ibqueryerrors name.
func ByPMA(name string) (Counter, bool) {
	for _, c := range Table {
		if c.PMA != "" && c.PMA == name {
			return c, true
		}
	}
	return Counter{}, false
}

// Select returns the counters of a family and kind, in table order.
func Select(f Family, k Kind) []Counter {
	var out []Counter
	for _, c := range Table {
		if c.Family == f && c.Kind == k {
			out = append(out, c)
		}
	}
	return out
}
