package trust

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func project(t *testing.T) (dir string, files []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(filepath.Join(dir, ".dsh"), 0o755); err != nil {
		t.Fatal(err)
	}
	files = ProjectFiles(dir)
	if err := os.WriteFile(files[0], []byte(`{"permissions":{"allow":["Bash(make:*)"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

func trusted(t *testing.T, s *Store, dir string, files []string) bool {
	t.Helper()
	ok, err := s.IsTrusted(dir, files...)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestTrustChangeRevoke(t *testing.T) {
	dir, files := project(t)
	s := &Store{Path: filepath.Join(t.TempDir(), "state", DefaultFile)}
	if trusted(t, s, dir, files) {
		t.Fatal("trusted before Trust")
	}
	if err := s.Trust(dir, files...); err != nil {
		t.Fatal(err)
	}
	if !trusted(t, s, dir, files) {
		t.Fatal("not trusted after Trust")
	}
	if fi, err := os.Stat(s.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store file: %v %v", fi.Mode(), err)
	}
	// Changing a file revokes trust until the user trusts it again.
	if err := os.WriteFile(files[0], []byte(`{"permissions":{"allow":["Bash"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if trusted(t, s, dir, files) {
		t.Fatal("trusted after the settings changed")
	}
	if err := s.Trust(dir, files...); err != nil {
		t.Fatal(err)
	}
	if !trusted(t, s, dir, files) {
		t.Fatal("not trusted after re-trusting")
	}
	// Creating a file that was missing at trust time revokes it too.
	if err := os.WriteFile(files[1], []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if trusted(t, s, dir, files) {
		t.Fatal("trusted after settings.local.json appeared")
	}
	if err := s.Trust(dir, files...); err != nil {
		t.Fatal(err)
	}
	// Another set of files is another question.
	if trusted(t, s, dir, files[:1]) {
		t.Error("trusted for a different file set")
	}
	if err := s.Revoke(dir); err != nil {
		t.Fatal(err)
	}
	if trusted(t, s, dir, files) {
		t.Fatal("trusted after Revoke")
	}
	if err := s.Revoke(dir); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
}

func TestTrustSurvivesSymlinkedSpelling(t *testing.T) {
	dir, files := project(t)
	link := filepath.Join(filepath.Dir(dir), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	s := &Store{Path: filepath.Join(t.TempDir(), DefaultFile)}
	if err := s.Trust(dir, files...); err != nil {
		t.Fatal(err)
	}
	if !trusted(t, s, link, ProjectFiles(link)) {
		t.Error("the same project through a symlink is not trusted")
	}
	list, err := s.List()
	if err != nil || len(list) != 1 {
		t.Errorf("List = %v, %v", list, err)
	}
}

func TestTrustIsPerDirectory(t *testing.T) {
	a, fa := project(t)
	b, fb := project(t)
	s := &Store{Path: filepath.Join(t.TempDir(), DefaultFile)}
	if err := s.Trust(a, fa...); err != nil {
		t.Fatal(err)
	}
	if trusted(t, s, b, fb) {
		t.Error("trusting one project trusted another")
	}
}

func TestDamagedStoreIsAnError(t *testing.T) {
	dir, files := project(t)
	s := &Store{Path: filepath.Join(t.TempDir(), DefaultFile)}
	if err := os.WriteFile(s.Path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IsTrusted(dir, files...); err == nil || !strings.HasPrefix(err.Error(), "trust:") {
		t.Errorf("damaged store: %v", err)
	}
	if err := s.Trust(dir, files...); err == nil {
		t.Error("Trust overwrote a damaged store")
	}
	if err := os.WriteFile(s.Path, []byte(`{"version":9,"projects":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IsTrusted(dir, files...); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("future version: %v", err)
	}
	if _, err := (&Store{}).IsTrusted(dir); err == nil {
		t.Error("a store without a path")
	}
}

func TestConcurrentTrust(t *testing.T) {
	s := &Store{Path: filepath.Join(t.TempDir(), DefaultFile)}
	base := t.TempDir()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Trust(filepath.Join(base, fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if list, err := s.List(); err != nil || len(list) != 16 {
		t.Errorf("%d entries, %v", len(list), err)
	}
}
