package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestSecretsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := NewSecrets(NewMemoryKV())
	if _, err := s.LoadRoot(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadRoot on empty store: %v, want ErrNotFound", err)
	}
	tests := []struct{ company, account string }{
		{"https://shop.example", ""},
		{"https://shop.example", "work/acct"},
		{"https://auth.example/tenant/1", ""},
	}
	for _, tc := range tests {
		b, err := s.UpdateCompany(ctx, tc.company, tc.account, func(b *CompanyBundle) error {
			b.UserID = "u-" + tc.company + tc.account
			return nil
		})
		if err != nil || b.UserID != "u-"+tc.company+tc.account || b.Version != BundleVersion {
			t.Fatalf("UpdateCompany(%q,%q) = %+v, %v", tc.company, tc.account, b, err)
		}
	}
	got, err := s.Companies(ctx)
	if err != nil || len(got) != 3 {
		t.Fatalf("Companies = %v, %v", got, err)
	}
	for _, tc := range tests {
		b, err := s.LoadCompany(ctx, tc.company, tc.account)
		if err != nil || b.UserID != "u-"+tc.company+tc.account {
			t.Fatalf("LoadCompany(%q,%q) = %+v, %v", tc.company, tc.account, b, err)
		}
	}
	// A failing update stores nothing.
	_, err = s.UpdateCompany(ctx, tests[0].company, "", func(b *CompanyBundle) error {
		b.UserID = "changed"
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("want error from fn")
	}
	if b, _ := s.LoadCompany(ctx, tests[0].company, ""); b.UserID == "changed" {
		t.Fatal("failed update was stored")
	}
	if err := s.DeleteCompany(ctx, tests[0].company, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadCompany(ctx, tests[0].company, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Companies(ctx); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
}

func TestUpdateCompanyConcurrent(t *testing.T) {
	ctx := context.Background()
	s := NewSecrets(NewMemoryKV())
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := s.UpdateCompany(ctx, "https://c.example", "", func(b *CompanyBundle) error {
				b.Tokens = append(b.Tokens, Token{Resource: fmt.Sprint(i)})
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	b, _ := s.LoadCompany(ctx, "https://c.example", "")
	if len(b.Tokens) != 50 {
		t.Fatalf("lost updates: %d tokens, want 50", len(b.Tokens))
	}
}

func TestNewerFormatRefused(t *testing.T) {
	ctx := context.Background()
	kv := NewMemoryKV()
	_ = kv.Set(ctx, companyItem("https://c.example", ""), []byte(`{"v":99,"user_id":"x"}`))
	_, err := NewSecrets(kv).LoadCompany(ctx, "https://c.example", "")
	if err == nil {
		t.Fatal("want error for newer format")
	}
}

// TestDeviceBundle: the operator enrollment is one item of its own, not a Company, and Reset
// removes it.
func TestDeviceBundle(t *testing.T) {
	ctx := context.Background()
	s := NewSecrets(NewMemoryKV())
	if _, err := s.LoadDevice(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadDevice on empty store: %v, want ErrNotFound", err)
	}
	if err := s.SaveDevice(ctx, &DeviceBundle{Operator: "https://operator.example", DeviceID: "dev_1"}); err != nil {
		t.Fatal(err)
	}
	b, err := s.LoadDevice(ctx)
	if err != nil || b.DeviceID != "dev_1" || b.Version != BundleVersion {
		t.Fatalf("LoadDevice = %+v, %v", b, err)
	}
	if got, _ := s.Companies(ctx); len(got) != 0 {
		t.Fatalf("the enrollment is listed as a Company: %v", got)
	}
	if err := s.DeleteDevice(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDevice(ctx); err != nil {
		t.Fatalf("deleting a missing enrollment: %v", err)
	}
	if err := s.SaveDevice(ctx, &DeviceBundle{DeviceID: "dev_2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadDevice(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after reset: %v", err)
	}
}

// TestLoadCompanyDecodedOnce: a bundle read again is the stored one, whatever the caller did to
// the copy it got before, and a bundle changed in the keyring (by this process or another) is
// read as changed.
func TestLoadCompanyDecodedOnce(t *testing.T) {
	ctx := context.Background()
	kv := NewMemoryKV()
	s := NewSecrets(kv)
	if _, err := s.UpdateCompany(ctx, "https://a.example", "me", func(b *CompanyBundle) error {
		b.UserID, b.Tokens = "u1", []Token{{AccessToken: "at1", Scopes: []string{"read"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func(t *testing.T)
		want   string // the access token and its first scope
	}{
		{"first read", func(*testing.T) {}, "at1 read"},
		{"read again after the caller changed its copy", func(t *testing.T) {
			b, err := s.LoadCompany(ctx, "https://a.example", "me")
			if err != nil {
				t.Fatal(err)
			}
			b.Tokens[0].AccessToken, b.Tokens[0].Scopes[0] = "changed", "changed"
		}, "at1 read"},
		{"changed through UpdateCompany", func(t *testing.T) {
			if _, err := s.UpdateCompany(ctx, "https://a.example", "me", func(b *CompanyBundle) error {
				b.Tokens[0].AccessToken = "at2"
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}, "at2 read"},
		{"changed in the keyring by another process", func(t *testing.T) {
			if err := kv.Set(ctx, companyItem("https://a.example", "me"), []byte(`{"v":1,"user_id":"u1","tokens":[{"resource":"","access_token":"at3","scopes":["write"]}]}`)); err != nil {
				t.Fatal(err)
			}
		}, "at3 write"},
	}
	for _, st := range steps {
		st.change(t)
		b, err := s.LoadCompany(ctx, "https://a.example", "me")
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Tokens[0].AccessToken + " " + b.Tokens[0].Scopes[0]; got != st.want {
			t.Errorf("%s: read %q, want %q", st.name, got, st.want)
		}
	}
}
