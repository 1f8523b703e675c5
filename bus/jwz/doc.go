// Package jwz appends messages to a jwz store, the local append-only message
// store idle reads its loop state from, the way `jwz post <topic>` does.
//
// A store is a directory (.jwz, or the legacy .zawinski) holding
// messages.jsonl, one JSON object a line: topic records
// {"type":"topic","id","name","description","created_at"} and message
// records {"type":"message","id","topic_id","parent_id","body","created_at",
// "sender","git"}. Ids are ULIDs, times milliseconds since the epoch. The
// log is the source of truth; jwz rebuilds its SQLite cache (messages.db)
// from the bytes it has not read yet, so an appended line is seen by the
// next jwz command.
//
// Guarantees: every append happens under an exclusive flock of the store's
// lock file, the one jwz takes for its own appends; the topic is looked up
// in the log under that lock and its record appended first when missing;
// each record is one whole line written with a single write at the end of
// the file and fsynced before the lock is released, so the log is never
// left with a torn or interleaved line by this package. Message ids
// increase strictly within a Writer, even within one millisecond, and so
// do their times, so readers ordering by time see the order of writing.
package jwz
