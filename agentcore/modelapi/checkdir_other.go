//go:build !unix

package modelapi

// checkOwnDir: Unix sockets with permission modes are a Unix feature; Windows named pipes are
// not implemented (see doc.go).
func checkOwnDir(string) error { return nil }
