package cli

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/exporter"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/ncclrun"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"github.com/spf13/cobra"
)

func newExporterCmd() *cobra.Command {
	var (
		o                   exporter.Options
		listen, webConfig   string
		textfile, linkLayer string
		findingsInterval    time.Duration
		fabricCA            string
		fabricPort          int
		fabricTimeout       time.Duration
		rate, fabricRate    string
	)
	c := &cobra.Command{
		Use:   "exporter",
		Short: "Serve RDMA port counters, PCIe links, findings and the fabric to Prometheus",
		Long: `exporter serves this host's RDMA telemetry for Prometheus on --listen /metrics:
  - per RDMA port (labels device, port): node_exporter's infiniband counters
    under rdmalab_infiniband_ (data octets ×4 into bytes), the mlx5 RoCE/IB
    hw_counters with node_exporter v1.11's names, state, physical state, rate
    in bytes per second, link layer and firmware in rdmalab_infiniband_info,
    and counters that are unreadable or saturated (unknown is not zero);
  - PCIe link now and max per NIC and GPU, the GPU↔NIC path level, hugepages
    per NUMA node;
  - doctor's findings as rdmalab_finding{check,severity,subject} 1 and counts
    per outcome, evaluated at most every --findings.interval and cached;
  - with --collector.fabric, the InfiniBand fabric seen from this node: per
    switch and HCA port counters, rates and links from one discovery plus PMA
    queries, fabric check's findings, subnet managers. Scans run in the
    background and a scrape serves the last one.
Every collector reports rdmalab_scrape_collector_{duration_seconds,success};
one failing device or collector never blanks the others. Nothing is written
to the host. The host collectors need no privileges; --collector.fabric needs
access to the umad device (root or the rdma group).

--web.config.file takes the Prometheus exporter-toolkit file for TLS and
basic auth. --textfile PATH gathers once, writes PATH for node_exporter's
textfile collector and exits (cron it for very large fabrics).
docs/exporter.md lists every metric; deploy/ has alert rules and a Grafana
dashboard.`,
		Example: `  rdmalab exporter                                   # :9879/metrics
  rdmalab exporter --listen 127.0.0.1:9879 --expect-rate 400
  rdmalab exporter --root ./captured-host            # a captured tree, for testing
  rdmalab exporter --collector.fabric --fabric.interval 5m     # also the fabric, from this node
  rdmalab exporter --nccl-ras localhost              # also the NCCL job's rank states (RAS, port 28028)
  rdmalab exporter --collector.fabric --textfile /var/lib/node_exporter/textfile/rdmalab.prom
  curl -s localhost:9879/metrics | grep rdmalab_finding`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{stopIsSuccess: "a service asked to stop has done its job"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			expect, err := expectFlags(rate, linkLayer)
			if err != nil {
				return err
			}
			fabricExpect, err := linkrate.NewExpect(fabricRate, "", 0, "--fabric.expect-rate")
			if err != nil {
				return usageErr("--fabric.expect-rate: %v", err)
			}
			if webConfig != "" {
				// exporter-toolkit reads it again later; this refuses a
				// FIFO or device before anything blocks on it.
				if _, err := userfile.ReadFile(webConfig, userfile.Config); err != nil {
					return usageErr("--web.config.file %v", err)
				}
			}
			for _, d := range []struct {
				flag    string
				v       time.Duration
				lo, hi  time.Duration
				zeroOff bool
			}{
				{"--findings.interval", findingsInterval, time.Second, 24 * time.Hour, true},
				{"--scrape-timeout", o.ScrapeTimeout, 100 * time.Millisecond, 10 * time.Minute, false},
				{"--fabric.interval", o.FabricInterval, time.Second, 24 * time.Hour, false},
				{"--fabric.timeout", fabricTimeout, time.Second, time.Hour, false},
				{"--phy.interval", o.PHYInterval, time.Second, 24 * time.Hour, false},
				{"--nccl-ras.interval", o.NCCLRASInterval, time.Second, 24 * time.Hour, false},
				{"--nccl-ras.timeout", o.NCCLRASTimeout, 100 * time.Millisecond, 10 * time.Minute, false},
			} {
				if d.zeroOff && d.v == 0 {
					continue
				}
				if d.v < d.lo || d.v > d.hi {
					off := ""
					if d.zeroOff {
						off = ", or 0 for off"
					}
					return usageErr("%s %s: want a duration from %s to %s%s", d.flag, d.v, d.lo, d.hi, off)
				}
			}
			if o.NCCLRAS != "" {
				addr, err := rasAddr(o.NCCLRAS)
				if err != nil {
					return usageErr("--nccl-ras %q: %v", o.NCCLRAS, err)
				}
				o.NCCLRAS = addr
			}
			if fabricPort < 0 || fabricPort > 254 {
				return usageErr("--fabric.port %d: want a port number from 1 to 254, or 0 for the tools' default", fabricPort)
			}
			o.Expect = expect
			o.FindingsInterval = findingsInterval
			o.NoFindings = findingsInterval == 0
			o.FabricRunner = fabric.Exec{CA: fabricCA, Port: fabricPort, Timeout: fabricTimeout}
			o.FabricCheck = fabriccheck.Options{Expect: fabricExpect}
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if textfile != "" {
				// One shot: wait for every collector, however long the fabric takes.
				o.ScrapeTimeout, o.FabricWait = 10*fabricTimeout, 10*fabricTimeout
			}
			if name, ok := strings.CutPrefix(o.Root, "example:"); ok {
				// An example is a snapshot: counters that never move, nothing
				// to re-read. Say what the exporter takes instead of "stat".
				return usageErr("--root %s: the built-in examples are snapshots; the exporter re-reads a tree on every scrape: give a directory holding sys/, a copy of /sys/class/infiniband or a capture (rdmalab gather); 'rdmalab doctor --snapshot example:%s' judges the example", o.Root, name)
			}
			e, err := exporter.New(o)
			if err != nil {
				return usageErr("--root %v", err)
			}
			defer e.Close()
			if textfile != "" {
				if err := e.WriteTextfile(textfile); err != nil {
					return usageErr("--textfile %v", err)
				}
				return nil
			}
			// Main's context ends on SIGINT or SIGTERM: the server then
			// finishes the scrapes in flight and the exporter exits 0,
			// since a service told to stop is not a failure.
			ctx := cmd.Context()
			// SIGHUP (a unit's ExecReload, a terminal closing) would end
			// the process with 129, which Restart=on-failure does not
			// restart: it re-reads what can be reloaded and logs one line.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for {
					select {
					case <-hup:
						e.Reload(webConfig)
					case <-ctx.Done():
						return
					}
				}
			}()
			if err := e.ListenAndServe(ctx, listen, webConfig); err != nil {
				// exporter-toolkit's YAML errors span lines and name its Go
				// type: one line, in the file's words.
				msg := strings.Join(strings.Fields(err.Error()), " ")
				return usageErr("%s", strings.ReplaceAll(msg, "into web.Config", "as a web configuration (tls_server_config, basic_auth_users, http_server_config)"))
			}
			if ctx.Err() != nil {
				o.Logger.Info("stopped on request") // exits 0: stopIsSuccess
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", ":9879", "address to serve /metrics on")
	f.StringVar(&webConfig, "web.config.file", "", "exporter-toolkit web configuration (TLS, basic auth)")
	f.StringVar(&o.Root, "root", "/", "read the host from this root: a captured tree, a copy of /sys/class/infiniband, or a capture .tar.gz")
	f.StringVar(&rate, "expect-rate", "", `rate every active RDMA port should run at, for the findings: "200", "4X HDR", "25GbE"`)
	f.StringVar(&linkLayer, "expect-link-layer", "", "InfiniBand or Ethernet, for the findings")
	f.DurationVar(&findingsInterval, "findings.interval", exporter.DefaultFindingsInterval, "read the whole host (PCIe links, GPU paths) and evaluate doctor's findings at most this often (0: no findings, topology every 60s)")
	f.DurationVar(&o.ScrapeTimeout, "scrape-timeout", 10*time.Second, "give up on a scrape's collectors after this long")
	f.DurationVar(&o.IdleTimeout, "web.idle-timeout", exporter.DefaultIdleTimeout, "close a keep-alive connection idle this long")
	f.IntVar(&o.MaxConnections, "web.max-connections", exporter.DefaultMaxConnections, "serve at most this many connections at once (the rest wait)")
	f.BoolVar(&o.Fabric, "collector.fabric", false, "also export the InfiniBand fabric reachable from this node (needs infiniband-diags and umad access)")
	f.StringVar(&fabricCA, "fabric.ca", "", "local HCA to scan the fabric from (default: the tools' first active port)")
	f.IntVar(&fabricPort, "fabric.port", 0, "port of --fabric.ca")
	f.DurationVar(&o.FabricInterval, "fabric.interval", exporter.DefaultFabricInterval, "scan the fabric at most this often; scrapes in between serve the last scan")
	f.DurationVar(&fabricTimeout, "fabric.timeout", 2*time.Minute, "give up on any one diagnostic tool after this long")
	f.StringVar(&fabricRate, "fabric.expect-rate", "", `rate every fabric link should run at, for the fabric findings: "200", "4X HDR"`)
	f.BoolVar(&o.PHY, "collector.phy", false, "also export each port's BER, FEC and module readings, polled out of band (saved outputs under var/lib/rdmalab/phy/; live: mstlink and ethtool -S; docs/phy.md)")
	// --fabric names a fabric snapshot file everywhere else.
	alias(f, "collector.fabric", "fabric")
	alias(f, "collector.phy", "phy")
	f.DurationVar(&o.PHYInterval, "phy.interval", exporter.DefaultPHYInterval, "poll the physical layer this often; scrapes serve the last poll")
	f.StringVar(&o.NCCLRAS, "nccl-ras", "", fmt.Sprintf("also export the state of every NCCL rank of the job whose RAS endpoint is HOST[:PORT] (default port %d; NCCL_RAS_ADDR's), polled out of band (docs/exporter.md)", ncclrun.DefaultRASPort))
	f.DurationVar(&o.NCCLRASInterval, "nccl-ras.interval", exporter.DefaultNCCLRASInterval, "poll the NCCL RAS endpoint this often; scrapes serve the last poll")
	f.DurationVar(&o.NCCLRASTimeout, "nccl-ras.timeout", exporter.DefaultNCCLRASTimeout, "give up on one RAS poll (connect, handshake, report) after this long")
	f.StringVar(&textfile, "textfile", "", "gather once, write this .prom file for node_exporter's textfile collector, and exit")
	return c
}

// rasAddr is --nccl-ras as host:port, NCCL's RAS port when none is given.
func rasAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil { // no port: a name, an address, a bare or bracketed IPv6 address
		host, port = strings.Trim(s, "[]"), strconv.Itoa(ncclrun.DefaultRASPort)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want 1 to 65535", port)
	}
	if host == "" {
		return "", fmt.Errorf("no host (localhost, if the job runs on this node)")
	}
	return net.JoinHostPort(host, port), nil
}
