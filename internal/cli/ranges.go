package cli

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// numRange is what a numeric flag accepts when given: checked once, as
// flags are parsed, for every command, with one line naming the flag, the
// value and the range. A default outside the range (0 meaning "derive
// it") stays allowed by not giving the flag.
type numRange struct {
	lo, hi float64 // durations in seconds
	what   string  // the unit in words
}

// checkedByCommand: flags a command checks itself (with messages its tests
// pin); their range here only words parse errors.
var checkedByCommand = map[string]bool{
	" bench --seconds": true, " bench --timeout": true, " plan vms --vms": true,
	" fabric check --interval": true, " fabric check --port": true, " fabric check --timeout": true,
	" fabric scan --interval": true, " fabric scan --port": true, " fabric scan --timeout": true,
}

// flagRanges holds every numeric flag, by command path without "rdmalab"
// and flag; a test keeps it complete.
var flagRanges = map[string]numRange{
	" --width":                          {0, 1000, "columns (0: the terminal's width)"},
	" bench --samples":                  {1, 100, "samples per direction"},
	" bench --seconds":                  {1, 3600, "seconds per sample"},
	" bench --timeout":                  {1, 86400, "per sample"},
	" bench agent tcp-client --seconds": {0.1, 3600, "seconds"},
	" bench agent tcp-server --timeout": {1, 86400, ""},
	" bench schedule --port":            {1, 254, "an HCA port number"},
	" bench --port":                     {1, 254, "an HCA port number (the fabric scan's, for --schedule cover)"},
	" bench schedule --timeout":         {1, 86400, "per tool"},
	" design fabric --gpus-per-node":    {0, 64, "GPUs per node"},
	" design fabric --endpoints":        {1, 1e6, "fabric endpoints"},
	" design fabric --nics-per-node":    {1, 64, "NICs per node"},
	" design fabric --nodes":            {1, 1e6, "nodes"},
	" design fabric --oversubscription": {0.1, 64, "host ports per uplink port"},
	" design fabric --radix":            {4, 1024, "switch ports"},
	" design frr --leaf-prefix-len":     {8, 30, "prefix bits"},
	" design frr --leaves":              {1, 1024, "leaf switches"},
	" design frr --spines":              {1, 256, "spine switches"},
	" design transfer --efficiency":     {0.01, 1, "share of the line rate"},
	" design transfer --links":          {1, 1024, "links"},
	" design transfer --mtu":            {256, 65536, "bytes"},
	" design transfer --streams":        {1, 1e5, "streams"},
	" design uplink --gpus":             {1, 1e6, "GPUs"},
	" design uplink --max-utilization":  {0.01, 1, "share of the uplink"},
	" design uplink --per-gpu-ingest":   {0.001, 1000, "GB/s per GPU"},
	" exporter --fabric.interval":       {1, 86400, ""},
	" exporter --phy.interval":          {1, 86400, ""},
	" exporter --nccl-ras.interval":     {1, 86400, ""},
	" exporter --nccl-ras.timeout":      {0.1, 600, "per poll"},
	" exporter --fabric.port":           {1, 254, "an HCA port number"},
	" exporter --fabric.timeout":        {1, 3600, "per tool"},
	" exporter --findings.interval":     {0, 86400, "0 turns findings off"},
	" exporter --scrape-timeout":        {0.1, 600, ""},
	" exporter --web.idle-timeout":      {0.1, 86400, ""},
	" exporter --web.max-connections":   {1, 1e6, "connections"},
	" fabric check --interval":          {1, 86400, ""},
	" fabric check --port":              {1, 254, "an HCA port number"},
	" fabric check --timeout":           {1, 86400, "per tool"},
	" fabric scan --interval":           {1, 86400, ""},
	" fabric scan --port":               {1, 254, "an HCA port number"},
	" fabric scan --timeout":            {1, 86400, "per tool"},
	" nccl judge --mtu":                 {256, 4096, "RDMA MTU bytes"},
	" nccl judge --rails":               {1, 64, "NICs per node"},
	" nccl judge --nodes":               {1, 1e5, "nodes the run spanned"},
	" nccl judge --ranks-per-node":      {1, 1024, "ranks per node"},
	" nccl ras --port":                  {1, 65535, "a TCP port"},
	" nccl ras --polls":                 {1, 10000, "polls"},
	" nccl ras --interval":              {0.1, 3600, "between polls"},
	" nccl ras --timeout":               {0.1, 600, "per poll"},
	" nccl run --gpus-per-node":         {1, 64, "ranks per node"},
	" nccl run --node-counts":           {2, 1e5, "nodes per run"},
	" nccl run --rails":                 {1, 64, "NICs per node"},
	" nccl run --timeout":               {1, 172800, "per run"},
	" plan vms --housekeeping-cores":    {0, 1024, "cores"},
	" plan vms --vcpus":                 {1, 4096, "vCPUs per VM"},
	" plan vms --vms":                   {1, 4096, "VMs"},
	" slurm health --scontrol-timeout":  {1, 600, ""},
	" slurm health --time-limit":        {1, 86400, ""},
}

// rangeOf finds the range of flag f as seen from command c (a persistent
// flag is declared on an ancestor).
func rangeOf(c *cobra.Command, name string) (numRange, bool) {
	r, _, ok := rangeKey(c, name)
	return r, ok
}

func rangeKey(c *cobra.Command, name string) (numRange, string, bool) {
	// An old spelling (alias) has its new name's range.
	if f := c.Flags().Lookup(name); f != nil && f.Hidden {
		if n, ok := strings.CutPrefix(f.Usage, "old spelling of --"); ok {
			name = n
		}
	}
	for p := c; p != nil; p = p.Parent() {
		key := strings.TrimPrefix(p.CommandPath(), "rdmalab") + " --" + name
		if r, ok := flagRanges[key]; ok {
			return r, key, true
		}
	}
	return numRange{}, "", false
}

// checkRanges validates every numeric flag the user gave.
func checkRanges(c *cobra.Command) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		r, key, ok := rangeKey(c, f.Name)
		if err != nil || !ok || checkedByCommand[key] {
			return
		}
		var values []float64
		switch f.Value.Type() {
		case "duration":
			d, _ := time.ParseDuration(f.Value.String())
			values = []float64{d.Seconds()}
		case "intSlice":
			s, _ := f.Value.(pflag.SliceValue)
			for _, v := range s.GetSlice() {
				n, _ := strconv.ParseFloat(v, 64)
				values = append(values, n)
			}
		default:
			n, _ := strconv.ParseFloat(f.Value.String(), 64)
			values = []float64{n}
		}
		for _, v := range values {
			if v < r.lo || v > r.hi || math.IsNaN(v) {
				shown := f.Value.String()
				if f.Value.Type() == "intSlice" {
					shown = strconv.FormatFloat(v, 'f', -1, 64) // the one value at fault
				}
				err = usageErr("--%s %s: %s", f.Name, shown, r.describe(f.Value.Type()))
				return
			}
		}
	})
	return err
}

// describe says what a flag accepts: "want 1 to 64 (NICs per node)".
func (r numRange) describe(typ string) string {
	format := func(v float64) string {
		switch typ {
		case "duration":
			return time.Duration(v * float64(time.Second)).String()
		case "float64":
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	s := "want " + format(r.lo) + " to " + format(r.hi)
	if typ == "int" || typ == "intSlice" {
		s = "want a whole number from " + format(r.lo) + " to " + format(r.hi)
	}
	if r.what != "" {
		s += " (" + r.what + ")"
	}
	return s
}

// pflagValueRE is pflag's message for a value it could not parse.
var pflagValueRE = lazyre.New(`^invalid argument "(.*)" for "(?:-\w, )?--([\w.-]+)" flag: (.*)$`)

// plainFlagError rewords pflag's parse errors ("strconv.ParseInt: parsing
// …: value out of range") as the flag, the value and what it accepts.
func plainFlagError(c *cobra.Command, err error) error {
	if e, ok := unknownFlag(c, err); ok {
		return e
	}
	m := pflagValueRE().FindStringSubmatch(err.Error())
	if m == nil {
		return usageErr("%v (see '%s --help')", err, c.CommandPath())
	}
	value, name, why := m[1], m[2], m[3]
	f := c.Flags().Lookup(name)
	if f == nil {
		return usageErr("--%s %q: %s", name, value, why)
	}
	want := "want " + map[string]string{"int": "a whole number", "intSlice": "whole numbers, comma-separated", "float64": "a number", "duration": "a duration such as 30s, 5m or 1h", "bool": "true or false", "format": "table or json"}[f.Value.Type()]
	if r, ok := rangeOf(c, name); ok {
		want = r.describe(f.Value.Type())
	}
	return usageErr("--%s %s: %s", name, strconv.Quote(value), want)
}
