package authority

import (
	"context"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Least privilege in etcd: the gateways' user may read and write fencegw's
// keys and nothing else, root is for operators, and etcd's auth is on, so
// that a client etcd lets in (any certificate of a CA it trusts) reads
// and writes nothing unless it is one of those users. With etcd's
// --client-cert-auth a certificate's common name is its user: the users
// made here have no password.

// keyPrefix is every key fencegw keeps in etcd.
const keyPrefix = "/fencegw/"

// GrantAccess makes user (and its role, of the same name) able to read
// and write the keys under /fencegw/ and nothing else, taking any other
// permission or role from them; makes root, of role root, for operators;
// and turns etcd's auth on. Users it makes have no password: each proves
// who it is by a client certificate whose common name it is. It may run
// again: what is already as it should be is left. Once auth is on only
// root may run it. It returns what it changed, in words. ctx bounds the
// whole: a dozen calls, each one etcd request.
func GrantAccess(ctx context.Context, cli *clientv3.Client, user string) ([]string, error) {
	if user == "" || user == "root" {
		return nil, fmt.Errorf("authority: the gateways' etcd user must be named, and not root")
	}
	var done []string
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("authority: %s: %w", what, err)
		}
		done = append(done, what)
		return nil
	}
	roles, err := cli.RoleList(ctx)
	if err != nil {
		return nil, fmt.Errorf("authority: list etcd's roles: %w", err)
	}
	if !slices.Contains(roles.Roles, user) {
		if _, err := cli.RoleAdd(ctx, user); step("role "+user+" made", err) != nil {
			return done, err
		}
	}
	role, err := cli.RoleGet(ctx, user)
	if err != nil {
		return done, fmt.Errorf("authority: read role %s: %w", user, err)
	}
	end := clientv3.GetPrefixRangeEnd(keyPrefix)
	granted := false
	for _, p := range role.Perm {
		if p.PermType == authpb.READWRITE && string(p.Key) == keyPrefix && string(p.RangeEnd) == end {
			granted = true
			continue
		}
		_, err := cli.RoleRevokePermission(ctx, user, string(p.Key), string(p.RangeEnd))
		if step(fmt.Sprintf("role %s: %s on [%q, %q) revoked", user, p.PermType, p.Key, p.RangeEnd), err) != nil {
			return done, err
		}
	}
	if !granted {
		_, err := cli.RoleGrantPermission(ctx, user, keyPrefix, end, clientv3.PermissionType(clientv3.PermReadWrite))
		if step(fmt.Sprintf("role %s: read and write %s granted", user, keyPrefix), err) != nil {
			return done, err
		}
	}
	if err := ensureUser(ctx, cli, user, user, step); err != nil {
		return done, err
	}
	if err := ensureUser(ctx, cli, "root", "root", step); err != nil {
		return done, err
	}
	status, err := cli.AuthStatus(ctx)
	if err != nil {
		return done, fmt.Errorf("authority: read whether etcd's auth is on: %w", err)
	}
	if !status.Enabled {
		if _, err := cli.AuthEnable(ctx); step("etcd's auth turned on", err) != nil {
			return done, err
		}
	}
	return done, nil
}

// ensureUser makes name, without a password, of role and no other.
func ensureUser(ctx context.Context, cli *clientv3.Client, name, role string, step func(string, error) error) error {
	users, err := cli.UserList(ctx)
	if err != nil {
		return fmt.Errorf("authority: list etcd's users: %w", err)
	}
	if !slices.Contains(users.Users, name) {
		_, err := cli.UserAddWithOptions(ctx, name, "", &clientv3.UserAddOptions{NoPassword: true})
		if err := step("user "+name+" made (no password: a client certificate of common name "+name+")", err); err != nil {
			return err
		}
	}
	u, err := cli.UserGet(ctx, name)
	if err != nil {
		return fmt.Errorf("authority: read user %s: %w", name, err)
	}
	for _, r := range u.Roles {
		if r != role {
			if _, err := cli.UserRevokeRole(ctx, name, r); step(fmt.Sprintf("user %s: role %s revoked", name, r), err) != nil {
				return err
			}
		}
	}
	if !slices.Contains(u.Roles, role) {
		if _, err := cli.UserGrantRole(ctx, name, role); step(fmt.Sprintf("user %s: role %s granted", name, role), err) != nil {
			return err
		}
	}
	return nil
}

// AuthEnabled asks etcd whether its auth is on; known is false if etcd
// cannot tell (an etcd older than 3.5, or one that refuses to say).
func (a *Etcd) AuthEnabled(ctx context.Context) (enabled, known bool) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	status, err := a.cli.AuthStatus(ctx)
	if err != nil {
		return false, false
	}
	return status.Enabled, true
}
