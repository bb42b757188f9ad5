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

	"github.com/dshq/dsh/internal/netguard"
)

// Address categories the guard refuses by default (see netguard).
const (
	CategoryLoopback    = netguard.CategoryLoopback
	CategoryPrivate     = netguard.CategoryPrivate
	CategoryLinkLocal   = netguard.CategoryLinkLocal
	CategoryCGNAT       = netguard.CategoryCGNAT
	CategoryMetadata    = netguard.CategoryMetadata
	CategoryUnspecified = netguard.CategoryUnspecified
	CategoryMulticast   = netguard.CategoryMulticast
	CategoryReserved    = netguard.CategoryReserved
)

// Classify returns the category of a non-public address, or "" for an
// address on the public internet (see [netguard.Classify]).
func Classify(ip netip.Addr) string { return netguard.Classify(ip) }

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
