package schema

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

var (
	// ErrDirty means a migration failed halfway and the version is marked
	// dirty; the error message says how to recover.
	ErrDirty = errors.New("schema: database is dirty")
	// ErrNoVersion means no migration has been applied yet.
	ErrNoVersion = errors.New("schema: no migration applied")
)

// VersionSchema holds the version tables.
const VersionSchema = "public"

// Source is a set of migrations and the table that records their version,
// and the definitions of functions applied after them (definitions.go).
type Source struct {
	FS    fs.FS
	Table string
	// Definitions are folders of *.sql files, each the current definition
	// of one function: the file NAME.sql defines fencegw.NAME.
	Definitions []fs.FS
}

// Dir returns an application's migration folder with its version table.
func Dir(path, table string) Source {
	return Source{FS: os.DirFS(path), Table: table}
}

// Latest returns the highest version in src: what a fully migrated
// database reports.
func Latest(src Source) (uint, error) {
	entries, err := fs.ReadDir(src.FS, ".")
	if err != nil {
		return 0, fmt.Errorf("schema: read migrations: %w", err)
	}
	var latest uint
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if v, err := strconv.ParseUint(prefix, 10, 32); ok && err == nil && uint(v) > latest {
			latest = uint(v)
		}
	}
	return latest, nil
}

// Migrator applies one Source to one database.
type Migrator struct {
	m    *migrate.Migrate
	db   *sql.DB
	src  source.Driver
	cfg  *pgx.ConnConfig // for the definitions, applied apart from golang-migrate
	defs []fs.FS
	out  io.Writer // where Report sends the definitions applied; nil: nowhere
}

// Open connects to databaseURL (URL or key=value form) for src.
func Open(databaseURL string, src Source) (*Migrator, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("schema: parse database URL: %w", err)
	}
	// The migrations first: opening the database creates the version
	// table, which a folder without migrations should not leave behind.
	source, err := iofs.New(src.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("schema: read migrations: %w", err)
	}
	if _, err := source.First(); errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("schema: the folder holds no migrations (files such as 1_create.up.sql and 1_create.down.sql)")
	}
	db := stdlib.OpenDB(*cfg)
	// The version table lives in public, not in whatever the role's
	// search_path resolves first: for a role named fencegw that would be
	// the fencegw schema once migration 1 created it.
	driver, err := pgxmigrate.WithInstance(db, &pgxmigrate.Config{MigrationsTable: src.Table, SchemaName: VersionSchema})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("schema: open database: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", source, "pgx5", driver)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Migrator{m: m, db: db, src: source, cfg: cfg, defs: src.Definitions}, nil
}

// Report makes m print each migration it runs to w, one line each:
// "ran 3/u idempotency" (u: up, d: down), and each definition it applies:
// "defined fencegw.fence".
func (m *Migrator) Report(w io.Writer) { m.m.Log, m.out = migrationLog{w}, w }

// migrationLog is golang-migrate's Logger, terse: it then logs one line
// per migration run, the migration first. The time it adds counts from
// the start of the whole run, so it is left out.
type migrationLog struct{ w io.Writer }

func (l migrationLog) Printf(format string, v ...any) {
	// Errors come back from the call as well; printed here they would
	// read as a migration that ran.
	if len(v) > 0 && !strings.HasPrefix(format, "error") {
		fmt.Fprintf(l.w, "ran %v\n", v[0])
	}
}
func (l migrationLog) Verbose() bool { return false }

// Up applies every pending migration, then every definition the database
// does not hold as its file makes it; applying none is not an error.
func (m *Migrator) Up() error {
	// A set of definitions that cannot be read is refused before anything
	// is migrated.
	defs, err := loadDefinitions(m.defs)
	if err != nil {
		return err
	}
	if err := m.run("up", m.m.Up()); err != nil {
		return err
	}
	return m.define(defs)
}

// Up applies every pending migration of each source, in order, on
// databaseURL: what every start-up (dev, bench, torture, tests) does.
func Up(databaseURL string, srcs ...Source) error {
	for _, src := range srcs {
		m, err := Open(databaseURL, src)
		if err != nil {
			return err
		}
		err = m.Up()
		if cerr := m.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Force sets the recorded version without running anything and clears the
// dirty flag: the recovery step after fixing a failed migration by hand.
// A version the source has no migration of is refused: recorded, it would
// send the next `up` looking for a successor that does not exist.
func (m *Migrator) Force(version int) error {
	if version > 0 {
		r, _, err := m.src.ReadUp(uint(version))
		if err != nil {
			return fmt.Errorf("schema: force: there is no migration %d", version)
		}
		r.Close()
	}
	if version == 0 {
		// No migration is 0: it means none applied, which golang-migrate
		// records as its nil version. Recorded as 0, the next `up` would
		// look for a migration 0 and fail.
		version = database.NilVersion
	}
	return m.run("force", m.m.Force(version))
}

// Version returns the applied version; ErrNoVersion if none.
func (m *Migrator) Version() (version uint, dirty bool, err error) {
	version, dirty, err = m.m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, ErrNoVersion
	}
	if err != nil {
		return 0, false, fmt.Errorf("schema: version: %w", err)
	}
	return version, dirty, nil
}

func (m *Migrator) run(op string, err error) error {
	var dirty migrate.ErrDirty
	var short migrate.ErrShortLimit // carries how many were missing: errors.Is cannot match it
	switch {
	case err == nil, errors.Is(err, migrate.ErrNoChange):
		return nil
	case errors.As(err, &short): // Down counts first; another migrate may have undone some since
		return fmt.Errorf("schema: %s: %d fewer migrations were applied than asked to undo; every one that was is undone", op, short.Short)
	case errors.As(err, &dirty):
		return fmt.Errorf("%w at version %d: migration %d failed halfway. Repair the schema by hand "+
			"(finish or undo what migration %d did), then run `fencegw migrate force V` with V = %d if you finished it or the previous version if you undid it",
			ErrDirty, dirty.Version, dirty.Version, dirty.Version, dirty.Version)
	}
	return fmt.Errorf("schema: %s: %w", op, err)
}

// Close releases the connection.
func (m *Migrator) Close() error {
	srcErr, dbErr := m.m.Close()
	return errors.Join(srcErr, dbErr, m.db.Close())
}
