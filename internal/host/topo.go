package host

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// Topo is the GPU↔GPU/NIC matrix `nvidia-smi topo -m` prints, or the one a
// snapshot's PCI tree implies (TopoOf): the one model both are judged and
// compared in.
type Topo struct {
	Devices []TopoDevice `json:"devices"`
	// Levels[i][j] is the level between Devices[i] and Devices[j]: X, PIX,
	// PXB, PHB, NODE, SYS or NV#; "" where the matrix did not say (a row
	// missing from a pasted excerpt).
	Levels [][]string `json:"levels"`
}

// TopoDevice is one row/column of the matrix.
type TopoDevice struct {
	// Label is the column heading: GPU0, NIC0, or the RDMA device itself
	// (mlx5_0) in drivers before the NIC legend.
	Label string `json:"label"`
	GPU   bool   `json:"gpu"`
	// Name is a NIC's RDMA device (from the NIC legend or an old column
	// heading); for a GPU, its model when the paste also holds nvidia-smi's
	// "GPU 0: NVIDIA … (UUID: …)" lines.
	Name string `json:"name,omitempty"`
	// CPUAffinity and NUMAAffinity are the row's affinity columns as
	// printed ("" when absent, "N/A" kept).
	CPUAffinity  string `json:"cpu_affinity,omitempty"`
	NUMAAffinity string `json:"numa_affinity,omitempty"`
	// GPUNUMAID is a GPU row's "GPU NUMA ID" column: the NUMA node of the
	// GPU's own memory on a coherent (NVLink-C2C, Grace) platform, N/A
	// elsewhere; "" when the column is absent.
	GPUNUMAID string `json:"gpu_numa_id,omitempty"`
}

// C2C reports a coherent Grace platform (GH200, GB200): every GPU's
// memory is a NUMA node of its own ("GPU NUMA ID" a number), because the
// GPU hangs off the CPU's NVLink-C2C, not PCIe. There the matrix shows
// NODE/SYS between a GPU and every NIC, yet NCCL reaches the NIC from GPU
// memory directly over C2C (NCCL_NET_GDR_C2C).
func (t *Topo) C2C() (bool, string) {
	var ids []string
	for _, d := range t.Devices {
		if !d.GPU {
			continue
		}
		if _, err := strconv.Atoi(d.GPUNUMAID); err != nil {
			return false, ""
		}
		ids = append(ids, d.Label+" "+d.GPUNUMAID)
	}
	if len(ids) == 0 {
		return false, ""
	}
	return true, "GPU NUMA ID " + strings.Join(ids, ", ")
}

// Display names a device the way a user finds it: the NIC's RDMA name, a
// GPU's label.
func (d TopoDevice) Display() string {
	if !d.GPU && d.Name != "" {
		return d.Name
	}
	return d.Label
}

// Level returns the level between devices i and j, reading the other
// triangle when a row is missing.
func (t *Topo) Level(i, j int) string {
	if i < len(t.Levels) && j < len(t.Levels[i]) && t.Levels[i][j] != "" {
		return t.Levels[i][j]
	}
	if j < len(t.Levels) && i < len(t.Levels[j]) {
		return t.Levels[j][i]
	}
	return ""
}

// GPUs and NICs are the indexes of each kind, in column order.
func (t *Topo) GPUs() []int { return t.kind(true) }
func (t *Topo) NICs() []int { return t.kind(false) }

func (t *Topo) kind(gpu bool) []int {
	var out []int
	for i, d := range t.Devices {
		if d.GPU == gpu {
			out = append(out, i)
		}
	}
	return out
}

// HasRow reports whether the matrix printed device i's row.
func (t *Topo) HasRow(i int) bool {
	return i < len(t.Levels) && slices.ContainsFunc(t.Levels[i], func(s string) bool { return s != "" })
}

// ErrNotTopo is input holding no `nvidia-smi topo -m` matrix.
var ErrNotTopo = errors.New("no nvidia-smi topo -m matrix (a GPU0 heading with GPU0's row below it)")

var (
	topoLabel = lazyre.New(`^(GPU\d+|NIC\d+|mlx\d+_\w+|[a-z]+\d*_\w+)$`)
	topoLevel = lazyre.New(`^(X|PIX|PXB|PHB|NODE|SYS|SOC|NV\d+)$`)
	topoRow   = lazyre.New(`^\s*GPU\d+\s+(X|PIX|PXB|PHB|NODE|SYS|SOC|NV\d+)\s`)
	nicLegend = lazyre.New(`^\s*(NIC\d+)\s*:\s*(\S+)\s*$`)
	gpuName   = lazyre.New(`^GPU (\d+): (.*)$`)
)

// SniffTopo reports whether b holds a `nvidia-smi topo -m` matrix.
func SniffTopo(b []byte) bool {
	_, _, ok := findTopoHeader(strings.Split(string(b), "\n"))
	return ok
}

// findTopoHeader finds the first GPU row and the heading above it (rulers
// and blank lines between them skipped).
func findTopoHeader(lines []string) (head, first int, ok bool) {
	for i, l := range lines {
		if !topoRow().MatchString(l + " ") {
			continue
		}
		for h := i - 1; h >= 0 && h >= i-3; h-- {
			if strings.Trim(lines[h], " \t-=_") == "" {
				continue
			}
			if slices.Contains(strings.Fields(lines[h]), "GPU0") {
				return h, i, true
			}
			break
		}
	}
	return 0, 0, false
}

// ParseTopo reads the first `nvidia-smi topo -m` matrix in b, whatever
// surrounds it (shell prompts, other commands' output), with columns
// separated by tabs or reformatted spaces, a ruler under the heading, the
// heading's leading tab lost, old drivers' RDMA device names as NIC
// columns, and any legend text (translated or not). The NIC legend
// ("NIC0: mlx5_0") names the NICs; nvidia-smi's "GPU 0: NAME (UUID: …)"
// lines, when pasted too, name the GPUs.
func ParseTopo(b []byte) (*Topo, error) {
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	head, first, ok := findTopoHeader(lines)
	if !ok {
		return nil, ErrNotTopo
	}
	t := &Topo{}
	fields := strings.Fields(lines[head])
	// A shell prompt cannot precede the heading on its line, but a pasted
	// "GPU0" heading may follow text; start at GPU0.
	fields = fields[slices.Index(fields, "GPU0"):]
	n := 0
	for n < len(fields) && topoLabel().MatchString(fields[n]) {
		t.Devices = append(t.Devices, TopoDevice{Label: fields[n], GPU: strings.HasPrefix(fields[n], "GPU"), Name: oldNICName(fields[n])})
		n++
	}
	rest := strings.Join(fields[n:], " ")
	hasCPU, hasNUMA := strings.Contains(rest, "CPU"), strings.Contains(strings.ReplaceAll(rest, "GPU NUMA", ""), "NUMA")
	hasGPUNUMA := strings.Contains(rest, "GPU NUMA")
	index := map[string]int{}
	for i, d := range t.Devices {
		if _, dup := index[d.Label]; dup {
			return nil, fmt.Errorf("line %d: column %s appears twice", head+1, d.Label)
		}
		index[d.Label] = i
	}
	t.Levels = make([][]string, len(t.Devices))
	end := first
	for li := first; li < len(lines); li++ {
		f := strings.Fields(lines[li])
		if len(f) == 0 {
			break
		}
		row, ok := index[f[0]]
		if !ok {
			break
		}
		if len(f)-1 < len(t.Devices) {
			return nil, fmt.Errorf("line %d: row %s has %d levels for %d columns", li+1, f[0], len(f)-1, len(t.Devices))
		}
		if t.Levels[row] != nil {
			return nil, fmt.Errorf("line %d: row %s appears twice", li+1, f[0])
		}
		levels := make([]string, len(t.Devices))
		for j := range t.Devices {
			lv := f[1+j]
			if !topoLevel().MatchString(lv) {
				return nil, fmt.Errorf("line %d: row %s column %s: %q is not a topology level", li+1, f[0], t.Devices[j].Label, lv)
			}
			if lv == "SOC" { // drivers before NODE/SYS called it SOC
				lv = LevelSYS
			}
			if (j == row) != (lv == LevelSelf) {
				return nil, fmt.Errorf("line %d: row %s column %s: %q (X is the diagonal, and only there)", li+1, f[0], t.Devices[j].Label, lv)
			}
			levels[j] = lv
		}
		t.Levels[row] = levels
		extra := f[1+len(t.Devices):]
		if hasCPU && len(extra) > 0 {
			t.Devices[row].CPUAffinity, extra = extra[0], extra[1:]
		}
		if hasNUMA && len(extra) > 0 {
			t.Devices[row].NUMAAffinity, extra = extra[0], extra[1:]
		}
		if hasGPUNUMA && len(extra) > 0 && t.Devices[row].GPU {
			t.Devices[row].GPUNUMAID = extra[0]
		}
		end = li
	}
	if !slices.ContainsFunc(t.Levels, func(r []string) bool { return r != nil }) {
		return nil, ErrNotTopo
	}
	for _, l := range lines[end+1:] {
		if m := nicLegend().FindStringSubmatch(l); m != nil {
			if i, ok := index[m[1]]; ok && !t.Devices[i].GPU {
				t.Devices[i].Name = m[2]
			}
		}
	}
	for _, l := range lines {
		if m := gpuName().FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			name, _, _ := strings.Cut(m[2], "(UUID:")
			name = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), "NVIDIA "))
			if i, ok := index["GPU"+m[1]]; ok && t.Devices[i].Name == "" && name != "" {
				t.Devices[i].Name = name
			}
		}
	}
	return t, nil
}

// oldNICName is the RDMA device an old driver printed as the column itself.
func oldNICName(label string) string {
	if strings.HasPrefix(label, "GPU") || strings.HasPrefix(label, "NIC") {
		return ""
	}
	return label
}

// Format prints the matrix the way nvidia-smi does (tab-separated, NIC
// legend), so a topology rdmalab predicts can be read beside the real one.
func (t *Topo) Format() string {
	var b strings.Builder
	for _, d := range t.Devices {
		if n, ok := strings.CutPrefix(d.Label, "GPU"); ok && d.GPU && d.Name != "" {
			b.WriteString("GPU " + n + ": NVIDIA " + d.Name + "\n") // as nvidia-smi -L
		}
	}
	for _, d := range t.Devices {
		b.WriteString("\t" + d.Label)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\n")
	// GPU rows first (a reader finds the matrix by a GPU row under the
	// heading); rows the matrix never had stay out.
	for _, i := range append(t.GPUs(), t.NICs()...) {
		d := t.Devices[i]
		if !t.HasRow(i) {
			continue
		}
		b.WriteString(d.Label)
		for j := range t.Devices {
			lv := t.Level(i, j)
			if lv == LevelSelf {
				lv = " X "
			}
			b.WriteString("\t" + lv)
		}
		cpu := d.CPUAffinity
		if cpu == "" && d.NUMAAffinity != "" {
			cpu = "N/A" // an empty cell would shift the NUMA column into it
		}
		b.WriteString("\t" + cpu + "\t" + d.NUMAAffinity + "\n")
	}
	var legend []string
	for _, d := range t.Devices {
		if !d.GPU && d.Name != "" && d.Name != d.Label {
			legend = append(legend, "  "+d.Label+": "+d.Name)
		}
	}
	if len(legend) > 0 {
		b.WriteString("\nNIC Legend:\n\n" + strings.Join(legend, "\n") + "\n")
	}
	return b.String()
}

// TopoOf is the matrix the snapshot's PCI tree implies, in nvidia-smi's
// order (GPUs by PCI address, then RDMA devices as NIC0…): what rdmalab
// predicts `nvidia-smi topo -m` prints on this host. GPU↔GPU cells are PCIe
// levels (NVLink is not in sysfs).
func TopoOf(s *Snapshot) *Topo {
	bridges := s.BridgeIndex()
	t := &Topo{}
	var devs []*PCIDevice
	gpus := slices.Clone(s.GPUs)
	slices.SortFunc(gpus, func(a, b GPU) int { return a.Address.Compare(b.Address) })
	for i, g := range gpus {
		d := s.PCI(g.Address)
		if d == nil {
			continue
		}
		cpus := ""
		for _, n := range s.NUMANodes {
			if n.ID == g.NUMANode {
				cpus = n.CPUs
			}
		}
		t.Devices = append(t.Devices, TopoDevice{Label: "GPU" + strconv.Itoa(i), GPU: true, Name: g.Name, CPUAffinity: cpus, NUMAAffinity: numaText(g.NUMANode)})
		devs = append(devs, d)
	}
	k := 0
	for _, r := range s.RDMADevices {
		d := s.PCI(r.PCIAddress)
		if d == nil {
			continue
		}
		t.Devices = append(t.Devices, TopoDevice{Label: "NIC" + strconv.Itoa(k), Name: r.Name})
		devs = append(devs, d)
		k++
	}
	t.Levels = make([][]string, len(devs))
	for i := range devs {
		t.Levels[i] = make([]string, len(devs))
		for j := range devs {
			lv := PathLevel(devs[i], devs[j], bridges)
			if i != j && lv == LevelSelf {
				lv = LevelPIX // two RDMA devices of one function (ports of one card)
			}
			t.Levels[i][j] = lv
		}
	}
	return t
}

func numaText(n int) string {
	if n < 0 {
		return "N/A"
	}
	return strconv.Itoa(n)
}
