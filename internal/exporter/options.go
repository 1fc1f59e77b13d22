package exporter

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// Options configure the exporter; the zero value reads the live host.
type Options struct {
	// Root is where the host is read from: "/" live, a tree holding sys/,
	// a copy of /sys/class/infiniband alone, or a capture archive.
	Root string

	// Expect are doctor's expectations (rate, link layer) for the findings.
	Expect hostcheck.Options
	// FindingsInterval is the least time between two full inventories of
	// the host (PCIe links, GPU↔NIC paths) and evaluations of doctor's
	// findings on them; scrapes in between get the cached result. Zero
	// means DefaultFindingsInterval.
	FindingsInterval time.Duration
	// NoFindings leaves the findings out (the topology is still served).
	NoFindings bool

	// Fabric turns on the fabric collector; FabricRunner runs the
	// infiniband-diags tools (fabric.Exec on a real host).
	Fabric       bool
	FabricRunner fabric.Runner
	// FabricInterval is the least time between two fabric scans
	// (default DefaultFabricInterval); FabricWait is how long a scrape waits
	// for a scan in flight before serving the last result (default 5s).
	FabricInterval time.Duration
	FabricWait     time.Duration
	// FabricCheck are the fabric rules' options (expected rate, thresholds, plan).
	FabricCheck fabriccheck.Options

	// PHY turns on the physical-layer poller: every PHYInterval (default
	// DefaultPHYInterval) it reads the outputs saved under the root's
	// var/lib/rdmalab/phy/ and, on a live host, runs mstlink and ethtool
	// -S, out of band; scrapes serve the last poll (docs/phy.md).
	// PHYPoll replaces the poll (tests).
	PHY         bool
	PHYInterval time.Duration
	PHYPoll     func(context.Context) ([]phy.Port, error)

	// NCCLRAS is an NCCL RAS endpoint (host:port; NCCL listens on
	// localhost:28028 unless NCCL_RAS_ADDR says otherwise) polled every
	// NCCLRASInterval (default DefaultNCCLRASInterval), each poll bounded
	// by NCCLRASTimeout (default DefaultNCCLRASTimeout), out of band:
	// scrapes serve the last poll's rank states. Empty: off.
	NCCLRAS         string
	NCCLRASInterval time.Duration
	NCCLRASTimeout  time.Duration

	// ScrapeTimeout bounds one scrape (default 10s).
	ScrapeTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (default
	// DefaultIdleTimeout); MaxConnections caps the connections served at
	// once (default DefaultMaxConnections): each open connection costs
	// some 28 KB, and neither idle nor excess ones may grow the daemon
	// toward its unit's memory cap.
	IdleTimeout    time.Duration
	MaxConnections int
	// Now is the clock (tests pin it); nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultFindingsInterval = 60 * time.Second
	DefaultFabricInterval   = 60 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultMaxConnections   = 512
	DefaultPHYInterval      = 60 * time.Second
	DefaultNCCLRASInterval  = 30 * time.Second
	DefaultNCCLRASTimeout   = 10 * time.Second
)

func (o Options) withDefaults() Options {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.FindingsInterval <= 0 {
		o.FindingsInterval = DefaultFindingsInterval
	}
	if o.FabricInterval == 0 {
		o.FabricInterval = DefaultFabricInterval
	}
	if o.FabricWait == 0 {
		o.FabricWait = 5 * time.Second
	}
	if o.PHYInterval <= 0 {
		o.PHYInterval = DefaultPHYInterval
	}
	if o.NCCLRASInterval <= 0 {
		o.NCCLRASInterval = DefaultNCCLRASInterval
	}
	if o.NCCLRASTimeout <= 0 {
		o.NCCLRASTimeout = DefaultNCCLRASTimeout
	}
	if o.ScrapeTimeout == 0 {
		o.ScrapeTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}
