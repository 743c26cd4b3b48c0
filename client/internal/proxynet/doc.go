// Package proxynet is a network for pion (its transport.Net) whose UDP goes
// through a SOCKS5 proxy's UDP ASSOCIATE (package socks5udp): with it as
// the SettingEngine's Net, every ICE socket, and so every STUN request and
// every WebRTC packet, leaves through the proxy.
//
// # What pion sees
//
//   - Interfaces returns one virtual interface, "socks5", whose only
//     address is the proxy's IP address. pion gathers host candidates on
//     it: ListenUDP makes a new association and returns its PacketConn,
//     whose LocalAddr is the relay address, so the host candidate is the
//     proxy's address with the relay's port: where the proxy receives the
//     association's datagrams (exact when the proxy relays from the
//     address it names in its reply, as most do; otherwise ICE still works
//     through the peer-reflexive candidate the far side learns from our
//     checks, and through server-reflexive candidates from STUN).
//   - Server-reflexive gathering also listens on the virtual address, so
//     STUN requests go through the proxy and the candidate found is the
//     proxy's public mapping.
//   - ResolveUDPAddr returns IP literals as they are. A STUN server's name
//     is resolved through the proxy too: a STUN Binding Request is sent to
//     the name (the proxy resolves it, SOCKS5 ATYP 3), and the address the
//     reply came from, as the proxy reports it, is the answer (kept for
//     ten minutes). No DNS query leaves the host except, if the proxy is
//     given by name, the one for the proxy itself (and one for the relay
//     in the rare proxy whose UDP ASSOCIATE reply names it by name).
//   - Everything else (TCP, Dial, DialUDP) fails with ErrNotSupported:
//     nothing goes around the proxy.
//
// pion gives ListenUDP and ResolveUDPAddr no context, so each is bounded by
// a timeout of its own (Config.AssociateTimeout, Config.ResolveTimeout).
package proxynet
