package iptables

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The expression constructors the rule builder (nftrules.go) uses, so that
// the builder itself, and RenderNFT, build on every GOOS.

const (
	metaL4Proto = expr.MetaKeyL4PROTO
	metaIIFName = expr.MetaKeyIIFNAME
	metaMark    = expr.MetaKeyMARK
)

func eLoad(transport bool, off, n, reg uint32) any {
	base := expr.PayloadBaseNetworkHeader
	if transport {
		base = expr.PayloadBaseTransportHeader
	}
	return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: base, Offset: off, Len: n}
}

func eMeta(k expr.MetaKey, reg uint32, set bool) any {
	return &expr.Meta{Key: k, Register: reg, SourceRegister: set}
}

func eHton(reg, n, size uint32) any {
	return &expr.Byteorder{SourceRegister: reg, DestRegister: reg, Op: expr.ByteorderHton, Len: n, Size: size}
}

func eCmp(neq bool, data []byte) any {
	op := expr.CmpOpEq
	if neq {
		op = expr.CmpOpNeq
	}
	return &expr.Cmp{Op: op, Register: 1, Data: data}
}

func eBitwise(mask, xor []byte) any {
	return &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(mask)), Mask: mask, Xor: xor}
}

func eLookup(set string, id uint32) any {
	return &expr.Lookup{SourceRegister: 1, SetName: set, SetID: id}
}

func eFibType(saddr bool) any {
	return &expr.Fib{Register: 1, FlagSADDR: saddr, FlagDADDR: !saddr, ResultADDRTYPE: true}
}

func eCtState() any { return &expr.Ct{Register: 1, Key: expr.CtKeySTATE} }

func eVerdict(kind, chain string) any {
	k := map[string]expr.VerdictKind{
		"return": expr.VerdictReturn, "accept": expr.VerdictAccept,
		"drop": expr.VerdictDrop, "jump": expr.VerdictJump,
	}[kind]
	return &expr.Verdict{Kind: k, Chain: chain}
}

func eMasq(fully bool) any { return &expr.Masq{FullyRandom: fully} }

func eReject(code uint8) any { return &expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code} }

// exprs converts a rule's expressions for the library.
func exprs(in []any) []expr.Any {
	out := make([]expr.Any, len(in))
	for i, e := range in {
		out[i] = e.(expr.Any)
	}
	return out
}
