module github.com/ipvskit/ipvskit/cni

go 1.26.8

replace github.com/ipvskit/ipvskit => ../

require (
	github.com/containernetworking/cni v1.3.1
	github.com/google/go-cmp v0.7.0
	github.com/ipvskit/ipvskit v0.0.0-00010101000000-000000000000
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.49.0
)

require (
	github.com/google/nftables v0.3.1-0.20251119083706-1db35da82052 // indirect
	github.com/mdlayher/netlink v1.11.2 // indirect
	github.com/mdlayher/socket v0.6.0 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	go.opentelemetry.io/otel v1.29.0 // indirect
	go.opentelemetry.io/otel/trace v1.29.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
)
