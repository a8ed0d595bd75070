package vault

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
)

// TestOpenStateConcurrently opens one new database from several places at once, as the window
// and `poppydesk check` do on a fresh data folder: every opener gets the migrated database.
func TestOpenStateConcurrently(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "state.sqlite")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := OpenState(context.Background(), path, StateOptions{PruneLater: true})
				if err == nil {
					err = st.Close()
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
