// Package nlattr encodes and decodes netlink attributes (struct nlattr: a
// u16 length, a u16 type, the value padded to 4 bytes), the one codec that
// ipvs, ipset, conntrack and dummy share.
//
// An Encoder appends attributes to a caller's buffer; a Decoder walks them
// in place. Both carry the first error to the end, as bufio.Scanner does:
// after a truncated attribute or a value of the wrong size, Next returns
// false and Err says what went wrong, so a decoder's loop checks once.
// An Encoder's only error is an attribute or nest past the 65,535 bytes its
// length field holds; the request builders here encode only what their
// validators and packers bound (ipset packs add/del messages at 8 KiB;
// names, comments and addresses are short) and do not check it.
//
// Byte order is the caller's to say, per attribute: Uint16 and friends are
// host order (what nla_put_u16 writes), Uint16BE and friends network order
// (nla_put_be16). The two flags of the type field are the caller's too:
// Nest always sets NLA_F_NESTED (every family here accepts it and ipset
// requires it); ipset's network-order integers pass
// typ|NetByteOrder themselves, while IPVS's ports, also network order,
// go without the flag (nla_get_be16 does not look at it). Type masks
// both flags off when decoding, and TypeFlags returns them.
//
// Why not github.com/mdlayher/netlink's AttributeEncoder and
// AttributeDecoder, already a dependency: they can say everything the four
// families need (flags, byte orders, nests), but they allocate per
// attribute. NewAttributeDecoder parses a whole message into a slice before
// the first Next, and AttributeEncoder builds a list of values and then a
// new buffer in Encode. ipvs decodes over a million attributes when it
// lists 100,000 destinations and encodes a batch of 100,000 requests into
// one slice; ipset's Replace encodes hundreds of thousands of elements. In
// an emulated VM those allocations cost as much as the kernel's work. This
// codec allocates nothing: an Encoder appends to the slice it is given and
// a Decoder is a value that slices its input.
package nlattr
