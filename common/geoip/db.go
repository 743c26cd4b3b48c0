package geoip

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// DB is a reloadable geoip table, safe for concurrent use: lookups never
// block and see either the old or the new table during a Reload.
type DB struct {
	v4Path, v6Path string
	reloadMu       sync.Mutex // serialises Reload
	table          atomic.Pointer[Table]
}

// Open loads the files like [Load] and returns a DB that Reload re-reads
// from the same paths.
func Open(v4Path, v6Path string) (*DB, error) {
	t, err := Load(v4Path, v6Path)
	if err != nil {
		return nil, err
	}
	db := &DB{v4Path: v4Path, v6Path: v6Path}
	db.table.Store(t)
	return db, nil
}

// Reload re-reads the files. On error it returns the error and keeps the
// current table.
func (db *DB) Reload() error {
	db.reloadMu.Lock()
	defer db.reloadMu.Unlock()
	t, err := Load(db.v4Path, db.v6Path)
	if err != nil {
		return err
	}
	db.table.Store(t)
	return nil
}

// Table returns the current table; nil for a nil DB.
func (db *DB) Table() *Table {
	if db == nil {
		return nil
	}
	return db.table.Load()
}

// Lookup returns the country code of addr, or [Unknown] ("??") when the
// address has no known country or db is nil. It does not allocate.
func (db *DB) Lookup(addr netip.Addr) string {
	if c, ok := db.Table().Lookup(addr); ok {
		return c
	}
	return Unknown
}
