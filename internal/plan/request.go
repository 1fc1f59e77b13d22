package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	size "github.com/rdmalab/rdmalab/internal/units"
)

// RequestError names the request field at fault and why; the CLI maps the
// field to its flag.
type RequestError struct {
	Field  string // vms, vcpus, memory, housekeeping_cores, page_size, host_reserve, policy, name_prefix, osinfo
	Value  string
	Reason string
}

func (e *RequestError) Error() string { return fmt.Sprintf("%s %s: %s", e.Field, e.Value, e.Reason) }

// namePrefix is what may become a file name and a libvirt domain name.
var namePrefix = lazyre.New(`^[A-Za-z][A-Za-z0-9_-]{0,40}$`)

// osInfoName is an osinfo short id (linux2022, centos-stream9, rhel9.4,
// ubuntu24.04): it lands unquoted in virt-install.sh.
var osInfoName = lazyre.New(`^[a-z][a-z0-9._-]{0,63}$`)

// Validate refuses a request that cannot mean what was typed. Explicit
// values are never replaced: zero VMs or zero housekeeping cores are
// errors, not a cue to use a default.
func (r Request) Validate() error {
	bad := func(field, value, reason string) error {
		return &RequestError{Field: field, Value: value, Reason: reason}
	}
	if len(r.Groups) == 0 && r.VMs < 1 {
		return bad("vms", fmt.Sprint(r.VMs), "want at least 1 VM")
	}
	if r.VCPUs < 0 {
		return bad("vcpus", fmt.Sprint(r.VCPUs), "want a positive number of vCPUs (or leave it out: every free local core)")
	}
	if r.HousekeepingCores < 1 {
		return bad("housekeeping_cores", fmt.Sprint(r.HousekeepingCores), "the host needs at least 1 whole core for itself, its IRQs and the VMs' emulator threads")
	}
	if r.PageSizeBytes != 1<<30 && r.PageSizeBytes != 2<<20 {
		return bad("page_size", size.FormatBytes(r.PageSizeBytes), "want 1G or 2M, the x86-64 hugepage sizes")
	}
	if r.MemoryBytes < 0 || (r.MemoryBytes > 0 && r.MemoryBytes%r.PageSizeBytes != 0) {
		return bad("memory", fmt.Sprintf("%d bytes", r.MemoryBytes), fmt.Sprintf("not a whole number of %s hugepages (sizes like 32G are GiB; 32GB is 32×10^9 bytes)", size.FormatBytes(r.PageSizeBytes)))
	}
	if r.HostReserveBytes < 0 {
		return bad("host_reserve", fmt.Sprint(r.HostReserveBytes), "want a size of 0 or more")
	}
	if !slices.Contains(Policies, r.Policy) {
		return bad("policy", string(r.Policy), "want single-numa-node, restricted or best-effort")
	}
	if !namePrefix().MatchString(r.NamePrefix) {
		return bad("name_prefix", fmt.Sprintf("%q", r.NamePrefix), "VM names become file names and libvirt names: start with a letter, then letters, digits, - or _ (at most 41)")
	}
	if r.OSInfo != "" && !osInfoName().MatchString(r.OSInfo) {
		return bad("osinfo", fmt.Sprintf("%q", r.OSInfo), "want an osinfo short id such as linux2022, centos-stream9 or ubuntu24.04 (osinfo-query os)")
	}
	return nil
}

// CheckGroups rejects --vm addresses the host does not have: a typo, not a
// refusal. Addresses may leave out the 0000: domain.
func CheckGroups(s *host.Snapshot, groups [][]string) error {
	for _, g := range groups {
		addrs, err := parseGroup(g)
		if err != nil {
			return fmt.Errorf("%s: %w", strings.Join(g, ","), err)
		}
		for _, a := range addrs {
			if s.PCI(a) == nil {
				return fmt.Errorf("%s: %s has no PCI device %s (see 'rdmalab inventory')", strings.Join(g, ","), s.Hostname, a)
			}
		}
	}
	return nil
}

// parseGroup reads one --vm group: the user's spelling stays in the
// Request (a nearest request is shown back in it), the addresses are used.
func parseGroup(g []string) ([]host.PCIAddress, error) {
	out := make([]host.PCIAddress, 0, len(g))
	for _, a := range g {
		addr, err := host.ParsePCIAddress(a)
		if err != nil {
			return nil, err
		}
		out = append(out, addr)
	}
	return out, nil
}
