package convert

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/proxier"
)

// protocolOf is p, one of TCP, UDP and SCTP (as protocol gives it), as the
// State has it: inet's protocol, proxier.TCP for corev1.ProtocolTCP.
func protocolOf(p corev1.Protocol) proxier.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return proxier.UDP
	case corev1.ProtocolSCTP:
		return proxier.SCTP
	}
	return proxier.TCP
}

// protocolName is p as Kubernetes writes it ("TCP"), for the converter's
// messages.
func protocolName(p proxier.Protocol) string { return strings.ToUpper(p.String()) }
