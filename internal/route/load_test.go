package route

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/envelope"
)

func TestLoadFiles(t *testing.T) {
	td := func(n string) string { return filepath.Join("testdata", n) }
	s, err := loadSnapshot(td("fattree-2x4x4.fabric.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env bytes.Buffer
	if err := envelope.Write(&env, envelope.FabricSnapshot, nil, s); err != nil {
		t.Fatal(err)
	}
	enveloped := filepath.Join(t.TempDir(), "fabric-envelope.json")
	if err := os.WriteFile(enveloped, env.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fab := range []string{td("fattree-2x4x4.fabric.json"), enveloped, td("fattree-2x4x4.ibnetdiscover"), td("fattree-2x4x4.net")} {
		f, src, err := Load(context.Background(), Input{FabricFile: fab, RoutesFile: td("fattree-2x4x4-updn.dump_fts.txt")})
		if err != nil {
			t.Fatalf("%s: %v", fab, err)
		}
		if len(f.CAs) != 16 || !strings.HasPrefix(src, fab+"; routes ") {
			t.Errorf("%s: %d CAs, source %q", fab, len(f.CAs), src)
		}
	}
	wrongKind := filepath.Join(t.TempDir(), "doctor.json")
	os.WriteFile(wrongKind, []byte(`{"kind":"doctor","schema_version":1,"payload":{}}`), 0o644)
	for _, tc := range []struct {
		in   Input
		want string
	}{
		{Input{FabricFile: wrongKind, RoutesFile: td("fattree-2x4x4-updn.dump_fts.txt")}, "this is a doctor document, not a fabric-snapshot"},
		{Input{FabricFile: td("fattree-2x4x4.net")}, "no forwarding tables"},
		{Input{RoutesFile: td("fattree-2x4x4-updn.dump_fts.txt")}, "no fabric"},
		{Input{FabricFile: td("README.md"), RoutesFile: td("fattree-2x4x4-updn.dump_fts.txt")}, "README.md"},
	} {
		_, _, err := Load(context.Background(), tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}
