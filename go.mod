module github.com/rdmalab/rdmalab

go 1.26.0

require (
	github.com/jedib0t/go-pretty/v6 v6.8.3
	github.com/prometheus/procfs v0.23.0
	github.com/spf13/cobra v1.10.2
	go.yaml.in/yaml/v2 v2.4.2
	k8s.io/utils v0.0.0-20260707023825-cf1189d6abe3
	libvirt.org/go/libvirtxml v1.12002.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)
