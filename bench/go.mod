module github.com/ipvskit/ipvskit/bench

go 1.26.8

replace github.com/ipvskit/ipvskit => ../

require (
	github.com/moby/ipvs v1.1.0 // indirect
	github.com/sirupsen/logrus v1.9.0 // indirect
	github.com/vishvananda/netlink v1.1.0 // indirect
	github.com/vishvananda/netns v0.0.2 // indirect
	golang.org/x/sys v0.2.0 // indirect
)
