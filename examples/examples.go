// Package examples embeds the example hosts the demo and the README use:
// snapshots of the seed articles' machines, made by running the real
// inventory on trees from internal/testhost (a test keeps them in sync).
package examples

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
)

//go:embed *.json
var files embed.FS

//go:embed fabric/*.json
var fabricFiles embed.FS

// Names lists the example hosts, sorted.
func Names() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(out)
	return out
}

// Load returns the example host called name.
func Load(name string) (*host.Snapshot, error) {
	data, err := files.ReadFile(name + ".json")
	if err != nil {
		return nil, fmt.Errorf("no example host %q (have %s)", name, strings.Join(Names(), ", "))
	}
	s, err := host.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("example %s: %w", name, err)
	}
	return s, nil
}

// FabricNames lists the recorded example fabrics, sorted.
func FabricNames() []string {
	ents, _ := fabricFiles.ReadDir("fabric")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(out)
	return out
}

// LoadFabric returns the recorded example fabric called name: a scan of an
// ibsim fabric by the real OpenSM and infiniband-diags.
func LoadFabric(name string) (*fabric.Snapshot, error) {
	data, err := fabricFiles.ReadFile("fabric/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("no example fabric %q (have %s)", name, strings.Join(FabricNames(), ", "))
	}
	s, err := fabric.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("example fabric %s: %w", name, err)
	}
	return s, nil
}
