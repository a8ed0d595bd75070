package cli

import (
	"bytes"
	"image/png"
	"os"
	"testing"
)

// TestWindowIcon: the window's icon is Poppydesk's icon at 128 px, small enough for GDK to write
// it to _NET_WM_ICON (e2e/realwindow checks that property on the real window).
func TestWindowIcon(t *testing.T) {
	src, err := os.ReadFile("../../build/appicon.png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(windowIcon(src)))
	if err != nil {
		t.Fatalf("the window icon is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != windowIconSize || b.Dy() != windowIconSize {
		t.Errorf("the window icon is %dx%d; want %d px square", b.Dx(), b.Dy(), windowIconSize)
	}
	if got := windowIcon([]byte("not a png")); string(got) != "not a png" {
		t.Errorf("a file that is not a PNG came back as %q", got)
	}
}
