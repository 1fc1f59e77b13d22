package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// hrShared reads a real capture from ../shared/testdata.
func hrShared(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hrTemp writes text to a file named name in a test directory.
func hrTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// allMainDown is a real 8×CX-7 + 4×CX-6 Dx H100 host's ibstat with every
// MT4129 port set Down/Disabled: the host's main NICs are all down while
// its four other ports run (issue 34, item 11).
func allMainDown(t *testing.T) string {
	t.Helper()
	text := hrShared(t, "ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt")
	var out []string
	cx7 := false
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "CA type:") {
			cx7 = strings.Contains(l, "MT4129")
		}
		if cx7 {
			l = strings.Replace(l, "State: Active", "State: Down", 1)
			l = strings.Replace(l, "Physical state: LinkUp", "Physical state: Disabled", 1)
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func TestJudgeAllPortsOfMainModelDownFails(t *testing.T) {
	out, errOut, code := run(t, "judge", hrTemp(t, "ibstat.txt", allMainDown(t)))
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out, errOut)
	}
	for _, want := range []string{"mlx5_0 port 1", "all 8 ports of this host's MT4129 NICs are down"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The healthy twin: the same host as captured, every port up.
	out, errOut, code = run(t, "judge", filepath.Join(testhost.SharedTestdata(t), "ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt"))
	if code != ExitOK {
		t.Fatalf("healthy twin: exit %d\n%s%s", code, out, errOut)
	}
	// Spare storage ports down beside the running main NICs: unused, exit 0.
	out, errOut, code = run(t, "judge", filepath.Join(testhost.SharedTestdata(t), "ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.0.txt"))
	if code != ExitOK {
		t.Fatalf("spare ports: exit %d\n%s%s", code, out, errOut)
	}
}

// spiderpoolTwoPorts is the real spiderpool QoS query (eth0 / mlx5_0:
// trust dscp, PFC on 5, ECN on every priority, traffic_class 160) with a
// second port appended that edit changed: a host whose two ports differ.
func spiderpoolTwoPorts(t *testing.T, edit func(string) string) string {
	t.Helper()
	text := hrShared(t, "roce-sysfs/spiderpool-rdma-qos-doc_eth0-mlx5_0_qos-query_ecn-np-rp-enable-all-prios_cnp-dscp48_tclass160_md-indented.txt")
	_, block, _ := strings.Cut(text, "./set-rdma-qos.sh q\n")
	second := strings.NewReplacer("eth0", "eth1", "mlx5_0", "mlx5_1").Replace(block)
	return text + edit(second)
}

func TestJudgeRoCEQoSPerPort(t *testing.T) {
	// ECN off on every priority of mlx5_1 while mlx5_0 runs it on the
	// RoCE priority (5): a finding on mlx5_1, not an unknown.
	ecnOff := spiderpoolTwoPorts(t, func(s string) string { return strings.ReplaceAll(s, " = 1\n", " = 0\n") })
	out, errOut, code := run(t, "judge", hrTemp(t, "qos.txt", ecnOff))
	if code != ExitFindings || !strings.Contains(out, "mlx5_1 port 1 (eth1): ECN off on priority 5") || strings.Contains(out, "mlx5_0 port 1 (eth0): ECN off") {
		t.Errorf("ECN off on one port: exit %d\n%s%s", code, out, errOut)
	}
	// traffic_class forced to 0 on mlx5_1: DSCP 0 is no RoCE class; the
	// fix sets the traffic class the other port uses, on mlx5_1, and never
	// moves PFC to priority 0.
	tc0 := spiderpoolTwoPorts(t, func(s string) string { return strings.Replace(s, "Global tclass=160", "Global tclass=0", 1) })
	out, errOut, code = run(t, "judge", hrTemp(t, "qos.txt", tc0))
	for _, want := range []string{"mlx5_1 port 1 (eth1): traffic_class 0 → DSCP 0 → priority 0", "DSCP 0 is no standard RoCE class", "echo 160 > /sys/class/infiniband/mlx5_1/tc/1/traffic_class"} {
		if !strings.Contains(out, want) {
			t.Errorf("traffic_class 0: output lacks %q", want)
		}
	}
	if code != ExitFindings || strings.Contains(out, "--pfc 1,") {
		t.Errorf("traffic_class 0: exit %d\n%s%s", code, out, errOut)
	}
	// The healthy twin: both ports configured alike.
	out, errOut, code = run(t, "judge", hrTemp(t, "qos.txt", spiderpoolTwoPorts(t, func(s string) string { return s })))
	if code != ExitOK {
		t.Errorf("healthy twin: exit %d\n%s%s", code, out, errOut)
	}
}

// A real `dcb pfc show` / `dcb app show` paste as people post it: the
// author's "<--" notes after the values, a comment line, re-indented,
// CRLF. It is read, the notes are named by line as skipped, and the rest
// is judged exactly as the clean capture is.
func TestJudgeDCBPasteWithNotes(t *testing.T) {
	rel := "dcb/roce-lab-gpuserver_cx3-ens6_after-config_dcb-pfc-prio3-on_dcb-app-dscp-AF31-3.txt"
	clean := hrShared(t, rel)
	warty := strings.NewReplacer(
		"3:on 4:off 5:off 6:off 7:off", "3:on 4:off 5:off 6:off 7:off   <-- only 3 is lossless",
		"dscp-prio AF31:3", "dscp-prio AF31:3  <-- RoCE traffic lands here",
	).Replace(clean)
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(warty, "\n"), "\n") {
		lines = append(lines, "    "+l)
	}
	warty = "# on gpuserver, after the config script\r\n" + strings.Join(lines, "\r\n") + "\r\n"
	out, errOut, code := run(t, "judge", hrTemp(t, "dcb.txt", warty))
	if code == ExitUsage {
		t.Fatalf("refused: %s", errOut)
	}
	for _, want := range []string{"line 4: note \"<-- only 3 is lossless\"", "line 7: note \"<-- RoCE traffic lands here\"", "trust dscp, priority 3 is lossless"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	cleanOut, _, cleanCode := run(t, "judge", filepath.Join(testhost.SharedTestdata(t), rel))
	if code != cleanCode {
		t.Errorf("exit %d, the clean capture's %d\n%s\n%s", code, cleanCode, out, cleanOut)
	}
}

// The same for a real mlnx_qos paste with notes on its lines.
func TestJudgeMlnxQosPasteWithNotes(t *testing.T) {
	rel := "mlnx_qos/sn2700-cx5-nfsrdma-blog_mce0_dcbx-firmware_trust-dscp_pfc-prio3_ets-50-50_buffer-row.txt"
	warty := strings.NewReplacer(
		"Priority trust state: dscp", "Priority trust state: dscp   # set by the script",
		"enabled     0   0   0   1   0   0   0   0", "enabled     0   0   0   1   0   0   0   0   <-- only 3",
	).Replace(hrShared(t, rel))
	out, errOut, code := run(t, "judge", hrTemp(t, "qos.txt", strings.ReplaceAll(warty, "\n", "\r\n")))
	_, _, cleanCode := run(t, "judge", filepath.Join(testhost.SharedTestdata(t), rel))
	if code != cleanCode || !strings.Contains(out, `line 2: note "# set by the script"`) || !strings.Contains(out, "PFC priorities = 3") {
		t.Errorf("exit %d (clean %d)\n%s%s", code, cleanCode, out, errOut)
	}
}

// A fix names the device and port it is about and never advises what
// the part cannot take: an Ethernet-only ConnectX-6 Dx gets no mlxconfig
// LINK_TYPE; a VPI ConnectX-6's second card port is P2.
func TestJudgeLinkLayerFixFitsThePart(t *testing.T) {
	dx := filepath.Join(testhost.SharedTestdata(t), "ibtools/ibstat/l2fwd-nv-issue-6_CX6Dx-RoCE-100_complete.txt")
	out, errOut, code := run(t, "judge", "--expect-link-layer", "IB", dx)
	if code != ExitFindings || !strings.Contains(out, "mlx5_0 port 1: link layer is RoCE (Ethernet), expected InfiniBand; ConnectX-6 Dx is Ethernet-only") || strings.Contains(out, "LINK_TYPE") {
		t.Errorf("CX-6 Dx expected IB: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "judge", "--expect-link-layer", "RoCE", dx); code != ExitOK {
		t.Errorf("healthy twin: exit %d\n%s%s", code, out, errOut)
	}
	vpi := filepath.Join(testhost.SharedTestdata(t), "ibtools/ibstat/nccl-tests-issue-350_n013_CX4Lx-eth_CX6-HDR-IB_complete.txt")
	out, errOut, code = run(t, "judge", "--expect-link-layer", "RoCE", vpi)
	if code != ExitFindings || !strings.Contains(out, "mlxconfig -d mlx5_3 set LINK_TYPE_P2=2") || !strings.Contains(out, "mlxconfig -d mlx5_2 set LINK_TYPE_P1=2") || strings.Contains(out, "<dev>") {
		t.Errorf("CX-6 VPI expected RoCE: exit %d\n%s%s", code, out, errOut)
	}
}

// Seed 000's VMs, pinned as plan vms writes them, on its host with and
// without its isolcpus/nohz_full: plan check fails each VM whose vCPUs the
// host does not isolate (exit 1), and passes the seed's own host (exit 0).
func TestPlanCheckVCPUsNotIsolated(t *testing.T) {
	dir := filepath.Join(testhost.TempDir(t), "lab")
	if out, errOut, code := run(t, "plan", "vms", "--snapshot", "example:seed000-epyc", "--vms", "2", "--dir", dir); code != ExitOK {
		t.Fatalf("plan vms: exit %d %s%s", code, out, errOut)
	}
	doms := []string{filepath.Join(dir, "vm00.xml"), filepath.Join(dir, "vm01.xml")}
	if out, errOut, code := run(t, append([]string{"plan", "check", "--root", testhost.WriteTree(t, testhost.Seed000())}, doms...)...); code != ExitOK {
		t.Errorf("seed 000's host: exit %d %s\n%s", code, errOut, out)
	}
	m := testhost.Seed000()
	m.Isolated, m.NohzFull = "", ""
	out, errOut, code := run(t, append([]string{"plan", "check", "--root", testhost.WriteTree(t, m)}, doms...)...)
	if code != ExitFindings {
		t.Errorf("no isolation: exit %d %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"vm.vcpu.isolated", "vm00", "vm01", "the host isolates no CPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A real 8×H200 `nvidia-smi topo -m` with GPU7's row and column gone (a
// GPU fallen off the bus): 7 GPUs joined all-to-all by NV18 fail
// topo.gpus (exit 1); the capture as taken passes it (exit 0).
func TestJudgeTopoMissingGPU(t *testing.T) {
	rel := "nvidia-smi-topo/gpu-comm-blog-zh_h200-8gpu-NV18_9nic-PIX-rails_mlx5_bond_0_author-reformatted-spaces-ruler-translated-legend.txt"
	var lines []string
	for _, l := range strings.Split(hrShared(t, rel), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "GPU7":
			continue
		case len(f) > 0 && f[0] == "GPU0": // the heading
			l = strings.Join(slices.Delete(f, 7, 8), "  ")
		case len(f) > 9 && (strings.HasPrefix(f[0], "GPU") || strings.HasPrefix(f[0], "NIC")) && !strings.HasSuffix(f[0], ":"):
			l = strings.Join(slices.Delete(f, 8, 9), "  ")
		}
		lines = append(lines, l)
	}
	out, errOut, code := run(t, "judge", hrTemp(t, "topo.txt", strings.Join(lines, "\n")))
	if code != ExitFindings || !strings.Contains(out, "7 GPUs joined all-to-all by NV18: an NVSwitch board holds 8") {
		t.Errorf("7 GPUs: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "judge", filepath.Join(testhost.SharedTestdata(t), rel)); code != ExitOK {
		t.Errorf("8 GPUs: exit %d\n%s%s", code, out, errOut)
	}
}

// One story per fact: on seed 000's RTX 3090 box, doctor, nccl env and
// plan vms give the same GPUDirect verdict from the same rule (GeForce:
// no GPUDirect RDMA), and doctor tells each GPU's path once (gpudirect.path,
// not affinity.gpu-nic beside it).
func TestGeForceOneGPUDirectStory(t *testing.T) {
	const why = "GeForce RTX 3090 is a consumer GPU: NVIDIA does not support GPUDirect RDMA on GeForce/TITAN"
	doctor, _, _ := run(t, "doctor", "--snapshot", "example:seed000-epyc")
	env, _, _ := run(t, "nccl", "env", "--snapshot", "example:seed000-epyc")
	plan, _, _ := run(t, "plan", "vms", "--snapshot", "example:seed000-epyc", "--vms", "2")
	for name, out := range map[string]string{"doctor": doctor, "nccl env": env, "plan vms": plan} {
		if !strings.Contains(out, why) {
			t.Errorf("%s does not say %q:\n%s", name, why, out)
		}
	}
	if strings.Contains(doctor, "affinity.gpu-nic") || strings.Count(doctor, "gpudirect.path") != 2 {
		t.Errorf("doctor tells the GPU paths more than once:\n%s", doctor)
	}
	if strings.Contains(env, "GDR off: path SYS") {
		t.Errorf("nccl env blames the path, not the GPU:\n%s", env)
	}
}

// One of several RoCE ports without a routable GID is a warning: the
// real three-device show_gids with mlx5_2's IPv4 GIDs gone (its address
// removed) warns on mlx5_2 alone, naming its netdev in the fix; the
// capture as taken passes; a host whose only RoCE port lacks one fails.
func TestJudgeOneRoCEPortWithoutRoutableGID(t *testing.T) {
	rel := "show_gids/rdma-bench-c-header-comment_star-prefixed_3dev-roce-v1-v2_tabs.txt"
	var lines []string
	for _, l := range strings.Split(hrShared(t, rel), "\n") {
		if strings.Contains(l, "mlx5_2") && strings.Contains(l, "26.110.178.29") {
			continue
		}
		l = strings.Replace(l, "n_gids_found=12", "n_gids_found=10", 1)
		lines = append(lines, l)
	}
	out, errOut, code := run(t, "judge", hrTemp(t, "gids.txt", strings.Join(lines, "\n")))
	if code != ExitOK || !strings.Contains(out, "mlx5_2 port 1: no RoCE v2 GID with an IPv4 address") || !strings.Contains(out, "2 of the host's 3 RoCE ports have one") ||
		!strings.Contains(out, "assign an IPv4 address to eth03") || !strings.Contains(out, "cma_roce_mode -d mlx5_2 -p 1 -m 2") {
		t.Errorf("one port without: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "judge", filepath.Join(testhost.SharedTestdata(t), rel)); code != ExitOK {
		t.Errorf("as taken: exit %d\n%s%s", code, out, errOut)
	}
	only := filepath.Join(testhost.SharedTestdata(t), "show_gids/rdma-manual-readme_mlx5_0-ens11f0-link-local-only_mlx5_1-ib-port-v1-no-netdev.txt")
	if out, errOut, code := run(t, "judge", only); code != ExitFindings || !strings.Contains(out, "mlx5_0 port 1: no RoCE v2 GID") {
		t.Errorf("the only RoCE port: exit %d\n%s%s", code, out, errOut)
	}
}
