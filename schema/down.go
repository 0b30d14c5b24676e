package schema

import (
	"errors"
	"fmt"
	"os"
)

// Down reverts n migrations. More than are applied is refused before any
// is undone: a slip of the finger (10 for 1) would otherwise drop every
// table of the schema, the fences included, before saying so.
func (m *Migrator) Down(n int) error {
	if n < 1 {
		return fmt.Errorf("schema: down: want a number of migrations >= 1, got %d", n)
	}
	applied, dirty, err := m.applied()
	if err != nil {
		return err
	}
	if !dirty && n > applied {
		return fmt.Errorf("schema: down: %d migrations are applied, fewer than the %d asked to undo; nothing was undone (`down %d` undoes them all)", applied, n, applied)
	}
	return m.run("down", m.m.Steps(-n))
}

// applied counts the migrations applied, walking the source back from the
// recorded version. A dirty version is left to Steps, which refuses it
// with its repair instructions; a recorded version the folder lacks is
// named (a wrong --dir or --table, or an older binary).
func (m *Migrator) applied() (n int, dirty bool, err error) {
	v, dirty, err := m.Version()
	if errors.Is(err, ErrNoVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if dirty {
		return 0, true, nil
	}
	r, _, err := m.src.ReadUp(v)
	if err != nil {
		return 0, false, fmt.Errorf("schema: down: the recorded version %d has no migration in this folder (check --dir and --table)", v)
	}
	r.Close()
	for n = 1; ; n++ {
		prev, err := m.src.Prev(v)
		if errors.Is(err, os.ErrNotExist) {
			return n, false, nil // no migration before v
		}
		if err != nil {
			return 0, false, fmt.Errorf("schema: reading the migrations: %w", err)
		}
		v = prev
	}
}
