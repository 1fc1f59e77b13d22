package inventory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/procgroup"
)

// Tool runs one diagnostic command and returns its standard output. It
// is how inventory asks mlnx_qos, dcb and ethtool what sysfs does not
// show; tests pass stand-ins that replay captured output.
type Tool func(ctx context.Context, name string, args ...string) ([]byte, error)

// ToolTimeout bounds one tool run on a live host.
const ToolTimeout = 5 * time.Second

// ExecTool runs commands from PATH, each in its own process group killed
// at timeout; a tool that is not installed is an exec.ErrNotFound error.
func ExecTool(timeout time.Duration) Tool {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := procgroup.Command(ctx, 0, time.Second, name, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ctx.Err() == context.DeadlineExceeded {
			return out.Bytes(), fmt.Errorf("%s: no answer within %s", name, timeout)
		}
		if err != nil {
			return out.Bytes(), fmt.Errorf("%s: %w: %s", name, err, bytes.TrimSpace(errb.Bytes()))
		}
		return out.Bytes(), nil
	}
}

// roce reads the QoS of every RoCE port's netdevs: the MLNX_OFED sysfs
// files, the port's forced traffic class, rdma_cm's configfs defaults,
// then (with a Tool) mlnx_qos or dcb for what sysfs did not show, and
// ethtool -S for the pause and discard counters. An entry is made for
// every RoCE netdev, read or not: what stays nil is unknown.
func (c *collector) roce() {
	for _, d := range c.snap.RDMADevices {
		for _, p := range d.Ports {
			if p.LinkLayer != "Ethernet" {
				continue
			}
			for _, nd := range p.NetDevs {
				c.snap.AddRoCEQoS(c.roceQoS(d.Name, p.Port, nd))
			}
		}
	}
}

// rdmaMTU reads each RoCE port's active and maximum RDMA MTU, which
// sysfs does not show, from ibv_devinfo -v (one run for every device).
func (c *collector) rdmaMTU() {
	roce := false
	for _, d := range c.snap.RDMADevices {
		for _, p := range d.Ports {
			roce = roce || p.LinkLayer == "Ethernet"
		}
	}
	if c.tools == nil || !roce {
		return
	}
	const src = "ibv_devinfo -v"
	out, err := c.tools(context.Background(), "ibv_devinfo", "-v")
	if err != nil {
		if !errors.Is(err, exec.ErrNotFound) {
			c.fail("rdma devices", src, err)
		}
		return
	}
	read := host.ParseDevinfo(out)
	for i := range c.snap.RDMADevices {
		d := &c.snap.RDMADevices[i]
		rd := read.RDMA(d.Name)
		if rd == nil {
			continue
		}
		for j := range d.Ports {
			p := &d.Ports[j]
			for _, rp := range rd.Ports {
				if rp.Port != p.Port {
					continue
				}
				if rp.ActiveMTU != nil {
					p.ActiveMTU = host.Got(rp.ActiveMTU.Value, src)
				}
				if rp.MaxMTU != nil {
					p.MaxMTU = host.Got(rp.MaxMTU.Value, src)
				}
			}
		}
	}
}

func (c *collector) roceQoS(dev string, port int, nd string) host.RoCEQoS {
	q := host.RoCEQoS{Netdev: nd, Device: dev, Port: port}
	subject := "netdev " + nd
	dir := netClass + "/" + nd
	files := []string{dir + "/qos/trust", dir + "/qos/dscp2prio", dir + "/qos/pfc",
		dir + "/ecn/roce_np/cnp_dscp", dir + "/ecn/roce_np/cnp_802p_prio",
		fmt.Sprintf("%s/%s/tc/%d/traffic_class", ibClass, dev, port),
		fmt.Sprintf("/sys/kernel/config/rdma_cm/%s/ports/%d/default_roce_tos", dev, port),
		fmt.Sprintf("/sys/kernel/config/rdma_cm/%s/ports/%d/default_roce_mode", dev, port)}
	for _, role := range []string{"roce_np", "roce_rp"} {
		e := dir + "/ecn/" + role + "/enable"
		for _, name := range c.list(subject, e) {
			if _, err := strconv.Atoi(name); err == nil {
				files = append(files, e+"/"+name)
			}
		}
	}
	for _, f := range files {
		s, err := c.fs.ReadString(f)
		if err != nil {
			continue // absent: unknown, and what tools are for
		}
		if _, err := q.SetFromSysfs(f, s, ""); err != nil {
			c.fail(subject, f, err)
		}
	}
	if c.tools == nil {
		return q
	}
	ctx := context.Background()
	if q.Trust == nil || q.PFC == nil || q.PrioTC == nil {
		c.toolQoS(&q, subject, host.ParseMlnxQos, "mlnx_qos", "-i", nd)
	}
	if q.PFC == nil || q.DSCPPrio == nil || q.PrioTC == nil {
		for _, obj := range []string{"pfc", "app", "ets"} {
			c.toolQoS(&q, subject, host.ParseDCB, "dcb", "-j", obj, "show", "dev", nd)
		}
	}
	if out, err := c.tools(ctx, "ethtool", "-S", nd); err == nil {
		rs, err := host.ParseEthtoolS(out)
		if err != nil {
			c.fail(subject, "ethtool -S "+nd, err)
		} else {
			q.Counters = host.Got(rs[len(rs)-1].Counters, "ethtool -S "+nd)
		}
	} else if !errors.Is(err, exec.ErrNotFound) {
		c.fail(subject, "ethtool -S "+nd, err)
	}
	return q
}

// toolQoS runs one QoS tool and fills what q does not know yet; a tool
// that is not installed is not an error (sysfs or another tool may say).
func (c *collector) toolQoS(q *host.RoCEQoS, subject string, parse func([]byte, string) ([]host.RoCEQoS, error), name string, args ...string) {
	src := name
	for _, a := range args {
		src += " " + a
	}
	out, err := c.tools(context.Background(), name, args...)
	if err != nil {
		if !errors.Is(err, exec.ErrNotFound) {
			c.fail(subject, src, err)
		}
		return
	}
	qs, err := parse(out, src)
	if err != nil {
		if !errors.Is(err, host.ErrNoQoS) {
			c.fail(subject, src, err)
		}
		return
	}
	// A tool asked about one interface answers about it, even where its
	// output names it otherwise (a wrapper script's echo of another name).
	if len(qs) == 1 {
		qs[0].Netdev = q.Netdev
	}
	for _, r := range qs {
		if r.Netdev == "" || r.Netdev == q.Netdev {
			r.Netdev, r.Device, r.Port = q.Netdev, q.Device, q.Port
			q.Merge(r)
		}
	}
}
