package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/harness/markdown"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/transcript"
)

// timelineSection is the README's section whose first sh block is the
// five-minute timeline.
const timelineSection = "Five minutes: the GC-pause timeline, refused"

// readmeTimeline is the timeline's script, as the README shows it.
func readmeTimeline(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	page := markdown.Parse(string(b))
	h, end, ok := page.Section(timelineSection)
	if !ok {
		t.Fatalf("the README has no section %q", timelineSection)
	}
	for _, block := range page.Blocks {
		if block.Line > h.Line && (end < 0 || block.Line < end) && block.Lang == "sh" {
			return strings.Join(block.Lines, "\n")
		}
	}
	t.Fatalf("the README's %q has no sh block", timelineSection)
	return ""
}

// TestReadmeTimeline runs the README's five-minute timeline exactly as
// the README shows it, with bash, curl and psql, against `fencegw dev`,
// and holds every command's output to the lines the README documents
// under it (transcript.Matcher: lease ids, signatures and "…" are
// wildcards, revisions are held to their order). GW, which the script
// defaults to dev's usual address, is dev's address here, and
// DATABASE_URL the one dev printed. The script sleeps 4 s for A's lease
// to expire: that is the story, not a wait for the machine.
func TestReadmeTimeline(t *testing.T) {
	var missing []string
	for _, tool := range []string{"bash", "curl", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Skipf("the README's timeline needs %s, not installed here (apt-get install curl postgresql-client; .ci/run installs them)", strings.Join(missing, " and "))
	}
	steps, err := transcript.Parse(readmeTimeline(t))
	if err != nil {
		t.Fatal(err)
	}
	documented := 0
	for _, s := range steps {
		if len(s.Output) > 0 {
			documented++
		}
	}
	if len(steps) < 15 || documented < 8 {
		t.Fatalf("the timeline has %d commands, %d with documented output: the README lost it, or the parse did", len(steps), documented)
	}

	t.Setenv("FENCEGW_DATABASE_URL", "")
	t.Setenv("DATABASE_URL", testenv.NewDatabase(t))
	base, dbURL, stop := startDev(t)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("dev after Ctrl-C: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", transcript.Instrument(steps))
	cmd.Env = append(os.Environ(), "GW="+base, "DATABASE_URL="+dbURL, "PSQLRC=/dev/null", "LC_ALL=C.UTF-8", "PAGER=")
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("the timeline ran past 2 minutes:\n%s", out)
	}
	outputs, splitErr := transcript.Split(string(out), len(steps))
	if splitErr != nil {
		t.Fatalf("%v (bash: %v):\n%s", splitErr, err, out)
	}
	var m transcript.Matcher
	for i, s := range steps {
		if err := m.Match(s.Output, outputs[i]); err != nil {
			t.Errorf("README timeline, line %d: %s\n  %v\n  it printed:\n%s", s.Line, s.Command, err, outputs[i])
		}
	}
}
