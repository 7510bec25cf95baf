// fn-noop-go: the benchmark's Go floor. A composition function on
// function-sdk-go that does nothing: it answers every call with the desired
// state it was given (response.To), served by the SDK's own Serve, so what it
// costs is what the Go SDK, gRPC-Go and protobuf cost by themselves.
//
//	fn-noop-go [--insecure | --tls-server-certs-dir DIR] [--address HOST:PORT]
//
// The flags are those of functions made from the SDK's template. The
// Prometheus endpoint the SDK serves by default is left off: the Node floor
// has none, and several floors on one host would fight over its port.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"
)

type noop struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

func (noop) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return response.To(req, response.DefaultTTL), nil
}

func main() {
	address := flag.String("address", ":9443", "address to listen on")
	insecure := flag.Bool("insecure", false, "serve without TLS")
	certs := flag.String("tls-server-certs-dir", "", "directory with tls.crt, tls.key and ca.crt")
	flag.Parse()
	err := function.Serve(noop{},
		function.Listen("tcp", *address),
		function.MTLSCertificates(*certs),
		function.Insecure(*insecure),
		function.MaxRecvMessageSize(16*1024*1024),
		function.WithMetricsServer(""),
	)
	fmt.Fprintln(os.Stderr, "fn-noop-go:", err)
	os.Exit(1)
}
