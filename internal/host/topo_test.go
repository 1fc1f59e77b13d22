package host_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Every real `nvidia-smi topo -m` paste parses, with each wart: prompts and
// other commands around it, spaces instead of tabs, a ruler, a translated
// legend, a heading without its leading tab, old mlx5 column names, rows
// missing from an excerpt.
func TestParseTopoReal(t *testing.T) {
	d := testhost.SharedTestdata(t)
	for _, c := range []struct {
		file       string
		gpus, nics int
		rows       int               // rows printed
		names      map[string]string // label → name
		cells      [][3]string       // label, label, level
		cpu0       string            // GPU0's CPU affinity
	}{
		{file: "nvidia-smi-topo/club-3090-issue-1229_2xRTX5090-workstation_PHB_no-nic.txt", gpus: 2, rows: 2, cells: [][3]string{{"GPU0", "GPU1", "PHB"}}, cpu0: "0-63"},
		{file: "nvidia-smi-topo/deepseek-local-notes-zh_5900X_2xRTX3090-NV4-bridge_nvlink-s-then-topo_uuid-redacted_prompts.txt", gpus: 2, rows: 2,
			names: map[string]string{"GPU0": "GeForce RTX 3090", "GPU1": "GeForce RTX 3090"}, cells: [][3]string{{"GPU1", "GPU0", "NV4"}}, cpu0: "0-23"},
		{file: "nvidia-smi-topo/gpu-comm-blog-zh_h200-8gpu-NV18_9nic-PIX-rails_mlx5_bond_0_author-reformatted-spaces-ruler-translated-legend.txt", gpus: 8, nics: 9, rows: 17,
			names: map[string]string{"NIC0": "mlx5_0", "NIC1": "mlx5_3", "NIC8": "mlx5_bond_0"}, cells: [][3]string{{"GPU1", "NIC1", "PIX"}, {"GPU4", "NIC0", "SYS"}, {"NIC8", "GPU0", "NODE"}}, cpu0: "0,2-47,96-143"},
		{file: "nvidia-smi-topo/mpi-gpu-compress-readme_8xA100-NV12_10nic-PXB-pairs_2-storage-nic-SYS_4numa-epyc.txt", gpus: 8, nics: 10, rows: 18,
			names: map[string]string{"NIC9": "mlx5_9"}, cells: [][3]string{{"GPU7", "NIC7", "PXB"}, {"NIC8", "NIC9", "PIX"}, {"GPU0", "GPU7", "NV12"}}, cpu0: "48-63,176-191"},
		{file: "nvidia-smi-topo/nvlink-notes_3xRTX-A6000_gpu0-gpu1-NV4-bridge_gpu2-NODE_no-nic_prompt-gt.txt", gpus: 3, rows: 3, cells: [][3]string{{"GPU2", "GPU0", "NODE"}}, cpu0: "0-31,64-95"},
		{file: "nvidia-smi-topo/polaris-alcf-doc_4xA100-NV4_2nic-old-mlx5-columns_header-missing-leading-tab_4numa.txt", gpus: 4, nics: 2, rows: 6,
			names: map[string]string{"mlx5_0": "mlx5_0", "mlx5_1": "mlx5_1"}, cells: [][3]string{{"GPU3", "mlx5_0", "PHB"}, {"GPU1", "mlx5_1", "PHB"}}, cpu0: "24-31,56-63"},
		{file: "nvidia-smi-topo/rhel-ai-kvm-guest_8xH100-NV18-in-vm_single-numa-0-63_no-nic_plus-nvlink-status-author-snipped.txt", gpus: 8, rows: 8,
			names: map[string]string{"GPU7": "H100 80GB HBM3"}, cells: [][3]string{{"GPU3", "GPU4", "NV18"}}, cpu0: "0-63"},
		{file: "topology-misc/nccl-issue-1737_nvidia-smi-topo-m_H100-6nic_partial.txt", gpus: 8, nics: 6, rows: 3, cells: [][3]string{{"GPU2", "NIC1", "PIX"}, {"GPU5", "NIC0", ""}}, cpu0: "0-31,64-95"},
		{file: "topology-misc/nccl-tests-issue-350_n013_nvidia-smi-topo-m_A100-PCIe_4nic.txt", gpus: 1, nics: 4, rows: 5,
			names: map[string]string{"NIC3": "mlx5_3"}, cells: [][3]string{{"GPU0", "NIC2", "NODE"}, {"NIC1", "NIC0", "PIX"}}, cpu0: "64-127,192-255"},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(d, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !host.SniffTopo(b) {
				t.Fatal("not sniffed")
			}
			m, err := host.ParseTopo(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.GPUs()) != c.gpus || len(m.NICs()) != c.nics {
				t.Errorf("%d GPUs %d NICs", len(m.GPUs()), len(m.NICs()))
			}
			rows := 0
			idx := map[string]int{}
			for i, dev := range m.Devices {
				idx[dev.Label] = i
				if m.HasRow(i) {
					rows++
				}
			}
			if rows != c.rows {
				t.Errorf("%d rows", rows)
			}
			for l, n := range c.names {
				if got := m.Devices[idx[l]].Name; got != n {
					t.Errorf("%s named %q, want %q", l, got, n)
				}
			}
			for _, cell := range c.cells {
				if got := m.Level(idx[cell[0]], idx[cell[1]]); got != cell[2] {
					t.Errorf("%s↔%s = %q, want %q", cell[0], cell[1], got, cell[2])
				}
			}
			if got := m.Devices[0].CPUAffinity; got != c.cpu0 {
				t.Errorf("GPU0 CPU affinity %q", got)
			}
		})
	}
}

// Text that only mentions GPUs is not a matrix; a matrix with a stray
// level is refused with the line.
func TestParseTopoRefuses(t *testing.T) {
	if host.SniffTopo([]byte("GPU 0: NVIDIA H100 (UUID: x)\nGPU0 is fine\n")) {
		t.Error("sniffed prose")
	}
	_, err := host.ParseTopo([]byte("\tGPU0\tGPU1\nGPU0\t X \tFAST\nGPU1\tPIX\t X \n"))
	if err == nil || !strings.Contains(err.Error(), `line 2: row GPU0 column GPU1: "FAST"`) {
		t.Errorf("%v", err)
	}
}

// Whatever the input, a parsed matrix holds only known levels, X exactly on
// the diagonal, and prints back (Format) to the same matrix.
func FuzzParseTopo(f *testing.F) {
	d := testhost.SharedTestdata(f)
	files, _ := filepath.Glob(filepath.Join(d, "nvidia-smi-topo", "*"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("\tGPU0\tNIC0\nGPU0\t X \tPIX\nNIC0\tPIX\t X \n\nNIC Legend:\n  NIC0: mlx5_0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := host.ParseTopo(b)
		if err != nil {
			return
		}
		for i := range m.Devices {
			for j := range m.Devices {
				lv := m.Level(i, j)
				if lv == "" {
					continue
				}
				if (lv == host.LevelSelf) != (i == j) {
					t.Fatalf("%d,%d = %q", i, j, lv)
				}
				if host.LevelRank(lv) == 99 && !strings.HasPrefix(lv, "NV") {
					t.Fatalf("unknown level %q", lv)
				}
			}
		}
		again, err := host.ParseTopo([]byte(m.Format()))
		if err != nil {
			t.Fatalf("its own rendering does not parse: %v\n%s", err, m.Format())
		}
		for i := range m.Devices {
			for j := range m.Devices {
				if a, b := m.Level(i, j), again.Level(i, j); a != b {
					t.Fatalf("%d,%d: %q then %q\n%s", i, j, a, b, m.Format())
				}
			}
		}
		if !reflect.DeepEqual(labels(m), labels(again)) {
			t.Fatalf("labels %v then %v", labels(m), labels(again))
		}
	})
}

func labels(m *host.Topo) []string {
	var l []string
	for _, d := range m.Devices {
		l = append(l, d.Label+"="+d.Name)
	}
	return l
}
