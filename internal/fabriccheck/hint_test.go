package fabriccheck

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

// iblinkinfo's hint on a 2X HDR link (the HDR100 split, deliberate on split
// ports and HDR100 cards) is not confirmed by any device model here: still
// the split warning, never a failure. A speed hint is the tool's word: a
// failure whatever the peers run at.
func TestHintOnSplitLinkWarns(t *testing.T) {
	const out = `0x248a070300c70103 "node01 HCA-1"      2    1[  ] ==( 2X        53.125 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    1[  ] "leaf01" (Could be 4X)
0x248a070300c70105 "node02 HCA-1"      3    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    2[  ] "leaf01" ( )
0x248a070300c70107 "node03 HCA-1"      4    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    3[  ] "leaf01" ( Could be 53.125 Gbps)
0x248a070300c70109 "node04 HCA-1"      5    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    4[  ] "leaf01" ( )
0x248a070300c7010b "node05 HCA-1"      6    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    5[  ] "leaf01" ( )
`
	s, err := fabric.FromIBLinkInfo(out, "test")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range linkFindings(mustRun(t, s, Options{})) {
		got = append(got, string(f.Outcome)+" "+f.Check+" "+f.Subject)
		if f.Outcome == check.Fail && !strings.Contains(f.Message, "both ends support 53.125 Gbps/lane (HDR) per iblinkinfo") {
			t.Errorf("%s: %s", f.Subject, f.Message)
		}
	}
	want := []string{
		"fail fabric.link.speed node03 HCA-1 port 1 ↔ leaf01 port 3",
		"warn fabric.link.width node01 HCA-1 port 1 ↔ leaf01 port 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
