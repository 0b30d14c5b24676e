package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/authority"
)

func etcdAuthCommand() *cobra.Command {
	var cfg serveConfig
	var user string
	cmd := &cobra.Command{
		Use:   "etcd-auth --etcd URL,... [--user fencegw]",
		Short: "give etcd the gateways' user, limited to /fencegw/, and root, and turn its auth on",
		Long: `Makes etcd least privilege for fencegw, and may run again:
  - the role USER (default fencegw) may read and write the keys under
    /fencegw/ and nothing else: any other permission it had is revoked;
  - the user USER has that role and no other; the user root, role root,
    is for operators;
  - etcd's auth is on.
Users it makes have no password: with etcd's --client-cert-auth each
proves who it is by a client certificate whose common name is its name
(the gateways' --etcd-cert, an operator's root certificate). A client
etcd lets in under any other name reads and writes nothing. Run it as
etcd's root once auth is on (a certificate of common name root, or
--etcd-user root); before, any client may. docker-compose.tls.yml runs it
as a one-shot service.`,
		Example: `  fencegw etcd-auth --etcd https://etcd1:2379 --etcd-cacert etcd-ca.crt --etcd-cert etcd-root.crt --etcd-key etcd-root.key`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return etcdError("etcd-auth", cfg, runEtcdAuth(cmd.Context(), cfg, user, cmd.OutOrStdout()))
		},
	}
	cfg.bindBackends(cmd, cmd.Flags(), backends{etcd: true})
	cmd.Flags().StringVar(&user, "user", "fencegw", "the gateways' etcd user, and its role: the common name of their --etcd-cert")
	return cmd
}

// runEtcdAuth serves `fencegw etcd-auth`.
func runEtcdAuth(ctx context.Context, cfg serveConfig, user string, out io.Writer) error {
	if len(cfg.EtcdEndpoints) == 0 {
		return fmt.Errorf("%w: etcd-auth: needs --etcd", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cli, err := dialEtcd(ctx, cfg, "etcd-auth")
	if err != nil {
		return err
	}
	defer cli.Close()
	done, err := authority.GrantAccess(ctx, cli, user)
	for _, step := range done {
		fmt.Fprintln(out, "etcd-auth: "+step)
	}
	if err != nil {
		return err
	}
	if len(done) == 0 {
		fmt.Fprintf(out, "etcd-auth: nothing to do: auth is on, %s may read and write /fencegw/ only, root is root\n", user)
	}
	return nil
}
