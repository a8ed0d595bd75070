package refcompany

import (
	"fmt"
	"slices"
	"strings"
)

// AllFaults lists every fault of the reference Company: Faults (discovery, the authorization
// server, the Operations extension, browser joins) and AgentFaults (the Company Agent).
// SetAnyFault and `poppydesk demo --fault` accept each.
var AllFaults = slices.Concat(Faults, AgentFaults)

// SetAnyFault switches any fault of AllFaults on or off: SetFault for Faults, SetAgentFault
// for AgentFaults.
func (s *Server) SetAnyFault(name string, on bool) error {
	switch {
	case slices.Contains(Faults, name):
		return s.SetFault(name, on)
	case slices.Contains(AgentFaults, name):
		return s.SetAgentFault(name, on)
	}
	return fmt.Errorf("refcompany: unknown fault %q; known: %s", name, strings.Join(AllFaults, ", "))
}

// FaultOn reports whether a fault of AllFaults is switched on.
func (s *Server) FaultOn(name string) bool {
	if slices.Contains(AgentFaults, name) {
		a := s.agent()
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.faults[name]
	}
	return slices.Contains(s.ActiveFaults(), name)
}
