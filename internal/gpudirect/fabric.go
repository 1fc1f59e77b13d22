package gpudirect

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// FabricEntry is the multi-node NVLink registration of each GPU, from the
// Fabric block of a saved `nvidia-smi -q`.
var FabricEntry = check.Entry{ID: "gpu.fabric", Title: "Each GPU joined its NVLink fabric, healthy and at full bandwidth",
	Why: "On a multi-node NVLink system (GB200/GB300 NVL) a GPU reaches GPUs in other trays only once Fabric Manager (and IMEX) registered it: State Completed, Status Success, a non-zero CliqueId and ClusterUUID. " +
		"A GPU short of that runs alone or fails the job's NVLink setup; Health Summary Unhealthy or Bandwidth other than Full is a degraded fabric even when Status is Success.",
	Source: "NVML nvmlGpuFabricInfo (State, Status only once Completed, CliqueId, ClusterUUID, health mask); nvidia-smi -q Fabric block; Azure/azhpc-images NVLink fabric validation",
	Fixes: []string{"systemctl status nvidia-fabricmanager nvidia-imex; journalctl -u nvidia-fabricmanager",
		"nvidia-smi -q | grep -A12 Fabric on every tray of the rack: the GPUs of one rack share one ClusterUUID and CliqueId",
		"if a GPU stays Unhealthy or degraded: check its NVLink cables/trays (nvidia-smi nvlink -s) and the NVLink switch trays' health"},
	Needs: "the Fabric block of nvidia-smi -q for each GPU", UnknownWhen: "a GPU's registration is In Progress, or Not Supported (no multi-node NVLink to judge)",
	Decides: true}

// FabricCatalog describes the checks of a saved `nvidia-smi -q` Fabric
// block.
var FabricCatalog = []check.Entry{FabricEntry}

// JudgeFabric judges each GPU's fabric registration through FabricEntry.
func JudgeFabric(fs host.GPUFabrics) []check.Finding {
	rep := FabricEntry.Reporter("")
	for _, g := range fs {
		judgeGPUFabric(rep, g)
	}
	return rep.Findings()
}

func judgeGPUFabric(rep *check.Reporter, g host.GPUFabric) {
	ev := []check.Evidence{{What: "State / Status", Value: g.State + " / " + cmp.Or(g.Status, "not shown"), Source: g.Source}}
	if g.CliqueID != "" || g.ClusterUUID != "" {
		ev = append(ev, check.Evidence{What: "CliqueId / ClusterUUID", Value: cmp.Or(g.CliqueID, "not shown") + " / " + cmp.Or(g.ClusterUUID, "not shown"), Source: g.Source})
	}
	var health []string
	for _, k := range slices.Sorted(maps.Keys(g.Health)) {
		health = append(health, k+" "+g.Health[k])
	}
	if len(health) > 0 {
		ev = append(ev, check.Evidence{What: "Health", Value: strings.Join(health, ", "), Source: g.Source})
	}
	var f *check.Finding
	state := strings.ToLower(g.State)
	switch {
	case state == "not supported":
		f = rep.Unknown(g.GPU, "the GPU reports no NVLink fabric (State Not Supported): not a multi-node NVLink GPU, or its driver does not expose the fabric; nothing here says whether it reaches other trays")
	case state == "in progress":
		f = rep.Unknown(g.GPU, "the GPU's fabric registration is still In Progress: Status means nothing until State is Completed; capture it again once Fabric Manager finished")
	case state == "not started":
		f = rep.Fail(g.GPU, "the GPU never registered with its NVLink fabric (State Not Started): Fabric Manager or IMEX did not start, so it cannot reach GPUs in other trays")
	case state != "completed":
		f = rep.Fail(g.GPU, "fabric State %q, not Completed: the GPU is not registered with its NVLink fabric", g.State)
	case !strings.EqualFold(g.Status, "Success"):
		f = rep.Fail(g.GPU, "fabric registration completed with Status %q, not Success: the GPU is not usable across the NVLink fabric", cmp.Or(g.Status, "not shown"))
	case g.CliqueID == "0" || strings.Trim(g.ClusterUUID, "0-") == "" && g.ClusterUUID != "":
		f = rep.Fail(g.GPU, "registered, but in no clique (CliqueId %s, ClusterUUID %s): the GPU shares no NVLink domain with other trays", cmp.Or(g.CliqueID, "not shown"), cmp.Or(g.ClusterUUID, "not shown"))
	default:
		var bad, warn []string
		for _, k := range slices.Sorted(maps.Keys(g.Health)) {
			v := g.Health[k]
			switch lk := strings.ToLower(k); {
			case lk == "summary" && !strings.EqualFold(v, "Healthy") && !strings.EqualFold(v, "N/A"):
				bad = append(bad, "Health Summary "+v)
			case lk == "bandwidth" && !strings.EqualFold(v, "Full") && !strings.EqualFold(v, "N/A"):
				bad = append(bad, "Bandwidth "+v)
			case lk == "route unhealthy" && strings.EqualFold(v, "True"):
				bad = append(bad, "Route Unhealthy")
			case strings.Contains(lk, "recovery") && strings.EqualFold(v, "True"):
				warn = append(warn, k)
			}
		}
		switch {
		case len(bad) > 0:
			f = rep.Fail(g.GPU, "registered (State Completed, Status Success, clique %s), but the fabric is not healthy: %s", cmp.Or(g.CliqueID, "not shown"), strings.Join(bad, ", "))
		case len(warn) > 0:
			f = rep.Warn(g.GPU, "registered and healthy, but recovering: %s (a recovery that does not end becomes Unhealthy)", strings.Join(warn, ", "))
		default:
			msg := fmt.Sprintf("State Completed, Status Success, clique %s of cluster %s", cmp.Or(g.CliqueID, "not shown"), cmp.Or(g.ClusterUUID, "not shown"))
			if len(health) > 0 {
				msg += ", " + strings.Join(health, ", ")
			}
			f = rep.Pass(g.GPU, "%s", msg)
		}
	}
	f.Evidence = ev
}
