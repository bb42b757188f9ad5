// Package netguard classifies IP addresses for the code that must not let
// a model reach the machine's own network: web_fetch and the sandbox's
// filtering proxy refuse loopback, private, link-local, CGNAT, multicast,
// reserved and cloud-metadata destinations with the same rules.
package netguard

import "net/netip"

// Address categories the guard refuses by default.
const (
	CategoryLoopback    = "loopback"
	CategoryPrivate     = "private network"
	CategoryLinkLocal   = "link-local"
	CategoryCGNAT       = "shared address space (CGNAT)"
	CategoryMetadata    = "cloud metadata service"
	CategoryUnspecified = "unspecified"
	CategoryMulticast   = "multicast"
	CategoryReserved    = "reserved"
)

// metadata are cloud instance-metadata endpoints. They are refused even
// when private networks are allowed; only an exact Allow entry reaches them.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, …
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS pod identity
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS pod identity, IPv6
}

var special = []struct {
	prefix   netip.Prefix
	category string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), CategoryUnspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), CategoryPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), CategoryCGNAT},
	{netip.MustParsePrefix("127.0.0.0/8"), CategoryLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), CategoryLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), CategoryPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), CategoryReserved},
	{netip.MustParsePrefix("192.0.2.0/24"), CategoryReserved},
	{netip.MustParsePrefix("192.168.0.0/16"), CategoryPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), CategoryReserved},
	{netip.MustParsePrefix("198.51.100.0/24"), CategoryReserved},
	{netip.MustParsePrefix("203.0.113.0/24"), CategoryReserved},
	{netip.MustParsePrefix("224.0.0.0/4"), CategoryMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), CategoryReserved},
	{netip.MustParsePrefix("::/128"), CategoryUnspecified},
	{netip.MustParsePrefix("::1/128"), CategoryLoopback},
	{netip.MustParsePrefix("100::/64"), CategoryReserved},
	{netip.MustParsePrefix("2001:db8::/32"), CategoryReserved},
	{netip.MustParsePrefix("fc00::/7"), CategoryPrivate},
	{netip.MustParsePrefix("fe80::/10"), CategoryLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), CategoryPrivate},
	{netip.MustParsePrefix("ff00::/8"), CategoryMulticast},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	v4compt = netip.MustParsePrefix("::/96")
)

// Classify returns the category of a non-public address, or "" for an
// address on the public internet. IPv4 addresses embedded in IPv6
// (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are classified by the IPv4
// address they carry.
func Classify(ip netip.Addr) string {
	ip = ip.WithZone("")
	if v4, ok := embeddedV4(ip); ok {
		if c := Classify(v4); c != "" {
			return c
		}
		if ip.Is4In6() || v4compt.Contains(ip) {
			return ""
		}
	}
	for _, m := range metadata {
		if ip == m {
			return CategoryMetadata
		}
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.category
		}
	}
	return ""
}

func embeddedV4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	if ip.Is4In6() {
		return ip.Unmap(), true
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip), v4compt.Contains(ip) && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
