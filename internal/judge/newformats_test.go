package judge

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The formats added this turn (rdma link, rdma statistic, lspci -vvv) on
// their real captures: the check, the subject (the device or PCI
// function the capture names) and the outcome, and twins edited from the
// same captures showing the fault found, or the healthy case passing.

type want struct {
	check, subject string
	outcome        check.Outcome
}

func capture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// judged judges b as the file called name and checks its format and that
// every wanted finding is there and nothing else fails or warns.
func judged(t *testing.T, name string, b []byte, format string, ws ...want) Result {
	t.Helper()
	r, err := One(name, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != format {
		t.Fatalf("read as %q, want %q", r.Format, format)
	}
	for _, w := range ws {
		if !slices.ContainsFunc(r.Findings, func(f check.Finding) bool {
			return f.Check == w.check && f.Subject == w.subject && f.Outcome == w.outcome
		}) {
			t.Errorf("no %s %s on %q", w.outcome, w.check, w.subject)
		}
	}
	for _, f := range r.Findings {
		if (f.Outcome == check.Fail || f.Outcome == check.Warn) && !slices.ContainsFunc(ws, func(w want) bool {
			return f.Check == w.check && f.Subject == w.subject && f.Outcome == w.outcome
		}) {
			t.Errorf("unexpected %s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
		}
	}
	if t.Failed() {
		for _, f := range r.Findings {
			t.Logf("  %s %s %q: %s", f.Outcome, f.Check, f.Subject, f.Message)
		}
	}
	return r
}

const (
	rdmaLinkCapture  = "rdma-tool/asus-gx10-gb10-blog_rdma-link-show_4-roce-functions-2-pcie-domains_all-ACTIVE.txt"
	rdmaStatCapture  = "rdma-tool/iproute2-rdma-stat-cover-letter-2019_mlx5_0_rdma-stat-show-mail-wrapped_and-pretty-p-tabs.txt"
	rdmaQPCapture    = "rdma-tool/iproute2-rdma-stat-qp-patch_mlx5_2-qp-counter-lqpn178_and-rocep1s0f5-stat-show_commit-message-wrapped.txt"
	lspciHDACapture  = "lspci/alsa-devel-2023_nvidia-gpu-hda-function-10fa_D3_LnkSta-2.5GT-downgraded-of-8GT-x16_mail-wrapped-spaces.txt"
	lspciACSCapture  = "lspci/rccl-issue-547_epyc-gpp-bridge-40-01.1_lspci-vvv-ACSCtl-excerpt-author-dots_plus-lspci-tv-cx6-and-mi100-behind-switches.txt"
	rdmaResourceShow = "rdma-tool/h100-nvme-rdma-readme_rdma-resource-show-qp_2-RC-QPs-RTS_author-trimmed-columns.txt"
	lspciDellCapture = "topology-misc/gpud/lspci-vvv_dell-h100-pex890xx.txt"
)

// rdma link show: four RoCE functions on two PCIe domains, all ACTIVE /
// LINK_UP, read into ports the port rules judge; every port down is the
// host's failure, one polling among up ports is a port whose intent the
// listing cannot tell (unknown, not a pass).
func TestRDMALinkShow(t *testing.T) {
	b := capture(t, rdmaLinkCapture)
	var up []want
	for _, d := range []string{"rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"} {
		up = append(up, want{"port.state", d + " port 1", check.Pass})
	}
	judged(t, "gx10-rdma-link.txt", b, "rdma link", up...)

	// Through pdsh (a "host: " before each line), with CRLF line ends.
	pdsh := regexp.MustCompile(`(?m)^`).ReplaceAllString(strings.TrimSpace(string(b)), "gx10: ")
	judged(t, "pdsh.txt", []byte(strings.ReplaceAll(pdsh, "\n", "\r\n")), "rdma link", up...)

	down := strings.ReplaceAll(string(b), "state ACTIVE physical_state LINK_UP", "state DOWN physical_state DISABLED")
	var fails []want
	for _, w := range up {
		fails = append(fails, want{w.check, w.subject, check.Fail})
	}
	judged(t, "gx10-down.txt", []byte(down), "rdma link", fails...)

	poll := strings.Replace(string(b), "state ACTIVE physical_state LINK_UP netdev enp1s0f1np1", "state DOWN physical_state POLLING netdev enp1s0f1np1", 1)
	// Polling beside an Active function of the same PCI slot (rocep1s0f0,
	// read from udev's predictable name): a spare left uncabled.
	r := judged(t, "gx10-poll.txt", []byte(poll), "rdma link", append(slices.Clone(up[:1]), want{"port.state", "rocep1s0f1 port 1", check.Pass})...)
	for _, f := range r.Findings {
		if f.Subject == "rocep1s0f1 port 1" && !strings.Contains(f.Message, "unused") {
			t.Errorf("the Polling spare: %s", f.Message)
		}
	}
}

// rdma statistic show, wrapped by the mail archive and again with -p:
// mlx5_0 port 1's hw_counters, all zero; a twin with out_of_buffer
// non-zero warns on that port naming the counter.
func TestRDMAStatistic(t *testing.T) {
	b := capture(t, rdmaStatCapture)
	judged(t, "stat.txt", b, "rdma statistic", want{"port.errors", "mlx5_0 port 1", check.Pass})

	oob := strings.Replace(string(b), "\tout_of_buffer 0", "\tout_of_buffer 1234", 1)
	oob = strings.Replace(oob, "0 out_of_buffer 0 ", "0 out_of_buffer 1234 ", 1)
	r := judged(t, "stat-oob.txt", []byte(oob), "rdma statistic", want{"port.errors", "mlx5_0 port 1", check.Warn})
	for _, f := range r.Findings {
		if f.Check == "port.errors" && !strings.Contains(f.Message, "out_of_buffer=1234") {
			t.Errorf("the finding does not name the counter: %s", f.Message)
		}
	}
}

// rdma link and rdma statistic pasted together (one command after the
// other): the link reader reads the counters too, and both rules judge.
func TestRDMALinkWithStatistic(t *testing.T) {
	both := string(capture(t, rdmaLinkCapture)) + "$ rdma statistic show link rocep1s0f0/1\n" +
		"link rocep1s0f0/1 rx_write_requests 0 out_of_buffer 7 packet_seq_err 0\nlocal_ack_timeout_err 0\n"
	judged(t, "both.txt", []byte(both), "rdma link",
		want{"port.state", "rocep1s0f0 port 1", check.Pass}, want{"port.state", "rocep1s0f1 port 1", check.Pass},
		want{"port.errors", "rocep1s0f0 port 1", check.Warn})
}

// A QP counter object (rdma statistic qp show) counts one process's QPs,
// not mlx5_2's port: skipped and named with its line; the port shown
// after it (rocep1s0f5/1, wrapped by the commit message) is judged.
func TestRDMAStatisticSkipsQPCounters(t *testing.T) {
	r := judged(t, "qp.txt", capture(t, rdmaQPCapture), "rdma statistic", want{"port.errors", "rocep1s0f5 port 1", check.Pass})
	if len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "line 2") || !strings.Contains(r.Skipped[0], "mlx5_2/1") {
		t.Errorf("skipped %q, want the QP counter of mlx5_2/1 at line 2", r.Skipped)
	}
	for _, f := range r.Findings {
		if strings.Contains(f.Subject, "mlx5_2") {
			t.Errorf("the QP counter was judged as the port's: %s %s", f.Check, f.Subject)
		}
	}
}

// `rdma resource show qp` is no format rdmalab reads: refused by name.
func TestRDMAResourceShowIsNotAFormat(t *testing.T) {
	if _, err := One("qp.txt", capture(t, rdmaResourceShow), Options{}); err == nil || !strings.Contains(err.Error(), "not a saved output") {
		t.Errorf("rdma resource show read: %v", err)
	}
}

// lspci -vvv of an NVIDIA GPU's HD audio function (mail-wrapped): its
// link reads (2.5 GT/s x16 of 8 GT/s x16, power state D3) but the
// function is neither a NIC nor a GPU, so nothing is judged and the file
// says so (the verdict is then unproven, never healthy). Twins from the
// same text: a ConnectX-6 at x8 of x16 fails pcie.link.degraded on its
// function, at x16 passes; an A100 idling at Gen1 of Gen3 warns.
func TestLspciLinks(t *testing.T) {
	b := string(capture(t, lspciHDACapture))
	r := judged(t, "hda.txt", []byte(b), "lspci -vvv")
	if len(r.Findings) != 0 || len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "0000:01:00.1") || !strings.Contains(r.Skipped[0], "2.5 GT/s x16 of 8 GT/s x16, in power state D3") {
		t.Errorf("findings %v, skipped %q", r.Findings, r.Skipped)
	}

	nic := strings.Replace(b, "01:00.1 Audiodevice: NVIDIA Corporation Device 10fa (rev a1)", "41:00.0 Ethernet controller: Mellanox Technologies MT28908 Family [ConnectX-6]", 1)
	nic = strings.Replace(nic, "LnkCap: Port #0, Speed 8GT/s, Width x16", "LnkCap: Port #0, Speed 16GT/s, Width x16", 1)
	bad := strings.Replace(nic, "LnkSta: Speed 2.5GT/s (downgraded), Width x16", "LnkSta: Speed 16GT/s, Width x8 (downgraded)", 1)
	r = judged(t, "cx6-x8.txt", []byte(bad), "lspci -vvv", want{"pcie.link.degraded", "0000:41:00.0", check.Fail})
	if f := r.Findings[0]; !strings.Contains(f.Message, "x8") || !strings.Contains(f.Message, "x16") || len(f.Fix) == 0 {
		t.Errorf("%s: %s (fix %q)", f.Check, f.Message, f.Fix)
	}
	// lspci -vvvnn: class code and ids in brackets.
	nn := strings.Replace(bad, "41:00.0 Ethernet controller: Mellanox Technologies MT28908 Family [ConnectX-6]", "41:00.0 Ethernet controller [0200]: Mellanox Technologies MT28908 Family [ConnectX-6] [15b3:101b]", 1)
	judged(t, "cx6-nn.txt", []byte(nn), "lspci -vvv", want{"pcie.link.degraded", "0000:41:00.0", check.Fail})
	// The same paste with its indentation lost reads the same.
	flat := regexp.MustCompile(`(?m)^[ \t]+`).ReplaceAllString(bad, "")
	judged(t, "cx6-x8-flat.txt", []byte(flat), "lspci -vvv", want{"pcie.link.degraded", "0000:41:00.0", check.Fail})
	good := strings.Replace(nic, "LnkSta: Speed 2.5GT/s (downgraded), Width x16", "LnkSta: Speed 16GT/s, Width x16", 1)
	judged(t, "cx6-x16.txt", []byte(good), "lspci -vvv", want{"pcie.link.degraded", "0000:41:00.0", check.Pass})

	gpu := strings.Replace(b, "01:00.1 Audiodevice: NVIDIA Corporation Device 10fa (rev a1)", "01:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)", 1)
	judged(t, "a100-idle.txt", []byte(gpu), "lspci -vvv", want{"pcie.link.degraded", "0000:01:00.0", check.Warn})
}

// The rccl issue's excerpt: a root port's ACS control, cut with the
// author's dots, then an lspci -tv tree. Its ACSCtl is read as printed
// (ReqRedir+ CmpltRedir+) and named as read but not judged: the host
// model holds no ACS for gpudirect.acs yet. Nothing is judged, so the
// verdict is unproven.
func TestLspciACSRead(t *testing.T) {
	r := judged(t, "rccl.txt", capture(t, lspciACSCapture), "lspci -vvv")
	p, ok := r.Payload.(pciePayload)
	if !ok || len(p.PCIDevices) != 1 || p.PCIDevices[0].Address.String() != "0000:40:01.1" || p.PCIDevices[0].NUMANode != 1 {
		t.Fatalf("payload %+v", r.Payload)
	}
	if len(p.PCIeControl) != 1 {
		t.Fatalf("ACS control %+v", p.PCIeControl)
	}
	acs := p.PCIeControl[0].ACSCtl
	if !acs["ReqRedir"] || !acs["CmpltRedir"] || !acs["SrcValid"] || acs["TransBlk"] || acs["EgressCtrl"] {
		t.Errorf("ACSCtl %v", acs)
	}
	if !slices.ContainsFunc(r.Skipped, func(s string) bool {
		return strings.Contains(s, "ACS redirect on 0000:40:01.1 (line 7) ReqRedir+ CmpltRedir+")
	}) {
		t.Errorf("skipped %q", r.Skipped)
	}
}

// A whole lspci -vvv of a Dell 8×H100 server (gpud's test data): every
// H100 and every ConnectX function at its full link passes, the verdict is
// healthy. The two BCM5720 management ports at x1 of x2 (tg3, no RDMA)
// are what doctor would not judge either: named as skipped, with their
// link, never failed. ACS redirect on the Switchtec ports is read.
func TestLspciWholeServer(t *testing.T) {
	var ws []want
	for _, a := range []string{"19:00.0", "3b:00.0", "4c:00.0", "5d:00.0", "9b:00.0", "bb:00.0", "cb:00.0", "db:00.0", // H100
		"1a:00.0", "3c:00.0", "4d:00.0", "5e:00.0", "9c:00.0", "bc:00.0", "cc:00.0", "dc:00.0", // ConnectX-7
		"1b:00.0", "1b:00.1", "9d:00.0", "9d:00.1"} { // ConnectX-6 Dx
		ws = append(ws, want{"pcie.link.degraded", "0000:" + a, check.Pass})
	}
	r := judged(t, "dell.txt", capture(t, lspciDellCapture), "lspci -vvv", ws...)
	if n := len(r.Findings); n != len(ws) {
		t.Errorf("%d findings, want %d", n, len(ws))
	}
	for _, want := range []string{"line 460: 0000:01:00.0 (Ethernet controller): driver tg3: not an RDMA NIC or a GPU, not judged; its link 5 GT/s x1 of 5 GT/s x2",
		"ACS redirect on 0000:82:00.0 (line 8705) ReqRedir+ CmpltRedir+"} {
		if !slices.ContainsFunc(r.Skipped, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("skipped lacks %q: %q", want, r.Skipped)
		}
	}
}
