package gpudirect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// got lists every finding that is not a pass as check/outcome/subject.
func notPass(fs []check.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Outcome != check.Pass {
			out = append(out, f.Check+"/"+string(f.Outcome)+"/"+f.Subject)
		}
	}
	slices.Sort(out)
	return out
}

// Every real `nvidia-smi topo -m` paste is judged for rail alignment; the
// rail-optimised hosts pass every GPU, and each departure is named by
// check and subject.
func TestJudgeTopoReal(t *testing.T) {
	d := testhost.SharedTestdata(t)
	for file, want := range map[string][]string{
		"nvidia-smi-topo/club-3090-issue-1229_2xRTX5090-workstation_PHB_no-nic.txt": {"topo.nics/warn/RDMA NICs"},
		"nvidia-smi-topo/deepseek-local-notes-zh_5900X_2xRTX3090-NV4-bridge_nvlink-s-then-topo_uuid-redacted_prompts.txt": {
			"gpudirect.gpu-class/warn/GPU0 GeForce RTX 3090", "gpudirect.gpu-class/warn/GPU1 GeForce RTX 3090", "topo.nics/warn/RDMA NICs"},
		"nvidia-smi-topo/gpu-comm-blog-zh_h200-8gpu-NV18_9nic-PIX-rails_mlx5_bond_0_author-reformatted-spaces-ruler-translated-legend.txt": nil,
		"nvidia-smi-topo/mpi-gpu-compress-readme_8xA100-NV12_10nic-PXB-pairs_2-storage-nic-SYS_4numa-epyc.txt":                             {"topo.nic-far/warn/mlx5_8", "topo.nic-far/warn/mlx5_9"},
		"nvidia-smi-topo/nvlink-notes_3xRTX-A6000_gpu0-gpu1-NV4-bridge_gpu2-NODE_no-nic_prompt-gt.txt":                                     {"topo.nics/warn/RDMA NICs"},
		"nvidia-smi-topo/polaris-alcf-doc_4xA100-NV4_2nic-old-mlx5-columns_header-missing-leading-tab_4numa.txt": {
			"topo.rail/warn/GPU0", "topo.rail/warn/GPU1", "topo.rail/warn/GPU2", "topo.rail/warn/GPU3"},
		"nvidia-smi-topo/rhel-ai-kvm-guest_8xH100-NV18-in-vm_single-numa-0-63_no-nic_plus-nvlink-status-author-snipped.txt": {"topo.nics/warn/RDMA NICs"},
		"topology-misc/nccl-issue-1737_nvidia-smi-topo-m_H100-6nic_partial.txt": {"topo.rail/unknown/GPU3", "topo.rail/unknown/GPU4", "topo.rail/unknown/GPU5",
			"topo.rail/unknown/GPU6", "topo.rail/unknown/GPU7", "topo.rail/warn/GPU1"},
		"topology-misc/nccl-tests-issue-350_n013_nvidia-smi-topo-m_A100-PCIe_4nic.txt": {"topo.nic-far/warn/mlx5_0", "topo.nic-far/warn/mlx5_1", "topo.rail/warn/GPU0"},
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(d, file))
			if err != nil {
				t.Fatal(err)
			}
			fs, _, err := JudgeTopoFile(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := notPass(fs); !slices.Equal(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
		})
	}
}

// The rail each GPU gets, and why: PHB says NCCL_NET_GDR_LEVEL=PHB, SYS
// says it crosses NUMA nodes; the H200 rails pair GPUn with its own NIC.
func TestJudgeTopoRails(t *testing.T) {
	d := testhost.SharedTestdata(t)
	b, _ := os.ReadFile(filepath.Join(d, "nvidia-smi-topo/polaris-alcf-doc_4xA100-NV4_2nic-old-mlx5-columns_header-missing-leading-tab_4numa.txt"))
	fs, _, _ := JudgeTopoFile(b, nil)
	msg := map[string]string{}
	for _, f := range fs {
		msg[f.Subject] = f.Message
	}
	if !strings.Contains(msg["GPU3"], "mlx5_0 is at PHB") || !strings.Contains(msg["GPU3"], "NCCL_NET_GDR_LEVEL=PHB") {
		t.Errorf("GPU3: %s", msg["GPU3"])
	}
	if !strings.Contains(msg["GPU0"], "at SYS") {
		t.Errorf("GPU0: %s", msg["GPU0"])
	}
	b, _ = os.ReadFile(filepath.Join(d, "nvidia-smi-topo/gpu-comm-blog-zh_h200-8gpu-NV18_9nic-PIX-rails_mlx5_bond_0_author-reformatted-spaces-ruler-translated-legend.txt"))
	m, _ := host.ParseTopo(b)
	rails, _ := TopoRails(m)
	var names []string
	for _, r := range rails {
		names = append(names, m.Devices[r].Display())
	}
	if want := []string{"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"}; !slices.Equal(names, want) {
		t.Errorf("rails %v", names)
	}
}

// Two GPUs under one switch with one NIC share it: named once, on the NIC.
// (The A100 paste with its second NIC of each pair, NIC1, NIC3 …, cut.)
func TestJudgeTopoShared(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nvidia-smi-topo/mpi-gpu-compress-readme_8xA100-NV12_10nic-PXB-pairs_2-storage-nic-SYS_4numa-epyc.txt"))
	m, err := host.ParseTopo(b)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(i int) bool {
		return !slices.Contains([]string{"NIC1", "NIC3", "NIC5", "NIC7"}, m.Devices[i].Label)
	}
	cut := &host.Topo{}
	var idx []int
	for i := range m.Devices {
		if keep(i) {
			cut.Devices = append(cut.Devices, m.Devices[i])
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		var row []string
		for _, j := range idx {
			row = append(row, m.Level(i, j))
		}
		cut.Levels = append(cut.Levels, row)
	}
	got := notPass(JudgeTopo(cut))
	want := []string{"topo.nic-far/warn/mlx5_8", "topo.nic-far/warn/mlx5_9", "topo.rail-shared/warn/mlx5_0", "topo.rail-shared/warn/mlx5_2", "topo.rail-shared/warn/mlx5_4", "topo.rail-shared/warn/mlx5_6"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
}

// The matrix rdmalab predicts from a snapshot, printed as nvidia-smi prints
// it and read back, agrees with the snapshot; one changed cell and one
// missing GPU are each named.
func TestCompareTopo(t *testing.T) {
	s := load(t, "hgx-h200")
	text := host.TopoOf(s).Format()
	fs, _, err := JudgeTopoFile([]byte(text), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := notPass(fs); len(got) != 0 {
		t.Fatalf("healthy: %q", got)
	}
	if !slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == "topo.vs-snapshot" && f.Outcome == check.Pass }) {
		t.Error("no pass for the agreement")
	}
	m, _ := host.ParseTopo([]byte(text))
	g, n := m.GPUs()[2], m.NICs()[2]
	m.Levels[g][n], m.Levels[n][g] = host.LevelSYS, host.LevelSYS
	got := notPass(CompareTopo(m, s))
	// One NIC per PCIe switch on this board (seed 004's eight switches):
	// GPU2 loses its rail, so the cell and GPU2's rail both differ.
	want := []string{"topo.vs-snapshot/warn/GPU2", "topo.vs-snapshot/warn/GPU2 ↔ " + m.Devices[n].Name}
	if !slices.Equal(got, want) {
		t.Errorf("changed cell: %q, want %q", got, want)
	}
	m, _ = host.ParseTopo([]byte(text))
	m.Devices = m.Devices[1:]
	m.Levels = m.Levels[1:]
	for i := range m.Levels {
		m.Levels[i] = m.Levels[i][1:]
	}
	if got := notPass(CompareTopo(m, s)); !slices.Contains(got, "topo.vs-snapshot/warn/GPUs") {
		t.Errorf("missing GPU: %q", got)
	}
}

// Seed 000's RTX 3090s are consumer GPUs: doctor says so by PCI id; the
// HGX's H200s pass.
func TestGPUClass(t *testing.T) {
	var got []string
	for _, f := range Readiness(load(t, "seed000-epyc")) {
		if f.Check == "gpudirect.gpu-class" {
			got = append(got, string(f.Outcome)+"/"+f.Subject)
		}
	}
	if want := []string{"warn/GPU 0000:06:00.0", "warn/GPU 0000:21:00.0"}; !slices.Equal(got, want) {
		t.Errorf("seed 000: %q", got)
	}
	for _, f := range Readiness(load(t, "hgx-h200")) {
		if f.Check == "gpudirect.gpu-class" {
			t.Errorf("HGX: %+v", f)
		}
	}
}

// Seed 000: one answer for GPU1's nearest NIC (mlx5_2, the other card, not
// mlx5_1, the second port of GPU0's card), and the one-socket EPYC is not
// told its staging crosses sockets.
func TestSeed000OneRailOneSocket(t *testing.T) {
	s := load(t, "seed000-epyc")
	var rails, predicted []string
	for _, r := range s.Rails() {
		rails = append(rails, r.RDMA)
	}
	for _, p := range Predict(s).GPUs {
		predicted = append(predicted, p.Rail)
	}
	if want := []string{"mlx5_0", "mlx5_2"}; !slices.Equal(rails, want) || !slices.Equal(predicted, want) {
		t.Errorf("rails %v, predicted %v", rails, predicted)
	}
	for _, f := range Readiness(s) {
		if f.Check != "gpudirect.path" {
			continue
		}
		if strings.Contains(f.Message, "crosses sockets") || !strings.Contains(f.Message, "one socket") {
			t.Errorf("%s: %s", f.Subject, f.Message)
		}
	}
}

// GB200 (Grace): every GPU↔NIC level is SYS because the GPUs hang off the
// CPU's NVLink-C2C, which the "GPU NUMA ID" column shows (each GPU's
// memory a NUMA node). NCCL uses GPUDirect RDMA over C2C there: each GPU's
// rail passes, no NIC is called "no GPU's rail". The same matrix without
// the GPU NUMA IDs (a PCIe host) keeps its warnings.
func TestJudgeTopoGraceC2C(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "grace-blackwell/gb200-4gpu-8nic_nvidia-smi-topo-m_all-NIC-SYS_gpu-numa-ids_leading-space-prompt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	judge := func(b []byte) []check.Finding {
		t.Helper()
		topo, err := host.ParseTopo(b)
		if err != nil {
			t.Fatal(err)
		}
		return JudgeTopo(topo)
	}
	fs := judge(b)
	rails := 0
	for _, f := range fs {
		if f.Outcome != check.Pass {
			t.Errorf("GB200: %s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
		}
		if f.Check == "topo.rail" && strings.Contains(f.Message, "NVLink-C2C") && strings.Contains(f.Message, "NCCL_NET_GDR_C2C") {
			rails++
		}
	}
	if rails != 4 {
		t.Errorf("want 4 GPUs' rails passing over C2C: %+v", fs)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "GPU") && !strings.HasPrefix(l, "GPU0    GPU1") {
			f := strings.Fields(l)
			l = strings.Join(append(f[:len(f)-1], "N/A"), "\t")
		}
		lines = append(lines, l)
	}
	pcie := 0
	for _, f := range judge([]byte(strings.Join(lines, "\n"))) {
		if f.Check == "topo.rail" && f.Outcome == check.Warn && strings.Contains(f.Message, "no GPUDirect RDMA") {
			pcie++
		}
	}
	if pcie != 4 {
		t.Errorf("without GPU NUMA IDs: %d rails warned, want 4", pcie)
	}
}
