// Package bootstrap lets the ranks of a job find each other over TCP and exchange small
// messages before (and besides) the GPU transports: it is what mscclppBootstrap is built on.
//
// # Phases
//
// A job has one root and nranks ranks.
//
//  1. Root. NewRoot listens on an ephemeral port and picks a random 64-bit magic; ID returns a
//     UniqueID carrying both (layout: see UniqueID), which the job shares out of band. With
//     JoinAddr there is no id: rank 0 starts the root on the given address, and the magic is
//     derived from the address: the 64-bit FNV-1a hash of "mscclpp-bootstrap:" and the canonical
//     "ip:port".
//  2. Join. Each rank opens its own listener on port 0 of the chosen interface's address, dials the root (retrying with exponential backoff until the deadline) and sends
//     a hello {magic, version, rank, nranks, listening address}. The root collects one hello
//     per rank, learning nranks from the first; it refuses connections with a wrong magic or
//     version (logged at WARN and closed) and aborts the job, telling every connected rank, when
//     ranks disagree on nranks, claim the same rank or claim a rank out of range. Once all
//     nranks have joined it sends each rank only the address of its ring successor
//     (rank+1)%nranks, closes the connections and stops: O(nranks) small messages in all.
//  3. Address exchange. The ranks ring-all-gather the table of listening addresses among
//     themselves on a reserved tag, so that each rank can later dial any other.
//
// The interface is, first that applies: the one named in a JoinAddr address, Options.Interface,
// MSCCLPP_SOCKET_IFNAME; loopback itself if the root's address is a loopback address (so that
// jobs on 127.0.0.1 work on any machine); the first interface that is up, not loopback and has
// a non-link-local address; loopback. The root of NewRoot picks its address by the same rule.
//
// # Peer links
//
// A rank sends to a peer over a connection it dials itself, on its first Send to that peer:
// one connection per direction per pair. The dialer first writes a handshake {magic, version,
// rank, nranks}; the acceptor checks it and refuses (WARN, close) a wrong magic, version or
// nranks, a rank out of range, or a second connection from the same peer. After that the
// connection carries frames {tag int64, length uint64, payload}, little-endian; frames are
// capped at 1 GiB so that a peer cannot make us allocate without bound. The acceptor delivers
// each frame to a FIFO per (peer, tag) from which Recv takes, so messages can be received in
// any order across peers and tags. User tags are >= 0; the address exchange, AllGather and
// Barrier use reserved negative tags.
//
// When a peer's connection ends, Recv from that peer returns, once the messages already
// received are taken, ErrPeerClosed (or ErrMessageSize if the connection ended inside a frame).
// A peer's close is noticed through the connection the peer dialed to this rank; the ring of
// the address exchange creates one from each rank's predecessor.
//
// AllGather is a ring all-gather: nranks-1 steps, each sending one block to the successor and
// receiving one from the predecessor. Barrier is a ring all-gather of zero bytes. Their
// messages use one tag each, so a rank runs one collective call at a time: an AllGather or
// Barrier made while another is in progress fails at once with ErrCollectiveInProgress.
//
// # Goroutines
//
// A root runs serve (until all ranks are served, the job fails, the deadline passes or Close),
// an accept loop (until serve closes the listener) and one goroutine per accepted connection
// reading its hello (until the hello is read, or serve ends and closes the connection).
// A rank runs an accept loop (until Close closes the listener), one reader per accepted peer
// connection (until the connection ends or Close closes it), and one watcher per dialed
// connection that notices the peer closing it (until it ends or Close closes it). Root.Close
// and TCP.Close close every connection and wait for all of these goroutines.
//
// # Deadlines
//
// Every rank operation, Join included as a whole, ends at the earlier of its context's
// deadline and now + Options.Timeout, or, when that is zero, now + config.BootstrapTimeout as it
// is when the operation starts (so mscclppSetBootstrapConnTimeout applies to a rank that exists
// already); waiting for a peer then fails with ErrTimeout naming the peer and tag, and dialing
// with ErrUnreachable naming the address. The root's deadline is Options.Timeout (or
// config.BootstrapTimeout) counted from NewRoot (for JoinAddr, slightly less than rank 0's
// remaining time); when it passes, the root tells the joined ranks which ranks never joined,
// and Wait returns the same error. Close makes blocked and later operations return ErrClosed.
package bootstrap
