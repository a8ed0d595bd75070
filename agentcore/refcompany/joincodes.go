package refcompany

// IssuedJoinCodes lists every join code the browser-session page issued so far (spec 6 step 1),
// including the codes of other browsers that join faults create, in no particular order. It is
// for tests such as the secrets canary, which scans Poppydesk's files for them (spec 10.2: codes
// are never logged or stored).
func (s *Server) IssuedJoinCodes() []string {
	b := s.browser()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.codes))
	for code := range b.codes {
		out = append(out, code)
	}
	return out
}
