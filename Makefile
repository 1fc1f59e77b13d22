# Release and install. The two set-up commands are in the README; this is
# for packaging: a static binary that names its version and commit, one man
# page per command, shell completions, the systemd unit, alert rules and the
# dashboard, in $(DIST).
#
#   make release              # into dist/
#   make install              # dist/ into /usr/local (DESTDIR, PREFIX honoured)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell git log -1 --format=%cI 2>/dev/null)
DIST    ?= dist
PREFIX  ?= /usr/local
GO      ?= go

BUILDINFO := github.com/rdmalab/rdmalab/internal/buildinfo
LDFLAGS   := -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(DATE)

.PHONY: release install clean

release:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(DIST)/rdmalab ./cmd/rdmalab
	$(DIST)/rdmalab release-files $(DIST)
	mkdir -p $(DIST)/systemd $(DIST)/prometheus $(DIST)/grafana
	cp deploy/systemd/*.service $(DIST)/systemd/
	cp deploy/prometheus/rdmalab-alerts.yml $(DIST)/prometheus/
	cp deploy/grafana/rdmalab-dashboard.json $(DIST)/grafana/

install: release
	install -D -m 0755 $(DIST)/rdmalab $(DESTDIR)$(PREFIX)/bin/rdmalab
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(DIST)/man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 $(DIST)/completions/rdmalab.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rdmalab
	install -D -m 0644 $(DIST)/completions/_rdmalab $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_rdmalab
	install -D -m 0644 $(DIST)/completions/rdmalab.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/rdmalab.fish
	install -D -m 0644 $(DIST)/systemd/rdmalab-exporter.service $(DESTDIR)/etc/systemd/system/rdmalab-exporter.service

clean:
	rm -rf $(DIST)
