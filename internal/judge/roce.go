package judge

import (
	"fmt"
	"path/filepath"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
)

// The RoCE formats parse into the host model's RoCE QoS and GID tables
// (the parsers live beside the model, internal/host) and are judged by
// doctor's RoCE rules, so a saved mlnx_qos says what doctor would.

// roceSnapshot is a host snapshot holding only what one saved output showed.
func roceSnapshot(name string) *host.Snapshot {
	return &host.Snapshot{SchemaVersion: host.SchemaVersion, Hostname: filepath.Base(name), Source: name}
}

func judgeQoS(parse func([]byte, string) ([]host.RoCEQoS, error)) func(string, []byte, Options) ([]check.Finding, any, error) {
	return func(name string, b []byte, opt Options) ([]check.Finding, any, error) {
		qs, err := parse(b, filepath.Base(name))
		if err != nil {
			return nil, nil, err
		}
		s := roceSnapshot(name)
		for _, q := range qs {
			// No port state in a saved output: judge the QoS as shown,
			// keyed by the netdev or, without one, the RDMA port; the
			// device stays for the fixes that name it.
			if q.Netdev == "" && q.Device != "" {
				q.Netdev = fmt.Sprintf("%s port %d", q.Device, q.Port)
			}
			s.AddRoCEQoS(q)
		}
		return hostcheck.RunRoCE(s), s.RoCE, nil
	}
}

func judgeShowGIDs(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	devs, err := host.ParseShowGIDs(b)
	if err != nil {
		return nil, nil, err
	}
	s := roceSnapshot(name)
	s.RDMADevices = devs
	return hostcheck.RunRoCE(s), devs, nil
}

// judgeEthtoolS judges pause counters: storm events in the last reading,
// and rising pauses when the file holds two readings of one interface.
func judgeEthtoolS(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	rs, err := host.ParseEthtoolS(b)
	if err != nil {
		return nil, nil, err
	}
	s := roceSnapshot(name)
	base := filepath.Base(name)
	var fs []check.Finding
	last := map[string]host.EthtoolReading{}
	for _, r := range rs {
		src := fmt.Sprintf("%s line %d", base, r.Line)
		if prev, ok := last[r.Netdev]; ok {
			a := host.Read[map[string]uint64]{Value: prev.Counters, Source: fmt.Sprintf("%s line %d", base, prev.Line)}
			sub := r.Netdev
			if sub == "" {
				sub = "interface not named in the output"
			}
			fs = append(fs, hostcheck.PauseRising(s.Hostname, sub, a, *host.Got(r.Counters, src), "two readings")...)
		}
		last[r.Netdev] = r
		s.AddRoCEQoS(host.RoCEQoS{Netdev: r.Netdev, Counters: host.Got(r.Counters, src)})
	}
	return append(fs, hostcheck.RunRoCE(s)...), s.RoCE, nil
}
