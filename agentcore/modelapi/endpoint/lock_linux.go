package endpoint

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// lockDir holds a shared BSD lock on dir until the returned file is closed: systemd-tmpfiles
// skips a locked folder when it removes old files from /tmp (tmpfiles.d(5), "age").
func lockDir(dir string) (io.Closer, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the folder %s of the model's socket failed: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the folder %s of the model's socket failed: %w", dir, err)
	}
	return f, nil
}
