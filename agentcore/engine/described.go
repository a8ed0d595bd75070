package engine

import (
	"slices"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// describedOf returns the apis.Described of the Company c, shared by the API clients of all its
// accounts: the Session destinations of the OpenAPI descriptions read this run (spec 5.2, 7).
// A Company discovered with another list of APIs starts a new one, so that the paths of APIs it
// no longer lists are not destinations.
func (e *Engine) describedOf(c *discovery.Company) *apis.Described {
	e.descMu.Lock()
	defer e.descMu.Unlock()
	if e.described == nil {
		e.described = map[string]describedEntry{}
	}
	var list []discovery.API
	if c.Document != nil {
		list = c.Document.APIs
	}
	if d, ok := e.described[c.Identifier]; ok && slices.Equal(d.apis, list) {
		return d.set
	}
	d := describedEntry{apis: slices.Clone(list), set: apis.NewDescribed(c)}
	e.described[c.Identifier] = d
	return d.set
}

type describedEntry struct {
	apis []discovery.API
	set  *apis.Described
}
