// Package webrtcnet holds the pion settings that the roles share, so that
// each is written once: the SettingEngine the client and the proxy build
// their peers from (Peer), the loopback-only network of tests and
// demonstrations (LoopbackOnly), the data-path settings of the client and
// the proxy (DataPath), and the non-trickle local description that the
// client's offer and the proxy's answer both are (LocalDescription: gather
// with a deadline, then strip local-address candidates), and the candidate
// pair selection both make without waiting for a nomination (QuickPair).
package webrtcnet
