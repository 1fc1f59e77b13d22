package inventory

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// RDMADeviceNames lists /sys/class/infiniband: the devices a scrape reads.
// A host without the directory has none, which is not an error.
func RDMADeviceNames(fsys *hostfs.FS) ([]string, error) {
	names, err := fsys.ReadDir(ibClass)
	if err != nil && !hostfs.IsNotExist(err) {
		return nil, err
	}
	slices.SortFunc(names, naturalCompare)
	return names, nil
}

// DeviceReader re-reads what changes on one RDMA device (each port's state,
// physical state, rate and counters) from files it opens once and keeps
// open; what does not change (GUID, firmware, board, link layer) is read
// when it opens. It fills the same host.RDMADevice as Collect, with the
// same parsers, subjects and "unavailable" rules. One goroutine at a time
// may call Read; Reading may be called from any.
type DeviceReader struct {
	fs     *hostfs.FS
	name   string
	opened bool
	static host.RDMADevice
	ports  []*portAttrs
	// openErrs are the errors met while opening, reported with every read.
	openErrs []host.CollectError
	buf      []byte
	current  atomic.Pointer[string]
	want     func(counters.Family, string) bool
}

type portAttrs struct {
	num                    int
	subject                string
	linkLayer              string
	state, physState, rate *hostfs.Attr
	counters, hwCounters   []namedAttr
	// unopened are counter files that could not be opened: unavailable.
	unopened []string
}

type namedAttr struct {
	name string
	attr *hostfs.Attr
}

// NewDeviceReader returns a reader of device name; it opens its files on
// the first Read. want, when not nil, picks the counter files to keep
// open (a caller that can only use the counters it knows need not read
// the others on every scrape).
func NewDeviceReader(fsys *hostfs.FS, name string, want func(counters.Family, string) bool) *DeviceReader {
	return &DeviceReader{fs: fsys, name: name, buf: make([]byte, 0, 256), want: want}
}

// Name is the device's name.
func (r *DeviceReader) Name() string { return r.name }

// Reading is the file a Read in progress is on ("" when none): what to
// name when a read does not return.
func (r *DeviceReader) Reading() string {
	if p := r.current.Load(); p != nil {
		return *p
	}
	return ""
}

func (r *DeviceReader) at(p string) { r.current.Store(&p) }

// Close closes every file the reader holds.
func (r *DeviceReader) Close() {
	for _, p := range r.ports {
		for _, a := range []*hostfs.Attr{p.state, p.physState, p.rate} {
			if a != nil {
				a.Close()
			}
		}
		for _, list := range [][]namedAttr{p.counters, p.hwCounters} {
			for _, n := range list {
				n.attr.Close()
			}
		}
	}
	r.ports, r.opened = nil, false
}

// open reads the static attributes and opens the changing ones.
func (r *DeviceReader) open() {
	c := &collector{fs: r.fs, snap: &host.Snapshot{}, at: r.at}
	dir := ibClass + "/" + r.name
	d := host.RDMADevice{Name: r.name, NUMANode: -1}
	d.NodeGUID = c.guid(r.name, dir+"/node_guid")
	d.FWVersion, _ = c.str(r.name, dir+"/fw_ver")
	d.BoardID, _ = c.str(r.name, dir+"/board_id")
	d.HCAType, _ = c.str(r.name, dir+"/hca_type")
	for _, name := range c.list(r.name, dir+"/ports") {
		n, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		pdir := dir + "/ports/" + name
		p := &portAttrs{num: n, subject: r.name + " port " + name}
		p.linkLayer, _ = c.str(p.subject, pdir+"/link_layer")
		p.state = c.attr(p.subject, pdir+"/state")
		p.physState = c.attr(p.subject, pdir+"/phys_state")
		p.rate = c.attr(p.subject, pdir+"/rate")
		p.counters = r.openCounters(c, p, pdir+"/counters", counters.PortCounters)
		p.hwCounters = r.openCounters(c, p, pdir+"/hw_counters", counters.HWCounters)
		r.ports = append(r.ports, p)
	}
	slices.SortFunc(r.ports, func(a, b *portAttrs) int { return cmp.Compare(a.num, b.num) })
	r.static, r.openErrs, r.opened = d, c.snap.Errors, true
}

// openCounters opens every file of a counters directory, skipping
// subdirectories and lifespan as Collect does.
func (r *DeviceReader) openCounters(c *collector, p *portAttrs, dir string, family counters.Family) []namedAttr {
	prefix := ""
	if family == counters.HWCounters {
		prefix = "hw_counters/"
	}
	var out []namedAttr
	for _, n := range c.list(p.subject, dir) {
		if n == "lifespan" || (r.want != nil && !r.want(family, n)) {
			continue
		}
		f := dir + "/" + n
		r.at(f)
		a, err := r.fs.OpenAttr(f)
		if err != nil {
			if !r.fs.IsDir(f) {
				p.unopened = append(p.unopened, prefix+n)
			}
			continue
		}
		if _, _, err := a.Read(r.buf); err != nil && r.fs.IsDir(f) {
			a.Close()
			continue
		}
		out = append(out, namedAttr{n, a})
	}
	return out
}

// attr opens an optional attribute: nil when absent, and an error
// recorded when present but not openable.
func (c *collector) attr(subject, p string) *hostfs.Attr {
	if c.at != nil {
		c.at(p)
	}
	a, err := c.fs.OpenAttr(p)
	if err != nil {
		if !hostfs.IsNotExist(err) {
			c.fail(subject, p, err)
		}
		return nil
	}
	return a
}

// Read returns the device with every port's current values, and what
// could not be read. Unreadable files are absent from the device (unknown
// is not zero), as in Collect. A file that was replaced (a capture edited,
// a device re-plugged) is only seen by a new reader.
func (r *DeviceReader) Read() (d host.RDMADevice, errs []host.CollectError) {
	defer r.current.Store(nil)
	if !r.opened {
		r.open()
	}
	d = r.static
	d.Ports = make([]host.RDMAPort, 0, len(r.ports))
	errs = append(errs, r.openErrs...)
	for _, pa := range r.ports {
		p := host.RDMAPort{Port: pa.num, LinkLayer: pa.linkLayer}
		read := func(a *hostfs.Attr) (string, bool) {
			if a == nil {
				return "", false
			}
			r.at(a.Path())
			s, buf, err := a.Read(r.buf)
			r.buf = buf
			if err != nil {
				errs = append(errs, host.CollectError{Subject: pa.subject, Path: a.Path(), Error: err.Error()})
				return "", false
			}
			return s, true
		}
		if s, ok := read(pa.state); ok {
			if p.State = portstate.ParseState(s); !p.State.Known() {
				errs = append(errs, host.CollectError{Subject: pa.subject, Path: pa.state.Path(), Error: notAState(s).Error()})
			}
		}
		if s, ok := read(pa.physState); ok {
			if p.PhysState = portstate.ParsePhys(s); !p.PhysState.Known() {
				errs = append(errs, host.CollectError{Subject: pa.subject, Path: pa.physState.Path(), Error: notAState(s).Error()})
			}
		}
		if s, ok := read(pa.rate); ok {
			rate, err := host.ParseIBRate(s)
			if err != nil {
				errs = append(errs, host.CollectError{Subject: pa.subject, Path: pa.rate.Path(), Error: err.Error()})
			}
			p.Rate, p.RateGbps = rate, rate.Gbps
		}
		p.Unavailable = append(p.Unavailable, pa.unopened...)
		p.Counters = r.readCounters(pa.counters, "", &p.Unavailable)
		p.HWCounters = r.readCounters(pa.hwCounters, "hw_counters/", &p.Unavailable)
		d.Ports = append(d.Ports, p)
	}
	return d, errs
}

func (r *DeviceReader) readCounters(list []namedAttr, prefix string, unavailable *[]string) map[string]uint64 {
	if len(list) == 0 {
		return nil
	}
	vals := make(map[string]uint64, len(list))
	for _, n := range list {
		r.at(n.attr.Path())
		s, buf, err := n.attr.Read(r.buf)
		r.buf = buf
		if err == nil {
			var v uint64
			if v, err = strconv.ParseUint(s, 10, 64); err == nil {
				vals[n.name] = v
				continue
			}
		}
		*unavailable = append(*unavailable, prefix+n.name)
	}
	return vals
}

// HugePagesReader re-reads the NUMA nodes' huge page pools from files kept
// open, as DeviceReader does for ports.
type HugePagesReader struct {
	fs     *hostfs.FS
	opened bool
	nodes  []hugeNode
	errs   []host.CollectError
	buf    []byte
}

type hugeNode struct {
	id    int
	pools []hugePool
}

type hugePool struct {
	sizeBytes   int64
	total, free *hostfs.Attr
}

// NewHugePagesReader returns a reader that opens its files on the first Read.
func NewHugePagesReader(fsys *hostfs.FS) *HugePagesReader {
	return &HugePagesReader{fs: fsys, buf: make([]byte, 0, 64)}
}

func (h *HugePagesReader) open() {
	const base = "/sys/devices/system/node"
	c := &collector{fs: h.fs, snap: &host.Snapshot{}}
	for _, id := range numberedEntries(c.list("numa", base), "node") {
		subject := "numa node " + strconv.Itoa(id)
		dir := base + "/node" + strconv.Itoa(id) + "/hugepages"
		n := hugeNode{id: id}
		for _, name := range c.list(subject, dir) {
			m := hugeDir().FindStringSubmatch(name)
			if m == nil {
				continue
			}
			kb, _ := strconv.ParseInt(m[1], 10, 64)
			n.pools = append(n.pools, hugePool{sizeBytes: kb << 10,
				total: c.attr(subject, dir+"/"+name+"/nr_hugepages"), free: c.attr(subject, dir+"/"+name+"/free_hugepages")})
		}
		slices.SortFunc(n.pools, func(a, b hugePool) int { return cmp.Compare(a.sizeBytes, b.sizeBytes) })
		h.nodes = append(h.nodes, n)
	}
	h.errs, h.opened = c.snap.Errors, true
}

// Read returns each NUMA node's pools now, and what could not be read.
func (h *HugePagesReader) Read() ([]host.NUMANode, []host.CollectError) {
	if !h.opened {
		h.open()
	}
	errs := slices.Clone(h.errs)
	out := make([]host.NUMANode, 0, len(h.nodes))
	for _, n := range h.nodes {
		node := host.NUMANode{ID: n.id, HugePages: []host.HugePagePool{}}
		for _, p := range n.pools {
			pool := host.HugePagePool{PageSizeBytes: p.sizeBytes}
			for _, f := range []struct {
				a   *hostfs.Attr
				out *int64
			}{{p.total, &pool.Total}, {p.free, &pool.Free}} {
				if f.a == nil {
					continue
				}
				s, buf, err := f.a.Read(h.buf)
				h.buf = buf
				if err == nil {
					*f.out, err = strconv.ParseInt(strings.TrimSpace(s), 0, 64)
				}
				if err != nil {
					errs = append(errs, host.CollectError{Subject: "numa node " + strconv.Itoa(n.id), Path: f.a.Path(), Error: err.Error()})
				}
			}
			node.HugePages = append(node.HugePages, pool)
		}
		out = append(out, node)
	}
	return out, errs
}

// Close closes every file the reader holds.
func (h *HugePagesReader) Close() {
	for _, n := range h.nodes {
		for _, p := range n.pools {
			for _, a := range []*hostfs.Attr{p.total, p.free} {
				if a != nil {
					a.Close()
				}
			}
		}
	}
	h.nodes, h.opened = nil, false
}
