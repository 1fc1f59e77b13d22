package design

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// Profile is a workload's ingest as seed 001 measured it on a 4-node,
// 16-GPU training cluster.
type Profile struct {
	Name             string  `json:"name"`
	Title            string  `json:"title"`
	SustainedMinGbps float64 `json:"sustained_min_gbps"`
	SustainedMaxGbps float64 `json:"sustained_max_gbps"`
	// BurstGbps is 0 when the burst depends on the model (inference).
	BurstGbps float64 `json:"burst_gbps,omitempty"`
	// SeedUplink is the uplink the seed's table recommends.
	SeedUplink string `json:"seed_uplink"`
	Why        string `json:"why"`
}

// ProfileGPUs is the cluster size the profiles were measured on.
const ProfileGPUs = 16

// Profiles is seed 001's uplink table.
var Profiles = []Profile{
	{"llm-pretrain", "LLM pretraining (tokenized text)", 1, 4, 20, "25 GbE",
		"tokens are dense and one batch lasts a long time"},
	{"image-video", "Image / video model training", 50, 150, 200, "2× 100 GbE LAG or 1× 200 GbE",
		"each GPU reads ~1 GB/s of decoded media: 4 nodes × 4 GPUs × ~1 GB/s = 16 GB/s ≈ 128 Gb/s"},
	{"finetune", "Fine-tuning / RLHF with checkpoint shuffle", 5, 20, 50, "25–100 GbE",
		"reloading checkpoints peaks at ~40 Gb/s for a few seconds, then drops to near zero"},
	{"inference", "Inference cluster behind a load balancer", 5, 50, 0, "25–100 GbE",
		"requests and responses are small; the burst depends on the model"},
}

// ProfileByName returns the profile with that name.
func ProfileByName(name string) (Profile, bool) {
	for _, p := range Profiles {
		if p.Name == strings.ToLower(strings.TrimSpace(name)) {
			return p, true
		}
	}
	return Profile{}, false
}

// UplinkOption is one uplink you can buy: one port or a LAG of equal ports.
type UplinkOption struct {
	Name         string  `json:"name"` // "1× 200 GbE", "2× 100 GbE LAG"
	Ports        int     `json:"ports"`
	PortGbps     float64 `json:"port_gbps"`
	CapacityGbps float64 `json:"capacity_gbps"`
}

// LAG reports whether the option bundles several ports.
func (o UplinkOption) LAG() bool { return o.Ports > 1 }

// uplinkPortsGbps are the Ethernet port rates uplinks are built from.
var uplinkPortsGbps = []float64{10, 25, 50, 100, 200, 400, 800}

// UplinkOptions lists single ports and 2- and 4-port LAGs of 100–400 GbE
// ports, smallest first,
// single ports before LAGs of the same capacity.
func UplinkOptions() []UplinkOption {
	var out []UplinkOption
	for _, n := range []int{1, 2, 4} {
		for _, g := range uplinkPortsGbps {
			if n > 1 && (g < 100 || g > 400) {
				continue // LAGs where one bigger port is dearer or not yet common
			}
			name := fmt.Sprintf("1× %s GbE", num(g))
			if n > 1 {
				name = fmt.Sprintf("%d× %s GbE LAG", n, num(g))
			}
			out = append(out, UplinkOption{Name: name, Ports: n, PortGbps: g, CapacityGbps: float64(n) * g})
		}
	}
	slices.SortStableFunc(out, func(a, b UplinkOption) int {
		if a.CapacityGbps != b.CapacityGbps {
			if a.CapacityGbps < b.CapacityGbps {
				return -1
			}
			return 1
		}
		return a.Ports - b.Ports
	})
	return out
}

// UplinkRequest are the flags of `design uplink`, as given.
type UplinkRequest struct {
	Profile string // one of Profiles; or GPUs and PerGPUIngestGBps
	GPUs    int    // with a profile: scale its figures from 16 GPUs
	// PerGPUIngestGBps is what one GPU reads from storage, in GB/s.
	PerGPUIngestGBps float64
	Burst            string // optional burst rate (linkrate syntax)
	// MaxUtilization is how full the uplink may run at the sustained rate
	// (0.8: a link above ~80% queues and its tail latency grows).
	MaxUtilization float64
	// FabricRate is the internal fabric's rate, optional: only to say the
	// uplink need not match it.
	FabricRate string
}

// Uplink is the recommended uplink and why.
type Uplink struct {
	Calculator       string         `json:"calculator"` // "uplink"
	Profile          *Profile       `json:"profile,omitempty"`
	GPUs             int            `json:"gpus,omitempty"`
	PerGPUIngestGBps float64        `json:"per_gpu_ingest_gbytes_per_s,omitempty"`
	SustainedMinGbps float64        `json:"sustained_min_gbps"`
	SustainedMaxGbps float64        `json:"sustained_max_gbps"`
	BurstGbps        float64        `json:"burst_gbps,omitempty"`
	MaxUtilization   float64        `json:"max_utilization"`
	RequiredGbps     float64        `json:"required_gbps"`
	Recommended      UplinkOption   `json:"recommended"`
	Alternatives     []UplinkOption `json:"alternatives,omitempty"`
	Figures          []Figure       `json:"figures"`
	Reasoning        []string       `json:"reasoning"`
	Caveats          []string       `json:"caveats,omitempty"`
}

// PlanUplink sizes the uplink to the ingest rate.
func PlanUplink(r UplinkRequest) (*Uplink, error) {
	if r.MaxUtilization <= 0 || r.MaxUtilization > 1 {
		return nil, inputErr("--max-utilization", "%g: want a share above 0 and at most 1 (0.8 = 80%%)", r.MaxUtilization)
	}
	if r.GPUs < 0 || r.GPUs > 1_000_000 {
		return nil, inputErr("--gpus", "%d: want 1 to 1000000 GPUs", r.GPUs)
	}
	u := &Uplink{Calculator: "uplink", MaxUtilization: r.MaxUtilization}
	switch {
	case r.Profile != "":
		p, ok := ProfileByName(r.Profile)
		if !ok {
			names := make([]string, len(Profiles))
			for i, p := range Profiles {
				names[i] = p.Name
			}
			return nil, inputErr("--profile", "%q: want one of %s", r.Profile, strings.Join(names, ", "))
		}
		if r.PerGPUIngestGBps != 0 {
			return nil, inputErr("--per-gpu-ingest", "give a --profile or --per-gpu-ingest, not both")
		}
		u.Profile = &p
		scale, scaleText, formula := 1.0, "", "seed 001 profile"
		if r.GPUs > 0 && r.GPUs != ProfileGPUs {
			scale = float64(r.GPUs) / ProfileGPUs
			scaleText = fmt.Sprintf(" × %d GPUs / %d", r.GPUs, ProfileGPUs)
			formula = fmt.Sprintf("seed 001 profile × GPUs / %d (ingest grows with the GPUs reading)", ProfileGPUs)
			u.GPUs = r.GPUs
		}
		u.SustainedMinGbps, u.SustainedMaxGbps, u.BurstGbps = p.SustainedMinGbps*scale, p.SustainedMaxGbps*scale, p.BurstGbps*scale
		src := "seed 001, " + p.Title + ", measured on 4 nodes × 4 GPUs"
		u.Figures = append(u.Figures,
			figure("sustained ingest (low)", u.SustainedMinGbps, "Gb/s", formula, src+": "+num(p.SustainedMinGbps)+" Gb/s"+scaleText),
			figure("sustained ingest (high)", u.SustainedMaxGbps, "Gb/s", formula, src+": "+num(p.SustainedMaxGbps)+" Gb/s"+scaleText))
		if p.BurstGbps > 0 {
			u.Figures = append(u.Figures, figure("burst", u.BurstGbps, "Gb/s", formula, src+": "+num(p.BurstGbps)+" Gb/s"+scaleText))
		}
		u.Reasoning = append(u.Reasoning, p.Title+": "+p.Why+" (seed 001's table recommends "+p.SeedUplink+" for 4 nodes).")
	case r.PerGPUIngestGBps > 0:
		if r.GPUs == 0 {
			return nil, inputErr("--gpus", "--per-gpu-ingest needs --gpus (the number of GPUs reading)")
		}
		if r.PerGPUIngestGBps > 1000 {
			return nil, inputErr("--per-gpu-ingest", "%g GB/s per GPU: want at most 1000", r.PerGPUIngestGBps)
		}
		u.GPUs, u.PerGPUIngestGBps = r.GPUs, r.PerGPUIngestGBps
		gbps := float64(r.GPUs) * r.PerGPUIngestGBps * 8
		u.SustainedMinGbps, u.SustainedMaxGbps = gbps, gbps
		u.Figures = append(u.Figures, figure("sustained ingest", gbps, "Gb/s", "GPUs × per-GPU ingest (GB/s) × 8 bits",
			fmt.Sprintf("%d × %s GB/s × 8", r.GPUs, num(r.PerGPUIngestGBps))))
		u.Reasoning = append(u.Reasoning, fmt.Sprintf("%d GPUs each reading %s GB/s from storage need %s Gb/s sustained.", r.GPUs, num(r.PerGPUIngestGBps), num(gbps)))
	case r.PerGPUIngestGBps < 0:
		return nil, inputErr("--per-gpu-ingest", "%g: want a positive rate in GB/s", r.PerGPUIngestGBps)
	default:
		return nil, inputErr("--profile", "give a workload --profile (llm-pretrain, image-video, finetune, inference) or --gpus and --per-gpu-ingest")
	}
	if r.Burst != "" {
		b, err := linkrate.ParseRate(r.Burst)
		if err != nil {
			return nil, &InputError{Flag: "--burst", Err: err}
		}
		u.BurstGbps = b.Gbps
		u.Figures = append(u.Figures, figure("burst", b.Gbps, "Gb/s", "--burst", "given"))
	}

	headroom := u.SustainedMaxGbps / r.MaxUtilization
	u.Figures = append(u.Figures, figure("sustained at max utilization", headroom, "Gb/s", "sustained (high) / max utilization",
		fmt.Sprintf("%s Gb/s / %s", num(u.SustainedMaxGbps), num(r.MaxUtilization))))
	u.RequiredGbps = max(headroom, u.BurstGbps)
	u.Figures = append(u.Figures, figure("required capacity", u.RequiredGbps, "Gb/s", "max(sustained / max utilization, burst)",
		fmt.Sprintf("max(%s, %s)", num(headroom), burstText(u.BurstGbps))))

	var fit []UplinkOption
	for _, o := range UplinkOptions() {
		if o.CapacityGbps >= u.RequiredGbps && (len(fit) == 0 || o.CapacityGbps == fit[0].CapacityGbps) {
			fit = append(fit, o)
		}
	}
	if len(fit) == 0 {
		return nil, inputErr("--gpus", "%s Gb/s is more than any single uplink here (4× 800 GbE): split the ingest over several uplinks or storage fabrics", num(u.RequiredGbps))
	}
	u.Recommended, u.Alternatives = fit[0], fit[1:]
	u.Reasoning = append(u.Reasoning,
		fmt.Sprintf("The uplink is sized to the dataset ingest rate, not to the internal fabric: %s is the smallest uplink that carries %s Gb/s.", u.Recommended.Name, num(u.RequiredGbps)),
		"Cross-cluster traffic (job queues, logs, artifacts) rides the management plane or a dedicated link; the management plane (1/10 GbE: SSH, Prometheus, NTP, IPMI) stays separate from the data fabric so it works when the data fabric is broken.")
	if r.FabricRate != "" {
		f, err := linkrate.ParseRate(r.FabricRate)
		if err != nil {
			return nil, &InputError{Flag: "--fabric-rate", Err: err}
		}
		if f.Gbps > u.Recommended.CapacityGbps {
			u.Reasoning = append(u.Reasoning, fmt.Sprintf("The internal fabric runs at %s; buying an uplink to match it (seed 001: \"spending €40k on a 400 GbE uplink because the internal fabric is 400 GbE: wrong target\") buys capacity the ingest never uses.", f))
		}
	}
	for _, o := range fit {
		if o.LAG() {
			u.Caveats = append(u.Caveats, fmt.Sprintf("%s: %s Gb/s is aggregate capacity, allocated per flow: one TCP stream (one HTTP GET of a shard) hashes onto one member and gets at most %s Gb/s. Allreduce uses many flows; a dataloader must open at least %d parallel streams (DALI, WebDataset and MosaicML Streaming do).",
				o.Name, num(o.CapacityGbps), num(o.PortGbps), o.Ports))
		}
	}
	return u, nil
}

func burstText(gbps float64) string {
	if gbps == 0 {
		return "no burst figure"
	}
	return num(gbps)
}
