// etcd's own main, as go.etcd.io/etcd/v3 has it: the server module alone
// carries no main package.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
