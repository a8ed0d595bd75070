//go:build !unix && !windows

package endpoint

import (
	"context"
	"errors"
	"net"
	"runtime"
)

var errUnsupported = errors.New("Poppydesk's model interface needs a Unix socket or a Windows named pipe, and " + runtime.GOOS + " has neither")

// Default: see errUnsupported.
func Default(string) (string, error) { return "", errUnsupported }

// Listen: see errUnsupported.
func Listen(context.Context, string) (net.Listener, error) { return nil, errUnsupported }

// Dial: see errUnsupported.
func Dial(context.Context, string) (net.Conn, error) { return nil, errUnsupported }
