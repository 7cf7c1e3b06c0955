package main

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig for server, with the CA and client
// certificate of p inline, to path.
func writeKubeconfig(path, server string, p *pki) error {
	const name = "test-apiserver"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: p.caPEM,
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: p.clientCertPEM,
		ClientKeyData:         p.clientKeyPEM,
	}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
