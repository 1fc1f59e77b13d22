package exporter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// Port metrics carry node_exporter's infiniband names under rdmalab_infiniband_.
const ibSubsystem = "infiniband"

var portLabels = []string{"device", "port"}

func ibDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, ibSubsystem, name), help, append(append([]string{}, portLabels...), labels...), nil)
}

var (
	// counterDescs has one Desc per row of the counter table, by family and
	// sysfs name.
	counterDescs = func() map[counters.Family]map[string]*prometheus.Desc {
		m := map[counters.Family]map[string]*prometheus.Desc{counters.PortCounters: {}, counters.HWCounters: {}}
		for _, c := range counters.Table {
			m[c.Family][c.Sysfs] = ibDesc(c.Metric, c.Help+".")
		}
		return m
	}()
	stateDesc     = ibDesc("state_id", "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer).")
	physStateDesc = ibDesc("physical_state_id", "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest).")
	rateDesc      = ibDesc("rate_bytes_per_second", "Signalling rate of the port (sysfs rate, Gb/s × 1e9 / 8).")
	infoDesc      = ibDesc("info", "Non-numeric data of an RDMA port and its device; value is always 1.",
		"link_layer", "firmware_version", "board_id", "hca_type", "node_guid")
	unavailableDesc = ibDesc("file_unavailable", "A counter file is present but unreadable or not a number (\"N/A (no PMA)\", EINVAL); its metric is absent, which is not zero.", "file")
	saturatedDesc   = ibDesc("saturated", "A PMA counter sits at its field's maximum and has stopped counting: its true value is unknown. Present only when saturated.", "file")

	pcieLabels     = []string{"address", "role", "device"}
	pcieCurSpeed   = prometheus.NewDesc(Namespace+"_pcie_link_current_speed_gigatransfers_per_second", "PCIe link speed the device trained at (current_link_speed).", pcieLabels, nil)
	pcieMaxSpeed   = prometheus.NewDesc(Namespace+"_pcie_link_max_speed_gigatransfers_per_second", "PCIe link speed the device can do (max_link_speed).", pcieLabels, nil)
	pcieCurWidth   = prometheus.NewDesc(Namespace+"_pcie_link_current_width_lanes", "PCIe lanes the device trained at (current_link_width).", pcieLabels, nil)
	pcieMaxWidth   = prometheus.NewDesc(Namespace+"_pcie_link_max_width_lanes", "PCIe lanes the device can use (max_link_width).", pcieLabels, nil)
	gpuPathDesc    = prometheus.NewDesc(Namespace+"_gpu_nic_path_rank", "PCIe path between a GPU and an RDMA NIC, as nvidia-smi topo -m levels ranked best first: 0 X, 1 PIX, 2 PXB, 3 PHB, 4 NODE, 5 SYS, 6 SYS with a NUMA node unknown.", []string{"gpu", "nic", "device", "level"}, nil)
	gpuNearestDesc = prometheus.NewDesc(Namespace+"_gpu_nearest_nic_path_rank", "Rank of the best PCIe path from a GPU to any RDMA NIC (see rdmalab_gpu_nic_path_rank); above 3 (PHB) GPUDirect RDMA is slow or off.", []string{"gpu"}, nil)
	hugeTotalDesc  = prometheus.NewDesc(Namespace+"_node_hugepages", "Huge pages in a NUMA node's pool.", []string{"node", "size_bytes"}, nil)
	hugeFreeDesc   = prometheus.NewDesc(Namespace+"_node_hugepages_free", "Free huge pages in a NUMA node's pool.", []string{"node", "size_bytes"}, nil)
	devicesDesc    = prometheus.NewDesc(Namespace+"_infiniband_devices", "RDMA devices under /sys/class/infiniband this scrape: a NIC that fell off the bus or lost its driver shows as a drop.", nil, nil)
	readErrDesc    = prometheus.NewDesc(Namespace+"_host_read_errors", "Files the host collector could not read or parse during this scrape, by subject (device, port, PCI function); the rest of the host is still reported.", []string{"subject"}, nil)
)

// hostCollector reads the RDMA ports and NUMA hugepages on every scrape.
// It runs the inventory code over a view of the root that holds only
// /sys/class/infiniband, the device tree and the NUMA nodes: the CPUs, PCI
// bus and kernel state are static enough to be read on the topology
// cadence, and skipping them makes a scrape several times cheaper. The
// view (and its cache of resolved sysfs directories) is kept for one
// topology interval, and dropped at once after a scrape with read errors
// so a replaced device is seen at the next scrape.
type hostCollector struct {
	opt Options

	mu      sync.Mutex
	view    *hostfs.FS
	built   time.Time
	reading bool // a read is still running (it outlived its scrape)
}

func (c *hostCollector) update(ctx context.Context, ch chan<- prometheus.Metric) error {
	c.mu.Lock()
	if c.reading {
		c.mu.Unlock()
		return errors.New("host: the previous read has not finished (a sysfs file that hangs?)")
	}
	if c.view == nil || c.opt.Now().Sub(c.built) >= c.opt.FindingsInterval {
		v, err := portsView(c.opt)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.view, c.built = v, c.opt.Now()
	}
	view := c.view
	c.reading = true
	c.mu.Unlock()

	// A sysfs read can hang (a wedged driver or firmware); the scrape
	// gives up at its timeout and the read finishes, or not, on its own.
	done := make(chan *host.Snapshot, 1)
	go func() {
		s := inventory.Collect(view, inventory.Options{Now: c.opt.Now, Tools: roceTools(c.opt)})
		c.mu.Lock()
		c.reading = false
		if len(s.Errors) > 0 {
			c.view = nil
		}
		c.mu.Unlock()
		done <- s
	}()
	select {
	case s := <-done:
		m := &emitter{ch: ch}
		emitPorts(m, s)
		emitRoCE(m, s)
		return m.err
	case <-ctx.Done():
		return fmt.Errorf("host: reading the RDMA ports did not finish within the scrape timeout: %w", ctx.Err())
	}
}

// newFS opens the configured root.
func newFS(o Options) (*hostfs.FS, error) {
	fsys, err := hostfs.New(o.Root)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", o.Root, err)
	}
	if o.IBClassDir != "" {
		if err := fsys.Mount("/sys/class/infiniband", o.IBClassDir); err != nil {
			return nil, err
		}
	}
	return fsys, nil
}

// readHost inventories the whole root.
func readHost(o Options) (*host.Snapshot, error) {
	fsys, err := newFS(o)
	if err != nil {
		return nil, err
	}
	return inventory.Collect(fsys, inventory.Options{Now: o.Now}), nil
}

// portsView is the root as the per-scrape read sees it: nothing but the
// RDMA class, the device tree it links into (not /sys/devices/system/cpu)
// and the NUMA nodes, mounted on a root that no longer exists.
func portsView(o Options) (*hostfs.FS, error) {
	if _, err := os.Stat(o.Root); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	empty, err := os.MkdirTemp("", "rdmalab-exporter-")
	if err != nil {
		return nil, err
	}
	fsys, err := hostfs.New(empty)
	os.Remove(empty) // hostfs only needed it to exist when opened
	if err != nil {
		return nil, err
	}
	root := o.Root
	ibClass := filepath.Join(root, "sys/class/infiniband")
	if o.IBClassDir != "" {
		ibClass = o.IBClassDir
	}
	mounts := map[string]string{
		"/sys/class/infiniband":    ibClass,
		"/sys/devices/system/node": filepath.Join(root, "sys/devices/system/node"),
	}
	devs, err := os.ReadDir(filepath.Join(root, "sys/devices"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("root %s: %w", o.Root, err)
	}
	for _, d := range devs {
		if d.Name() != "system" {
			mounts["/sys/devices/"+d.Name()] = filepath.Join(root, "sys/devices", d.Name())
		}
	}
	for at, dir := range mounts {
		if err := fsys.Mount(at, dir); err != nil {
			return nil, err
		}
	}
	return fsys, nil
}

// emitPorts turns the per-scrape snapshot into the port and hugepage metrics.
func emitPorts(m *emitter, s *host.Snapshot) {
	m.gauge(devicesDesc, float64(len(s.RDMADevices)))
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			port := strconv.Itoa(p.Port)
			// Unreadable state or rate is absent, not 0: unknown is not down.
			if p.State != "" {
				m.gauge(stateDesc, float64(p.StateID), d.Name, port)
			}
			if p.PhysState != "" {
				m.gauge(physStateDesc, float64(p.PhysStateID), d.Name, port)
			}
			if p.RateGbps > 0 {
				m.gauge(rateDesc, linkrate.BytesPerSecond(p.RateGbps), d.Name, port)
			}
			m.gauge(infoDesc, 1, d.Name, port, p.LinkLayer, d.FWVersion, d.BoardID, d.HCAType, d.NodeGUID.String())
			emitCounters(m, counters.PortCounters, p.Counters, d.Name, port)
			emitCounters(m, counters.HWCounters, p.HWCounters, d.Name, port)
			for _, f := range p.Unavailable {
				m.gauge(unavailableDesc, 1, d.Name, port, f)
			}
		}
	}
	for _, n := range s.NUMANodes {
		node := strconv.Itoa(n.ID)
		for _, h := range n.HugePages {
			size := strconv.FormatInt(h.PageSizeBytes, 10)
			m.gauge(hugeTotalDesc, float64(h.Total), node, size)
			m.gauge(hugeFreeDesc, float64(h.Free), node, size)
		}
	}
	errs := map[string]int{}
	for _, e := range s.Errors {
		errs[e.Subject]++
	}
	for subj, n := range errs {
		m.gauge(readErrDesc, float64(n), subj)
	}
}

// emitTopology turns a full snapshot into the PCIe link and GPU↔NIC path
// metrics, which change only when a link retrains or a device goes.
func emitTopology(m *emitter, s *host.Snapshot) {
	roles := map[string][2]string{}
	for _, d := range s.RDMADevices {
		if d.PCIAddress != "" {
			roles[d.PCIAddress] = [2]string{"nic", d.Name}
		}
	}
	for _, g := range s.GPUs {
		roles[g.Address] = [2]string{"gpu", g.Name}
	}
	for _, p := range s.PCIDevices {
		r, ok := roles[p.Address]
		if !ok {
			continue
		}
		if p.CurrentLinkSpeedGTps > 0 {
			m.gauge(pcieCurSpeed, p.CurrentLinkSpeedGTps, p.Address, r[0], r[1])
		}
		if p.MaxLinkSpeedGTps > 0 {
			m.gauge(pcieMaxSpeed, p.MaxLinkSpeedGTps, p.Address, r[0], r[1])
		}
		if p.CurrentLinkWidth > 0 {
			m.gauge(pcieCurWidth, float64(p.CurrentLinkWidth), p.Address, r[0], r[1])
		}
		if p.MaxLinkWidth > 0 {
			m.gauge(pcieMaxWidth, float64(p.MaxLinkWidth), p.Address, r[0], r[1])
		}
	}
	nearest := map[string]int{}
	for _, a := range s.Affinity {
		rank := host.LevelRank(a.Level)
		m.gauge(gpuPathDesc, float64(rank), a.GPU, a.NIC, a.RDMA, a.Level)
		if r, ok := nearest[a.GPU]; !ok || rank < r {
			nearest[a.GPU] = rank
		}
	}
	for gpu, r := range nearest {
		m.gauge(gpuNearestDesc, float64(r), gpu)
	}
}

// emitCounters sends the counters the table knows, scaled (data octets
// ×4) and marked when saturated. Counters the table does not know are left
// out rather than guessed at.
func emitCounters(m *emitter, f counters.Family, vals map[string]uint64, dev, port string) {
	for name, v := range vals {
		c, ok := counters.BySysfs(f, name)
		if !ok {
			continue
		}
		m.counter(counterDescs[f][name], float64(v)*c.Scale, dev, port)
		if c.Saturated(v) {
			m.gauge(saturatedDesc, 1, dev, port, name)
		}
	}
}
