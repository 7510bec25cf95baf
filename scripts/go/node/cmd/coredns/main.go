// coredns: CoreDNS with the plugins a cluster's DNS needs and nothing else,
// built from the published module (the same way CoreDNS documents building
// it with a chosen plugin set). The local control plane's real node runs it
// as the cluster DNS, so names such as orders.team-a.svc.cluster.local in a
// connection Secret resolve inside pods.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The order CoreDNS's plugin.cfg gives these plugins: a Corefile's
// directives run in this order whatever order the Corefile lists them in.
var directives = []string{"reload", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
