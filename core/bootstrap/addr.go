package bootstrap

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// ParseAddr splits a JoinAddr address into its optional interface name and its "ip:port" part.
// The accepted forms are
//
//	ip:port          192.168.0.1:50000
//	if:ip:port       eth0:192.168.0.1:50000
//	[ip6]:port       [fd00::1]:50000
//	if:[ip6]:port    eth0:[fd00::1]:50000
//
// The host must be an IP literal and the port must be in 1-65535. The returned hostport is
// canonical ("ip:port" or "[ip6]:port"). Any other form is an ErrInvalidArgument-class error.
func ParseAddr(s string) (ifname, hostport string, err error) {
	ap, ifname, err := parseAddr(s)
	if err != nil {
		return "", "", err
	}
	return ifname, ap.String(), nil
}

func parseAddr(s string) (netip.AddrPort, string, error) {
	bad := func(why string) (netip.AddrPort, string, error) {
		return netip.AddrPort{}, "", fmt.Errorf("%w %q: %s", errBadAddress, s, why)
	}
	var ifname, hostport string
	switch i := strings.IndexByte(s, '['); {
	case i == 0:
		hostport = s
	case i > 0:
		if i < 2 || s[i-1] != ':' {
			return bad("want if:[ip6]:port with a nonempty interface name")
		}
		ifname, hostport = s[:i-1], s[i:]
	default:
		switch strings.Count(s, ":") {
		case 1:
			hostport = s
		case 2:
			ifname, hostport, _ = strings.Cut(s, ":")
			if ifname == "" {
				return bad("empty interface name")
			}
		default:
			return bad("want ip:port, if:ip:port, [ip6]:port or if:[ip6]:port")
		}
	}
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return bad(err.Error())
	}
	if ap.Port() == 0 {
		return bad("port 0")
	}
	if ap.Addr().Zone() != "" {
		return bad("zoned IPv6 addresses are not supported")
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ifname, nil
}

// magicForAddr derives the job's magic from its root address for JoinAddr, where the ranks share
// nothing but the address and, optionally, a key: it is the 64-bit FNV-1a hash of
// "mscclpp-bootstrap:" followed by the canonical "ip:port", and by a NUL and the key when there is
// one. Jobs on different addresses get different magics; two jobs reusing one address in turn
// share a magic, which is harmless because the root serves one job at a time. Without a key, any
// process that knows the address can compute the magic.
func magicForAddr(root netip.AddrPort, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("mscclpp-bootstrap:" + root.String()))
	if key != "" {
		h.Write([]byte("\x00" + key))
	}
	return h.Sum64()
}

// chooseIP returns the IP address to listen on and advertise. The first rule that applies wins:
//  1. ifname, if not empty: that interface's address;
//  2. MSCCLPP_SOCKET_IFNAME, if set: that interface's address;
//  3. root, if it is a loopback address: root's address itself, so that a job on 127.0.0.1
//     stays on loopback on any machine;
//  4. the first interface that is up, not loopback and has a usable address;
//  5. loopback (127.0.0.1).
//
// An interface's usable address is a non-link-local unicast address, preferring root's family
// (IPv4 if root is unset).
func chooseIP(ifname string, root netip.Addr) (netip.Addr, error) {
	if ifname == "" {
		ifname = config.SocketIfname.Get()
	}
	wantV6 := root.IsValid() && root.Is6()
	if ifname != "" {
		iface, err := net.InterfaceByName(ifname)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("%w: interface %q: %v", errInterface, ifname, err)
		}
		ip, ok := interfaceIP(iface, wantV6)
		if !ok {
			return netip.Addr{}, fmt.Errorf("%w: interface %q has no usable address", errInterface, ifname)
		}
		return ip, nil
	}
	if root.IsValid() && root.IsLoopback() {
		return root, nil
	}
	ifaces, err := net.Interfaces()
	if err == nil {
		for i := range ifaces {
			iface := &ifaces[i]
			if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
				continue
			}
			if ip, ok := interfaceIP(iface, wantV6); ok {
				return ip, nil
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
}

// interfaceIP returns iface's first usable address, of the wanted family if it has one.
func interfaceIP(iface *net.Interface, wantV6 bool) (netip.Addr, bool) {
	addrs, err := iface.Addrs()
	if err != nil {
		return netip.Addr{}, false
	}
	var fallback netip.Addr
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipnet.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
			continue
		}
		if ip.Is6() == wantV6 {
			return ip, true
		}
		if !fallback.IsValid() {
			fallback = ip
		}
	}
	return fallback, fallback.IsValid()
}

// listenTCP listens on addr (port 0 picks an ephemeral port) and returns the listener and its address.
func listenTCP(addr netip.AddrPort) (*net.TCPListener, netip.AddrPort, error) {
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(addr))
	if err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("%w: %s: %v", errListen, addr, err)
	}
	bound := ln.Addr().(*net.TCPAddr).AddrPort()
	return ln, netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port()), nil
}

// Dial backoff: the first retry waits dialBackoffMin, each next one twice as long, up to dialBackoffMax.
const (
	dialBackoffMin = 5 * time.Millisecond
	dialBackoffMax = 500 * time.Millisecond
)

// dialRetry dials addr until it succeeds or ctx is done, backing off exponentially between
// attempts. On failure it returns ErrUnreachable naming addr and the last dial error.
func dialRetry(ctx context.Context, addr netip.AddrPort) (*net.TCPConn, error) {
	var d net.Dialer
	backoff := dialBackoffMin
	for attempt := 1; ; attempt++ {
		c, err := d.DialContext(ctx, "tcp", addr.String())
		if err == nil {
			tc := c.(*net.TCPConn)
			tc.SetNoDelay(true)
			return tc, nil
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %s after %d attempts: %v", ErrUnreachable, addr, attempt, err)
		case <-t.C:
		}
		backoff = min(2*backoff, dialBackoffMax)
	}
}
