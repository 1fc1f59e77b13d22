package bench

import (
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
)

// CompareCUDA judges every direction measured in both memories: GPU
// memory within 5% of host memory is GPUDirect RDMA working, 2× slower is
// staging through host memory (gpudirect.JudgeGPUDirect). The GPU run's
// own findings join the report, their subjects marked "GPU memory".
func (r *Report) CompareCUDA(cuda *Report) {
	r.CUDA = cuda
	byDir := map[string]Direction{}
	for _, d := range cuda.Directions {
		byDir[d.From+">"+d.To] = d
	}
	for _, h := range r.Directions {
		g, ok := byDir[h.From+">"+h.To]
		if !ok || h.Failed() || g.Failed() {
			continue
		}
		f := gpudirect.JudgeGPUDirect(h.Gbps, g.Gbps, gpudirect.Prediction{GDRReason: "no host snapshot given: run 'rdmalab doctor' on both nodes (gpudirect.* rules)"})
		f.Subject = h.From + " → " + h.To
		f.Evidence = f.Evidence[:2]
		r.GPUDirect = append(r.GPUDirect, f)
	}
	for _, f := range cuda.Findings {
		if f.Outcome == check.Pass {
			continue
		}
		f.Subject = "GPU memory: " + f.Subject
		r.Findings = append(r.Findings, f)
	}
	r.Findings = append(r.Findings, r.GPUDirect...)
}
