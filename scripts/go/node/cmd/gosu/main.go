// gosu: runs a command as another user, for the entrypoints of the local
// control plane's stand-in database images, which (like the official images)
// start as root when the pod does not say otherwise and drop to the database
// user. A stand-in for the gosu tool those images carry.
//
//	gosu USER COMMAND [ARG]...
//
// USER is a name in /etc/passwd or a numeric uid; the group is that user's.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gosu USER COMMAND [ARG]...")
		os.Exit(2)
	}
	uid, gid, err := lookup(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gosu: %v\n", err)
		os.Exit(1)
	}
	path, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gosu: %v\n", err)
		os.Exit(127)
	}
	// Groups first, then the group, then the user: after Setuid nothing else may change.
	for _, step := range []func() error{
		func() error { return syscall.Setgroups([]int{gid}) },
		func() error { return syscall.Setgid(gid) },
		func() error { return syscall.Setuid(uid) },
	} {
		if err := step(); err != nil {
			fmt.Fprintf(os.Stderr, "gosu: %v\n", err)
			os.Exit(1)
		}
	}
	if err := syscall.Exec(path, os.Args[2:], os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "gosu: exec %s: %v\n", path, err)
		os.Exit(126)
	}
}

// lookup finds the user's uid and gid in /etc/passwd (a number is taken as the uid, with gid the same).
func lookup(user string) (int, int, error) {
	if n, err := strconv.Atoi(user); err == nil {
		return n, n, nil
	}
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Split(s.Text(), ":")
		if len(fields) < 4 || fields[0] != user {
			continue
		}
		uid, err1 := strconv.Atoi(fields[2])
		gid, err2 := strconv.Atoi(fields[3])
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("/etc/passwd: bad ids for %s", user)
		}
		return uid, gid, nil
	}
	return 0, 0, fmt.Errorf("no user %s in /etc/passwd", user)
}
