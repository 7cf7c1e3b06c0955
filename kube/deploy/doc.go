// Package deploy holds ipvskit-proxy's Kubernetes manifests, one pair per
// case (docs/deploy.md):
//
//   - takeover.yaml, takeover-uninstall.yaml: in place of kube-proxy
//     --proxy-mode=ipvs, taking over its kernel objects;
//   - nftables.yaml, nftables-uninstall.yaml: a cluster without kube-proxy,
//     on the nftables back end and ipvskit's own names.
//
// It has no code: its test applies every object of each manifest to a real
// API server (kube/testapiserver) as a server-side dry run, so that a field
// the API does not know, a bad value or a broken reference fails it.
package deploy
