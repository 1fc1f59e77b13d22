package exporter

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
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
	return newDesc(prometheus.BuildFQName(Namespace, ibSubsystem, name), help, append(append([]string{}, portLabels...), labels...))
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
	pcieCurSpeed   = newDesc(Namespace+"_pcie_link_current_speed_gigatransfers_per_second", "PCIe link speed the device trained at (current_link_speed).", pcieLabels)
	pcieMaxSpeed   = newDesc(Namespace+"_pcie_link_max_speed_gigatransfers_per_second", "PCIe link speed the device can do (max_link_speed).", pcieLabels)
	pcieCurWidth   = newDesc(Namespace+"_pcie_link_current_width_lanes", "PCIe lanes the device trained at (current_link_width).", pcieLabels)
	pcieMaxWidth   = newDesc(Namespace+"_pcie_link_max_width_lanes", "PCIe lanes the device can use (max_link_width).", pcieLabels)
	gpuPathDesc    = newDesc(Namespace+"_gpu_nic_path_rank", "PCIe path between a GPU and an RDMA NIC, as nvidia-smi topo -m levels ranked best first: 0 X, 1 PIX, 2 PXB, 3 PHB, 4 NODE, 5 SYS, 6 SYS with a NUMA node unknown.", []string{"gpu", "nic", "device", "level"})
	gpuNearestDesc = newDesc(Namespace+"_gpu_nearest_nic_path_rank", "Rank of the best PCIe path from a GPU to any RDMA NIC (see rdmalab_gpu_nic_path_rank); above 3 (PHB) GPUDirect RDMA is slow or off.", []string{"gpu"})
	hugeTotalDesc  = newDesc(Namespace+"_node_hugepages", "Huge pages in a NUMA node's pool.", []string{"node", "size_bytes"})
	hugeFreeDesc   = newDesc(Namespace+"_node_hugepages_free", "Free huge pages in a NUMA node's pool.", []string{"node", "size_bytes"})
	devicesDesc    = newDesc(Namespace+"_infiniband_devices", "RDMA devices under /sys/class/infiniband this scrape: a NIC that fell off the bus or lost its driver shows as a drop.", nil)
	readErrDesc    = newDesc(Namespace+"_host_read_errors", "Files the host collector could not read or parse during this scrape, by subject (device, port, PCI function); the rest of the host is still reported.", []string{"subject"})
)

// hostCollector reads the RDMA ports and NUMA hugepages on every scrape,
// from files it keeps open (inventory.DeviceReader): a scrape costs one
// listing of /sys/class/infiniband and one pread per value. Any number of
// simultaneous scrapes share one collection: a scrape joins the one in
// flight or starts the next. Each device is read in its own goroutine,
// bounded by deviceTimeout: a device whose read hangs is reported (with
// the file it is stuck on) and skipped until that read returns, and every
// other device is served. A device is reopened when the device set
// changes, after a read with errors or unavailable counters, and every
// FindingsInterval, so a replaced NIC is seen.
type hostCollector struct {
	fs            *hostfs.FS
	now           func() time.Time
	reopenEvery   time.Duration
	deviceTimeout time.Duration

	labels labelCache
	// tool runs ethtool -S for the RoCE counters (live host only).
	tool inventory.Tool

	mu       sync.Mutex
	inflight *collection
	devices  map[string]*slot
	huge     *slot
	opened   time.Time
}

// slot is one reader and whether a read of it is still running.
type slot struct {
	dev   *inventory.DeviceReader
	huge  *inventory.HugePagesReader
	busy  bool      // a read is running (maybe hung)
	since time.Time // when that read started
	stale bool      // reopen before the next read
	gone  bool      // the device left: close once the read returns
}

// collection is one read of the host, shared by every scrape that asked
// for it while it ran.
type collection struct {
	done chan struct{}
	snap *host.Snapshot
	err  error
}

func newHostCollector(fsys *hostfs.FS, o Options) *hostCollector {
	return &hostCollector{fs: fsys, now: o.Now, reopenEvery: o.FindingsInterval,
		deviceTimeout: o.ScrapeTimeout / 2, devices: map[string]*slot{}, tool: roceTools(o)}
}

func (c *hostCollector) update(ctx context.Context, ch chan<- prometheus.Metric) error {
	return c.emit(ctx, &emitter{ch: ch, labels: &c.labels})
}

func (c *hostCollector) text(ctx context.Context) ([]*textBlock, error) {
	t := newTextBlock()
	err := c.emit(ctx, &emitter{text: t, labels: &c.labels})
	return []*textBlock{t}, err
}

// emit waits for the shared collection and emits its samples through m.
func (c *hostCollector) emit(ctx context.Context, m *emitter) error {
	c.mu.Lock()
	f := c.inflight
	if f == nil {
		f = &collection{done: make(chan struct{})}
		c.inflight = f
		go c.run(f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return fmt.Errorf("host: the shared read did not finish within the scrape timeout: %w", ctx.Err())
	}
	if f.err != nil {
		return f.err
	}
	emitPorts(m, f.snap)
	emitRoCE(m, f.snap)
	return m.err
}

func (c *hostCollector) run(f *collection) {
	f.snap, f.err = c.collect()
	if f.err == nil {
		c.roceCounters(f.snap)
	}
	c.mu.Lock()
	c.inflight = nil
	c.mu.Unlock()
	close(f.done)
}

// close closes every reader not in a read; a read still running (hung)
// closes its own when it returns.
func (c *hostCollector) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, s := range c.devices {
		s.gone = true
		if !s.busy {
			s.dev.Close()
		}
		delete(c.devices, n)
	}
	if c.huge != nil && !c.huge.busy && c.huge.huge != nil {
		c.huge.huge.Close()
	}
	c.huge = nil
}

// readResult is what one device's (or the hugepages') read returned.
type readResult struct {
	name string
	dev  host.RDMADevice
	numa []host.NUMANode
	errs []host.CollectError
}

// collect reads every device, each bounded, into a snapshot of the ports.
func (c *hostCollector) collect() (*host.Snapshot, error) {
	names, err := inventory.RDMADeviceNames(c.fs)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	now := c.now()
	snap := &host.Snapshot{SchemaVersion: host.SchemaVersion, CollectedAt: now.UTC(), Source: c.fs.Root()}

	c.mu.Lock()
	if c.huge == nil {
		c.huge = &slot{}
	}
	if now.Sub(c.opened) >= c.reopenEvery {
		// The slow interval: resolve every path and reopen every file anew.
		c.fs.Forget()
		c.opened = now
		for _, s := range c.devices {
			s.stale = true
		}
		c.huge.stale = true
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	for n, s := range c.devices {
		if !present[n] {
			c.labels.reset()
			delete(c.devices, n)
			s.gone = true
			if !s.busy {
				s.dev.Close()
			}
		}
	}
	results := make(chan readResult, len(names)+1)
	var started []string
	startRead := func(name string, s *slot) {
		if s.stale {
			if s.dev != nil {
				s.dev.Close()
				s.dev = inventory.NewDeviceReader(c.fs, name, knownCounter)
			} else if s.huge != nil {
				s.huge.Close()
			}
			s.stale = false
		}
		if s.dev == nil && s.huge == nil {
			s.huge = inventory.NewHugePagesReader(c.fs)
		}
		s.busy, s.since = true, now
		started = append(started, name)
		go c.read(name, s.dev, s.huge, s, results)
	}
	for _, n := range names {
		s := c.devices[n]
		if s == nil {
			s = &slot{dev: inventory.NewDeviceReader(c.fs, n, knownCounter)}
			c.devices[n] = s
		}
		if s.busy {
			snap.Errors = append(snap.Errors, hungError(n, s.dev.Reading(), now.Sub(s.since)))
			continue
		}
		startRead(n, s)
	}
	if c.huge.busy {
		snap.Errors = append(snap.Errors, hungError("numa", "hugepages", now.Sub(c.huge.since)))
	} else {
		startRead("", c.huge)
	}
	c.mu.Unlock()

	got := map[string]readResult{}
	timer := time.NewTimer(c.deviceTimeout)
	defer timer.Stop()
wait:
	for len(got) < len(started) {
		select {
		case r := <-results:
			got[r.name] = r
		case <-timer.C:
			break wait
		}
	}
	for _, n := range names {
		if r, ok := got[n]; ok {
			snap.RDMADevices = append(snap.RDMADevices, r.dev)
			snap.Errors = append(snap.Errors, r.errs...)
		}
	}
	if r, ok := got[""]; ok {
		snap.NUMANodes = r.numa
		snap.Errors = append(snap.Errors, r.errs...)
	}
	c.mu.Lock()
	for _, n := range started {
		if _, ok := got[n]; ok {
			continue
		}
		if n == "" {
			snap.Errors = append(snap.Errors, hungError("numa", "hugepages", c.deviceTimeout))
		} else if s := c.devices[n]; s != nil {
			snap.Errors = append(snap.Errors, hungError(n, s.dev.Reading(), c.deviceTimeout))
		}
	}
	c.mu.Unlock()
	return snap, nil
}

// read reads one device (or the hugepages) and hands the result to
// whoever still waits; it clears the slot's busy mark when it returns,
// however late.
func (c *hostCollector) read(name string, dev *inventory.DeviceReader, huge *inventory.HugePagesReader, s *slot, out chan<- readResult) {
	r := readResult{name: name}
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.errs = append(r.errs, host.CollectError{Subject: name, Error: fmt.Sprintf("panic: %v", p)})
			}
		}()
		if dev != nil {
			r.dev, r.errs = dev.Read()
		} else {
			r.numa, r.errs = huge.Read()
		}
	}()
	// Not busy before the result is handed over: the next collection,
	// which may start as soon as this one has every result, must not take
	// this device for hung.
	c.mu.Lock()
	s.busy = false
	// Reopen after errors or unavailable counters: a file replaced since
	// (a device re-plugged) is only seen by opening it again.
	s.stale = s.stale || len(r.errs) > 0 || unavailable(r.dev)
	if s.gone && dev != nil {
		dev.Close()
	}
	c.mu.Unlock()
	out <- r
}

// knownCounter keeps open only the counters the table names: the others
// are never exported.
func knownCounter(f counters.Family, name string) bool {
	_, ok := counters.BySysfs(f, name)
	return ok
}

func unavailable(d host.RDMADevice) bool {
	for _, p := range d.Ports {
		if len(p.Unavailable) > 0 {
			return true
		}
	}
	return false
}

// hungError names the device and the file its read is stuck on.
func hungError(name, file string, after time.Duration) host.CollectError {
	return host.CollectError{Subject: name, Path: file,
		Error: fmt.Sprintf("read of %s has not returned after %s (a hung sysfs file?); the device is skipped until it does", file, after.Round(time.Millisecond))}
}

// readHost inventories the whole root.
func readHost(fsys *hostfs.FS, o Options) *host.Snapshot {
	return inventory.Collect(fsys, inventory.Options{Now: o.Now})
}

// emitPorts turns the per-scrape snapshot into the port and hugepage metrics.
func emitPorts(m *emitter, s *host.Snapshot) {
	m.gauge(devicesDesc, float64(len(s.RDMADevices)))
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			port := strconv.Itoa(p.Port)
			// Unreadable state or rate is absent, not 0: unknown is not down.
			if p.State.Known() {
				m.gauge(stateDesc, float64(p.State.ID()), d.Name, port)
			}
			if p.PhysState.Known() {
				m.gauge(physStateDesc, float64(p.PhysState.ID()), d.Name, port)
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
	roles := map[host.PCIAddress][2]string{}
	for _, d := range s.RDMADevices {
		if d.PCIAddress.IsValid() {
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
		addr := p.Address.String()
		if p.CurrentLinkSpeedGTps > 0 {
			m.gauge(pcieCurSpeed, p.CurrentLinkSpeedGTps, addr, r[0], r[1])
		}
		if p.MaxLinkSpeedGTps > 0 {
			m.gauge(pcieMaxSpeed, p.MaxLinkSpeedGTps, addr, r[0], r[1])
		}
		if p.CurrentLinkWidth > 0 {
			m.gauge(pcieCurWidth, float64(p.CurrentLinkWidth), addr, r[0], r[1])
		}
		if p.MaxLinkWidth > 0 {
			m.gauge(pcieMaxWidth, float64(p.MaxLinkWidth), addr, r[0], r[1])
		}
	}
	nearest := map[host.PCIAddress]int{}
	for _, a := range s.Affinity {
		rank := host.LevelRank(a.Level)
		m.gauge(gpuPathDesc, float64(rank), a.GPU.String(), a.NIC.String(), a.RDMA, a.Level)
		if r, ok := nearest[a.GPU]; !ok || rank < r {
			nearest[a.GPU] = rank
		}
	}
	for gpu, r := range nearest {
		m.gauge(gpuNearestDesc, float64(r), gpu.String())
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

// roceCounters adds ethtool -S's pause, storm and discard counters of each
// active RoCE port's netdevs to the collection, each run bounded like a
// device read. Only a live host has an ethtool to ask.
func (c *hostCollector) roceCounters(snap *host.Snapshot) {
	if c.tool == nil {
		return
	}
	for _, d := range snap.RDMADevices {
		for _, p := range d.Ports {
			if p.LinkLayer != "Ethernet" {
				continue
			}
			ents, err := c.fs.ReadDir("/sys/class/infiniband/" + d.Name + "/device/net")
			if err != nil {
				continue
			}
			for _, nd := range ents {
				ctx, cancel := context.WithTimeout(context.Background(), c.deviceTimeout)
				out, err := c.tool(ctx, "ethtool", "-S", nd)
				cancel()
				if err != nil {
					if !errors.Is(err, exec.ErrNotFound) {
						snap.Errors = append(snap.Errors, host.CollectError{Subject: "netdev " + nd, Path: "ethtool -S " + nd, Error: err.Error()})
					}
					continue
				}
				rs, err := host.ParseEthtoolS(out)
				if err != nil || len(rs) == 0 {
					continue
				}
				snap.AddRoCEQoS(host.RoCEQoS{Netdev: nd, Device: d.Name, Port: p.Port,
					Counters: host.Got(rs[len(rs)-1].Counters, "ethtool -S "+nd)})
			}
		}
	}
}
