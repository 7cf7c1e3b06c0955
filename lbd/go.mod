module github.com/ipvskit/ipvskit/lbd

go 1.26.8

replace github.com/ipvskit/ipvskit => ../

require (
	github.com/google/go-cmp v0.7.0
	github.com/ipvskit/ipvskit v0.0.0-00010101000000-000000000000
	github.com/prometheus/client_golang v1.25.0
	github.com/vishvananda/netns v0.0.5
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/nftables v0.3.1-0.20251119083706-1db35da82052 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mdlayher/netlink v1.11.2 // indirect
	github.com/mdlayher/socket v0.6.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
