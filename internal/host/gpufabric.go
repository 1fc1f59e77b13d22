package host

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// GPUFabric is one GPU's multi-node NVLink fabric registration as
// `nvidia-smi -q` prints it in its Fabric block (GB200/GB300 NVL systems,
// from NVML's nvmlGpuFabricInfo): the probe's State, its Status (meaningful
// only once State is Completed), the clique and cluster the GPU joined,
// and on newer drivers a Health part. Empty strings were not shown.
type GPUFabric struct {
	// GPU names the GPU: its PCI address from the `GPU 00000000:18:00.0`
	// heading above the block, else "fabric block N" in the file's order
	// (a `| grep` paste keeps no heading).
	GPU         string `json:"gpu"`
	State       string `json:"state"`
	Status      string `json:"status,omitempty"`
	CliqueID    string `json:"clique_id,omitempty"`
	ClusterUUID string `json:"cluster_uuid,omitempty"`
	// Health holds the Health part's rows by their label as printed
	// (Summary, Bandwidth, Route Recovery in progress, Route Unhealthy,
	// Access Timeout Recovery …).
	Health map[string]string `json:"health,omitempty"`
	// Source is the file and line of the block's `Fabric` heading.
	Source string `json:"source"`
}

// GPUFabrics is what one saved `nvidia-smi -q` (whole, or cut by grep)
// shows of its GPUs' fabric blocks.
type GPUFabrics []GPUFabric

var (
	fabricKV    = regexp.MustCompile(`^(\s*)([A-Za-z][A-Za-z0-9 /()-]*?)\s*:\s*(.*?)\s*$`)
	fabricGPUHd = regexp.MustCompile(`^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$`)
)

// SniffGPUFabric reports whether b holds an `nvidia-smi -q` Fabric block:
// a line that is only "Fabric", with a State row and a CliqueId or
// ClusterUUID row within the next lines.
func SniffGPUFabric(b []byte) bool {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "Fabric" {
			continue
		}
		state, clique := false, false
		for _, n := range lines[i+1 : min(len(lines), i+8)] {
			if m := fabricKV.FindStringSubmatch(n); m != nil {
				switch m[2] {
				case "State":
					state = true
				case "CliqueId", "ClusterUUID":
					clique = true
				}
			}
		}
		if state && clique {
			return true
		}
	}
	return false
}

// ParseGPUFabric reads every Fabric block of a saved `nvidia-smi -q`
// (source names the file in each block's Source). Prompts, grep's `--`
// separators and other sections are skipped; a block's rows are those
// indented deeper than its heading.
func ParseGPUFabric(b []byte, source string) (GPUFabrics, error) {
	lines := strings.Split(string(b), "\n")
	var out GPUFabrics
	gpu := ""
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		if m := fabricGPUHd.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			gpu = m[1]
			continue
		}
		if strings.TrimSpace(l) != "Fabric" {
			continue
		}
		f := GPUFabric{GPU: gpu, Source: fmt.Sprintf("%s line %d", source, i+1)}
		if f.GPU == "" {
			f.GPU = fmt.Sprintf("fabric block %d", len(out)+1)
		}
		gpu = ""
		base, health := indent(l), -1
		j := i + 1
		for ; j < len(lines); j++ {
			n := strings.TrimRight(lines[j], " \t\r")
			if strings.TrimSpace(n) == "" || indent(n) <= base {
				break
			}
			if strings.TrimSpace(n) == "Health" {
				health = indent(n)
				continue
			}
			m := fabricKV.FindStringSubmatch(n)
			if m == nil {
				continue
			}
			key, val := m[2], m[3]
			if health >= 0 && len(m[1]) > health {
				if f.Health == nil {
					f.Health = map[string]string{}
				}
				f.Health[key] = val
				continue
			}
			health = -1
			switch key {
			case "State":
				f.State = val
			case "Status":
				f.Status = val
			case "CliqueId":
				f.CliqueID = val
			case "ClusterUUID":
				f.ClusterUUID = val
			}
		}
		i = j - 1
		if f.State == "" {
			return nil, fmt.Errorf("%s: the Fabric block shows no State row", f.Source)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("no Fabric block with a State row")
	}
	return out, nil
}
