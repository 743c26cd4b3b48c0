package proxy

import (
	"net/netip"
	"testing"
)

// TestNotGlobal walks both IANA special-purpose registries: every block
// not globally reachable is refused (first and last address), the globally
// reachable exceptions and ordinary public addresses are not.
func TestNotGlobal(t *testing.T) {
	tests := []struct {
		ip        string
		notGlobal bool
	}{
		// IPv4 special-purpose registry.
		{"0.0.0.0", true}, {"0.255.255.255", true}, // this network
		{"10.0.0.1", true}, {"10.255.255.255", true}, // private
		{"100.64.0.1", true}, {"100.127.255.255", true}, // shared address space
		{"127.0.0.1", true}, {"127.255.255.254", true}, // loopback
		{"169.254.0.1", true}, {"169.254.255.255", true}, // link local
		{"172.16.0.1", true}, {"172.31.255.255", true}, // private
		{"192.0.0.0", true}, {"192.0.0.8", true}, {"192.0.0.170", true}, {"192.0.0.255", true}, // IETF protocol assignments
		{"192.0.0.9", false}, {"192.0.0.10", false}, // PCP and TURN anycast: globally reachable
		{"192.0.2.1", true}, {"192.0.2.255", true}, // TEST-NET-1
		{"192.31.196.1", false},                      // AS112-v4: globally reachable
		{"192.52.193.1", false},                      // AMT: globally reachable
		{"192.88.99.1", true}, {"192.88.99.2", true}, // deprecated 6to4 relay anycast, 6a44
		{"192.168.0.1", true}, {"192.168.255.255", true}, // private
		{"192.175.48.1", false},                        // AS112 direct delegation: globally reachable
		{"198.18.0.1", true}, {"198.19.255.255", true}, // benchmarking
		{"198.51.100.1", true},                         // TEST-NET-2
		{"203.0.113.1", true},                          // TEST-NET-3
		{"224.0.0.1", true}, {"239.255.255.255", true}, // multicast
		{"240.0.0.1", true}, {"255.255.255.255", true}, // reserved, limited broadcast
		// Neighbours of the blocks stay public.
		{"1.1.1.1", false}, {"100.63.255.255", false}, {"100.128.0.0", false},
		{"192.0.1.255", false}, {"192.0.3.0", false}, {"198.17.255.255", false},
		{"198.20.0.0", false}, {"203.0.112.255", false}, {"223.255.255.255", false},
		// IPv6 special-purpose registry.
		{"::", true}, {"::1", true}, // unspecified, loopback
		{"::ffff:10.0.0.1", true}, {"::ffff:1.1.1.1", false}, // IPv4-mapped: judged as IPv4
		{"64:ff9b::7f00:1", true}, {"64:ff9b::a00:1", true}, {"64:ff9b::c000:201", true}, // NAT64 of 127.0.0.1, 10.0.0.1, 192.0.2.1
		{"64:ff9b::101:101", false},              // NAT64 of 1.1.1.1
		{"64:ff9b:1::1", true},                   // local-use NAT64
		{"100::1", true}, {"100:0:0:1::1", true}, // discard-only, dummy prefix
		{"2001::1", true}, {"2001:0:ffff::1", true}, // Teredo
		{"2001:1::1", false}, {"2001:1::2", false}, {"2001:1::3", false}, // anycast: globally reachable
		{"2001:1::4", true},                          // rest of the IETF protocol assignments
		{"2001:2::1", true},                          // benchmarking
		{"2001:3::1", false},                         // AMT: globally reachable
		{"2001:4:112::1", false},                     // AS112-v6: globally reachable
		{"2001:10::1", true},                         // deprecated ORCHID
		{"2001:20::1", false}, {"2001:30::1", false}, // ORCHIDv2, drone remote ID: globally reachable
		{"2001:1ff:ffff::1", true},                        // end of 2001::/23
		{"2001:200::1", false},                            // past 2001::/23
		{"2001:db8::1", true},                             // documentation
		{"2002:7f00:1::1", true}, {"2002:a00:1::1", true}, // 6to4 of 127.0.0.1, 10.0.0.1
		{"2002:101:101::1", false},                    // 6to4 of 1.1.1.1
		{"2620:4f:8000::1", false},                    // AS112 direct delegation: globally reachable
		{"3fff::1", true}, {"3fff:fff:ffff::1", true}, // documentation
		{"4000::1", true}, {"5f00::1", true}, // outside 2000::/3, SRv6 SIDs
		{"fc00::1", true}, {"fd00::1", true}, // unique local
		{"fe80::1", true}, {"fec0::1", true}, // link local, old site local
		{"ff02::1", true},                                   // multicast
		{"2606:4700::1111", false}, {"2a00:1450::1", false}, // public
	}
	for _, tt := range tests {
		if got := notGlobal(netip.MustParseAddr(tt.ip)); got != tt.notGlobal {
			t.Errorf("notGlobal(%s) = %v, want %v", tt.ip, got, tt.notGlobal)
		}
	}
	if !notGlobal(netip.Addr{}) {
		t.Error("notGlobal(invalid) = false")
	}
}
