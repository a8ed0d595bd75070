package cli

import (
	"bytes"
	"image"
	"image/png"

	"golang.org/x/image/draw"
)

// windowIconSize is the side, in pixels, of the icon the window carries. GDK writes a window's
// icon to _NET_WM_ICON, which taskbars, docks and Alt+Tab read, only when it fits in one X
// request: build/appicon.png (512 px) does not, nor does 256 px, and a window with either has
// only the WM_HINTS pixmap, which few of them read. 128 px fits.
const windowIconSize = 128

// windowIcon is the PNG icon src scaled to windowIconSize (Catmull-Rom, as the package's hicolor
// icons are); src itself when it is not a PNG larger than that.
func windowIcon(src []byte) []byte {
	img, err := png.Decode(bytes.NewReader(src))
	if err != nil || img.Bounds().Dx() <= windowIconSize && img.Bounds().Dy() <= windowIconSize {
		return src
	}
	dst := image.NewNRGBA(image.Rect(0, 0, windowIconSize, windowIconSize))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	var buf bytes.Buffer
	if err := png.Encode(&buf, dst); err != nil {
		return src
	}
	return buf.Bytes()
}
