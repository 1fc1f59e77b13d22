package route

import (
	"bytes"
	"context"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/userfile"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

// Input says where the cabling and the forwarding tables come from. An
// empty file means the live fabric, read through Runner from this node.
type Input struct {
	// FabricFile is an ibnetdiscover output (or ibsim netlist), or a
	// fabric snapshot ('rdmalab fabric scan --output json', bare or in
	// its envelope).
	FabricFile string
	// RoutesFile is a forwarding table dump: ibroute, dump_fts/dump_lfts
	// output, or OpenSM's opensm-lfts.dump.
	RoutesFile string
	Runner     fabric.Runner
}

// Load reads the cabling and the tables and joins them. The source string
// says what was read, for the report.
func Load(ctx context.Context, in Input) (*Fabric, string, error) {
	var lfts []LFT
	var routesSrc string
	if in.RoutesFile != "" {
		fd, err := userfile.Open(in.RoutesFile, userfile.Routes)
		if err != nil {
			return nil, "", err
		}
		defer fd.Close()
		if lfts, err = ParseLFTs(fd); err != nil {
			return nil, "", fmt.Errorf("%s: %w", in.RoutesFile, err)
		}
		if len(lfts) == 0 {
			return nil, "", fmt.Errorf("%s: no forwarding table in it (want ibroute, dump_fts or opensm-lfts.dump output)", in.RoutesFile)
		}
		routesSrc = in.RoutesFile
	} else {
		if in.Runner == nil {
			return nil, "", fmt.Errorf("no forwarding tables: give a dump file or a live fabric")
		}
		var err error
		if lfts, err = ScanLFTs(ctx, in.Runner); err != nil {
			return nil, "", err
		}
		routesSrc = "dump_fts"
	}
	if in.FabricFile == "" {
		if in.Runner == nil {
			return nil, "", fmt.Errorf("no fabric: give a file or a live fabric")
		}
		s, err := fabric.Scan(ctx, in.Runner, fabric.ScanOptions{})
		if err != nil {
			return nil, "", err
		}
		f, err := FromSnapshot(s, lfts)
		return f, "live scan; routes " + routesSrc, err
	}
	b, err := userfile.ReadFile(in.FabricFile, userfile.FabricSnapshot)
	if err != nil {
		return nil, "", err
	}
	src := in.FabricFile + "; routes " + routesSrc
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		raw, err := envelope.Payload(b, envelope.FabricSnapshot)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", in.FabricFile, err)
		}
		s, err := fabric.Decode(bytes.NewReader(raw))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", in.FabricFile, err)
		}
		f, err := FromSnapshot(s, lfts)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", in.FabricFile, err)
		}
		return f, src, nil
	}
	topo, err := fabric.ParseTopology(string(b))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", in.FabricFile, err)
	}
	if len(topo.Links) == 0 {
		return nil, "", fmt.Errorf("%s: no links in it (want ibnetdiscover output or a fabric snapshot)", in.FabricFile)
	}
	f, err := FromTopology(topo, lfts)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", in.FabricFile, err)
	}
	return f, src, nil
}
