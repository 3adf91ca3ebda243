package security

import (
	"os"
	"path/filepath"
	"testing"
)

func readFile(t *testing.T, dir string) (string, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ScramCredentialsFile))
	return string(b), err
}

func writeFile(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ScramCredentialsFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
