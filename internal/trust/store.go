package trust

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/weavehq/weave/internal/atomicfile"
	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/safefile"
)

// recordVersion is the record's format; a record of another version is
// read as no record, so the person is asked again.
const recordVersion = 1

// Record is what the user's state directory keeps for one project.
type Record struct {
	Version   int                   `json:"version"`
	Project   string                `json:"project"`
	TrustedAt time.Time             `json:"trusted_at"`
	Files     map[string]RecordFile `json:"files"`
}

// RecordFile is one trusted file: its digest, and a salted digest per key
// path.
type RecordFile struct {
	Digest string `json:"sha256"`
	// Salt is mixed into every key digest, fresh at each save, so that a
	// digest of a short value cannot be looked up in a table.
	Salt string            `json:"salt"`
	Keys map[string]string `json:"keys"`
}

// Store is the user's trust records.
type Store struct {
	// Dir is the directory of the records; "" when no home is known, in
	// which case nothing can be trusted.
	Dir string
}

// UserStore is the store of the user of environ (os.Environ() form; nil
// means the process's own): layout.User's Trust directory.
func UserStore(environ []string) Store { return Store{Dir: layout.UserFrom(environ).Trust()} }

// path is the record file of a project: its real path's sha256, so that
// a name says nothing of the project and two spellings of one path meet.
func (st Store) path(project string) (string, error) {
	if st.Dir == "" {
		return "", errors.New("no state directory to keep trust in: set HOME or XDG_STATE_HOME")
	}
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(st.Dir, hex.EncodeToString(sum[:16])+".json"), nil
}

// Path is where the record of the snapshot's project is kept.
func (st Store) Path(s *Snapshot) (string, error) { return st.path(s.Project) }

// maxRecordSize bounds what is read of a record.
const maxRecordSize = 4 << 20

// Load returns the record of the snapshot's project, nil when there is
// none (or it is of another version or another project).
func (st Store) Load(s *Snapshot) (*Record, error) {
	p, err := st.path(s.Project)
	if err != nil {
		return nil, err
	}
	data, err := safefile.ReadFile(p, maxRecordSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the trust record %s: %w", p, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read the trust record %s: %w; remove it and run `weave trust`", p, err)
	}
	if r.Version != recordVersion || r.Project != s.Project {
		return nil, nil
	}
	return &r, nil
}

// Save records the files of the snapshot named by rels as trusted (every
// file when rels is nil), keeping what the record held for the others.
// The record is written atomically, mode 0600.
func (st Store) Save(s *Snapshot, rels []string) error {
	p, err := st.path(s.Project)
	if err != nil {
		return err
	}
	old, err := st.Load(s)
	if err != nil {
		old = nil // an unreadable record is replaced whole
	}
	r := Record{Version: recordVersion, Project: s.Project, TrustedAt: time.Now().UTC(), Files: map[string]RecordFile{}}
	for _, f := range s.Files {
		if rels != nil && !slices.Contains(rels, f.Rel) {
			continue
		}
		salt := make([]byte, 16)
		if _, err := rand.Read(salt); err != nil {
			return fmt.Errorf("trust: %w", err)
		}
		rf := RecordFile{Digest: f.Digest, Salt: hex.EncodeToString(salt), Keys: map[string]string{}}
		for k, v := range f.values {
			rf.Keys[k] = keyDigest(rf.Salt, k, v)
		}
		r.Files[f.Rel] = rf
	}
	if old != nil && rels != nil {
		for rel, rf := range old.Files {
			if _, ok := r.Files[rel]; !ok {
				r.Files[rel] = rf
			}
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := os.MkdirAll(st.Dir, 0o700); err != nil {
		return fmt.Errorf("create the trust directory: %w", err)
	}
	if err := atomicfile.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	// atomicfile keeps the mode of a file it replaces; the record is the
	// user's alone whatever it was before.
	if err := os.Chmod(p, 0o600); err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	return nil
}

// Revoke forgets the project's record; the next start asks again.
func (st Store) Revoke(s *Snapshot) error {
	p, err := st.path(s.Project)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("revoke trust: %w", err)
	}
	return nil
}

func keyDigest(salt, key, value string) string {
	h := sha256.New()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(value))
	return hex.EncodeToString(h.Sum(nil))
}
