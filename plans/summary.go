package plans

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/weavehq/weave/internal/layout"
	"github.com/weavehq/weave/internal/safefile"
)

// Summary is a plan as listings show it: its name, file and progress.
type Summary struct {
	Name     string
	Path     string
	ModTime  time.Time
	Progress Progress
	// Invalid says why the file is not read as a plan (see Plan.Invalid).
	Invalid string
}

// CacheDir is the directory of a project's caches: machine-local, rebuilt
// when missing, safe to delete at any time.
func CacheDir(project string) string { return layout.NewProject(project).Cache() }

// progressCacheFile holds the progress of each plan as last parsed, keyed by
// file name with the file's identity (size, modification and change times,
// inode), under CacheDir.
const progressCacheFile = "progress.json"

// progressCacheVersion changes whenever what the parser counts changes, so
// that a cache written by another version is not believed.
const progressCacheVersion = 1

// racyWindow is how recently modified a file may be and still be cached. A
// file written again within its file system's timestamp granularity can
// keep its modification time; one that has been quiet this long cannot be
// changed without a new one (the "racy git" rule).
const racyWindow = 2 * time.Second

type progressCache struct {
	Version int                   `json:"version"`
	Plans   map[string]cacheEntry `json:"plans"`
}

type cacheEntry struct {
	fileKey
	Completed int `json:"completed"`
	Total     int `json:"total"`
}

// fileKey identifies one version of a file without reading it.
type fileKey struct {
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime_ns"`
	// CTime and Inode are zero where the platform does not give them.
	CTime int64  `json:"ctime_ns,omitempty"`
	Inode uint64 `json:"inode,omitempty"`
}

func keyOf(fi fs.FileInfo) fileKey {
	k := fileKey{Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	k.CTime, k.Inode = changeTime(fi)
	return k
}

// Summaries returns the summary of every plan in .weave/plans, in
// Discover's order (newest modified first, ties by name), with the same
// counts a full parse gives. Only plans that changed since the progress
// cache under CacheDir last saw them are read and parsed; the cache is then
// brought up to date. A cache that is missing, unreadable or from another
// version is ignored, and one that cannot be written is not an error.
// It stops when ctx is done.
func Summaries(ctx context.Context, project string) ([]Summary, error) {
	files, err := planFiles(project)
	if err != nil {
		return nil, err
	}
	// The cache is read and replaced only as a regular file inside the
	// project: a link to /dev/zero or out of the project, or a named pipe,
	// is ignored like a missing cache.
	inside := safefile.Inside{Root: project}
	cachePath := filepath.Join(CacheDir(project), progressCacheFile)
	old := readProgressCache(inside, cachePath)
	fresh := progressCache{Version: progressCacheVersion, Plans: make(map[string]cacheEntry, len(files))}
	changed := len(old.Plans) != len(files)
	now := time.Now()
	out := make([]Summary, 0, len(files))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.invalid != "" {
			s := summaryOf(f, Progress{})
			s.Invalid = f.invalid
			out = append(out, s)
			continue
		}
		base := filepath.Base(f.path)
		key := keyOf(f.info)
		if e, ok := old.Plans[base]; ok && e.fileKey == key {
			fresh.Plans[base] = e
			out = append(out, summaryOf(f, Progress{Completed: e.Completed, Total: e.Total}))
			continue
		}
		changed = true
		p, err := LoadContext(ctx, f.path)
		if err != nil {
			return nil, err
		}
		pr := p.Progress()
		// Load stats the file again: cache what was parsed, under the key
		// it had then, and only when it is too old to change unnoticed.
		if fi, err := os.Stat(f.path); err == nil && p.Invalid == "" && keyOf(fi) == key && now.Sub(fi.ModTime()) > racyWindow {
			fresh.Plans[base] = cacheEntry{fileKey: key, Completed: pr.Completed, Total: pr.Total}
		}
		out = append(out, Summary{Name: p.Name, Path: p.Path, ModTime: p.ModTime, Progress: pr, Invalid: p.Invalid})
	}
	if changed {
		writeProgressCache(inside, cachePath, fresh)
	}
	return out, nil
}

func summaryOf(f planFile, pr Progress) Summary {
	path := f.path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return Summary{Name: f.name, Path: path, ModTime: f.modTime, Progress: pr}
}

// maxProgressCache bounds the cache file read: tens of thousands of plans.
const maxProgressCache = 8 << 20

func readProgressCache(inside safefile.Inside, path string) progressCache {
	var c progressCache
	b, err := inside.ReadFile(path, maxProgressCache)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Version != progressCacheVersion {
		return progressCache{}
	}
	return c
}

// writeProgressCache replaces the cache by renaming a temporary file over
// it, so that a reader never sees half of it. It is not synced: after a
// crash the cache may be lost, and a lost cache is only a slower listing.
// Every step stays inside the project: a cache directory linked out of it
// is left alone.
func writeProgressCache(inside safefile.Inside, path string, c progressCache) {
	b, err := json.Marshal(c)
	if err != nil {
		return
	}
	if err := inside.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpName := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp"+hex.EncodeToString(rnd[:]))
	tmp, err := inside.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || inside.Rename(tmpName, path) != nil {
		_ = inside.Remove(tmpName)
	}
}
