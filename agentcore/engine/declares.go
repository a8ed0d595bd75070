package engine

// Declares reports whether the Client's current Session declares extension name in version v
// in Poppy-Extensions (spec 3.3, 3.4): the engine declares an extension it implements only when
// the Company lists that version, and a Session keeps its declarations for its whole life.
func (c *Client) Declares(name, v string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.sess.Extensions {
		if x.Name == name && x.Version == v {
			return true
		}
	}
	return false
}
