// Command fencegw is the fencing-aware SQL write gateway: one binary to
// serve, run a local dev stack, migrate schemas and check policies.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/buildinfo"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/internal/harness/torture"
)

// errUsage marks command-line mistakes: exit status 2, with a pointer to
// the command's help.
var errUsage = errors.New("usage")

func main() {
	// The children of `fencegw torture` parse their own arguments and are
	// not for people: they stay out of the command tree and its help.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "torture-worker":
			os.Exit(torture.WorkerMain(os.Args[2:]))
		case "torture-etcd":
			os.Exit(torture.MemberMain(os.Args[2:]))
		}
	}
	err := execute(notifySignals(), os.Stdout, os.Args[1:]...)
	var exit *exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		if !exit.quiet {
			fmt.Fprintf(os.Stderr, "fencegw: %v\n", err)
		}
		os.Exit(exit.code)
	case errors.Is(err, errUsage):
		// The word "usage" marks the error for this switch; the line after
		// it says what kind of error it is.
		msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
		fmt.Fprintf(os.Stderr, "fencegw: %s\nRun 'fencegw help' or 'fencegw COMMAND --help' for usage.\n", msg)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "fencegw: %v\n", err)
		os.Exit(1)
	}
}

// execute runs the command line args (without the program's name), with
// out as standard output.
func execute(ctx context.Context, out io.Writer, args ...string) error {
	root := rootCommand(out)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// rootCommand is the command tree, writing to out. cobra and pflag give what users of
// kubectl and etcdctl expect without code of ours: flags before or after
// the words, `help CMD`, --version, and shell completion; pflag was
// already in the module graph through etcd.
func rootCommand(out io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "fencegw",
		Short: "the fencing-aware SQL write gateway",
		Long: `fencegw is an HTTP gateway in front of PostgreSQL that applies a write only
if its fencing token is not older than the highest already accepted for
its resource. Tokens are etcd revisions, issued by its lease API.`,
		Example: `  fencegw dev                      # the whole stack on embedded defaults
  fencegw serve --database-url URL --etcd HOST:2379 --policy policy.yaml
  fencegw completion bash > /etc/bash_completion.d/fencegw`,
		Version: buildinfo.Read().String(),
		// Unknown words are usage errors of ours (exit 2), not cobra's.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%w: unknown command %q%s", errUsage, args[0], didYouMean(cmd, args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(os.Stderr)
			_ = cmd.Usage()
			return fmt.Errorf("%w: no command given", errUsage)
		},
		SilenceErrors: true, // main prints them once, with the exit status
		SilenceUsage:  true, // an error is not a request for the manual
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// Declared here so that it has no -v: `fencegw -version`, as Go's flag
	// package read it, then hits a long flag with one dash and is told so.
	root.Flags().Bool("version", false, "print the build, as fencegw version does")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		serveCommand(), devCommand(), migrateCommand(), policyCommand(),
		inspectCommand(), guardCommand(), grantsCommand(), lockCommand(),
		benchCommand(), tortureCommand(), epochCommand(), keysCommand(),
		healthCommand(), versionCommand(), leaseCommand(), fenceCommand(), kekCommand(), etcdAuthCommand(),
	)
	// cobra's own two, in the house style. The completion command takes
	// its output when it is made.
	root.SetOut(out)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short, c.Example = "print the help of any command", "  fencegw help epoch bump"
			c.Run, c.RunE = nil, helpTopic
		case "completion":
			c.Short = "print the shell's completion script: bash, zsh, fish or powershell"
			c.Example = "  source <(fencegw completion bash)\n  fencegw completion zsh > \"${fpath[1]}/_fencegw\""
		}
	}
	return root
}

// helpTopic prints the help of the command args name; a name of none is
// a usage error, where cobra's own would print the general help.
func helpTopic(c *cobra.Command, args []string) error {
	cmd, rest, err := c.Root().Find(args)
	if err != nil || len(rest) > 0 {
		return fmt.Errorf("%w: help: no command %q", errUsage, clip.String(strings.Join(args, " "), 40))
	}
	return cmd.Help()
}

// commandName is cmd's path without the program's name ("epoch show"):
// main prefixes every error with "fencegw: " already.
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// noArgs refuses any word after a command that takes none.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %d, the first %q", errUsage, commandName(cmd), len(args), clip.String(args[0], 40))
	}
	return nil
}

// exactArgs refuses a command line without exactly n words after the
// command; want says what they are.
func exactArgs(n int, want string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%w: %s: want %s, got %d arguments", errUsage, commandName(cmd), want, len(args))
		}
		return nil
	}
}

// needVerb is the Args of a command whose work is done by its
// subcommands: a word that names none is a usage error.
func needVerb(cmd *cobra.Command, args []string) error {
	var verbs []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			verbs = append(verbs, c.Name())
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: %s: want one of %q", errUsage, commandName(cmd), verbs)
	}
	return fmt.Errorf("%w: %s: unknown %q%s; want one of %q", errUsage, commandName(cmd), args[0], didYouMean(cmd, args[0]), verbs)
}

// didYouMean is ", did you mean …?" naming cmd's subcommands spelled like
// word (cobra's suggestions: a prefix, or within two edits), or "".
func didYouMean(cmd *cobra.Command, word string) string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	s := cmd.SuggestionsFor(word)
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
}

// verbGroup is a command that only holds subcommands (`fencegw epoch
// show`): run alone or with an unknown word, it is a usage error.
func verbGroup(use, short, long string, verbs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		Args: needVerb,
		RunE: func(*cobra.Command, []string) error { return nil }, // needVerb refused first
	}
	cmd.AddCommand(verbs...)
	return cmd
}

// secondSignal is closed when a second SIGTERM or interrupt arrives: the
// first asks a command to stop gracefully, the second to hurry.
var secondSignal = make(chan struct{})

// notifySignals returns a context that ends on the first SIGTERM or
// interrupt, and closes secondSignal on the next.
func notifySignals() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		<-sigs
		close(secondSignal)
	}()
	return ctx
}

// envOr returns the first non-empty environment variable of names, or def.
func envOr(def string, names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return def
}
