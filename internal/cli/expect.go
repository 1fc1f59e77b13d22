package cli

import (
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/spf13/pflag"
)

// expect reads the one flag pair, --expect-rate and --expect-link-layer
// ("" for none), into linkrate's one expectation type, citing the flags
// as its source.
func expect(rate, linkLayer string) (linkrate.Expect, error) {
	e, err := linkrate.NewExpect(rate, "", 0, "--expect-rate")
	if err != nil {
		return e, usageErr("--expect-rate: %v", err)
	}
	if linkLayer != "" {
		l, err := linkrate.ParseLayer(linkLayer)
		if err != nil || l == linkrate.TCP {
			return e, usageErr("--expect-link-layer %q: want InfiniBand (IB) or RoCE (Ethernet)", linkLayer)
		}
		e.Layer = l
		if rate == "" {
			e.Source = "--expect-link-layer"
		}
	}
	return e, nil
}

// expectFlags reads --expect-rate and --expect-link-layer the same way in
// every command that judges hosts (doctor, slurm health, exporter).
func expectFlags(rate, linkLayer string) (hostcheck.Options, error) {
	e, err := expect(rate, linkLayer)
	return hostcheck.Options{Expect: e}, err
}

// alias adds old spellings of a flag, hidden, sharing its value (a bool
// alias still needs no value): scripts written against them keep working,
// silently, while help shows one name per idea (docs/cli.md).
func alias(f *pflag.FlagSet, name string, old ...string) {
	fl := f.Lookup(name)
	for _, o := range old {
		f.AddFlag(&pflag.Flag{Name: o, Usage: "old spelling of --" + name, Value: fl.Value, DefValue: fl.DefValue, NoOptDefVal: fl.NoOptDefVal, Hidden: true})
	}
}
