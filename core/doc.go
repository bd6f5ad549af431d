// Package core holds the communicator, connections and the proxy; for now, the Go mirrors of the
// legacy device structs of include/mscclpp.h.
package core
