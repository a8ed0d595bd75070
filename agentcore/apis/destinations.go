package apis

import (
	"context"
	"net/url"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Described keeps, for one Company, the Session destinations of the OpenAPI descriptions read
// this run (spec 5.2, 7): for each openapi entry of poppy.json, its description's servers joined
// with its paths, as the description said when it was last read. Client.FetchOpenAPI records
// them; Send signs a request whose URL is outside the Session destinations only when one of them
// describes it, after reading the descriptions not read yet this run, so no request carries the
// Session header before its destination is proven by a description the Company serves. What
// the Session destinations refuse (documents, OAuth endpoints, pages, /.well-known/) stays refused.
// Share one Described between the Clients of one Company. Safe for concurrent use.
type Described struct {
	apis []discovery.API // the Company's openapi entries

	mu   sync.Mutex
	sets map[string]*transport.Destinations // by entry url
}

// NewDescribed returns the Described of a Company: its openapi entries are read on demand.
func NewDescribed(c *discovery.Company) *Described {
	d := &Described{sets: map[string]*transport.Destinations{}}
	if c != nil && c.Document != nil {
		d.apis = Select(c.Document.APIs).OpenAPI
	}
	return d
}

// record replaces the destinations of the entry apiURL with dest, the request URLs its
// description describes (nil: none), and returns them.
func (d *Described) record(apiURL string, dest *transport.Destinations) *transport.Destinations {
	d.mu.Lock()
	d.sets[apiURL] = dest
	d.mu.Unlock()
	return dest
}

// allows reports whether a description read this run describes u.
func (d *Described) allows(u *url.URL) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.sets {
		if s.Allows(u) {
			return true
		}
	}
	return false
}

// unread lists the Company's openapi entries whose description was not read this run.
func (d *Described) unread() []discovery.API {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []discovery.API
	for _, a := range d.apis {
		if _, ok := d.sets[a.URL]; !ok {
			out = append(out, a)
		}
	}
	return out
}

// proves reports whether a description of the Company read this run describes u (spec 5.2, 7):
// the pipeline asks it about a URL its Session destinations neither allow nor refuse
// (transport.Request.Prove). Descriptions not read yet are read first (without the Session
// header), once each; a description that cannot be read proves nothing.
func (c *Client) proves(ctx context.Context, u *url.URL) bool {
	if c.described.allows(u) {
		return true
	}
	unread := c.described.unread()
	for _, a := range unread {
		if _, err := c.FetchOpenAPI(ctx, a); err != nil {
			c.described.record(a.URL, nil) // read once per run: a refused URL doesn't fetch again
			c.log.InfoContext(ctx, "apis: an OpenAPI description could not be read, so it proves no Session destination", "url", a.URL, "err", err)
		}
	}
	return len(unread) > 0 && c.described.allows(u)
}
