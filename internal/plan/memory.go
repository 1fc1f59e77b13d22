package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
)

// placeMemory sizes every guest cell in whole hugepages on its host node
// and checks each node can hold what the plan puts there.
func placeMemory(p *Plan, s *host.Snapshot, req Request) *Refusal {
	size := req.PageSizeBytes
	users := map[int]int{} // node → VMs with a cell there
	for _, vm := range p.VMs {
		for _, c := range vm.Cells {
			users[c.HostNode]++
		}
	}
	nodes := map[int]*host.NUMANode{}
	for i := range s.NUMANodes {
		nodes[s.NUMANodes[i].ID] = &s.NUMANodes[i]
	}
	capacity := func(n int) int64 { // bytes a node can give hugepages; -1 unknown
		if nn := nodes[n]; nn != nil && nn.MemTotalBytes > 0 {
			return max(0, nn.MemTotalBytes-req.HostReserveBytes)
		}
		return -1
	}
	allocated := func(n int) int64 {
		if nn := nodes[n]; nn != nil {
			for _, pool := range nn.HugePages {
				if pool.PageSizeBytes == size {
					return pool.Total
				}
			}
		}
		return 0
	}

	for i := range p.VMs {
		vm := &p.VMs[i]
		pages := ceilDiv(req.MemoryBytes, size)
		if req.MemoryBytes == 0 {
			// What the host already reserved for guests, else half of the nodes.
			for _, c := range vm.Cells {
				pages += allocated(c.HostNode) / int64(users[c.HostNode])
			}
			if pages == 0 {
				for _, c := range vm.Cells {
					if cp := capacity(c.HostNode); cp > 0 {
						pages += cp / 2 / int64(users[c.HostNode]) / size
					}
				}
			}
			if pages == 0 {
				pages = ceilDiv(4<<30, size)
			}
		} else if req.MemoryBytes%size != 0 {
			p.Notes = append(p.Notes, note(planMemoryRounded, vm.Name, "",
				"%s: %s is not a whole number of %s pages; rounded up to %s", vm.Name, bytesString(req.MemoryBytes), pageName(size), bytesString(pages*size)))
		}
		// Split evenly over the cells, the remainder on the first ones.
		n := int64(len(vm.Cells))
		if pages < n {
			pages = n
		}
		for j := range vm.Cells {
			cp := pages / n
			if int64(j) < pages%n {
				cp++
			}
			vm.Cells[j].MemoryBytes = cp * size
		}
		vm.MemoryBytes = pages * size
	}

	need := map[int]int64{}
	for _, vm := range p.VMs {
		for _, c := range vm.Cells {
			need[c.HostNode] += c.MemoryBytes / size
		}
	}
	var order []int
	for n := range need {
		order = append(order, n)
	}
	slices.Sort(order)
	for _, n := range order {
		cp := capacity(n)
		if cp >= 0 && need[n]*size > cp {
			// The most each VM can have with every cell fitting its node.
			most := int64(-1)
			for _, vm := range p.VMs {
				per := int64(-1)
				for _, c := range vm.Cells {
					if cc := capacity(c.HostNode); cc >= 0 {
						v := cc / int64(users[c.HostNode]) / size
						if per < 0 || v < per {
							per = v
						}
					}
				}
				if per >= 0 && (most < 0 || per*int64(len(vm.Cells)) < most) {
					most = per * int64(len(vm.Cells))
				}
			}
			near := req
			near.MemoryBytes = most * size
			r := refuse(&near, planMemory, fmt.Sprintf("NUMA node %d", n),
				"NUMA node %d would need %d × %s hugepages (%s) but has %s after the %s host reserve (nearest: --memory %s per VM)",
				n, need[n], pageName(size), bytesString(need[n]*size), bytesString(cp), bytesString(req.HostReserveBytes), bytesString(most*size))
			if most <= 0 {
				r.Nearest = nil
			}
			return r
		}
		np := NodePages{Node: n, Pages: need[n], PageSizeBytes: size, AllocatedPages: allocated(n), CapacityBytes: cp}
		p.HugePages = append(p.HugePages, np)
		if np.AllocatedPages < np.Pages {
			p.Notes = append(p.Notes, note(planMemoryReserve, fmt.Sprintf("NUMA node %d", n), "reboot with the kernel arguments of this plan",
				"NUMA node %d has %d × %s hugepages now, the plan needs %d: they are reserved at boot by the kernel command line", n, np.AllocatedPages, pageName(size), np.Pages))
		}
	}
	return nil
}

// hostIsIntel: Intel's IOMMU is DMAR (and asked for with intel_iommu).
func hostIsIntel(s *host.Snapshot) bool {
	_, intel := s.Kernel.Param("intel_iommu")
	for _, u := range s.Kernel.IOMMU.Units {
		intel = intel || strings.HasPrefix(u, "dmar")
	}
	return intel
}

// kernelArgs is the command line the plan needs, in seed 000's order.
func kernelArgs(p *Plan, s *host.Snapshot) []string {
	args := []string{"iommu=pt"}
	if hostIsIntel(s) {
		args = append(args, "intel_iommu=on")
	}
	if p.IsolatedCPUs != "" {
		args = append(args, "isolcpus=managed_irq,domain,"+p.IsolatedCPUs, "nohz_full="+p.IsolatedCPUs, "rcu_nocbs="+p.IsolatedCPUs)
	}
	if p.HousekeepingCPUs != "" {
		args = append(args, "irqaffinity="+p.HousekeepingCPUs)
	}
	size := pageName(p.Request.PageSizeBytes)
	args = append(args, "default_hugepagesz="+size, "hugepagesz="+size)
	var most int64
	var perNode []string
	even := true
	for _, np := range p.HugePages {
		most = max(most, np.Pages)
		perNode = append(perNode, fmt.Sprintf("%d:%d", np.Node, np.Pages))
		if np.Pages != p.HugePages[0].Pages || len(p.HugePages) != countCPUNodes(s) {
			even = false
		}
	}
	if even || !kernelAtLeast(s.Kernel.Release, 5, 16) {
		// Older kernels spread hugepages=N evenly over the nodes: exactly
		// right for an even plan, enough (with some to spare) otherwise.
		args = append(args, fmt.Sprintf("hugepages=%d", most*int64(countCPUNodes(s))))
		if !even {
			var trim []string
			for _, np := range p.HugePages {
				trim = append(trim, fmt.Sprintf("echo %d > /sys/devices/system/node/node%d/hugepages/hugepages-%s/nr_hugepages", np.Pages, np.Node, hugeDir(p.Request.PageSizeBytes)))
			}
			p.Notes = append(p.Notes, note(planMemoryUneven, p.Host, "after boot: "+strings.Join(trim, "; "),
				"kernel %s spreads hugepages=N evenly over the nodes but the plan needs %s; the line reserves %d per node, trim the pools after boot", s.Kernel.Release, strings.Join(perNode, ","), most))
		}
	} else {
		args = append(args, "hugepages="+strings.Join(perNode, ","))
	}
	return args
}

func countCPUNodes(s *host.Snapshot) int {
	n := 0
	for _, nn := range s.NUMANodes {
		if nn.CPUs != "" && nn.GPUMemoryOf == "" {
			n++
		}
	}
	return max(1, n)
}

// kernelAtLeast compares a release such as "6.8.0-45-generic"; unknown is false.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func pageName(size int64) string {
	if size >= 1<<30 {
		return fmt.Sprintf("%dG", size>>30)
	}
	return fmt.Sprintf("%dM", size>>20)
}

func hugeDir(size int64) string { return fmt.Sprintf("%dkB", size>>10) }

func bytesString(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d B", b)
}
