//go:build !linux

package modelapi

import "net"

// checkPeer: outside Linux the socket's 0600 mode inside a 0700 directory is the check.
func checkPeer(net.Conn) error { return nil }
