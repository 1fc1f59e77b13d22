package inventory

import (
	"strings"
	"testing"
)

func FuzzParseLimitsMemlock(f *testing.F) {
	f.Add("* soft memlock unlimited\n@rdma hard memlock 65536 # comment\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range ParseLimitsMemlock("/etc/security/limits.conf", s) {
			if r.Line < 1 || r.Domain == "" || r.Value == "" || strings.ContainsAny(r.Value, " \t#") {
				t.Fatalf("%q gave %+v", s, r)
			}
		}
	})
}

func FuzzProcLimitsAndNodeMeminfo(f *testing.F) {
	f.Add("Max locked memory         8388608              8388608              bytes\n", "Node 0 MemTotal:  32768 kB\nNode 0 MemFree: 1024 kB\n")
	f.Fuzz(func(t *testing.T, limits, meminfo string) {
		if soft, hard, ok := parseProcLimitsMemlock(limits); ok && (soft < -1 || hard < -1) {
			t.Fatalf("%q gave %d/%d", limits, soft, hard)
		}
		parseNodeMeminfo(meminfo)
	})
}

func FuzzCPUList(f *testing.F) {
	f.Add("0-7,32-39")
	f.Add("0,2,4-6\n")
	f.Fuzz(func(t *testing.T, s string) {
		c := canonCPUList(s)
		if c != s && canonCPUList(c) != c {
			t.Fatalf("%q -> %q is not stable", s, c)
		}
	})
}
