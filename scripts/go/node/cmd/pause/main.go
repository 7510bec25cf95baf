// pause: the process that holds a pod's namespaces while its containers come
// and go, for the local control plane's real node. A stand-in for the
// Kubernetes pause image, which cannot be pulled here; it keeps that image's
// contract: PID 1 of the sandbox, it reaps orphaned children and exits 0 on
// SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Children re-parented to PID 1 would otherwise stay zombies.
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
