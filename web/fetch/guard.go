package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

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

// BlockedError says a connection was refused by the address policy.
type BlockedError struct {
	Addr     netip.AddrPort
	Host     string // the host name that resolved to Addr, when there was one
	Category string
}

func (e *BlockedError) Error() string {
	who := e.Addr.Addr().String()
	if e.Host != "" && e.Host != who {
		who = fmt.Sprintf("%s (%s)", e.Host, who)
	}
	return fmt.Sprintf("refusing to connect to %s: it is a %s address", who, e.Category)
}

// Resolver looks up host names; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// guard decides which addresses may be dialled and dials only those.
type guard struct {
	allowPrivate bool
	allow        map[netip.AddrPort]bool
	resolver     Resolver
	dialTimeout  time.Duration
}

// check returns a *BlockedError when ap may not be dialled.
func (g *guard) check(ap netip.AddrPort, host string) error {
	ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	if g.allow[ap] {
		return nil
	}
	c := Classify(ap.Addr())
	if c == "" || g.allowPrivate && c != CategoryMetadata {
		return nil
	}
	return &BlockedError{Addr: ap, Host: host, Category: c}
}

// dialContext resolves addr, refuses blocked addresses and dials the
// remaining ones in turn. It dials IP literals only, so the address checked
// is the address connected to (a second DNS answer cannot slip in), and the
// dialer's Control hook checks the socket's peer address once more right
// before connect(2).
func (g *guard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("web fetch: network %q is not allowed", network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("web fetch: bad port in %q", addr)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
		host = ""
	} else {
		ips, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	var allowed []netip.AddrPort
	var blocked error
	for _, ip := range ips {
		ap := netip.AddrPortFrom(ip.Unmap(), uint16(port))
		if err := g.check(ap, host); err != nil {
			if blocked == nil {
				blocked = err
			}
			continue
		}
		allowed = append(allowed, ap)
	}
	if len(allowed) == 0 {
		return nil, blocked
	}
	d := net.Dialer{Timeout: g.dialTimeout, KeepAlive: 30 * time.Second, ControlContext: g.control}
	var errs []error
	for _, ap := range allowed {
		conn, err := d.DialContext(ctx, network, ap.String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// control runs after the socket is created and before it connects: the
// last word on the address actually dialled.
func (g *guard) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("web fetch: cannot check address %q: %w", address, err)
	}
	return g.check(ap, "")
}
